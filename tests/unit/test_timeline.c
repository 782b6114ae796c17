/*
 * test_timeline.c - the engine's read API (core/timeline.h) over a real SQLite store: every
 * filter of debug_query, the defaults of a zeroed query, relative time bounds, afterEventId
 * polling, the text filters and timeline_first_match(), pids, the session list and status,
 * the crash context join and the crash event's read forms (core/crash_payload.h), and each
 * error the API defines. Each test works in its own mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crash_payload.h"
#include "core/session.h"
#include "core/timeline.h"
#include "store/store.h"
#include "tests/unit/tmpdir.h"

#define MS 1000000LL
#define SEC 1000000000LL

struct fx {
    char dir[256];
    char path[300];
    struct store *s;
    struct timeline_reader *rd;
    struct ring *ring;
    int64_t key;
};

static int64_t new_session(struct fx *f, const char *id)
{
    struct session_row r = {0};
    r.id = (char *)id;
    r.binary_path = "/bin/app";
    r.project_root = "/src";
    r.command_line = "[\"/bin/app\"]";
    r.pid = 100;
    r.started_at_ms = 1700000000000;
    assert_int_equal(store_session_create(f->s, &r, NULL), 0);
    return r.key;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/strobe-timeline-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/strobe.db", f->dir);
    f->s = store_open(f->path, NULL);
    if (!f->s)
        return -1;
    struct strobe_error e = {0};
    f->rd = timeline_reader_open(f->s, &e);
    if (!f->rd)
        return -1;
    f->ring = ring_create(1 << 20);
    store_attach_ring(f->s, f->ring, 0);
    f->key = new_session(f, "app-2026-01-01-10h00");
    sessions_init(f->s, NULL); /* timeline_status() resolves ids through the registry */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    timeline_reader_close(f->rd);
    store_release_ring(f->s, f->ring);
    store_close(f->s);
    rm_dir(f->dir);
    free(f);
    return 0;
}

static void push(struct fx *f, const struct event *e)
{
    assert_true(ring_push(f->ring, e, store_wake, f->s));
}

static void output(struct fx *f, int type, int64_t ts, int pid, const char *text)
{
    struct event e = event_init(f->key, type, ts);
    e.pid = e.tid = pid;
    e.text = text;
    push(f, &e);
}

static void call(struct fx *f, int type, int64_t ts, const char *fn, const char *file,
                 const char *thread, const char *ret, int64_t duration)
{
    struct event e = event_init(f->key, type, ts);
    e.pid = 100;
    e.tid = strcmp(thread, "main") == 0 ? 100 : 101;
    e.thread_name = thread;
    e.function = fn;
    e.source_file = file;
    e.line = 7;
    e.arguments = "[]";
    e.return_value = ret;
    e.duration_ns = duration;
    push(f, &e);
}

/* 10 events over 9 s: output of two processes and calls of three functions. */
static void build(struct fx *f)
{
    output(f, EV_STDOUT, 1 * SEC, 100, "starting");
    call(f, EV_FUNCTION_ENTER, 2 * SEC, "parse_config", "/src/config.c", "main", NULL, -1);
    call(f, EV_FUNCTION_EXIT, 2 * SEC + 5 * MS, "parse_config", "/src/config.c", "main", "0",
         5 * MS);
    call(f, EV_FUNCTION_ENTER, 3 * SEC, "parse_line", "/src/config.c", "worker-1", NULL, -1);
    call(f, EV_FUNCTION_EXIT, 3 * SEC + 1 * MS, "parse_line", "/src/config.c", "worker-1",
         "null", 1 * MS);
    call(f, EV_FUNCTION_ENTER, 4 * SEC, "net_send", "/src/net.c", "worker-1", NULL, -1);
    call(f, EV_FUNCTION_EXIT, 4 * SEC + 50 * MS, "net_send", "/src/net.c", "worker-1", "1.0",
         50 * MS);
    output(f, EV_STDERR, 5 * SEC, 200, "child warning");
    output(f, EV_STDOUT, 8 * SEC, 100, "done");
    output(f, EV_STDERR, 9 * SEC, 100, "bye");
    store_sync(f->s);
}

/* timeline_events() with q, which has no compiled pattern: it reads a copy, whose
 * patterns it compiles and this frees, since the tests point q at other patterns
 * between reads. */
