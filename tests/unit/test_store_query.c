/*
 * test_store_query.c - store_query_events() on a small timeline: every field of a
 * row, every filter, paging (offset, latest, afterEventId, totals), the counts by
 * type and by function (topFunctions with the internal symbol of a public alias),
 * pids, and the plans of the common queries (an index must be used, never a bare
 * scan).
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/store_internal.h"
#include "tests/unit/store_fixture.h"

static void test_query_all_and_fields(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct event_query q = q_init();
    struct store_result res = run(f, t.key, &q);
    assert_int_equal(res.n, 12);
    assert_int_equal(res.total_count, 12);
    assert_false(res.has_more);
    assert_false(res.total_is_lower_bound);
    for (int i = 1; i < res.n; i++) {
        assert_true(res.rows[i].ts_ns > res.rows[i - 1].ts_ns);
        assert_true(res.rows[i].id > res.rows[i - 1].id); /* commit order follows time */
    }
    struct store_event_row *r0 = &res.rows[0], *r1 = &res.rows[1], *r2 = &res.rows[2];
    assert_int_equal(r0->type, EV_STDOUT);
    assert_string_equal(r0->text, "hello world");
    assert_null(r0->function);
    assert_int_equal(r0->duration_ns, -1);
    assert_int_equal(r0->line, 0);
    assert_int_equal(r0->parent_id, 0);
    assert_int_equal(r1->type, EV_FUNCTION_ENTER);
    assert_string_equal(r1->function, "app::main()");
    assert_string_equal(r1->function_raw, "_ZN3app4mainEv");
    assert_string_equal(r1->source_file, "/src/app.cpp");
    assert_string_equal(r1->thread_name, "main");
    assert_int_equal(r1->line, 10);
    assert_string_equal(r1->arguments, "[]");
    assert_null(r1->return_value);
    assert_int_equal(r2->parent_id, r1->id); /* parent_seq 1 -> main's enter */
    assert_null(r2->function_raw);           /* no linkage name */
    assert_string_equal(r2->thread_name, "worker-1");
    assert_int_equal(r2->tid, 101);
    assert_int_equal(res.rows[5].duration_ns, 5000);
    assert_true(res.rows[5].sampled);
    assert_int_equal(res.rows[8].parent_id, 0); /* parent_seq 999 unknown -> NULL */
    assert_string_equal(res.rows[10].data, "{\"signal\":\"SIGSEGV\"}");
    store_result_free(&res);
}

static void test_query_filters(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct event_query q;
    struct store_result res;

    q = q_init();
    q.event_type = EV_FUNCTION_EXIT;
    assert_int_equal(count(f, t.key, &q), 4);
    q.event_type = EV_STDERR;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].text, "warning: low disk");
    store_result_free(&res);

    q = q_init();
    q.function_equals = "lib_helper";
    assert_int_equal(count(f, t.key, &q), 5); /* 2 enters, 2 exits, crash frame */
    q.function_equals = "lib";
    assert_int_equal(count(f, t.key, &q), 0);
    q = q_init();
    q.function_contains = "app::";
    assert_int_equal(count(f, t.key, &q), 4);
    q = q_init();
    q.function_matches = "^app::(main|parse)";
    assert_int_equal(count(f, t.key, &q), 4);
    q.function_matches = "config\\(";
    assert_int_equal(count(f, t.key, &q), 2);
    q.function_matches = "^nothing$";
    assert_int_equal(count(f, t.key, &q), 0);
    /* Several function filters combine with AND. */
    q = q_init();
    q.function_contains = "app";
    q.function_matches = "main";
    assert_int_equal(count(f, t.key, &q), 2);

    /* The store matches compiled patterns and absolute bounds only (the engine
     * compiles and resolves them once per request): a pattern without its handle, or a
     * bound still relative to the latest event, is the caller's bug, refused with a
     * sentence rather than ignored. */
    q = q_init();
    q.function_matches = "app";
    struct strobe_error err = {0};
    assert_int_equal(store_query_events(f->r, t.key, &q, 0, &res, &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "not compiled"));
    err = (struct strobe_error){0};
    q = q_init();
    q.text_matches = "disk";
    assert_int_equal(store_query_events(f->r, t.key, &q, 0, &res, &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "not compiled"));
    err = (struct strobe_error){0};
    q = q_init();
    q.from = (struct event_bound){.set = true, .relative = true, .ns = -5};
    assert_int_equal(store_query_events(f->r, t.key, &q, 0, &res, &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "relative"));
    /* The caller that does not want the sentence passes NULL. */
    assert_int_equal(store_query_events(f->r, t.key, &q, 0, &res, NULL), -1);

    q = q_init();
    q.file_equals = "/src/lib.c";
    assert_int_equal(count(f, t.key, &q), 4);
    q.file_equals = NULL;
    q.file_contains = "config";
    assert_int_equal(count(f, t.key, &q), 2);
    q.file_contains = "/src/";
    q.event_type = EV_FUNCTION_ENTER;
    assert_int_equal(count(f, t.key, &q), 4);

    q = q_init();
    q.return_equals = "42";
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "app::parse_config(char const*)");
    store_result_free(&res);
    q.return_equals = "\"ok\"";
    assert_int_equal(count(f, t.key, &q), 1);
    q.return_equals = "1"; /* numeric equality with the stored 1.0 */
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].return_value, "1.0");
    store_result_free(&res);
    q.return_equals = "\"1\"";
    assert_int_equal(count(f, t.key, &q), 0);
    q = q_init();
    q.return_null = EVENT_RETURN_NULL;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "lib_helper");
    store_result_free(&res);
    q.return_null = EVENT_RETURN_NOT_NULL;
    assert_int_equal(count(f, t.key, &q), 3);

    q = q_init();
    q.thread_name_contains = "work";
    assert_int_equal(count(f, t.key, &q), 2);
    q.thread_name_contains = "ai";
    assert_int_equal(count(f, t.key, &q), 4);
    q.thread_name_contains = "zzz";
    assert_int_equal(count(f, t.key, &q), 0);

    q = q_init();
    q.from.set = true;
    q.from.ns = 40;
    q.to.set = true;
    q.to.ns = 70;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 4); /* 40, 50, 60, 70 inclusive */
    assert_int_equal(res.rows[0].ts_ns, 40);
    assert_int_equal(res.rows[3].ts_ns, 70);
    store_result_free(&res);
    q.to.set = false;
    assert_int_equal(count(f, t.key, &q), 9);

    q = q_init();
    q.min_duration_ns = 60;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.rows[0].duration_ns, 5000);
    assert_int_equal(res.rows[1].duration_ns, 60);
    store_result_free(&res);

    q = q_init();
    q.pid = 101;
    assert_int_equal(count(f, t.key, &q), 4);
    q.pid = 100;
    assert_int_equal(count(f, t.key, &q), 8);

    /* A filter on another session's key sees nothing. */
    q = q_init();
    assert_int_equal(count(f, t.key + 1000, &q), 0);
}

