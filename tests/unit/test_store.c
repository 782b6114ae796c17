/*
 * test_store.c - the SQLite store: session rows, events through rings and the
 * writer, every query filter, paging, FIFO eviction, counters, reopening, the query
 * plans of the common queries (an index must be used, never a bare scan), which
 * sessions retention purges, in what order, the text filters (contains, matches,
 * their errors, exact totals), the event type names of events_view (also in a
 * database written before a type existed), and which new types are evictable.
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_internal.h"
#include "tests/unit/tmpdir.h"

struct fx {
    char dir[256];
    char path[300];
    struct store *s;
    struct store_reader *r;
    struct ring *ring;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/strobe-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/strobe.db", f->dir);
    char *err = NULL;
    f->s = store_open(f->path, &err);
    if (!f->s) {
        fprintf(stderr, "store_open: %s\n", err);
        free(err);
        return -1;
    }
    f->r = store_reader_open(f->s, &err);
    if (!f->r)
        return -1;
    f->ring = ring_create(1 << 20);
    store_attach_ring(f->s, f->ring);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    store_reader_close(f->r);
    if (f->ring)
        store_release_ring(f->s, f->ring); /* the writer destroys it */
    store_close(f->s);
    rm_dir(f->dir);
    free(f);
    return 0;
}

static int64_t new_session(struct fx *f, const char *id)
{
    struct session_row r = {0};
    r.id = (char *)id;
    r.binary_path = "/bin/app";
    r.project_root = "/src";
    r.command_line = "[\"/bin/app\",\"-v\"]";
    r.pid = 100;
    r.started_at_ms = 1700000000000;
    char *err = NULL;
    assert_int_equal(store_session_create(f->s, &r, &err), 0);
    assert_true(r.key > 0);
    return r.key;
}

static void push(struct fx *f, const struct event *e)
{
    assert_true(ring_push(f->ring, e, store_wake, f->s));
}

static struct store_query q_init(int64_t key)
{
    struct store_query q = {0};
    q.session_key = key;
    q.return_is_null = -1;
    q.limit = 50;
    return q;
}

static struct store_result run(struct fx *f, const struct store_query *q)
{
    struct store_result res;
    char *err = NULL;
    int rc = store_query_events(f->r, q, &res, &err);
    if (rc != 0)
        fprintf(stderr, "query failed: %s\n", err);
    assert_int_equal(rc, 0);
    return res;
}

static int64_t count(struct fx *f, const struct store_query *q)
{
    struct store_result res = run(f, q);
    int64_t n = res.total_count;
    store_result_free(&res);
    return n;
}

/* ---- sessions ------------------------------------------------------------------- */

static void test_sessions(void **state)
{
    struct fx *f = *state;
    int64_t a = new_session(f, "app-2026-01-01-10h00");
    assert_int_equal(store_session_id_taken(f->s, "app-2026-01-01-10h00"), 1);
    assert_int_equal(store_session_id_taken(f->s, "nope"), 0);

    struct session_row dup = {.id = "app-2026-01-01-10h00"};
    char *err = NULL;
    assert_int_equal(store_session_create(f->s, &dup, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err, "already exists"));
    free(err);

    struct session_row later = {.id = "app-2026-01-01-10h05", .started_at_ms = 1700000300000,
                                .status = "running", .pid = 200};
    assert_int_equal(store_session_create(f->s, &later, NULL), 0);

    struct session_row g;
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h00", &g), 0);
    assert_int_equal(g.key, a);
    assert_string_equal(g.binary_path, "/bin/app");
    assert_string_equal(g.project_root, "/src");
    assert_string_equal(g.command_line, "[\"/bin/app\",\"-v\"]");
    assert_string_equal(g.status, "running");
    assert_int_equal(g.pid, 100);
    assert_int_equal(g.started_at_ms, 1700000000000);
    assert_int_equal(g.ended_at_ms, 0);
    assert_false(g.has_exit_code);
    assert_null(g.exit_signal);
    assert_false(g.retained);
    assert_int_equal(g.event_count, 0);
    session_row_free(&g);
    assert_int_equal(store_session_get(f->s, "missing", &g), 1);

    struct session_row *rows;
    int n;
    assert_int_equal(store_session_list(f->s, &rows, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].id, "app-2026-01-01-10h05"); /* newest first */
    assert_string_equal(rows[1].id, "app-2026-01-01-10h00");
    for (int i = 0; i < n; i++)
        session_row_free(&rows[i]);
    free(rows);

    assert_int_equal(store_session_finish(f->s, a, "exited", 1700000001000, true, 3, NULL), 0);
    assert_int_equal(store_session_set_retained(f->s, a, true), 0);
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h00", &g), 0);
    assert_string_equal(g.status, "exited");
    assert_int_equal(g.ended_at_ms, 1700000001000);
    assert_true(g.has_exit_code);
    assert_int_equal(g.exit_code, 3);
    assert_true(g.retained);
    session_row_free(&g);

    assert_int_equal(store_session_finish(f->s, later.key, "crashed", 1700000302000, false, 0,
                                          "SIGSEGV"),
                     0);
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h05", &g), 0);
    assert_string_equal(g.status, "crashed");
    assert_false(g.has_exit_code);
    assert_string_equal(g.exit_signal, "SIGSEGV");
    session_row_free(&g);

    /* Orphans: only "running" sessions become "stopped". */
    new_session(f, "orphan-1");
    new_session(f, "orphan-2");
    assert_int_equal(store_session_close_orphans(f->s, 1800000000000), 2);
    assert_int_equal(store_session_get(f->s, "orphan-1", &g), 0);
    assert_string_equal(g.status, "stopped");
    assert_int_equal(g.ended_at_ms, 1800000000000);
    session_row_free(&g);
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h00", &g), 0);
    assert_string_equal(g.status, "exited");
    session_row_free(&g);
    assert_int_equal(store_session_close_orphans(f->s, 1800000000000), 0);

    /* Delete: the row and its events go, the other session stays. */
    for (int i = 0; i < 10; i++) {
        struct event e = event_init(a, EV_STDOUT, i);
        e.text = "x";
        push(f, &e);
        e.session_key = later.key;
        push(f, &e);
    }
    store_sync(f->s);
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h00", &g), 0);
    assert_int_equal(g.event_count, 10);
    session_row_free(&g);
    assert_int_equal(store_session_delete(f->s, a, NULL), 0);
    assert_int_equal(store_session_get(f->s, "app-2026-01-01-10h00", &g), 1);
    assert_int_equal(store_session_id_taken(f->s, "app-2026-01-01-10h00"), 0);
    while (store_deletes_pending(f->s) > 0)
        store_sync(f->s);
    struct store_query q = q_init(a);
    assert_int_equal(count(f, &q), 0);
    q = q_init(later.key);
    assert_int_equal(count(f, &q), 10);
}