static struct timeline_page events(struct fx *f, const struct event_query *q)
{
    struct timeline_page p;
    struct strobe_error e = {0};
    struct event_query c = *q;
    int rc = timeline_events(f->rd, f->key, &c, &p, &e);
    event_query_free_compiled(&c);
    if (rc != 0)
        fprintf(stderr, "timeline_events: %s\n", e.msg);
    assert_int_equal(rc, 0);
    return p;
}

static int64_t count(struct fx *f, const struct event_query *q)
{
    struct timeline_page p = events(f, q);
    int64_t n = p.total_count;
    assert_int_equal(p.n, n); /* every page here fits the default limit */
    timeline_page_free(&p);
    return n;
}

/* ---- events ------------------------------------------------------------------ */

static void test_zeroed_query_reads_everything(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {0};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 10);
    assert_int_equal(p.total_count, 10);
    assert_false(p.has_more);
    for (int i = 1; i < p.n; i++)
        assert_true(p.events[i].ts_ns >= p.events[i - 1].ts_ns);
    assert_string_equal(p.events[0].text, "starting");
    assert_string_equal(p.events[1].function, "parse_config");
    assert_string_equal(p.events[1].thread_name, "main");
    timeline_page_free(&p);
    timeline_page_free(&p); /* a freed page is empty: freeing again is harmless */
}

static void test_filters(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.event_type = EV_STDOUT};
    assert_int_equal(count(f, &q), 2);
    q = (struct event_query){.event_type = EV_FUNCTION_ENTER};
    assert_int_equal(count(f, &q), 3);

    q = (struct event_query){.function_equals = "parse_line"};
    assert_int_equal(count(f, &q), 2);
    q = (struct event_query){.function_contains = "parse_"};
    assert_int_equal(count(f, &q), 4);
    q = (struct event_query){.function_matches = "^(net|parse_c)"};
    assert_int_equal(count(f, &q), 4);
    q = (struct event_query){.function_matches = "^nothing$"};
    assert_int_equal(count(f, &q), 0);

    q = (struct event_query){.file_equals = "/src/net.c"};
    assert_int_equal(count(f, &q), 2);
    q = (struct event_query){.file_contains = "config"};
    assert_int_equal(count(f, &q), 4);

    q = (struct event_query){.return_equals = "0"};
    assert_int_equal(count(f, &q), 1);
    q = (struct event_query){.return_equals = "1"}; /* 1.0 matches numerically */
    assert_int_equal(count(f, &q), 1);
    q = (struct event_query){.return_null = EVENT_RETURN_NULL};
    assert_int_equal(count(f, &q), 1);
    q = (struct event_query){.return_null = EVENT_RETURN_NOT_NULL};
    assert_int_equal(count(f, &q), 2);

    q = (struct event_query){.thread_name_contains = "worker"};
    assert_int_equal(count(f, &q), 4);
    q = (struct event_query){.min_duration_ns = 5 * MS};
    assert_int_equal(count(f, &q), 2);
    q = (struct event_query){.pid = 200};
    assert_int_equal(count(f, &q), 1);

    q = (struct event_query){.from = {.set = true, .ns = 3 * SEC},
                                .to = {.set = true, .ns = 5 * SEC}};
    assert_int_equal(count(f, &q), 5);

    /* Filters combine. */
    q = (struct event_query){.function_contains = "parse",
                                .thread_name_contains = "worker",
                                .event_type = EV_FUNCTION_EXIT};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.events[0].function, "parse_line");
    assert_string_equal(p.events[0].return_value, "null");
    timeline_page_free(&p);
}

static void test_limit_and_offset(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.limit = 3, .offset = 2};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 3);
    assert_true(p.has_more);
    assert_int_equal(p.total_count, 10);
    assert_int_equal(p.events[0].ts_ns, 2 * SEC + 5 * MS);
    timeline_page_free(&p);
    q = (struct event_query){.limit = 3, .offset = 9};
    p = events(f, &q);
    assert_int_equal(p.n, 1);
    assert_false(p.has_more);
    timeline_page_free(&p);
}

