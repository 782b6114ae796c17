/*
 * writer.c - the writer thread: it reads every attached ring and inserts events in
 * batches, one transaction per batch, CHUNK_ROWS events per INSERT statement (the
 * events of a chunk wait in struct pending until it is full). A session's events go
 * in the order of their timestamps, up to the time none of its producers can push
 * an older one (order.c); ts_ns counts from each session's own start, so it orders
 * nothing across sessions, which instead take turns of MERGE_RUN events: a flood
 * cannot starve another session's events.
 * What a batch does: batch.c; the event cap: eviction.c; the per-session state:
 * writer_sessions.c; the calls producers make: producers.c. Between passes it also
 * retries the session updates the database refused (pending.c), and after each
 * commit it looks whether a full disk has room again (health.c).
 *
 * A pass is rounds of a gather (every ring read, up to where its producer was, into
 * the events its sessions hold) and a release (the events due, session by session),
 * until a round finds nothing to read and nothing due. A batch is committed every
 * BATCH_MAX events or once open COMMIT_MS (producers that never let the rings run
 * dry would otherwise keep every session's events invisible), ending the round (the
 * next gather reads what came meanwhile: an idle session's events wait for one commit
 * at most), and at the end of the pass; events still held wait for a later pass (the
 * thread wakes every WAKE_MS, HELD_WAKE_MS while a barrier waits for them). Each
 * commit publishes, per ring, the position up to which its events are committed
 * (ring_slot.done: the position of its oldest event held, or everything read):
 * store_sync() and store_sync_session() wait for the positions the rings had when
 * they were called.
 *
 * Ring owners: a ring attached without a session is given the session of its first
 * event, so retention (retention.c) can tell which sessions still have producers.
 */
#include "store/writer_internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* The longest the thread sleeps between passes when nothing wakes it. */
#define WAKE_MS 10
/* ... and while a barrier waits for events held for the horizon (order.c), which
 * moves without waking it: when the tracer's floor does, every few ms. */
#define HELD_WAKE_MS 1
/* A batch is also committed once open this long, so that producers that never let
 * the rings run dry (floods) do not keep every session's events invisible until
 * BATCH_MAX of them are in. Checked every COMMIT_CHECK events. */
#define COMMIT_MS 50
#define COMMIT_CHECK 256
/* Events one session's rings give in a row before the next session's turn. */
#define MERGE_RUN 64

static int prep(struct writer *w, sqlite3_stmt **st, const char *sql, struct strobe_error *e)
{
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return st_fail_db(e, w->db, "cannot prepare the writer's statements");
    return 0;
}

/* ---- the thread ------------------------------------------------------------------ */

/* Drops the writer's state of session key, its held events included. */
static void forget_session(struct writer *w, int64_t key)
{
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].key == key)
            st_order_clear(&w->sess[i]);
    st_wsess_remove(w, key);
}

/* Copies the limits and the forget list under s->lock. */
static void snapshot(struct store *s, struct writer *w)
{
    if (s->nlimits > w->limits_cap) {
        struct limit_entry *l = realloc(w->limits, s->limits_cap * sizeof *l);
        if (l) {
            w->limits = l;
            w->limits_cap = s->limits_cap;
        }
    }
    if (s->nlimits <= w->limits_cap) {
        if (s->nlimits)
            memcpy(w->limits, s->limits, s->nlimits * sizeof *w->limits);
        w->nlimits = s->nlimits;
    }
    for (int i = 0; i < s->nforget; i++)
        forget_session(w, s->forget[i]);
    s->nforget = 0;
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].limit = st_limit_for(w, w->sess[i].key);
}

/* After a commit (or a failed batch, whose events are gone): each ring's done
 * position, for the barriers: that of its oldest event still held, else everything
 * read from it. */