/* ---- a small timeline used by the filter tests ------------------------------------ */

struct timeline {
    int64_t key;
    int64_t main_enter_id;
};

/* ts (ns): 10 stdout, 20 enter main, 30 enter parse (worker), 40 exit parse -> 42,
 * 50 enter helper, 60 exit helper -> null (dur 5000), 70 stderr, 80 exit main -> "ok",
 * 90 enter helper pid 101, 95 exit helper pid 101 -> 1.0, 100 crash, 110 process_exit. */
static struct timeline build_timeline(struct fx *f)
{
    struct timeline t = {.key = new_session(f, "tl")};
    int64_t k = t.key;
    struct event e;

    e = event_init(k, EV_STDOUT, 10);
    e.pid = 100, e.tid = 100, e.text = "hello world";
    push(f, &e);

    e = event_init(k, EV_FUNCTION_ENTER, 20);
    e.pid = 100, e.tid = 100, e.thread_name = "main", e.seq = 1;
    e.function = "app::main()", e.function_raw = "_ZN3app4mainEv";
    e.source_file = "/src/app.cpp", e.line = 10, e.arguments = "[]";
    push(f, &e);

    e = event_init(k, EV_FUNCTION_ENTER, 30);
    e.pid = 100, e.tid = 101, e.thread_name = "worker-1", e.seq = 2, e.parent_seq = 1;
    e.function = "app::parse_config(char const*)", e.source_file = "/src/config.cpp";
    e.line = 20, e.arguments = "[\"/etc/app.conf\"]";
    push(f, &e);

    e = event_init(k, EV_FUNCTION_EXIT, 40);
    e.pid = 100, e.tid = 101, e.thread_name = "worker-1", e.seq = 3, e.parent_seq = 1;
    e.function = "app::parse_config(char const*)", e.source_file = "/src/config.cpp";
    e.return_value = "42", e.duration_ns = 10;
    push(f, &e);

    e = event_init(k, EV_FUNCTION_ENTER, 50);
    e.pid = 100, e.tid = 100, e.thread_name = "main", e.seq = 4, e.parent_seq = 1;
    e.function = "lib_helper", e.source_file = "/src/lib.c", e.line = 5;
    push(f, &e);

    e = event_init(k, EV_FUNCTION_EXIT, 60);
    e.pid = 100, e.tid = 100, e.thread_name = "main", e.seq = 5, e.parent_seq = 1;
    e.function = "lib_helper", e.source_file = "/src/lib.c", e.return_value = "null";
    e.duration_ns = 5000, e.sampled = true;
    push(f, &e);

    e = event_init(k, EV_STDERR, 70);
    e.pid = 100, e.tid = 100, e.text = "warning: low disk";
    push(f, &e);

    e = event_init(k, EV_FUNCTION_EXIT, 80);
    e.pid = 100, e.tid = 100, e.thread_name = "main", e.seq = 6, e.parent_seq = 0;
    e.function = "app::main()", e.function_raw = "_ZN3app4mainEv";
    e.source_file = "/src/app.cpp", e.return_value = "\"ok\"", e.duration_ns = 60;
    push(f, &e);

    e = event_init(k, EV_FUNCTION_ENTER, 90);
    e.pid = 101, e.tid = 101, e.thread_name = "child", e.seq = 7, e.parent_seq = 999;
    e.function = "lib_helper", e.source_file = "/src/lib.c";
    push(f, &e);

    e = event_init(k, EV_FUNCTION_EXIT, 95);
    e.pid = 101, e.tid = 101, e.thread_name = "child", e.seq = 8;
    e.function = "lib_helper", e.source_file = "/src/lib.c", e.return_value = "1.0";
    e.duration_ns = 5;
    push(f, &e);

    e = event_init(k, EV_CRASH, 100);
    e.pid = 101, e.tid = 101, e.text = "SIGSEGV at 0x0", e.data = "{\"signal\":\"SIGSEGV\"}";
    e.function = "lib_helper";
    push(f, &e);

    e = event_init(k, EV_PROCESS_EXIT, 110);
    e.pid = 101, e.text = "killed by SIGSEGV", e.data = "{\"signal\":\"SIGSEGV\"}";
    push(f, &e);

    store_sync(f->s);
    struct store_query q = q_init(k);
    q.event_type = EV_FUNCTION_ENTER;
    q.limit = 1;
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "app::main()");
    t.main_enter_id = res.rows[0].id;
    store_result_free(&res);
    return t;
}

