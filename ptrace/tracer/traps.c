/*
 * traps.c - what happens to a thread that traps on an int3 of ours, and to threads
 * the debugger parks, resumes and single-steps (tracer.h; the tracer's state is
 * tracer_internal.h).
 *
 * A trap goes to the stop handlers of the owners holding its address, in owner
 * order (bptab.h): the first that does not pass decides (resumed, parked, or stepped
 * over the original instruction with the image's other threads held). A thread
 * resumed from a pause on an int3 gives that trap to the owners after the user
 * breakpoints (the trace hooks), then runs the original instruction. Single steps
 * are PTRACE_SINGLESTEP, asynchronous: their trap comes back through the wait loop
 * (traps_step_trapped) to the debugger.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "ptrace/patch/bptab.h"
#include "ptrace/patch/step.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/tracer/tracer_internal.h"

int tracer_add_stop_handler(struct tracer *t, const char *name, enum bp_owner owner,
                            tracer_stop_fn fn, void *arg)
{
    if (t->n_handlers == MAX_HANDLERS)
        return -1;
    int i = t->n_handlers++;
    for (; i > 0 && t->handlers[i - 1].owner > owner; i--)
        t->handlers[i] = t->handlers[i - 1];
    t->handlers[i] = (struct stop_handler){name, owner, fn, arg};
    return 0;
}

/* BP_STEP_OVER: tid's pc is on the instruction under the breakpoint at addr. It
 * runs with the other threads of the space held (the original byte is back in
 * tid's process meanwhile: no other thread may run past it), then tid continues. */
static void step_past(struct tracer *t, pid_t tid, uint64_t addr)
{
    struct space *sp = tracer_tracees_space_of(t, tid);
    if (!sp)
        return;
    pid_t space_pid = sp->pid;
    struct held hd;
    tracer_hold(t, sp, tid, &hd);
    sp = tracer_tracees_space_by_pid(t, space_pid);
    struct step_signals kept = {0};
    int status = sp ? bptab_step_over(sp->bp, tid, addr, &kept) : -1;
    /* The stepped instruction may have written a watched address: the step's one
     * SIGTRAP then stands for both (DR6.BS and Bn). */
    if (status != -1 && WIFSTOPPED(status)) {
        struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
        if (th)
            hwwatch_after_step(t->hw, tid, th->tgid);
    }
    tracer_hold_release(t, &hd);
    step_signals_resend(tid, &kept);
    if (status == -1) {
        /* No step (tid vanished, or the space went): never leave it stopped. */
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    if (WIFSTOPPED(status) && (status >> 16) == 0 && WSTOPSIG(status) == SIGTRAP) {
        struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
        if (th && th->park_requested) {
            /* Another thread's all-stop parked the image while this one was being
             * stepped over its int3 (its stop was in hand): it stays too. */
            th->park_requested = false;
            th->state = TS_PARKED;
            if (t->debugger.parked)
                t->debugger.parked(t, tid, t->debugger.arg);
            return;
        }
        ptrace(PTRACE_CONT, tid, 0, 0);
        return;
    }
    /* The instruction faulted, or ended in an event or the thread's end, or a
     * signal kept coming first: handled as the loop would (a fault is recorded as
     * a crash and delivered; pc is still on the int3, which traps again if the
     * program's handler returns). */
    if (WIFSTOPPED(status))
        stops_handle(t, tid, status);
    else
        tracer_tracees_reap(t, tid, status);
}

/* A trap on an int3 the table no longer holds but did: it was removed after the
 * trap (this thread reported it late), or this process kept a copy of it. The
 * byte is put back here and the thread rewound onto the program's instruction.
 * Only for an int3 trap (SI_KERNEL): a SIGTRAP sent by kill() is the program's. */
static bool rewind_stale(struct space *sp, pid_t tid, struct tthread *th,
                         struct user_regs_struct *regs)
{
    uint64_t addr = regs->rip - 1;
    siginfo_t si;
    if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0 || si.si_code != SI_KERNEL ||
        !bptab_rewind(sp->bp, th->tgid, addr))
        return false;
    regs->rip = addr;
    return ptrace(PTRACE_SETREGS, tid, 0, regs) == 0 && ptrace(PTRACE_CONT, tid, 0, 0) == 0;
}

/* Hands the trap of tid on addr (regs as it stopped: rip just past the int3) to the
 * handlers of the owners holding it whose owner is at least first. True when one
 * handled it; false leaves tid stopped with nothing done. */
