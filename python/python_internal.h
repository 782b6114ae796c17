/*
 * python_internal.h - the files of the Python collector, and what they share:
 *
 *   collector.c  the collector's slots (python.h): adoption, patterns, counts, end
 *   stops.c      its breakpoint, pause, step and memory slots (the agent's breaks.py)
 *   link.c       one agent's connection: the socket, its checks, the reader thread
 *                that turns the agent's lines into events, commands and replies
 *   agent.c      the agent's files written where the target loads them from
 *   loader.c     the Python text the target runs first (PyRun_SimpleString)
 */
#ifndef STROBE_PYTHON_INTERNAL_H
#define STROBE_PYTHON_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/error.h"
#include "base/ring.h"
#include "core/collector.h"
#include "core/patterns.h"

/* How long a command waits for the agent: an interpreter busy in native code with
 * the GIL held cannot answer, and the daemon never waits for it longer. */
#define COMMAND_MS 5000

/* One adopted Python process (collector.c). */
struct collector_target {
    struct pylink *link;
    pid_t pid;
    int64_t t0_ns;
    struct collector_tuning tuning;
    pthread_mutex_t lock;          /* one pattern change at a time; the fields below */
    char patterns[PATTERNS_MAX][PATTERN_MAX_LEN];
    int n_patterns, depth;
    struct pattern_result results[PATTERNS_MAX]; /* the agent's last answer, by pattern */
    char bps_path[PATH_MAX];       /* python_start_bps's file, removed at the end */
};

/* ---- stops.c: core/collector.h's breakpoint, pause and memory slots ---- */

int python_breakpoint_set(struct collector_target *t, const struct collector_breakpoint *bp,
                          struct collector_bp_info *out, struct strobe_error *e);
int python_breakpoint_clear(struct collector_target *t, int id, struct strobe_error *e);
int python_breakpoint_list(struct collector_target *t, struct collector_bp_info *out, int max);
int python_pauses(struct collector_target *t, struct collector_pause *out, int max);
int python_pause(struct collector_target *t, pid_t pid, struct strobe_error *e);
int python_resume(struct collector_target *t, pid_t tid, enum collector_resume how,
                  struct strobe_error *e);
int python_evaluate(struct collector_target *t, pid_t pid, const char *condition, bool *result,
                    char *values, size_t cap, struct strobe_error *e);
int python_memory(struct collector_target *t, const struct collector_mem_request *req,
                  struct collector_mem_result *out, struct strobe_error *e);
/* The breakpoints a process starts with, written for its agent to read (and remove)
 * at its start: a JSON file beside its socket sock (in the daemon's 0700 directory,
 * 0600, created here, never one that was there). path gets its name, "" when n is
 * 0. 0, or -1 with e. */
int python_start_bps(const char *sock, const struct collector_breakpoint *bps, int n,
                     char *path, size_t cap, struct strobe_error *e);

/* ---- agent.c ---- */

/* Writes the agent's package under state_dir/python/agent (0700, files 0600) and
 * puts that directory in dir. 0, or -1 with e. */
int python_agent_install(const char *state_dir, char *dir, size_t cap, struct strobe_error *e);

/* ---- loader.c ---- */

/* What an agent starts with. */
struct python_start {
    const char *agent_dir;       /* where the package is (python_agent_install) */
    const char *sock, *token;    /* its channel (link.c) */
    const char *project_root;
    const char *const *patterns; /* armed before the program's code runs */
    int n_patterns, depth;
    int64_t sample_after;        /* trace.sampleAfter */
    int64_t hot_calls_per_second; /* trace.hotCallsPerSecond */
    const char *bps_file;        /* breakpoints to set first (python_start_bps), or "" */
};

/* The string the target runs first: loads the agent from st->agent_dir without
 * touching sys.path and starts it with st (patterns and breakpoints set before it
 * returns); an interpreter too old, or a load that fails, says so on the socket
 * instead of the program's stderr. -1 when it does not fit cap. */
int python_loader(char *buf, size_t cap, const struct python_start *st);

/* ---- link.c ---- */

struct pylink;
struct collector_pause;

/* A listening socket STATE/python/PID-XXXX.sock (0600) for process pid's agent,
 * and the thread that accepts it (peer uid and pid checked, then the token) and
 * pushes its events into sink; paused(paused_arg) runs at each change of the
 * process's paused threads (a pause, a resume, the end). NULL with e. */
struct pylink *pylink_open(const char *state_dir, pid_t pid, struct event_sink sink,
                           void (*paused)(void *), void *paused_arg, struct strobe_error *e);
/* The threads paused now, as the agent said (no round trip): up to max into out;
 * returns how many. */
int pylink_pauses(struct pylink *l, struct collector_pause *out, int max);
/* Thread tid (0: every thread) was resumed: its pauses up to upto_seq are forgotten
 * (a newer one may have come before the resume's reply: a step that ended at once),
 * and paused() told. */
void pylink_resumed(struct pylink *l, pid_t tid, int64_t upto_seq);
const char *pylink_socket(const struct pylink *l);
const char *pylink_token(const struct pylink *l);
/* Sends {"op": op, ...fields} and waits (timeout_ms at most) for its reply, which
 * it returns (the caller deletes it); NULL with e: PROCESS_EXITED (the agent is
 * gone), ATTACH_FAILED (no answer: the interpreter is busy in native code holding the GIL,
 * or paused), or the agent's own error (its code when it gave one, else INTERNAL).
 * fields is taken over. */
cJSON *pylink_command(struct pylink *l, const char *op, cJSON *fields, int timeout_ms,
                      struct strobe_error *e);
/* The final counts the agent sent as its interpreter exited (a copy the caller
 * deletes), or NULL. */
cJSON *pylink_final_counts(struct pylink *l);
/* What the agent said at its start: its interpreter's version and hooks ("" before),
 * or why it did not start (an error sentence; "" when it did). */
void pylink_hello(struct pylink *l, char *version, char *hooks, char *error, size_t cap);
/* Whether the agent's connection ended (or never came and never will). */
bool pylink_closed(struct pylink *l);
/* Ends the connection (the process is being killed); pylink_free then joins. */
void pylink_shutdown(struct pylink *l);
void pylink_free(struct pylink *l);

#endif
