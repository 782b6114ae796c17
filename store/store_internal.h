/*
 * store_internal.h - declarations shared by the store's own files (schema.c, the
 * writer's files (writer.c and those writer_internal.h lists), session.c, deleter.c,
 * retention.c, reader.c, query.c, counts.c, evicted.c, calls.c, tests.c, util.c). Nothing
 * outside store/ includes this header, except the store's unit tests, which use
 * store_explain_query() to check query plans.
 *
 * Concurrency map of struct store:
 *   - set_aside and damage are written by store_open() alone, read-only after;
 *   - sdb, the session connection, is used only with sess_lock held;
 *   - the writer connection and struct writer belong to the writer thread alone;
 *   - everything under `lock` (rings, limits, generations, flags) is shared between
 *     the writer and API callers;
 *   - readers (struct store_reader) each own a connection and are used by one thread
 *     at a time.
 *
 * Errors: the functions below report as store.h's do, in a struct strobe_error (NULL:
 * the caller does not want the sentence), not in a malloc'd string: one shape from the
 * failing SQLite call up to the agent, nothing to free on the many paths that fail
 * half-way (a query's rollback, the writer's start), a sentence that needs no
 * allocation (an out-of-memory failure can still say so), and a later failure simply
 * overwrites an earlier one (query_failure's STORE_E_PATTERN sentence replaces the
 * database's). Database failures (st_fail_db, st_exec, st_connect) are ERR_INTERNAL
 * (ERR_STORE_FULL through st_fail_db when the disk is full);
 * a function that refuses its input says so with err_set(e, ERR_VALIDATION, ...).
 */
#ifndef STROBE_STORE_INTERNAL_H
#define STROBE_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* PRAGMA user_version of this build's schema; schema.c upgrades version 1 in place. */
#define STORE_SCHEMA_VERSION 2
#define STORE_DEFAULT_LIMIT 200000
#define STORE_BUSY_TIMEOUT_MS 5000
/* A full store retries what it could not write this often (pending.c), and is full
 * no more once this much is free where the database lives (health.c): room for a few
 * batches, so that one freed page does not make it flicker. */
#define STORE_RETRY_MS 200
#define STORE_ROOM_BYTES (128 * 1024)
/* Capped counts stop here; totalCount is then a lower bound. */
#define STORE_COUNT_CAP 100000
/* SQL fragment: the evictable types of event_type_evictable() (function_enter,
 * function_exit, variable_snapshot, watch_hit, logpoint), for the writer's eviction
 * statements and the evictable total read from type_counts. */
#define STORE_EVICTABLE_SQL "type IN (3,4,7,8,9)"
/* SQL fragment: the types ev_session_type indexes, every type but function_enter and
 * function_exit (see schema.c); query.c's build() must agree. */
#define STORE_TYPE_INDEX_SQL "(type = 1 OR type = 2 OR type = 5 OR type = 6 OR type = 7)"

/* ---- util.c ------------------------------------------------------------- */

/* Sets e (when not NULL) to ERR_INTERNAL and "<what>: <sqlite3_errmsg(db)>", or to
 * ERR_STORE_FULL naming the database when db failed for lack of space; -1. */
int st_fail_db(struct strobe_error *e, sqlite3 *db, const char *what);
/* strdup that tolerates NULL. */
char *st_strdup(const char *s);
/* Room for element n of array (*cap elements of elem_size allocated): array itself
 * while n < *cap, else array realloc'd to twice *cap (first_cap the first time) and
 * *cap updated. NULL when memory runs out; array is then still valid and *cap
 * unchanged. For the loops that read rows into a growing array. */
void *st_grow(void *array, int n, int *cap, size_t elem_size, int first_cap);
/* A malloc'd copy of column i of st's current row; NULL when it is NULL. */
char *st_column_dup(sqlite3_stmt *st, int i);

/* Opens a connection with the pragmas every Strobe connection uses (WAL,
 * synchronous=NORMAL, busy_timeout). NULL with e set on failure (ERR_INTERNAL, a
 * symbolic link or another user's file included: the database, not the path, is
 * wrong). */
