/*
 * hooks_trap.c - the hooks' traps (hooks.h): the entry int3 and the return
 * trampoline of a traced function, the C++ throw and catch hooks, and the
 * function_enter and function_exit events they record (arguments, return values,
 * call sites, short renderings and trace watches), on the tracer thread.
 */
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "base/clock.h"
#include "base/u64map.h"
#include "dwarf/abi.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/patch/reloc.h"
#include "ptrace/proc/procmem.h"

/* ---- events ------------------------------------------------------------------- */

static void abi_regs_from(struct abi_regs *a, const struct user_regs_struct *r, pid_t tid,
                          bool fp)
{
    memset(a, 0, sizeof *a);
    a->rdi = r->rdi;
    a->rsi = r->rsi;
    a->rdx = r->rdx;
    a->rcx = r->rcx;
    a->r8 = r->r8;
    a->r9 = r->r9;
    a->rax = r->rax;
    a->rsp = r->rsp;
    if (fp) {
        struct user_fpregs_struct f;
        if (ptrace(PTRACE_GETFPREGS, tid, 0, &f) == 0)
            memcpy(a->xmm, f.xmm_space, sizeof a->xmm);
    }
}

/* A catch handler starts: frames below it were unwound, the live ones get their
 * trampolines back (their exits will be reported again). */
static void on_catch(struct hooks *h, struct thread *t, const struct user_regs_struct *regs,
                     int64_t now)
{
    hooks_calls_unwind_to(h, t, regs->rsp, now);
    for (int i = 0; i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (f->detached &&
            hooks_unwind_swap_slot(t, f, f->ret, hooks_calls_frame_trampoline(h, t, f)))
            f->detached = false;
    }
}

static void on_entry(struct hooks *h, struct thread *t, struct hook *k,
                     struct user_regs_struct *regs)
{
    int64_t now = mono_ns();
    h->hits++;
    if (k->role == HOOK_THROW) {
        hooks_unwind_detach_frames(h, t);
        return;
    }
    if (k->role == HOOK_CATCH) {
        on_catch(h, t, regs, now);
        return;
    }
    if (k->role == HOOK_DRAIN) {
        fast_drain_point(h);
        return;
    }
    k->calls++;
    if (k->quiet)
        return; /* counted only: no event, no exit hook */
    bool output = k->role == HOOK_OUTPUT; /* no event: its exit's trap is its use */
    if (output && !fastpath_output_fd(h, t->tgid, (int)regs->rdi))
        return; /* a socket, a file, a pipe of the program: nothing to read */
    struct abi_regs a;
    abi_regs_from(&a, regs, t->tid, k->needs_fp);
    /* A tail call: the callee was jumped to with the caller's trampoline as its
     * return address. Both frames share the slot; the callee's return will end
     * both, with the same return value. */
    uint64_t ret = 0;
    bool have_ret = procmem_read(t->memfd, regs->rsp, &ret, sizeof ret);
    bool tail_call = have_ret &&
                     (hooks_areas_is_return_trampoline(h, ret) || ret == fastpath_ret_tramp(h)) &&
                     t->depth > 0 &&
                     t->frames[t->depth - 1].rsp == regs->rsp;
    uint64_t tramp = hooks_areas_trampoline_for(h, hooks_areas_of_thread(h, t), k->addr);
    struct hk_call c = {.regs = &a, .ret = have_ret ? ret : 0, .tail = tail_call,
                        .push = (h->cfg.tuning.capture_exits || output) && tramp,
                        .silent = output, .mem = {procmem_read_ctx, &t->memfd, k},
                        .now = now};
    bool learn = hooks_calls_learns(h, k);
    if (learn)
        fast_learn_begin(h, k, false, &a, regs->rsp, t->memfd, &c.mem);
    struct frame *f = hooks_calls_entered(h, t, k, &c);
    if (learn)
        fast_learn_end(h, k, false);
    if (f && !tail_call && !procmem_write(t->memfd, regs->rsp, &tramp, sizeof tramp))
        t->depth--;
}

/* A trampoline hit: the function whose return address was at rsp-8 returned. */
static bool on_return(struct hooks *h, struct thread *t, struct user_regs_struct *regs)
{
    bool fp = false;
    for (int i = 0; i < t->depth && !fp; i++)
        fp = t->frames[i].hook->needs_fp;
    struct abi_regs a;
    abi_regs_from(&a, regs, t->tid, fp);
    uint64_t ret = hooks_calls_returned(h, t, regs->rsp - 8, &a, mono_ns(), NULL);
    if (!ret)
        return false;
    regs->rip = ret;
    return true;
}

static enum bp_verdict resume(pid_t tid, const struct user_regs_struct *regs)
{
    bool ok = ptrace(PTRACE_SETREGS, tid, 0, regs) == 0 &&
              ptrace(PTRACE_CONT, tid, 0, 0) == 0;
    return ok ? BP_RESUMED : BP_PASS;
}

