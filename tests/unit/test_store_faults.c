/*
 * test_store_faults.c - the store survives faults and says them: a damaged database
 * is set aside at open (not a database at all, or damaged in its event pages) and a
 * fresh one started, nothing deleted; a session's end and pid that the database
 * refuses are kept, shown by every read at once and retried until written; lost
 * events keep their own session's cause whatever fails later elsewhere.
 * Each test works in its own mkdtemp directory, removed afterwards. The full disk
 * itself is tests/e2e/test_store_faults.py's (a real tmpfs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "tests/unit/store_fixture.h"

/* ---- a scratch directory without a store ------------------------------------------ */

struct dir {
    char path[256];
    char db[300];
};

static void dir_make(struct dir *d)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/strobe-faults-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(d->path));
    snprintf(d->db, sizeof d->db, "%s/strobe.db", d->path);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* The file's bytes (malloc'd, *len set). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len + 1);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The opened store works: a session and an event go in and come back. */
static void store_works(struct store *s)
{
    struct strobe_error err;
    struct session_row r = {.id = "fresh", .started_at_ms = 1700000000000};
    assert_int_equal(store_session_create(s, &r, &err), 0);
    struct ring *ring = ring_create(1 << 16);
    store_attach_ring(s, ring, r.key);
    struct event e = event_init(r.key, EV_STDOUT, 1);
    e.text = "hello";
    assert_true(ring_push(ring, &e, store_wake, s));
    store_sync(s);
    struct store_reader *rd = store_reader_open(s, &err);
    assert_non_null(rd);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(rd, r.key, c), 0);
    assert_int_equal(c[EV_STDOUT], 1);
    store_reader_close(rd);
    store_release_ring(s, ring);
}

/* ---- the check at open --------------------------------------------------------------- */

/* Opens the damaged database at path: it is set aside byte for byte (bytes, len) for
 * the reason naming why, and a fresh store is returned in its place. */
static struct store *open_set_aside(const char *path, const char *why, const void *bytes,
                                    size_t len)
{
    struct strobe_error err;
    struct store *s = store_open(path, &err);
    if (!s)
        fail_msg("store_open: %s", err.msg);
    struct store_health h;
    store_health(s, &h);
    assert_non_null(strstr(h.set_aside, "/strobe.db.damaged-"));
    assert_non_null(strstr(h.damage, why));
    size_t kept_len;
    char *kept = read_file(h.set_aside, &kept_len);
    assert_int_equal(kept_len, len);
    assert_memory_equal(kept, bytes, len);
    free(kept);
    return s;
}

/* A file that is not a database: set aside byte for byte, a fresh store in its place. */
static void test_not_a_database_is_set_aside(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 131 + 7);
    write_file(d.db, junk, sizeof junk);
    struct store *s = open_set_aside(d.db, "not a database", junk, sizeof junk);
    store_works(s);
    store_close(s);
    /* a sound database is opened as it is: nothing set aside the second time */
    struct strobe_error err;
    s = store_open(d.db, &err);
    assert_non_null(s);
    struct store_health h;
    store_health(s, &h);
    assert_string_equal(h.set_aside, "");
    struct session_row g;
    assert_int_equal(store_session_get(s, "fresh", &g), 0);
    session_row_free(&g);
    store_close(s);
    rm_dir(d.path);
}

/* A database whose events table is damaged (its root page overwritten) opened fine
 * before, and every insert into it failed: now quick_check finds it and it goes. */
static void test_damaged_event_pages_are_set_aside(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    struct strobe_error err;
    struct store *s = store_open(d.db, &err);
    assert_non_null(s);
    struct session_row r = {.id = "before", .started_at_ms = 1700000000000};
    assert_int_equal(store_session_create(s, &r, &err), 0);
    struct ring *ring = ring_create(1 << 20);
    store_attach_ring(s, ring, r.key);
    for (int i = 0; i < 5000; i++) {
        struct event e = event_init(r.key, EV_STDOUT, i);
        e.text = "a line of output that takes some room in the events table";
        assert_true(ring_push(ring, &e, store_wake, s));
    }
    store_sync(s);
    store_release_ring(s, ring);
    store_close(s); /* checkpointed: the file holds everything */

    sqlite3 *db;
    assert_int_equal(sqlite3_open(d.db, &db), SQLITE_OK);
    int64_t root = one_int(db, "SELECT rootpage FROM sqlite_master WHERE name = 'events'");
    int64_t page = one_int(db, "PRAGMA page_size");
    sqlite3_close(db);
    int fd = open(d.db, O_WRONLY);
    assert_true(fd >= 0);
    char garbage[512];
    memset(garbage, 0xA5, sizeof garbage);
    assert_int_equal(pwrite(fd, garbage, sizeof garbage, (root - 1) * page), sizeof garbage);
    close(fd);
    size_t damaged_len;
    char *damaged = read_file(d.db, &damaged_len);

    s = open_set_aside(d.db, "quick_check", damaged, damaged_len);
    free(damaged);
    struct session_row g;
    assert_int_equal(store_session_get(s, "before", &g), 1); /* it is in the file aside */
    store_works(s);
    store_close(s);
    rm_dir(d.path);
}

