/*
 * tracer.c - the per-session tracer thread. See tracer.h.
 *
 * The loop waits with __WALL | __WNOTHREAD, so a tracer only ever reaps its own
 * tracees even though several sessions run tracer threads in the same daemon.
 * Stops it does not own a reason for are resumed as ptrace(2) prescribes:
 * event stops and our own seize stops resume with no signal, signal-delivery stops
 * deliver the signal, group-stops are kept with PTRACE_LISTEN so job control works.
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
#include "ptrace/crash.h"
#include "ptrace/hooks.h"
#include "ptrace/procmem.h"

#define MAX_PROCS 256

/* The signal that interrupts the tracer's waitpid: a command is waiting, or a
 * throttled function is due to be re-armed. Its handler does nothing. */
#define SIG_KICK (SIGRTMIN + 3)

/* An int3 on a process's entry point (AT_ENTRY), while armed. */
struct entry_bp {
    uint64_t addr;
    uint8_t orig;
};

/* A child process that exec'd: another program, with hooks of its own, armed from
 * the session's patterns when it reaches its entry point. */
struct image {
    pid_t pid;
    struct hooks *hooks;
    struct entry_bp entry;
};

#define MAX_IMAGES 64

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
    /* One command at a time, from tracer_call(). */
    pthread_cond_t cmd_done;
    void (*cmd_fn)(struct tracer *t, void *arg);
    void *cmd_arg;
    bool cmd_pending, cmd_ran, finished;
    struct hooks *hooks;     /* the main image's: the program and its forks */
    struct image images[MAX_IMAGES]; /* processes that exec'd another program */
    int n_images;
    int64_t seq;             /* event sequence shared by all hooks */
    struct crash *crash;
    struct entry_bp entry;   /* the main process's entry breakpoint, while armed */
    timer_t rearm_timer;
    bool has_timer;
    cpu_set_t original_cpus; /* the affinity new threads of the target get back */
    bool pinned;             /* tracer and main thread share a CPU (tracer_pin) */
};

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
    if (code == ERR_ATTACH_FAILED)
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

/* An int3 on the entry point of pid: reached once the dynamic loader has mapped
 * every library, before any code of the program runs. */
static void arm_entry_breakpoint(pid_t pid, struct entry_bp *bp)
{
    int fd = procmem_open(pid);
    uint64_t entry = procmem_entry_point(pid);
    uint8_t orig, int3 = 0xCC;
    bool ok = fd >= 0 && entry && procmem_read(fd, entry, &orig, 1) &&
              procmem_write(fd, entry, &int3, 1);
    if (ok)
        *bp = (struct entry_bp){.addr = entry, .orig = orig};
    else
        log_warn("pid %d: cannot stop at the entry point; pending patterns are armed late",
                 pid);
    if (fd >= 0)
        close(fd);
}

/* Whether the trap of pid is its entry breakpoint; if so the original byte is back
 * and pid stands at the entry point, stopped. */
static bool hit_entry_breakpoint(pid_t pid, struct entry_bp *bp)
{
    struct user_regs_struct regs;
    if (!bp->addr || ptrace(PTRACE_GETREGS, pid, 0, &regs) != 0 || regs.rip - 1 != bp->addr)
        return false;
    int fd = procmem_open(pid);
    if (fd >= 0) {
        procmem_write(fd, bp->addr, &bp->orig, 1);
        close(fd);
    }
    regs.rip = bp->addr;
    bp->addr = 0;
    ptrace(PTRACE_SETREGS, pid, 0, &regs);
    return true;
}

/* The entry breakpoint of the main process or of an exec'd child was hit: arm
 * what the session wants there, resume. */
static bool at_entry(struct tracer *t, pid_t pid)
{
    if (pid == t->main_pid && hit_entry_breakpoint(pid, &t->entry)) {
        t->spec.on_entry(t->spec.arg, t);
        ptrace(PTRACE_CONT, pid, 0, 0);
        return true;
    }
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid && hit_entry_breakpoint(pid, &t->images[i].entry)) {
            if (t->spec.on_image_entry)
                t->spec.on_image_entry(t->spec.arg, t, pid, t->images[i].hooks);
            ptrace(PTRACE_CONT, pid, 0, 0);
            return true;
        }
    return false;
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
                PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
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
            if (t->spec.on_entry && t->spec.stop_at_entry)
                arm_entry_breakpoint(pid, &t->entry);
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