static void publish_done(struct store *s, struct writer *w)
{
    pthread_mutex_lock(&s->lock);
    for (int j = 0; j < s->nrings; j++) {
        uint64_t pos = ring_consumed(s->rings[j].ring);
        st_order_held_from(w, s->rings[j].ring, &pos);
        s->rings[j].done = pos;
    }
    pthread_cond_broadcast(&s->sync_cond);
    pthread_mutex_unlock(&s->lock);
}

/* After a commit: while calls on the session connection wait for sess_lock or the
 * database (st_sdb_lock), keep the write lock free for them, up to a bound so a slow
 * one cannot stall the events. */
#define SDB_YIELD_MAX_MS 1000
static void yield_to_sdb(struct store *s)
{
    for (int ms = 0; ms < SDB_YIELD_MAX_MS && atomic_load(&s->sdb_users) > 0; ms++)
        usleep(1000);
}

/* The last queued deletion is done: the sessions that filled the page cache (up to
 * its 32 MB) and the heap (rings, names, parents) are gone, so both go back to the
 * system instead of staying with an idle daemon (figures: BENCHMARKS.md). */
static void release_memory(struct writer *w)
{
    sqlite3_db_release_memory(w->db);
    malloc_trim(0);
}

/* Deletes chunks of the sessions store_session_delete() queued (deleter.c) for up to
 * budget_ns (at least one chunk); 1 while deletions are left, 0 when none, -1 when a
 * chunk failed (told through st_writer_error). */
static int delete_some(struct store *s, struct writer *w, int64_t budget_ns)
{
    int64_t until = mono_ns() + budget_ns;
    int more;
    do {
        int64_t deleted = 0;
        struct strobe_error err;
        more = st_delete_step(s, w->db, &deleted, &err);
        if (more < 0)
            st_writer_error(s, "%s", err.msg);
        if (deleted)
            forget_session(w, deleted);
        if (deleted && more == 0)
            release_memory(w);
    } while (more > 0 && mono_ns() < until);
    return more;
}

/* During a flood, deletions get this much time after every commit (one per COMMIT_MS
 * of inserts): deleting a row costs about what inserting it did, so with a third of
 * the writer's time a deleted session's rows go about half as fast as a flood comes
 * in, instead of waiting for the flood to end while the database grows. */
#define DELETE_SHARE_NS (25 * 1000000LL)

/* Commits the open batch, then lets deletions and the session connection have the
 * database for a while; -1 when the commit failed (its events are lost, and counted
 * so before the barriers waiting for them are let go). */
static int commit(struct store *s, struct writer *w)
{
    int rc = st_batch_commit(w);
    if (rc < 0) {
        st_writer_error(s, "cannot commit a batch of events: %s", sqlite3_errmsg(w->db));
        st_batch_abort(s, w, 0);
    }
    publish_done(s, w);
    if (rc == 0) {
        st_health_wrote(s);
        delete_some(s, w, DELETE_SHARE_NS);
    }
    yield_to_sdb(s);
    return rc;
}

/* Inserts the events due, MERGE_RUN of a session at a time, until none is due or a
 * commit was due (then made); the number inserted, or -1 when a batch failed. */
static int64_t release(struct store *s, struct writer *w)
{
    int64_t n = 0;
    for (;;) {
        int64_t round = 0;
        for (int k = 0; k < w->nsess; k++) {
            int i = (w->rr + k) % w->nsess;
            for (int run = 0; run < MERGE_RUN; run++) {
                const struct event *e = st_order_next(&w->sess[i]);
                if (!e)
                    break;
                if (!w->in_txn && st_batch_begin(w) < 0) {
                    st_writer_error(s, "cannot start a write transaction: %s",
                                    sqlite3_errmsg(w->db));
                    return -1;
                }
                if (st_insert_event(w, e) < 0) {
                    st_writer_error(s, "cannot insert an event: %s", sqlite3_errmsg(w->db));
                    st_batch_abort(s, w, w->sess[i].key);
                    /* Skip the faulty event so one bad record cannot wedge the writer. */
                    st_order_pop(&w->sess[i]);
                    publish_done(s, w);
                    return -1;
                }
                st_order_pop(&w->sess[i]);
                round++;
                if (w->batch_n >= BATCH_MAX ||
                    (w->batch_n % COMMIT_CHECK == 0 &&
                     mono_ns() - w->batch_started_ns >= COMMIT_MS * 1000000LL)) {
                    w->rr = (i + 1) % w->nsess;
                    return commit(s, w) < 0 ? -1 : n + round;
                }
            }
        }
        if (w->nsess)
            w->rr = (w->rr + 1) % w->nsess;
        n += round;
        if (!round)
            return n;
    }
}

