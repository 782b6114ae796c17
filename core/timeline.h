/*
 * timeline.h - the engine's read API: what a session recorded, as any client of the
 * engine (the MCP handlers, a REPL, a test runner) reads it. Events of a session
 * with every filter of debug_query (spec 003), the processes of a session, the
 * session list, a session's status, and the context a crash event is joined with
 * at read time. Writes stay in core/session.h; this header is the only way out of
 * the database for the layers above core/, which never call store/ themselves.
 *
 * Threads: a struct timeline_reader owns one read connection and serves one thread
 * at a time (an SQLite connection must not be shared by threads running at once):
 * open one per request thread (the MCP server opens one per client connection).
 *
 * Rows: events and sessions come back as the store's row types (struct
 * store_event_row, struct session_row: plain data, read by field); every call that
 * touches the database goes through a timeline_* function.
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
#include "core/session.h"
#include "store/store.h"

struct timeline_reader;

/* Opens a reader on the daemon's database db (ERR_INTERNAL when its connection
 * cannot be opened). NULL with e set on failure. */
struct timeline_reader *timeline_reader_open(struct store *db, struct strobe_error *e);
/* NULL is fine. */
void timeline_reader_close(struct timeline_reader *rd);

/* ---- events ------------------------------------------------------------------ */

#define TIMELINE_DEFAULT_LIMIT 50

/* A time bound: ns since the session started, or (relative) an offset <= 0 from
 * the session's latest event, as base/timearg.h parses "-5s". */
struct timeline_bound {
    bool set;
    bool relative;
    int64_t ns;
};

enum timeline_return_filter {
    TIMELINE_RETURN_ANY = 0,
    TIMELINE_RETURN_NULL,      /* function_exit events whose return value is absent or null */
    TIMELINE_RETURN_NOT_NULL,  /* function_exit events with a non-null return value */
};

/* The filters of debug_query; a zeroed struct matches every event of the session,
 * first page. Strings are borrowed for the duration of the call. */
struct timeline_query {
    int event_type;                  /* 0 = any, else enum event_type */
    const char *function_equals;
    const char *function_contains;
    const char *function_matches;    /* regular expression (base/regex.h) */
    const char *file_equals, *file_contains;
    const char *return_equals;       /* JSON text; a number matches numerically (1.0 = 1) */
    enum timeline_return_filter return_null;
    const char *thread_name_contains;
    /* The event's text: output lines, logpoint messages, crash, pause and exit texts.
     * A case-sensitive substring, and a regular expression (base/regex.h) found
     * anywhere in it; both may be set (AND). Events without text never match. */
    const char *text_contains;
    const char *text_matches;
    struct timeline_bound from, to;  /* inclusive */
    int64_t min_duration_ns;         /* 0 = no filter */
    int pid;                         /* 0 = any process */
    bool open_calls;                 /* only calls entered and not returned (store.h) */
    int64_t after_id;                /* 0 = none; else only later ids, in id order */
    int limit;                       /* 0 = TIMELINE_DEFAULT_LIMIT */
    int offset;
};

/* One page of events. */
struct timeline_page {
    struct store_event_row *events;  /* n of them: chronological (ts, id), or by id
                                        when the query had after_id */
    int n;
    int64_t total_count;             /* matches ignoring limit/offset */
    bool total_is_lower_bound;       /* counting stopped at a cap: total_count is a floor */
    bool has_more;                   /* more matches after this page */
};

/* Events of the session stored under session_key (core/session.h's
 * session_resolve() gives it) matching q. Relative time bounds are resolved
 * against the session's latest event (clamped at 0). An invalid function_matches or
 * text_matches, or one too costly to match, is ERR_VALIDATION (the sentence names
 * which: "the function name pattern ..." / "the text pattern ..."); a database
 * failure is ERR_INTERNAL. totalCount counts matches exactly up to 100,000, beyond
 * which it is a floor (total_is_lower_bound). */
int timeline_events(struct timeline_reader *rd, int64_t session_key,
                    const struct timeline_query *q, struct timeline_page *out,
                    struct strobe_error *e);
void timeline_page_free(struct timeline_page *p);

/* The first event of the session with an id above after_event_id that matches q: the
 * lowest such id (ids grow in commit order); with after_event_id 0, the session's
 * chronologically first match. q's filters apply, its after_id, limit and offset are
 * ignored, and nothing is counted, so it is cheap enough to ask after every stop ("has the
 * awaited event happened yet?"). 1 with the event in *out (free it with
 * store_event_row_free()), 0 when there is none yet, -1 with e set (errors as
 * timeline_events()). */
int timeline_first_match(struct timeline_reader *rd, int64_t session_key,
                         const struct timeline_query *q, int64_t after_event_id,
                         struct store_event_row *out, struct strobe_error *e);

/* The highest event id the session has in the database so far (0: none): a
 * baseline for "what happened since" (timeline_query.after_id). */
int64_t timeline_last_id(struct timeline_reader *rd, int64_t session_key);

/* Distinct pids that produced events in the session, ascending; *pids is
 * malloc'd (NULL when *n is 0). */
int timeline_pids(struct timeline_reader *rd, int64_t session_key, int **pids, int *n,
                  struct strobe_error *e);

/* What the session's event cap (events.maxPerSession) evicted: function events per
 * function, most first (store.h's struct store_evicted: events, and through_ns, the
 * newest timestamp evicted). Free with timeline_evicted_free(). */
int timeline_evicted(struct timeline_reader *rd, int64_t session_key,
                     struct store_evicted **rows, int *n, struct strobe_error *e);
void timeline_evicted_free(struct store_evicted *rows, int n);

/* ---- sessions ------------------------------------------------------------------ */

/* Every stored session (running, ended, retained), newest first. Free with
 * timeline_sessions_free(). */
int timeline_sessions(struct timeline_reader *rd, struct session_row **rows, int *n,
                      struct strobe_error *e);
void timeline_sessions_free(struct session_row *rows, int n);

/* The status of session id: its row, event counts by type, pids, the most called
 * functions, whether its output was capped, the database's write failures. Free
 * with session_status_free(). Unknown id: ERR_SESSION_NOT_FOUND. */
int timeline_status(struct timeline_reader *rd, const char *id, struct session_status *out,
                    struct strobe_error *e);

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
                           const struct store_event_row *crash,
                           struct timeline_crash_context *out, struct strobe_error *e);
void timeline_crash_context_free(struct timeline_crash_context *c);

#endif