sqlite3 *st_connect(const char *path, bool create, struct strobe_error *e);
/* Runs SQL without results; -1 with e set (ERR_INTERNAL) on failure. */
int st_exec(sqlite3 *db, const char *sql, struct strobe_error *e);

/* ---- check.c ------------------------------------------------------------ */

/* Before s->path is opened: a database SQLite cannot read as one, or whose
 * PRAGMA quick_check finds a fault, is set aside (renamed with its -wal, -shm and
 * -journal files, nothing deleted) so that a fresh one is created in its place;
 * s->set_aside and s->damage say where and why. alive(arg), when set, is called
 * about once a second while the check reads the file. A missing file, or one that
 * st_connect refuses (a link, another user's), is left to st_connect. 0, or -1
 * with e set when the file cannot be checked or set aside. */
int st_check(struct store *s, void (*alive)(void *), void *arg, struct strobe_error *e);

/* ---- health.c ------------------------------------------------------------- */

/* Right after a failed statement on db (before anything else runs on it): when it
 * failed for lack of space, the store is full from now (store_health). Any thread. */
void st_health_failed(struct store *s, sqlite3 *db);
/* After a write succeeded, and at the writer's retries: a full store is full no
 * more once its file system has STORE_ROOM_BYTES free. Any thread. */
void st_health_wrote(struct store *s);
/* Free bytes for this user on the file system of the database; -1 when unknown. */
int64_t st_health_free_bytes(const struct store *s);

/* ---- pending.c ------------------------------------------------------------ */

/* An update of a session row: its pid, its end, or both. */
struct st_pending {
    int64_t key;
    bool has_pid, has_end, has_exit_code;
    int pid, exit_code;
    int64_t ended_at_ms;
    char status[16];
    char exit_signal[24]; /* "" for none */
    uint64_t gen;         /* bumped at each change, so a retry that raced with one
                             keeps the entry */
};

/* Writes u on db (one transaction); 0, or -1 with db's error left for the caller. */
int st_session_update(sqlite3 *db, const struct st_pending *u);
/* store_session_finish and store_session_set_pid: u written through the session
 * connection, or, when the database refuses it (or an earlier update of the same
 * session still waits), kept to be retried by the writer: 0 written, 1 kept, -1
 * out of memory. */
int st_pending_write(struct store *s, const struct st_pending *u);
/* r as the pending updates of its session make it (reads show a session's end at
 * once, whether or not the database has it yet). */
void st_pending_apply(struct store *s, struct session_row *r);
/* The session is deleted: its pending updates go. */
void st_pending_forget(struct store *s, int64_t key);
/* Writer thread, between passes: every STORE_RETRY_MS (now when force), writes the
 * pending updates on db and drops those written, and looks whether a full store
 * has room again. */
void st_pending_retry(struct store *s, sqlite3 *db, bool force);

/* ---- schema.c ----------------------------------------------------------- */

/* Creates or upgrades the schema on db. */
int st_schema_init(sqlite3 *db, struct strobe_error *e);

/* ---- writer.c ------------------------------------------------------------ */

struct writer;
struct ring_slot {
    struct ring *ring;
    bool released;
    int64_t session; /* key of the session its events belong to: given when attached,
                        else 0 until its first event */
    uint64_t done;   /* ring_consumed() position up to which every event is committed
                        (or was lost with a failed batch): store_sync_session */
};
struct lost_entry {
    int64_t key;
    int64_t events;
    char why[256]; /* the failure that lost this session's last ones: its own, never
                      another session's later one */
};
struct limit_entry {
    int64_t key;
    int64_t limit;
};

struct st_pending; /* pending.c */

struct store {
    char *path;
    char *set_aside;  /* where store_open() moved a damaged database (check.c); NULL */
    char damage[256]; /* what the check found there */

    pthread_mutex_t sess_lock; /* guards sdb: take it with st_sdb_lock */
    _Atomic int sdb_users;     /* threads holding or waiting for sess_lock: the writer
                                  lets them at the database between its batches */
    sqlite3 *sdb;