static void test_query_paging(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct event_query q = q_init();
    q.limit = 5;
    struct store_result res = run(f, t.key, &q);
    assert_int_equal(res.n, 5);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 12);
    assert_int_equal(res.rows[0].ts_ns, 10);
    store_result_free(&res);

    q.offset = 10;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 2);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 12);
    assert_int_equal(res.rows[0].ts_ns, 100);
    store_result_free(&res);

    q.offset = 50;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 0);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 12);
    store_result_free(&res);

    /* Filtered paging: the count is a real (capped) count. */
    q = q_init();
    q.function_contains = "e";
    q.limit = 2;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 2);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 7); /* parse_config x2, lib_helper x5 */
    store_result_free(&res);

    /* latest: the last N, still chronological. */
    q = q_init();
    q.limit = 3;
    res = run_flags(f, t.key, &q, STORE_QUERY_LATEST);
    assert_int_equal(res.n, 3);
    assert_true(res.has_more);
    assert_int_equal(res.rows[0].ts_ns, 95);
    assert_int_equal(res.rows[2].ts_ns, 110);
    store_result_free(&res);
    q.offset = 3;
    res = run_flags(f, t.key, &q, STORE_QUERY_LATEST);
    assert_int_equal(res.rows[0].ts_ns, 70);
    assert_int_equal(res.rows[2].ts_ns, 90);
    store_result_free(&res);

    /* afterEventId: ordered by id, nothing missed when polling. */
    q = q_init();
    q.after_id = t.main_enter_id;
    q.limit = 4;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 4);
    assert_int_equal(res.rows[0].id, t.main_enter_id + 1);
    for (int i = 1; i < res.n; i++)
        assert_int_equal(res.rows[i].id, res.rows[i - 1].id + 1);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 10);
    int64_t last = res.rows[3].id;
    store_result_free(&res);

    struct event e = event_init(t.key, EV_STDOUT, 5); /* an early timestamp, late id */
    e.text = "late line";
    push(f, &e);
    store_sync(f->s);
    q.after_id = last;
    q.limit = 50;
    res = run(f, t.key, &q);
    assert_int_equal(res.n, 7);
    assert_string_equal(res.rows[6].text, "late line");
    assert_int_equal(res.total_count, 7);
    store_result_free(&res);
}