static struct hooks *make_hooks(struct tracer *t, pid_t pid)
{
    if (!t->spec.sink.ring)
        return NULL;
    struct hooks_config cfg = {
        .pid = pid, .sink = t->spec.sink, .tuning = t->spec.tuning, .seq = &t->seq,
    };
    struct hooks *h = hooks_new(&cfg);
    if (h)
        hooks_adopt(h, pid);
    return h;
}

/* The hooks thread tid belongs to: an exec'd child's image, else the main one. */
static struct hooks *hooks_of(struct tracer *t, pid_t tid)
{
    for (int i = 0; i < t->n_images; i++)
        if (hooks_owns_thread(t->images[i].hooks, tid))
            return t->images[i].hooks;
    return t->hooks;
}

static void image_drop(struct tracer *t, pid_t pid)
{
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid) {
            hooks_free(t->images[i].hooks);
            t->images[i] = t->images[--t->n_images];
            return;
        }
}

/* PTRACE_EVENT_EXEC of pid: the old image and its breakpoints are gone. The main
 * process starts over with fresh hooks (the session re-arms at its entry point);
 * a child becomes an image of its own, armed at its entry point. */
static void on_exec(struct tracer *t, pid_t pid)
{
    crash_on_exec(t->crash, pid);
    if (!t->hooks)
        return;
    if (pid == t->main_pid) {
        hooks_free(t->hooks);
        t->hooks = make_hooks(t, pid);
        for (int i = 0; i < t->n_images; i++)
            hooks_forget_process(t->images[i].hooks, pid);
        if (t->spec.on_main_exec)
            t->spec.on_main_exec(t->spec.arg);
        if (t->spec.on_entry)
            arm_entry_breakpoint(pid, &t->entry);
        return;
    }
    hooks_forget_process(hooks_of(t, pid), pid);
    image_drop(t, pid);
    if (t->n_images == MAX_IMAGES) {
        log_warn("pid %d: more than %d exec'd processes; this one is not traced", pid,
                 MAX_IMAGES);
        return;
    }
    struct image *img = &t->images[t->n_images];
    *img = (struct image){.pid = pid, .hooks = make_hooks(t, pid)};
    if (!img->hooks)
        return;
    t->n_images++;
    arm_entry_breakpoint(pid, &img->entry);
}

static void handle_stop(struct tracer *t, pid_t pid, int status)
{
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (event == PTRACE_EVENT_STOP) {
        /* A group-stop keeps the process stopped (job control); the initial stop of
         * an auto-attached thread or child, and our interrupts, just resume. */
        if (is_stop_signal(sig))
            ptrace(PTRACE_LISTEN, pid, 0, 0);
        else
            ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
        event == PTRACE_EVENT_CLONE) {
        unsigned long child = 0;
        if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &child) == 0) {
            if (t->pinned)
                sched_setaffinity((pid_t)child, sizeof t->original_cpus, &t->original_cpus);
            if (event != PTRACE_EVENT_CLONE) {
                procs_add(t, (pid_t)child);
                crash_on_fork(t->crash, pid, (pid_t)child);
            }
            struct hooks *h = hooks_of(t, pid);
            if (h)
                hooks_on_clone(h, pid, (pid_t)child, event != PTRACE_EVENT_CLONE);
        }
    }
    if (event == PTRACE_EVENT_EXEC)
        on_exec(t, pid);
    if (event == PTRACE_EVENT_EXIT)
        crash_on_exit_event(t->crash, pid);
    if (event != 0) {
        ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    struct hooks *h = sig == SIGTRAP ? hooks_of(t, pid) : NULL;
    if (sig == SIGTRAP && (at_entry(t, pid) || (h && hooks_on_trap(h, pid)) ||
                           crash_on_trap(t->crash, pid)))
        return;
    /* A crash is recorded before its signal is delivered: the program's own
     * handler, or the default action, still follows. */
    crash_on_signal(t->crash, pid, sig);
    ptrace(PTRACE_CONT, pid, 0, sig);
}

/* Re-arms throttled functions that are due and sets the timer for the next. */
static void tick(struct tracer *t)
{
    if (!t->hooks)
        return;
    int ms = hooks_tick(t->hooks);
    for (int i = 0; i < t->n_images; i++) {
        int img_ms = hooks_tick(t->images[i].hooks);
        if (img_ms >= 0 && (ms < 0 || img_ms < ms))
            ms = img_ms;
    }
    if (ms < 0 || !t->has_timer)
        return;
    struct itimerspec its = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}};
    timer_settime(t->rearm_timer, 0, &its, NULL);
}

