/*
 * writer.c - the writer thread: it drains every attached ring and inserts events in
 * batches, one transaction per batch, CHUNK_ROWS events per INSERT statement (the
 * events of a chunk wait in struct pending until it is full). A session's rings are
 * merged by ts_ns, so its commit order follows time; ts_ns counts from each
 * session's own start, so it orders nothing across sessions, which instead take
 * turns of MERGE_RUN events: a flood cannot starve another session's events. It
 * owns the hot path, so it also owns the in-memory state that keeps that path free
 * of SELECTs: the interning caches (name -> id), the per-session parent maps (seq ->
 * event id), the per-batch type/function counters, and the per-session FIFO
 * eviction.
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
 * Event ids: the writer assigns them from next_event_id (persisted in meta at every
 * commit), so ids grow in commit order and are never reused.
 *
 * Ring owners: the session of a ring's first event is recorded in its slot, so
 * retention (retention.c) can tell which sessions still have producers.
 *
 * Eviction: a session whose evictable events (event_type_evictable) exceed its
 * limit by more than 1% loses its oldest evictable events (smallest ts_ns) down to
 * the limit, in the same transaction. type_counts is decremented; function_counts is not
 * (it counts calls observed). parent_id of a surviving event may name an evicted one.
 * The function events evicted are counted per function in evicted_counts, with the
 * newest timestamp evicted, so answers can say what the cap took and from when.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strmap.h"

#define BATCH_MAX 32768
#define WAKE_MS 10
/* A batch is also committed once open this long, so that producers that never let
 * the rings run dry (floods) do not keep every session's events invisible until
 * BATCH_MAX of them are in. Checked every COMMIT_CHECK events. */
#define COMMIT_MS 50
#define COMMIT_CHECK 256
/* Events one session's rings give in a row before the next session's turn. */
#define MERGE_RUN 64
#define PARENT_CAP (1u << 15)
/* Rows per multi-row INSERT: one statement execution (cursor opening, VDBE start,
 * halt) per CHUNK_ROWS events instead of per event. Measured in bench_store. */
#define CHUNK_ROWS 32
#define EV_COLS 17

/* ---- parent map: seq -> event id of recent function_enter events ------------- */

/* Open addressing, bounded: each put or hit stamps the entry with a clock tick; when
 * half full, entries not touched during the last PARENT_CAP/8 ticks are dropped. An
 * enter that keeps being used as a parent (main, an event loop) stays. */
struct parent_ent {
    int64_t seq; /* 0 = empty */
    int64_t id;
    uint64_t used;
};
struct parent_map {
    struct parent_ent *ents;
    size_t n;
    uint64_t clock;
};

