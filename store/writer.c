/*
 * writer.c - the writer thread: it drains every attached ring and inserts events in
 * batches, one transaction per batch, CHUNK_ROWS events per INSERT statement (the
 * events of a chunk wait in struct pending until it is full). A session's rings are
 * merged by ts_ns, so its commit order follows time; ts_ns counts from each
 * session's own start, so it orders nothing across sessions, which instead take
 * turns of MERGE_RUN events: a flood cannot starve another session's events.
 * What a batch does: batch.c; the event cap: eviction.c; the per-session state:
 * writer_sessions.c; the calls producers make: producers.c. Between passes it also
 * retries the session updates the database refused (pending.c), and after each
 * commit it looks whether a full disk has room again (health.c).
 *
 * Passes and store_sync(): a pass snapshots the ring list, then pops from the ring
 * whose head is oldest until every ring has been found empty once (so everything
 * pushed before the pass started is consumed), committing every BATCH_MAX events and
 * at the end. Each store_sync() bumps req_gen; a pass records the req_gen it saw when
 * it started and publishes it as done_gen when it finishes, so a pass already running
 * when store_sync() was called never satisfies it. A pass may run long while
 * producers keep pushing, so batches are also committed every COMMIT_MS, rings
 * attached or refilled meanwhile join the pass, and each commit publishes, per ring,
 * the position up to which its events are committed (ring_slot.done):
 * store_sync_session() waits for its own session's rings to reach the positions they
 * had when it was called, and no longer.
 *
 * Ring owners: the session of a ring's first event is recorded in its slot, so
 * retention (retention.c) can tell which sessions still have producers.
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
/* A batch is also committed once open this long, so that producers that never let
 * the rings run dry (floods) do not keep every session's events invisible until
 * BATCH_MAX of them are in. Checked every COMMIT_CHECK events. */
#define COMMIT_MS 50
#define COMMIT_CHECK 256
/* Events one session's rings give in a row before the next session's turn. */
#define MERGE_RUN 64

void st_writer_error(struct store *s, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&s->lock);
    int64_t n = ++s->write_errors;
    snprintf(s->last_error, sizeof s->last_error, "%s", buf);
    pthread_mutex_unlock(&s->lock);
    if (n == 1 || n % 1000 == 0)
        fprintf(stderr, "strobe: store writer: %s (%lld failures so far)\n", buf,
                (long long)n);
}

static int prep(struct writer *w, sqlite3_stmt **st, const char *sql, struct strobe_error *e)
{
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return st_fail_db(e, w->db, "cannot prepare the writer's statements");
    return 0;
}

/* ---- the thread ------------------------------------------------------------------ */

/* Room for need rings in the writer's per-ring arrays; -1 when memory runs out. */
static int reserve_rings(struct writer *w, int need)
{
    if (need <= w->rs_cap)
        return 0;
    int ncap = need * 2;
    struct ring_slot *rs = realloc(w->rs, ncap * sizeof *rs);
    struct event *h = rs ? realloc(w->heads, ncap * sizeof *h) : NULL;
    if (rs)
        w->rs = rs;
    if (h)
        w->heads = h;
    bool *hh = h ? realloc(w->has_head, ncap * sizeof *hh) : NULL;
    if (!hh)
        return -1;
    w->has_head = hh;
    w->rs_cap = ncap;
    return 0;
}

/* Copies the ring list, the limits and the forget list under s->lock. */
static int snapshot(struct store *s, struct writer *w)
{
    int rc = reserve_rings(w, s->nrings);
    if (rc == 0) {
        if (s->nrings)
            memcpy(w->rs, s->rings, s->nrings * sizeof *w->rs);
        w->nrs = s->nrings;
    }
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
        st_wsess_remove(w, s->forget[i]);
    s->nforget = 0;
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].limit = st_limit_for(w, w->sess[i].key);
    return rc;
}

