/*
 * tracer.h - one tracer thread per session: it forks the target, seizes it with
 * ptrace before exec, and owns it (and every thread and child it creates) until the
 * last of them is gone. ptrace requires every request for a tracee to come from the
 * thread that attached, which is why all of this lives on one thread.
 *
 * Launch sequence: the child puts itself in its own process group, wires its stdio,
 * stops itself with SIGSTOP and, once seized and continued, calls execve. The
 * tracer sees PTRACE_EVENT_EXEC: the new image is mapped and no instruction of it
 * has run. That is the point where breakpoints get armed; then the target resumes.
 * An execve failure travels back through a close-on-exec pipe as an errno.
 *
 * Processes: forked children are followed from their first instruction and share
 * the main image's hooks (their memory is a copy, int3s included). A child that
 * execs another program becomes an image of its own (its own hooks, an entry
 * breakpoint, on_image_entry there); the main process exec'ing starts over
 * (on_main_exec, then on_entry at the new entry point). Every fatal signal, Rust
 * panic and sanitizer exit goes through ptrace/tracer/crash.h before the target sees it;
 * the exit of each child process is a process_exit event pushed on the ring.
 *
 * Breakpoints: each image (the main one with its forks, each exec'd child) has a
 * breakpoint table (bptab.h). A trap is handed to the stop handlers of the owners
 * that hold its address, in registration order: the entry breakpoint, the Rust
 * panic hook, the trace hooks, then any added with tracer_add_stop_handler().
 *
 * Code is patched only with every thread of the image stopped: tracer_call and
 * tracer_each_image stop them all (PTRACE_INTERRUPT each, keeping whatever other
 * stop a thread reports first to handle it afterwards), as do the re-arming of
 * throttled hooks and the single-step over a breakpoint.
 */
#ifndef STROBE_TRACER_H
#define STROBE_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/error.h"
#include "base/ring.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/hooks.h"

struct tracer;
struct hooks;

/* A language runtime whose processes are handed over (core/collector.h, "adoption";
 * adopt.c): an image that exports needs[] in a module whose file name holds
 * module_hint gets its entry function's first call preceded by call(string). */
#define TRACER_RUNTIME_NEEDS 4
struct tracer_runtime {
    const char *module_hint;
    const char *needs[TRACER_RUNTIME_NEEDS];  /* NULL after the last */
    const char *entry;                        /* takes no arguments */
    const char *call;                         /* int call(const char *) */
};

struct tracer_spec {
    const char *path;          /* resolved executable */
    char *const *argv;         /* argv[0] included, NULL-terminated */
    char *const *envp;         /* full environment, NULL-terminated */
    const char *cwd;
    int stdin_fd, stdout_fd, stderr_fd; /* become fds 0, 1, 2 of the target */
    /* Called on the tracer thread when the main process has exited or was killed,
     * with its wait(2) status. Other processes of the session may live on. */
    void (*on_main_exit)(void *arg, int wait_status);
    /* Called on the tracer thread when every process has ended, before the main
     * image's hooks are freed: their final counts (hooks_counts). */
    void (*on_finish)(void *arg, struct hooks *main_hooks);
    void *arg;
    /* Function, crash and child-exit events: the tracer thread produces into
     * sink.ring (see hooks.h, crash.h). sink.ring NULL: output-only, no hooks. */
    struct event_sink sink;
    struct hook_tuning tuning;
    /* Called on the tracer thread once the program reaches its entry point: every
     * library it links is loaded and no code of its own has run. The place to arm
     * trace patterns (with tracer_hooks() and a stopped thread, tracer_pid()). At
     * launch only when stop_at_entry is set (pending patterns); after the main
     * process exec'd another program, always. */
    void (*on_entry)(void *arg, struct tracer *t);
    bool stop_at_entry;
    /* Called on the tracer thread before a crash event is stamped (ptrace/tracer/crash.h),
     * with arg: output the program wrote before failing gets timestamps before it. */
    void (*settle_output)(void *arg);
    /* Optional; called on the tracer thread, with arg, at each SIGTRAP stop and
     * before a child's process_exit, before the event is stamped: output the
     * program wrote before it gets earlier timestamps (one poll(2) when none). */
    void (*drain_output)(void *arg);
    /* Optional, with drain_output: writes to the output followed without a stop
     * (the fast path's, core/collector.h's collector_events says when each is
     * called; output_settled from the tracer's loop before it waits). */
    void (*output_follow)(void *arg);
    void (*output_wrote)(void *arg, int stream, const char *prefix, size_t plen, size_t n,
                         int64_t ts_ns);
    void (*output_settled)(void *arg, int64_t floor_ns, bool writing);
    /* Called on the tracer thread when the main process exec'd another program:
     * its hooks are new and empty; on_entry follows at the new entry point. */
    void (*on_main_exec)(void *arg);
    /* Called on the tracer thread when a child process that exec'd another program
     * reaches its entry point (stopped there): the place to arm the session's
     * patterns in it, through h (hooks_arm with pid as the stopped thread). */
    void (*on_image_entry)(void *arg, struct tracer *t, pid_t pid, struct hooks *h);
    /* Called on the tracer thread once the target exists, before any of its code
     * runs: the place to add stop handlers and the debugger (tracer_set_debugger). */
    void (*on_start)(void *arg, struct tracer *t);
    /* Trace watches (twatch.h) read into the main image's function events; NULL:
     * none. Not read in images exec'd by children (other programs). */
    struct twatch_set *watches;
    /* Runtimes to hand over: checked at every program entry (the launch's, after an
     * exec); at the redirected entry's first call, adopt(arg, i, pid, buf, cap)
     * writes the string for runtimes[i] (false: leave the process alone). */
    const struct tracer_runtime *runtimes;
    int n_runtimes;
    bool (*adopt)(void *arg, int runtime, pid_t pid, char *buf, size_t cap);
};