/* One pass (see the top of the file); the number of events inserted, or -1 when a
 * batch failed. stop: everything held goes. */
static int64_t pass(struct store *s, struct writer *w, bool stop)
{
    int64_t inserted = 0;
    for (;;) {
        int64_t read = st_order_gather(s, w);
        st_order_due(w, mono_ns(), stop);
        int64_t n = release(s, w);
        if (n < 0)
            return -1;
        inserted += n;
        if (!read && !n)
            break;
    }
    if (w->in_txn && commit(s, w) < 0)
        return -1;
    publish_done(s, w);
    return inserted;
}

/* Released rings the last gather read to the end, with none of their events held,
 * are destroyed. */
static void reap_released(struct store *s, struct writer *w, bool pass_ok)
{
    if (!pass_ok)
        return;
    bool reaped = false;
    uint64_t pos;
    for (int i = 0; i < w->nrs; i++) {
        if (!w->rs[i].released || ring_used(w->rs[i].ring) ||
            st_order_held_from(w, w->rs[i].ring, &pos))
            continue;
        pthread_mutex_lock(&s->lock);
        for (int j = 0; j < s->nrings; j++)
            if (s->rings[j].ring == w->rs[i].ring) {
                s->rings[j] = s->rings[--s->nrings];
                break;
            }
        pthread_mutex_unlock(&s->lock);
        ring_destroy(w->rs[i].ring);
        w->rs[i--] = w->rs[--w->nrs];
        reaped = true;
    }
    /* A session's rings are megabytes each; glibc keeps freed blocks that size
     * mapped once its mmap threshold has risen, so they go back to the system here. */
    if (reaped)
        malloc_trim(0);
}

static void *writer_main(void *arg)
{
    struct store *s = arg;
    struct writer *w = s->w;
    for (;;) {
        bool held = false;
        for (int i = 0; i < w->nsess && !held; i++)
            held = w->sess[i].nheld > 0;
        pthread_mutex_lock(&s->lock);
        if (!s->wake && !s->stop) {
            int ms = held && s->sync_waiters ? HELD_WAKE_MS : WAKE_MS;
            struct timespec until = clock_after_ms(CLOCK_REALTIME, ms);
            pthread_cond_timedwait(&s->wake_cond, &s->lock, &until);
        }
        s->wake = false;
        bool stop = s->stop;
        snapshot(s, w);
        pthread_mutex_unlock(&s->lock);

        int64_t got = pass(s, w, stop);
        reap_released(s, w, got >= 0);
        /* One chunk of a deletion between passes: inserts wait behind at most one. A
         * failing delete waits for the next timed wake-up instead of spinning. */
        int more = stop ? 0 : delete_some(s, w, 0);
        if (more != 0)
            yield_to_sdb(s);
        /* Session updates the database refused, again (a last time when stopping). */
        st_pending_retry(s, w->db, stop);

        if (more > 0) {
            pthread_mutex_lock(&s->lock);
            s->wake = true;
            pthread_mutex_unlock(&s->lock);
        }
        /* Stopping: keep passing until one finds nothing (or fails). */
        if (stop && got <= 0)
            break;
    }
    return NULL;
}