static void test_relative_time_bounds(void **state)
{
    struct fx *f = *state;
    build(f);
    /* The latest event is at 9 s: "-2s" is 7 s. */
    struct event_query q = {.from = {.set = true, .relative = true, .ns = -2 * SEC}};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.events[0].text, "done");
    timeline_page_free(&p);
    /* Up to "-5s" (4 s): the first six events, the exit of net_send (4.05 s) not. */
    q = (struct event_query){.to = {.set = true, .relative = true, .ns = -5 * SEC}};
    assert_int_equal(count(f, &q), 6);
    /* Before the session started: clamped to 0, so everything is after it. */
    q = (struct event_query){.from = {.set = true, .relative = true, .ns = -100 * SEC}};
    assert_int_equal(count(f, &q), 10);
    /* Mixed: from absolute 3 s to relative "-4s" (5 s). */
    q = (struct event_query){.from = {.set = true, .ns = 3 * SEC},
                                .to = {.set = true, .relative = true, .ns = -4 * SEC}};
    assert_int_equal(count(f, &q), 5);
}

static void test_after_event_id(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.limit = 4};
    struct timeline_page first = events(f, &q);
    assert_int_equal(first.n, 4);
    int64_t last = first.events[3].id;
    timeline_page_free(&first);

    q = (struct event_query){.after_id = last};
    struct timeline_page next = events(f, &q);
    assert_int_equal(next.n, 6);
    for (int i = 0; i < next.n; i++) {
        assert_true(next.events[i].id > last);
        if (i)
            assert_true(next.events[i].id > next.events[i - 1].id);
    }
    int64_t newest = next.events[next.n - 1].id;
    timeline_page_free(&next);

    /* Polling: nothing new, then one new event. */
    q.after_id = newest;
    assert_int_equal(count(f, &q), 0);
    output(f, EV_STDOUT, 10 * SEC, 100, "late");
    store_sync(f->s);
    struct timeline_page late = events(f, &q);
    assert_int_equal(late.n, 1);
    assert_string_equal(late.events[0].text, "late");
    timeline_page_free(&late);

    /* With a filter: only the matching later events. */
    q = (struct event_query){.after_id = last, .event_type = EV_STDERR};
    assert_int_equal(count(f, &q), 2);
}

static void test_text_filters(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.text_contains = "warning"};
    assert_int_equal(count(f, &q), 1);
    q = (struct event_query){.text_contains = "in"};
    assert_int_equal(count(f, &q), 2); /* "starting", "child warning" */
    q = (struct event_query){.text_matches = "^(starting|done)$"};
    assert_int_equal(count(f, &q), 2);
    q = (struct event_query){.text_matches = "^(starting|done)$", .event_type = EV_STDOUT,
                                .from = {.set = true, .ns = 2 * SEC}};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.events[0].text, "done");
    timeline_page_free(&p);
    q = (struct event_query){.text_matches = "e", .pid = 100, .limit = 1};
    p = events(f, &q);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.total_count, 2); /* "done", "bye" */
    assert_true(p.has_more);
    timeline_page_free(&p);
}

