/*
 * test_store_text.c - the text filters of store_query_events() (contains, matches),
 * their error (a pattern too costly to match) and their exact totals, on the
 * output, logpoint and pause events of a small timeline.
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/store_fixture.h"

/* ---- text filters ------------------------------------------------------------------ */

/* A logpoint and a pause event after build_timeline()'s, at ts 120 and 130. */
static void push_stops(struct fx *f, int64_t k)
{
    struct event e = event_init(k, EV_LOGPOINT, 120);
    e.pid = 100, e.tid = 100, e.text = "x = 42, retries = 3";
    e.data = "{\"breakpointId\":1,\"file\":\"/src/app.cpp\",\"line\":12,\"function\":\"main\"}";
    push(f, &e);
    e = event_init(k, EV_PAUSE, 130);
    e.pid = 100, e.tid = 100, e.text = "thread 100 paused at app.cpp:12 in main (breakpoint 1)";
    e.data = "{\"reason\":\"breakpoint\",\"breakpointId\":1,\"file\":\"/src/app.cpp\",\"line\":12}";
    push(f, &e);
    store_sync(f->s);
}

static void test_text_filter(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    push_stops(f, t.key);
    struct event_query q;
    struct store_result res;

    /* contains: case-sensitive substring over every event's text. */
    q = q_init();
    q.text_contains = "SIGSEGV";
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 2); /* the crash summary and the exit text */
    assert_int_equal(res.rows[0].type, EV_CRASH);
    assert_int_equal(res.rows[1].type, EV_PROCESS_EXIT);
    assert_int_equal(res.total_count, 2);
    store_result_free(&res);
    q.text_contains = "sigsegv";
    assert_int_equal(count(f, t.key, &q), 0);
    q.text_contains = "paused at";
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.rows[0].type, EV_PAUSE);
    store_result_free(&res);
    q.text_contains = "retries";
    assert_int_equal(count(f, t.key, &q), 1);
    /* Function events have no text: a match-everything substring still skips them. */
    q.text_contains = " ";
    assert_int_equal(count(f, t.key, &q), 6); /* hello world, warning..., crash, exit, logpoint, pause */

    /* matches: a regular expression found anywhere in the text. */
    q = q_init();
    q.text_matches = "^(hello|warning)";
    assert_int_equal(count(f, t.key, &q), 2);
    q.text_matches = "\\d+";
    assert_int_equal(count(f, t.key, &q), 3); /* 0x0, 42/3, 100/12/1 */
    q.text_matches = "^nothing$";
    assert_int_equal(count(f, t.key, &q), 0);

    /* Composition with every other filter (AND). */
    q = q_init();
    q.text_contains = "SIGSEGV";
    q.event_type = EV_CRASH;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].text, "SIGSEGV at 0x0");
    store_result_free(&res);
    q = q_init();
    q.text_matches = "^(hello|warning)";
    q.event_type = EV_STDERR;
    assert_int_equal(count(f, t.key, &q), 1);
    q = q_init();
    q.text_contains = "o";
    q.text_matches = "^w";
    assert_int_equal(count(f, t.key, &q), 1); /* both: warning: low disk */
    q = q_init();
    q.text_contains = "SIGSEGV";
    q.pid = 101;
    q.from.set = true;
    q.from.ns = 105;
    assert_int_equal(count(f, t.key, &q), 1); /* the exit, at 110 */
    q = q_init();
    q.text_matches = "\\d";
    q.function_equals = "lib_helper";
    assert_int_equal(count(f, t.key, &q), 1); /* the crash: the one with text and that function */
    q = q_init();
    q.text_contains = "SIGSEGV";
    q.after_id = t.main_enter_id;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 2);
    assert_true(res.rows[0].id < res.rows[1].id);
    store_result_free(&res);
    q = q_init();
    q.text_contains = "SIGSEGV";
    q.limit = 1;
    res = run_flags(f, t.key, &q, STORE_QUERY_LATEST);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.rows[0].type, EV_PROCESS_EXIT);
    assert_int_equal(res.total_count, 2);
    assert_true(res.has_more);
    store_result_free(&res);

    /* A pattern that does not compile never reaches the store (the engine tells it:
     * test_timeline.c). One over the match budget on some event's text is the
     * caller's error, not a database one, says which pattern, and the reader still
     * serves the next query. */
    struct event e = event_init(t.key, EV_STDOUT, 140);
    e.text = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
    push(f, &e);
    store_sync(f->s);
    q = q_init();
    q.text_matches = "^(a|aa)+$";
    struct strobe_error err = {0};
    assert_int_equal(query(f, t.key, &q, 0, &res, &err), STORE_E_PATTERN);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "text pattern"));
    assert_non_null(strstr(err.msg, "too costly"));
    assert_int_equal(res.n, 0);
    q.text_matches = "^a+!$";
    assert_int_equal(count(f, t.key, &q), 1);
}

static void test_text_filter_exact_total(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "many");
    char line[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(line, sizeof line, i % 3 == 0 ? "request %d: needle found" : "request %d: ok",
                 i);
        struct event e = event_init(k, i % 2 ? EV_STDOUT : EV_STDERR, i);
        e.text = line;
        push(f, &e);
        e = event_init(k, EV_FUNCTION_ENTER, i);
        e.function = "handler";
        push(f, &e);
    }
    store_sync(f->s);
    struct event_query q = q_init();
    q.text_contains = "needle";
    q.limit = 10;
    struct store_result res = run(f, k, &q);
    assert_int_equal(res.n, 10);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 1000);
    assert_false(res.total_is_lower_bound);
    store_result_free(&res);
    q.offset = 995;
    res = run(f, k, &q);
    assert_int_equal(res.n, 5);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 1000);
    store_result_free(&res);

    q = q_init();
    q.text_matches = "^request \\d*[05]: needle";
    q.limit = 7;
    res = run(f, k, &q);
    assert_int_equal(res.total_count, 200); /* i % 3 == 0 and i % 5 == 0 */
    assert_false(res.total_is_lower_bound);
    store_result_free(&res);
    q.event_type = EV_STDERR; /* even i: i % 30 == 0 */
    assert_int_equal(count(f, k, &q), 100);

    /* STORE_QUERY_NO_TOTAL: only what the rows read show. */
    q = q_init();
    q.text_contains = "needle";
    q.limit = 1;
    res = run_flags(f, k, &q, STORE_QUERY_NO_TOTAL);
    assert_int_equal(res.n, 1);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 2);
    store_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_filter_exact_total, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