static void test_query_all_and_fields(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct store_query q = q_init(t.key);
    struct store_result res = run(f, &q);
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
    struct store_query q;
    struct store_result res;

    q = q_init(t.key);
    q.event_type = EV_FUNCTION_EXIT;
    assert_int_equal(count(f, &q), 4);
    q.event_type = EV_STDERR;
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].text, "warning: low disk");
    store_result_free(&res);

    q = q_init(t.key);
    q.function_equals = "lib_helper";
    assert_int_equal(count(f, &q), 5); /* 2 enters, 2 exits, crash frame */
    q.function_equals = "lib";
    assert_int_equal(count(f, &q), 0);
    q = q_init(t.key);
    q.function_contains = "app::";
    assert_int_equal(count(f, &q), 4);
    q = q_init(t.key);
    q.function_matches = "^app::(main|parse)";
    assert_int_equal(count(f, &q), 4);
    q.function_matches = "config\\(";
    assert_int_equal(count(f, &q), 2);
    q.function_matches = "^nothing$";
    assert_int_equal(count(f, &q), 0);
    /* Several function filters combine with AND. */
    q = q_init(t.key);
    q.function_contains = "app";
    q.function_matches = "main";
    assert_int_equal(count(f, &q), 2);

    /* Invalid regex: the caller's error (STORE_E_PATTERN), with a sentence. */
    q = q_init(t.key);
    q.function_matches = "app(";
    char *err = NULL;
    assert_int_equal(store_query_events(f->r, &q, &res, &err), STORE_E_PATTERN);
    assert_non_null(err);
    assert_non_null(strstr(err, "regular expression"));
    free(err);

    q = q_init(t.key);
    q.file_equals = "/src/lib.c";
    assert_int_equal(count(f, &q), 4);
    q.file_equals = NULL;
    q.file_contains = "config";
    assert_int_equal(count(f, &q), 2);
    q.file_contains = "/src/";
    q.event_type = EV_FUNCTION_ENTER;
    assert_int_equal(count(f, &q), 4);

    q = q_init(t.key);
    q.return_equals = "42";
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "app::parse_config(char const*)");
    store_result_free(&res);
    q.return_equals = "\"ok\"";
    assert_int_equal(count(f, &q), 1);
    q.return_equals = "1"; /* numeric equality with the stored 1.0 */
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].return_value, "1.0");
    store_result_free(&res);
    q.return_equals = "\"1\"";
    assert_int_equal(count(f, &q), 0);
    q = q_init(t.key);
    q.return_is_null = 1;
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "lib_helper");
    store_result_free(&res);
    q.return_is_null = 0;
    assert_int_equal(count(f, &q), 3);

    q = q_init(t.key);
    q.thread_name_contains = "work";
    assert_int_equal(count(f, &q), 2);
    q.thread_name_contains = "ai";
    assert_int_equal(count(f, &q), 4);
    q.thread_name_contains = "zzz";
    assert_int_equal(count(f, &q), 0);

    q = q_init(t.key);
    q.has_time_from = true;
    q.time_from_ns = 40;
    q.has_time_to = true;
    q.time_to_ns = 70;
    res = run(f, &q);
    assert_int_equal(res.n, 4); /* 40, 50, 60, 70 inclusive */
    assert_int_equal(res.rows[0].ts_ns, 40);
    assert_int_equal(res.rows[3].ts_ns, 70);
    store_result_free(&res);
    q.has_time_to = false;
    assert_int_equal(count(f, &q), 9);

    q = q_init(t.key);
    q.min_duration_ns = 60;
    res = run(f, &q);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.rows[0].duration_ns, 5000);
    assert_int_equal(res.rows[1].duration_ns, 60);
    store_result_free(&res);

    q = q_init(t.key);
    q.pid = 101;
    assert_int_equal(count(f, &q), 4);
    q.pid = 100;
    assert_int_equal(count(f, &q), 8);

    /* A filter on another session's key sees nothing. */
    q = q_init(t.key + 1000);
    assert_int_equal(count(f, &q), 0);
}

static void test_query_paging(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    struct store_query q = q_init(t.key);
    q.limit = 5;
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, 5);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 12);
    assert_int_equal(res.rows[0].ts_ns, 10);
    store_result_free(&res);

    q.offset = 10;
    res = run(f, &q);
    assert_int_equal(res.n, 2);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 12);
    assert_int_equal(res.rows[0].ts_ns, 100);
    store_result_free(&res);

    q.offset = 50;
    res = run(f, &q);
    assert_int_equal(res.n, 0);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 12);
    store_result_free(&res);

    /* Filtered paging: the count is a real (capped) count. */
    q = q_init(t.key);
    q.function_contains = "e";
    q.limit = 2;
    res = run(f, &q);
    assert_int_equal(res.n, 2);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 7); /* parse_config x2, lib_helper x5 */
    store_result_free(&res);

    /* latest: the last N, still chronological. */
    q = q_init(t.key);
    q.latest = true;
    q.limit = 3;
    res = run(f, &q);
    assert_int_equal(res.n, 3);
    assert_true(res.has_more);
    assert_int_equal(res.rows[0].ts_ns, 95);
    assert_int_equal(res.rows[2].ts_ns, 110);
    store_result_free(&res);
    q.offset = 3;
    res = run(f, &q);
    assert_int_equal(res.rows[0].ts_ns, 70);
    assert_int_equal(res.rows[2].ts_ns, 90);
    store_result_free(&res);

    /* afterEventId: ordered by id, nothing missed when polling. */
    q = q_init(t.key);
    q.after_id = t.main_enter_id;
    q.limit = 4;
    res = run(f, &q);
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
    res = run(f, &q);
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

