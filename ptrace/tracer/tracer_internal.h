/*
 * tracer_internal.h - the tracer's state, shared by its files and by nothing else:
 * the rest of ptrace/ knows the tracer through tracer.h.
 *
 *   tracer.c           the thread: start, wait loop, end; a stop's handling; the
 *                      stop handlers of the entry point, Rust's panic hook, the hooks
 *   tracer_launch.c    fork, seize and exec of the target
 *   tracer_tracees.c   processes, threads and address spaces, and what fork, clone,
 *                      exec and exits do to them
 *   tracer_hold.c      stopping every thread of a space, and letting them go
 *   tracer_commands.c  tracer_call and tracer_read from other threads; the walks
 *                      over images and threads
 *   tracer_throttle.c  the re-arm timer of throttled hooks
 *   traps.c            what a trap on an int3 does; the parking, resuming and
 *                      single-stepping of threads
 *   adopt.c            the runtimes' entries redirected to load their agents
 */
#ifndef STROBE_TRACER_INTERNAL_H
#define STROBE_TRACER_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <time.h>

#include "base/u64map.h"
#include "ptrace/tracer/tracer.h"

#define MAX_PROCS 256
#define MAX_IMAGES 64
#define MAX_HANDLERS 8

/* The signal that interrupts the tracer's waitpid: a command is waiting, or a
 * throttled function is due to be re-armed. Its handler does nothing. */
#define SIG_KICK (SIGRTMIN + 3)
#define REARM_RETRY_MS 20
#define FAST_DRAIN_MS 5   /* the fast path's rings are drained this often */

/* An address space: the main image with its forks, or a child that exec'd. */
struct space {
    pid_t pid;               /* the process that exec'd the image */
    struct bptab *bp;
    struct hooks *hooks;     /* NULL in output-only sessions */
    uint64_t entry;          /* the entry breakpoint's address while armed */
    /* A runtime's entry redirected at its first call (adopt.c), while armed. */
    uint64_t adopt_at, adopt_call;
    int adopt_runtime;
};

enum thread_state {
    TS_RUNNING,
    TS_STOPPED,   /* its stop is being handled */
    TS_HELD,      /* stopped by hold(); pending: the stop it reported, or -1 */
    TS_PARKED,    /* stopped until tracer_resume_thread() */
    TS_UNCLAIMED, /* stopped at its first stop until its creator's fork or clone
                     event is seen (tracer_tracees_first_stop) */
};

struct tthread {
    pid_t tid, tgid;
    enum thread_state state;
    int pending;
    bool in_vfork;   /* blocked in vfork until the child execs or exits: it runs no
                        code and would not stop for an interrupt before that */
    bool exiting;    /* past PTRACE_EVENT_EXIT: runs no more code (a leader may stay
                        a zombie until its other threads end) */
    bool stepping;   /* resumed with PTRACE_SINGLESTEP (tracer_step): its next trap
                        goes to the debugger, and it resumes stepping after events */
    bool step_cancelled; /* that trap is to be swallowed (tracer_cancel_step) */
    bool park_requested; /* an all-stop came while its own stop was being handled
                            (TS_STOPPED): it parks instead of resuming (step_past) */
    pid_t creator;   /* TS_UNCLAIMED: the process whose event claims it (its thread
                        group for a thread, its parent for a process) */
};

struct stop_handler {
    const char *name;
    enum bp_owner owner;
    tracer_stop_fn fn;
    void *arg;
};

/* Threads stopped by one hold(), for its release(). */
struct held {
    pid_t *tids;
    size_t n, cap;
};