static bool dispatch_from(struct tracer *t, pid_t tid, struct space *sp,
                          struct user_regs_struct *regs, enum bp_owner first)
{
    uint64_t addr = regs->rip - 1;
    unsigned owners = bptab_lookup(sp->bp, addr);
    struct tracer_stop st = {.regs = regs, .addr = addr, .owners = owners,
                             .bp = sp->bp, .hooks = sp->hooks, .woke_ns = t->woke_ns};
    for (int i = 0; i < t->n_handlers; i++) {
        struct stop_handler *h = &t->handlers[i];
        if (h->owner < first || !(owners & BP_OWNER_BIT(h->owner)))
            continue;
        enum bp_verdict v = h->fn(t, tid, &st, h->arg);
        st.woke_ns = t->woke_ns = 0; /* a second trap handled now had no wake-up */
        if (v == BP_PASS)
            continue;
        if (v == BP_STEP_OVER)
            step_past(t, tid, addr);
        /* Resumed by now, unless parked: the hold below must stop it too. */
        struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
        if (th && th->state == TS_STOPPED)
            th->state = v == BP_PARK ? TS_PARKED : TS_RUNNING;
        /* A hit may have throttled a hot function: its int3 goes with the image's
         * threads held, from the loop (never from inside a tracer_hold_release()). */
        t->throttle_due = true;
        return true;
    }
    return false;
}

/* Our int3 at addr, but no owner took this hit (a forked child on the entry point's
 * copy, a return trap without its frame, a thread resumed on a breakpoint that
 * already stopped it): the program's instruction runs. */
static bool run_original(struct tracer *t, pid_t tid, uint64_t addr)
{
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return false;
    regs.rip = addr;
    if (ptrace(PTRACE_SETREGS, tid, 0, &regs) != 0)
        return false;
    step_past(t, tid, addr);
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->state == TS_STOPPED)
        th->state = TS_RUNNING;
    return true;
}

bool traps_recorder_stop(struct tracer *t, pid_t tid)
{
    struct tthread *th = tracer_tracees_thread_of(t, tid);
    struct space *sp = th ? tracer_tracees_space_of_process(t, th->tgid) : NULL;
    struct user_regs_struct regs;
    siginfo_t si;
    return sp && sp->hooks && ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 &&
           ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0 &&
           hooks_on_recorder_stop(sp->hooks, tid, &si, &regs);
}

/* A SIGTRAP of tid: asks the owners of the int3 it hit. True when one handled it. */
bool traps_dispatch(struct tracer *t, pid_t tid)
{
    struct tthread *th = tracer_tracees_thread_of(t, tid);
    struct space *sp = th ? tracer_tracees_space_of_process(t, th->tgid) : NULL;
    struct user_regs_struct regs;
    if (!sp || ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return false;
    uint64_t addr = regs.rip - 1;
    if (!bptab_lookup(sp->bp, addr))
        return rewind_stale(sp, tid, th, &regs);
    if (dispatch_from(t, tid, sp, &regs, BP_ENTRY))
        return true;
    return run_original(t, tid, addr);
}

/* Resumes tid, stopped (TS_STOPPED or TS_PARKED) with its pc on an instruction that
 * has not run. An int3 of ours there has been reported already (the thread stopped
 * on it, or a step ended there): the owners that never stop a thread (trace hooks)
 * get it as a trap, so they miss no call, and the program's instruction runs. */
static int resume_here(struct tracer *t, pid_t tid, struct tthread *th)
{
    struct space *sp = tracer_tracees_space_of_process(t, th->tgid);
    struct user_regs_struct regs;
    th->state = TS_STOPPED;
    if (sp && ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0 && bptab_lookup(sp->bp, regs.rip)) {
        uint64_t addr = regs.rip;
        regs.rip = addr + 1;
        if (!dispatch_from(t, tid, sp, &regs, BP_USER_BREAKPOINT + 1))
            run_original(t, tid, addr);
        return 0;
    }
    th->state = TS_RUNNING;
    tracer_tracees_cont(t, tid, 0);
    return 0;
}

int tracer_resume_thread(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (!th || (th->state != TS_PARKED && th->state != TS_STOPPED))
        return -1;
    th->park_requested = false;
    if (th->pending != -1) {
        /* Parked by tracer_park_all with a stop of its own pending: handled now. */
        int status = th->pending;
        th->pending = -1;
        stops_on(t, tid, status);
        return 0;
    }
    return resume_here(t, tid, th);
}

void tracer_park(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->state == TS_STOPPED)
        th->state = TS_PARKED;
}

struct park_scan {
    const struct space *sp;
    pid_t except;
    struct held parked;
};

static void scan_held(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct tthread *th = value;
    struct park_scan *s = arg;
    if (!bptab_has_process(s->sp->bp, th->tgid))
        return;
    if (th->state == TS_STOPPED && th->tid != s->except) /* its stop is in hand */
        th->park_requested = true;
    if (th->state != TS_HELD)
        return;
    th->state = TS_PARKED;
    tracer_tracees_held_add(&s->parked, th->tid);
}

