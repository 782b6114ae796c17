/*
 * schema.c - the database layout and its creation/upgrade, plus store_open/close,
 * store_size_bytes and store_used_bytes (the lifetime of struct store, and what it
 * weighs). The file is checked before it is opened (check.c).
 *
 * Layout (spec 003's tables, with the changes measured in design.md):
 *   sessions        INTEGER key for events to refer to; the human TEXT id is UNIQUE.
 *   functions/files/threads
 *                   interned names: an event stores small integer ids, so the hot
 *                   indexes stay small and integer-only (a TEXT index written in
 *                   random order cut insert speed 4-6x), and name filters (LIKE,
 *                   regex) run against these small tables, then IN (...) on events.
 *                   functions.name_raw is '' when the event had no linkage name.
 *   events          id INTEGER PRIMARY KEY assigned by the writer in commit order,
 *                   which is each session's time order (order.c): afterEventId
 *                   polling never misses an event and sees them in time order;
 *                   type is the integer of enum event_type.
 *   type_counts     exact rows per (session, type), kept by the writer (inserts
 *                   add, evictions subtract): event counts and unfiltered totals
 *                   without a scan.
 *   function_counts calls observed per (session, function): function_enter events
 *                   inserted. Evictions do not subtract (counts are calls observed).
 *   session_pids    pids that produced events in a session (the writer adds them).
 *   evicted_counts  function events evicted by the per-session cap, per (session,
 *                   function), and through_ns, the newest timestamp evicted.
 *   evicted_types   every event the per-session cap evicted, per (session, type),
 *                   with the newest timestamp and the highest id evicted: what
 *                   answers say went, whatever the type.
 *   meta            next_event_id, so ids are never reused after deletions.
 *   sessions.deleted
 *                   1 while the writer deletes the session's events (deleter.c).
 *   events_view     spec 003's column names, for humans in the sqlite3 shell. Its
 *                   CASE naming event types is generated from event_type_name(), and
 *                   the view is recreated at open whenever its stored SQL differs
 *                   from the one this build generates (a database written before a
 *                   type was added gets the new name, not the bare number).
 *
 * Indexes on events, one per query shape (insert cost measured in bench_store.c, query
 * cost of every debug_query shape at 200,000 events in bench_query.c):
 *   ev_session_ts    (session, ts_ns, type, pid, thread_id, file_id, duration_ns)
 *                                                 latest N / chronological pages, time
 *                                                 ranges, FIFO eviction, the eventType
 *                                                 filter for function_enter/exit, and
 *                                                 (covering) the pid, thread, file and
 *                                                 minDurationNs filters: walks, offsets
 *                                                 and counts read no table row
 *   ev_session_type  (session, type, ts_ns)       eventType filter for the other types;
 *                    partial: function events are not in it
 *   ev_session_func  (session, function_id, ts_ns) function filters
 * Index entries end with the rowid (= id), so ORDER BY ts_ns, id follows
 * ev_session_func and ev_session_type; on ev_session_ts the few events of one ts_ns
 * are sorted by id (SQLite's "RIGHT PART OF ORDER BY").
 * Measured (2,002,000 events, 2 vCPUs, events/s): no index 1.32M; ev_session_ts
 * alone 1.07M; ev_session_func alone 0.64M; a full ev_session_type alone 0.75M. The
 * last two are written at many places at once (one per function, one per type), not
 * appended, so SQLite splits pages in the middle of the tree; ev_session_ts is
 * appended. A full ev_session_type held all three at ~0.37M; the partial one, which a
 * function flood does not touch, ~0.5M. Its cost: eventType function_enter/exit walks
 * ev_session_ts, reading about two entries per match in a traced session, more in a
 * session that is mostly output. A partial index (session, id) WHERE type IN (3,4,7)
 * for eviction once held ingest at 174k events/s against 287k without it.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strbuf.h"

/* ev_session_ts covers every filter on an integer column but the function (which has
 * an index of its own): walks in time order and counts read no table rows. */
#define EV_SESSION_TS                                                                    \
    "CREATE INDEX IF NOT EXISTS ev_session_ts"                                           \
    " ON events(session, ts_ns, type, pid, thread_id, file_id, duration_ns);"