/* The first event popped from a ring names the session the ring serves; recorded in
 * s->rings, where retention looks for sessions that still have producers. */
static void note_ring_session(struct store *s, struct ring_slot *rs, int64_t key)
{
    rs->session = key;
    pthread_mutex_lock(&s->lock);
    for (int j = 0; j < s->nrings; j++)
        if (s->rings[j].ring == rs->ring)
            s->rings[j].session = key;
    pthread_mutex_unlock(&s->lock);
}

/* After a commit (or a failed batch, whose events are gone): every ring's popped
 * position becomes its done position, for store_sync_session(). */
static void publish_done(struct store *s, struct writer *w)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < w->nrs; i++)
        for (int j = 0; j < s->nrings; j++)
            if (s->rings[j].ring == w->rs[i].ring) {
                s->rings[j].done = w->rs[i].done;
                break;
            }
    pthread_cond_broadcast(&s->sync_cond);
    pthread_mutex_unlock(&s->lock);
}

/* Within a long pass (producers outpacing the writer), at each commit: rings that
 * were empty when the pass began and have events now, and rings attached since, join
 * the pass, so no session waits for the pass to end (which a flood may put off
 * indefinitely). */
static void refresh_rings(struct store *s, struct writer *w)
{
    for (int i = 0; i < w->nrs; i++)
        if (!w->has_head[i])
            w->has_head[i] = ring_peek(w->rs[i].ring, &w->heads[i]);
    pthread_mutex_lock(&s->lock);
    for (int j = 0; j < s->nrings; j++) {
        bool known = false;
        for (int i = 0; i < w->nrs && !known; i++)
            known = w->rs[i].ring == s->rings[j].ring;
        if (known || s->rings[j].released || reserve_rings(w, w->nrs + 1) != 0)
            continue;
        int i = w->nrs++;
        w->rs[i] = s->rings[j];
        w->has_head[i] = ring_peek(w->rs[i].ring, &w->heads[i]);
    }
    pthread_mutex_unlock(&s->lock);
}

/* The ring with the oldest head among those of session key, or -1. */
static int oldest_of(const struct writer *w, int64_t key)
{
    int best = -1;
    for (int i = 0; i < w->nrs; i++)
        if (w->has_head[i] && w->heads[i].session_key == key &&
            (best < 0 || w->heads[i].ts_ns < w->heads[best].ts_ns))
            best = i;
    return best;
}

