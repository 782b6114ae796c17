/*
 * store.h - the SQLite timeline: sessions, events, interned names; one writer thread
 * fed by rings; queries on per-caller read connections.
 *
 * Threads: store_open() starts the writer thread. Producers own rings and register
 * them with store_attach_ring(); the writer drains every ring and inserts batches in
 * one transaction each (every 10 ms, or sooner when woken), each session's events in
 * the order of their timestamps (event ids included: see "Time order" below).
 * Session rows are written through a separate connection guarded by a mutex (WAL
 * plus busy_timeout serialize it with the writer). Queries open their own read
 * connection with store_reader_open(), one per client thread, because an SQLite
 * connection must not be shared between threads running at once. Retention
 * (store_purge_expired) runs on its caller's thread through the session connection,
 * one session at a time, so it never holds the writer up for longer than one
 * chunk of a delete.
 *
 * Errors: functions returning int give 0 on success and -1 on failure. Those that
 * take a struct strobe_error *e (NULL: the caller does not want the sentence) set it
 * on failure: ERR_INTERNAL when the database fails (or memory runs out),
 * ERR_VALIDATION when the store refuses its input (an empty or taken session id, a
 * query not in the store's terms, a pattern too costly to match: STORE_E_PATTERN).
 * Nothing is allocated for it: the caller has nothing to free.
 */
#ifndef STROBE_STORE_H
#define STROBE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/event_query.h"
#include "base/ring.h"

struct store;
struct store_reader;

/* Opens (creating if needed) the database at path: WAL, synchronous=NORMAL, schema
 * of spec 003 with names interned (see schema.c). Starts the writer thread. An
 * existing file is checked first (PRAGMA quick_check): a damaged one is set aside
 * (store_health says where) and a fresh one created in its place (check.c). */
struct store *store_open(const char *path, struct strobe_error *e);
/* store_open, calling alive(arg) about once a second while it checks the file
 * (quick_check reads every page: 0.6 s per 100 MB from the page cache, 1.7 s from
 * disk, measured on the CI machine), for a caller that must show it is not stuck. */
struct store *store_open_alive(const char *path, void (*alive)(void *), void *arg,
                               struct strobe_error *e);
/* Drains every ring, stops the writer, closes. NULL is fine. */
void store_close(struct store *s);

/* The store's condition, for answers and the log. */
struct store_health {
    char set_aside[4096];  /* where store_open moved a damaged database; "" when none */
    char damage[256];      /* what its check found */
    bool full;             /* a write failed for lack of space and there is no room yet */
    int64_t full_since_ms; /* unix ms of the first failure */
    char full_why[256];    /* the database's sentence */
    int64_t free_bytes;    /* free for this user where the database lives, when full;
                              -1 otherwise or unknown */
    int64_t room_bytes;    /* free bytes from which a full store is full no more */
    int pending;           /* session updates kept until the database takes them */
    const char *path;      /* the database (the store's: valid while it is open) */
};
void store_health(struct store *s, struct store_health *h);
/* ---- sessions ------------------------------------------------------------ */

struct session_row {
    int64_t key;             /* internal integer key, events refer to it */
    char *id;                /* "name-YYYY-MM-DD-HHhMM[-N]" */
    char *binary_path;
    char *project_root;
    char *command_line;      /* JSON array of argv */
    int pid;
    int64_t started_at_ms;   /* unix time, ms */
    int64_t ended_at_ms;     /* 0 while running */
    char *status;            /* "running", "exited", "crashed", "stopped" */
    int exit_code;           /* valid when has_exit_code */
    bool has_exit_code;
    char *exit_signal;       /* "SIGSEGV" when killed by a signal, else NULL */
    bool retained;
    int64_t event_count;     /* rows in events for this session */
};
void session_row_free(struct session_row *r); /* frees the strings, not r */

/* Inserts a session; r->key is set. id must be non-empty and unique (see
 * store_session_id_taken): else ERR_VALIDATION. */
