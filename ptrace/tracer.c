/*
 * tracer.c - the per-session tracer thread. See tracer.h.
 *
 * The loop waits with __WALL | __WNOTHREAD, so a tracer only ever reaps its own
 * tracees even though several sessions run tracer threads in the same daemon.
 * Stops it does not own a reason for are resumed as ptrace(2) prescribes:
 * event stops and our own seize stops resume with no signal, signal-delivery stops
 * deliver the signal, group-stops are kept with PTRACE_LISTEN so job control works.
 *
 * Address spaces: the main image (the program and the processes it forks) and each
 * child that exec'd another program is a `space`: a breakpoint table (bptab.h),
 * its hooks, its entry breakpoint. A SIGTRAP is looked up in the table of the
 * thread's space and handed to the stop handlers of the owners holding the address,
 * in owner order (bptab.h): traps.c owns that dispatch, and the parking, resuming
 * and single-stepping of threads for the debugger; the state both files share is
 * tracer_internal.h.
 *
 * Threads: every tracee thread has a state. Running; stopped while the loop
 * handles its stop; held (stopped by tr_hold() so that code can be patched, with the
 * stop it reported, which tr_release() handles afterwards like any other); parked
 * (a handler or the debugger keeps it stopped until tracer_resume_thread()); being
 * stepped (PTRACE_SINGLESTEP: events and signals resume it stepping).
 *
 * Code is written only while every thread of the space is stopped (hold): commands
 * (tracer_call, tracer_each_image), entry callbacks, the throttle batches of
 * hooks_tick and the single-step over a breakpoint. The cost is one interrupt and
 * one wait per thread. It is paid when code changes, and on the hits that step
 * over their int3 (BP_STEP_OVER: hooks whose instruction cannot be relocated,
 * hooks hit in a child forked before their scratch area existed, Rust's panic
 * hook); a trace hook with a relocated instruction, the common case, resumes
 * without it.
 */
#include "ptrace/tracer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/event.h"
#include "base/u64map.h"
#include "ptrace/bptab.h"
#include "ptrace/crash.h"
#include "ptrace/hooks.h"
#include "ptrace/hwwatch.h"
#include "ptrace/procmem.h"
#include "ptrace/tracer_internal.h"

static void on_new_tracee(struct tracer *t, pid_t pid, int event);

static void kick_handler(int sig) { (void)sig; }

static void install_kick_handler(void)
{
    struct sigaction sa = {.sa_handler = kick_handler}; /* no SA_RESTART: waitpid -> EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIG_KICK, &sa, NULL);
}

static void procs_add(struct tracer *t, pid_t pid)
{
    pthread_mutex_lock(&t->lock);
    if (t->n_procs < MAX_PROCS)
        t->procs[t->n_procs++] = pid;
    pthread_mutex_unlock(&t->lock);
}

/* Whether pid was one of the processes (not a mere thread). */
static bool procs_remove(struct tracer *t, pid_t pid)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs && !found; i++)
        if (t->procs[i] == pid) {
            t->procs[i] = t->procs[--t->n_procs];
            found = true;
        }
    pthread_mutex_unlock(&t->lock);
    return found;
}

/* ---- threads ------------------------------------------------------------------- */

static struct tthread *thread_add(struct tracer *t, pid_t tid, pid_t tgid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th)
        return th;
    th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    *th = (struct tthread){.tid = tid, .tgid = tgid, .state = TS_RUNNING, .pending = -1};
    if (u64map_put(&t->threads, (uint64_t)tid, th) != 0) {
        free(th);
        return NULL;
    }
    return th;
}

/* A thread's record; one that stops before its creator's clone event was seen is
 * added here. */
struct tthread *tr_thread_of(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    return th ? th : thread_add(t, tid, procmem_tgid(tid));
}

static void thread_drop(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_del(&t->threads, (uint64_t)tid);
    if (th && t->debugger.thread_gone)
        t->debugger.thread_gone(t, tid, t->debugger.arg);
    free(th);
}

/* Resumes tid from a stop, delivering sig: a thread being stepped steps on. */
void tr_cont(struct tracer *t, pid_t tid, int sig)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    bool step = th && th->stepping;
    ptrace(step ? PTRACE_SINGLESTEP : PTRACE_CONT, tid, 0, (void *)(uintptr_t)sig);
}

/* ---- address spaces -------------------------------------------------------------- */

/* The space process tgid belongs to, or NULL. */
struct space *tr_space_of_process(struct tracer *t, pid_t tgid)
{
    if (t->main.bp && bptab_has_process(t->main.bp, tgid))
        return &t->main;
    for (int i = 0; i < t->n_images; i++)
        if (bptab_has_process(t->images[i].bp, tgid))
            return &t->images[i];
    return NULL;
}

struct space *tr_space_of(struct tracer *t, pid_t tid)
{
    struct tthread *th = tr_thread_of(t, tid);
    return th ? tr_space_of_process(t, th->tgid) : NULL;
}

/* The space whose image process pid exec'd (spaces move when one is dropped: find
 * them again after anything that may reap). */
struct space *tr_space_by_pid(struct tracer *t, pid_t pid)
{
    if (pid == t->main.pid)
        return &t->main;
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid)
            return &t->images[i];
    return NULL;
}