static size_t seq_slot(int64_t seq) { return ((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 49; }

static void parent_insert_raw(struct parent_ent *ents, struct parent_ent e)
{
    size_t i = seq_slot(e.seq) & (PARENT_CAP - 1);
    while (ents[i].seq && ents[i].seq != e.seq)
        i = (i + 1) & (PARENT_CAP - 1);
    ents[i] = e;
}

static void parent_put(struct parent_map *m, int64_t seq, int64_t id)
{
    if (!m->ents) {
        m->ents = calloc(PARENT_CAP, sizeof *m->ents);
        if (!m->ents)
            return; /* parents become NULL; not worth failing a batch */
    }
    if (m->n >= PARENT_CAP / 2) {
        struct parent_ent *n = calloc(PARENT_CAP, sizeof *n);
        if (!n)
            return;
        uint64_t keep_after = m->clock > PARENT_CAP / 8 ? m->clock - PARENT_CAP / 8 : 0;
        size_t kept = 0;
        for (size_t i = 0; i < PARENT_CAP; i++)
            if (m->ents[i].seq && m->ents[i].used >= keep_after) {
                parent_insert_raw(n, m->ents[i]);
                kept++;
            }
        free(m->ents);
        m->ents = n;
        m->n = kept;
    }
    size_t i = seq_slot(seq) & (PARENT_CAP - 1);
    while (m->ents[i].seq && m->ents[i].seq != seq)
        i = (i + 1) & (PARENT_CAP - 1);
    if (!m->ents[i].seq)
        m->n++;
    m->ents[i] = (struct parent_ent){seq, id, ++m->clock};
}

static int64_t parent_get(struct parent_map *m, int64_t seq)
{
    if (!m->ents)
        return 0;
    for (size_t i = seq_slot(seq) & (PARENT_CAP - 1);; i = (i + 1) & (PARENT_CAP - 1)) {
        if (!m->ents[i].seq)
            return 0;
        if (m->ents[i].seq == seq) {
            m->ents[i].used = ++m->clock;
            return m->ents[i].id;
        }
    }
}

static void parent_clear(struct parent_map *m)
{
    free(m->ents);
    memset(m, 0, sizeof *m);
}

/* ---- writer state -------------------------------------------------------------- */

struct wsess {
    int64_t key;
    int64_t limit;
    int64_t evictable; /* evictable rows in the database, this batch included */
    bool evictable_known;
    bool touched;
    int64_t batch_types[EV_TYPE_MAX + 1];
    int64_t batch_events; /* events of this session in the open batch, until COMMIT */
    struct parent_map parents;
    int32_t *pids; /* pids already recorded in session_pids */
    int npids, pids_cap;
};

struct fcount {
    int64_t session, fid, count; /* fid 0 = empty slot */
};

/* An event waiting for its chunk's INSERT. The ring slot it came from is released
 * as soon as it is queued, so its payload strings are copied into the writer's
 * arena (offsets, because the arena may move; -1 = absent). */
enum { P_ARGS, P_RET, P_TEXT, P_DATA, P_NTEXT };
struct pending {
    int64_t id, session, ts_ns, thr, parent, fid, file, duration_ns;
    int32_t type, pid, tid, line;
    bool sampled;
    int64_t off[P_NTEXT];
    int len[P_NTEXT];
};

struct writer {
    sqlite3 *db;
    sqlite3_stmt *ins, *ins_chunk, *fn_ins, *fn_sel, *file_ins, *file_sel, *thr_ins, *thr_sel;
    sqlite3_stmt *tc_upsert, *fc_upsert, *evict_sel, *evict_cnt, *evict_del, *evictable_sel,
        *meta_set, *meta_get, *pid_ins, *ec_upsert;
    struct strmap fns, files, threads;
    char *keybuf;
    size_t keycap;
    struct wsess *sess;
    int nsess, sess_cap;
    int last_sess;
    struct fcount *fc;
    size_t fc_cap, fc_n;
    int64_t next_id;
    bool in_txn;
    int batch_n;
    struct pending pend[CHUNK_ROWS];
    int npend;
    char *arena;
    size_t arena_len, arena_cap;
    /* pass snapshot */
    struct ring_slot *rs;
    int nrs, rs_cap;
    int rr;                   /* round robin: the ring whose session goes next */
    int64_t run_session;      /* the session whose turn it is, and events left in it */
    int run_left;
    int64_t batch_started_ns; /* CLOCK_MONOTONIC at batch_begin */
    struct event *heads;
    bool *has_head;
    struct limit_entry *limits;
    int nlimits, limits_cap;
    char err[256];
};

static void writer_error(struct store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void writer_error(struct store *s, const char *fmt, ...)
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

int64_t store_session_lost(struct store *s, int64_t key, char *msg, size_t msglen)
{
    pthread_mutex_lock(&s->lock);
    int64_t n = 0;
    for (int i = 0; i < s->nlost; i++)
        if (s->lost[i].key == key)
            n = s->lost[i].events;
    if (msg && msglen)
        snprintf(msg, msglen, "%s", n ? s->last_error : "");
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Adds n lost events to session key's count (s->lock held). */
static void count_lost(struct store *s, int64_t key, int64_t n)
{
    for (int i = 0; i < s->nlost; i++)
        if (s->lost[i].key == key) {
            s->lost[i].events += n;
            return;
        }
    if (s->nlost == s->lost_cap) {
        int ncap = s->lost_cap ? 2 * s->lost_cap : 8;
        struct lost_entry *l = realloc(s->lost, (size_t)ncap * sizeof *l);
        if (!l)
            return;
        s->lost = l;
        s->lost_cap = ncap;
    }
    s->lost[s->nlost++] = (struct lost_entry){key, n};
}

static int prep(struct writer *w, sqlite3_stmt **st, const char *sql, char **err)
{
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return st_fail_db(err, w->db, "cannot prepare the writer's statements");
    return 0;
}

static int64_t limit_for(struct writer *w, int64_t key)
{
    for (int i = 0; i < w->nlimits; i++)
        if (w->limits[i].key == key)
            return w->limits[i].limit;
    return STORE_DEFAULT_LIMIT;
}

static struct wsess *wsess_get(struct writer *w, int64_t key)
{
    if (w->last_sess < w->nsess && w->sess[w->last_sess].key == key)
        return &w->sess[w->last_sess];
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].key == key) {
            w->last_sess = i;
            return &w->sess[i];
        }
    if (w->nsess == w->sess_cap) {
        int ncap = w->sess_cap ? w->sess_cap * 2 : 16;
        struct wsess *n = realloc(w->sess, ncap * sizeof *n);
        if (!n)
            return NULL;
        w->sess = n;
        w->sess_cap = ncap;
    }
    struct wsess *ws = &w->sess[w->nsess];
    memset(ws, 0, sizeof *ws);
    ws->key = key;
    ws->limit = limit_for(w, key);
    w->last_sess = w->nsess++;
    return ws;
}

static void wsess_remove(struct writer *w, int64_t key)
{
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].key == key) {
            parent_clear(&w->sess[i].parents);
            free(w->sess[i].pids);
            w->sess[i] = w->sess[--w->nsess];
            w->last_sess = 0;
            return;
        }
}

