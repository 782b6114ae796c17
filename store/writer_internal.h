/*
 * writer_internal.h - the writer's own state and the calls between its files, for
 * those files alone (writer.c, order.c, batch.c, eviction.c, writer_sessions.c,
 * producers.c); the rest of the store sees the writer through store_internal.h.
 *
 *   writer.c           the thread: passes, turns between sessions, commits, the
 *                      barriers' positions, deletions between passes, start and stop
 *   order.c            the time order: the rings read into each session's runs of
 *                      events, released oldest first up to the session's horizon
 *   batch.c            one transaction: chunked INSERTs, interning, counters, event
 *                      ids, pids, lost events and write failures
 *   eviction.c         the per-session event cap
 *   writer_sessions.c  per-session state: the cap, the parent map
 *   producers.c        the calls of producers and callers: rings, wake, sync, limits
 *
 * The writer owns the hot path, so it also owns the in-memory state that keeps that
 * path free of SELECTs: the interning caches (name -> id), the per-session parent
 * maps (seq -> event id), the per-batch type/function counters, and the per-session
 * FIFO eviction. struct writer and everything it points to belong to the writer
 * thread alone; producers.c touches only struct store's fields under s->lock.
 */
#ifndef STROBE_STORE_WRITER_INTERNAL_H
#define STROBE_STORE_WRITER_INTERNAL_H

#include "store/store_internal.h"

#include "base/strmap.h"

/* Events per batch (transaction) at most. */
#define BATCH_MAX 32768
/* Rows per multi-row INSERT: one statement execution (cursor opening, VDBE start,
 * halt) per CHUNK_ROWS events instead of per event. Measured in bench_store. */
#define CHUNK_ROWS 32
#define EV_COLS 17

/* Bounded open-addressing table seq -> event id (writer_sessions.c). */
struct parent_ent;
struct parent_map {
    struct parent_ent *ents;
    size_t n;
    uint64_t clock;
};

struct run;   /* events waiting for their turn, oldest first (order.c) */
struct chunk; /* where they are copied to (order.c) */

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
    /* time order (order.c): the events read and not yet released, and how far
     * they may go */
    struct run *runs;
    int nruns, runs_cap;
    struct chunk *chunk;    /* the one new events are cut from */
    int next_run;           /* the run st_order_next() took the event from */
    int nheld;
    int64_t horizon;        /* no producer can push an event older than this */
    int64_t cycle_floor;    /* the horizon a gather is computing */
    int64_t released_to;    /* the newest timestamp released so far */
    int64_t due;            /* this round releases events up to this timestamp */
    int64_t oldest_held_at; /* at most the time the oldest held event was read */
};

struct fcount; /* per-batch function counters (batch.c) */

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
        *meta_set, *meta_get, *pid_ins, *ec_upsert,
        *et_upsert;
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
    /* the rings as the last gather found them */
    struct ring_slot *rs;
    int nrs, rs_cap;
    int64_t arrivals;         /* events read so far (order.c) */
    int64_t runs_opened;      /* runs opened so far (order.c) */
    int rr;                   /* round robin: the session whose turn comes next */
    int64_t batch_started_ns; /* CLOCK_MONOTONIC at st_batch_begin */
    struct limit_entry *limits;
    int nlimits, limits_cap;
};

/* ---- order.c ------------------------------------------------------------------ */

/* Reads every attached ring into its sessions' runs and sets each session's
 * horizon; the number of events read. */
int64_t st_order_gather(struct store *s, struct writer *w);
/* How far each session's events go in the next round (its horizon; further for
 * events held too long; everything when stop). */
void st_order_due(struct writer *w, int64_t now, bool stop);
/* The session's oldest event due, or NULL; st_order_pop() drops it (inserted or
 * skipped). */
const struct event *st_order_next(struct wsess *ws);
void st_order_pop(struct wsess *ws);
/* Frees the session's held events. */
void st_order_clear(struct wsess *ws);
/* Whether an event read from r is held, and the lowest position in r of those. */
bool st_order_held_from(const struct writer *w, const struct ring *r, uint64_t *pos);

/* ---- batch.c ------------------------------------------------------------------ */

/* Reads next_event_id from meta (never below max(id)+1) into w->next_id. */
int st_load_next_id(struct writer *w);
/* BEGIN IMMEDIATE: opens a batch. */
int st_batch_begin(struct writer *w);
/* Queues e (its names interned, its parent resolved, its session's counters
 * updated); a full chunk is inserted at once. -1 when a statement failed. */
int st_insert_event(struct writer *w, const struct event *e);
/* Flushes the queued events, adds the batch's counters, evicts sessions over their
 * cap, persists next_event_id and commits. -1 when a statement failed. */
int st_batch_commit(struct writer *w);
/* Rolls a failed batch back; see batch.c. */
void st_batch_abort(struct store *s, struct writer *w, int64_t skipped_key);
/* Counts n events of session key lost (store_session_lost). */
void st_lost(struct store *s, int64_t key, int64_t n);
/* Counts a write failure, keeps its sentence for store_session_lost(), and logs the
 * first one and every thousandth. Any thread. */
void st_writer_error(struct store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Adds delta to type_counts of (session, type). */
int st_upsert_type_count(struct writer *w, int64_t session, int type, int64_t delta);

/* ---- eviction.c ---------------------------------------------------------------- */

/* Deletes about the k oldest evictable events of ws's session; see eviction.c. */
int st_evict(struct writer *w, struct wsess *ws, int64_t k);

/* ---- writer_sessions.c --------------------------------------------------------- */

/* Remembers that the function_enter numbered seq got event id id. */
void st_parent_put(struct parent_map *m, int64_t seq, int64_t id);
/* The event id of the function_enter numbered seq, or 0 when forgotten. */
int64_t st_parent_get(struct parent_map *m, int64_t seq);
void st_parent_clear(struct parent_map *m);
/* The event cap of session key in the writer's limits snapshot (else the default). */
int64_t st_limit_for(struct writer *w, int64_t key);
/* The state of session key, created on first use; NULL when memory runs out. */
struct wsess *st_wsess_get(struct writer *w, int64_t key);
/* Drops the state of session key (deleted, or forgotten), but its held events
 * (order.c: st_order_clear first). */
void st_wsess_remove(struct writer *w, int64_t key);

#endif