static struct hooks *make_hooks(struct tracer *t, pid_t pid, struct bptab *bp)
{
    if (!t->spec.sink.ring)
        return NULL;
    struct hooks_config cfg = {
        .pid = pid, .sink = t->spec.sink, .tuning = t->spec.tuning, .seq = &t->seq,
        .bp = bp, .watches = pid == t->main_pid ? t->spec.watches : NULL,
    };
    struct hooks *h = hooks_new(&cfg);
    if (h)
        hooks_adopt(h, pid);
    return h;
}

/* A fresh space for the image process pid just exec'd. False if out of memory. */
static bool space_init(struct tracer *t, struct space *sp, pid_t pid)
{
    *sp = (struct space){.pid = pid, .bp = bptab_new()};
    if (!sp->bp || !bptab_add_process(sp->bp, pid)) {
        bptab_free(sp->bp);
        sp->bp = NULL;
        return false;
    }
    sp->hooks = make_hooks(t, pid, sp->bp);
    return true;
}

static void space_free(struct space *sp)
{
    hooks_free(sp->hooks);
    bptab_free(sp->bp);
    sp->hooks = NULL;
    sp->bp = NULL;
}

static void image_drop(struct tracer *t, pid_t pid)
{
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid) {
            space_free(&t->images[i]);
            t->images[i] = t->images[--t->n_images];
            return;
        }
}

/* ---- stopping every thread of a space ------------------------------------------ */

struct hold_scan {
    struct tracer *t;
    const struct space *sp;
    pid_t except;
    struct held *hd;
};

void tr_held_add(struct held *hd, pid_t tid)
{
    if (hd->n == hd->cap) {
        size_t cap = hd->cap ? 2 * hd->cap : 16;
        pid_t *p = realloc(hd->tids, cap * sizeof *p);
        if (!p)
            return;
        hd->tids = p;
        hd->cap = cap;
    }
    hd->tids[hd->n++] = tid;
}

static void scan_running(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct tthread *th = value;
    struct hold_scan *s = arg;
    if (th->state == TS_RUNNING && !th->in_vfork && !th->exiting && th->tid != s->except &&
        bptab_has_process(s->sp->bp, th->tgid))
        tr_held_add(s->hd, th->tid);
}

/* Whether status is the stop PTRACE_INTERRUPT asked for (or a new thread's first
 * stop, which is the same and needs nothing either). */
static bool is_interrupt_stop(int status)
{
    return (status >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP;
}

static void held_forget(struct held *hd, pid_t tid)
{
    for (size_t i = 0; i < hd->n; i++)
        if (hd->tids[i] == tid) {
            hd->tids[i] = hd->tids[--hd->n];
            return;
        }
}

/* PTRACE_EVENT_EXIT of tid: the thread runs no more code; it resumes to end. */
static void on_exit_event(struct tracer *t, pid_t tid)
{
    crash_on_exit_event(t->crash, tid);
    struct tthread *th = tr_thread_of(t, tid);
    struct space *sp = th ? tr_space_of_process(t, th->tgid) : NULL;
    if (sp && sp->hooks)
        hooks_on_exit_event(sp->hooks, tid); /* counters read while memory is there */
    if (th) {
        /* Not held any more, even if it was: a held thread that is killed leaves
         * its stop, and the stop it had pending is moot. */
        th->exiting = true;
        th->state = TS_RUNNING;
        th->pending = -1;
    }
    ptrace(PTRACE_CONT, tid, 0, 0);
}

/* A thread or process created while hold() collects stops (its creator's clone or
 * fork event came in) is held too: a hold stops the whole space, and an all-stop
 * must not let a thread born meanwhile run. Its first stop, or the interrupt if that
 * stop was seen already, is collected with the others. */
static void hold_newborn(pid_t creator, struct held *want)
{
    unsigned long child = 0;
    if (ptrace(PTRACE_GETEVENTMSG, creator, 0, &child) == 0 && child &&
        ptrace(PTRACE_INTERRUPT, (pid_t)child, 0, 0) == 0)
        tr_held_add(want, (pid_t)child);
}

/* Stops every running thread of sp but except and records them in hd. A thread
 * that reports another stop first (a breakpoint, a signal, an event) keeps it
 * pending: tr_release() handles it as the loop would have, so nothing is lost. The
 * threads skipped run no code: stopped already, blocked in vfork, or exiting.
 *
 * Stops are collected in the order they come (waitpid(-1)), whoever reports them:
 * waiting for one thread could wait forever for a thread that waits on another
 * (an execve waits for the other threads to die). So a stop of a thread not
 * interrupted here is held too, and some are dealt with at once:
 *  - PTRACE_EVENT_EXIT: the thread resumes to end (an exec, or exit_group, waits
 *    for it); it is not held.
 *  - PTRACE_EVENT_EXEC by a thread other than the leader: its former tid never
 *    reports again.
 *  - fork, vfork, clone: the new tracee is recorded before the caller writes code
 *    (its memory is a copy of what is there now, and later writes must reach it);
 *    it starts in a stop of its own, which is collected and held like any other
 *    (hold_newborn). */
void tr_hold(struct tracer *t, const struct space *sp, pid_t except, struct held *hd)
{
    *hd = (struct held){0};
    if (!sp->bp)
        return;
    struct held want = {0};
    struct hold_scan s = {t, sp, except, &want};
    u64map_each(&t->threads, scan_running, &s);
    size_t n = 0;
    for (size_t i = 0; i < want.n; i++)
        if (ptrace(PTRACE_INTERRUPT, want.tids[i], 0, 0) == 0)
            want.tids[n++] = want.tids[i];
    want.n = n;
    while (want.n > 0) {
        int status;
        pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);
        if (tid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        held_forget(&want, tid);
        if (!WIFSTOPPED(status)) {
            tr_reap(t, tid, status);
            continue;
        }
        int event = status >> 16;
        if (event == PTRACE_EVENT_EXIT) {
            on_exit_event(t, tid);
            continue;
        }
        unsigned long msg = 0;
        if (event == PTRACE_EVENT_EXEC && ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0)
            held_forget(&want, (pid_t)msg);
        bool clone = event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
                     event == PTRACE_EVENT_CLONE;
        if (clone) {
            on_new_tracee(t, tid, event);
            hold_newborn(tid, &want);
        }
        struct tthread *th = tr_thread_of(t, tid);
        if (!th) {
            ptrace(PTRACE_CONT, tid, 0, 0);
            continue;
        }
        th->state = TS_HELD;
        /* A clone event needs nothing more than the bookkeeping done above. */
        th->pending = clone || is_interrupt_stop(status) ? -1 : status;
        /* A data watchpoint's trap is recorded at once: a held thread may run
         * injected code or be stepped before release, and the next debug exception
         * would reset DR6 (which says which watch fired). Resuming it with no
         * signal at release is all that is left to do. */
        if (th->pending != -1 && event == 0 && WSTOPSIG(status) == SIGTRAP && t->hw &&
            hwwatch_on_trap(t->hw, tid, th->tgid))
            th->pending = -1;
        else if (event != PTRACE_EVENT_EXEC)
            hwwatch_collect(t->hw, tid, th->tgid);
        tr_held_add(hd, tid);
    }
    free(want.tids);
}

/* The loop's handling of one stop of tid, with its thread state kept. */
void tr_on_stop(struct tracer *t, pid_t tid, int status)
{
    struct tthread *th = tr_thread_of(t, tid);
    if (th)
        th->state = TS_STOPPED;
    /* Debug registers before the thread runs again: a new thread or child has
     * none. Not at an exec stop: the exec cleared them, and the new image has
     * no watches (hwwatch_on_exec). */
    if (th && (status >> 16) != PTRACE_EVENT_EXEC)
        hwwatch_on_stop(t->hw, tid, th->tgid);
    tr_handle_stop(t, tid, status);
    th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->state == TS_STOPPED)
        th->state = TS_RUNNING;
}

