/*
 * session.h - debug sessions: launching a target under a collector
 * (core/collector.h), capturing its output into the timeline, recording how it
 * ended, and stopping, retaining or deleting it. This is the engine's front door:
 * mcp/ handlers call these functions and format what they return; nothing here
 * knows about JSON-RPC. Error sentences say what happened; the front end adds what
 * to do next in its own terms (mcp/hints.h).
 *
 * A live session has three threads: the collector's (for native programs the
 * tracer of ptrace/), the output thread (reads stdout/stderr pipes, owns the output
 * ring, records the exit) and the store's writer. Its state after the process ends
 * stays in the database, so a session outlives both its process and the daemon
 * that ran it.
 */
#ifndef STROBE_SESSION_H
#define STROBE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/session_id.h"
#include "core/collector.h"
#include "core/settings.h"

struct store;

/* Binds the module to the store and the global settings file (may be NULL). */
void sessions_init(struct store *store, const char *global_settings_path);
/* Kills every live target, waits for the session threads, records their end. */
void sessions_shutdown(void);
/* Sessions whose main process still runs (the daemon does not idle out with any). */
int sessions_running(void);

/* Settings as seen from projectRoot (NULL: global layers only). */
void sessions_settings(const char *project_root, struct settings *out);

struct launch_request {
    const char *command;
    const char *const *args;   /* argv[1..], n_args of them */
    int n_args;
    const char *cwd;           /* NULL: the command's directory */
    const char *project_root;
    const char *const *env;    /* "KEY=VALUE" entries added to the daemon's env */
    int n_env;
    /* Trace patterns, watches and breakpoints of this launch (patterns checked by the
     * caller, breakpoints numbered by debug_breakpoints_for_launch); when explicit,
     * these replace the staged ones (which stay staged for later launches). */
    bool explicit_tracing;
    const char *const *patterns;
    int n_patterns;
    const struct trace_watch_spec *watches;
    int n_watches;
    const struct collector_breakpoint *breakpoints;
    int n_breakpoints;
    /* Optional: sees every byte of output (core/output.h's tap) and, once it is all
     * read, the main process's wait status; on the session's output thread. */
    void (*tap)(void *tap_arg, int stream, const char *buf, size_t n);
    void (*tap_ended)(void *tap_arg, int wait_status);
    void *tap_arg;
};

struct launch_result {
    char session_id[SESSION_ID_MAX];
    int pid;
    struct settings settings;  /* as applied, with their warnings */
    int n_warnings;            /* about the program itself (no debug info, ...) */
    char warnings[2][512];
    int pending_applied;       /* pending trace patterns armed before main */
    int pending_watches;       /* pending trace watches added once it ran */
    char watch_warning[512];   /* pending watches that could not be added ("": none) */
    int staged_breakpoints;    /* breakpoints armed at the launch (staged, or the launch's
                                  own) (debug.h): list them
                                  with debug_breakpoints_list to see how each bound */
};

int session_launch(const struct launch_request *req, struct launch_result *res,
                   struct strobe_error *e);

/* Resolves id to its store key, after making every event produced so far
 * queryable (store_sync). */
int session_resolve(const char *id, int64_t *key, struct strobe_error *e);

/* The engine's answer for an id no session has: -1 with SESSION_NOT_FOUND in e. */
int session_not_found(const char *id, struct strobe_error *e);

/* Whether live session id's output went over the capture's cap (core/output.h); false
 * for a session not live. For its status (core/timeline.h). */
bool session_output_capped(const char *id);

/* debug_trace in runtime mode: changes the session's patterns and hooks. A session
 * whose process has ended answers PROCESS_EXITED. depth 0 keeps the current one. */
int session_trace(const char *id, const char *const *add, int n_add,
                  const char *const *remove, int n_remove, int depth,
                  struct trace_result *res, struct strobe_error *e);

/* debug_trace's traceMode: how the session's traced calls are recorded from now on
 * (collector trace_mode). NOT_IMPLEMENTED for a collector without it;
 * PROCESS_EXITED once the program is gone. */
int session_trace_mode(const char *id, bool fast, struct strobe_error *e);

/* The session's patterns and what each did when last applied (collector describe:
 * waits until patterns staged for the launch are armed). */
int session_trace_describe(const char *id, struct trace_result *res, struct strobe_error *e);

/* The traced functions' exact calls and the tracer's overhead of a session whose
 * target is still held (running, or ended and not stopped): collector_counts. Of a
 * session stopped with retain or from an earlier daemon: the calls stored when its
 * target was let go (no overhead, mode "stored"). -1 when there are none. */
int session_counts(const char *id, struct collector_counts *out, struct strobe_error *e);

/* The runtimes of live session id's processes, one sentence each into out (max):
 * "Python 3.11.2 process 4242 (setprofile): 2 function(s) of the source traced."
 * Returns how many (0 for a session without one, or not live). */
#define SESSION_RUNTIME_TEXT 320
int session_runtimes(const char *id, char (*out)[SESSION_RUNTIME_TEXT], int max);

/* debug_session stacks: every thread of the session's processes stopped, unwound
 * and resumed (core/collector.h, collector_stacks), with the wait cycles named in
 * out->diagnosis. PROCESS_EXITED when no process runs; NOT_IMPLEMENTED when the
 * collector cannot. Free out with collector_stacks_free. */
int session_stacks(const char *id, const struct collector_stacks_request *req,
                   struct collector_stacks *out, struct strobe_error *e);

/* A live session's target, held for one request: the session cannot end (stop,
 * delete, shutdown wait) until session_target_put. For engine modules that drive a
 * collector slot (core/memory.c, core/watch.c, core/poll.c). -1 with
 * SESSION_NOT_FOUND, or PROCESS_EXITED when its processes are gone. Hold it for one
 * request, never across a wait for the program. */
struct session_target {
    const struct collector_methods *collector;
    struct collector_target *target;
    int64_t key;                 /* the store's session key */
    int64_t t0_ns;               /* the session's clock origin (CLOCK_MONOTONIC) */
    void *session;               /* private */
    pid_t pid;                   /* the main process */
    struct debug_state *debug;   /* its pauses' waiting (core/debug.h) */
};
int session_target_get(const char *id, struct session_target *out, struct strobe_error *e);
void session_target_put(struct session_target *st);
/* session_target_get, also once the session's processes ended (its target is held
 * until stop): for what the collector kept, never to drive the program. */
int session_target_get_ended(const char *id, struct session_target *out,
                             struct strobe_error *e);
/* The store the sessions write to (for modules that add an event producer). */
struct store *sessions_store(void);

/* The pid of session id's process when a daemon that died left it running (this
 * daemon does not trace it; stop kills it), else 0 (core/session_orphan.c). */
pid_t session_left_running(const char *id);

/* Kills the target if it runs (also one a daemon that died left running), then
 * deletes the session's data unless retain. */
int session_stop(const char *id, bool retain, int64_t *events_collected,
                 struct strobe_error *e);
/* Kills the target if it runs and deletes the session's data. */
int session_delete(const char *id, struct strobe_error *e);

/* Whether the session stored under key still has processes this daemon traces (its
 * main process may have ended while children live on): retention never purges
 * those, whose events may still be on their way. arg is unused. */
bool session_key_in_use(void *arg, int64_t key);

#endif
