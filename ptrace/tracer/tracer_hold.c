/*
 * tracer_hold.c - stopping every thread of an address space (tracer_hold) and letting
 * them run again (tracer_hold_release), with the stops they reported meanwhile handled then
 * as the loop would have.
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
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "base/u64map.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/tracer/tracer_internal.h"

struct hold_scan {
    struct tracer *t;
    const struct space *sp;
    pid_t except;
    struct held *hd;
};

static void scan_running(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct tthread *th = value;
    struct hold_scan *s = arg;
    if (th->state == TS_RUNNING && !th->in_vfork && !th->exiting && th->tid != s->except &&
        bptab_has_process(s->sp->bp, th->tgid))
        tracer_tracees_held_add(s->hd, th->tid);
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

/* A thread or process created while hold() collects stops (its creator's clone or
 * fork event came in) is held too: a hold stops the whole space, and an all-stop
 * must not let a thread born meanwhile run. Its first stop is collected with the
 * others (one seen before the event waits already, TS_UNCLAIMED, and is held as
 * it is). */
static void hold_newborn(pid_t creator, struct held *want)
{
    unsigned long child = 0;
    if (ptrace(PTRACE_GETEVENTMSG, creator, 0, &child) == 0 && child &&
        ptrace(PTRACE_INTERRUPT, (pid_t)child, 0, 0) == 0)
        tracer_tracees_held_add(want, (pid_t)child);
}

/* Stops every running thread of sp but except and records them in hd. A thread
 * that reports another stop first (a breakpoint, a signal, an event) keeps it
 * pending: tracer_hold_release() handles it as the loop would have, so nothing is lost. The
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
void tracer_hold(struct tracer *t, const struct space *sp, pid_t except, struct held *hd)
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
            tracer_tracees_reap(t, tid, status);
            continue;
        }
        int event = status >> 16;
        if (event == PTRACE_EVENT_EXIT) {
            tracer_tracees_on_exit_event(t, tid);
            continue;
        }
        if (tracer_tracees_first_stop(t, tid, status))
            continue; /* claimed (and held) when its creator's event comes */
        unsigned long msg = 0;
        if (event == PTRACE_EVENT_EXEC && ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0)
            held_forget(&want, (pid_t)msg);
        bool clone = event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
                     event == PTRACE_EVENT_CLONE;
        if (clone) {
            struct tthread *waiting = tracer_tracees_on_new(t, tid, event);
            if (waiting) {
                waiting->state = TS_HELD; /* its first stop was seen: held as it is */
                waiting->pending = -1;
                tracer_tracees_held_add(hd, waiting->tid);
            } else {
                hold_newborn(tid, &want);
            }
        }
        struct tthread *th = tracer_tracees_thread_of(t, tid);
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
        /* A stop of the fast path's recorder is handled at once too: a held thread
         * may be stepped out of the recorder before release (a stacks snapshot),
         * and the stop replayed then would find it elsewhere, its work undone. */
        if (th->pending != -1 && event == 0 && WSTOPSIG(status) == HOOKS_RECORDER_SIGNAL &&
            traps_recorder_stop(t, tid)) {
            th->pending = -1;
            if (t->spec.drain_output) /* as the loop reads it at every such stop */
                t->spec.drain_output(t->spec.arg);
        }
        tracer_tracees_held_add(hd, tid);
    }
    free(want.tids);
}

/* Resumes what tracer_hold() stopped; the stops they reported meanwhile are handled now. */
void tracer_hold_release(struct tracer *t, struct held *hd)
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
            tracer_tracees_cont(t, th->tid, 0);
        } else {
            stops_on(t, th->tid, status);
        }
    }
    free(hd->tids);
    *hd = (struct held){0};
}