static enum bp_verdict trap(struct hooks *h, struct thread *t, struct user_regs_struct *regs)
{
    pid_t tid = t->tid;
    uint64_t at = regs->rip - 1;
    if (hooks_areas_is_return_trampoline(h, at)) {
        if (!on_return(h, t, regs))
            return BP_PASS;
        return resume(tid, regs);
    }
    struct hook *k = u64map_get(&h->by_addr, at);
    if (!k || !k->armed)
        return BP_PASS;
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    on_entry(h, t, k, regs);
    /* Once a jump is planned, the int3 resumes through its trampoline, past the
     * count or the recording: no thread comes back inside the bytes the jump will
     * replace, which would keep the jump out for good under a hot loop. */
    if (k->cj_ok && hooks_areas_contain(h, hooks_areas_in(h, p), k->tramp)) {
        regs->rip = k->tramp + (k->fast ? k->fast_resume : COUNTJUMP_COUNT_LEN);
        return resume(tid, regs);
    }
    switch (k->rel.kind) {
    case RELOC_OUT_OF_LINE:
        /* A child forked before this slot's area was mapped has no copy of it:
         * it steps the original instruction instead. */
        if (!hooks_areas_contain(h, hooks_areas_in(h, p), k->slot))
            break;
        regs->rip = k->slot;
        return resume(tid, regs);
    case RELOC_EMULATE_JMP:
        regs->rip = k->rel.target;
        return resume(tid, regs);
    case RELOC_EMULATE_CALL: {
        uint64_t next = at + k->rel.insn_len;
        regs->rsp -= 8;
        if (!procmem_write(t->memfd, regs->rsp, &next, sizeof next))
            return BP_PASS;
        regs->rip = k->rel.target;
        return resume(tid, regs);
    }
    case RELOC_SINGLE_STEP:
        break;
    }
    /* The tracer steps the original instruction with the other threads stopped
     * (bptab.h, bptab_step_over). */
    h->single_step_hits++;
    regs->rip = at;
    return ptrace(PTRACE_SETREGS, tid, 0, regs) == 0 ? BP_STEP_OVER : BP_PASS;
}

/* Thread t (regs r) stopped for the recorder's FAST_STOP_SIGNAL (fast_abi.h): at a
 * FAST_FN_TRAP_ENTER or _EXIT, k's call is decoded from live memory and its program
 * learned; at a HOOK_DRAIN entry the rings are drained. A late signal does
 * nothing. The thread resumes where it stopped, without the signal. */
static void on_recorder_stop(struct hooks *h, struct thread *t, const struct user_regs_struct *r)
{
    struct hook *k = fastpath_stop_hook(h, r);
    if (!k)
        return;
    if (k->role == HOOK_DRAIN)
        fast_drain_point(h);
    if (k->role != HOOK_TRACE)
        return; /* HOOK_OUTPUT: the tracer read the output before this */
    struct abi_regs a;
    memset(&a, 0, sizeof a);
    a.rsp = r->r13;
    if (r->r8 == FAST_TRAP_ENTER) {
        struct fast_saved s;
        if (!procmem_read(t->memfd, r->r9, &s, sizeof s))
            return;
        a.rdi = s.rdi;
        a.rsi = s.rsi;
        a.rdx = s.rdx;
        a.rcx = s.rcx;
        a.r8 = s.r8;
        a.r9 = s.r9;
        a.rax = s.rax;
        memcpy(a.xmm, s.xmm, sizeof a.xmm);
        hooks_calls_learn(h, t, k, &a, false);
    } else if (r->r8 == FAST_TRAP_EXIT) {
        struct fast_ret_saved s;
        if (!procmem_read(t->memfd, r->r9, &s, sizeof s))
            return;
        a.rax = s.rax;
        a.rdx = s.rdx;
        memcpy(a.xmm[0], s.xmm0, sizeof a.xmm[0]);
        memcpy(a.xmm[1], s.xmm1, sizeof a.xmm[1]);
        hooks_calls_learn(h, t, k, &a, true);
    }
}

bool hooks_on_recorder_stop(struct hooks *h, pid_t tid, const siginfo_t *si,
                            const struct user_regs_struct *regs)
{
    _Static_assert(FAST_STOP_SIGNAL == HOOKS_RECORDER_SIGNAL, "the recorder's signal");
    if (si->si_signo != FAST_STOP_SIGNAL || si->si_code != FAST_STOP_CODE ||
        si->si_errno != FAST_STOP_MAGIC)
        return false;
    struct thread *t = hooks_state_thread(h, tid);
    if (t) {
        h->overhead.stops++;
        on_recorder_stop(h, t, regs);
    }
    return true;
}

enum bp_verdict hooks_on_trap(struct hooks *h, pid_t tid, struct user_regs_struct *regs,
                              int64_t woke_ns)
{
    struct thread *t = hooks_state_thread(h, tid);
    if (!t)
        return BP_PASS;
    fast_drain_complete(h); /* the fast path's calls before this one, frames included */
    struct hook *k = u64map_get(&h->by_addr, regs->rip - 1);
    if (!k && t->depth > 0 && hooks_areas_is_return_trampoline(h, regs->rip - 1))
        k = t->frames[t->depth - 1].hook;
    enum bp_verdict v = trap(h, t, regs);
    if (v != BP_PASS)
        h->overhead.stops++;
    int64_t now = mono_ns();
    if (!woke_ns || woke_ns >= now)
        return v; /* handled late (after a hold): its time is not known */
    int64_t gap = t->resumed_at && woke_ns > t->resumed_at ? woke_ns - t->resumed_at : 0;
    if (gap && (!h->overhead.round_trip || gap < h->overhead.round_trip))
        h->overhead.round_trip = gap;
    t->resumed_at = now;
    sampling_account(h, k, now, now - woke_ns + h->overhead.round_trip,
                     gap > h->overhead.round_trip ? gap - h->overhead.round_trip : 0);
    return v;
}