int store_session_create(struct store *s, struct session_row *r, struct strobe_error *e);
/* 1 if a session with this id exists (any status), 0 if not, -1 on error. */
int store_session_id_taken(struct store *s, const char *id);
/* Fills *out (caller frees with session_row_free). 0 found, 1 not found, -1 error. */
int store_session_get(struct store *s, const char *id, struct session_row *out);
/* All sessions, newest first; *rows is malloc'd, free each and the array. */
int store_session_list(struct store *s, struct session_row **rows, int *n,
                       struct strobe_error *e);
/* Records the end of a session's main process. status as in session_row. 0; 1 when
 * the database refused it (a full disk): the end is kept and retried by the writer
 * until it is written, and store_session_get/list show it meanwhile, so a session
 * never reads as running once its process is gone; -1 out of memory. */
int store_session_finish(struct store *s, int64_t key, const char *status,
                         int64_t ended_at_ms, bool has_exit_code, int exit_code,
                         const char *exit_signal);
int store_session_set_retained(struct store *s, int64_t key, bool retained);
/* Records the pid of the session's main process once it is known; 0, 1 or -1 as
 * store_session_finish. */
int store_session_set_pid(struct store *s, int64_t key, int pid);
/* Deletes the session: at once it is gone from store_session_get/list and its id is
 * free again; its events are deleted in the background by the writer, in short
 * transactions between its batches, so other sessions' inserts and queries never
 * wait behind a big session (resumed at the next store_open() when interrupted).
 * Call store_sync() first if rings of this session may still hold events. */
int store_session_delete(struct store *s, int64_t key, struct strobe_error *e);
/* Sessions deleted whose events the writer has not finished deleting. */
int store_deletes_pending(struct store *s);
/* At daemon start: sessions left "running" by a daemon that died are marked
 * "stopped" (their targets died with it). Returns how many, or -1. */
int store_session_close_orphans(struct store *s, int64_t now_ms);
/* Per-session FIFO limit on evictable events (see event_type_evictable()).
 * Applied by the writer as it inserts; default 200,000. */
void store_session_set_limit(struct store *s, int64_t key, int64_t max_events);

/* ---- producers ---------------------------------------------------------- */

/* Time order: a session's event ids follow its events' timestamps. The writer holds
 * an event back until none of the session's producers can push an older one, as the
 * floors of their rings say (base/ring.h, "Time order": a producer of late events
 * keeps its floor where it has caught up to, one that stamps and pushes at once marks
 * itself idle between its events), and at most a second (store/order.c): an event
 * later than that gets the next id, out of time order. The barriers below wait for
 * held events too.
 *
 * The writer starts draining r. The producer keeps pushing into it. A ring carries
 * the events of one session: session_key, or when 0 the session of its first event
 * (its floor then holds nothing back until that event); while a ring of a session is
 * attached, or released but not yet drained, retention never purges it. */
void store_attach_ring(struct store *s, struct ring *r, int64_t session_key);
/* The producer is done with r: the writer drains what is left, then destroys it. */
void store_release_ring(struct store *s, struct ring *r);
/* Asks the writer to drain now. Signature fits ring_push()'s wake callback. */
void store_wake(void *store);
/* Returns once every event pushed into any ring before the call is committed (or
 * the writer's attempt to commit it failed: see store_session_lost()). */
void store_sync(struct store *s);
/* Returns once every event of session key pushed before the call is committed,
 * without waiting for other sessions' events (a flood elsewhere does not delay an
 * idle session's query): 0; or 1 when timeout_ms passed first (-1: no limit), the
 * newest events then not yet visible. */
int store_sync_session(struct store *s, int64_t key, int timeout_ms);
/* Events of session key the writer could not store since store_open() (a batch
 * failed: they are lost), and the sentence of the last failure that lost some of
 * them (this session's, whatever failed since in others) copied into msg (msglen
 * bytes) when msg is not NULL and there was one. For the session's status. */
int64_t store_session_lost(struct store *s, int64_t key, char *msg, size_t msglen);

/* ---- queries -------------------------------------------------------------- */

struct store_reader *store_reader_open(struct store *s, struct strobe_error *e);
void store_reader_close(struct store_reader *r);

/* How store_query_events() reads: bits of its flags. */
enum {
    /* With no after_id: the last `limit` matching events after skipping `offset` from
     * the end, still returned in chronological order. This is "the latest N" without
     * an OFFSET scan over the whole session. */
    STORE_QUERY_LATEST = 1,
    /* total_count is not counted: it is what the rows read show (offset plus rows, one
     * more when has_more). For "is there a match" checks. */
    STORE_QUERY_NO_TOTAL = 2,
};