/* Resumes what tr_hold() stopped; the stops they reported meanwhile are handled now. */
void tr_release(struct tracer *t, struct held *hd)
{
    for (size_t i = 0; i < hd->n; i++) {
        struct tthread *th = u64map_get(&t->threads, (uint64_t)hd->tids[i]);
        if (!th || th->state != TS_HELD)
            continue;
        int status = th->pending;
        th->pending = -1;
        if (status == -1) {
            th->state = TS_RUNNING;
            hwwatch_on_stop(t->hw, th->tid, th->tgid);
            tr_cont(t, th->tid, 0);
        } else {
            tr_on_stop(t, th->tid, status);
        }
    }
    free(hd->tids);
    *hd = (struct held){0};
}

/* ---- launch ----------------------------------------------------------------------- */

/* In the child between fork and exec: async-signal-safe calls only. */
static void child_exec(const struct tracer_spec *s, int errfd)
{
    setpgid(0, 0);
    if (dup2(s->stdin_fd, 0) < 0 || dup2(s->stdout_fd, 1) < 0 || dup2(s->stderr_fd, 2) < 0)
        goto fail;
    /* Dispositions the daemon set (SIGPIPE ignored) and its blocked signals would
     * survive execve: give the target the defaults a shell would. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (chdir(s->cwd) != 0)
        goto fail;
    kill(getpid(), SIGSTOP);
    execve(s->path, s->argv, s->envp);
fail:;
    int err = errno;
    if (write(errfd, &err, sizeof err) < 0)
        _exit(126);
    _exit(127);
}

static int fail_start(struct tracer *t, enum err_code code, const char *what, int err)
{
    if (err == E2BIG)
        err_set(&t->start_error, ERR_VALIDATION,
                "cannot run '%s': its arguments and environment are larger than the kernel "
                "accepts (E2BIG: one argument or variable at most 128 KiB, all of them at "
                "most a quarter of the stack limit); pass large inputs in a file",
                t->spec.path);
    else if (code == ERR_ATTACH_FAILED)
        err_set(&t->start_error, code,
                "cannot start '%s' under ptrace: %s failed (%s). Check that ptrace is "
                "allowed here (kernel.yama.ptrace_scope, seccomp, containers).",
                t->spec.path, what, strerror(err));
    else
        err_set(&t->start_error, code, "cannot run '%s': %s failed (%s)", t->spec.path,
                what, strerror(err));
    t->start_failed = 1;
    return -1;
}

static int exec_errno(int errfd)
{
    int err = 0;
    ssize_t n;
    do
        n = read(errfd, &err, sizeof err);
    while (n < 0 && errno == EINTR);
    return n == sizeof err ? err : 0;
}

/* An int3 on the entry point of sp's process: reached once the dynamic loader has
 * mapped every library, before any code of the program runs. */
static void arm_entry_breakpoint(struct space *sp)
{
    uint64_t entry = procmem_entry_point(sp->pid);
    if (entry && bptab_insert(sp->bp, entry, BP_ENTRY))
        sp->entry = entry;
    else
        log_warn("pid %d: cannot stop at the entry point; pending patterns are armed late",
                 sp->pid);
}

/* Forks, seizes and runs the target up to its exec. Returns 0 with the target
 * stopped at PTRACE_EVENT_EXEC, or -1 with t->start_error set. */
static int launch(struct tracer *t)
{
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0)
        return fail_start(t, ERR_ATTACH_FAILED, "pipe", errno);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(errpipe[0]);
        close(errpipe[1]);
        return fail_start(t, ERR_ATTACH_FAILED, "fork", err);
    }
    if (pid == 0)
        child_exec(&t->spec, errpipe[1]);
    close(errpipe[1]);
    t->main_pid = pid;
    procs_add(t, pid);

    int status;
    if (waitpid(pid, &status, WUNTRACED | __WALL) != pid || !WIFSTOPPED(status)) {
        int err = WIFEXITED(status) ? exec_errno(errpipe[0]) : EIO;
        close(errpipe[0]);
        waitpid(pid, &status, __WALL | WNOHANG);
        return fail_start(t, ERR_ATTACH_FAILED, "setting up the child", err ? err : EIO);
    }
    long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
                PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE | PTRACE_O_TRACEEXEC |
                PTRACE_O_TRACEEXIT;
    if (ptrace(PTRACE_SEIZE, pid, 0, opts) != 0) {
        int err = errno;
        kill(pid, SIGKILL);
        waitpid(pid, &status, __WALL);
        close(errpipe[0]);
        return fail_start(t, ERR_ATTACH_FAILED, "PTRACE_SEIZE", err);
    }
    kill(pid, SIGCONT);
    for (;;) {
        if (waitpid(pid, &status, __WALL) != pid) {
            if (errno == EINTR)
                continue;
            close(errpipe[0]);
            return fail_start(t, ERR_ATTACH_FAILED, "waitpid", errno);
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            int err = exec_errno(errpipe[0]);
            close(errpipe[0]);
            procs_remove(t, pid);
            if (err == ENOENT)
                return fail_start(t, ERR_COMMAND_NOT_FOUND, "execve", err);
            if (err == EACCES || err == ENOEXEC || err == EPERM)
                return fail_start(t, ERR_COMMAND_NOT_EXECUTABLE, "execve", err);
            return fail_start(t, ERR_ATTACH_FAILED, "execve", err ? err : ECHILD);
        }
        if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            close(errpipe[0]);
            return 0;
        }
        /* The SIGSTOP we raised, the SIGCONT we sent, the seize's group-stop: all
         * are ours; the target resumes without them. */
        ptrace(PTRACE_CONT, pid, 0, 0);
    }
}