/* ---- interning ------------------------------------------------------------------ */

/* Id of (a, b) in a names table, inserting it on a miss. b may be NULL (one-column
 * tables, or no linkage name: stored as ''). 0 when a is NULL, -1 on error. */
static int64_t intern(struct writer *w, struct strmap *m, sqlite3_stmt *ins,
                      sqlite3_stmt *sel, const char *a, const char *b)
{
    if (!a)
        return 0;
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    size_t len = la + (b ? 1 + lb : 0);
    const char *key = a;
    if (b) {
        if (len + 1 > w->keycap) {
            size_t ncap = (len + 1) * 2;
            char *n = realloc(w->keybuf, ncap);
            if (!n)
                return -1;
            w->keybuf = n;
            w->keycap = ncap;
        }
        memcpy(w->keybuf, a, la);
        w->keybuf[la] = '\x01';
        memcpy(w->keybuf + la + 1, b, lb);
        w->keybuf[len] = 0;
        key = w->keybuf;
    }
    uint64_t h = strmap_hash(key, len);
    int64_t id = strmap_get(m, key, len, h);
    if (id > 0)
        return id;
    /* Miss: INSERT OR IGNORE, then SELECT (the row may come from an earlier run). */
    sqlite3_bind_text(ins, 1, a, (int)la, SQLITE_STATIC);
    sqlite3_bind_text(sel, 1, a, (int)la, SQLITE_STATIC);
    if (b) {
        sqlite3_bind_text(ins, 2, b, (int)lb, SQLITE_STATIC);
        sqlite3_bind_text(sel, 2, b, (int)lb, SQLITE_STATIC);
    }
    int rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE)
        return -1;
    id = -1;
    if (sqlite3_step(sel) == SQLITE_ROW)
        id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    if (id > 0 && strmap_put(m, key, len, h, id) < 0)
        return -1;
    return id;
}

/* ---- per-batch function counters ------------------------------------------------ */

static int fcount_add(struct writer *w, int64_t session, int64_t fid)
{
    if ((w->fc_n + 1) * 2 > w->fc_cap) {
        size_t ncap = w->fc_cap ? w->fc_cap * 2 : 256;
        struct fcount *n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < w->fc_cap; i++) {
            if (!w->fc[i].fid)
                continue;
            size_t j = (size_t)(w->fc[i].fid * 31 + w->fc[i].session) & (ncap - 1);
            while (n[j].fid)
                j = (j + 1) & (ncap - 1);
            n[j] = w->fc[i];
        }
        free(w->fc);
        w->fc = n;
        w->fc_cap = ncap;
    }
    size_t j = (size_t)(fid * 31 + session) & (w->fc_cap - 1);
    while (w->fc[j].fid && (w->fc[j].fid != fid || w->fc[j].session != session))
        j = (j + 1) & (w->fc_cap - 1);
    if (!w->fc[j].fid) {
        w->fc[j] = (struct fcount){session, fid, 0};
        w->fc_n++;
    }
    w->fc[j].count++;
    return 0;
}

/* ---- batches -------------------------------------------------------------------- */

static void bind_id_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Binds p as the row whose first parameter is base+1 (columns as in the INSERTs). */
static void bind_row(struct writer *w, sqlite3_stmt *st, int base, const struct pending *p)
{
    sqlite3_bind_int64(st, base + 1, p->id);
    sqlite3_bind_int64(st, base + 2, p->session);
    sqlite3_bind_int64(st, base + 3, p->ts_ns);
    sqlite3_bind_int(st, base + 4, p->type);
    sqlite3_bind_int(st, base + 5, p->pid);
    sqlite3_bind_int(st, base + 6, p->tid);
    bind_id_or_null(st, base + 7, p->thr);
    bind_id_or_null(st, base + 8, p->parent);
    bind_id_or_null(st, base + 9, p->fid);
    bind_id_or_null(st, base + 10, p->file);
    bind_id_or_null(st, base + 11, p->line);
    if (p->duration_ns >= 0)
        sqlite3_bind_int64(st, base + 12, p->duration_ns);
    else
        sqlite3_bind_null(st, base + 12);
    sqlite3_bind_int(st, base + 13, p->sampled);
    for (int k = 0; k < P_NTEXT; k++) {
        if (p->off[k] >= 0)
            sqlite3_bind_text(st, base + 14 + k, w->arena + p->off[k], p->len[k], SQLITE_STATIC);
        else
            sqlite3_bind_null(st, base + 14 + k);
    }
}