/* The ring to pop next (see the top of the file), or -1 when all are empty. */
static int next_ring(struct writer *w)
{
    if (w->run_left > 0) {
        int best = oldest_of(w, w->run_session);
        if (best >= 0) {
            w->run_left--;
            return best;
        }
    }
    for (int k = 0; k < w->nrs; k++) {
        int i = (w->rr + k) % w->nrs;
        if (!w->has_head[i])
            continue;
        w->rr = (i + 1) % w->nrs;
        w->run_session = w->heads[i].session_key;
        w->run_left = MERGE_RUN - 1;
        return oldest_of(w, w->run_session);
    }
    return -1;
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
            st_wsess_remove(w, deleted);
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

/* One pass; returns the number of events inserted, or -1 when a batch failed. */
static int64_t pass(struct store *s, struct writer *w)
{
    int live = 0;
    int64_t inserted = 0;
    w->run_left = 0;
    for (int i = 0; i < w->nrs; i++) {
        w->has_head[i] = ring_peek(w->rs[i].ring, &w->heads[i]);
        live += w->has_head[i];
    }
    if (!live)
        return 0;
    if (st_batch_begin(w) < 0) {
        st_writer_error(s, "cannot start a write transaction: %s", sqlite3_errmsg(w->db));
        return -1;
    }
    for (;;) {
        int best = next_ring(w);
        if (best < 0)
            break;
        if (st_insert_event(w, &w->heads[best]) < 0) {
            st_writer_error(s, "cannot insert an event: %s", sqlite3_errmsg(w->db));
            st_batch_abort(s, w, w->heads[best].session_key);
            /* Skip the faulty event so one bad record cannot wedge the writer. */
            ring_pop(w->rs[best].ring);
            w->rs[best].done = ring_consumed(w->rs[best].ring);
            publish_done(s, w);
            return -1;
        }
        inserted++;
        if (!w->rs[best].session)
            note_ring_session(s, &w->rs[best], w->heads[best].session_key);
        ring_pop(w->rs[best].ring);
        w->rs[best].done = ring_consumed(w->rs[best].ring);
        w->has_head[best] = ring_peek(w->rs[best].ring, &w->heads[best]);
        if (w->batch_n >= BATCH_MAX ||
            (w->batch_n % COMMIT_CHECK == 0 &&
             mono_ns() - w->batch_started_ns >= COMMIT_MS * 1000000LL)) {
            int rc = st_batch_commit(w);
            publish_done(s, w);
            if (rc == 0) {
                st_health_wrote(s);
                delete_some(s, w, DELETE_SHARE_NS);
            }
            yield_to_sdb(s);
            refresh_rings(s, w);
            if (rc < 0 || st_batch_begin(w) < 0) {
                st_writer_error(s, "cannot commit a batch of events: %s", sqlite3_errmsg(w->db));
                st_batch_abort(s, w, 0);
                return -1;
            }
        }
    }
    int rc = st_batch_commit(w);
    publish_done(s, w);
    yield_to_sdb(s);
    if (rc < 0) {
        st_writer_error(s, "cannot commit a batch of events: %s", sqlite3_errmsg(w->db));
        st_batch_abort(s, w, 0);
        return -1;
    }
    st_health_wrote(s);
    return inserted;
}

/* Rings released before the pass's snapshot and drained by it are destroyed. */
static void reap_released(struct store *s, struct writer *w, bool pass_ok)
{
    if (!pass_ok)
        return;
    bool reaped = false;
    for (int i = 0; i < w->nrs; i++) {
        if (!w->rs[i].released || w->has_head[i] || ring_used(w->rs[i].ring))
            continue;
        pthread_mutex_lock(&s->lock);
        for (int j = 0; j < s->nrings; j++)
            if (s->rings[j].ring == w->rs[i].ring) {
                s->rings[j] = s->rings[--s->nrings];
                break;
            }
        pthread_mutex_unlock(&s->lock);
        ring_destroy(w->rs[i].ring);
        w->rs[i].ring = NULL;
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
        pthread_mutex_lock(&s->lock);
        if (!s->wake && !s->stop) {
            struct timespec until = clock_after_ms(CLOCK_REALTIME, WAKE_MS);
            pthread_cond_timedwait(&s->wake_cond, &s->lock, &until);
        }
        s->wake = false;
        bool stop = s->stop;
        uint64_t gen = s->req_gen;
        int snap = snapshot(s, w);
        pthread_mutex_unlock(&s->lock);
        if (snap < 0)
            st_writer_error(s, "out of memory in the writer");

        int64_t got = pass(s, w);
        reap_released(s, w, got >= 0);
        /* One chunk of a deletion between passes: inserts wait behind at most one. A
         * failing delete waits for the next timed wake-up instead of spinning. */
        int more = stop ? 0 : delete_some(s, w, 0);
        if (more != 0)
            yield_to_sdb(s);
        /* Session updates the database refused, again (a last time when stopping). */
        st_pending_retry(s, w->db, stop);

        pthread_mutex_lock(&s->lock);
        if (more > 0)
            s->wake = true;
        if (s->done_gen < gen)
            s->done_gen = gen;
        pthread_cond_broadcast(&s->sync_cond);
        pthread_mutex_unlock(&s->lock);
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
    }
    free(w->sess);
    free(w->fc);
    free(w->keybuf);
    free(w->arena);
    free(w->rs);
    free(w->heads);
    free(w->has_head);
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