/* Starts the tracer thread and the target; returns once the target has exec'd and
 * runs, or failed to. On failure: -1 and e says why (COMMAND_NOT_FOUND,
 * COMMAND_NOT_EXECUTABLE or ATTACH_FAILED). */
int tracer_start(const struct tracer_spec *spec, struct tracer **out, pid_t *pid,
                 struct strobe_error *e);

/* Runs fn(t, arg) on the tracer thread with every thread of the main image (the
 * program and its forked children) in a ptrace stop (interrupted if it was
 * running), then resumes them; returns when fn has run. fn may patch code.
 * -1 with PROCESS_EXITED if the target is gone. From the tracer thread itself
 * (inside on_entry), fn runs at once. */
int tracer_call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e);
/* tracer_call for fn that only reads the tracer's state (and the target's memory):
 * the target's threads run on meanwhile. */
int tracer_read(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e);

/* From a tracer_call function: runs fn for each child process that exec'd another
 * program (an image of its own), with every thread of that image stopped, then
 * resumes them. pid is the process, h its hooks. */
void tracer_each_image(struct tracer *t, void (*fn)(pid_t pid, struct hooks *h, void *arg),
                       void *arg);

/* From a tracer_call function: holds the threads of the other images too, then
 * calls fn for each thread of the target, by process then tid, with its image's
 * hooks (NULL in output-only sessions); stopped says whether it is in a ptrace stop
 * (a thread blocked in vfork or exiting is not, and runs no code); then releases
 * what it held. fn must not hold or release threads. */
void tracer_each_thread(struct tracer *t,
                        void (*fn)(pid_t tid, pid_t tgid, bool stopped, struct hooks *h,
                                   void *arg),
                        void *arg);

/* From a tracer_call function: records calls on the fast path (fast) or on int3s
 * from now on, in every image the target has and in every program it execs later
 * (hooks_set_fast on each, and the mode new images start with). */
void tracer_set_fast(struct tracer *t, bool fast);

/* For code running on the tracer thread (on_entry, tracer_call functions): the
 * hooks of the target, and its main pid (stopped during those calls). */
struct hooks *tracer_hooks(struct tracer *t);
pid_t tracer_pid(const struct tracer *t);
/* The main image's breakpoint table (tracer thread only). */
struct bptab *tracer_bptab(struct tracer *t);
/* The data watchpoints of every process (hwwatch.h; tracer thread only); NULL in
 * output-only sessions. */
struct hwwatch *tracer_hwwatch(struct tracer *t);

/* A trap on a breakpoint, as a stop handler sees it. */
struct tracer_stop {
    struct user_regs_struct *regs;  /* the thread's; rip is just past the int3. A
                                       handler that changes them sets them itself */
    uint64_t addr;                  /* the int3's address */
    unsigned owners;                /* BP_OWNER_BIT()s of every owner holding addr */
    struct bptab *bp;               /* the table of the thread's image */
    struct hooks *hooks;            /* the hooks of the thread's image, or NULL */
    int64_t woke_ns;                /* when the tracer woke up for this stop */
};

