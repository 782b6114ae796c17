/*
 * store_fixture.h - what the store's unit tests share (test_store_sessions.c,
 * _query.c, _text.c, _writer.c, _retention.c; test_store_plans.c has a larger
 * fixture of its own): a store opened in a mkdtemp directory of its own with a
 * reader and an attached ring (setup/teardown, the directory removed afterwards),
 * sessions, pushes, queries, and a small timeline (output, calls across threads and
 * processes, a crash, a process exit) that most tests read.
 */
#ifndef STROBE_TEST_STORE_FIXTURE_H
#define STROBE_TEST_STORE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "store/store.h"
#include "tests/unit/tmpdir.h"

struct fx {
    char dir[256];
    char path[300];
    struct store *s;
    struct store_reader *r;
    struct ring *ring;
};

static inline int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/strobe-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/strobe.db", f->dir);
    struct strobe_error err;
    f->s = store_open(f->path, &err);
    if (!f->s) {
        fprintf(stderr, "store_open: %s\n", err.msg);
        return -1;
    }
    f->r = store_reader_open(f->s, &err);
    if (!f->r)
        return -1;
    f->ring = ring_create(1 << 20);
    store_attach_ring(f->s, f->ring, 0);
    *state = f;
    return 0;
}

static inline int teardown(void **state)
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

static inline int64_t new_session(struct fx *f, const char *id)
{
    struct session_row r = {0};
    r.id = (char *)id;
    r.binary_path = "/bin/app";
    r.project_root = "/src";
    r.command_line = "[\"/bin/app\",\"-v\"]";
    r.pid = 100;
    r.started_at_ms = 1700000000000;
    struct strobe_error err;
    if (store_session_create(f->s, &r, &err) != 0)
        fail_msg("store_session_create: %s", err.msg);
    assert_true(r.key > 0);
    return r.key;
}

static inline void push(struct fx *f, const struct event *e)
{
    assert_true(ring_push(f->ring, e, store_wake, f->s));
}

/* The first page of 50 of every event. */
static inline struct event_query q_init(void)
{
    return (struct event_query){.limit = 50};
}

/* store_query_events() on q as the engine hands it over: with its patterns compiled,
 * here for this one query (the tests point q's patterns at others between queries). */
static inline int query(struct fx *f, int64_t key, const struct event_query *q, int flags,
                        struct store_result *res, struct strobe_error *err)
{
    struct event_query c = *q;
    struct strobe_error why;
    if (c.function_matches && !(c.function_re = regex_compile(c.function_matches, &why)))
        fail_msg("function pattern %s: %s", c.function_matches, why.msg);
    if (c.text_matches && !(c.text_re = regex_compile(c.text_matches, &why)))
        fail_msg("text pattern %s: %s", c.text_matches, why.msg);
    int rc = store_query_events(f->r, key, &c, flags, res, err);
    event_query_free_compiled(&c);
    return rc;
}

static inline struct store_result run_flags(struct fx *f, int64_t key,
                                            const struct event_query *q, int flags)
{
    struct store_result res;
    struct strobe_error err;
    int rc = query(f, key, q, flags, &res, &err);
    if (rc != 0)
        fprintf(stderr, "query failed: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return res;
}

static inline struct store_result run(struct fx *f, int64_t key, const struct event_query *q)
{
    return run_flags(f, key, q, 0);
}

static inline int64_t count(struct fx *f, int64_t key, const struct event_query *q)
{
    struct store_result res = run(f, key, q);
    int64_t n = res.total_count;
    store_result_free(&res);
    return n;
}

/* ---- a small timeline used by the filter tests ------------------------------------ */

struct timeline {
    int64_t key;
    int64_t main_enter_id;
};

/* ts (ns): 10 stdout, 20 enter main, 30 enter parse (worker), 40 exit parse -> 42,
 * 50 enter helper, 60 exit helper -> null (dur 5000), 70 stderr, 80 exit main -> "ok",
 * 90 enter helper pid 101, 95 exit helper pid 101 -> 1.0, 100 crash, 110 process_exit. */
static inline struct timeline build_timeline(struct fx *f)
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
    struct event_query q = q_init();
    q.event_type = EV_FUNCTION_ENTER;
    q.limit = 1;
    struct store_result res = run(f, k, &q);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.rows[0].function, "app::main()");
    t.main_enter_id = res.rows[0].id;
    store_result_free(&res);
    return t;
}

#endif
