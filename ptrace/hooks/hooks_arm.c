/*
 * hooks_arm.c - the arming and disarming of hooks (hooks.h), in the scratch areas
 * of hooks_areas.c.
 *
 * Scratch areas: 1 MiB mapped near a module (so rel32 and RIP-relative fix-ups
 * reach), each with a 64 KiB writable block beside it for the counting jumps'
 * counters. Byte 0 is the return trampoline (int3); slots of RELOC_SLOT_SIZE follow.
 * Every int3 (entries and trampolines) is a BP_TRACE_HOOK reference in the image's
 * breakpoint table (bptab.h). Code bytes change only while every thread of the
 * image is stopped: hooks_arm and hooks_disarm run inside the tracer's commands,
 * which stop them all; a function sampled during its hit is only flagged, and the
 * tracer puts its counting jump in with hooks_tick under one stop of all threads
 * (hooks_patch_due; sampling.c). (A slot would be safe to write under running
 * threads anyway: it is written before any int3 leads to it.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64map.h"
#include "dwarf/abi.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/patch/reloc.h"

static bool type_is_float(const struct dw_type *t)
{
    return t && t->kind == DWT_FLOAT;
}

static bool needs_fp(const struct dw_function *fn)
{
    bool fp = fn->return_type && (fn->return_type->kind == DWT_FLOAT ||
                                  fn->return_type->kind == DWT_STRUCT);
    for (size_t i = 0; i < fn->n_params && !fp; i++)
        fp = type_is_float(fn->params[i].type) || fn->params[i].type->kind == DWT_STRUCT;
    return fp;
}

static bool write_slot(struct hooks *h, int memfd, const struct hook *k)
{
    return hooks_areas_write_scratch(h, memfd, k->slot, k->rel.slot, k->rel.slot_len);
}

static void fail(struct hooks_report *rep, const char *fmt, const char *name)
{
    rep->failed++;
    if (!rep->first_failure[0])
        snprintf(rep->first_failure, sizeof rep->first_failure, fmt, name);
}

/* Trace mode "fast": k's int3 gives way to its fast-path jump, planned once (a
 * function that cannot take it stays on its int3); a thread in the way of the jump
 * makes the next tick try again. Traced functions and fast_output.c's hooks. */
static void arm_fast(struct hooks *h, struct hook *k, pid_t stopped_tid, int memfd)
{
    if (!h->cfg.tuning.fast || k->role == HOOK_THROW || k->role == HOOK_CATCH || !k->armed)
        return;
    if (!k->cj_planned) {
        k->cj_planned = true;
        k->cj_ok = fastpath_plan(h, k, stopped_tid, memfd);
        /* Once the image records through the fast path, libc's output and renaming
         * functions drain it (fast_output.c; once per image, whatever k was). */
        if (h->fast)
            fast_output_hook_libc(h, stopped_tid);
    }
    if (k->cj_ok && k->fast && !sampling_try_jump(h, k))
        h->disarm_pending = true;
}

struct mode_change {
    struct hooks *h;
    pid_t stopped_tid;
    int memfd;
};

static void change_mode(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct mode_change *mc = arg;
    if (k->role != HOOK_TRACE || !k->wanted)
        return;
    if (mc->h->cfg.tuning.fast) {
        k->jump_blocked = false;
        arm_fast(mc->h, k, mc->stopped_tid, mc->memfd);
    } else if (k->fast && k->jumped) {
        sampling_unjump(mc->h, k); /* its int3 back; frames it pushed still return */
    }
}

void hooks_set_fast(struct hooks *h, pid_t stopped_tid, bool fast)
{
    struct process *p = hooks_state_process(h, h->cfg.pid);
    if (!p || h->cfg.tuning.fast == fast)
        return;
    h->cfg.tuning.fast = fast;
    struct mode_change mc = {h, stopped_tid, p->memfd};
    u64map_each(&h->by_addr, change_mode, &mc);
}

