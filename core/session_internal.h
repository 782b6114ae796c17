/*
 * session_internal.h - private declarations shared by the files of the session module
 * (session.h): the live session, the registry of live sessions, and the steps of a
 * session's life that one file hands the next: session.c (the registry, lookups and
 * the requests that reach a live collector), session_launch.c (a target launched),
 * session_output.c (its output capture and what its collector reports), session_end.c
 * (stop, delete, shutdown and teardown), session_status.c (output cap and call counts),
 * session_adopt.c (runtime collectors' targets), session_joint.c (all of them as one).
 * Nothing outside these files includes it.
 */
#ifndef STROBE_SESSION_INTERNAL_H
#define STROBE_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/collector.h"
#include "core/session.h"
#include "store/store.h"

/* A runtime collector's target in one process of a session (session_adopt.c). */
#define SESSION_LAYERS_MAX 16
struct session_layer {
    const struct collector_methods *collector;
    struct collector_target *target;
    struct ring *ring;           /* its events; the store drains and frees it */
};

/* A session this daemon launched, from its launch until it ends (session_end.c). */
struct session {
    char id[SESSION_ID_MAX];
    int64_t key;
    pid_t pid;
    char *binary_path;
    int64_t t0_ns;               /* CLOCK_MONOTONIC at launch */
    const struct collector_methods *collector;
    struct collector_target *target; /* NULL until launched */
    struct ring *collector_ring; /* function events, produced by the collector */
    struct ring *ring;           /* the output capture's, until it starts */
    bool ring_attached;          /* the store drains (and will free) it */
    int out_fd, err_fd;          /* read ends, until the output capture starts */
    pthread_mutex_t exit_lock;   /* hands the main process's end to the output capture */
    struct output *output;       /* set under exit_lock once started */
    pthread_cond_t output_ready; /* output set, or output_failed */
    bool output_failed;
    bool exited;                 /* the main process ended before the capture started */
    bool follow_output;          /* the collector followed the writes before the
                                    capture started (session_output.c) */
    struct early_write *early;   /* writes it told of before the capture started, */
    size_t n_early, cap_early;   /* told to it once it has (exit_lock) */
    int exit_status;
    _Atomic int stop_requested;
    _Atomic int finished;        /* status recorded in the store */
    int64_t output_cap;
    bool order_output;           /* output.orderAtTraps: drain the pipes at each trap */
    struct collector_tuning tuning;
    int pending;                 /* pending patterns preloaded at launch */
    struct debug_state *debug;   /* pauses and their waiters (core/debug.h) */
    void (*tap)(void *, int, const char *, size_t); /* launch_request's tap */
    void (*tap_ended)(void *, int);
    void *tap_arg;
    int users;                   /* requests holding the session (session_acquire,
                                    session_target_get), under sessions.lock */
    char *project_root;
    /* Runtime collectors' targets in the program's processes (session_adopt.c),
     * and the patterns in force that a process adopted later starts with; under
     * layers_lock. */
    pthread_mutex_t layers_lock;
    struct session_layer layers[SESSION_LAYERS_MAX];
    int n_layers;
    char active[PATTERNS_MAX][PATTERN_MAX_LEN];
    int n_active, active_depth;
    struct collector_target *joint;  /* what session_target_get hands out: every
                                        collector of the session as one (session_joint.c),
                                        with its methods */
    const struct collector_methods *joint_methods;
    void (*paused)(void *);          /* the launch's collector_events.paused, for the
                                        layers' pauses too */
    /* The breakpoints in a runtime's code (session_joint.c): set in each layer of
     * that runtime, and given to each adopted later; the specs are the session's. */
    struct collector_breakpoint runtime_bps[BREAKPOINTS_MAX + LOGPOINTS_MAX];
    int n_runtime_bps;
    struct session *next;
};

/* The registry of live sessions (session.c). */
#define SESSION_IDS_ISSUED 256  /* ids this daemon gave out, never given again */

struct session_registry {
    pthread_mutex_t lock;        /* guards the list, launches and issued */
    pthread_cond_t unused;       /* a session's users dropped to 0 */
    struct session *live;
    struct store *store;
    const char *global_settings;
    /* The last ids given out: a stopped (deleted) session's id is not reused, so an
     * agent's old reference never names a newer run. A ring. */
    char issued[SESSION_IDS_ISSUED][SESSION_ID_MAX];
    int n_issued, next_issued;
};
extern struct session_registry sessions;

/* CLOCK_REALTIME in milliseconds: the session row's times. */
int64_t session_wall_ms(void);
/* The live session id; NULL when none. Called with sessions.lock held. */
struct session *session_find_live(const char *id);

/* A session of a daemon that died (session_orphan.c): the pid of its process if that
 * still runs (its start time is the session's), else 0. */
pid_t session_orphan_pid(const struct session_row *row);
/* SIGKILLs that process and waits (5 s at most) for it to go; -1 with a sentence. */
int session_orphan_kill(const char *id, pid_t pid, struct strobe_error *e);
/* The live session id, kept alive (users) until session_release(); NULL with e set
 * to SESSION_NOT_FOUND, or to PROCESS_EXITED for a stored session whose process no
 * daemon runs now. */
struct session *session_acquire(const char *id, struct strobe_error *e);
void session_release(struct session *s);

/* Starts the output capture of a launched target; 0 or -1 (session_output.c). */
int session_output_start(struct session *s);
/* The collector's events about s's target, for its launch (session_output.c). */
struct collector_events session_collector_events(struct session *s);

/* Runtime collectors (session_adopt.c). collector_events.adopt for s's launch. */
bool session_adopt(void *arg, int rule, pid_t pid, char *buf, size_t cap);
/* The patterns in force now, from a process collector's answer (or the launch's
 * pending ones): what a process adopted later starts with. */
void session_layers_remember(struct session *s, const char *const *patterns, int n, int depth);
/* Each runtime target's share of a pattern change (or, with change false, of a
 * describe) merged into res, which the process collector filled. */
void session_layers_trace(struct session *s, bool change, const char *const *add, int n_add,
                          const char *const *remove, int n_remove, int depth,
                          struct trace_result *res);
/* Joins the runtime targets' stacks to out, the process collector's: a thread both
 * know shows the runtime's frames (the interpreter's own C frames say nothing) and
 * its wait when the runtime names one; the native state and system call stay. */
void session_layers_stacks(struct session *s, const struct collector_stacks_request *req,
                           struct collector_stacks *out);
/* Appends the runtime targets' counts to out. */
void session_layers_counts(struct session *s, struct collector_counts *out);
/* kill, then join (and forget) every runtime target. */
void session_layers_kill(struct session *s);
void session_layers_join(struct session *s);

/* The session's collectors as one (session_joint.c): its methods, and its target for
 * s (NULL when out of memory). */
extern const struct collector_methods session_joint;
struct collector_target *session_joint_new(struct session *s);
void session_joint_free(struct collector_target *j);
/* A launch's breakpoints: those in a runtime's code kept in s (pending until a
 * process runs it), the others copied into native (n at most, not owned): returns
 * how many, or -1 with e. */
int session_joint_launch_bps(struct session *s, const struct collector_breakpoint *bps, int n,
                             struct collector_breakpoint *native, struct strobe_error *e);
/* s's breakpoints in collector m's runtime, for a process it adopts: into out (max;
 * the strings stay s's), called with s->layers_lock held; returns how many. */
int session_joint_bps_of(struct session *s, const struct collector_methods *m,
                         struct collector_breakpoint *out, int max);

/* Frees s, its pipes and rings included (session_end.c). */
void session_free(struct session *s);

#endif
