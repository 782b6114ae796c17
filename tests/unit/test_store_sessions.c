/*
 * test_store_sessions.c - the store's sessions: their rows (create, get, list, update,
 * ids taken), deleting a large session (hidden at once, its events deleted in the
 * background), reopening a store (ids and names go on from the database), and the
 * event type names of events_view (also in a database written before a type
 * existed, until the next open replaces the view).
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "tests/unit/store_fixture.h"

/* ---- sessions ------------------------------------------------------------------- */

static void test_sessions(void **state)
{
    struct fx *f = *state;
    int64_t a = new_session(f, "app-2026-01-01-10h00");
    assert_int_equal(store_session_id_taken(f->s, "app-2026-01-01-10h00"), 1);
    assert_int_equal(store_session_id_taken(f->s, "nope"), 0);

    struct session_row dup = {.id = "app-2026-01-01-10h00"};
    struct strobe_error err = {0};
    assert_int_equal(store_session_create(f->s, &dup, &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "already exists"));
    struct session_row unnamed = {.id = ""};
    err = (struct strobe_error){0};
    assert_int_equal(store_session_create(f->s, &unnamed, &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_string_equal(err.msg, "a session needs a non-empty id");
    assert_int_equal(store_session_create(f->s, &unnamed, NULL), -1);

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
    struct event_query q = q_init();
    assert_int_equal(count(f, a, &q), 0);
    q = q_init();
    assert_int_equal(count(f, later.key, &q), 10);
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
    assert_int_equal(store_session_delete(f->s, k, NULL), 0);
    /* Gone at once for lookups; its events go in the background. */
    struct session_row row;
    assert_int_equal(store_session_get(f->s, "big", &row), 1);
    assert_int_equal(store_session_id_taken(f->s, "big"), 0);
    while (store_deletes_pending(f->s) > 0)
        store_sync(f->s);
    struct event_query q = q_init();
    assert_int_equal(count(f, k, &q), 0);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], 0);
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, k, 10, &fc, &n), 0);
    assert_int_equal(n, 0);
    free(fc);
    q = q_init();
    assert_int_equal(count(f, keep, &q), 1);
}

static void test_reopen(void **state)
{
    struct fx *f = *state;
    struct timeline t = build_timeline(f);
    store_reader_close(f->r);
    store_release_ring(f->s, f->ring);
    store_close(f->s);
    f->s = store_open(f->path, NULL);
    assert_non_null(f->s);
    f->r = store_reader_open(f->s, NULL);
    assert_non_null(f->r);
    f->ring = ring_create(1 << 16);
    store_attach_ring(f->s, f->ring, 0);
    struct event e = event_init(t.key, EV_FUNCTION_ENTER, 200);
    e.function = "lib_helper"; /* known name, from the table */
    e.seq = 100;
    push(f, &e);
    store_sync(f->s);
    struct event_query q = q_init();
    q.function_equals = "lib_helper";
    q.event_type = EV_FUNCTION_ENTER;
    struct store_result res = run(f, t.key, &q);
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
    struct event_query q = q_init();
    struct store_result res = run(f, k, &q);
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
    f->s = store_open(f->path, NULL);
    assert_non_null(f->s);
    f->r = store_reader_open(f->s, NULL);
    assert_non_null(f->r);
    f->ring = ring_create(1 << 16);
    store_attach_ring(f->s, f->ring, 0);
    expect_view_type(f->path, ids[0], "watch_hit");
    expect_view_type(f->path, ids[1], "logpoint");
    expect_view_type(f->path, ids[2], "pause");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_large_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_types_in_view, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