/* A stop round trip costs 11 us when tracer and target share a CPU and 45-78 us
 * when they do not (design.md, bench_trace). With a CPU idle, the scheduler wakes
 * the target on it every time, so "share" has to be forced: the tracer thread and
 * the target's main thread are pinned to the CPU the tracer runs on. Threads and
 * processes the target creates get the original affinity back, so a parallel
 * program still runs in parallel. */
void tracer_pin(struct tracer *t)
{
    if (t->pinned || !t->spec.tuning.pin_cpu ||
        sched_getaffinity(0, sizeof t->original_cpus, &t->original_cpus) != 0 ||
        CPU_COUNT(&t->original_cpus) < 2)
        return;
    int cpu = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0 &&
        sched_setaffinity(t->main_pid, sizeof one, &one) == 0)
        t->pinned = true;
}

static bool is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* ---- throttled hooks ------------------------------------------------------------- */

/* Arms the re-arm timer to fire in ms unless it fires sooner already. It then
 * fires again every REARM_RETRY_MS until tick() finds nothing left to re-arm: a
 * kick that lands while the tracer is not in the loop's waitpid (holding, or
 * stepping) interrupts nothing and is lost, the next one is not. */
static void arm_timer(struct tracer *t, int ms)
{
    if (ms < 0 || !t->has_timer)
        return;
    struct itimerspec cur;
    int64_t want = (int64_t)ms * 1000000;
    if (timer_gettime(t->rearm_timer, &cur) == 0) {
        int64_t left = (int64_t)cur.it_value.tv_sec * 1000000000 + cur.it_value.tv_nsec;
        if (left > 0 && left <= want)
            return;
    }
    struct itimerspec its = {
        .it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L},
        .it_interval = {.tv_nsec = REARM_RETRY_MS * 1000000L},
    };
    timer_settime(t->rearm_timer, 0, &its, NULL);
}

/* Applies the throttle changes of the hooks of the space of pid (hooks_tick) under
 * one stop of all its threads, when there are any at time now. */
