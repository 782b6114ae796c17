/*
 * pending.c - session updates the database refused: a session's pid and its end,
 * kept in memory when their UPDATE fails (a full disk), shown by every read of the
 * session at once, and written by the writer thread every STORE_RETRY_MS until the
 * database takes them.
 *
 * Why here: a session whose end was lost stayed "running" (with pid 0 when its pid
 * was lost too) for as long as the daemon lived, though its process was gone. Kept
 * here, its status is right in every answer from the moment it ended, and right in
 * the database once there is room. A later update of a session that still has one
 * pending joins it instead of going to the database first, so the retry never
 * writes an older value over a newer one. The daemon dying with updates pending
 * loses them, and the next daemon marks the sessions left "running" as "stopped"
 * (store_session_close_orphans).
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"

int st_session_update(sqlite3 *db, const struct st_pending *u)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "UPDATE sessions SET pid = CASE WHEN ?2 THEN ?3 ELSE pid END,"
                           " status = CASE WHEN ?4 THEN ?5 ELSE status END,"
                           " ended_at = CASE WHEN ?4 THEN ?6 ELSE ended_at END,"
                           " exit_code = CASE WHEN ?4 THEN ?7 ELSE exit_code END,"
                           " exit_signal = CASE WHEN ?4 THEN ?8 ELSE exit_signal END"
                           " WHERE key = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, u->key);
    sqlite3_bind_int(st, 2, u->has_pid);
    sqlite3_bind_int(st, 3, u->pid);
    sqlite3_bind_int(st, 4, u->has_end);
    sqlite3_bind_text(st, 5, u->status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, u->ended_at_ms);
    if (u->has_exit_code)
        sqlite3_bind_int(st, 7, u->exit_code);
    else
        sqlite3_bind_null(st, 7);
    if (u->exit_signal[0])
        sqlite3_bind_text(st, 8, u->exit_signal, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 8);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The pending entry of key, or NULL (s->lock held). */
static struct st_pending *find(struct store *s, int64_t key)
{
    for (int i = 0; i < s->npending; i++)
        if (s->pending[i].key == key)
            return &s->pending[i];
    return NULL;
}

/* Adds u to what waits for its session; 0, or -1 out of memory (s->lock held). */
static int merge(struct store *s, const struct st_pending *u)
{
    struct st_pending *p = find(s, u->key);
    if (!p) {
        struct st_pending *grown = st_grow(s->pending, s->npending, &s->pending_cap,
                                           sizeof *grown, 8);
        if (!grown)
            return -1;
        s->pending = grown;
        p = &s->pending[s->npending++];
        memset(p, 0, sizeof *p);
        p->key = u->key;
    }
    if (u->has_pid) {
        p->has_pid = true;
        p->pid = u->pid;
    }
    if (u->has_end) {
        p->has_end = true;
        p->has_exit_code = u->has_exit_code;
        p->exit_code = u->exit_code;
        p->ended_at_ms = u->ended_at_ms;
        memcpy(p->status, u->status, sizeof p->status);
        memcpy(p->exit_signal, u->exit_signal, sizeof p->exit_signal);
    }
    p->gen++;
    return 0;
}

int st_pending_write(struct store *s, const struct st_pending *u)
{
    pthread_mutex_lock(&s->lock);
    bool waiting = find(s, u->key) != NULL;
    pthread_mutex_unlock(&s->lock);
    if (!waiting) {
        st_sdb_lock(s);
        int rc = st_session_update(s->sdb, u);
        if (rc != 0)
            st_health_failed(s, s->sdb);
        st_sdb_unlock(s);
        if (rc == 0) {
            st_health_wrote(s);
            return 0;
        }
    }
    pthread_mutex_lock(&s->lock);
    int rc = merge(s, u);
    s->wake = true;
    pthread_mutex_unlock(&s->lock);
    return rc < 0 ? -1 : 1;
}

void st_pending_apply(struct store *s, struct session_row *r)
{
    pthread_mutex_lock(&s->lock);
    const struct st_pending *p = find(s, r->key);
    if (p && p->has_pid)
        r->pid = p->pid;
    if (p && p->has_end) {
        char *status = strdup(p->status);
        char *signal = p->exit_signal[0] ? strdup(p->exit_signal) : NULL;
        if (status) {
            free(r->status);
            free(r->exit_signal);
            r->status = status;
            r->exit_signal = signal;
            r->ended_at_ms = p->ended_at_ms;
            r->has_exit_code = p->has_exit_code;
            r->exit_code = p->exit_code;
        } else {
            free(signal);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void st_pending_forget(struct store *s, int64_t key)
{
    pthread_mutex_lock(&s->lock);
    struct st_pending *p = find(s, key);
    if (p)
        *p = s->pending[--s->npending];
    pthread_mutex_unlock(&s->lock);
}

/* Drops the entry of key once written, unless it changed since it was copied. */
static void written(struct store *s, const struct st_pending *copy)
{
    pthread_mutex_lock(&s->lock);
    struct st_pending *p = find(s, copy->key);
    bool same = p && p->gen == copy->gen;
    if (same)
        *p = s->pending[--s->npending];
    pthread_mutex_unlock(&s->lock);
    if (same)
        log_info("store: the update of session key %lld kept since the database refused "
                 "it is written now", (long long)copy->key);
}

void st_pending_retry(struct store *s, sqlite3 *db, bool force)
{
    int64_t now_ms = mono_ns() / 1000000;
    pthread_mutex_lock(&s->lock);
    bool due = (force || now_ms >= s->pending_next_ms) && (s->npending > 0 || s->full);
    size_t n = due && s->npending > 0 ? (size_t)s->npending : 0;
    struct st_pending *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, s->pending, n * sizeof *copy);
    if (due)
        s->pending_next_ms = now_ms + STORE_RETRY_MS;
    pthread_mutex_unlock(&s->lock);
    if (!due || (n && !copy))
        return;
    bool failed = false;
    for (size_t i = 0; i < n && !failed; i++) {
        failed = st_session_update(db, &copy[i]) != 0;
        if (failed)
            st_health_failed(s, db);
        else
            written(s, &copy[i]);
    }
    free(copy);
    if (!failed)
        st_health_wrote(s);
}