/* Inserts the queued events: full chunks through the multi-row INSERT, the rest (the
 * end of a batch) one by one. */
static int flush_pending(struct writer *w)
{
    int done = 0, rc = SQLITE_DONE;
    while (w->npend - done >= CHUNK_ROWS && rc == SQLITE_DONE) {
        for (int r = 0; r < CHUNK_ROWS; r++)
            bind_row(w, w->ins_chunk, r * EV_COLS, &w->pend[done + r]);
        rc = sqlite3_step(w->ins_chunk);
        sqlite3_reset(w->ins_chunk);
        done += CHUNK_ROWS;
    }
    for (; done < w->npend && rc == SQLITE_DONE; done++) {
        bind_row(w, w->ins, 0, &w->pend[done]);
        rc = sqlite3_step(w->ins);
        sqlite3_reset(w->ins);
    }
    w->npend = 0;
    w->arena_len = 0;
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Copies s (NULL = absent) into the arena for p's column k. */
static int pend_text(struct writer *w, struct pending *p, int k, const char *s)
{
    p->off[k] = -1;
    if (!s)
        return 0;
    size_t len = strlen(s);
    if (w->arena_len + len > w->arena_cap) {
        size_t ncap = w->arena_cap ? w->arena_cap : 4096;
        while (ncap < w->arena_len + len)
            ncap *= 2;
        char *n = realloc(w->arena, ncap);
        if (!n)
            return -1;
        w->arena = n;
        w->arena_cap = ncap;
    }
    memcpy(w->arena + w->arena_len, s, len);
    p->off[k] = (int64_t)w->arena_len;
    p->len[k] = (int)len;
    w->arena_len += len;
    return 0;
}

static int load_next_id(struct writer *w)
{
    int64_t next = 1;
    if (sqlite3_step(w->meta_get) == SQLITE_ROW)
        next = sqlite3_column_int64(w->meta_get, 0);
    int rc = sqlite3_reset(w->meta_get);
    if (rc != SQLITE_OK)
        return -1;
    /* Never below max(id)+1, whatever meta says. */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, "SELECT max(id) FROM events", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) >= next)
        next = sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);
    w->next_id = next;
    return 0;
}

static int batch_begin(struct writer *w)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    w->in_txn = true;
    w->batch_n = 0;
    w->batch_started_ns = mono_ns();
    return 0;
}

/* After a failed batch: its events are lost (counted per session, with skipped:
 * an event of session skipped_key whose insert failed before it was counted, or 0),
 * and everything the caches learned inside it is gone. */
static void batch_abort(struct store *s, struct writer *w, int64_t skipped_key)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].batch_events)
            count_lost(s, w->sess[i].key, w->sess[i].batch_events);
    if (skipped_key)
        count_lost(s, skipped_key, 1);
    pthread_mutex_unlock(&s->lock);
    if (w->in_txn)
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    w->in_txn = false;
    w->npend = 0;
    w->arena_len = 0;
    strmap_clear(&w->fns);
    strmap_clear(&w->files);
    strmap_clear(&w->threads);
    for (int i = 0; i < w->nsess; i++) {
        parent_clear(&w->sess[i].parents);
        w->sess[i].npids = 0;
        w->sess[i].evictable_known = false;
        w->sess[i].touched = false;
        w->sess[i].batch_events = 0;
        memset(w->sess[i].batch_types, 0, sizeof w->sess[i].batch_types);
    }
    if (w->fc)
        memset(w->fc, 0, w->fc_cap * sizeof *w->fc);
    w->fc_n = 0;
    if (load_next_id(w) < 0)
        w->next_id += BATCH_MAX; /* keep ids unique even if we cannot read meta */
}