/* What is not damage is not set aside: a database of a newer schema is refused as
 * before, and left where it is. */
static void test_newer_database_is_refused_not_set_aside(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(d.db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE x(a); PRAGMA user_version = 99", NULL,
                                  NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct strobe_error err;
    assert_null(store_open(d.db, &err));
    assert_non_null(strstr(err.msg, "schema version 99"));
    struct stat st;
    assert_int_equal(stat(d.db, &st), 0);
    rm_dir(d.path);
}

/* ---- updates the database refuses ------------------------------------------------------ */

/* Polls the database itself (not the store's view) until sql answers want. */
static void wait_for_row(const char *path, const char *sql, const char *want)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char got[64] = "";
    for (int64_t until = mono_ns() + 30 * 1000000000LL; mono_ns() < until;) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(got, sizeof got, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (strcmp(got, want) == 0)
            break;
        usleep(10000);
    }
    sqlite3_close(db);
    assert_string_equal(got, want);
}

/* A pid and an end the database refuses (a trigger stands in for the full disk): kept,
 * shown by get and list at once, and written by the writer once it takes them. */
static void test_refused_end_is_shown_and_retried(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "refused");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER refuse BEFORE UPDATE ON sessions "
                                      "BEGIN SELECT RAISE(ABORT, 'injected refusal'); END;",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(store_session_set_pid(f->s, k, 4242), 1);
    assert_int_equal(store_session_finish(f->s, k, "crashed", 1700000009000, false, 0,
                                          "SIGKILL"), 1);
    struct session_row g;
    assert_int_equal(store_session_get(f->s, "refused", &g), 0);
    assert_string_equal(g.status, "crashed");
    assert_string_equal(g.exit_signal, "SIGKILL");
    assert_int_equal(g.pid, 4242);
    assert_int_equal(g.ended_at_ms, 1700000009000);
    session_row_free(&g);
    struct session_row *rows;
    int n;
    assert_int_equal(store_session_list(f->s, &rows, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].status, "crashed");
    session_row_free(&rows[0]);
    free(rows);
    struct store_health h;
    store_health(f->s, &h);
    assert_int_equal(h.pending, 1);
    assert_false(h.full); /* refused, but not for lack of space */
    /* still refused: the database row is as it was */
    wait_for_row(f->path, "SELECT status FROM sessions WHERE id = 'refused'", "running");

    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER refuse", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    wait_for_row(f->path, "SELECT status || ' ' || exit_signal || ' ' || pid FROM sessions"
                          " WHERE id = 'refused'", "crashed SIGKILL 4242");
    for (int64_t until = mono_ns() + 30 * 1000000000LL; h.pending && mono_ns() < until;) {
        usleep(10000);
        store_health(f->s, &h);
    }
    assert_int_equal(h.pending, 0);
    /* a later update goes straight in again */
    assert_int_equal(store_session_finish(f->s, k, "exited", 1700000010000, true, 0, NULL), 0);
    assert_int_equal(store_session_get(f->s, "refused", &g), 0);
    assert_string_equal(g.status, "exited");
    assert_null(g.exit_signal);
    session_row_free(&g);
}

/* Two sessions lose events to two different failures: each one's storeErrors names its
 * own cause (a later failure elsewhere used to replace it). */
static void test_lost_events_keep_their_own_cause(void **state)
{
    struct fx *f = *state;
    int64_t a = new_session(f, "first"), b = new_session(f, "second");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER one BEFORE INSERT ON events WHEN "
                                      "NEW.text = 'one' BEGIN SELECT RAISE(ABORT, 'the first "
                                      "cause'); END; CREATE TRIGGER two BEFORE INSERT ON "
                                      "events WHEN NEW.text = 'two' BEGIN SELECT RAISE(ABORT, "
                                      "'the second cause'); END;", NULL, NULL, NULL),
                     SQLITE_OK);
    struct event e = event_init(a, EV_STDOUT, 1);
    e.text = "one";
    push(f, &e);
    store_sync(f->s);
    e = event_init(b, EV_STDOUT, 2);
    e.text = "two";
    push(f, &e);
    store_sync(f->s);
    char msg[256];
    assert_true(store_session_lost(f->s, a, msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "the first cause"));
    assert_true(store_session_lost(f->s, b, msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "the second cause"));
    sqlite3_exec(db, "DROP TRIGGER one; DROP TRIGGER two", NULL, NULL, NULL);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_a_database_is_set_aside),
        cmocka_unit_test(test_damaged_event_pages_are_set_aside),
        cmocka_unit_test(test_newer_database_is_refused_not_set_aside),
        cmocka_unit_test_setup_teardown(test_refused_end_is_shown_and_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_events_keep_their_own_cause, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
