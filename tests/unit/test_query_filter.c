/*
 * test_query_filter.c - debug_query's filter on its one way from the MCP handler to the
 * store (base/event_query.h): each pattern of a filter is compiled once per request,
 * whether the engine reads with it once (debug_query, with the functions the event cap
 * evicted matched against it too) or again and again (timeline_first_match(), as a wait
 * asks after every stop), and the store compiles nothing; an invalid pattern still gets
 * the error code and the sentence it always had. Compilations are counted at PCRE2's
 * door, so no production code carries a hook for this. Each test works in its own
 * mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "core/session.h"
#include "core/timeline.h"
#include "mcp/tools.h"
#include "store/store.h"
#include "tests/unit/tmpdir.h"

#define SESSION "app-2026-01-01-10h00"

/* ---- compilations, counted ----------------------------------------------------------- */

static int compiles;

/* base/regex.c compiles through pcre2_compile (pcre2_compile_8). A definition in the
 * program itself is the one the library's call binds to, ahead of the shared PCRE2
 * library's: it counts, then hands over to PCRE2's own. */
pcre2_code *pcre2_compile(PCRE2_SPTR pattern, PCRE2_SIZE length, uint32_t options,
                          int *errorcode, PCRE2_SIZE *erroroffset,
                          pcre2_compile_context *ccontext)
{
    static pcre2_code *(*real)(PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *, PCRE2_SIZE *,
                               pcre2_compile_context *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pcre2_compile_8");
    compiles++;
    return real(pattern, length, options, errorcode, erroroffset, ccontext);
}

/* ---- a session with calls, output, and events its cap evicted -------------------------- */

struct fx {
    char dir[256];
    struct store *s;
    struct timeline_reader *rd;
    struct tool_ctx ctx;
    int64_t key;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/strobe-filter-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    char path[300];
    snprintf(path, sizeof path, "%s/strobe.db", f->dir);
    f->s = store_open(path, NULL);
    struct strobe_error e = {0};
    f->rd = f->s ? timeline_reader_open(f->s, &e) : NULL;
    if (!f->rd)
        return -1;
    f->ctx.store = f->s;
    struct session_row r = {.id = SESSION, .binary_path = "/bin/app", .project_root = "/src",
                            .command_line = "[\"/bin/app\"]", .pid = 100,
                            .started_at_ms = 1700000000000};
    if (store_session_create(f->s, &r, NULL) != 0)
        return -1;
    f->key = r.key;
    store_session_set_limit(f->s, f->key, 20); /* the calls below overflow it */
    sessions_init(f->s, NULL);                  /* ids resolve through the registry */

    struct ring *ring = ring_create(1 << 20);
    store_attach_ring(f->s, ring, 0);
    const char *fns[] = {"parse_config", "parse_line", "net_send"};
    int64_t ts = 1;
    for (int i = 0; i < 30; i++) {
        struct event ev = event_init(f->key, EV_FUNCTION_ENTER, ts++);
        ev.pid = ev.tid = 100;
        ev.function = fns[i % 3];
        ring_push(ring, &ev, store_wake, f->s);
        ev = event_init(f->key, EV_FUNCTION_EXIT, ts++);
        ev.pid = ev.tid = 100;
        ev.function = fns[i % 3];
        ev.duration_ns = 1;
        ring_push(ring, &ev, store_wake, f->s);
    }
    const char *lines[] = {"ready", "error: timeout", "retrying", "error: refused", "done"};
    for (int i = 0; i < 5; i++) {
        struct event ev = event_init(f->key, EV_STDERR, ts++);
        ev.pid = ev.tid = 100;
        ev.text = lines[i];
        ring_push(ring, &ev, store_wake, f->s);
    }
    store_sync(f->s);
    store_release_ring(f->s, ring);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    timeline_reader_close(f->ctx.reader);
    timeline_reader_close(f->rd);
    store_close(f->s);
    rm_dir(f->dir);
    free(f);
    return 0;
}

/* debug_query with args (JSON text); the answer, or NULL with e set. */
static cJSON *debug_query(struct fx *f, const char *args, struct strobe_error *e)
{
    cJSON *a = cJSON_Parse(args);
    assert_non_null(a);
    memset(e, 0, sizeof *e);
    cJSON *out = tool_debug_query(&f->ctx, a, e);
    cJSON_Delete(a);
    return out;
}

static int total_count(const cJSON *answer)
{
    assert_non_null(answer);
    return cJSON_GetObjectItem(answer, "totalCount")->valueint;
}

/* ---- once per request -------------------------------------------------------------- */

/* The engine compiles a pattern into the query at the first read and every later read
 * with it uses that handle; the store compiles nothing. */
static void test_engine_compiles_once(void **state)
{
    struct fx *f = *state;
    struct strobe_error e = {0};
    struct event_query q = {.function_matches = "^parse_", .event_type = EV_FUNCTION_ENTER};
    struct timeline_page p;
    compiles = 0;
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), 0);
    assert_int_equal(compiles, 1);
    assert_non_null(q.function_re);
    assert_true(p.n > 0);
    for (int i = 0; i < p.n; i++)
        assert_int_equal(strncmp(p.events[i].function, "parse_", 6), 0);
    timeline_page_free(&p);
    const struct regex *handle = q.function_re;
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), 0);
    timeline_page_free(&p);
    assert_true(q.function_re == handle);
    assert_int_equal(compiles, 1);
    event_query_free_compiled(&q);
    assert_null(q.function_re);

    /* A wait asks after every stop: one compilation for all of them. */
    q = (struct event_query){.text_matches = "error: (timeout|refused)"};
    struct timeline_event ev;
    int64_t after = 0;
    const char *want[] = {"error: timeout", "error: refused"};
    compiles = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(timeline_first_match(f->rd, f->key, &q, after, &ev, &e), 1);
        assert_string_equal(ev.text, want[i]);
        after = ev.id;
        timeline_event_free(&ev);
    }
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, after, &ev, &e), 0);
    assert_int_equal(compiles, 1);
    event_query_free_compiled(&q);
}