/* A stop handler: called on the tracer thread for a trap of thread tid on an
 * address its owner holds; says what it did (bptab.h, enum bp_verdict). */
typedef enum bp_verdict (*tracer_stop_fn)(struct tracer *t, pid_t tid,
                                          struct tracer_stop *st, void *arg);

/* On the tracer thread (a tracer_call function): adds a handler for the traps on
 * owner's breakpoints, asked after those registered before. -1 if the list is full
 * (8 handlers). */
int tracer_add_stop_handler(struct tracer *t, const char *name, enum bp_owner owner,
                            tracer_stop_fn fn, void *arg);

/* On the tracer thread: resumes thread tid, parked (BP_PARK, tracer_park,
 * tracer_park_all) or stopped in a debugger callback, with its registers as they are
 * now. An int3 of ours under its pc has been reported already: the trace hooks
 * holding it get it as a trap, then the program's instruction runs. A stop that
 * tracer_park_all kept pending is handled now. -1 if it is neither parked nor
 * stopped. */
int tracer_resume_thread(struct tracer *t, pid_t tid);

/* On the tracer thread, in a debugger callback: keeps tid stopped until
 * tracer_resume_thread or tracer_step. */
void tracer_park(struct tracer *t, pid_t tid);

/* On the tracer thread (a stop handler, a debugger callback, a tracer_call
 * function): stops every other thread of tid's address space and parks it, with any
 * stop it reported kept for its resume; fn(thread, process, arg) for each one parked
 * now (threads parked already are not). A thread whose own stop is being handled at
 * that moment (an outer handler's) is parked when that handling would resume it,
 * through tracer_debugger.parked. */
void tracer_park_all(struct tracer *t, pid_t tid, void (*fn)(pid_t tid, pid_t tgid, void *arg),
                     void *arg);

/* On the tracer thread, with tid stopped: runs fn(arg) with every other thread of
 * tid's address space stopped too (so code may be patched), then lets them run. */
void tracer_with_space_held(struct tracer *t, pid_t tid, void (*fn)(void *arg), void *arg);

/* On the tracer thread: the process of thread tid; 0 if the tracer has no such
 * thread. */
pid_t tracer_tgid(struct tracer *t, pid_t tid);

/* What the tracer tells the debugger (ptrace/debugger/debugger.h): both on the tracer
 * thread. */
struct tracer_debugger {
    /* tracer_step's instruction ran: tid is stopped with regs; the callback must
     * resume it (tracer_resume_thread), step it again (tracer_step) or park it
     * (tracer_park). */
    void (*stepped)(struct tracer *t, pid_t tid, struct user_regs_struct *regs, void *arg);
    /* Thread tid, whose stop was being handled when tracer_park_all parked its
     * image, is parked now too. */
    void (*parked)(struct tracer *t, pid_t tid, void *arg);
    /* Thread tid is gone (exited, killed, or replaced by an exec). */
    void (*thread_gone)(struct tracer *t, pid_t tid, void *arg);
    void *arg;
};
void tracer_set_debugger(struct tracer *t, const struct tracer_debugger *d);

/* On the tracer thread: runs one instruction of tid (parked, or stopped in a
 * debugger callback), then calls the debugger's stepped. The step is asynchronous
 * (PTRACE_SINGLESTEP; the loop serves other threads meanwhile; signals that arrive
 * are delivered and their handlers stepped into), except over an int3 of ours,
 * which is stepped at once with the other threads held (a trace hook there records
 * no call). -1 if tid is not stopped. */
int tracer_step(struct tracer *t, pid_t tid);
/* The step of tid in flight ends without calling stepped: the thread runs on. */
void tracer_cancel_step(struct tracer *t, pid_t tid);

/* On the tracer thread, before the first hook is armed: when trace.pinCpu is on,
 * pins the tracer thread and the target's main thread to one CPU (stops cost 4x
 * less than across CPUs). Sessions that only capture output are never pinned. */
void tracer_pin(struct tracer *t);

/* Whether every tracee is gone (the tracer thread has ended or is ending): nothing
 * more will come from it. Safe from any thread. */
bool tracer_finished(struct tracer *t);

/* Whether pid is a live process (not a mere thread) of the target: the main process
 * or one it forked. Safe from any thread. */
bool tracer_has_process(struct tracer *t, pid_t pid);

/* Sends SIGKILL to every process the tracer owns. Safe from any thread. */
void tracer_kill(struct tracer *t);

/* Waits for the tracer thread to finish (every tracee gone), then frees t. */
void tracer_join(struct tracer *t);

#endif