static void arm_one(struct hooks *h, pid_t stopped_tid, int memfd, const struct hook_target *t,
                    struct hooks_report *rep)
{
    struct hook *k = u64map_get(&h->by_addr, t->addr);
    if (k) {
        k->wanted = true;
        k->name = t->name;
        if (!k->armed && !k->jumped && hooks_areas_write_int3(h, k)) {
            rep->armed++;
            k->jump_blocked = false;
            arm_fast(h, k, stopped_tid, memfd);
        }
        return;
    }
    uint8_t code[RELOC_MAX_INSN];
    if (!bptab_read(h->cfg.bp, memfd, t->addr, code, sizeof code) &&
        !bptab_read(h->cfg.bp, memfd, t->addr, code, 1)) {
        fail(rep, "cannot read the code of %s", t->fn->name);
        return;
    }
    if (code[0] == INT3) {
        fail(rep, "%s already starts with a breakpoint", t->fn->name);
        return;
    }
    uint64_t slot = hooks_areas_slot_near(h, stopped_tid, memfd, t->module_lo, t->module_hi,
                                          RELOC_SLOT_SIZE);
    if (!slot) {
        fail(rep, "no scratch memory near %s", t->fn->name);
        return;
    }
    k = calloc(1, sizeof *k);
    if (!k) {
        fail(rep, "out of memory arming %s", t->fn->name);
        return;
    }
    k->addr = t->addr;
    k->fn = t->fn;
    k->name = t->name;
    k->slot = slot;
    k->wanted = true;
    k->role = t->role;
    k->needs_fp = needs_fp(t->fn);
    k->hidden_ret = t->fn->return_type && abi_returns_in_memory(t->fn->return_type);
    reloc_plan(code, sizeof code, t->addr, slot, &k->rel);
    if (k->rel.kind == RELOC_OUT_OF_LINE && !write_slot(h, memfd, k)) {
        free(k);
        fail(rep, "cannot write the scratch slot of %s", t->fn->name);
        return;
    }
    if (u64map_put(&h->by_addr, t->addr, k) != 0 || !hooks_areas_write_int3(h, k)) {
        u64map_del(&h->by_addr, t->addr);
        free(k);
        fail(rep, "cannot write the breakpoint of %s", t->fn->name);
        return;
    }
    rep->armed++;
    rep->single_step += k->rel.kind == RELOC_SINGLE_STEP;
    arm_fast(h, k, stopped_tid, memfd);
}

void hooks_arm(struct hooks *h, pid_t stopped_tid, const struct hook_target *t, size_t n,
               struct hooks_report *rep)
{
    memset(rep, 0, sizeof *rep);
    struct process *p = hooks_state_process(h, h->cfg.pid);
    if (!p) {
        rep->failed = n;
        snprintf(rep->first_failure, sizeof rep->first_failure,
                 "cannot open the memory of process %d", (int)h->cfg.pid);
        return;
    }
    for (size_t i = 0; i < n; i++)
        arm_one(h, stopped_tid, p->memfd, &t[i], rep);
}


void hooks_disarm(struct hooks *h, const uint64_t *addrs, size_t n)
{
    struct process *p = hooks_state_process(h, h->cfg.pid);
    for (size_t i = 0; i < n && p; i++) {
        struct hook *k = u64map_get(&h->by_addr, addrs[i]);
        if (!k || k->role != HOOK_TRACE)
            continue;
        k->wanted = false;
        k->rearm_at = 0;
        k->quiet = false;
        sampling_unjump(h, k); /* its counter stays readable in its trampoline */
        hooks_areas_restore_orig(h, k);
    }
}

struct traced_state {
    uint64_t *addrs;
    size_t max, n;
};

static void collect_traced(uint64_t key, void *value, void *arg)
{
    const struct hook *k = value;
    struct traced_state *st = arg;
    if (k->role != HOOK_TRACE || !k->wanted)
        return;
    if (st->n < st->max)
        st->addrs[st->n] = key;
    st->n++;
}

size_t hooks_traced(const struct hooks *h, uint64_t *addrs, size_t max)
{
    struct traced_state st = {addrs, max, 0};
    u64map_each(&h->by_addr, collect_traced, &st);
    return st.n;
}