static int upsert_type_count(struct writer *w, int64_t session, int type, int64_t delta)
{
    sqlite3_bind_int64(w->tc_upsert, 1, session);
    sqlite3_bind_int(w->tc_upsert, 2, type);
    sqlite3_bind_int64(w->tc_upsert, 3, delta);
    int rc = sqlite3_step(w->tc_upsert);
    sqlite3_reset(w->tc_upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int count_evicted(struct writer *w, int64_t session, int64_t fid, int64_t events,
                         int64_t through_ns)
{
    sqlite3_bind_int64(w->ec_upsert, 1, session);
    sqlite3_bind_int64(w->ec_upsert, 2, fid);
    sqlite3_bind_int64(w->ec_upsert, 3, events);
    sqlite3_bind_int64(w->ec_upsert, 4, through_ns);
    int rc = sqlite3_step(w->ec_upsert);
    sqlite3_reset(w->ec_upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Deletes the k oldest evictable events of a session: walks ev_session_ts (session,
 * ts_ns, type) index-only to find the k-th oldest timestamp, then deletes evictable
 * rows up to it. Rows sharing that last timestamp all go, so a few more than k may. */
static int evict(struct writer *w, struct wsess *ws, int64_t k)
{
    int64_t by_type[EV_TYPE_MAX + 1] = {0}, max_ts = 0, total = 0;
    sqlite3_bind_int64(w->evict_sel, 1, ws->key);
    sqlite3_bind_int64(w->evict_sel, 2, k);
    int rc;
    while ((rc = sqlite3_step(w->evict_sel)) == SQLITE_ROW)
        max_ts = sqlite3_column_int64(w->evict_sel, 0);
    sqlite3_reset(w->evict_sel);
    if (rc != SQLITE_DONE)
        return -1;
    /* Count what goes (ties at max_ts included) for type_counts, and per function for
     * evicted_counts (the rows are read by the delete next: their pages stay cached). */
    sqlite3_bind_int64(w->evict_cnt, 1, ws->key);
    sqlite3_bind_int64(w->evict_cnt, 2, max_ts);
    while ((rc = sqlite3_step(w->evict_cnt)) == SQLITE_ROW) {
        int t = sqlite3_column_int(w->evict_cnt, 0);
        int64_t c = sqlite3_column_int64(w->evict_cnt, 2);
        if (t >= EV_TYPE_MIN && t <= EV_TYPE_MAX)
            by_type[t] += c;
        total += c;
        if ((t == EV_FUNCTION_ENTER || t == EV_FUNCTION_EXIT) &&
            sqlite3_column_type(w->evict_cnt, 1) != SQLITE_NULL &&
            count_evicted(w, ws->key, sqlite3_column_int64(w->evict_cnt, 1), c, max_ts) < 0)
            break;
    }
    sqlite3_reset(w->evict_cnt);
    if (rc != SQLITE_DONE)
        return -1;
    if (!total)
        return 0;
    sqlite3_bind_int64(w->evict_del, 1, ws->key);
    sqlite3_bind_int64(w->evict_del, 2, max_ts);
    rc = sqlite3_step(w->evict_del);
    sqlite3_reset(w->evict_del);
    if (rc != SQLITE_DONE)
        return -1;
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        if (by_type[t] && upsert_type_count(w, ws->key, t, -by_type[t]) < 0)
            return -1;
    ws->evictable -= total;
    return 0;
}

static int batch_commit(struct writer *w)
{
    if (flush_pending(w) < 0)
        return -1;
    for (int i = 0; i < w->nsess; i++) {
        struct wsess *ws = &w->sess[i];
        if (!ws->touched)
            continue;
        for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
            if (ws->batch_types[t] && upsert_type_count(w, ws->key, t, ws->batch_types[t]) < 0)
                return -1;
        memset(ws->batch_types, 0, sizeof ws->batch_types);
        ws->touched = false;
        if (ws->evictable > ws->limit + ws->limit / 100 &&
            evict(w, ws, ws->evictable - ws->limit) < 0)
            return -1;
    }
    for (size_t i = 0; i < w->fc_cap; i++) {
        struct fcount *f = &w->fc[i];
        if (!f->fid)
            continue;
        sqlite3_bind_int64(w->fc_upsert, 1, f->session);
        sqlite3_bind_int64(w->fc_upsert, 2, f->fid);
        sqlite3_bind_int64(w->fc_upsert, 3, f->count);
        int rc = sqlite3_step(w->fc_upsert);
        sqlite3_reset(w->fc_upsert);
        if (rc != SQLITE_DONE)
            return -1;
        f->fid = 0;
    }
    w->fc_n = 0;
    sqlite3_bind_int64(w->meta_set, 1, w->next_id);
    int rc = sqlite3_step(w->meta_set);
    sqlite3_reset(w->meta_set);
    if (rc != SQLITE_DONE)
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    w->in_txn = false;
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].batch_events = 0;
    return 0;
}

/* Records a pid of the session in session_pids the first time the writer sees it. */
static int note_pid(struct writer *w, struct wsess *ws, int32_t pid)
{
    for (int i = 0; i < ws->npids; i++)
        if (ws->pids[i] == pid) {
            /* Move to front: the next event is most likely from the same process. */
            ws->pids[i] = ws->pids[0];
            ws->pids[0] = pid;
            return 0;
        }
    if (ws->npids == ws->pids_cap) {
        int ncap = ws->pids_cap ? ws->pids_cap * 2 : 4;
        int32_t *n = realloc(ws->pids, ncap * sizeof *n);
        if (!n)
            return -1;
        ws->pids = n;
        ws->pids_cap = ncap;
    }
    sqlite3_bind_int64(w->pid_ins, 1, ws->key);
    sqlite3_bind_int(w->pid_ins, 2, pid);
    int rc = sqlite3_step(w->pid_ins);
    sqlite3_reset(w->pid_ins);
    if (rc != SQLITE_DONE)
        return -1;
    ws->pids[ws->npids++] = pid;
    return 0;
}

static int insert_event(struct writer *w, const struct event *e)
{
    struct wsess *ws = wsess_get(w, e->session_key);
    if (!ws)
        return -1;
    if (!ws->evictable_known) {
        sqlite3_bind_int64(w->evictable_sel, 1, e->session_key);
        ws->evictable = 0;
        if (sqlite3_step(w->evictable_sel) == SQLITE_ROW)
            ws->evictable = sqlite3_column_int64(w->evictable_sel, 0);
        if (sqlite3_reset(w->evictable_sel) != SQLITE_OK)
            return -1;
        ws->evictable_known = true;
    }
    const char *fname = e->function ? e->function : e->function_raw;
    const char *raw = fname ? (e->function_raw ? e->function_raw : "") : NULL;
    int64_t fid = intern(w, &w->fns, w->fn_ins, w->fn_sel, fname, raw);
    int64_t file = intern(w, &w->files, w->file_ins, w->file_sel, e->source_file, NULL);
    int64_t thr = intern(w, &w->threads, w->thr_ins, w->thr_sel, e->thread_name, NULL);
    if (fid < 0 || file < 0 || thr < 0)
        return -1;
    if (e->pid > 0 && note_pid(w, ws, e->pid) < 0)
        return -1;
    int64_t parent = e->parent_seq ? parent_get(&ws->parents, e->parent_seq) : 0;
    int64_t id = w->next_id++;

    struct pending *p = &w->pend[w->npend];
    *p = (struct pending){.id = id, .session = e->session_key, .ts_ns = e->ts_ns,
                          .thr = thr, .parent = parent, .fid = fid, .file = file,
                          .duration_ns = e->duration_ns, .type = e->type, .pid = e->pid,
                          .tid = e->tid, .line = e->line, .sampled = e->sampled};
    if (pend_text(w, p, P_ARGS, e->arguments) < 0 ||
        pend_text(w, p, P_RET, e->return_value) < 0 || pend_text(w, p, P_TEXT, e->text) < 0 ||
        pend_text(w, p, P_DATA, e->data) < 0)
        return -1;
    if (++w->npend == CHUNK_ROWS && flush_pending(w) < 0)
        return -1;

    if (e->type == EV_FUNCTION_ENTER && e->seq)
        parent_put(&ws->parents, e->seq, id);
    if (e->type >= EV_TYPE_MIN && e->type <= EV_TYPE_MAX)
        ws->batch_types[e->type]++;
    ws->batch_events++;
    if (event_type_evictable(e->type))
        ws->evictable++;
    ws->touched = true;
    if (e->type == EV_FUNCTION_ENTER && fid > 0 && fcount_add(w, e->session_key, fid) < 0)
        return -1;
    w->batch_n++;
    return 0;
}

/* ---- the thread ------------------------------------------------------------------ */

/* Copies the ring list, the limits and the forget list under s->lock. */
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
        wsess_remove(w, s->forget[i]);
    s->nforget = 0;
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].limit = limit_for(w, w->sess[i].key);
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
 * chunk failed (told through writer_error). */
static int delete_some(struct store *s, struct writer *w, int64_t budget_ns)
{
    int64_t until = mono_ns() + budget_ns;
    int more;
    do {
        int64_t deleted = 0;
        char *err = NULL;
        more = st_delete_step(s, w->db, &deleted, &err);
        if (more < 0)
            writer_error(s, "%s", err ? err : "cannot delete a session's events");
        free(err);
        if (deleted)
            wsess_remove(w, deleted);
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
    if (batch_begin(w) < 0) {
        writer_error(s, "cannot start a write transaction: %s", sqlite3_errmsg(w->db));
        return -1;
    }
    for (;;) {
        int best = next_ring(w);
        if (best < 0)
            break;
        if (insert_event(w, &w->heads[best]) < 0) {
            writer_error(s, "cannot insert an event: %s", sqlite3_errmsg(w->db));
            batch_abort(s, w, w->heads[best].session_key);
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
            int rc = batch_commit(w);
            publish_done(s, w);
            if (rc == 0)
                delete_some(s, w, DELETE_SHARE_NS);
            yield_to_sdb(s);
            refresh_rings(s, w);
            if (rc < 0 || batch_begin(w) < 0) {
                writer_error(s, "cannot commit a batch of events: %s", sqlite3_errmsg(w->db));
                batch_abort(s, w, 0);
                return -1;
            }
        }
    }
    int rc = batch_commit(w);
    publish_done(s, w);
    yield_to_sdb(s);
    if (rc < 0) {
        writer_error(s, "cannot commit a batch of events: %s", sqlite3_errmsg(w->db));
        batch_abort(s, w, 0);
        return -1;
    }
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
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += WAKE_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&s->wake_cond, &s->lock, &until);
        }
        s->wake = false;
        bool stop = s->stop;
        uint64_t gen = s->req_gen;
        int snap = snapshot(s, w);
        pthread_mutex_unlock(&s->lock);
        if (snap < 0)
            writer_error(s, "out of memory in the writer");

        int64_t got = pass(s, w);
        reap_released(s, w, got >= 0);
        /* One chunk of a deletion between passes: inserts wait behind at most one. A
         * failing delete waits for the next timed wake-up instead of spinning. */
        int more = stop ? 0 : delete_some(s, w, 0);
        if (more != 0)
            yield_to_sdb(s);

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
                           w->meta_set, w->meta_get, w->pid_ins, w->ec_upsert};
    for (size_t i = 0; i < sizeof sts / sizeof *sts; i++)
        sqlite3_finalize(sts[i]);
    if (w->db)
        sqlite3_close(w->db);
    strmap_clear(&w->fns);
    strmap_clear(&w->files);
    strmap_clear(&w->threads);
    for (int i = 0; i < w->nsess; i++) {
        parent_clear(&w->sess[i].parents);
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

int st_writer_start(struct store *s, char **err)
{
    struct writer *w = calloc(1, sizeof *w);
    if (!w)
        return st_fail(err, "out of memory starting the store writer");
    s->w = w;
    w->db = st_connect(s->path, false, err);
    if (!w->db)
        return -1;
    /* A bigger page cache for the hot index pages, and checkpoints every ~16 MB of
     * WAL rather than 4 MB: fewer rewrites of the same pages during heavy ingest. */
    if (st_exec(w->db, "PRAGMA cache_size=-32768; PRAGMA wal_autocheckpoint=4000", err) < 0)
        return -1;
    char chunk_sql[sizeof INSERT_EVENTS + CHUNK_ROWS * 2 * EV_COLS + CHUNK_ROWS * 4];
    size_t n = snprintf(chunk_sql, sizeof chunk_sql, "%s", INSERT_EVENTS);
    for (int r = 0; r < CHUNK_ROWS; r++) {
        n += snprintf(chunk_sql + n, sizeof chunk_sql - n, "%s(", r ? "," : "");
        for (int c = 0; c < EV_COLS; c++)
            n += snprintf(chunk_sql + n, sizeof chunk_sql - n, "%s?", c ? "," : "");
        n += snprintf(chunk_sql + n, sizeof chunk_sql - n, ")");
    }
    if (prep(w, &w->ins, INSERT_EVENTS "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err) < 0 ||
        prep(w, &w->ins_chunk, chunk_sql, err) < 0 ||
        prep(w, &w->fn_ins, "INSERT OR IGNORE INTO functions(name, name_raw) VALUES(?1, ?2)",
             err) < 0 ||
        prep(w, &w->fn_sel, "SELECT id FROM functions WHERE name = ?1 AND name_raw = ?2",
             err) < 0 ||
        prep(w, &w->file_ins, "INSERT OR IGNORE INTO files(path) VALUES(?1)", err) < 0 ||
        prep(w, &w->file_sel, "SELECT id FROM files WHERE path = ?1", err) < 0 ||
        prep(w, &w->thr_ins, "INSERT OR IGNORE INTO threads(name) VALUES(?1)", err) < 0 ||
        prep(w, &w->thr_sel, "SELECT id FROM threads WHERE name = ?1", err) < 0 ||
        prep(w, &w->tc_upsert,
             "INSERT INTO type_counts(session, type, count) VALUES(?1, ?2, ?3)"
             " ON CONFLICT(session, type) DO UPDATE SET count = count + excluded.count",
             err) < 0 ||
        prep(w, &w->fc_upsert,
             "INSERT INTO function_counts(session, function_id, count) VALUES(?1, ?2, ?3)"
             " ON CONFLICT(session, function_id) DO UPDATE SET count = count + excluded.count",
             err) < 0 ||
        prep(w, &w->evict_sel,
             "SELECT ts_ns, type FROM events INDEXED BY ev_session_ts WHERE session = ?1 AND "
             STORE_EVICTABLE_SQL " ORDER BY ts_ns LIMIT ?2",
             err) < 0 ||
        prep(w, &w->evict_cnt,
             "SELECT type, function_id, count(*) FROM events INDEXED BY ev_session_ts"
             " WHERE session = ?1 AND ts_ns <= ?2 AND " STORE_EVICTABLE_SQL
             " GROUP BY type, function_id",
             err) < 0 ||
        prep(w, &w->evict_del,
             "DELETE FROM events INDEXED BY ev_session_ts WHERE session = ?1 AND ts_ns <= ?2 "
             "AND " STORE_EVICTABLE_SQL,
             err) < 0 ||
        prep(w, &w->evictable_sel,
             "SELECT coalesce(sum(count), 0) FROM type_counts WHERE session = ?1 AND "
             STORE_EVICTABLE_SQL,
             err) < 0 ||
        prep(w, &w->meta_set, "UPDATE meta SET value = ?1 WHERE key = 'next_event_id'", err) < 0 ||
        prep(w, &w->meta_get, "SELECT value FROM meta WHERE key = 'next_event_id'", err) < 0 ||
        prep(w, &w->pid_ins, "INSERT OR IGNORE INTO session_pids(session, pid) VALUES(?1, ?2)",
             err) < 0 ||
        prep(w, &w->ec_upsert,
             "INSERT INTO evicted_counts(session, function_id, events, through_ns)"
             " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(session, function_id) DO UPDATE SET"
             " events = events + excluded.events,"
             " through_ns = max(through_ns, excluded.through_ns)", err) < 0)
        return -1;
    if (load_next_id(w) < 0)
        return st_fail_db(err, w->db, "cannot read the next event id");
    if (st_deleter_resume(s, w->db, err) < 0)
        return -1;
    if (pthread_create(&s->thread, NULL, writer_main, s) != 0)
        return st_fail(err, "cannot start the store writer thread: %s", strerror(errno));
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

/* ---- public producer API ------------------------------------------------------------ */

void store_attach_ring(struct store *s, struct ring *r)
{
    pthread_mutex_lock(&s->lock);
    if (s->nrings == s->rings_cap) {
        int ncap = s->rings_cap ? s->rings_cap * 2 : 16;
        struct ring_slot *n = realloc(s->rings, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->lock);
            writer_error(s, "out of memory attaching a ring; its events are not stored");
            return;
        }
        s->rings = n;
        s->rings_cap = ncap;
    }
    s->rings[s->nrings++] = (struct ring_slot){.ring = r, .done = ring_consumed(r)};
    pthread_mutex_unlock(&s->lock);
}

void store_release_ring(struct store *s, struct ring *r)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nrings; i++)
        if (s->rings[i].ring == r)
            s->rings[i].released = true;
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    pthread_mutex_unlock(&s->lock);
}

void store_wake(void *store)
{
    struct store *s = store;
    pthread_mutex_lock(&s->lock);
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    pthread_mutex_unlock(&s->lock);
}

void store_sync(struct store *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t gen = ++s->req_gen;
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    while (s->thread_started && !s->stop && s->done_gen < gen)
        pthread_cond_wait(&s->sync_cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

int store_sync_session(struct store *s, int64_t key, int timeout_ms)
{
    enum { MAX_TARGETS = 16 };
    struct {
        const struct ring *ring;
        uint64_t pos;
    } t[MAX_TARGETS];
    int n = 0;
    pthread_mutex_lock(&s->lock);
    /* The session's rings, then rings whose owner is not known yet (no event of
     * theirs popped so far: they may be the session's, a new one's first events),
     * that hold events not yet done; unowned ones beyond MAX_TARGETS are not waited
     * for (a session has a handful of rings: output, collector, polls). */
    for (int own = 1; own >= 0; own--)
        for (int j = 0; j < s->nrings && n < MAX_TARGETS; j++) {
            const struct ring_slot *rs = &s->rings[j];
            uint64_t pos = ring_produced(rs->ring);
            if (rs->session == (own ? key : 0) && pos > rs->done) {
                t[n].ring = rs->ring;
                t[n++].pos = pos;
            }
        }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    if (n > 0) {
        s->wake = true;
        pthread_cond_signal(&s->wake_cond);
    }
    while (n > 0 && s->thread_started && !s->stop) {
        int pending = 0;
        for (int i = 0; i < n; i++) {
            const struct ring_slot *rs = NULL;
            for (int j = 0; j < s->nrings && !rs; j++)
                if (s->rings[j].ring == t[i].ring)
                    rs = &s->rings[j];
            pending += rs && rs->done < t[i].pos; /* gone: drained and destroyed */
        }
        if (!pending)
            break;
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->sync_cond, &s->lock);
        } else if (pthread_cond_timedwait(&s->sync_cond, &s->lock, &until) == ETIMEDOUT) {
            rc = 1;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void store_session_set_limit(struct store *s, int64_t key, int64_t max_events)
{
    if (max_events < 1)
        max_events = 1;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nlimits; i++)
        if (s->limits[i].key == key) {
            s->limits[i].limit = max_events;
            pthread_mutex_unlock(&s->lock);
            return;
        }
    if (s->nlimits == s->limits_cap) {
        int ncap = s->limits_cap ? s->limits_cap * 2 : 16;
        struct limit_entry *n = realloc(s->limits, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
        s->limits = n;
        s->limits_cap = ncap;
    }
    s->limits[s->nlimits++] = (struct limit_entry){key, max_events};
    pthread_mutex_unlock(&s->lock);
}