static void test_first_match(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.event_type = EV_STDERR, .limit = 7, .offset = 3};
    struct timeline_event row;
    struct strobe_error e = {0};
    /* From the start: the first stderr line; limit and offset are ignored. */
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, 0, &row, &e), 1);
    assert_string_equal(row.text, "child warning");
    int64_t first = row.id;
    timeline_event_free(&row);
    /* After it: the next one. After that: none yet, until one arrives. */
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, first, &row, &e), 1);
    assert_string_equal(row.text, "bye");
    int64_t second = row.id;
    timeline_event_free(&row);
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, second, &row, &e), 0);
    output(f, EV_STDERR, 10 * SEC, 100, "connection refused");
    output(f, EV_STDERR, 11 * SEC, 100, "connection reset");
    store_sync(f->s);
    q = (struct event_query){.text_matches = "reset|refused"};
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, second, &row, &e), 1);
    assert_string_equal(row.text, "connection refused");
    timeline_event_free(&row);
    event_query_free_compiled(&q);
    /* Its errors are timeline_events()'s. */
    q = (struct event_query){.text_matches = "[unclosed"};
    assert_int_equal(timeline_first_match(f->rd, f->key, &q, 0, &row, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_non_null(strstr(e.msg, "text pattern"));
}

/* ---- pids, sessions, status ---------------------------------------------------- */

static void test_pids_sessions_status(void **state)
{
    struct fx *f = *state;
    build(f);
    struct strobe_error e = {0};
    int *pids = NULL, n = 0;
    assert_int_equal(timeline_pids(f->rd, f->key, &pids, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pids[0], 100);
    assert_int_equal(pids[1], 200);
    free(pids);

    new_session(f, "other-2026-01-02-10h00");
    struct timeline_session *rows = NULL;
    assert_int_equal(timeline_sessions(f->rd, &rows, &n, &e), 0);
    assert_int_equal(n, 2);
    bool seen[2] = {false, false};
    for (int i = 0; i < n; i++) {
        seen[0] |= strcmp(rows[i].id, "app-2026-01-01-10h00") == 0;
        seen[1] |= strcmp(rows[i].id, "other-2026-01-02-10h00") == 0;
        assert_string_equal(rows[i].binary_path, "/bin/app");
    }
    assert_true(seen[0] && seen[1]);
    timeline_sessions_free(rows, n);

    struct timeline_status st;
    assert_int_equal(timeline_status(f->rd, "app-2026-01-01-10h00", &st, &e), 0);
    assert_string_equal(st.session.id, "app-2026-01-01-10h00");
    assert_string_equal(st.session.status, "running");
    assert_int_equal(st.total_events, 10);
    assert_int_equal(st.counts[EV_STDOUT], 2);
    assert_int_equal(st.counts[EV_FUNCTION_EXIT], 3);
    assert_int_equal(st.n_pids, 2);
    assert_true(st.n_top >= 1);
    timeline_status_free(&st);
}

/* ---- crash context ---------------------------------------------------------------- */

static void crash(struct fx *f, int64_t ts, const char *data)
{
    struct event e = event_init(f->key, EV_CRASH, ts);
    e.pid = 100;
    e.tid = 101;
    e.thread_name = "worker-1";
    e.function = "read_field";
    e.source_file = "/src/crash.c";
    e.line = 31;
    e.text = "uncaught C++ exception in read_field (crash.c:31)";
    e.data = data;
    push(f, &e);
}

/* The crash event of the session, read as debug_query reads it. */
static struct timeline_page crash_row(struct fx *f)
{
    struct event_query q = {.event_type = EV_CRASH};
    struct timeline_page p = events(f, &q);
    assert_int_equal(p.n, 1);
    return p;
}

/* ev as the debug_query answer builds it: the data members flattened, then the
 * crash payload's shaping. */
static cJSON *shaped(const struct timeline_event *row,
                     const struct timeline_crash_context *ctx, bool verbose)
{
    cJSON *ev = cJSON_Parse(row->data);
    assert_non_null(ev);
    if (verbose)
        cJSON_AddNumberToObject(ev, "threadId", row->tid);
    crash_payload_shape(ev, row, ctx, verbose);
    return ev;
}

static void test_crash_context_exception(void **state)
{
    struct fx *f = *state;
    char line[200];
    for (int i = 0; i < 12; i++) {
        snprintf(line, sizeof line, "line %d", i);
        output(f, EV_STDOUT, (i + 1) * MS, 100, line);
    }
    char longline[300];
    memset(longline, 'x', 250);
    longline[250] = '\0';
    output(f, EV_STDOUT, 20 * MS, 100, longline);
    output(f, EV_STDERR, 30 * MS, 100,
           "terminate called after throwing an instance of 'std::runtime_error'");
    output(f, EV_STDERR, 31 * MS, 100, "  what():  config file missing");
    crash(f, 40 * MS,
          "{\"kind\":\"uncaught_exception\",\"signal\":\"SIGABRT\",\"frames\":["
          "{\"index\":0,\"function\":\"raise\",\"pc\":\"0x1\",\"module\":\"/lib/libc.so.6\"},"
          "{\"index\":1,\"function\":null,\"pc\":\"0x2\",\"module\":\"/lib/libx.so\"}],"
          "\"registers\":{\"rip\":\"0x1\"}}");
    output(f, EV_STDOUT, 50 * MS, 100, "after the crash");
    store_sync(f->s);

    struct timeline_page p = crash_row(f);
    struct timeline_crash_context cc;
    struct strobe_error e = {0};
    assert_int_equal(timeline_crash_context(f->rd, f->key, &p.events[0], &cc, &e), 0);
    assert_true(cc.has_before);
    assert_int_equal(cc.before.n, CRASH_LAST_EVENTS);
    for (int i = 0; i < cc.before.n; i++) {
        assert_true(cc.before.events[i].id != p.events[0].id);
        assert_true(cc.before.events[i].ts_ns < 40 * MS); /* nothing after the crash */
        if (i)
            assert_true(cc.before.events[i].id > cc.before.events[i - 1].id);
    }
    assert_string_equal(cc.before.events[CRASH_LAST_EVENTS - 1].text,
                        "  what():  config file missing");
    assert_string_equal(cc.account_name, "exception");
    assert_non_null(cc.account_json);
    assert_int_equal(cc.report_first_id, 0);

    cJSON *ev = shaped(&p.events[0], &cc, false);
    const cJSON *x = cJSON_GetObjectItem(ev, "exception");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "type")),
                        "std::runtime_error");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "what")),
                        "config file missing");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(ev, "lastEventIds")), 10);
    const cJSON *briefs = cJSON_GetObjectItem(ev, "lastEvents");
    assert_int_equal(cJSON_GetArraySize(briefs), 10);
    const cJSON *cut = cJSON_GetArrayItem(briefs, 7); /* the 250-character line */
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cut, "eventType")), "stdout");
    assert_int_equal(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(cut, "text"))),
                     CRASH_BRIEF_TEXT + 3);
    /* The location and where, from the columns. */
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "function")), "read_field");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "sourceFile")),
                        "/src/crash.c");
    assert_int_equal(cJSON_GetObjectItem(ev, "line")->valueint, 31);
    assert_int_equal(cJSON_GetObjectItem(ev, "pid")->valueint, 100);
    assert_int_equal(cJSON_GetObjectItem(ev, "threadId")->valueint, 101);
    /* Summary: no registers, no pcs, modules only for frames without a name. */
    assert_null(cJSON_GetObjectItem(ev, "registers"));
    const cJSON *frames = cJSON_GetObjectItem(ev, "frames");
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(frames, 0), "pc"));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(frames, 0), "module"));
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(frames, 1), "module"));
    cJSON_Delete(ev);

    ev = shaped(&p.events[0], &cc, true);
    assert_non_null(cJSON_GetObjectItem(ev, "registers"));
    frames = cJSON_GetObjectItem(ev, "frames");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(frames, 0), "pc"));
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(frames, 0), "module"));
    cJSON_Delete(ev);

    timeline_crash_context_free(&cc);
    timeline_page_free(&p);
}