struct tracer {
    struct tracer_spec spec;
    pthread_t thread;
    pid_t thread_tid;       /* for tgkill */
    sem_t started;
    pid_t main_pid;
    bool main_alive;
    struct strobe_error start_error;
    int start_failed;
    pthread_mutex_t lock;   /* guards procs and the command slot */
    pid_t procs[MAX_PROCS];
    int n_procs;
    bool killing;                /* tracer_kill ran: a process that appears later (a fork
                                    under way then) is killed as it is added */
    /* One command at a time, from tracer_call(). */
    pthread_cond_t cmd_done;
    void (*cmd_fn)(struct tracer *t, void *arg);
    void *cmd_arg;
    bool cmd_pending, cmd_ran, finished;
    bool cmd_hold;           /* tracer_call (hold every thread) or tracer_read */
    struct space main;       /* the program and its forks */
    struct space images[MAX_IMAGES]; /* processes that exec'd another program */
    int n_images;
    struct u64map threads;   /* tid -> struct tthread */
    struct stop_handler handlers[MAX_HANDLERS]; /* by owner (enum bp_owner order) */
    int n_handlers;
    struct tracer_debugger debugger; /* steps and thread ends (tracer_set_debugger) */
    int64_t seq;             /* event sequence shared by all hooks */
    struct hook_output output; /* the pipes of spec.stdout_fd and stderr_fd */
    bool output_told;        /* output_settled last told a finite floor (tracer.c) */
    struct crash *crash;
    struct hwwatch *hw;      /* data watchpoints (NULL in output-only sessions) */
    timer_t rearm_timer;
    bool has_timer;
    int64_t woke_ns;         /* CLOCK_MONOTONIC when waitpid last returned a stop */
    int64_t floor;           /* the floor of spec.sink.ring (tracer.c: time order) */
    bool throttle_due;       /* a hit throttled a function: the loop patches */
    bool fast_timer_on;      /* the timer drains the fast path's rings */
    cpu_set_t original_cpus; /* the affinity new threads of the target get back */
    bool pinned;             /* tracer and main thread share a CPU (tracer_pin) */
};

/* ---- adopt.c ---- */

/* At sp's entry point (pid stopped, the image held): arms the redirect of the
 * first runtime whose symbols the image exports. */
void adopt_at_entry(struct tracer *t, struct space *sp, pid_t pid);
/* The stop handler of BP_ADOPT. */
enum bp_verdict adopt_stop(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg);

/* ---- stops.c ---- */

/* The loop's handling of one stop of tid, with its thread state kept. */
void stops_on(struct tracer *t, pid_t tid, int status);
/* What one stop of pid means (an event, a trap, a signal), and its resumption. */
void stops_handle(struct tracer *t, pid_t pid, int status);

/* ---- tracer_launch.c ---- */

/* Forks, seizes and runs the target up to its exec. Returns 0 with the target
 * stopped at PTRACE_EVENT_EXEC, or -1 with t->start_error set. */
int tracer_launch(struct tracer *t);

/* ---- tracer_tracees.c ---- */

/* The processes (guarded by t->lock); remove says whether pid was one. */
void tracer_tracees_procs_add(struct tracer *t, pid_t pid);
bool tracer_tracees_procs_remove(struct tracer *t, pid_t pid);
/* A new thread's record (the one it has already, if any); NULL if out of memory. */
struct tthread *tracer_tracees_thread_add(struct tracer *t, pid_t tid, pid_t tgid);
/* A thread's record; one that stops before its creator's clone event was seen is
 * added. */
struct tthread *tracer_tracees_thread_of(struct tracer *t, pid_t tid);
/* The first stop of a tracee whose creator's fork or clone event has not been seen
 * (the kernel may report the child first): it stays stopped, TS_UNCLAIMED, until
 * that event. Resumed earlier it could hit an int3 copied from its parent, or exec,
 * before the tracer knows which space it belongs to. True when status was such a
 * stop and tid is now waiting; false for any other stop. */
bool tracer_tracees_first_stop(struct tracer *t, pid_t tid, int status);
/* Resumes the tracees still unclaimed whose creator, process tgid, has ended: its
 * event will not come. */
