/*
 * timeline.h - the engine's read API: what a session recorded, as any client of the
 * engine (the MCP handlers, a REPL, a test runner) reads it. Events of a session
 * with every filter of debug_query (spec 003), the processes of a session, the
 * session list, a session's status, and the context a crash event is joined with
 * at read time. Writes stay in core/session.h; this header is the only way out of
 * the database for the layers above core/, which never call store/ themselves and
 * never see its types: this header does not include store/store.h.
 *
 * Threads: a struct timeline_reader owns one read connection and serves one thread
 * at a time (an SQLite connection must not be shared by threads running at once):
 * open one per request thread (the MCP server opens one per client connection).
 *
 * Queries: debug_query's filter is base/event_query.h's struct event_query, the one
 * shape the MCP handler fills and the store plans; this API resolves its relative
 * time bounds, applies its default page, and compiles its patterns into it.
 *
 * Rows: the API's own types (struct timeline_event, timeline_session,
 * timeline_evicted, timeline_function, timeline_status), plain data read by field,
 * so the store's row types stay the store's (they follow its schema, these what a
 * reader is shown; either changes without the other). The store cannot fill these
 * itself, since it may include only base/, and declaring them in base/ would make a
 * utility layer own the engine's read model. So core/timeline.c, the one place that
 * converts, moves each store row into its timeline row: the scalars are copied and
 * the strings change owner, none is duplicated. A page is at most a few hundred
 * rows, and moving one is a few word stores, next to the SQLite work that read it.
 *
 * Errors: functions returning int give 0 on success and -1 with e set. The
 * sentences say what happened, in the engine's terms; the caller adds what to do
 * next in its own (tool names, flags).
 */
#ifndef STROBE_TIMELINE_H
#define STROBE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/event.h"
#include "base/event_query.h"

struct store;
struct timeline_reader;

/* Opens a reader on the daemon's database db (ERR_INTERNAL when its connection
 * cannot be opened). NULL with e set on failure. */
struct timeline_reader *timeline_reader_open(struct store *db, struct strobe_error *e);
/* NULL is fine. */
void timeline_reader_close(struct timeline_reader *rd);

/* ---- events ------------------------------------------------------------------ */

#define TIMELINE_DEFAULT_LIMIT 50

/* One stored event. Strings are malloc'd, NULL when absent; free with
 * timeline_event_free() (a page's with timeline_page_free()). */
struct timeline_event {
    int64_t id;
    int type;                        /* enum event_type */
    int64_t ts_ns;                   /* ns since the session started */
    int32_t pid, tid;
    char *thread_name;
    int64_t parent_id;               /* the call's enter event; 0 = none */
    char *function, *function_raw, *source_file;
    int32_t line;                    /* 0 = absent */
    char *arguments, *return_value;  /* JSON text */
    char *text;
    char *data;                      /* JSON object: the type's own members */
    int64_t duration_ns;             /* -1 = absent */
    bool sampled;                    /* recorded in a sample of the function's calls */
};
/* Frees the strings of one event (not the event). */
void timeline_event_free(struct timeline_event *ev);

/* One page of events. */
struct timeline_page {
    struct timeline_event *events;   /* n of them: chronological (ts, id), or by id
                                        when the query had after_id */
    int n;
    int64_t total_count;             /* matches ignoring limit/offset */
    bool total_is_lower_bound;       /* counting stopped at a cap: total_count is a floor */
    bool has_more;                   /* more matches after this page */
};

/* Events of the session stored under session_key (core/session.h's
 * session_resolve() gives it) matching q; limit 0 reads TIMELINE_DEFAULT_LIMIT.
 * Relative time bounds are resolved against the session's latest event (clamped at
 * 0). q's patterns not yet compiled are compiled into it (q->function_re, q->text_re)
 * and stay there for the next read with q: free them with event_query_free_compiled().
 * An invalid function_matches or text_matches, or one too costly to match, is
 * ERR_VALIDATION (the sentence names which: "the function name pattern ..." / "the
 * text pattern ..."); a database failure is ERR_INTERNAL. totalCount counts matches
 * exactly up to 100,000, beyond which it is a floor (total_is_lower_bound). */
int timeline_events(struct timeline_reader *rd, int64_t session_key, struct event_query *q,
                    struct timeline_page *out, struct strobe_error *e);
void timeline_page_free(struct timeline_page *p);

/* The first event of the session with an id above after_event_id that matches q: the
 * lowest such id (ids grow in commit order); with after_event_id 0, the session's
 * chronologically first match. q's filters apply, its after_id, limit and offset are
 * ignored, and nothing is counted, so it is cheap enough to ask after every stop ("has the
 * awaited event happened yet?"): its patterns are compiled at the first call, as
 * timeline_events() does. 1 with the event in *out (free it with
 * timeline_event_free()), 0 when there is none yet, -1 with e set (errors as
 * timeline_events()). */
int timeline_first_match(struct timeline_reader *rd, int64_t session_key,
                         struct event_query *q, int64_t after_event_id,
                         struct timeline_event *out, struct strobe_error *e);

/* Where the session's timeline stands, in one snapshot: a baseline for "what
 * happened since" (event_query.after_id = last_id; events recorded since = recorded
 * now - recorded then, exact however many the cap evicted). */
struct timeline_mark {
    int64_t last_id;                 /* the highest event id stored (0: none) */
    int64_t recorded;                /* events ever recorded: stored + evicted */
};
int timeline_mark(struct timeline_reader *rd, int64_t session_key, struct timeline_mark *m,
                  struct strobe_error *e);

/* Distinct pids that produced events in the session, ascending; *pids is
 * malloc'd (NULL when *n is 0). */