static void test_eviction(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "evict");
    int64_t other = new_session(f, "other");
    store_session_set_limit(f->s, k, 100);
    char fn[32], line[32];
    int64_t seq = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(fn, sizeof fn, "f%d", i % 7);
        struct event e = event_init(k, EV_FUNCTION_ENTER, i * 10);
        e.seq = ++seq;
        e.function = fn;
        push(f, &e);
        e = event_init(k, EV_FUNCTION_EXIT, i * 10 + 1);
        e.seq = ++seq;
        e.function = fn;
        e.duration_ns = 1;
        push(f, &e);
        if (i % 10 == 0) {
            snprintf(line, sizeof line, "line %d", i);
            e = event_init(k, i % 20 ? EV_STDERR : EV_STDOUT, i * 10 + 2);
            e.text = line;
            push(f, &e);
        }
        if (i % 100 == 0) /* some events of an unlimited session in between */
            store_sync(f->s);
        e = event_init(other, EV_FUNCTION_ENTER, i);
        e.function = fn;
        push(f, &e);
    }
    struct event e = event_init(k, EV_CRASH, 5000);
    e.text = "SIGSEGV";
    push(f, &e);
    e = event_init(k, EV_PROCESS_EXIT, 5001);
    e.text = "killed";
    push(f, &e);
    store_sync(f->s);

    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    int64_t evictable = c[EV_FUNCTION_ENTER] + c[EV_FUNCTION_EXIT];
    assert_true(evictable >= 100 && evictable <= 101);
    assert_int_equal(c[EV_STDOUT], 25); /* never evicted */
    assert_int_equal(c[EV_STDERR], 25);
    assert_int_equal(c[EV_CRASH], 1);
    assert_int_equal(c[EV_PROCESS_EXIT], 1);

    /* The counters agree with the rows, and the survivors are the newest. */
    struct store_query q = q_init(k);
    q.event_type = EV_FUNCTION_ENTER;
    q.limit = 500;
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, c[EV_FUNCTION_ENTER]);
    assert_true(res.rows[0].ts_ns >= 4000);
    assert_int_equal(res.rows[res.n - 1].ts_ns, 4990);
    store_result_free(&res);
    q = q_init(k);
    q.event_type = EV_STDOUT;
    q.limit = 1;
    res = run(f, &q);
    assert_string_equal(res.rows[0].text, "line 0");
    assert_int_equal(res.total_count, 25);
    store_result_free(&res);
    q = q_init(k);
    q.limit = 1000;
    res = run(f, &q);
    assert_int_equal(res.n, evictable + 52);
    store_result_free(&res);

    /* Function counts are calls observed: eviction does not lower them. */
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, k, 10, &fc, &n), 0);
    int64_t calls = 0;
    for (int i = 0; i < n; i++) {
        calls += fc[i].count;
        free(fc[i].function);
    }
    free(fc);
    assert_int_equal(calls, 500);

    /* The other session (default limit) lost nothing. */
    assert_int_equal(store_count_by_type(f->r, other, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], 500);
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

static void test_delete_large_session(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "big");
    int64_t keep = new_session(f, "keep");
    for (int i = 0; i < 45000; i++) {
        struct event e = event_init(k, EV_FUNCTION_ENTER, i);
        e.function = i % 2 ? "a" : "b";
        push(f, &e);
    }
    struct event e = event_init(keep, EV_STDOUT, 1);
    e.text = "kept";
    push(f, &e);
    store_sync(f->s);
    char *err = NULL;
    assert_int_equal(store_session_delete(f->s, k, &err), 0);
    /* Gone at once for lookups; its events go in the background. */
    struct session_row row;
    assert_int_equal(store_session_get(f->s, "big", &row), 1);
    assert_int_equal(store_session_id_taken(f->s, "big"), 0);
    while (store_deletes_pending(f->s) > 0)
        store_sync(f->s);
    struct store_query q = q_init(k);
    assert_int_equal(count(f, &q), 0);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], 0);
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, k, 10, &fc, &n), 0);
    assert_int_equal(n, 0);
    free(fc);
    q = q_init(keep);
    assert_int_equal(count(f, &q), 1);
}

/* A producer keeps pushing while store_sync() runs: everything pushed before the
 * call is visible after it. */
struct busy {
    struct fx *f;
    int64_t key;
    atomic_int pushed;
    atomic_int stop;
    struct ring *ring;
};

static void *busy_main(void *arg)
{
    struct busy *b = arg;
    while (!atomic_load(&b->stop)) {
        struct event e = event_init(b->key, EV_FUNCTION_ENTER, atomic_load(&b->pushed));
        e.function = "spin";
        ring_push(b->ring, &e, store_wake, b->f->s);
        atomic_fetch_add(&b->pushed, 1);
        if (atomic_load(&b->pushed) % 16 == 0)
            usleep(200);
    }
    return NULL;
}

static void test_sync_barrier(void **state)
{
    struct fx *f = *state;
    struct busy b = {.f = f, .key = new_session(f, "busy"), .ring = ring_create(1 << 16)};
    store_attach_ring(f->s, b.ring);
    store_session_set_limit(f->s, b.key, 1000000000); /* count everything */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, busy_main, &b), 0);
    for (int i = 0; i < 20; i++) {
        usleep(2000);
        int before = atomic_load(&b.pushed);
        store_sync(f->s);
        int64_t c[EV_TYPE_MAX + 1];
        assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
        if (c[EV_FUNCTION_ENTER] < before)
            fail_msg("after store_sync: %lld events stored, %d pushed before the call",
                     (long long)c[EV_FUNCTION_ENTER], before);
    }
    atomic_store(&b.stop, 1);
    pthread_join(t, NULL);
    store_release_ring(f->s, b.ring); /* drained, then destroyed by the writer */
    store_sync(f->s);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], atomic_load(&b.pushed));
}