/* A child process ended: its process_exit event (the main process's comes from the
 * session, behind the last of its output). */
static void record_child_exit(struct tracer *t, pid_t pid, int status)
{
    if (!t->spec.sink.ring)
        return;
    char text[128], data[96];
    event_describe_exit(pid, status, false, text, sizeof text, data, sizeof data);
    struct event ev = event_sink_init(&t->spec.sink, EV_PROCESS_EXIT, mono_ns());
    ev.pid = pid;
    ev.tid = pid;
    ev.text = text;
    ev.data = data;
    event_sink_push(&t->spec.sink, &ev);
}

/* A tracee is gone: a thread, a child process or the main process. Threads other
 * than a group leader are not in procs. */
static void reap(struct tracer *t, pid_t pid, int status)
{
    bool process = procs_remove(t, pid);
    struct hooks *h = hooks_of(t, pid);
    if (h)
        hooks_on_exit(h, pid);
    if (process) {
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

/* Runs the pending command with the main thread stopped. */
static void run_command(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    bool pending = t->cmd_pending;
    pthread_mutex_unlock(&t->lock);
    if (!pending)
        return;
    bool ran = false;
    int status = 0;
    if (t->main_alive && ptrace(PTRACE_INTERRUPT, t->main_pid, 0, 0) == 0) {
        pid_t w;
        do
            w = waitpid(t->main_pid, &status, __WALL);
        while (w < 0 && errno == EINTR);
        if (w == t->main_pid && WIFSTOPPED(status)) {
            t->cmd_fn(t, t->cmd_arg);
            ran = true;
            handle_stop(t, t->main_pid, status);
        } else if (w == t->main_pid) {
            reap(t, w, status);
        }
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
    struct hooks *h = hooks_of(t, tid);
    if (h)
        hooks_prepare_unwind(h, tid, pc);
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
        crash_on_exec(c, t->main_pid);
    return c;
}

static void *tracer_main(void *arg)
{
    struct tracer *t = arg;
    t->thread_tid = (pid_t)syscall(SYS_gettid);
    int rc = launch(t);
    if (rc == 0) {
        t->main_alive = true;
        t->hooks = make_hooks(t, t->main_pid);
        t->crash = make_crash(t);
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
                tick(t);
                run_command(t);
                continue;
            }
            if (errno != ECHILD)
                log_error("tracer of pid %d: waitpid: %s", t->main_pid, strerror(errno));
            break;
        }
        if (WIFSTOPPED(status)) {
            handle_stop(t, pid, status);
        } else {
            reap(t, pid, status);
        }
        run_command(t);
    }
    pthread_mutex_lock(&t->lock);
    t->finished = true;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
    if (t->has_timer)
        timer_delete(t->rearm_timer);
    hooks_free(t->hooks);
    t->hooks = NULL;
    while (t->n_images)
        image_drop(t, t->images[0].pid);
    crash_free(t->crash);
    t->crash = NULL;
    return NULL;
}

int tracer_call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e)
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

void tracer_each_image(struct tracer *t, void (*fn)(pid_t pid, struct hooks *h, void *arg),
                       void *arg)
{
    /* handle_stop() may drop or add images: walk a copy of the pids. */
    pid_t pids[MAX_IMAGES];
    int n = t->n_images;
    for (int i = 0; i < n; i++)
        pids[i] = t->images[i].pid;
    for (int i = 0; i < n; i++) {
        int status;
        pid_t w = -1;
        if (ptrace(PTRACE_INTERRUPT, pids[i], 0, 0) == 0)
            do
                w = waitpid(pids[i], &status, __WALL);
            while (w < 0 && errno == EINTR);
        if (w != pids[i])
            continue;
        if (!WIFSTOPPED(status)) {
            reap(t, w, status);
            continue;
        }
        /* Whatever stop came first (our interrupt, a breakpoint, a signal), the
         * process is stopped: change it, then handle that stop as usual. */
        for (int k = 0; k < t->n_images; k++)
            if (t->images[k].pid == w)
                fn(w, t->images[k].hooks, arg);
        handle_stop(t, w, status);
    }
}

struct hooks *tracer_hooks(struct tracer *t) { return t->hooks; }

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
