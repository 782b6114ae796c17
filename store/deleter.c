/*
 * deleter.c - deleting sessions without stalling the others: store_session_delete()
 * hides the session at once (sessions.deleted, its id renamed so the name is free
 * again) and queues it; the writer thread then deletes its events DELETE_CHUNK rows
 * per transaction between its batches of inserts (st_delete_step), so no other
 * session's insert or sync waits behind more than one chunk. Sessions still marked
 * at daemon start (a daemon that stopped or died mid-delete) are queued again by
 * st_deleter_resume(). Retention deletes synchronously with the same chunks
 * (st_session_delete in session.c), because its size cap needs the space back
 * before it looks at the next session.
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

/* Measured at 200,000 events (bench_query): 1,000 rows take ~3 ms to delete with the
 * four indexes of events, up to ~25 ms when the commit runs a WAL checkpoint; 2,000
 * rows let another session's sync wait up to 50 ms. */
#define DELETE_CHUNK 1000

/* Runs sql with ?1 = key (and ?2 = DELETE_CHUNK when it has a second parameter);
 * sqlite3_changes() or -1. */
static int64_t exec_key(sqlite3 *db, const char *sql, int64_t key)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, key);
    if (sqlite3_bind_parameter_count(st) > 1)
        sqlite3_bind_int(st, 2, DELETE_CHUNK);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? sqlite3_changes64(db) : -1;
}

int st_delete_chunk(sqlite3 *db, int64_t key, bool *done, struct strobe_error *e)
{
    *done = false;
    if (st_exec(db, "BEGIN IMMEDIATE", e) < 0)
        return -1;
    int64_t n = exec_key(db,
                         "DELETE FROM events WHERE id IN (SELECT id FROM events"
                         " INDEXED BY ev_session_ts"
                         " WHERE session = ?1 LIMIT ?2)", key);
    if (n >= 0 && n < DELETE_CHUNK) {
        *done = true;
        if (exec_key(db, "DELETE FROM type_counts WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM function_counts WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM evicted_counts WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM evicted_types WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM function_calls WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM session_pids WHERE session = ?1", key) < 0 ||
            exec_key(db, "DELETE FROM sessions WHERE key = ?1", key) < 0)
            n = -1;
    }
    if (n < 0 || st_exec(db, "COMMIT", NULL) < 0) {
        st_fail_db(e, db, "cannot delete the session's events");
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *done = false;
        return -1;
    }
    return 0;
}

/* Appends key to the queue (s->lock held). */
static int queue_push(struct store *s, int64_t key)
{
    for (int i = 0; i < s->ndeletes; i++)
        if (s->deletes[i] == key)
            return 0;
    if (s->ndeletes == s->deletes_cap) {
        int ncap = s->deletes_cap ? s->deletes_cap * 2 : 8;
        int64_t *n = realloc(s->deletes, (size_t)ncap * sizeof *n);
        if (!n)
            return -1;
        s->deletes = n;
        s->deletes_cap = ncap;
    }
    s->deletes[s->ndeletes++] = key;
    return 0;
}

int store_session_delete(struct store *s, int64_t key, struct strobe_error *e)
{
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->sdb,
                                "UPDATE sessions SET deleted = 1,"
                                " id = id || ' (deleted, key ' || key || ')'"
                                " WHERE key = ?1 AND deleted = 0",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, key);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        st_health_failed(s, s->sdb);
        st_fail_db(e, s->sdb, "cannot delete the session");
    }
    st_sdb_unlock(s);
    if (rc != SQLITE_DONE)
        return -1;
    st_pending_forget(s, key);
    pthread_mutex_lock(&s->lock);
    /* Out of memory here leaves the session hidden; st_deleter_resume() queues it at
     * the next start. */
    queue_push(s, key);
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int store_deletes_pending(struct store *s)
{
    pthread_mutex_lock(&s->lock);
    int n = s->ndeletes;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int st_deleter_resume(struct store *s, sqlite3 *db, struct strobe_error *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT key FROM sessions WHERE deleted = 1", -1, &st, NULL) !=
        SQLITE_OK)
        return st_fail_db(e, db, "cannot list the sessions left to delete");
    int rc;
    pthread_mutex_lock(&s->lock);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (queue_push(s, sqlite3_column_int64(st, 0)) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return st_fail_db(e, db, "cannot list the sessions left to delete");
    return 0;
}

int st_delete_step(struct store *s, sqlite3 *db, int64_t *finished, struct strobe_error *e)
{
    *finished = 0;
    pthread_mutex_lock(&s->lock);
    int64_t key = s->ndeletes ? s->deletes[0] : 0;
    pthread_mutex_unlock(&s->lock);
    if (!key)
        return 0;
    bool done;
    if (st_delete_chunk(db, key, &done, e) < 0)
        return -1;
    pthread_mutex_lock(&s->lock);
    if (done) {
        *finished = key;
        memmove(s->deletes, s->deletes + 1, (size_t)--s->ndeletes * sizeof *s->deletes);
        for (int i = 0; i < s->nlimits; i++)
            if (s->limits[i].key == key) {
                s->limits[i] = s->limits[--s->nlimits];
                break;
            }
    }
    int left = s->ndeletes;
    pthread_mutex_unlock(&s->lock);
    return left > 0;
}