static void test_crash_context_sanitizer(void **state)
{
    struct fx *f = *state;
    const char *report[] = {
        "filling 8",
        "=================================================================",
        "==123==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6030 at pc 0x1",
        "WRITE of size 4 at 0x6030 thread T0",
        "SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:28 in fill",
        "==123==ABORTING",
    };
    for (int i = 0; i < 6; i++)
        output(f, EV_STDERR, (i + 1) * MS, 100, report[i]);
    crash(f, 10 * MS, "{\"kind\":\"sanitizer\"}");
    store_sync(f->s);

    struct timeline_page all = events(f, &(struct event_query){.event_type = EV_STDERR});
    int64_t first = all.events[2].id, last = all.events[5].id;
    timeline_page_free(&all);

    struct timeline_page p = crash_row(f);
    struct timeline_crash_context cc;
    struct strobe_error e = {0};
    assert_int_equal(timeline_crash_context(f->rd, f->key, &p.events[0], &cc, &e), 0);
    assert_string_equal(cc.account_name, "sanitizer");
    assert_int_equal(cc.report_first_id, first);
    assert_int_equal(cc.report_last_id, last);
    assert_int_equal(cc.before.n, 6); /* fewer than 10 before it: all of them */

    cJSON *ev = shaped(&p.events[0], &cc, false);
    const cJSON *san = cJSON_GetObjectItem(ev, "sanitizer");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(san, "tool")),
                        "AddressSanitizer");
    const cJSON *ids = cJSON_GetObjectItem(san, "reportEventIds");
    assert_int_equal(cJSON_GetArraySize(ids), 2);
    char want[24];
    snprintf(want, sizeof want, "%lld", (long long)first);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(ids, 0)), want);
    cJSON_Delete(ev);
    timeline_crash_context_free(&cc);
    timeline_page_free(&p);
}