static void writer_free(struct writer *w)
{
    if (!w)
        return;
    sqlite3_stmt *sts[] = {w->ins, w->ins_chunk, w->fn_ins, w->fn_sel, w->file_ins,
                           w->file_sel, w->thr_ins, w->thr_sel, w->tc_upsert, w->fc_upsert,
                           w->evict_sel, w->evict_cnt, w->evict_del, w->evictable_sel,
                           w->meta_set, w->meta_get, w->pid_ins, w->ec_upsert,
                           w->et_upsert};
    for (size_t i = 0; i < sizeof sts / sizeof *sts; i++)
        sqlite3_finalize(sts[i]);
    if (w->db)
        sqlite3_close(w->db);
    strmap_clear(&w->fns);
    strmap_clear(&w->files);
    strmap_clear(&w->threads);
    for (int i = 0; i < w->nsess; i++) {
        st_parent_clear(&w->sess[i].parents);
        free(w->sess[i].pids);
        st_order_clear(&w->sess[i]);
    }
    free(w->sess);
    free(w->fc);
    free(w->keybuf);
    free(w->arena);
    free(w->rs);
    free(w->limits);
    free(w);
}

#define INSERT_EVENTS                                                                       \
    "INSERT INTO events(id, session, ts_ns, type, pid, tid, thread_id, parent_id,"           \
    " function_id, file_id, line, duration_ns, sampled, arguments, return_value, text,"       \
    " data) VALUES"