/* Version 1 to 2: ev_session_ts widened to cover the filters, and sessions.deleted
 * (a deleted session is hidden at once; the writer deletes its events in the
 * background, store/deleter.c). */
static const char schema_upgrade_2[] =
    "DROP INDEX IF EXISTS ev_session_ts;"
    EV_SESSION_TS
    "ALTER TABLE sessions ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;";

/* ev_session_type covers only the types that are not function events.
 * The list of types is an OR of equalities because SQLite uses a partial index only
 * when a query term matches a term of its WHERE exactly (query.c writes the type as
 * a literal for this). */
#define EV_SESSION_TYPE                                                                  \
    "CREATE INDEX IF NOT EXISTS ev_session_type ON events(session, type, ts_ns)"            \
    " WHERE " STORE_TYPE_INDEX_SQL ";"

/* The exits' parent ids, for openCalls (the enters no exit names): covering, so the
 * walk of a session's exits reads no table row; partial, so nothing else pays for it. */
#define EV_SESSION_EXIT                                                                  \
    "CREATE INDEX IF NOT EXISTS ev_session_exit ON events(session, parent_id, type)"             \
    " WHERE type = 4;"

static const char schema_current[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS sessions("
    " key INTEGER PRIMARY KEY,"
    " id TEXT NOT NULL UNIQUE,"
    " binary_path TEXT, project_root TEXT, command_line TEXT,"
    " pid INTEGER,"
    " started_at INTEGER NOT NULL DEFAULT 0," /* unix ms */
    " ended_at INTEGER,"                      /* unix ms, NULL while running */
    " status TEXT NOT NULL DEFAULT 'running',"
    " exit_code INTEGER, exit_signal TEXT,"
    " retained INTEGER NOT NULL DEFAULT 0,"
    " deleted INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS functions("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, name_raw TEXT NOT NULL DEFAULT '',"
    " UNIQUE(name, name_raw));"
    "CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS threads(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS events("
    " id INTEGER PRIMARY KEY,"
    " session INTEGER NOT NULL,"
    " ts_ns INTEGER NOT NULL,"
    " type INTEGER NOT NULL,"
    " pid INTEGER, tid INTEGER,"
    " thread_id INTEGER,"   /* threads.id */
    " parent_id INTEGER,"   /* events.id of the enclosing function_enter */
    " function_id INTEGER," /* functions.id */
    " file_id INTEGER,"     /* files.id */
    " line INTEGER, duration_ns INTEGER, sampled INTEGER NOT NULL DEFAULT 0,"
    " arguments TEXT, return_value TEXT, text TEXT, data TEXT);"
    EV_SESSION_TS
    EV_SESSION_TYPE
    "CREATE INDEX IF NOT EXISTS ev_session_func ON events(session, function_id, ts_ns);"
    "CREATE TABLE IF NOT EXISTS type_counts("
    " session INTEGER NOT NULL, type INTEGER NOT NULL, count INTEGER NOT NULL,"
    " PRIMARY KEY(session, type)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS function_counts("
    " session INTEGER NOT NULL, function_id INTEGER NOT NULL, count INTEGER NOT NULL,"
    " PRIMARY KEY(session, function_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS session_pids("
    " session INTEGER NOT NULL, pid INTEGER NOT NULL, PRIMARY KEY(session, pid)) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('next_event_id', 1);";

/* Tables added after version 1 that no older table depends on: created in place on
 * any version-1 database (an older daemon simply ignores them). function_calls
 * keeps the exact calls of a session's traced functions (store/calls.c);
 * test_durations the last runs' duration of each test of a project (store/tests.c);
 * evicted_counts the function events the per-session cap evicted, per function, with
 * the newest timestamp evicted (store/evicted.c), evicted_types the same per event
 * type; ev_session_exit serves openCalls (query.c). */
static const char schema_additions[] =
    "CREATE TABLE IF NOT EXISTS test_durations("
    " project TEXT NOT NULL, name TEXT NOT NULL, at INTEGER NOT NULL, ms INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS test_durations_name ON test_durations(project, name, at);"
    "CREATE TABLE IF NOT EXISTS function_calls("
    " session INTEGER NOT NULL, function TEXT NOT NULL, calls INTEGER NOT NULL,"
    " recorded INTEGER NOT NULL, sampled_since INTEGER, lost TEXT,"
    " PRIMARY KEY(session, function)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS evicted_counts("
    " session INTEGER NOT NULL, function_id INTEGER NOT NULL, events INTEGER NOT NULL,"
    " through_ns INTEGER NOT NULL, PRIMARY KEY(session, function_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS evicted_types("
    " session INTEGER NOT NULL, type INTEGER NOT NULL, events INTEGER NOT NULL,"
    " through_ns INTEGER NOT NULL, through_id INTEGER NOT NULL,"
    " PRIMARY KEY(session, type)) WITHOUT ROWID;"
    EV_SESSION_EXIT;

/* The CREATE VIEW statement of events_view, as SQLite stores it in sqlite_schema
 * (so the stored text can be compared with it); malloc'd, NULL when out of memory. */
static char *events_view_sql(void)
{
    struct strbuf sb = {0};
    sb_puts(&sb, "CREATE VIEW events_view AS SELECT"
                 " e.id AS id, s.id AS session_id, e.ts_ns AS timestamp_ns, e.tid AS thread_id,"
                 " t.name AS thread_name, e.pid AS pid, e.parent_id AS parent_event_id,"
                 " CASE e.type");
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        sb_printf(&sb, " WHEN %d THEN '%s'", t, event_type_name(t));
    sb_puts(&sb, " ELSE CAST(e.type AS TEXT) END AS event_type,"
                 " f.name AS function_name, NULLIF(f.name_raw, '') AS function_name_raw,"
                 " fi.path AS source_file, e.line AS line_number, e.arguments AS arguments,"
                 " e.return_value AS return_value, e.duration_ns AS duration_ns, e.text AS text,"
                 " e.data AS data, e.sampled AS sampled"
                 " FROM events e JOIN sessions s ON s.key = e.session"
                 " LEFT JOIN threads t ON t.id = e.thread_id"
                 " LEFT JOIN functions f ON f.id = e.function_id"
                 " LEFT JOIN files fi ON fi.id = e.file_id");
    if (sb.oom) {
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

enum view_state { VIEW_ABSENT, VIEW_CURRENT, VIEW_STALE };

/* Whether events_view exists and its stored SQL is want. */
static int view_state(sqlite3 *db, const char *want, enum view_state *out,
                      struct strobe_error *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE type = 'view'"
                               " AND name = 'events_view'", -1, &st, NULL) != SQLITE_OK)
        return st_fail_db(e, db, "cannot read the events view");
    int rc = sqlite3_step(st);
    const unsigned char *sql = rc == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    *out = rc != SQLITE_ROW ? VIEW_ABSENT
           : sql && strcmp((const char *)sql, want) == 0 ? VIEW_CURRENT
                                                        : VIEW_STALE;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return st_fail_db(e, db, "cannot read the events view");
    return 0;
}

/* Creates events_view, or replaces it when its stored SQL is not this build's. With
 * own_tx, in a transaction of its own that is begun only when there is something to
 * change (an up-to-date database is not written at open); without, inside the
 * caller's. */
static int refresh_view(sqlite3 *db, bool own_tx, struct strobe_error *e)
{
    char *want = events_view_sql();
    if (!want)
        return err_set(e, ERR_INTERNAL, "out of memory building the events view");
    enum view_state state;
    int ret = view_state(db, want, &state, e);
    if (ret == 0 && state != VIEW_CURRENT) {
        if (own_tx && st_exec(db, "BEGIN IMMEDIATE", e) < 0) {
            free(want);
            return -1;
        }
        /* Looked at again under the write lock: another daemon may have done it. */
        ret = own_tx ? view_state(db, want, &state, e) : 0;
        if (ret == 0 && state == VIEW_STALE && st_exec(db, "DROP VIEW events_view", e) < 0)
            ret = -1;
        if (ret == 0 && state != VIEW_CURRENT && st_exec(db, want, e) < 0)
            ret = -1;
        if (own_tx && ret == 0)
            ret = st_exec(db, "COMMIT", e);
        else if (own_tx)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    free(want);
    return ret;
}

static int schema_version(sqlite3 *db, int *version, struct strobe_error *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return st_fail_db(e, db, "cannot read the schema version");
    *version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return 0;
}

/* Creates the schema (version 0) or upgrades version 1 in place, in one transaction
 * that reads the version again under the write lock (another daemon may be doing
 * the same); a crash half-way leaves the old version, upgraded at the next open. */
static int schema_create_or_upgrade(sqlite3 *db, struct strobe_error *e)
{
    char version_sql[40];
    snprintf(version_sql, sizeof version_sql, "PRAGMA user_version=%d", STORE_SCHEMA_VERSION);
    int version;
    if (st_exec(db, "BEGIN IMMEDIATE", e) < 0)
        return -1;
    int ret = schema_version(db, &version, e);
    if (ret == 0 && version == 0)
        ret = st_exec(db, schema_current, e) < 0 || refresh_view(db, false, e) < 0 ? -1 : 0;
    else if (ret == 0 && version == 1)
        ret = st_exec(db, schema_upgrade_2, e);
    else if (ret == 0 && version != STORE_SCHEMA_VERSION)
        ret = err_set(e, ERR_INTERNAL, "the database uses schema version %d, not %d: it was "
                      "written by a newer strobe version; use that version, or move the "
                      "database away (sessions in it are not migrated)",
                      version, STORE_SCHEMA_VERSION);
    if (ret == 0 && version != STORE_SCHEMA_VERSION &&
        (st_exec(db, schema_additions, e) < 0 || st_exec(db, version_sql, e) < 0))
        ret = -1;
    if (ret < 0) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return st_exec(db, "COMMIT", e);
}

int st_schema_init(sqlite3 *db, struct strobe_error *e)
{
    int version;
    if (schema_version(db, &version, e) < 0)
        return -1;
    if (version != STORE_SCHEMA_VERSION && schema_create_or_upgrade(db, e) < 0)
        return -1;
    return st_exec(db, schema_additions, e) < 0 ? -1 : refresh_view(db, true, e);
}

struct store *store_open(const char *path, struct strobe_error *e)
{
    return store_open_alive(path, NULL, NULL, e);
}

struct store *store_open_alive(const char *path, void (*alive)(void *), void *arg,
                               struct strobe_error *e)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_INTERNAL, "out of memory opening the store");
        return NULL;
    }
    s->path = strdup(path);
    pthread_mutex_init(&s->sess_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake_cond, NULL);
    pthread_cond_init(&s->sync_cond, NULL);
    if (!s->path) {
        err_set(e, ERR_INTERNAL, "out of memory opening the store");
        goto fail;
    }
    if (st_check(s, alive, arg, e) < 0)
        goto fail;
    s->sdb = st_connect(path, true, e);
    if (!s->sdb)
        goto fail;
    if (st_schema_init(s->sdb, e) < 0)
        goto fail;
    if (st_writer_start(s, e) < 0)
        goto fail;
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    st_writer_stop(s);
    if (s->sdb) {
        /* Best effort: fold the WAL back so the file is self-contained. */
        sqlite3_exec(s->sdb, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(s->sdb);
    }
    free(s->rings);
    free(s->limits);
    free(s->lost);
    free(s->forget);
    free(s->deletes);
    free(s->pending);
    free(s->set_aside);
    pthread_mutex_destroy(&s->sess_lock);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake_cond);
    pthread_cond_destroy(&s->sync_cond);
    free(s->path);
    free(s);
}

int64_t store_size_bytes(struct store *s)
{
    int64_t total = 0;
    struct stat st;
    if (stat(s->path, &st) == 0)
        total += st.st_size;
    size_t n = strlen(s->path) + 5;
    char *wal = malloc(n);
    if (wal) {
        snprintf(wal, n, "%s-wal", s->path);
        if (stat(wal, &st) == 0)
            total += st.st_size;
        free(wal);
    }
    return total;
}

/* One integer PRAGMA on the session connection (sess_lock held); -1 on error. */
static int64_t pragma_int(struct store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(s->sdb, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t store_used_bytes(struct store *s)
{
    st_sdb_lock(s);
    int64_t pages = pragma_int(s, "PRAGMA page_count");
    int64_t free_pages = pragma_int(s, "PRAGMA freelist_count");
    int64_t page_size = pragma_int(s, "PRAGMA page_size");
    st_sdb_unlock(s);
    if (pages < 0 || free_pages < 0 || page_size < 0)
        return -1;
    return (pages - free_pages) * page_size;
}