/* store_sync_session: a barrier for one session's events (everything it pushed
 * before the call is visible after it), while another session floods. */
static void test_sync_session_barrier(void **state)
{
    struct fx *f = *state;
    struct busy b = {.f = f, .key = new_session(f, "flood"), .ring = ring_create(1 << 16)};
    store_attach_ring(f->s, b.ring);
    store_session_set_limit(f->s, b.key, 1000000000);
    int64_t quiet = new_session(f, "quiet");
    struct ring *qr = ring_create(1 << 16);
    store_attach_ring(f->s, qr);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, busy_main, &b), 0);
    for (int i = 1; i <= 20; i++) {
        struct event e = event_init(quiet, EV_STDOUT, i);
        e.text = "line";
        ring_push(qr, &e, store_wake, f->s);
        assert_int_equal(store_sync_session(f->s, quiet, 10000), 0);
        int64_t c[EV_TYPE_MAX + 1];
        assert_int_equal(store_count_by_type(f->r, quiet, c), 0);
        assert_int_equal(c[EV_STDOUT], i);
        int before = atomic_load(&b.pushed);
        assert_int_equal(store_sync_session(f->s, b.key, -1), 0);
        assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
        if (c[EV_FUNCTION_ENTER] < before)
            fail_msg("after store_sync_session: %lld events stored, %d pushed before",
                     (long long)c[EV_FUNCTION_ENTER], before);
    }
    /* Nothing of the quiet session on its way: answers at once, whatever the flood. */
    assert_int_equal(store_sync_session(f->s, quiet, 0), 0);
    atomic_store(&b.stop, 1);
    pthread_join(t, NULL);
    store_release_ring(f->s, b.ring);
    store_release_ring(f->s, qr);
    store_sync(f->s);
}

/* A batch the database refuses: its events are lost and counted per session, one
 * by one (stored + lost == pushed), and the writer goes on with the next ones. The
 * failure is injected with a trigger, through a connection of the test's own. */
static void test_lost_events_are_counted_exactly(void **state)
{
    struct fx *f = *state;
    int64_t a = new_session(f, "lossy"), b = new_session(f, "bystander");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER poison BEFORE INSERT ON events "
                                      "WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, "
                                      "'injected failure'); END;", NULL, NULL, NULL),
                     SQLITE_OK);
    int pushed_a = 0;
    for (int i = 0; i < 100; i++, pushed_a++) {
        struct event e = event_init(i % 2 ? a : b, EV_STDOUT, 1000 + i);
        e.text = i == 60 ? "poison" : "fine";
        push(f, &e);
    }
    store_sync(f->s);
    /* After the failure, later events are stored again. */
    struct event e = event_init(a, EV_STDOUT, 5000);
    e.text = "after";
    push(f, &e);
    store_sync(f->s);
    int64_t ca[EV_TYPE_MAX + 1], cb[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, a, ca), 0);
    assert_int_equal(store_count_by_type(f->r, b, cb), 0);
    char msg[256];
    int64_t lost_a = store_session_lost(f->s, a, msg, sizeof msg);
    int64_t lost_b = store_session_lost(f->s, b, NULL, 0);
    assert_true(lost_a + lost_b >= 1);
    assert_int_equal(ca[EV_STDOUT] + lost_a, 50 + 1);
    assert_int_equal(cb[EV_STDOUT] + lost_b, 50);
    assert_non_null(strstr(msg, "injected failure"));
    struct store_query q = q_init(a);
    q.event_type = EV_STDOUT;
    struct store_result res = run(f, &q);
    assert_string_equal(res.rows[res.n - 1].text, "after");
    store_result_free(&res);
    sqlite3_exec(db, "DROP TRIGGER poison", NULL, NULL, NULL);
    sqlite3_close(db);
}