static void test_crash_account_per_kind(void **state)
{
    (void)state;
    assert_string_equal(crash_payload_account_wanted("{\"kind\":\"uncaught_exception\"}"),
                        "exception");
    assert_string_equal(crash_payload_account_wanted("{\"kind\":\"panic\"}"), "panic");
    /* A segfault's only runtime account is a Python stack printed after it (a C
     * extension's crash): an exception report next to it is another's. */
    assert_string_equal(crash_payload_account_wanted("{\"kind\":\"signal\"}"), "python");
    /* The event carries its own. */
    assert_null(crash_payload_account_wanted("{\"kind\":\"panic\",\"panic\":{}}"));
    assert_null(crash_payload_account_wanted("not json"));
}

static void test_crash_without_account_or_context(void **state)
{
    struct fx *f = *state;
    output(f, EV_STDERR, 1 * MS, 100,
           "terminate called after throwing an instance of 'std::runtime_error'");
    crash(f, 2 * MS, "{\"kind\":\"signal\",\"signal\":\"SIGSEGV\"}");
    store_sync(f->s);
    struct timeline_page p = crash_row(f);
    struct timeline_crash_context cc;
    struct strobe_error e = {0};
    assert_int_equal(timeline_crash_context(f->rd, f->key, &p.events[0], &cc, &e), 0);
    assert_string_equal(cc.account_name, "python"); /* looked for, none printed */
    assert_null(cc.account_json);
    assert_int_equal(cc.before.n, 1);
    cJSON *ev = shaped(&p.events[0], &cc, false);
    assert_null(cJSON_GetObjectItem(ev, "exception"));
    assert_null(cJSON_GetObjectItem(ev, "python"));
    cJSON_Delete(ev);
    /* Nothing joined at all: the event keeps what it has. */
    ev = shaped(&p.events[0], NULL, false);
    assert_null(cJSON_GetObjectItem(ev, "lastEventIds"));
    assert_non_null(cJSON_GetObjectItem(ev, "function"));
    cJSON_Delete(ev);
    timeline_crash_context_free(&cc);
    timeline_page_free(&p);
}

/* A native crash in a Python process: faulthandler's dump comes after the crash
 * event on stderr, and is joined as its "python" account. */
static void test_crash_joins_the_python_stack_printed_after_it(void **state)
{
    struct fx *f = *state;
    output(f, EV_STDERR, 1 * MS, 100, "Fatal Python error: Aborted"); /* before: not it */
    crash(f, 2 * MS, "{\"kind\":\"signal\",\"signal\":\"SIGSEGV\"}");
    output(f, EV_STDERR, 3 * MS, 100, "Fatal Python error: Segmentation fault");
    output(f, EV_STDERR, 3 * MS + 1, 100, "Current thread 0x1 (most recent call first):");
    output(f, EV_STDERR, 3 * MS + 2, 100, "  File \"/p/x.py\", line 7 in read_record");
    store_sync(f->s);
    struct timeline_page p = crash_row(f);
    struct timeline_crash_context cc;
    struct strobe_error e = {0};
    assert_int_equal(timeline_crash_context(f->rd, f->key, &p.events[0], &cc, &e), 0);
    cJSON *ev = shaped(&p.events[0], &cc, false);
    cJSON *py = cJSON_GetObjectItem(ev, "python");
    assert_non_null(py);
    assert_string_equal(cJSON_GetObjectItem(py, "error")->valuestring, "Segmentation fault");
    cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(py, "frames"), 0);
    assert_string_equal(cJSON_GetObjectItem(f0, "function")->valuestring, "read_record");
    assert_int_equal(cJSON_GetObjectItem(f0, "line")->valueint, 7);
    cJSON_Delete(ev);
    timeline_crash_context_free(&cc);
    timeline_page_free(&p);
}

/* ---- errors ------------------------------------------------------------------------ */

static void test_error_invalid_regex(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.function_matches = "("};
    struct timeline_page p;
    struct strobe_error e = {0};
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_non_null(strstr(e.msg, "\"(\""));
    assert_null(strstr(e.msg, "debug_")); /* the engine's words, not a tool's */
    assert_int_equal(p.n, 0);
    timeline_page_free(&p);
}

static void test_error_invalid_text_regex(void **state)
{
    struct fx *f = *state;
    build(f);
    struct event_query q = {.text_matches = "a(b", .event_type = EV_STDOUT};
    struct timeline_page p;
    struct strobe_error e = {0};
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_non_null(strstr(e.msg, "the text pattern \"a(b\""));
    assert_non_null(strstr(e.msg, "at byte")); /* PCRE2's account, with the position */
    assert_null(strstr(e.msg, "debug_"));
    assert_int_equal(p.n, 0);
}

