/*
 * tracer.c - the per-session tracer thread: its start and end, the wait loop, the
 * handling of each stop it reports, and the stop handlers every session has (the
 * entry point, Rust's panic hook, the trace hooks). See tracer.h; what the tracer's
 * other files own (stops.c: what one stop means), and the state they share, is in
 * tracer_internal.h.
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
 * and single-stepping of threads for the debugger.
 *
 * Threads: every tracee thread has a state. Running; stopped while the loop
 * handles its stop; held (stopped by tracer_hold() so that code can be patched, with the
 * stop it reported, which tracer_hold_release() handles afterwards like any other); parked
 * (a handler or the debugger keeps it stopped until tracer_resume_thread()); being
 * stepped (PTRACE_SINGLESTEP: events and signals resume it stepping).
 *
 * Time order: the store gives event ids in timestamp order and holds an event back
 * while this thread may still push an older one (base/ring.h, "Time order"). So
 * each turn of the loop sets the ring's floor before it waits: the time then (a
 * stop's events are stamped when it is handled, later), or where the fast path's
 * drains have caught up to when that is earlier (hooks_fast_floor: its calls become
 * events up to 5 ms late). With no fast path recording, the ring is idle while the
 * loop waits, and busy again before the loop stamps anything.
 */
#include "base/u64map.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/tracer/tracer.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "ptrace/tracer/crash.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/tracer/tracer_internal.h"

static void kick_handler(int sig) { (void)sig; }