static void patch_throttled(struct tracer *t, pid_t pid, int64_t now)
{
    struct space *sp = tr_space_by_pid(t, pid);
    if (!sp || !sp->hooks || !hooks_patch_due(sp->hooks, now))
        return;
    struct held hd;
    tr_hold(t, sp, 0, &hd);
    sp = tr_space_by_pid(t, pid);
    int ms = sp && sp->hooks ? hooks_tick(sp->hooks) : -1;
    tr_release(t, &hd);
    arm_timer(t, ms);
}

/* Patches what is due at time now in every space (now 0: only the functions hits
 * throttled). The re-arm timer stops once no space has anything left to do. */
static void tick(struct tracer *t, int64_t now)
{
    pid_t pids[MAX_IMAGES + 1];
    int n = 0;
    pids[n++] = t->main.pid;
    for (int i = 0; i < t->n_images; i++)
        pids[n++] = t->images[i].pid;
    for (int i = 0; i < n; i++)
        patch_throttled(t, pids[i], now);
    if (!now || !t->has_timer)
        return;
    bool scheduled = t->main.hooks && hooks_patch_due(t->main.hooks, INT64_MAX);
    for (int i = 0; i < t->n_images && !scheduled; i++)
        scheduled = t->images[i].hooks && hooks_patch_due(t->images[i].hooks, INT64_MAX);
    if (!scheduled) {
        struct itimerspec off = {0};
        timer_settime(t->rearm_timer, 0, &off, NULL);
    }
}

/* ---- stop handlers ------------------------------------------------------------------ */

/* The entry breakpoint of the main process or of an exec'd child: it goes (the
 * thread resumes on the entry point's own instruction, or on another owner's int3
 * there), then what the session wants is armed, with the image's threads held. */
static enum bp_verdict entry_stop(struct tracer *t, pid_t tid, struct tracer_stop *st,
                                  void *arg)
{
    (void)arg;
    struct space *sp = tr_space_by_pid(t, tid);
    if (!sp || !sp->entry || sp->entry != st->addr)
        return BP_PASS;
    bptab_remove(sp->bp, sp->entry, BP_ENTRY);
    sp->entry = 0;
    st->regs->rip = st->addr;
    ptrace(PTRACE_SETREGS, tid, 0, st->regs);
    bool is_main = sp == &t->main;
    struct held hd;
    tr_hold(t, sp, tid, &hd);
    sp = tr_space_by_pid(t, tid);
    if (sp && is_main && t->spec.on_entry)
        t->spec.on_entry(t->spec.arg, t);
    else if (sp && !is_main && t->spec.on_image_entry)
        t->spec.on_image_entry(t->spec.arg, t, tid, sp->hooks);
    tr_release(t, &hd);
    ptrace(PTRACE_CONT, tid, 0, 0);
    return BP_RESUMED;
}

static enum bp_verdict panic_stop(struct tracer *t, pid_t tid, struct tracer_stop *st,
                                  void *arg)
{
    (void)arg;
    return crash_on_trap(t->crash, tid, st->regs, st->owners);
}

static enum bp_verdict hook_stop(struct tracer *t, pid_t tid, struct tracer_stop *st,
                                 void *arg)
{
    (void)t;
    (void)arg;
    return st->hooks ? hooks_on_trap(st->hooks, tid, st->regs, st->woke_ns) : BP_PASS;
}

/* ---- events --------------------------------------------------------------------------- */

/* PTRACE_EVENT_EXEC of pid: the old image and its breakpoints are gone. The main
 * process starts over with a fresh space (the session re-arms at its entry point);
 * a child becomes a space of its own, armed at its entry point. */
static void on_exec(struct tracer *t, pid_t pid)
{
    /* A thread other than the leader exec'd: it took the leader's tid and the
     * kernel reports no exit for its old one. */
    unsigned long former = 0;
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) == 0 && (pid_t)former != pid) {
        thread_drop(t, (pid_t)former);
        hwwatch_on_exit(t->hw, (pid_t)former, false);
    }
    hwwatch_on_exec(t->hw, pid);
    /* pid's record was the old leader's, which was exiting: it is now the thread
     * that exec'd, the one thread of the new image. */
    struct tthread *th = tr_thread_of(t, pid);
    if (th) {
        th->tgid = pid;
        th->exiting = false;
        th->in_vfork = false;
    }
    if (pid == t->main_pid) {
        space_free(&t->main);
        for (int i = 0; i < t->n_images; i++)
            if (t->images[i].hooks)
                hooks_forget_process(t->images[i].hooks, pid);
        if (!space_init(t, &t->main, pid))
            return;
        crash_on_exec(t->crash, pid, t->main.bp);
        if (!t->main.hooks)
            return;
        if (t->spec.on_main_exec)
            t->spec.on_main_exec(t->spec.arg);
        if (t->spec.on_entry)
            arm_entry_breakpoint(&t->main);
        return;
    }
    struct space *old = tr_space_of_process(t, pid);
    if (old && old->pid != pid) {
        bptab_drop_process(old->bp, pid);
        if (old->hooks)
            hooks_forget_process(old->hooks, pid);
    }
    image_drop(t, pid);
    if (t->n_images == MAX_IMAGES) {
        log_warn("pid %d: more than %d exec'd processes; this one is not traced", pid,
                 MAX_IMAGES);
        return;
    }
    struct space *sp = &t->images[t->n_images];
    if (!space_init(t, sp, pid))
        return;
    crash_on_exec(t->crash, pid, sp->bp);
    if (!sp->hooks) {
        space_free(sp);
        return;
    }
    t->n_images++;
    arm_entry_breakpoint(sp);
}

