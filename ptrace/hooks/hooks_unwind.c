/*
 * hooks_unwind.c - a traced thread's stack as an unwinder reads it (hooks.h): the
 * real return addresses go back in place of the trampolines for the read (detached
 * for good, or lent and given back after it) and a pc in relocated code is mapped
 * back to its function; a thread caught in the hooks' own code stepped out of it
 * first; and the calls found on that stack when their function is hooked, adopted
 * so that their returns are reported (hooks_adopt_frames).
 */
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "base/clock.h"
#include "base/u64map.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/fastcode.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/patch/reloc.h"
#include "ptrace/proc/unwind.h"

/* ---- frames lent to unwinders --------------------------------------------------- */

/* Writes to into frame f's return-address slot only if it holds from: a frame the
 * shadow stack keeps after its call ended (its exit not known yet, the fast path's
 * records still unread) has a slot that belongs to another call now. */
bool hooks_unwind_swap_slot(const struct thread *t, const struct frame *f, uint64_t from,
                            uint64_t to)
{
    uint64_t now;
    return from && procmem_read(t->memfd, f->rsp, &now, sizeof now) && now == from &&
           procmem_write(t->memfd, f->rsp, &to, sizeof to);
}

/* The throwing thread's real return addresses go back on its stack before the
 * unwinder reads them; those frames will not report a normal exit. */
void hooks_unwind_detach_frames(struct hooks *h, struct thread *t)
{
    for (int i = 0; i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->detached &&
            hooks_unwind_swap_slot(t, f, hooks_calls_frame_trampoline(h, t, f), f->ret))
            f->detached = true;
    }
}

struct slot_lookup {
    uint64_t pc, orig;
};

static void find_slot(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct hook *k = value;
    struct slot_lookup *sl = arg;
    if (k->rel.kind == RELOC_OUT_OF_LINE && sl->pc >= k->slot &&
        sl->pc < k->slot + k->rel.slot_len)
        sl->orig = k->addr;
    if (k->tramp && sl->pc >= k->tramp && sl->pc < k->tramp + k->cj.tramp_len)
        sl->orig = k->addr; /* in the counting jump's copy of the first instructions */
}

/* Maps *pc from a relocated instruction in scratch memory back to the function's
 * own address, where the instruction came from. */
static void function_pc(struct hooks *h, uint64_t *pc)
{
    if (!hooks_areas_contain(h, h->n_areas, *pc))
        return;
    struct slot_lookup sl = {*pc, 0};
    u64map_each(&h->by_addr, find_slot, &sl);
    if (sl.orig)
        *pc = sl.orig;
}

void hooks_prepare_unwind(struct hooks *h, pid_t tid, uint64_t *pc)
{
    fast_drain_complete(h);
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    if (t)
        hooks_unwind_detach_frames(h, t);
    function_pc(h, pc);
}

/* A thread stopped by an int3 of the hooks whose trap is not handled yet (a hold
 * caught it): at a hook, it has not run the hook's instruction (its pc is the
 * hook's address); at a return trampoline, its function has returned (its pc is
 * the real return address of the frame whose slot was just popped). */
static void trap_pc(const struct hooks *h, pid_t tid, uint64_t *pc)
{
    const struct hook *k = u64map_get(&h->by_addr, *pc - 1);
    if (k && sampling_int3_trap_pending(tid, *pc - 1)) { /* armed, or jumped since */
        *pc -= 1;
        return;
    }
    const struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    struct user_regs_struct r;
    if (!t || !hooks_areas_is_return_trampoline(h, *pc - 1) ||
        !sampling_int3_trap_pending(tid, *pc - 1) ||
        ptrace(PTRACE_GETREGS, tid, 0, &r) != 0)
        return;
    for (int i = t->depth - 1; i >= 0; i--)
        if (t->frames[i].rsp == r.rsp - 8) {
            *pc = t->frames[i].ret;
            return;
        }
}

void hooks_unwind_begin(struct hooks *h, pid_t tid, uint64_t *pc)
{
    fast_drain_complete(h);
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    for (int i = 0; t && i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->detached &&
            hooks_unwind_swap_slot(t, f, hooks_calls_frame_trampoline(h, t, f), f->ret))
            f->detached = f->lent = true;
    }
    trap_pc(h, tid, pc);
    function_pc(h, pc);
}

void hooks_unwind_end(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    for (int i = 0; t && i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->lent)
            continue;
        if (hooks_unwind_swap_slot(t, f, f->ret, hooks_calls_frame_trampoline(h, t, f)))
            f->detached = false;
        f->lent = false;
    }
}

int hooks_unwind_thread(struct hooks *h, pid_t tid, int memfd,
                        const struct user_regs_struct *regs, size_t keep_head,
                        size_t max_steps, struct unwind_result *out)
{
    uint64_t pc = regs->rip;
    if (h)
        hooks_unwind_begin(h, tid, &pc);
    struct user_regs_struct shown = *regs;
    shown.rip = pc;
    if (pc != regs->rip)
        ptrace(PTRACE_SETREGS, tid, 0, &shown); /* the unwinders read it there */
    int rc = unwind_thread(tid, memfd, keep_head, 0, max_steps, out);
    if (pc != regs->rip)
        ptrace(PTRACE_SETREGS, tid, 0, regs);
    if (h) /* the traced frames' trampolines back: their exits are still reported */
        hooks_unwind_end(h, tid);
    if (rc != 0)
        unwind_result_free(out); /* unwind_thread keeps its frame array even then */
    return rc;
}