static void install_kick_handler(void)
{
    struct sigaction sa = {.sa_handler = kick_handler}; /* no SA_RESTART: waitpid -> EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIG_KICK, &sa, NULL);
}

/* ---- stop handlers ------------------------------------------------------------------ */

/* The entry breakpoint of the main process or of an exec'd child: it goes (the
 * thread resumes on the entry point's own instruction, or on another owner's int3
 * there), then what the session wants is armed, with the image's threads held. */
static enum bp_verdict entry_stop(struct tracer *t, pid_t tid, struct tracer_stop *st,
                                  void *arg)
{
    (void)arg;
    struct space *sp = tracer_tracees_space_by_pid(t, tid);
    if (!sp || !sp->entry || sp->entry != st->addr)
        return BP_PASS;
    bptab_remove(sp->bp, sp->entry, BP_ENTRY);
    sp->entry = 0;
    st->regs->rip = st->addr;
    ptrace(PTRACE_SETREGS, tid, 0, st->regs);
    bool is_main = sp == &t->main;
    struct held hd;
    tracer_hold(t, sp, tid, &hd);
    sp = tracer_tracees_space_by_pid(t, tid);
    if (sp)
        adopt_at_entry(t, sp, tid);
    if (sp && is_main && t->spec.on_entry)
        t->spec.on_entry(t->spec.arg, t);
    else if (sp && !is_main && t->spec.on_image_entry)
        t->spec.on_image_entry(t->spec.arg, t, tid, sp->hooks);
    tracer_hold_release(t, &hd);
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

/* ---- the thread --------------------------------------------------------------------- */

static void prepare_unwind(void *arg, pid_t tid, uint64_t *pc)
{
    struct tracer *t = arg;
    struct space *sp = tracer_tracees_space_of(t, tid);
    if (sp && sp->hooks)
        hooks_prepare_unwind(sp->hooks, tid, pc);
}

/* A watchpoint hit's unwind: the thread runs on, so its traced frames get their
 * trampolines back afterwards (unwind_end). */
static void watch_unwind(void *arg, pid_t tid, uint64_t *pc, bool end)
{
    struct tracer *t = arg;
    struct space *sp = tracer_tracees_space_of(t, tid);
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

/* Whether a thread of the program is inside a write the fast path follows. */
static bool writing(struct tracer *t)
{
    bool w = t->main.hooks && hooks_fast_writing(t->main.hooks);
    for (int i = 0; i < t->n_images && !w; i++)
        w = t->images[i].hooks && hooks_fast_writing(t->images[i].hooks);
    return w;
}

/* Before the loop waits: the floor of the tracer's ring (see the top of the file),
 * and the output's, while the fast path follows the writes to it. */
static void floor_wait(struct tracer *t)
{
    struct ring *r = t->spec.sink.ring;
    if (!r)
        return;
    int64_t floor = mono_ns();
    int64_t fast = t->main.hooks ? hooks_fast_floor(t->main.hooks) : INT64_MAX;
    for (int i = 0; i < t->n_images; i++) {
        int64_t f = t->images[i].hooks ? hooks_fast_floor(t->images[i].hooks) : INT64_MAX;
        if (f < fast)
            fast = f;
    }
    t->floor = (fast < floor ? fast : floor) - t->spec.sink.t0_ns;
    ring_floor(r, t->floor);
    if (fast == INT64_MAX)
        ring_idle(r);
    /* Told while the fast path records, and once more when it stops: not at every
     * trap of a program it never records. */
    if (t->output.wrote && (fast != INT64_MAX || t->output_told)) {
        t->spec.output_settled(t->spec.arg, fast, fast != INT64_MAX && writing(t));
        t->output_told = fast != INT64_MAX;
    }
}

/* The loop woke: busy before it stamps anything (ring_floor clears idle). */
static void floor_woke(struct tracer *t)
{
    if (t->spec.sink.ring)
        ring_floor(t->spec.sink.ring, t->floor);
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
    t->floor = mono_ns() - t->spec.sink.t0_ns;
    floor_woke(t); /* nothing stamped before this thread's start */
    int rc = tracer_launch(t);
    if (rc == 0) {
        t->main_alive = true;
        tracer_tracees_thread_add(t, t->main_pid, t->main_pid);
        tracer_tracees_space_init(t, &t->main, t->main_pid);
        if (t->main.bp && t->spec.on_entry && (t->spec.stop_at_entry || t->spec.n_runtimes))
            tracer_tracees_arm_entry(&t->main);
        t->crash = make_crash(t);
        if (t->spec.sink.ring) {
            struct hwwatch_config hc = {.sink = t->spec.sink, .unwind = watch_unwind,
                                        .unwind_arg = t};
            t->hw = hwwatch_new(&hc);
        }
        tracer_add_stop_handler(t, "entry", BP_ENTRY, entry_stop, NULL);
        tracer_add_stop_handler(t, "panic", BP_PANIC, panic_stop, NULL);
        tracer_add_stop_handler(t, "adopt", BP_ADOPT, adopt_stop, NULL);
        tracer_add_stop_handler(t, "hooks", BP_TRACE_HOOK, hook_stop, NULL);
        if (t->spec.on_start && t->main.bp)
            t->spec.on_start(t->spec.arg, t);
        tracer_throttle_timer_create(t);
    }
    sem_post(&t->started);
    if (rc != 0) {
        if (t->spec.sink.ring)
            ring_idle(t->spec.sink.ring);
        return NULL;
    }
    ptrace(PTRACE_CONT, t->main_pid, 0, 0);

    for (;;) {
        int status;
        floor_wait(t);
        pid_t pid = waitpid(-1, &status, __WALL | __WNOTHREAD);
        floor_woke(t);
        if (pid < 0) {
            if (errno == EINTR) {
                tracer_throttle_tick(t, mono_ns());
                tracer_commands_run(t);
                tracer_throttle_fast_timer(t);
                continue;
            }
            if (errno != ECHILD)
                log_error("tracer of pid %d: waitpid: %s", t->main_pid, strerror(errno));
            break;
        }
        if (WIFSTOPPED(status)) {
            t->woke_ns = mono_ns();
            stops_on(t, pid, status);
        } else {
            tracer_tracees_reap(t, pid, status);
        }
        if (t->throttle_due) {
            t->throttle_due = false;
            tracer_throttle_tick(t, 0);
        }
        tracer_commands_run(t);
        tracer_throttle_fast_timer(t);
    }
    if (t->spec.on_finish && t->main.hooks)
        t->spec.on_finish(t->spec.arg, t->main.hooks); /* before tracer_call refuses */
    pthread_mutex_lock(&t->lock);
    t->finished = true;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
    tracer_throttle_timer_delete(t);
    tracer_tracees_space_free(&t->main);
    while (t->n_images)
        tracer_tracees_image_drop(t, t->images[0].pid);
    crash_free(t->crash);
    t->crash = NULL;
    hwwatch_free(t->hw);
    t->hw = NULL;
    u64map_each(&t->threads, free_thread, NULL);
    u64map_free(&t->threads);
    if (t->spec.sink.ring)
        ring_idle(t->spec.sink.ring); /* it pushes nothing more */
    return NULL;
}

struct hooks *tracer_hooks(struct tracer *t) { return t->main.hooks; }

struct bptab *tracer_bptab(struct tracer *t) { return t->main.bp; }
struct hwwatch *tracer_hwwatch(struct tracer *t) { return t->hw; }
pid_t tracer_pid(const struct tracer *t) { return t->main_pid; }

static void set_fast_in(pid_t pid, struct hooks *h, void *arg)
{
    hooks_set_fast(h, pid, *(bool *)arg);
}

void tracer_set_fast(struct tracer *t, bool fast)
{
    t->spec.tuning.fast = fast; /* what make_hooks gives an image that execs later */
    if (t->main.hooks)
        hooks_set_fast(t->main.hooks, t->main_pid, fast);
    tracer_each_image(t, set_fast_in, &fast); /* the children that exec'd */
}

/* A stop round trip costs 11 us when tracer and target share a CPU and 45-78 us
 * when they do not (design.md, bench_trace). With a CPU idle, the scheduler wakes
 * the target on it every time, so "share" has to be forced: the tracer thread and
 * the target's main thread are pinned to the CPU the tracer runs on. Threads and
 * processes the target creates get the original affinity back, so a parallel
 * program still runs in parallel. */
void tracer_pin(struct tracer *t)
{
    if (t->pinned || !t->spec.tuning.pin_cpu || t->spec.tuning.fast ||
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

/* The output pipes the target gets as fds 1 and 2, known by what fstat says of
 * them (the hooks follow only the writes to these: struct hook_output), and whom
 * to tell of the writes followed without a stop. */
static struct hook_output output_pipes(const struct tracer_spec *spec)
{
    struct stat out, err;
    if (fstat(spec->stdout_fd, &out) != 0 || fstat(spec->stderr_fd, &err) != 0 ||
        !S_ISFIFO(out.st_mode) || !S_ISFIFO(err.st_mode) || out.st_dev != err.st_dev ||
        out.st_ino == err.st_ino)
        return (struct hook_output){.dev = 0};
    bool told = spec->output_follow && spec->output_wrote && spec->output_settled;
    return (struct hook_output){.dev = out.st_dev, .ino = {out.st_ino, err.st_ino},
                                .follow = told ? spec->output_follow : NULL,
                                .wrote = told ? spec->output_wrote : NULL,
                                .arg = spec->arg};
}

int tracer_start(const struct tracer_spec *spec, struct tracer **out, pid_t *pid,
                 struct strobe_error *e)
{
    struct tracer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_INTERNAL, "out of memory starting a tracer");
    t->spec = *spec;
    t->output = output_pipes(spec);
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