static void on_new_tracee(struct tracer *t, pid_t pid, int event)
{
    unsigned long msg = 0;
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) != 0)
        return;
    pid_t child = (pid_t)msg;
    bool new_process = event != PTRACE_EVENT_CLONE;
    struct tthread *parent = tr_thread_of(t, pid);
    pid_t parent_tgid = parent ? parent->tgid : procmem_tgid(pid);
    thread_add(t, child, new_process ? child : parent_tgid);
    if (parent && event == PTRACE_EVENT_VFORK)
        parent->in_vfork = true;
    if (t->pinned)
        sched_setaffinity(child, sizeof t->original_cpus, &t->original_cpus);
    struct space *sp = tr_space_of_process(t, parent_tgid);
    if (new_process) {
        procs_add(t, child);
        hwwatch_on_fork(t->hw, parent_tgid, child);
        if (sp)
            bptab_add_process(sp->bp, child);
    }
    if (sp && sp->hooks)
        hooks_on_clone(sp->hooks, pid, child, new_process);
}

void tr_handle_stop(struct tracer *t, pid_t pid, int status)
{
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (event == PTRACE_EVENT_STOP) {
        /* A group-stop keeps the process stopped (job control); the initial stop of
         * an auto-attached thread or child, and our interrupts, just resume. */
        if (is_stop_signal(sig))
            ptrace(PTRACE_LISTEN, pid, 0, 0);
        else
            tr_cont(t, pid, 0);
        return;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
        event == PTRACE_EVENT_CLONE)
        on_new_tracee(t, pid, event);
    struct tthread *th = event ? tr_thread_of(t, pid) : NULL;
    if (event == PTRACE_EVENT_VFORK_DONE && th)
        th->in_vfork = false;
    if (event == PTRACE_EVENT_EXEC)
        on_exec(t, pid);
    if (event == PTRACE_EVENT_EXIT) {
        on_exit_event(t, pid);
        return;
    }
    if (event != 0) {
        tr_cont(t, pid, 0);
        return;
    }
    struct tthread *tt = sig == SIGTRAP ? tr_thread_of(t, pid) : NULL;
    if (sig == SIGTRAP && t->spec.drain_output)
        t->spec.drain_output(t->spec.arg);
    /* A data watchpoint's trap (si_code TRAP_HWBKPT, DR6 B0-B3), never an int3's:
     * recorded, and the thread runs on with no signal (a single-step's trap may
     * carry one too: the step goes on below). */
    bool watch_hit = tt && t->hw && hwwatch_on_trap(t->hw, pid, tt->tgid);
    if (tt && tt->stepping && tr_step_trapped(t, pid, tt))
        return;
    if (watch_hit) {
        ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    if (sig == SIGTRAP && tr_dispatch_trap(t, pid))
        return;
    /* A crash is recorded before its signal is delivered: the program's own
     * handler, or the default action, still follows (a thread being stepped steps
     * into the handler). */
    crash_on_signal(t->crash, pid, sig);
    tr_cont(t, pid, sig);
}

/* A child process ended: its process_exit event (the main process's comes from the
 * session, behind the last of its output). */
static void record_child_exit(struct tracer *t, pid_t pid, int status)
{
    if (!t->spec.sink.ring)
        return;
    char text[128], data[96];
    event_describe_exit(pid, status, false, text, sizeof text, data, sizeof data);
    if (t->spec.drain_output)
        t->spec.drain_output(t->spec.arg);
    struct event ev = event_sink_init(&t->spec.sink, EV_PROCESS_EXIT, mono_ns());
    ev.pid = pid;
    ev.tid = pid;
    ev.text = text;
    ev.data = data;
    event_sink_push(&t->spec.sink, &ev);
}

/* A tracee is gone: a thread, a child process or the main process. Threads other
 * than a group leader are not in procs. */
void tr_reap(struct tracer *t, pid_t pid, int status)
{
    bool process = procs_remove(t, pid);
    /* No record is made for a tid that is gone already. */
    struct tthread *th = u64map_get(&t->threads, (uint64_t)pid);
    struct space *sp = tr_space_of_process(t, th ? th->tgid : pid);
    if (sp && sp->hooks)
        hooks_on_exit(sp->hooks, pid);
    thread_drop(t, pid);
    hwwatch_on_exit(t->hw, pid, process);
    if (process) {
        if (sp)
            bptab_drop_process(sp->bp, pid);
        crash_on_process_exit(t->crash, pid);
        image_drop(t, pid);
    }
    if (pid == t->main_pid) {
        t->main_alive = false;
        if (t->spec.on_main_exit)
            t->spec.on_main_exit(t->spec.arg, status);
    } else if (process) {
        record_child_exit(t, pid, status);
    }
}

/* Runs the pending command with every thread of the main image held. */
static void run_command(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    bool pending = t->cmd_pending;
    pthread_mutex_unlock(&t->lock);
    if (!pending)
        return;
    bool ran = false;
    if (t->main_alive && !t->cmd_hold) {
        t->cmd_fn(t, t->cmd_arg);
        ran = true;
    } else if (t->main_alive) {
        struct held hd;
        tr_hold(t, &t->main, 0, &hd);
        if (t->main_alive) {
            t->cmd_fn(t, t->cmd_arg);
            ran = true;
        }
        tr_release(t, &hd);
    }
    pthread_mutex_lock(&t->lock);
    t->cmd_pending = false;
    t->cmd_ran = ran;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
}

static void prepare_unwind(void *arg, pid_t tid, uint64_t *pc)
{
    struct tracer *t = arg;
    struct space *sp = tr_space_of(t, tid);
    if (sp && sp->hooks)
        hooks_prepare_unwind(sp->hooks, tid, pc);
}

/* A watchpoint hit's unwind: the thread runs on, so its traced frames get their
 * trampolines back afterwards (unwind_end). */
static void watch_unwind(void *arg, pid_t tid, uint64_t *pc, bool end)
{
    struct tracer *t = arg;
    struct space *sp = tr_space_of(t, tid);
    if (!sp || !sp->hooks)
        return;
    if (end)
        hooks_unwind_end(sp->hooks, tid);
    else
        hooks_unwind_begin(sp->hooks, tid, pc);
}

static struct crash *make_crash(struct tracer *t)
{
    if (!t->spec.sink.ring)
        return NULL;
    struct crash_config cfg = {
        .sink = t->spec.sink,
        .settle_output = t->spec.settle_output, .arg = t->spec.arg,
        .prepare_unwind = prepare_unwind, .prepare_arg = t,
    };
    struct crash *c = crash_new(&cfg);
    if (c)
        crash_on_exec(c, t->main_pid, t->main.bp);
    return c;
}

static void free_thread(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    free(value);
}

static void *tracer_main(void *arg)
{
    struct tracer *t = arg;
    t->thread_tid = (pid_t)syscall(SYS_gettid);
    int rc = launch(t);
    if (rc == 0) {
        t->main_alive = true;
        thread_add(t, t->main_pid, t->main_pid);
        space_init(t, &t->main, t->main_pid);
        if (t->main.bp && t->spec.on_entry && t->spec.stop_at_entry)
            arm_entry_breakpoint(&t->main);
        t->crash = make_crash(t);
        if (t->spec.sink.ring) {
            struct hwwatch_config hc = {.sink = t->spec.sink, .unwind = watch_unwind,
                                        .unwind_arg = t};
            t->hw = hwwatch_new(&hc);
        }
        tracer_add_stop_handler(t, "entry", BP_ENTRY, entry_stop, NULL);
        tracer_add_stop_handler(t, "panic", BP_PANIC, panic_stop, NULL);
        tracer_add_stop_handler(t, "hooks", BP_TRACE_HOOK, hook_stop, NULL);
        if (t->spec.on_start && t->main.bp)
            t->spec.on_start(t->spec.arg, t);
        struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIG_KICK};
        sev._sigev_un._tid = t->thread_tid;
        t->has_timer = timer_create(CLOCK_MONOTONIC, &sev, &t->rearm_timer) == 0;
    }
    sem_post(&t->started);
    if (rc != 0)
        return NULL;
    ptrace(PTRACE_CONT, t->main_pid, 0, 0);

    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, __WALL | __WNOTHREAD);
        if (pid < 0) {
            if (errno == EINTR) {
                tick(t, mono_ns());
                run_command(t);
                continue;
            }
            if (errno != ECHILD)
                log_error("tracer of pid %d: waitpid: %s", t->main_pid, strerror(errno));
            break;
        }
        if (WIFSTOPPED(status)) {
            t->woke_ns = mono_ns();
            tr_on_stop(t, pid, status);
        } else {
            tr_reap(t, pid, status);
        }
        if (t->throttle_due) {
            t->throttle_due = false;
            tick(t, 0);
        }
        run_command(t);
    }
    if (t->spec.on_finish && t->main.hooks)
        t->spec.on_finish(t->spec.arg, t->main.hooks); /* before tracer_call refuses */
    pthread_mutex_lock(&t->lock);
    t->finished = true;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
    if (t->has_timer)
        timer_delete(t->rearm_timer);
    space_free(&t->main);
    while (t->n_images)
        image_drop(t, t->images[0].pid);
    crash_free(t->crash);
    t->crash = NULL;
    hwwatch_free(t->hw);
    t->hw = NULL;
    u64map_each(&t->threads, free_thread, NULL);
    u64map_free(&t->threads);
    return NULL;
}