    pthread_mutex_t lock; /* guards the fields below up to `w` */
    pthread_cond_t wake_cond;
    pthread_cond_t sync_cond;
    bool wake;
    bool stop;
    int sync_waiters; /* threads in store_sync() or store_sync_session() */
    struct ring_slot *rings;
    int nrings, rings_cap;
    struct limit_entry *limits;
    int nlimits, limits_cap;
    int64_t *forget; /* sessions deleted: the writer drops its state for them */
    int nforget, forget_cap;
    int64_t write_errors;
    char last_error[256];
    struct lost_entry *lost;  /* events lost per session, when batches failed */
    int nlost, lost_cap;
    int64_t *deletes; /* sessions hidden by store_session_delete(), oldest first: the
                         writer deletes their events (deleter.c) */
    int ndeletes, deletes_cap;
    struct st_pending *pending; /* session updates the database refused (pending.c) */
    int npending, pending_cap;
    int64_t pending_next_ms;    /* CLOCK_MONOTONIC: the writer's next retry */
    bool full;                  /* a write failed for lack of space (health.c) */
    int64_t full_since_ms;      /* unix ms of the first such failure */
    char full_why[256];

    struct writer *w; /* writer thread only */
    pthread_t thread;
    bool thread_started;
};

/* sess_lock, announced to the writer: during a flood it holds the database's write
 * lock almost without a break, and yields it after a commit while someone waits
 * here (the session connection would otherwise time out: "database is locked"). */
static inline void st_sdb_lock(struct store *s)
{
    atomic_fetch_add(&s->sdb_users, 1);
    pthread_mutex_lock(&s->sess_lock);
}

static inline void st_sdb_unlock(struct store *s)
{
    pthread_mutex_unlock(&s->sess_lock);
    atomic_fetch_sub(&s->sdb_users, 1);
}

/* Starts / stops (after a final drain) the writer thread. */
int st_writer_start(struct store *s, struct strobe_error *e);
void st_writer_stop(struct store *s);
/* Asks the writer to forget its per-session state for a deleted session. */
void st_writer_forget(struct store *s, int64_t key);

/* ---- session.c -------------------------------------------------------------- */

/* store_session_delete(), telling whether there was a session row to delete:
 * 1 deleted, 0 no such session, -1 with e set. Takes sess_lock itself, once per
 * chunk of events. */
int st_session_delete(struct store *s, int64_t key, struct strobe_error *e);

/* ---- reader.c ----------------------------------------------------------------- */

struct regex;
/* A reader (store.h): its connection serves query.c, counts.c and evicted.c. */
struct store_reader {
    struct store *s;
    sqlite3 *db;
    /* The running query's text regex, for strobe_text_match(); NULL between queries. */
    const struct regex *text_re;
    bool text_over_budget;   /* a match exceeded the budget: text_why says how */
    struct strobe_error text_why;
};

/* ---- deleter.c ------------------------------------------------------------ */

/* One transaction on db: up to DELETE_CHUNK of the session's events, and when that
 * was the last of them, its counters, pids and row (*done set). 0 or -1 with e set. */
int st_delete_chunk(sqlite3 *db, int64_t key, bool *done, struct strobe_error *e);
/* Writer thread, at start: queues the sessions a previous daemon hid but did not
 * finish deleting. */
int st_deleter_resume(struct store *s, sqlite3 *db, struct strobe_error *e);
/* Writer thread, between passes: one chunk of the oldest queued deletion on db.
 * *finished is the session's key when that chunk was its last (the writer then drops
 * its state for it), else 0. 1 while deletions are left, 0 when none, -1 with e set. */
int st_delete_step(struct store *s, sqlite3 *db, int64_t *finished, struct strobe_error *e);

/* ---- query.c --------------------------------------------------------------- */

/* The plan SQLite picks for the main SELECT and the count store_query_events()
 * would run for q (same arguments): EXPLAIN QUERY PLAN rows' detail column, joined by
 * '\n' (malloc'd in *plan). For tests and for diagnosing slow queries. -1 with e set
 * as store_query_events() sets it. */
int store_explain_query(struct store_reader *r, int64_t session_key,
                        const struct event_query *q, int flags, char **plan,
                        struct strobe_error *e);

#endif