struct store_event_row {
    int64_t id;
    int type;
    int64_t ts_ns;
    int32_t pid, tid;
    char *thread_name;
    int64_t parent_id;          /* 0 = none */
    char *function, *function_raw, *source_file;
    int32_t line;               /* 0 = absent */
    char *arguments, *return_value, *text, *data; /* NULL = absent */
    int64_t duration_ns;        /* -1 = absent */
    bool sampled;
};

struct store_result {
    struct store_event_row *rows;
    int n;
    int64_t total_count;        /* rows matching the filters, ignoring limit/offset */
    bool has_more;
    /* Added: total_count is exact when it comes from the writer's counters (no filter
     * but session and eventType); otherwise it is counted with a cap (100,000) and,
     * when the cap is reached, this is true and total_count is a lower bound. */
    bool total_is_lower_bound;
};
void store_result_free(struct store_result *res);

/* Events of session session_key matching q (base/event_query.h: the filter in the
 * shape the engine and the MCP handlers share), limit rows of it, chronological (ts,
 * id), or by id when q->after_id is set; flags: STORE_QUERY_*. q's time bounds must be
 * absolute and its patterns compiled (function_re, text_re): the store matches the
 * handles and compiles nothing, so a request that reads many times compiles once. 0;
 * STORE_E_PATTERN with e set to ERR_VALIDATION when a pattern is too costly to match
 * (the sentence names which: the caller's pattern, told to the agent as it is); -1
 * with e set when the database fails (ERR_INTERNAL), or q has a relative bound or a
 * pattern not compiled (ERR_VALIDATION: the caller's mistake, not the agent's). */
#define STORE_E_PATTERN (-2)
int store_query_events(struct store_reader *r, int64_t session_key,
                       const struct event_query *q, int flags, struct store_result *out,
                       struct strobe_error *e);

/* Timestamp of the session's latest event (0 when it has none): the anchor of
 * relative time bounds such as "-5s". */
int store_latest_ts(struct store_reader *r, int64_t session_key, int64_t *ts_ns);

/* Distinct pids that produced events in a session, ascending; *pids malloc'd. */
int store_query_pids(struct store_reader *r, int64_t session_key, int **pids, int *n);

/* Event counts of a session by type, indexed by enum event_type. */
int store_count_by_type(struct store_reader *r, int64_t session_key,
                        int64_t counts[EV_TYPE_MAX + 1]);

struct function_count {
    char *function;
    char *function_raw;  /* the internal symbol when it differs (functionRaw), or NULL */
    int64_t count;
    bool sampled;        /* some of its events are marked sampled: count (the events
                            recorded) is a lower bound of its calls */
};
/* Calls per function (function_enter events) of a session, most called first, up
 * to limit rows. Answered from counters the writer keeps, not by scanning events.
 * *rows is malloc'd: free each function, then the array. */
int store_count_by_function(struct store_reader *r, int64_t session_key, int limit,
                            struct function_count **rows, int *n);

/* Function events the session's event cap evicted (store_session_set_limit), per
 * function, most first: events (enters and exits) and through_ns, the newest
 * timestamp evicted (session-relative: the function's events before it may be gone,
 * the later ones are all there). *rows malloc'd: free with store_evicted_free(). */
struct store_evicted {
    char *function;
    int64_t events;
    int64_t through_ns;
};
int store_evicted_by_function(struct store_reader *r, int64_t session_key,
                              struct store_evicted **rows, int *n);
void store_evicted_free(struct store_evicted *rows, int n);

/* Every event the session's event cap evicted, per type (indexed by enum
 * event_type; zero where none went): how many, the newest timestamp and the highest
 * id evicted. */
struct store_evicted_type {
    int64_t events;
    int64_t through_ns;
    int64_t through_id;
};
int store_evicted_by_type(struct store_reader *r, int64_t session_key,
                          struct store_evicted_type out[EV_TYPE_MAX + 1]);

/* The id of the oldest event kept (by time) among the types whose bit (1 << type) is
 * in type_mask; 0 when there is none. What an answer names as "the oldest event
 * kept" after evictions. */