static void test_reopen(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    store_reader_close(f->r);
    store_release_ring(f->s, f->ring);
    store_close(f->s);
    char *err = NULL;
    f->s = store_open(f->path, &err);
    assert_non_null(f->s);
    f->r = store_reader_open(f->s, &err);
    assert_non_null(f->r);
    f->ring = ring_create(1 << 16);
    store_attach_ring(f->s, f->ring);
    struct event e = event_init(t.key, EV_FUNCTION_ENTER, 200);
    e.function = "lib_helper"; /* known name, from the table */
    e.seq = 100;
    push(f, &e);
    store_sync(f->s);
    struct store_query q = q_init(t.key);
    q.function_equals = "lib_helper";
    q.event_type = EV_FUNCTION_ENTER;
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, 3);
    assert_true(res.rows[2].id > res.rows[1].id);
    store_result_free(&res);
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, t.key, 1, &fc, &n), 0);
    assert_string_equal(fc[0].function, "lib_helper");
    assert_int_equal(fc[0].count, 3);
    free(fc[0].function);
    free(fc);
}

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
    struct store_query q;
    struct store_result res;

    /* contains: case-sensitive substring over every event's text. */
    q = q_init(t.key);
    q.text_contains = "SIGSEGV";
    res = run(f, &q);
    assert_int_equal(res.n, 2); /* the crash summary and the exit text */
    assert_int_equal(res.rows[0].type, EV_CRASH);
    assert_int_equal(res.rows[1].type, EV_PROCESS_EXIT);
    assert_int_equal(res.total_count, 2);
    store_result_free(&res);
    q.text_contains = "sigsegv";
    assert_int_equal(count(f, &q), 0);
    q.text_contains = "paused at";
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.rows[0].type, EV_PAUSE);
    store_result_free(&res);
    q.text_contains = "retries";
    assert_int_equal(count(f, &q), 1);
    /* Function events have no text: a match-everything substring still skips them. */
    q.text_contains = " ";
    assert_int_equal(count(f, &q), 6); /* hello world, warning..., crash, exit, logpoint, pause */

    /* matches: a regular expression found anywhere in the text. */
    q = q_init(t.key);
    q.text_matches = "^(hello|warning)";
    assert_int_equal(count(f, &q), 2);
    q.text_matches = "\\d+";
    assert_int_equal(count(f, &q), 3); /* 0x0, 42/3, 100/12/1 */
    q.text_matches = "^nothing$";
    assert_int_equal(count(f, &q), 0);

    /* Composition with every other filter (AND). */
    q = q_init(t.key);
    q.text_contains = "SIGSEGV";
    q.event_type = EV_CRASH;
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].text, "SIGSEGV at 0x0");
    store_result_free(&res);
    q = q_init(t.key);
    q.text_matches = "^(hello|warning)";
    q.event_type = EV_STDERR;
    assert_int_equal(count(f, &q), 1);
    q = q_init(t.key);
    q.text_contains = "o";
    q.text_matches = "^w";
    assert_int_equal(count(f, &q), 1); /* both: warning: low disk */
    q = q_init(t.key);
    q.text_contains = "SIGSEGV";
    q.pid = 101;
    q.has_time_from = true;
    q.time_from_ns = 105;
    assert_int_equal(count(f, &q), 1); /* the exit, at 110 */
    q = q_init(t.key);
    q.text_matches = "\\d";
    q.function_equals = "lib_helper";
    assert_int_equal(count(f, &q), 1); /* the crash: the one with text and that function */
    q = q_init(t.key);
    q.text_contains = "SIGSEGV";
    q.after_id = t.main_enter_id;
    res = run(f, &q);
    assert_int_equal(res.n, 2);
    assert_true(res.rows[0].id < res.rows[1].id);
    store_result_free(&res);
    q = q_init(t.key);
    q.text_contains = "SIGSEGV";
    q.latest = true;
    q.limit = 1;
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_int_equal(res.rows[0].type, EV_PROCESS_EXIT);
    assert_int_equal(res.total_count, 2);
    assert_true(res.has_more);
    store_result_free(&res);

    /* A bad pattern is the caller's error, and says which pattern. */
    q = q_init(t.key);
    q.text_matches = "disk(";
    char *err = NULL;
    assert_int_equal(store_query_events(f->r, &q, &res, &err), STORE_E_PATTERN);
    assert_non_null(err);
    assert_non_null(strstr(err, "text pattern"));
    assert_non_null(strstr(err, "not a valid regular expression"));
    free(err);
    err = NULL;
    /* Over the match budget on some event's text: the same error, not a database one,
     * and the reader still serves the next query. */
    struct event e = event_init(t.key, EV_STDOUT, 140);
    e.text = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
    push(f, &e);
    store_sync(f->s);
    q.text_matches = "^(a|aa)+$";
    assert_int_equal(store_query_events(f->r, &q, &res, &err), STORE_E_PATTERN);
    assert_non_null(err);
    assert_non_null(strstr(err, "too costly"));
    free(err);
    assert_int_equal(res.n, 0);
    q.text_matches = "^a+!$";
    assert_int_equal(count(f, &q), 1);
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
    struct store_query q = q_init(k);
    q.text_contains = "needle";
    q.limit = 10;
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, 10);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 1000);
    assert_false(res.total_is_lower_bound);
    store_result_free(&res);
    q.offset = 995;
    res = run(f, &q);
    assert_int_equal(res.n, 5);
    assert_false(res.has_more);
    assert_int_equal(res.total_count, 1000);
    store_result_free(&res);

    q = q_init(k);
    q.text_matches = "^request \\d*[05]: needle";
    q.limit = 7;
    res = run(f, &q);
    assert_int_equal(res.total_count, 200); /* i % 3 == 0 and i % 5 == 0 */
    assert_false(res.total_is_lower_bound);
    store_result_free(&res);
    q.event_type = EV_STDERR; /* even i: i % 30 == 0 */
    assert_int_equal(count(f, &q), 100);

    /* skip_total: only what the rows read show. */
    q = q_init(k);
    q.text_contains = "needle";
    q.limit = 1;
    q.skip_total = true;
    res = run(f, &q);
    assert_int_equal(res.n, 1);
    assert_true(res.has_more);
    assert_int_equal(res.total_count, 2);
    store_result_free(&res);
}

/* ---- logpoint and pause ------------------------------------------------------------- */

/* event_type of events_view for the event with this id. */
static char *view_type(const char *path, int64_t id)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT event_type FROM events_view WHERE id = ?1",
                                        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char *t = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t;
}

static void expect_view_type(const char *path, int64_t id, const char *want)
{
    char *got = view_type(path, id);
    assert_string_equal(got, want);
    free(got);
}