int timeline_pids(struct timeline_reader *rd, int64_t session_key, int **pids, int *n,
                  struct strobe_error *e);

/* What the session's event cap (events.maxPerSession) evicted from one function. */
struct timeline_evicted {
    char *function;
    int64_t events;                  /* its enters and exits evicted */
    int64_t through_ns;              /* the newest timestamp evicted: its events before
                                        it may be gone, the later ones are all there */
};
/* Every function the cap evicted from, most events first. Free with
 * timeline_evicted_free(). */
int timeline_evicted(struct timeline_reader *rd, int64_t session_key,
                     struct timeline_evicted **rows, int *n, struct strobe_error *e);
void timeline_evicted_free(struct timeline_evicted *rows, int n);

/* What the cap evicted of one event type (zero: nothing). */
struct timeline_evicted_type {
    int64_t events;
    int64_t through_ns;              /* the newest timestamp evicted */
    int64_t through_id;              /* the highest id evicted */
};
/* Every type, indexed by enum event_type. */
int timeline_evicted_types(struct timeline_reader *rd, int64_t session_key,
                           struct timeline_evicted_type out[EV_TYPE_MAX + 1],
                           struct strobe_error *e);
/* The id of the oldest event kept (by time) of the types whose bit (1 << type) is in
 * type_mask; 0 when there is none. */
int64_t timeline_oldest_kept(struct timeline_reader *rd, int64_t session_key,
                             unsigned type_mask);

/* ---- sessions ------------------------------------------------------------------ */

/* A stored session. Strings are malloc'd. */
struct timeline_session {
    char *id;                        /* "name-YYYY-MM-DD-HHhMM[-N]" */
    char *binary_path;
    char *project_root;
    char *command_line;              /* JSON array of argv */
    int pid;                         /* the main process */
    int64_t started_at_ms;           /* unix time, ms */
    int64_t ended_at_ms;             /* 0 while running */
    char *status;                    /* "running", "exited", "crashed", "stopped" */
    int exit_code;                   /* valid when has_exit_code */
    bool has_exit_code;
    char *exit_signal;               /* "SIGSEGV" when killed by a signal, else NULL */
    bool retained;
    int64_t event_count;             /* events stored */
};

/* Every stored session (running, ended, retained), newest first. Free with
 * timeline_sessions_free(). */
int timeline_sessions(struct timeline_reader *rd, struct timeline_session **rows, int *n,
                      struct strobe_error *e);
void timeline_sessions_free(struct timeline_session *rows, int n);

/* A function by its recorded calls (function_enter events). */
struct timeline_function {
    char *function;
    char *function_raw;              /* the internal symbol when it differs, or NULL */
    int64_t count;
    bool sampled;                    /* some of its events are a sample: count (the
                                        events recorded) is a lower bound of its calls */
};

/* What a session reports about itself. */
struct timeline_status {
    struct timeline_session session;
    int64_t counts[EV_TYPE_MAX + 1]; /* events by enum event_type */
    int64_t total_events;
    int *pids;                       /* malloc'd, ascending */
    int n_pids;
    bool output_capped;              /* its output went over the capture's cap */
    struct timeline_function *top;   /* most called functions, at most 10, malloc'd */
    int n_top;
    int64_t lost_events;             /* events the database failed to store */
    char store_error[256];           /* the last such failure */
};

/* The status of session id: its row, event counts by type, pids, the most called
 * functions, whether its output was capped, the database's write failures. Free
 * with timeline_status_free(). Unknown id: ERR_SESSION_NOT_FOUND. */
int timeline_status(struct timeline_reader *rd, const char *id, struct timeline_status *out,
                    struct strobe_error *e);
void timeline_status_free(struct timeline_status *st);

/* ---- the database's own condition ------------------------------------------------- */

/* What answers say about the database itself (core/timeline_store.c), sentences in
 * the engine's terms, "" when there is nothing to say. */
struct timeline_store_note {
    char full[5120];         /* its disk is full: since when, what is lost, what is kept,
                                when the note goes */
    char set_aside[4096];    /* the file a damaged database was moved to at start */
    char set_aside_why[5120]; /* what was found there, and where its sessions are now */
};
void timeline_store_note(struct store *db, struct timeline_store_note *out);

/* ---- crash context --------------------------------------------------------------- */

/* What a crash event is joined with when it is read: the events that led to it and
 * the language runtime's own account of the failure, parsed from the stderr lines
 * before it (base/failure_text.h). They are joined at read time because the crash
 * is recorded on the tracer thread while those lines are still on their way through
 * the output capture; by the time anyone reads, both are stored. The JSON shape
 * these take in the event is core/crash_payload.h's. */
struct timeline_crash_context {
    bool has_before;                 /* the events before could be read */
    struct timeline_page before;     /* up to CRASH_LAST_EVENTS of them, oldest first,
                                        the crash itself left out */
    const char *account_name;        /* "exception", "panic" or "sanitizer": the account
                                        this kind of crash may have (NULL: none, or the
                                        event carries its own) */
    char *account_json;              /* that account, a JSON object; NULL when stderr
                                        had none */
    int64_t report_first_id;         /* sanitizer: the event ids of the first and last */
    int64_t report_last_id;          /* lines of its report; 0 when unknown */
};

/* Joins crash, a crash event of the session stored under session_key. Fills what it
 * can: on a database failure, -1 with e set and the parts read so far in *out
 * (free it either way). */
int timeline_crash_context(struct timeline_reader *rd, int64_t session_key,
                           const struct timeline_event *crash,
                           struct timeline_crash_context *out, struct strobe_error *e);
void timeline_crash_context_free(struct timeline_crash_context *c);

#endif