void tracer_park_all(struct tracer *t, pid_t tid, void (*fn)(pid_t tid, pid_t tgid, void *arg),
                     void *arg)
{
    struct space *sp = tracer_tracees_space_of(t, tid);
    if (!sp)
        return;
    struct held hd;
    tracer_hold(t, sp, tid, &hd);
    free(hd.tids);
    sp = tracer_tracees_space_of(t, tid);
    if (!sp)
        return;
    /* Every held thread of the space: those held just now and, from a tracer_call
     * function, those its command held. Threads parked already stay as they are. */
    struct park_scan s = {.sp = sp, .except = tid};
    u64map_each(&t->threads, scan_held, &s);
    for (size_t i = 0; i < s.parked.n; i++) {
        struct tthread *th = u64map_get(&t->threads, (uint64_t)s.parked.tids[i]);
        if (th && fn)
            fn(th->tid, th->tgid, arg);
    }
    free(s.parked.tids);
}

void tracer_with_space_held(struct tracer *t, pid_t tid, void (*fn)(void *arg), void *arg)
{
    struct space *sp = tracer_tracees_space_of(t, tid);
    if (!sp)
        return;
    struct held hd;
    tracer_hold(t, sp, tid, &hd);
    if (tracer_tracees_space_of(t, tid))
        fn(arg);
    tracer_hold_release(t, &hd);
}

pid_t tracer_tgid(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    return th ? th->tgid : 0;
}

void tracer_set_debugger(struct tracer *t, const struct tracer_debugger *d)
{
    t->debugger = *d;
}

int tracer_step(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (!th || (th->state != TS_PARKED && th->state != TS_STOPPED) || th->pending != -1)
        return -1;
    struct space *sp = tracer_tracees_space_of_process(t, th->tgid);
    struct user_regs_struct regs;
    if (!sp || ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return -1;
    th->step_cancelled = false;
    if (!bptab_lookup(sp->bp, regs.rip)) {
        th->state = TS_RUNNING;
        th->stepping = true;
        return step_resume(tid, 0);
    }
    /* An int3 of ours under the pc: the program's instruction is stepped with the
     * image's other threads held (bptab_step_over), and the step ends here. */
    pid_t space_pid = sp->pid;
    struct held hd;
    th->state = TS_STOPPED;
    tracer_hold(t, sp, tid, &hd);
    sp = tracer_tracees_space_by_pid(t, space_pid);
    struct step_signals kept = {0};
    int status = sp ? bptab_step_over(sp->bp, tid, regs.rip, &kept) : -1;
    if (status != -1 && WIFSTOPPED(status))
        hwwatch_after_step(t->hw, tid, th->tgid);
    tracer_hold_release(t, &hd);
    step_signals_resend(tid, &kept);
    if (status == -1) {
        ptrace(PTRACE_CONT, tid, 0, 0);
        th = u64map_get(&t->threads, (uint64_t)tid);
        if (th)
            th->state = TS_RUNNING;
        return -1;
    }
    if (!WIFSTOPPED(status)) {
        tracer_tracees_reap(t, tid, status);
        return 0;
    }
    if ((status >> 16) != 0 || WSTOPSIG(status) != SIGTRAP) {
        /* A fault, an event or a signal: handled as the loop would, stepping on. */
        th = u64map_get(&t->threads, (uint64_t)tid);
        if (th)
            th->stepping = true;
        stops_handle(t, tid, status);
        return 0;
    }
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0 && t->debugger.stepped)
        t->debugger.stepped(t, tid, &regs, t->debugger.arg);
    return 0;
}

void tracer_cancel_step(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->stepping)
        th->step_cancelled = true;
}

/* A SIGTRAP of th, which tracer_step resumed with PTRACE_SINGLESTEP: the step ended
 * (si_code TRAP_TRACE, or a watchpoint's trap at the same time), and the debugger
 * decides what comes next. An int3 trap (another thread wrote one under its pc
 * meanwhile) is dispatched as any. False: not the step's trap. */
bool traps_step_trapped(struct tracer *t, pid_t tid, struct tthread *th)
{
    siginfo_t si;
    if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0 || si.si_code == SI_KERNEL ||
        si.si_code == SI_USER || si.si_code == SI_TKILL)
        return false;
    th->stepping = false;
    if (th->step_cancelled || !t->debugger.stepped) {
        th->step_cancelled = false;
        ptrace(PTRACE_CONT, tid, 0, 0);
        return true;
    }
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0) {
        ptrace(PTRACE_CONT, tid, 0, 0);
        return true;
    }
    t->debugger.stepped(t, tid, &regs, t->debugger.arg);
    return true;
}