/* A pattern that compiles but goes over the match budget on some name or text is the
 * agent's to change: VALIDATION_ERROR with the store's sentence as it is (it names the
 * pattern), not a database failure. */
static void test_error_pattern_too_costly(void **state)
{
    struct fx *f = *state;
    const char *costly = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
    output(f, EV_STDOUT, 1 * SEC, 100, costly);
    call(f, EV_FUNCTION_ENTER, 2 * SEC, costly, "/src/a.c", "main", NULL, -1);
    store_sync(f->s);
    struct event_query q = {.text_matches = "^(a|aa)+$"};
    struct timeline_page p;
    struct strobe_error e = {0};
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    event_query_free_compiled(&q);
    assert_int_equal(e.code, ERR_VALIDATION);
    const char *text = "the text pattern \"^(a|aa)+$\" is too costly to match against the "
                       "events' text (";
    assert_memory_equal(e.msg, text, strlen(text));

    q = (struct event_query){.function_matches = "^(a|aa)+$"};
    memset(&e, 0, sizeof e);
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    event_query_free_compiled(&q);
    assert_int_equal(e.code, ERR_VALIDATION);
    const char *names = "the pattern is too costly to match against the names (";
    assert_memory_equal(e.msg, names, strlen(names));
}

static void test_error_reader_cannot_open(void **state)
{
    struct fx *f = *state;
    struct strobe_error e = {0};
    assert_null(timeline_reader_open(NULL, &e));
    assert_int_equal(e.code, ERR_INTERNAL);
    /* A database whose file is gone cannot be read. */
    char wal[320], shm[320];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    snprintf(shm, sizeof shm, "%s-shm", f->path);
    assert_int_equal(unlink(f->path), 0);
    unlink(wal);
    unlink(shm);
    memset(&e, 0, sizeof e);
    assert_null(timeline_reader_open(f->s, &e));
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_non_null(strstr(e.msg, "cannot open the database for reading"));
}

/* Every read fails once the events table is gone (a database another program
 * broke): each is ERR_INTERNAL with a sentence, never a crash. */
static void test_error_database_failure(void **state)
{
    struct fx *f = *state;
    build(f);
    crash(f, 10 * SEC, "{\"kind\":\"panic\"}");
    store_sync(f->s);
    struct timeline_page c = crash_row(f);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "ALTER TABLE events RENAME TO events_gone", NULL, NULL,
                                  NULL), SQLITE_OK);
    sqlite3_close(db);

    struct strobe_error e = {0};
    struct timeline_page p;
    struct event_query q = {0};
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_non_null(strstr(e.msg, "cannot read the session's events"));

    memset(&e, 0, sizeof e);
    q = (struct event_query){.from = {.set = true, .relative = true, .ns = -SEC}};
    assert_int_equal(timeline_events(f->rd, f->key, &q, &p, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_non_null(strstr(e.msg, "latest event time"));

    memset(&e, 0, sizeof e);
    struct timeline_crash_context cc;
    assert_int_equal(timeline_crash_context(f->rd, f->key, &c.events[0], &cc, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_false(cc.has_before);
    assert_null(cc.account_json);
    timeline_crash_context_free(&cc);
    timeline_page_free(&c);

    struct strobe_error none = {0};
    struct timeline_status st;
    assert_int_equal(timeline_status(f->rd, "no-such-2000-01-01-00h00", &st, &none), -1);
    assert_int_equal(none.code, ERR_SESSION_NOT_FOUND);
}

static void test_error_pids(void **state)
{
    struct fx *f = *state;
    build(f);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE session_pids", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct strobe_error e = {0};
    int *pids = NULL, n = -1;
    assert_int_equal(timeline_pids(f->rd, f->key, &pids, &n, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_null(pids);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zeroed_query_reads_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_and_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_time_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_after_event_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pids_sessions_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_context_exception, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_context_sanitizer, setup, teardown),
        cmocka_unit_test(test_crash_account_per_kind),
        cmocka_unit_test_setup_teardown(test_crash_without_account_or_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_joins_the_python_stack_printed_after_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_error_invalid_regex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_invalid_text_regex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_pattern_too_costly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reader_cannot_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_database_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_pids, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