static void test_new_types_in_view(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "types");
    int types[] = {EV_WATCH_HIT, EV_LOGPOINT, EV_PAUSE};
    for (int i = 0; i < 3; i++) {
        struct event e = event_init(k, types[i], i);
        e.text = "t";
        push(f, &e);
    }
    store_sync(f->s);
    struct store_query q = q_init(k);
    struct store_result res = run(f, &q);
    assert_int_equal(res.n, 3);
    int64_t ids[3] = {res.rows[0].id, res.rows[1].id, res.rows[2].id};
    store_result_free(&res);
    expect_view_type(f->path, ids[0], "watch_hit");
    expect_view_type(f->path, ids[1], "logpoint");
    expect_view_type(f->path, ids[2], "pause");

    /* A database written before these types: its view names them by number until the
     * next open replaces it. */
    store_reader_close(f->r);
    store_release_ring(f->s, f->ring);
    store_close(f->s);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP VIEW events_view;"
                                      "CREATE VIEW events_view AS SELECT e.id AS id,"
                                      " CASE e.type WHEN 1 THEN 'stdout'"
                                      " ELSE CAST(e.type AS TEXT) END AS event_type"
                                      " FROM events e", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_view_type(f->path, ids[1], "9");
    char *err = NULL;
    f->s = store_open(f->path, &err);
    assert_non_null(f->s);
    f->r = store_reader_open(f->s, &err);
    assert_non_null(f->r);
    f->ring = ring_create(1 << 16);
    store_attach_ring(f->s, f->ring);
    expect_view_type(f->path, ids[0], "watch_hit");
    expect_view_type(f->path, ids[1], "logpoint");
    expect_view_type(f->path, ids[2], "pause");
}

static void test_logpoints_evictable_pauses_not(void **state)
{
    struct fx *f = *state;
    assert_true(event_type_evictable(EV_LOGPOINT));
    assert_true(event_type_evictable(EV_WATCH_HIT));
    assert_false(event_type_evictable(EV_PAUSE));
    int64_t k = new_session(f, "logs");
    store_session_set_limit(f->s, k, 100);
    for (int i = 0; i < 400; i++) {
        struct event e = event_init(k, EV_LOGPOINT, i * 10);
        e.text = "tick";
        push(f, &e);
        if (i % 40 == 0) {
            e = event_init(k, EV_PAUSE, i * 10 + 1);
            e.text = "paused";
            push(f, &e);
            e = event_init(k, EV_WATCH_HIT, i * 10 + 2);
            push(f, &e);
            store_sync(f->s);
        }
    }
    store_sync(f->s);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    assert_true(c[EV_LOGPOINT] + c[EV_WATCH_HIT] >= 100);
    assert_true(c[EV_LOGPOINT] + c[EV_WATCH_HIT] <= 101);
    assert_int_equal(c[EV_PAUSE], 10);
    struct store_query q = q_init(k);
    q.event_type = EV_PAUSE;
    assert_int_equal(count(f, &q), 10);
    q.event_type = EV_LOGPOINT;
    q.text_contains = "tick";
    assert_int_equal(count(f, &q), c[EV_LOGPOINT]);
}

/* ---- query plans -------------------------------------------------------------------- */

static void expect_indexed(struct fx *f, const struct store_query *q, const char *index)
{
    char *plan = NULL, *err = NULL;
    assert_int_equal(store_explain_query(f->r, q, &plan, &err), 0);
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
    struct store_query q = q_init(t.key);
    q.latest = true;
    expect_indexed(f, &q, "ev_session_ts");
    q = q_init(t.key);
    expect_indexed(f, &q, "ev_session_ts");
    q = q_init(t.key);
    q.event_type = EV_STDERR;
    expect_indexed(f, &q, "ev_session_type");
    /* Function events are not in the partial ev_session_type: the time index serves
     * them, filtering on the type it holds. */
    q = q_init(t.key);
    q.event_type = EV_FUNCTION_ENTER;
    expect_indexed(f, &q, "ev_session_ts");
    q = q_init(t.key);
    q.return_is_null = 0;
    expect_indexed(f, &q, "ev_session_ts");
    q = q_init(t.key);
    q.function_contains = "app";
    expect_indexed(f, &q, "ev_session_func");
    q = q_init(t.key);
    q.function_equals = "lib_helper";
    expect_indexed(f, &q, "ev_session_func");
    q = q_init(t.key);
    q.has_time_from = q.has_time_to = true;
    q.time_from_ns = 30;
    q.time_to_ns = 70;
    expect_indexed(f, &q, "ev_session_ts");
    q = q_init(t.key);
    q.after_id = 3;
    expect_indexed(f, &q, "INTEGER PRIMARY KEY (rowid>?)");
    q = q_init(t.key);
    q.pid = 101;
    expect_indexed(f, &q, NULL);
    q = q_init(t.key);
    q.text_contains = "x";
    expect_indexed(f, &q, NULL);
}

/* ---- retention ------------------------------------------------------------------- */

#define DAY_MS (86400 * 1000LL)
#define NOW_MS 1800000000000LL

/* A session started at started_ms; ended at ended_ms unless that is 0 (status then
 * "running", or "stopped" without an end when stopped_unended). */
static int64_t aged_session(struct fx *f, const char *id, int64_t started_ms,
                            int64_t ended_ms, bool stopped_unended)
{
    struct session_row r = {.id = (char *)id, .started_at_ms = started_ms,
                            .status = stopped_unended ? "stopped" : "running"};
    assert_int_equal(store_session_create(f->s, &r, NULL), 0);
    if (ended_ms)
        assert_int_equal(store_session_finish(f->s, r.key, "exited", ended_ms, true, 0, NULL),
                         0);
    return r.key;
}

/* n stdout events of `bytes` characters each for key, through a ring of its own
 * that is released and drained before returning. */
static void fill(struct fx *f, int64_t key, int n, size_t bytes)
{
    struct ring *ring = ring_create(1 << 20);
    store_attach_ring(f->s, ring);
    char *text = malloc(bytes + 1);
    memset(text, 'x', bytes);
    text[bytes] = 0;
    for (int i = 0; i < n; i++) {
        struct event e = event_init(key, EV_STDOUT, i);
        e.text = text;
        assert_true(ring_push(ring, &e, store_wake, f->s));
    }
    free(text);
    store_release_ring(f->s, ring);
    store_sync(f->s);
}