static void test_counts_and_pids(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, t.key, c), 0);
    assert_int_equal(c[EV_STDOUT], 1);
    assert_int_equal(c[EV_STDERR], 1);
    assert_int_equal(c[EV_FUNCTION_ENTER], 4);
    assert_int_equal(c[EV_FUNCTION_EXIT], 4);
    assert_int_equal(c[EV_CRASH], 1);
    assert_int_equal(c[EV_PROCESS_EXIT], 1);
    assert_int_equal(c[EV_VARIABLE_SNAPSHOT], 0);

    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, t.key, 10, &fc, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(fc[0].function, "lib_helper");
    assert_int_equal(fc[0].count, 2);
    assert_int_equal(fc[1].count, 1);
    assert_int_equal(fc[2].count, 1);
    /* lib_helper has a sampled event: its count of recorded calls is a lower bound. */
    assert_true(fc[0].sampled);
    assert_false(fc[1].sampled || fc[2].sampled);
    for (int i = 0; i < n; i++) {
        free(fc[i].function);
        free(fc[i].function_raw);
    }
    free(fc);
    assert_int_equal(store_count_by_function(f->r, t.key, 1, &fc, &n), 0);
    assert_int_equal(n, 1);
    free(fc[0].function);
    free(fc[0].function_raw);
    free(fc);

    int *pids;
    assert_int_equal(store_query_pids(f->r, t.key, &pids, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pids[0], 100);
    assert_int_equal(pids[1], 101);
    free(pids);

    struct session_row g;
    assert_int_equal(store_session_get(f->s, "tl", &g), 0);
    assert_int_equal(g.event_count, 12);
    session_row_free(&g);
    assert_true(store_size_bytes(f->s) > 0);
    assert_int_equal(store_session_lost(f->s, t.key, NULL, 0), 0);
}

/* topFunctions: the internal symbol of a function reported by its public alias. */
static void test_count_by_function_raw(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "raw");
    for (int i = 0; i < 3; i++) {
        struct event e = event_init(k, EV_FUNCTION_ENTER, i);
        e.function = i ? "pthread_mutex_lock" : "main";
        e.function_raw = i ? "___pthread_mutex_lock" : NULL;
        push(f, &e);
    }
    store_sync(f->s);
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, k, 10, &fc, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(fc[0].function, "pthread_mutex_lock");
    assert_string_equal(fc[0].function_raw, "___pthread_mutex_lock");
    assert_string_equal(fc[1].function, "main");
    assert_null(fc[1].function_raw);
    for (int i = 0; i < n; i++) {
        free(fc[i].function);
        free(fc[i].function_raw);
    }
    free(fc);
}

/* ---- query plans -------------------------------------------------------------------- */

static void expect_indexed(struct fx *f, int64_t key, const struct event_query *q, int flags,
                           const char *index)
{
    char *plan = NULL;
    assert_int_equal(store_explain_query(f->r, key, q, flags, &plan, NULL), 0);
    /* A bare "SCAN e" (or "SCAN events") is a full table scan; SEARCH ... USING INDEX
     * or SCAN ... USING INDEX (an index walk in order) is what we want. */
    for (char *line = plan; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (!strncmp(line, "SCAN e", 6) || !strncmp(line, "SCAN events", 11)) {
            if (!memmem(line, len, "USING", 5))
                fail_msg("full scan of events in plan:\n%s", plan);
        }
        line = nl ? nl + 1 : NULL;
    }
    if (getenv("STROBE_SHOW_PLANS"))
        fprintf(stderr, "%s", plan);
    if (index && !strstr(plan, index))
        fail_msg("plan does not use %s:\n%s", index, plan);
    free(plan);
}

static void test_query_plans(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct event_query q = q_init();
    expect_indexed(f, t.key, &q, STORE_QUERY_LATEST, "ev_session_ts");
    q = q_init();
    expect_indexed(f, t.key, &q, 0, "ev_session_ts");
    q = q_init();
    q.event_type = EV_STDERR;
    expect_indexed(f, t.key, &q, 0, "ev_session_type");
    /* Function events are not in the partial ev_session_type: the time index serves
     * them, filtering on the type it holds. */
    q = q_init();
    q.event_type = EV_FUNCTION_ENTER;
    expect_indexed(f, t.key, &q, 0, "ev_session_ts");
    q = q_init();
    q.return_null = EVENT_RETURN_NOT_NULL;
    expect_indexed(f, t.key, &q, 0, "ev_session_ts");
    q = q_init();
    q.function_contains = "app";
    expect_indexed(f, t.key, &q, 0, "ev_session_func");
    q = q_init();
    q.function_equals = "lib_helper";
    expect_indexed(f, t.key, &q, 0, "ev_session_func");
    q = q_init();
    q.from.set = q.to.set = true;
    q.from.ns = 30;
    q.to.ns = 70;
    expect_indexed(f, t.key, &q, 0, "ev_session_ts");
    q = q_init();
    q.after_id = 3;
    expect_indexed(f, t.key, &q, 0, "INTEGER PRIMARY KEY (rowid>?)");
    q = q_init();
    q.pid = 101;
    expect_indexed(f, t.key, &q, 0, NULL);
    q = q_init();
    q.text_contains = "x";
    expect_indexed(f, t.key, &q, 0, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_query_all_and_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_and_pids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_count_by_function_raw, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