static int call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                bool hold, struct strobe_error *e)
{
    if (pthread_equal(pthread_self(), t->thread)) {
        fn(t, arg);
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    while (t->cmd_pending && !t->finished) /* one command at a time */
        pthread_cond_wait(&t->cmd_done, &t->lock);
    if (t->finished || !t->main_alive) {
        pthread_mutex_unlock(&t->lock);
        return err_set(e, ERR_PROCESS_EXITED, "the target process has exited; its session "
                       "is still queryable but cannot be traced any more.");
    }
    t->cmd_fn = fn;
    t->cmd_arg = arg;
    t->cmd_hold = hold;
    t->cmd_pending = true;
    t->cmd_ran = false;
    while (t->cmd_pending && !t->finished) {
        /* Kick until the tracer has taken the command: a kick that lands just before
         * it blocks in waitpid is lost, the next one is not. */
        syscall(SYS_tgkill, getpid(), t->thread_tid, SIG_KICK);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 2000000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cmd_done, &t->lock, &until);
    }
    bool ran = t->cmd_ran;
    t->cmd_pending = false;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
    if (!ran)
        return err_set(e, ERR_PROCESS_EXITED, "the target process exited before the change "
                       "could be made; its session is still queryable.");
    return 0;
}

int tracer_call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e)
{
    return call(t, fn, arg, true, e);
}

