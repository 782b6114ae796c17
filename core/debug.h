/*
 * debug.h - the engine's side of breakpoints, pauses and steps (debug_breakpoint,
 * debug_continue): staged breakpoints for the next launch and breakpoint ids
 * (core/breakpoints.c), and the waiting that lets debug_continue answer with the next
 * stop instead of "ok" (core/debug.c).
 *
 * Each session has a debug_state: a condition variable that the collector's
 * `paused` callback and the main process's end signal, so a waiting request wakes at
 * the stop. A request holds the session (session_target_get) only to act; it waits
 * holding a reference to the debug_state alone, so stopping the session never waits
 * for it (the wait ends with the session).
 *
 * Connections: the MCP connection that last set breakpoints or resumed a session is
 * its controller. When it closes, the session's breakpoints go (logpoints stay) and
 * every paused thread resumes, so nothing stays frozen with nobody to continue it.
 * Connections of one-shot clients (strobectl, one command per connection) never
 * control (debug_conn.transient).
 */
#ifndef STROBE_DEBUG_H
#define STROBE_DEBUG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "core/collector.h"
#include "core/timeline.h"

#define DEBUG_ADD_MAX 16          /* specs in one debug_breakpoint add */
#define DEBUG_LIST_MAX (BREAKPOINTS_MAX + LOGPOINTS_MAX)
#define DEBUG_TIMEOUT_DEFAULT_MS 10000
#define DEBUG_TIMEOUT_MAX_MS 60000
#define DEBUG_MEMORY_POLL_MS 5    /* until memory: how often the condition is read */
#define DEBUG_EVENT_POLL_MS 20    /* until event: how often the timeline is asked */
#define DEBUG_OUTPUT_LINES 5      /* output lines a "still running" answer shows */
#define DEBUG_WATCH_HITS 4        /* watchpoint hits an answer quotes */
#define DEBUG_EXIT_POLL_MS 10     /* the main process ended: how often the wait looks
                                     whether the session has recorded it */

/* Who asks: the connection, and whether it outlives one request. */
struct debug_conn {
    uint64_t id;                  /* > 0, unique in the daemon */
    bool transient;
};

/* ---- per session (core/session.c) ---- */
struct debug_state;
struct debug_state *debug_state_new(const char *session_id);
/* The session ended (stopped, deleted, daemon shutdown): waiters wake; the state goes
 * with its last reference. */
void debug_state_end(struct debug_state *d);
/* collector_events.paused. */
void debug_state_notify(struct debug_state *d);
/* The main process ended with wait status ws. */
void debug_state_exited(struct debug_state *d, int ws);

/* The session's controlling connection is conn now (a transient one never is). */
void debug_state_control(struct debug_state *d, const struct debug_conn *conn);

/* ---- breakpoints ---- */

/* Adds specs[0..n) to session id, or stages them when id is NULL; all or nothing.
 * Fills out[0..n) (staged: id and the spec's line, no locations). Ids are unique in
 * the daemon. */
int debug_breakpoints_add(const char *id, const struct debug_conn *conn,
                          struct collector_breakpoint *specs, int n,
                          struct collector_bp_info *out, struct strobe_error *e);
/* Breakpoints of one launch only (debug_launch's own, not staged): checks specs[0..n)
 * as an add does (conditions, the limits) and numbers them with fresh ids. */
int debug_breakpoints_for_launch(struct collector_breakpoint *specs, int n,
                                 struct strobe_error *e);
/* Removes ids[0..n), or everything (all). removed[] gets the ids that went. -1 with
 * BREAKPOINT_NOT_FOUND naming the unknown id (nothing is removed then). */
int debug_breakpoints_remove(const char *id, const int *ids, int n, bool all, int *removed,
                             int *n_removed, struct strobe_error *e);
/* The breakpoints of session id (or the staged ones), up to max; *n how many. */
int debug_breakpoints_list(const char *id, struct collector_bp_info *out, int max, int *n,
                           struct strobe_error *e);
/* How the breakpoints staged for session id's launch bound at its entry point
 * (failures included, one-shots that fired since too), up to max; *n how many. */
int debug_breakpoints_launched(const char *id, struct collector_bp_info *out, int max, int *n,
                               struct strobe_error *e);
/* The staged specs, as a launch takes them (copies the engine keeps until
 * debug_staged_free). */
struct debug_staged;
struct debug_staged *debug_staged_take(const struct collector_breakpoint **specs, int *n);
void debug_staged_free(struct debug_staged *s);

/* ---- continue, step, pause, until ---- */

enum debug_action { DA_CONTINUE, DA_STEP_OVER, DA_STEP_INTO, DA_STEP_OUT, DA_PAUSE, DA_UNTIL };
enum debug_until { UNTIL_NONE, UNTIL_BREAKPOINT, UNTIL_EVENT, UNTIL_MEMORY };

struct debug_continue_req {
    enum debug_action action;
    pid_t tid;                    /* 0: every paused thread (continue), the newest pause
                                     (steps) */
    int timeout_ms;
    enum debug_until until;
    int breakpoint_id;
    struct event_query *event;    /* its after_id is honoured; its patterns are compiled
                                     into it at the first check (core/timeline.h) */
    struct timeline_reader *rd;
    const char *memory;           /* a condition over globals */
};

enum debug_state_kind { DS_PAUSED, DS_RUNNING, DS_EXITED };

struct debug_outcome {
    enum debug_state_kind state;
    int n_resumed;                /* continue, until: the pauses it ended (up to 8 of them
                                     described; the count is exact) */
    struct collector_pause resumed[8];
    struct collector_pause pause; /* DS_PAUSED: the stop */
    int n_paused;                 /* threads paused now */
    int n_others;                 /* DS_PAUSED: the other paused threads (up to 8 of them
                                     described; n_paused counts them all) */
    struct collector_pause others[8];
    struct collector_stacks stack; /* DS_PAUSED: the stopped thread, with arguments and
                                     the innermost frame's locals (n_threads 0: none) */
    struct collector_stacks others_stack; /* DS_PAUSED: others[]'s stacks, no locals
                                     (where each is in the program's code, what it
                                     waits for) */
    bool has_condition, condition_met;
    bool has_event;
    struct timeline_event event;  /* until event */
    char values[1024];            /* until memory: "path=value, ..." */
    bool exited_normally;
    int exit_code, signal;
    int64_t waited_ms;
    int64_t events_meanwhile;     /* recorded while it ran, exactly */
    int64_t evicted_meanwhile;    /* of those, the ones the event cap evicted already */
    int64_t baseline_id;          /* the timeline's last event id when the call began:
                                     afterEventId for what the answer left out */
    int n_output;
    char output[DEBUG_OUTPUT_LINES][256];
    int64_t stdout_total, stderr_total; /* lines since the baseline */
    int n_watch_hits;             /* the first watch_hit texts since the baseline: a
                                     step or a run to a breakpoint may pass some */
    char watch_hits[DEBUG_WATCH_HITS][256];
    int64_t watch_hits_total;
};

int debug_continue(const char *id, const struct debug_conn *conn,
                   const struct debug_continue_req *req, struct debug_outcome *out,
                   struct strobe_error *e);
void debug_outcome_free(struct debug_outcome *o);

/* How many breakpoints are staged for the next launch. */
int debug_staged_count(void);

/* The paused threads of session id, up to max; returns how many (0 when the session
 * is not live). */
int debug_pauses(const char *id, struct collector_pause *out, int max);

/* Connection conn closed: the sessions it controlled drop their breakpoints and
 * resume their paused threads. */
void debug_release_connection(uint64_t conn);

#endif
