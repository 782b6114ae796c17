/*
 * stops.c - what one stop the tracer's loop (or a hold, or a step waiting for its
 * thread) reports means, and how the thread resumes: an event (fork, clone, exec,
 * exit: tracer_tracees.c), the recorder's signal, a data watchpoint's trap, a step's
 * trap (traps.c), an int3 (traps.c asks its owners), or a signal, which is recorded
 * as a crash when it is fatal and then delivered.
 *
 * tracer_hold and the single-step waits (tracer_hold.c, traps.c) collect other threads'
 * stops while they wait and hand them here, which is why these three files call one
 * another; the rest of the room calls down into them.
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "base/u64map.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/tracer/crash.h"
#include "ptrace/tracer/tracer_internal.h"
#include "ptrace/watch/hwwatch.h"

static bool is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void stops_handle(struct tracer *t, pid_t pid, int status)
{
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (event == PTRACE_EVENT_STOP) {
        /* A group-stop keeps the process stopped (job control); the initial stop of
         * an auto-attached thread or child, and our interrupts, just resume. */
        if (is_stop_signal(sig))
            ptrace(PTRACE_LISTEN, pid, 0, 0);
        else
            tracer_tracees_cont(t, pid, 0);
        return;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
        event == PTRACE_EVENT_CLONE) {
        struct tthread *waiting = tracer_tracees_on_new(t, pid, event);
        if (waiting)
            tracer_tracees_resume_claimed(t, waiting);
    }
    struct tthread *th = event ? tracer_tracees_thread_of(t, pid) : NULL;
    if (event == PTRACE_EVENT_VFORK_DONE && th)
        th->in_vfork = false;
    if (event == PTRACE_EVENT_EXEC)
        tracer_tracees_on_exec(t, pid);
    if (event == PTRACE_EVENT_EXIT) {
        tracer_tracees_on_exit_event(t, pid);
        return;
    }
    if (event != 0) {
        tracer_tracees_cont(t, pid, 0);
        return;
    }
    struct tthread *tt = sig == SIGTRAP ? tracer_tracees_thread_of(t, pid) : NULL;
    if ((sig == SIGTRAP || sig == HOOKS_RECORDER_SIGNAL) && t->spec.drain_output)
        t->spec.drain_output(t->spec.arg);
    if (sig == HOOKS_RECORDER_SIGNAL && traps_recorder_stop(t, pid)) {
        tracer_tracees_cont(t, pid, 0); /* a thread being stepped steps on */
        return;
    }
    /* A data watchpoint's trap (si_code TRAP_HWBKPT, DR6 B0-B3), never an int3's:
     * recorded, and the thread runs on with no signal (a single-step's trap may
     * carry one too: the step goes on below). */
    bool watch_hit = tt && t->hw && hwwatch_on_trap(t->hw, pid, tt->tgid);
    if (tt && tt->stepping && traps_step_trapped(t, pid, tt))
        return;
    if (watch_hit) {
        ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    if (sig == SIGTRAP && traps_dispatch(t, pid))
        return;
    /* A crash is recorded before its signal is delivered: the program's own
     * handler, or the default action, still follows (a thread being stepped steps
     * into the handler). */
    crash_on_signal(t->crash, pid, sig);
    tracer_tracees_cont(t, pid, sig);
}

/* The loop's handling of one stop of tid, with its thread state kept. */
void stops_on(struct tracer *t, pid_t tid, int status)
{
    if (tracer_tracees_first_stop(t, tid, status))
        return;
    struct tthread *th = tracer_tracees_thread_of(t, tid);
    if (th)
        th->state = TS_STOPPED;
    /* Debug registers before the thread runs again: a new thread or child has
     * none. Not at an exec stop: the exec cleared them, and the new image has
     * no watches (hwwatch_on_exec). */
    if (th && (status >> 16) != PTRACE_EVENT_EXEC)
        hwwatch_on_stop(t->hw, tid, th->tgid);
    stops_handle(t, tid, status);
    th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->state == TS_STOPPED)
        th->state = TS_RUNNING;
}