/* A whole debug_query request: its filter parsed, read, and the functions the cap
 * evicted matched against it. Each pattern is compiled once, the text pattern by the
 * parser (which rejects a bad one in the filter's words), the function pattern by the
 * engine. */
static void test_request_compiles_once(void **state)
{
    struct fx *f = *state;
    struct strobe_error e;
    struct timeline_evicted *rows;
    int n;
    assert_int_equal(timeline_evicted(f->rd, f->key, &rows, &n, &e), 0);
    assert_true(n >= 2); /* more than one evicted function is matched against the pattern */
    timeline_evicted_free(rows, n);

    compiles = 0;
    cJSON *out = debug_query(f, "{\"sessionId\":\"" SESSION "\",\"eventType\":"
                                "\"function_enter\",\"function\":{\"matches\":\"^parse_\"}}", &e);
    assert_true(total_count(out) > 0);
    const cJSON *evicted = cJSON_GetObjectItem(out, "evicted");
    assert_true(cJSON_GetArraySize(evicted) == 2); /* parse_config, parse_line */
    for (const cJSON *x = evicted->child; x; x = x->next)
        assert_int_equal(strncmp(cJSON_GetObjectItem(x, "function")->valuestring, "parse_", 6),
                         0);
    cJSON_Delete(out);
    assert_int_equal(compiles, 1);

    compiles = 0;
    out = debug_query(f, "{\"sessionId\":\"" SESSION "\",\"text\":{\"matches\":\"^error\"}}",
                      &e);
    assert_int_equal(total_count(out), 2);
    cJSON_Delete(out);
    assert_int_equal(compiles, 1);

    compiles = 0;
    out = debug_query(f, "{\"sessionId\":\"" SESSION "\",\"text\":{\"matches\":\"^error\"},"
                         "\"function\":{\"matches\":\"^parse_\"}}", &e);
    assert_int_equal(total_count(out), 0); /* calls have no text */
    cJSON_Delete(out);
    assert_int_equal(compiles, 2);
}

/* ---- invalid patterns: the same code and sentence ------------------------------------ */

/* The sentence fmt, its one %s PCRE2's account of why pattern does not compile, in
 * want (512 bytes: an error's room). */
static void sentence(char *want, const char *fmt, const char *pattern)
{
    struct strobe_error why;
    assert_null(regex_compile(pattern, &why));
    assert_int_equal(why.code, ERR_VALIDATION);
    snprintf(want, 512, fmt, why.msg);
}

/* debug_query on the session with the filter members filter (JSON text) is refused
 * with VALIDATION_ERROR and exactly the sentence want. */
static void expect_refused(struct fx *f, const char *filter, const char *want)
{
    char args[256];
    snprintf(args, sizeof args, "{\"sessionId\":\"" SESSION "\",%s}", filter);
    struct strobe_error e;
    assert_null(debug_query(f, args, &e));
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_string_equal(e.msg, want);
}

static void test_invalid_pattern_errors(void **state)
{
    struct fx *f = *state;
    char want[512];
    struct strobe_error e = {0};

    /* The engine's sentences. */
    struct event_query q = {.function_matches = "("};
    struct timeline_page p;
    sentence(want, "the function name pattern \"(\" is not a valid regular expression, or "
             "is beyond the limits: %s", "(");
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_string_equal(e.msg, want);
    assert_null(q.function_re);
    q = (struct event_query){.text_matches = "a(b"};
    struct timeline_event ev;
    sentence(want, "the text pattern \"a(b\" is not a valid regular expression, or is "
             "beyond the limits: %s", "a(b");
    memset(&e, 0, sizeof e);
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, 0, &ev, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_string_equal(e.msg, want);

    /* debug_query's: the parser's for text.matches, the engine's completed with the
     * next step for function.matches, and both patterns named when both are given. */
    sentence(want, "'text.matches' is not a valid regular expression: %s. Pass a "
             "Perl-syntax regular expression (at most 1024 bytes), e.g. \"timeout|refused\"; "
             "escape special characters such as ( [ . * with a backslash, or use "
             "text.contains for a plain substring.", "out(");
    expect_refused(f, "\"text\":{\"matches\":\"out(\"}", want);
    sentence(want, "'function.matches': the function name pattern \"(\" is not a valid "
             "regular expression, or is beyond the limits: %s. Pass a regular expression "
             "(Perl syntax, at most 1024 bytes), e.g. \"^parse_\", or use function.contains "
             "for a plain substring.", "(");
    expect_refused(f, "\"function\":{\"matches\":\"(\"}", want);
    sentence(want, "the function name pattern \"(\" is not a valid regular expression, or "
             "is beyond the limits: %s. Simplify function.matches or text.matches (Perl "
             "syntax, at most 1024 bytes, no nested repetition such as (a+)+), or use "
             "function.contains / text.contains for plain substrings.", "(");
    expect_refused(f, "\"text\":{\"matches\":\"out\"},\"function\":{\"matches\":\"(\"}",
                   want);

    /* An unknown session comes first, as it always did: the pattern is the engine's to
     * compile, after the session is found. */
    assert_null(debug_query(f, "{\"sessionId\":\"none-2000-01-01-00h00\",\"function\":"
                               "{\"matches\":\"(\"}}", &e));
    assert_int_equal(e.code, ERR_SESSION_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_engine_compiles_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_compiles_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_pattern_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