struct purge_log {
    int n;
    char ids[8][64];
    bool by_age[8];
};

static void note_purge(void *arg, const struct store_purged *p)
{
    struct purge_log *l = arg;
    assert_true(l->n < 8);
    snprintf(l->ids[l->n], sizeof l->ids[0], "%s", p->session_id);
    l->by_age[l->n++] = p->by_age;
    if (p->by_age)
        assert_int_equal(p->used_bytes, -1);
    else
        assert_true(p->used_bytes > 0);
}

static bool exists(struct fx *f, const char *id)
{
    return store_session_id_taken(f->s, id) == 1;
}

static void test_purge_by_age(void **state)
{
    struct fx *f = *state;
    int64_t old = aged_session(f, "old", NOW_MS - 20 * DAY_MS, NOW_MS - 8 * DAY_MS, false);
    assert_int_equal(store_session_set_retained(f->s, old, true), 0);
    aged_session(f, "young", NOW_MS - 20 * DAY_MS, NOW_MS - 6 * DAY_MS, false);
    aged_session(f, "unended", NOW_MS - 8 * DAY_MS, 0, true); /* age from its start */
    aged_session(f, "running", NOW_MS - 30 * DAY_MS, 0, false);
    aged_session(f, "edge", NOW_MS - 9 * DAY_MS, NOW_MS - 7 * DAY_MS, false);
    fill(f, old, 100, 10);

    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = INT64_MAX};
    struct purge_log log = {0};
    char *err = NULL;
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, &err), 2);
    assert_int_equal(log.n, 2);
    assert_string_equal(log.ids[0], "old"); /* oldest start first */
    assert_string_equal(log.ids[1], "unended");
    assert_true(log.by_age[0] && log.by_age[1]);
    assert_false(exists(f, "old"));
    assert_false(exists(f, "unended"));
    assert_true(exists(f, "young"));
    assert_true(exists(f, "running"));
    assert_true(exists(f, "edge")); /* exactly 7 days: not older than the limit */

    /* Its events and counters went with it. */
    struct store_query q = q_init(old);
    assert_int_equal(count(f, &q), 0);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, old, c), 0);
    assert_int_equal(c[EV_STDOUT], 0);

    /* Nothing left to do: a second pass purges nothing. */
    assert_int_equal(store_purge_expired(f->s, &p, NULL, NULL, &err), 0);
}

static void test_purge_by_size(void **state)
{
    struct fx *f = *state;
    /* Key order differs from start order: the purge follows started_at. */
    int64_t a = aged_session(f, "third", NOW_MS - 1000, NOW_MS - 500, false);
    int64_t b = aged_session(f, "first", NOW_MS - 3000, NOW_MS - 2500, false);
    int64_t c = aged_session(f, "second", NOW_MS - 2000, NOW_MS - 1500, false);
    int64_t run = aged_session(f, "running", NOW_MS - 9000, 0, false);
    assert_int_equal(store_session_set_retained(f->s, c, true), 0);
    fill(f, a, 300, 1000);
    fill(f, b, 300, 1000);
    fill(f, c, 300, 1000);
    fill(f, run, 300, 1000);
    int64_t used = store_used_bytes(f->s);
    assert_true(used > 4 * 300 * 1000);

    /* Just over the cap: the oldest ended session goes, and that is enough. */
    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = used - 1};
    struct purge_log log = {0};
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 1);
    assert_int_equal(log.n, 1);
    assert_string_equal(log.ids[0], "first");
    assert_false(log.by_age[0]);
    int64_t after = store_used_bytes(f->s);
    assert_true(after < used - 300 * 1000); /* freed pages stop counting at once */

    /* A cap nothing fits under: every ended session goes, oldest first, retained or
     * not; the running one stays although it is the oldest and the cap is still
     * exceeded. */
    p.max_used_bytes = 1;
    log.n = 0;
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 2);
    assert_int_equal(log.n, 2);
    assert_string_equal(log.ids[0], "second");
    assert_string_equal(log.ids[1], "third");
    assert_true(exists(f, "running"));
    assert_true(store_used_bytes(f->s) > 1);
    struct store_query q = q_init(run);
    assert_int_equal(count(f, &q), 300);
}

static void test_purge_spares_sessions_still_produced(void **state)
{
    struct fx *f = *state;
    /* The main process ended, but a ring of the session is still attached (its
     * children still write): not purged until the ring is released and drained. */
    int64_t k = aged_session(f, "children", NOW_MS - 10 * DAY_MS, NOW_MS - 9 * DAY_MS,
                             false);
    struct ring *ring = ring_create(1 << 16);
    store_attach_ring(f->s, ring);
    struct event e = event_init(k, EV_STDOUT, 1);
    e.text = "late";
    assert_true(ring_push(ring, &e, store_wake, f->s));
    store_sync(f->s);
    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = 1};
    assert_int_equal(store_purge_expired(f->s, &p, NULL, NULL, NULL), 0);
    assert_true(exists(f, "children"));

    store_release_ring(f->s, ring);
    store_sync(f->s);
    struct purge_log log = {0};
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 1);
    assert_true(log.by_age[0]); /* the age rule comes first */
    assert_false(exists(f, "children"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_all_and_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counts_and_pids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_large_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_session_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_events_are_counted_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_filter_exact_total, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_types_in_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logpoints_evictable_pauses_not, setup, teardown),
        cmocka_unit_test_setup_teardown(test_count_by_function_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_by_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_spares_sessions_still_produced, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