int st_writer_start(struct store *s, struct strobe_error *e)
{
    struct writer *w = calloc(1, sizeof *w);
    if (!w)
        return err_set(e, ERR_INTERNAL, "out of memory starting the store writer");
    s->w = w;
    w->db = st_connect(s->path, false, e);
    if (!w->db)
        return -1;
    /* A bigger page cache for the hot index pages, and checkpoints every ~16 MB of
     * WAL rather than 4 MB: fewer rewrites of the same pages during heavy ingest. */
    if (st_exec(w->db, "PRAGMA cache_size=-32768; PRAGMA wal_autocheckpoint=4000", e) < 0)
        return -1;
    char chunk_sql[sizeof INSERT_EVENTS + CHUNK_ROWS * 2 * EV_COLS + CHUNK_ROWS * 4];
    size_t n = snprintf(chunk_sql, sizeof chunk_sql, "%s", INSERT_EVENTS);
    for (int r = 0; r < CHUNK_ROWS; r++) {
        n += snprintf(chunk_sql + n, sizeof chunk_sql - n, "%s(", r ? "," : "");
        for (int c = 0; c < EV_COLS; c++)
            n += snprintf(chunk_sql + n, sizeof chunk_sql - n, "%s?", c ? "," : "");
        n += snprintf(chunk_sql + n, sizeof chunk_sql - n, ")");
    }
    if (prep(w, &w->ins, INSERT_EVENTS "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", e) < 0 ||
        prep(w, &w->ins_chunk, chunk_sql, e) < 0 ||
        prep(w, &w->fn_ins, "INSERT OR IGNORE INTO functions(name, name_raw) VALUES(?1, ?2)",
             e) < 0 ||
        prep(w, &w->fn_sel, "SELECT id FROM functions WHERE name = ?1 AND name_raw = ?2",
             e) < 0 ||
        prep(w, &w->file_ins, "INSERT OR IGNORE INTO files(path) VALUES(?1)", e) < 0 ||
        prep(w, &w->file_sel, "SELECT id FROM files WHERE path = ?1", e) < 0 ||
        prep(w, &w->thr_ins, "INSERT OR IGNORE INTO threads(name) VALUES(?1)", e) < 0 ||
        prep(w, &w->thr_sel, "SELECT id FROM threads WHERE name = ?1", e) < 0 ||
        prep(w, &w->tc_upsert,
             "INSERT INTO type_counts(session, type, count) VALUES(?1, ?2, ?3)"
             " ON CONFLICT(session, type) DO UPDATE SET count = count + excluded.count",
             e) < 0 ||
        prep(w, &w->fc_upsert,
             "INSERT INTO function_counts(session, function_id, count) VALUES(?1, ?2, ?3)"
             " ON CONFLICT(session, function_id) DO UPDATE SET count = count + excluded.count",
             e) < 0 ||
        prep(w, &w->evict_sel,
             "SELECT ts_ns, type FROM events INDEXED BY ev_session_ts WHERE session = ?1 AND "
             STORE_EVICTABLE_SQL " ORDER BY ts_ns LIMIT ?2",
             e) < 0 ||
        prep(w, &w->evict_cnt,
             "SELECT type, function_id, count(*), max(id) FROM events INDEXED BY ev_session_ts"
             " WHERE session = ?1 AND ts_ns <= ?2 AND " STORE_EVICTABLE_SQL
             " GROUP BY type, function_id",
             e) < 0 ||
        prep(w, &w->evict_del,
             "DELETE FROM events INDEXED BY ev_session_ts WHERE session = ?1 AND ts_ns <= ?2 "
             "AND " STORE_EVICTABLE_SQL,
             e) < 0 ||
        prep(w, &w->evictable_sel,
             "SELECT coalesce(sum(count), 0) FROM type_counts WHERE session = ?1 AND "
             STORE_EVICTABLE_SQL,
             e) < 0 ||
        prep(w, &w->meta_set, "UPDATE meta SET value = ?1 WHERE key = 'next_event_id'",
             e) < 0 ||
        prep(w, &w->meta_get, "SELECT value FROM meta WHERE key = 'next_event_id'", e) < 0 ||
        prep(w, &w->pid_ins, "INSERT OR IGNORE INTO session_pids(session, pid) VALUES(?1, ?2)",
             e) < 0 ||
        prep(w, &w->ec_upsert,
             "INSERT INTO evicted_counts(session, function_id, events, through_ns)"
             " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(session, function_id) DO UPDATE SET"
             " events = events + excluded.events,"
             " through_ns = max(through_ns, excluded.through_ns)", e) < 0 ||
        prep(w, &w->et_upsert,
             "INSERT INTO evicted_types(session, type, events, through_ns, through_id)"
             " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(session, type) DO UPDATE SET"
             " events = events + excluded.events,"
             " through_ns = max(through_ns, excluded.through_ns),"
             " through_id = max(through_id, excluded.through_id)", e) < 0)
        return -1;
    if (st_load_next_id(w) < 0)
        return st_fail_db(e, w->db, "cannot read the next event id");
    if (st_deleter_resume(s, w->db, e) < 0)
        return -1;
    if (pthread_create(&s->thread, NULL, writer_main, s) != 0)
        return err_set(e, ERR_INTERNAL, "cannot start the store writer thread: %s",
                       strerror(errno));
    s->thread_started = true;
    return 0;
}

void st_writer_stop(struct store *s)
{
    if (s->thread_started) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->wake_cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        s->thread_started = false;
    }
    /* Released rings the writer could not drain (a failing database) still belong to
     * us; attached ones belong to their producers. */
    for (int i = 0; i < s->nrings; i++)
        if (s->rings[i].released)
            ring_destroy(s->rings[i].ring);
    s->nrings = 0;
    writer_free(s->w);
    s->w = NULL;
}

void st_writer_forget(struct store *s, int64_t key)
{
    pthread_mutex_lock(&s->lock);
    if (s->nforget == s->forget_cap) {
        int ncap = s->forget_cap ? s->forget_cap * 2 : 8;
        int64_t *n = realloc(s->forget, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
        s->forget = n;
        s->forget_cap = ncap;
    }
    s->forget[s->nforget++] = key;
    for (int i = 0; i < s->nlimits; i++)
        if (s->limits[i].key == key) {
            s->limits[i] = s->limits[--s->nlimits];
            break;
        }
    pthread_mutex_unlock(&s->lock);
}