/* ---- threads caught in the hooks' own code --------------------------------------- */

#define LEAVE_MAX_STEPS 4096 /* the recorder runs a few hundred instructions a call */

struct in_code {
    uint64_t pc;
    bool in;
};

static void check_hook_code(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct hook *k = value;
    struct in_code *c = arg;
    uint64_t tramp_size = k->fast ? FASTJUMP_SLOT_SIZE : COUNTJUMP_SLOT_SIZE;
    if ((k->tramp && c->pc >= k->tramp && c->pc < k->tramp + tramp_size) ||
        (k->slot && c->pc >= k->slot && c->pc < k->slot + RELOC_SLOT_SIZE))
        c->in = true;
}

static bool in_hooks_code(const struct hooks *h, uint64_t pc)
{
    if (fastpath_in_code(h, pc))
        return true;
    if (!hooks_areas_contain(h, h->n_areas, pc))
        return false;
    struct in_code c = {pc, false};
    u64map_each(&h->by_addr, check_hook_code, &c);
    return c.in;
}

void hooks_leave_trampolines(struct hooks *h, pid_t tid)
{
    if (!h)
        return;
    struct step_signals kept = {0};
    struct user_regs_struct r;
    for (int i = 0; i < LEAVE_MAX_STEPS && ptrace(PTRACE_GETREGS, tid, 0, &r) == 0 &&
                    in_hooks_code(h, r.rip); i++) {
        int st = step_insn(tid, &kept);
        if (st < 0 || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
            break;
    }
    step_signals_resend(tid, &kept);
}

/* ---- calls in progress when their function is hooked --------------------------- */

#define ADOPT_MAX_FRAMES 256

/* The newly armed hook whose function holds pc, or NULL. */
static struct hook *new_hook_at(const struct hooks *h, const uint64_t *addrs, size_t n,
                                uint64_t pc)
{
    for (size_t i = 0; i < n; i++) {
        struct hook *k = u64map_get(&h->by_addr, addrs[i]);
        if (k && k->role == HOOK_TRACE && (k->armed || k->jumped) && pc >= k->addr &&
            pc < k->addr + (k->fn->end - k->fn->entry))
            return k;
    }
    return NULL;
}

/* Takes the frame whose return address lives at slot onto t's shadow stack, in
 * stack order (outer frames have higher slots), with its return through the
 * trampoline. False when it cannot (no trampoline, no memory). */
static bool adopt_one(struct hooks *h, struct thread *t, struct hook *k, uint64_t slot,
                      uint64_t ret, int64_t now)
{
    uint64_t tramp = hooks_areas_trampoline_for(h, hooks_areas_of_thread(h, t), k->addr);
    int at = 0;
    while (at < t->depth && t->frames[at].rsp > slot)
        at++;
    if (!tramp || !hooks_state_frame_push(t))
        return false;
    memmove(&t->frames[at + 1], &t->frames[at], (size_t)(t->depth - 1 - at) * sizeof *t->frames);
    t->frames[at] = (struct frame){.ret = ret, .rsp = slot, .t_enter = now, .hook = k,
                                   .in_progress = true};
    if (procmem_write(t->memfd, slot, &tramp, sizeof tramp))
        return true;
    memmove(&t->frames[at], &t->frames[at + 1], (size_t)(t->depth - 1 - at) * sizeof *t->frames);
    t->depth--;
    return false;
}

void hooks_adopt_frames(struct hooks *h, pid_t tid, const uint64_t *addrs, size_t n,
                        struct hooks_adopt_report *rep)
{
    struct thread *t = hooks_state_thread(h, tid);
    struct user_regs_struct regs;
    if (t && n)
        hooks_leave_trampolines(h, tid);
    if (!t || n == 0 || !h->cfg.tuning.capture_exits ||
        ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return;
    struct unwind_result uw;
    if (hooks_unwind_thread(h, tid, t->memfd, &regs, ADOPT_MAX_FRAMES, ADOPT_MAX_FRAMES,
                            &uw) != 0)
        return;
    int64_t now = mono_ns();
    for (size_t i = 0; i < uw.n; i++) {
        const struct unwind_frame *fr = &uw.frames[i];
        /* A caller's pc is its return address: the call is the byte before. */
        struct hook *k = new_hook_at(h, addrs, n, i == 0 ? fr->pc : fr->pc - 1);
        if (!k || (i == 0 && fr->pc == k->addr))
            continue; /* not newly hooked, or about to run its entry (reported) */
        /* The return address sits just below the CFA; trusted only when the CFA
         * came from CFI (a frame-pointer guess can name an outer frame's slot) and
         * the word there is the caller's pc as the unwinder found it. */
        uint64_t ret = 0, slot = fr->cfa - 8;
        /* A call followed already (its function hooked, disarmed and hooked again
         * while it ran) keeps its frame; its slot holds our trampoline again. */
        bool tracked = false;
        for (int d = 0; fr->cfa && d < t->depth && !tracked; d++)
            tracked = t->frames[d].rsp == slot;
        if (tracked)
            continue;
        if (fr->cfa && i + 1 < uw.n && unwind_has_cfi(t->tgid, i == 0 ? fr->pc : fr->pc - 1) &&
            procmem_read(t->memfd, slot, &ret, sizeof ret) && ret == uw.frames[i + 1].pc &&
            adopt_one(h, t, k, slot, ret, now))
            rep->adopted++;
        else
            rep->lost++;
    }
    unwind_result_free(&uw);
}