int store_oldest_kept(struct store_reader *r, int64_t session_key, unsigned type_mask,
                      int64_t *id);

/* Where a session's timeline stands, read in one snapshot: the highest event id
 * stored (0: none) and how many events were ever recorded (stored + evicted). The
 * baseline of "what happened meanwhile": events recorded since = recorded now -
 * recorded then, exactly, however many the cap evicted. */
struct store_mark {
    int64_t last_id;
    int64_t recorded;
};
int store_session_mark(struct store_reader *r, int64_t session_key, struct store_mark *m);

/* Database file size in bytes (main file plus WAL), for benchmarks and status. */
int64_t store_size_bytes(struct store *s);
/* Bytes the database uses: (page_count - freelist_count) * page_size, as the latest
 * commit sees it (pages still in the WAL included). Pages freed by deletions go to
 * the freelist and stop counting at once, although the file does not shrink (they
 * are reused by later inserts). This is what retention.maxTotalBytes caps. -1 on
 * error. */
int64_t store_used_bytes(struct store *s);

/* ---- retention ------------------------------------------------------------ */

struct store_retention {
    int64_t now_ms;          /* unix ms */
    int64_t max_age_ms;      /* a session ended longer ago than this is purged */
    int64_t max_used_bytes;  /* then, oldest first, until store_used_bytes() fits */
    /* When set, sessions it says are in use (processes the daemon still traces
     * may produce events for them) are never candidates. */
    bool (*in_use)(void *arg, int64_t key);
    void *in_use_arg;
};

/* One purged session, as reported to store_purge_expired()'s callback. */
struct store_purged {
    const char *session_id;
    bool by_age;             /* false: purged to bring the database under the cap */
    int64_t age_ms;          /* since it ended (since it started if it never ended) */
    int64_t used_bytes;      /* store_used_bytes() before it went; -1 when by_age */
};

/* Applies the retention policy: a session is a candidate when its status is not
 * "running" and no attached ring carries its events (see store_attach_ring),
 * whether it is retained or not. First every candidate whose age (now - ended_at,
 * or - started_at when it never ended) exceeds max_age_ms goes; then, while
 * store_used_bytes() exceeds max_used_bytes, candidates go oldest first by
 * started_at (not while sessions deleted by store_session_delete() are still being
 * deleted in the background: their space is coming back). Running sessions are never
 * purged, even when the database stays over the cap. Each session is deleted at once,
 * in chunks of store_session_delete()'s size, and on_purge (may be NULL) is called
 * after each. The database is not vacuumed: freed pages are
 * reused. Returns the number of sessions purged, or -1 with e set. */
int store_purge_expired(struct store *s, const struct store_retention *policy,
                        void (*on_purge)(void *arg, const struct store_purged *p),
                        void *arg, struct strobe_error *e);

/* ---- test durations (debug_test's baselines) ----------------------------------
 * The duration of each test of a project at its last STORE_TEST_HISTORY runs. */
#define STORE_TEST_HISTORY 10
/* Records one run's durations (names[i] took ms[i]) at unix time at_ms, dropping
 * each test's older entries. 0 or -1. */
/* The exact calls of a session's traced functions (every call, recorded or not:
 * ptrace/hooks/hooks.h), saved once its tracer is done (store/calls.c). sampled: its
 * events are a sample since sampled_since_ns (ns since the session started); lost:
 * "" when calls is exact, else where calls went uncounted. */
struct store_fn_calls {
    char function[160];
    int64_t calls, recorded, sampled_since_ns;
    bool sampled;
    char lost[96];
};
int store_function_calls_save(struct store *s, int64_t key, const struct store_fn_calls *rows,
                              int n);
/* Up to max rows of session key, most called first; how many, -1 on error. */
int store_function_calls_load(struct store *s, int64_t key, struct store_fn_calls *rows,
                              int max);

int store_test_durations_add(struct store *s, const char *project, const char *const *names,
                             const int64_t *ms, int n, int64_t at_ms);
/* The mean of the recorded durations of one test, -1 when there are none. */
int64_t store_test_baseline(struct store *s, const char *project, const char *name);

#endif