int tracer_read(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e)
{
    return call(t, fn, arg, false, e);
}

void tracer_each_image(struct tracer *t, void (*fn)(pid_t pid, struct hooks *h, void *arg),
                       void *arg)
{
    /* Holding may reap, and handling held stops may drop or add images: walk a
     * copy of the pids and find each space again. */
    pid_t pids[MAX_IMAGES];
    int n = t->n_images;
    for (int i = 0; i < n; i++)
        pids[i] = t->images[i].pid;
    for (int i = 0; i < n; i++) {
        struct space *sp = tr_space_by_pid(t, pids[i]);
        if (!sp)
            continue;
        struct held hd;
        tr_hold(t, sp, 0, &hd);
        sp = tr_space_by_pid(t, pids[i]);
        if (sp && sp->hooks)
            fn(pids[i], sp->hooks, arg);
        tr_release(t, &hd);
    }
}

struct thread_scan {
    struct tthread **ths;
    size_t n, cap;
};

static void scan_all(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct thread_scan *s = arg;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        struct tthread **p = realloc(s->ths, cap * sizeof *p);
        if (!p)
            return;
        s->ths = p;
        s->cap = cap;
    }
    s->ths[s->n++] = value;
}

static int by_process_then_tid(const void *a, const void *b)
{
    const struct tthread *x = *(struct tthread *const *)a, *y = *(struct tthread *const *)b;
    if (x->tgid != y->tgid)
        return x->tgid < y->tgid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void tracer_each_thread(struct tracer *t,
                        void (*fn)(pid_t tid, pid_t tgid, bool stopped, struct hooks *h,
                                   void *arg),
                        void *arg)
{
    /* Every image is held at once, so that the snapshot is one instant of the whole
     * program; holding may reap and drop images, hence the pids. */
    pid_t pids[MAX_IMAGES];
    struct held hds[MAX_IMAGES];
    int n = t->n_images;
    for (int i = 0; i < n; i++)
        pids[i] = t->images[i].pid;
    for (int i = 0; i < n; i++) {
        struct space *sp = tr_space_by_pid(t, pids[i]);
        hds[i] = (struct held){0};
        if (sp)
            tr_hold(t, sp, 0, &hds[i]);
    }
    struct thread_scan s = {0};
    u64map_each(&t->threads, scan_all, &s);
    if (s.n)
        qsort(s.ths, s.n, sizeof *s.ths, by_process_then_tid);
    for (size_t i = 0; i < s.n; i++) {
        const struct tthread *th = s.ths[i];
        struct space *sp = tr_space_of_process(t, th->tgid);
        bool stopped = th->state != TS_RUNNING && !th->in_vfork && !th->exiting;
        fn(th->tid, th->tgid, stopped, sp ? sp->hooks : NULL, arg);
    }
    free(s.ths);
    for (int i = 0; i < n; i++)
        tr_release(t, &hds[i]);
}

struct hooks *tracer_hooks(struct tracer *t) { return t->main.hooks; }

struct bptab *tracer_bptab(struct tracer *t) { return t->main.bp; }
struct hwwatch *tracer_hwwatch(struct tracer *t) { return t->hw; }
pid_t tracer_pid(const struct tracer *t) { return t->main_pid; }

int tracer_start(const struct tracer_spec *spec, struct tracer **out, pid_t *pid,
                 struct strobe_error *e)
{
    struct tracer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_INTERNAL, "out of memory starting a tracer");
    t->spec = *spec;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_kick_handler);
    sem_init(&t->started, 0, 0);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cmd_done, NULL);
    if (pthread_create(&t->thread, NULL, tracer_main, t) != 0) {
        sem_destroy(&t->started);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return err_set(e, ERR_INTERNAL, "cannot create the tracer thread");
    }
    while (sem_wait(&t->started) != 0 && errno == EINTR)
        ;
    if (t->start_failed) {
        if (e)
            *e = t->start_error;
        tracer_join(t);
        return -1;
    }
    *pid = t->main_pid;
    *out = t;
    return 0;
}

bool tracer_finished(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    bool done = t->finished;
    pthread_mutex_unlock(&t->lock);
    return done;
}

bool tracer_has_process(struct tracer *t, pid_t pid)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs && !found; i++)
        found = t->procs[i] == pid;
    pthread_mutex_unlock(&t->lock);
    return found;
}

void tracer_kill(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs; i++)
        kill(t->procs[i], SIGKILL);
    pthread_mutex_unlock(&t->lock);
}

void tracer_join(struct tracer *t)
{
    if (!t)
        return;
    pthread_join(t->thread, NULL);
    sem_destroy(&t->started);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cmd_done);
    free(t);
}