void tracer_tracees_release_unclaimed(struct tracer *t, pid_t tgid);
/* Resumes tid from a stop, delivering sig: a thread being stepped steps on. */
void tracer_tracees_cont(struct tracer *t, pid_t tid, int sig);
/* The space of process tgid / of thread tid / whose image process is pid; NULL. */
struct space *tracer_tracees_space_of_process(struct tracer *t, pid_t tgid);
struct space *tracer_tracees_space_of(struct tracer *t, pid_t tid);
struct space *tracer_tracees_space_by_pid(struct tracer *t, pid_t pid);
/* A fresh space for the image process pid just exec'd; false if out of memory.
 * tracer_tracees_space_free frees its table and hooks; tracer_tracees_image_drop the
 * image space of pid. */
bool tracer_tracees_space_init(struct tracer *t, struct space *sp, pid_t pid);
void tracer_tracees_space_free(struct space *sp);
void tracer_tracees_image_drop(struct tracer *t, pid_t pid);
/* An int3 on the entry point of sp's process (sp->entry). */
void tracer_tracees_arm_entry(struct space *sp);
/* PTRACE_EVENT_EXIT of tid: it resumes to end. */
void tracer_tracees_on_exit_event(struct tracer *t, pid_t tid);
/* PTRACE_EVENT_EXEC of pid: its space starts over, or is a new one. */
void tracer_tracees_on_exec(struct tracer *t, pid_t pid);
/* A fork, vfork or clone event of pid: the new tracee is recorded. Returns its
 * record when it was waiting for this event (TS_UNCLAIMED, tracer_tracees_first_stop): the
 * caller resumes it (tracer_tracees_resume_claimed) or holds it; NULL otherwise. */
struct tthread *tracer_tracees_on_new(struct tracer *t, pid_t pid, int event);
/* Resumes a tracee tracer_tracees_on_new() has just claimed. */
void tracer_tracees_resume_claimed(struct tracer *t, struct tthread *th);
/* A tracee is gone. */
void tracer_tracees_reap(struct tracer *t, pid_t pid, int status);
/* Appends tid to hd (a thread list of the tracer's: held, parked, unclaimed). */
void tracer_tracees_held_add(struct held *hd, pid_t tid);

/* ---- tracer_hold.c ---- */

/* Stops every running thread of sp but except (their stops kept for tracer_hold_release),
 * and lets them run again. */
void tracer_hold(struct tracer *t, const struct space *sp, pid_t except, struct held *hd);
void tracer_hold_release(struct tracer *t, struct held *hd);

/* ---- tracer_commands.c ---- */

/* Runs the command of tracer_call or tracer_read, if one is waiting. */
void tracer_commands_run(struct tracer *t);

/* ---- tracer_throttle.c ---- */

/* The re-arm timer: SIG_KICK to the tracer thread (t->thread_tid set). */
void tracer_throttle_timer_create(struct tracer *t);
void tracer_throttle_timer_delete(struct tracer *t);
/* Patches the throttle changes due at time now in every space (now 0: only those
 * of the functions hits throttled). */
void tracer_throttle_tick(struct tracer *t, int64_t now);
/* Starts the timer that drains the fast path's rings once a space records through
 * it (after commands that armed patterns). */
void tracer_throttle_fast_timer(struct tracer *t);

/* ---- traps.c ---- */

/* A SIGTRAP of tid: asks the owners of the int3 it hit. True when one handled it. */
bool traps_dispatch(struct tracer *t, pid_t tid);
/* A HOOKS_RECORDER_SIGNAL of stopped tid: true when the fast path's recorder sent
 * it and it was handled (hooks_on_recorder_stop); the caller resumes tid without
 * the signal. False for a SIGURG of the program's own. */
bool traps_recorder_stop(struct tracer *t, pid_t tid);
/* A SIGTRAP of th while tracer_step stepped it: true when it was the step's (the
 * debugger has been told), false when it is another trap. */
bool traps_step_trapped(struct tracer *t, pid_t tid, struct tthread *th);

#endif
