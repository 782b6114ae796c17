/*
 * hooks.c - entry/exit hooks. See hooks.h.
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
#include "ptrace/hooks.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "base/u64map.h"
#include "dwarf/abi.h"
#include "dwarf/value.h"
#include "dwarf/value_short.h"
#include "ptrace/bptab.h"
#include "ptrace/fnsym.h"
#include "ptrace/callsite.h"
#include "ptrace/hooks_internal.h"
#include "ptrace/inject.h"
#include "ptrace/procmem.h"
#include "ptrace/reloc.h"
#include "ptrace/twatch.h"
#include "ptrace/unwind.h"

/* ---- processes and threads ------------------------------------------------- */

struct process *hk_process_get(struct hooks *h, pid_t tgid)
{
    struct process *p = u64map_get(&h->procs, (uint64_t)tgid);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->tgid = tgid;
    p->memfd = procmem_open(tgid);
    if (p->memfd < 0 || u64map_put(&h->procs, (uint64_t)tgid, p) != 0) {
        if (p->memfd >= 0)
            close(p->memfd);
        free(p);
        return NULL;
    }
    return p;
}

static struct thread *thread_new(struct hooks *h, pid_t tid, pid_t tgid)
{
    struct process *p = hk_process_get(h, tgid);
    struct thread *t = p ? calloc(1, sizeof *t) : NULL;
    if (!t)
        return NULL;
    t->tid = tid;
    t->tgid = tgid;
    t->memfd = p->memfd;
    if (u64map_put(&h->threads, (uint64_t)tid, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

static struct thread *thread_get(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    return t ? t : thread_new(h, tid, procmem_tgid(tid));
}

static struct frame *frame_push(struct thread *t)
{
    if (t->depth == t->cap) {
        if (t->cap >= MAX_FRAMES)
            return NULL;
        int cap = t->cap ? t->cap * 2 : 32;
        struct frame *f = realloc(t->frames, (size_t)cap * sizeof *f);
        if (!f)
            return NULL;
        t->frames = f;
        t->cap = cap;
    }
    return &t->frames[t->depth++];
}

/* ---- scratch and arming ------------------------------------------------------ */

static bool reaches(uint64_t a, uint64_t b)
{
    uint64_t d = a > b ? a - b : b - a;
    return d < (1ULL << 31) - SCRATCH_SIZE;
}

static bool is_trampoline(const struct hooks *h, uint64_t addr)
{
    for (size_t i = 0; i < h->n_areas; i++)
        if (h->areas[i].base == addr)
            return true;
    return false;
}

/* How many scratch areas process p has (the main process has them all). */
size_t hk_areas_in(const struct hooks *h, const struct process *p)
{
    return p && p->forked ? p->n_areas : h->n_areas;
}

/* Whether addr lies in one of the first n scratch areas. */
bool hk_in_areas(const struct hooks *h, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n && i < h->n_areas; i++)
        if (addr >= h->areas[i].base && addr < h->areas[i].base + SCRATCH_SIZE)
            return true;
    return false;
}

static uint64_t map_counters(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t base);

/* A free slot of size bytes (a multiple of RELOC_SLOT_SIZE) near [lo, hi), mapping
 * a new area through stopped_tid if needed (0: only in the areas there are). */
uint64_t hk_slot_near(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t lo,
                          uint64_t hi, uint64_t size)
{
    for (size_t i = 0; i < h->n_areas; i++) {
        struct scratch *s = &h->areas[i];
        if (reaches(s->base, lo) && reaches(s->base, hi) && s->used + size <= SCRATCH_SIZE) {
            uint64_t slot = s->base + s->used;
            s->used += size;
            return slot;
        }
    }
    if (!stopped_tid)
        return 0;
    uint64_t want = procmem_free_near(h->cfg.pid, lo, hi, SCRATCH_SIZE);
    struct step_signals kept = {0};
    uint64_t base = want ? inject_mmap_exec(stopped_tid, memfd, want, SCRATCH_SIZE, &kept)
                         : 0;
    step_signals_resend(stopped_tid, &kept); /* delivered again; nothing is lost */
    if (!base)
        return 0;
    struct scratch *areas = realloc(h->areas, (h->n_areas + 1) * sizeof *areas);
    if (!areas)
        return 0;
    h->areas = areas;
    /* The trampoline's int3: in this process alone, children forked before may
     * have their own data there. */
    if (!bptab_insert_only(h->cfg.bp, base, BP_TRACE_HOOK, h->cfg.pid))
        return 0;
    h->areas[h->n_areas++] = (struct scratch){base, 2 * RELOC_SLOT_SIZE,
                                              map_counters(h, stopped_tid, memfd, base), 0};
    return base + RELOC_SLOT_SIZE;
}

/* The counting jumps' counter block of a new scratch area at base, mapped beside
 * it in the same stop: 0 if it cannot be (those functions then count on their int3). */
static uint64_t map_counters(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t base)
{
    uint64_t want = procmem_free_near(h->cfg.pid, base, base + SCRATCH_SIZE, COUNTERS_SIZE);
    long args[6] = {(long)want, COUNTERS_SIZE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0};
    struct step_signals kept = {0};
    long r = want ? inject_syscall(stopped_tid, memfd, SYS_mmap, args, &kept) : -1;
    step_signals_resend(stopped_tid, &kept);
    if (r < 0 && r > -4096)
        return 0;
    return reaches((uint64_t)r, base) ? (uint64_t)r : 0;
}

/* A counter for a counting jump whose trampoline is at tramp, 0 if none is left. */
uint64_t hk_counter_near(struct hooks *h, uint64_t tramp)
{
    for (size_t i = 0; i < h->n_areas; i++) {
        struct scratch *s = &h->areas[i];
        if (tramp >= s->base && tramp < s->base + SCRATCH_SIZE && s->counters &&
            s->counters_used + 8 <= COUNTERS_SIZE) {
            s->counters_used += 8;
            return s->counters + s->counters_used - 8;
        }
    }
    return 0;
}

/* Puts hook k's int3 (arm) or takes it out, through the image's breakpoint table,
 * which writes every process of the image: forked children's memory is a copy, so
 * patterns changed after the fork reach them only this way. */
static bool patch(struct hooks *h, struct hook *k, bool arm)
{
    return arm ? bptab_insert(h->cfg.bp, k->addr, BP_TRACE_HOOK)
               : bptab_remove(h->cfg.bp, k->addr, BP_TRACE_HOOK);
}

bool hk_write_int3(struct hooks *h, struct hook *k)
{
    k->armed = patch(h, k, true);
    return k->armed;
}

void hk_restore_orig(struct hooks *h, struct hook *k)
{
    if (k->armed && patch(h, k, false))
        k->armed = false;
}

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

struct scratch_copy {
    const struct hooks *h;
    uint64_t addr;
    const uint8_t *bytes;
    size_t len;
};

static void copy_scratch(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct scratch_copy *sc = arg;
    if (p->forked && hk_in_areas(sc->h, p->n_areas, sc->addr))
        procmem_write(p->memfd, sc->addr, sc->bytes, sc->len);
}

/* Writes bytes into scratch memory at addr in the main process (memfd) and in the
 * forked children that have its area: they jump there too. */
bool hk_write_scratch(struct hooks *h, int memfd, uint64_t addr, const uint8_t *bytes,
                          size_t len)
{
    if (!procmem_write(memfd, addr, bytes, len))
        return false;
    struct scratch_copy sc = {h, addr, bytes, len};
    u64map_each(&h->procs, copy_scratch, &sc);
    return true;
}

static bool write_slot(struct hooks *h, int memfd, const struct hook *k)
{
    return hk_write_scratch(h, memfd, k->slot, k->rel.slot, k->rel.slot_len);
}

static void fail(struct hooks_report *rep, const char *fmt, const char *name)
{
    rep->failed++;
    if (!rep->first_failure[0])
        snprintf(rep->first_failure, sizeof rep->first_failure, fmt, name);
}

static void arm_one(struct hooks *h, pid_t stopped_tid, int memfd, const struct hook_target *t,
                    struct hooks_report *rep)
{
    struct hook *k = u64map_get(&h->by_addr, t->addr);
    if (k) {
        k->wanted = true;
        k->name = t->name;
        if (!k->armed && !k->jumped && hk_write_int3(h, k))
            rep->armed++;
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
    uint64_t slot = hk_slot_near(h, stopped_tid, memfd, t->module_lo, t->module_hi,
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
    if (u64map_put(&h->by_addr, t->addr, k) != 0 || !hk_write_int3(h, k)) {
        u64map_del(&h->by_addr, t->addr);
        free(k);
        fail(rep, "cannot write the breakpoint of %s", t->fn->name);
        return;
    }
    rep->armed++;
    rep->single_step += k->rel.kind == RELOC_SINGLE_STEP;
}

void hooks_arm(struct hooks *h, pid_t stopped_tid, const struct hook_target *t, size_t n,
               struct hooks_report *rep)
{
    memset(rep, 0, sizeof *rep);
    struct process *p = hk_process_get(h, h->cfg.pid);
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
    struct process *p = hk_process_get(h, h->cfg.pid);
    for (size_t i = 0; i < n && p; i++) {
        struct hook *k = u64map_get(&h->by_addr, addrs[i]);
        if (!k || k->role != HOOK_TRACE)
            continue;
        k->wanted = false;
        k->rearm_at = 0;
        k->quiet = false;
        hk_unjump(h, k); /* its counter stays readable in its trampoline */
        hk_restore_orig(h, k);
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

void hooks_set_depth(struct hooks *h, int depth, bool asked)
{
    h->vopts.max_depth = depth < 1 ? 1 : depth > 10 ? 10 : depth;
    h->vopts.depth_asked = asked;
}

/* ---- events ------------------------------------------------------------------- */

static void push_event(struct hooks *h, struct event *ev)
{
    event_sink_push(&h->cfg.sink, ev);
}

const char *hk_function_name(const struct hook *k)
{
    return k->name ? k->name : k->fn->name;
}

const char *hk_function_raw(const struct hook *k)
{
    return k->fn->linkage_name ? k->fn->linkage_name
         : k->name && strcmp(k->name, k->fn->name) != 0 ? k->fn->name : NULL;
}

static void fill_location(struct event *ev, const struct hook *k, const struct thread *t)
{
    ev->pid = t->tgid;
    ev->tid = t->tid;
    ev->thread_name = t->name[0] ? t->name : NULL;
    ev->function = hk_function_name(k);
    ev->function_raw = hk_function_raw(k);
    ev->source_file = k->fn->decl_file;
    ev->line = k->fn->decl_line;
    ev->sampled = k->sampled;
}

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

/* The throwing thread's real return addresses go back on its stack before the
 * unwinder reads them; those frames will not report a normal exit. */
static void detach_frames(struct thread *t)
{
    for (int i = 0; i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->detached && procmem_write(t->memfd, f->rsp, &f->ret, sizeof f->ret))
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

void hooks_prepare_unwind(struct hooks *h, pid_t tid, uint64_t *pc)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    if (t)
        detach_frames(t);
    if (!hk_in_areas(h, h->n_areas, *pc))
        return;
    struct slot_lookup sl = {*pc, 0};
    u64map_each(&h->by_addr, find_slot, &sl);
    if (sl.orig)
        *pc = sl.orig;
}

/* The event's data with the watch values of k's function added: fixed (members
 * without braces) first; returns fallback when no watch applies. */
static const char *watch_data(struct hooks *h, struct thread *t, struct hook *k,
                              const char *fixed, const char *fallback)
{
    if (!h->cfg.watches)
        return fallback;
    h->data.len = 0;
    if (h->data.buf)
        h->data.buf[0] = '\0';
    sb_puts(&h->data, "{");
    if (fixed) {
        sb_puts(&h->data, fixed);
        sb_puts(&h->data, ",");
    }
    if (!twatch_render(h->cfg.watches, k->fn, &k->wcache, t->tgid, t->memfd, &h->data))
        return fallback;
    sb_puts(&h->data, "}");
    return h->data.oom ? fallback : h->data.buf;
}

/* The short rendering of value JSON (value_short.h) as the data member key, after
 * the members fixed (without braces; NULL: none), in h->brief (the member text) and
 * h->brief_obj (an object of them); false when memory ran out. */
static bool brief_member(struct hooks *h, const char *fixed, const char *key,
                         const char *json, bool args)
{
    struct strbuf text = {0};
    if (args)
        value_short_args(&text, json, VALUE_SHORT_LIMIT);
    else
        value_short(&text, json, VALUE_SHORT_LIMIT);
    h->brief.len = h->brief_obj.len = 0;
    if (fixed)
        sb_printf(&h->brief, "%s,", fixed);
    sb_printf(&h->brief, "\"%s\":", key);
    sb_json_string(&h->brief, text.buf ? text.buf : "");
    sb_puts(&h->brief_obj, "{");
    sb_puts(&h->brief_obj, h->brief.buf ? h->brief.buf : "");
    sb_puts(&h->brief_obj, "}");
    bool ok = !text.oom && !h->brief.oom && !h->brief_obj.oom;
    sb_free(&text);
    return ok;
}

/* An enter event's data: its call site (callsite.h), the arguments' short rendering
 * and k's watch values. */
static const char *enter_data(struct hooks *h, struct thread *t, struct hook *k,
                              uint64_t ret, const char *args)
{
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    const char *fixed = p && ret ? callsite_members(&p->sites, t->tgid, ret) : NULL;
    if (args && k->fn->n_params > 0 && brief_member(h, fixed, "argsShort", args, true))
        return watch_data(h, t, k, h->brief.buf, h->brief_obj.buf);
    if (!fixed)
        return watch_data(h, t, k, NULL, NULL);
    h->site.len = 0;
    if (h->site.buf)
        h->site.buf[0] = '\0';
    sb_printf(&h->site, "{%s}", fixed);
    return watch_data(h, t, k, fixed, h->site.oom ? NULL : h->site.buf);
}

enum exit_kind { EXIT_RETURN, EXIT_UNWOUND };

static uint64_t trampoline_for(const struct hooks *h, size_t n, uint64_t addr);
static size_t areas_of_thread(const struct hooks *h, const struct thread *t);

void hooks_unwind_begin(struct hooks *h, pid_t tid, uint64_t *pc)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    for (int i = 0; t && i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->detached && procmem_write(t->memfd, f->rsp, &f->ret, sizeof f->ret))
            f->detached = f->lent = true;
    }
    if (!hk_in_areas(h, h->n_areas, *pc))
        return;
    struct slot_lookup sl = {*pc, 0};
    u64map_each(&h->by_addr, find_slot, &sl);
    if (sl.orig)
        *pc = sl.orig;
}

void hooks_unwind_end(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    for (int i = 0; t && i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        if (!f->lent)
            continue;
        uint64_t tramp = trampoline_for(h, areas_of_thread(h, t), f->hook->addr);
        if (tramp && procmem_write(t->memfd, f->rsp, &tramp, sizeof tramp))
            f->detached = false;
        f->lent = false;
    }
}

static void emit_exit(struct hooks *h, struct thread *t, const struct frame *f,
                      const struct user_regs_struct *regs, enum exit_kind kind, int64_t now)
{
    struct event ev = event_sink_init(&h->cfg.sink, EV_FUNCTION_EXIT, now);
    fill_location(&ev, f->hook, t);
    ev.seq = ++*h->seq;
    ev.parent_seq = f->seq;
    ev.duration_ns = now - f->t_enter;
    /* The data every such exit has, [unwound][in progress]: as an object, and as
     * members for watch_data to put before the watch values. */
    static const char *const objects[2][2] = {
        {NULL, "{\"inProgress\":true}"},
        {"{\"unwound\":true}", "{\"unwound\":true,\"inProgress\":true}"},
    };
    static const char *const members[2][2] = {
        {NULL, "\"inProgress\":true"},
        {"\"unwound\":true", "\"unwound\":true,\"inProgress\":true"},
    };
    bool unwound = kind == EXIT_UNWOUND;
    const char *fixed = members[unwound][f->in_progress];
    ev.data = objects[unwound][f->in_progress];
    if (!unwound) {
        struct abi_regs a;
        abi_regs_from(&a, regs, t->tid, f->hook->needs_fp);
        h->ret.len = 0;
        if (h->ret.buf)
            h->ret.buf[0] = '\0';
        /* An adopted frame's struct-return address is rax at the return (SysV). */
        uint64_t hidden = f->in_progress ? regs->rax : f->hidden_ret;
        fnsym_use(h->fnsym, t->tgid);
        abi_return_json(&h->ret, f->hook->fn->return_type, &a, hidden, procmem_read_ctx,
                        &t->memfd, &h->vopts);
        ev.return_value = h->ret.oom ? NULL : h->ret.buf;
        if (ev.return_value && f->hook->fn->return_type &&
            brief_member(h, fixed, "retShort", ev.return_value, false)) {
            ev.data = h->brief_obj.buf;
            fixed = h->brief.buf;
        }
    }
    ev.data = watch_data(h, t, f->hook, fixed, ev.data);
    push_event(h, &ev);
}

/* Frames whose return-address slot is at or below the stack pointer of a new call
 * are gone from the real stack: a longjmp or an exception unwound them. */
static void prune_stale(struct hooks *h, struct thread *t, const struct user_regs_struct *regs,
                        int64_t now)
{
    while (t->depth > 0 && t->frames[t->depth - 1].rsp <= regs->rsp) {
        if (t->frames[t->depth - 1].rsp == regs->rsp && t->frames[t->depth - 1].tail_caller)
            break;
        t->depth--;
        emit_exit(h, t, &t->frames[t->depth], regs, EXIT_UNWOUND, now);
    }
}

/* The return trampoline for a hook at addr in a process with the first n areas:
 * the area near addr, else any (a return address reaches anywhere); 0 if none. */
static uint64_t trampoline_for(const struct hooks *h, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n && i < h->n_areas; i++)
        if (reaches(h->areas[i].base, addr))
            return h->areas[i].base;
    return n && h->n_areas ? h->areas[0].base : 0;
}

static size_t areas_of_thread(const struct hooks *h, const struct thread *t)
{
    return hk_areas_in(h, u64map_get(&h->procs, (uint64_t)t->tgid));
}

/* A catch handler starts: frames below it were unwound, the live ones get their
 * trampolines back (their exits will be reported again). */
static void on_catch(struct hooks *h, struct thread *t, const struct user_regs_struct *regs,
                     int64_t now)
{
    prune_stale(h, t, regs, now);
    for (int i = 0; i < t->depth; i++) {
        struct frame *f = &t->frames[i];
        uint64_t tramp = trampoline_for(h, areas_of_thread(h, t), f->hook->addr);
        if (f->detached && tramp && procmem_write(t->memfd, f->rsp, &tramp, sizeof tramp))
            f->detached = false;
    }
}

static void on_entry(struct hooks *h, struct thread *t, struct hook *k,
                     struct user_regs_struct *regs)
{
    int64_t now = mono_ns();
    h->hits++;
    if (k->role == HOOK_THROW) {
        detach_frames(t);
        return;
    }
    if (k->role == HOOK_CATCH) {
        on_catch(h, t, regs, now);
        return;
    }
    k->calls++;
    if (k->quiet)
        return; /* counted only: no event, no exit hook */
    k->recorded++;
    hk_throttle_if_hot(h, k, now);
    procmem_thread_name_cached(t->tid, t->name, sizeof t->name, &t->name_read_ns, now);
    struct abi_regs a;
    abi_regs_from(&a, regs, t->tid, k->needs_fp);
    h->args.len = 0;
    if (h->args.buf)
        h->args.buf[0] = '\0';
    fnsym_use(h->fnsym, t->tgid);
    abi_args_json(&h->args, k->fn, &a, procmem_read_ctx, &t->memfd, &h->vopts);

    /* A tail call: the callee was jumped to with the caller's trampoline as its
     * return address. Both frames share the slot; the callee's return will end
     * both, with the same return value. */
    uint64_t ret = 0;
    bool have_ret = procmem_read(t->memfd, regs->rsp, &ret, sizeof ret);
    bool tail_call = have_ret && is_trampoline(h, ret) && t->depth > 0 &&
                     t->frames[t->depth - 1].rsp == regs->rsp;
    if (tail_call) {
        t->frames[t->depth - 1].tail_caller = true;
        ret = t->frames[t->depth - 1].ret;
    }
    prune_stale(h, t, regs, now);
    struct event ev = event_sink_init(&h->cfg.sink, EV_FUNCTION_ENTER, now);
    fill_location(&ev, k, t);
    ev.seq = ++*h->seq;
    if (t->depth > 0)
        ev.parent_seq = t->frames[t->depth - 1].seq;
    ev.arguments = h->args.oom ? NULL : h->args.buf;
    ev.data = enter_data(h, t, k, have_ret ? ret : 0, ev.arguments);
    push_event(h, &ev);

    uint64_t tramp = trampoline_for(h, areas_of_thread(h, t), k->addr);
    struct frame *f;
    if (!h->cfg.tuning.capture_exits || !tramp || !have_ret || !(f = frame_push(t)))
        return; /* no exit event for this call; the entry stands */
    *f = (struct frame){.ret = ret, .rsp = regs->rsp, .hidden_ret = regs->rdi,
                        .seq = ev.seq, .t_enter = now, .hook = k};
    if (!tail_call && !procmem_write(t->memfd, regs->rsp, &tramp, sizeof tramp))
        t->depth--;
}

/* A trampoline hit: the function whose return address was at rsp-8 returned. */
static bool on_return(struct hooks *h, struct thread *t, struct user_regs_struct *regs)
{
    int64_t now = mono_ns();
    uint64_t entry_rsp = regs->rsp - 8;
    int match = -1;
    for (int i = t->depth - 1; i >= 0; i--)
        if (t->frames[i].rsp == entry_rsp && !t->frames[i].detached) {
            match = i;
            break;
        }
    /* A frame whose real return address went back on the stack (a stacks snapshot
     * or a crash report's unwind) after the function had already returned to the
     * trampoline (the thread's trap was pending while it was held): its return is
     * still this one. */
    for (int i = t->depth - 1; i >= 0 && match < 0; i--)
        if (t->frames[i].rsp == entry_rsp)
            match = i;
    /* No exact frame (a function that moved its own return address): the outermost
     * frame already below the stack pointer is the one that returned. */
    for (int i = t->depth - 1; i >= 0 && match < 0; i--)
        if (!t->frames[i].detached && t->frames[i].rsp < regs->rsp &&
            (i == 0 || t->frames[i - 1].rsp >= regs->rsp))
            match = i;
    if (match < 0)
        return false; /* not a frame of ours: cannot know where to return */
    procmem_thread_name_cached(t->tid, t->name, sizeof t->name, &t->name_read_ns, now);
    for (int i = t->depth - 1; i > match; i--)
        emit_exit(h, t, &t->frames[i], regs, EXIT_UNWOUND, now);
    /* The callee of a tail call returns for its callers too. */
    int bottom = match;
    while (bottom > 0 && t->frames[bottom - 1].rsp == entry_rsp &&
           t->frames[bottom - 1].tail_caller)
        bottom--;
    for (int i = match; i >= bottom; i--)
        emit_exit(h, t, &t->frames[i], regs, EXIT_RETURN, now);
    regs->rip = t->frames[bottom].ret;
    t->depth = bottom;
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
    if (is_trampoline(h, at)) {
        if (!on_return(h, t, regs))
            return BP_PASS;
        return resume(tid, regs);
    }
    struct hook *k = u64map_get(&h->by_addr, at);
    if (!k || !k->armed)
        return BP_PASS;
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    on_entry(h, t, k, regs);
    /* Once a counting jump is planned, the int3 resumes through its trampoline,
     * past the count: no thread comes back inside the bytes the jump replaces. */
    if (k->cj_ok && hk_in_areas(h, hk_areas_in(h, p), k->tramp)) {
        regs->rip = k->tramp + COUNTJUMP_COUNT_LEN;
        return resume(tid, regs);
    }
    switch (k->rel.kind) {
    case RELOC_OUT_OF_LINE:
        /* A child forked before this slot's area was mapped has no copy of it:
         * it steps the original instruction instead. */
        if (!hk_in_areas(h, hk_areas_in(h, p), k->slot))
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
     * (bptab.h, step_over). */
    h->single_step_hits++;
    regs->rip = at;
    return ptrace(PTRACE_SETREGS, tid, 0, regs) == 0 ? BP_STEP_OVER : BP_PASS;
}

enum bp_verdict hooks_on_trap(struct hooks *h, pid_t tid, struct user_regs_struct *regs,
                              int64_t woke_ns)
{
    struct thread *t = thread_get(h, tid);
    if (!t)
        return BP_PASS;
    struct hook *k = u64map_get(&h->by_addr, regs->rip - 1);
    if (!k && t->depth > 0 && is_trampoline(h, regs->rip - 1))
        k = t->frames[t->depth - 1].hook;
    enum bp_verdict v = trap(h, t, regs);
    int64_t now = mono_ns();
    if (!woke_ns || woke_ns >= now)
        return v; /* handled late (after a hold): its time is not known */
    int64_t gap = t->resumed_at && woke_ns > t->resumed_at ? woke_ns - t->resumed_at : 0;
    if (gap && (!h->round_trip || gap < h->round_trip))
        h->round_trip = gap;
    t->resumed_at = now;
    hk_account(h, k, now, now - woke_ns + h->round_trip,
            gap > h->round_trip ? gap - h->round_trip : 0);
    return v;
}

/* ---- bookkeeping ------------------------------------------------------------------- */

void hooks_on_clone(struct hooks *h, pid_t parent_tid, pid_t child_tid, bool new_process)
{
    struct thread *parent = thread_get(h, parent_tid);
    pid_t tgid = new_process ? child_tid : (parent ? parent->tgid : procmem_tgid(child_tid));
    struct thread *child = u64map_get(&h->threads, (uint64_t)child_tid);
    if (!child)
        child = thread_new(h, child_tid, tgid);
    struct process *cp = new_process ? u64map_get(&h->procs, (uint64_t)tgid) : NULL;
    if (cp && parent) {
        cp->forked = true;
        cp->n_areas = hk_areas_in(h, u64map_get(&h->procs, (uint64_t)parent->tgid));
        hk_count_baselines(h, cp); /* its counters start as copies of the parent's */
    }
    /* A forked child's stack is a copy: so are its trampolines and frames. */
    if (new_process && parent && child && parent->depth > 0) {
        child->frames = malloc((size_t)parent->cap * sizeof *child->frames);
        if (child->frames) {
            memcpy(child->frames, parent->frames, (size_t)parent->depth * sizeof *child->frames);
            child->depth = parent->depth;
            child->cap = parent->cap;
        }
    }
}

static void thread_free(struct thread *t)
{
    free(t->frames);
    free(t);
}

void hooks_on_exit(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_del(&h->threads, (uint64_t)tid);
    if (!t)
        return;
    if (t->tid == t->tgid) {
        struct process *p = u64map_del(&h->procs, (uint64_t)t->tgid);
        if (p)
            hk_process_free(h, p);
    }
    thread_free(t);
}

bool hooks_owns_thread(const struct hooks *h, pid_t tid)
{
    return u64map_get(&h->threads, (uint64_t)tid) != NULL;
}

void hooks_adopt(struct hooks *h, pid_t pid)
{
    if (!u64map_get(&h->threads, (uint64_t)pid))
        thread_new(h, pid, pid);
}

struct forget_state {
    pid_t tgid;
    pid_t tids[256];
    int n;
};

static void collect_threads_of(uint64_t key, void *value, void *arg)
{
    struct forget_state *st = arg;
    if (((struct thread *)value)->tgid == st->tgid && st->n < 256)
        st->tids[st->n++] = (pid_t)key;
}

void hooks_forget_process(struct hooks *h, pid_t tgid)
{
    struct forget_state st = {.tgid = tgid};
    u64map_each(&h->threads, collect_threads_of, &st);
    for (int i = 0; i < st.n; i++)
        if (st.tids[i] != tgid)
            hooks_on_exit(h, st.tids[i]);
    struct process *p = u64map_get(&h->procs, (uint64_t)tgid);
    if (p)
        p->execd = true;
    hooks_on_exit(h, tgid);
}

struct stats_state {
    struct hooks_stats *out;
    const char **names;
    size_t max, n;
};

static void count_hook(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct stats_state *s = arg;
    if (k->role != HOOK_TRACE || !k->wanted)
        return;
    if (s->out)
        s->out->armed++;
    if (s->names && k->sampled && s->n < s->max)
        s->names[s->n++] = k->name ? k->name : k->fn->name;
}

void hooks_stats(const struct hooks *h, struct hooks_stats *out)
{
    memset(out, 0, sizeof *out);
    out->hits = h->hits;
    out->single_step_hits = h->single_step_hits;
    struct stats_state s = {out, NULL, 0, 0};
    u64map_each(&h->by_addr, count_hook, &s);
}

size_t hooks_sampled_names(const struct hooks *h, const char **names, size_t max)
{
    struct stats_state s = {NULL, names, max, 0};
    u64map_each(&h->by_addr, count_hook, &s);
    return s.n;
}

/* ---- life cycle ------------------------------------------------------------------ */

struct hooks *hooks_new(const struct hooks_config *cfg)
{
    struct hooks *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->cfg = *cfg;
    h->seq = cfg->seq ? cfg->seq : &h->own_seq;
    h->vopts = (struct value_opts){.max_depth = 3, .max_string = 1024, .max_array = 100};
    h->fnsym = fnsym_new();
    h->vopts.symbolize = h->fnsym ? fnsym_name : NULL;
    h->vopts.symbolize_ctx = h->fnsym;
    return h;
}

static void free_hook(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    free(value);
}

static void free_thread(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    thread_free(value);
}

static void free_process(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    struct process *p = value;
    close(p->memfd);
    callsites_free(p->sites);
    free(p->counts);
    free(p);
}

void hooks_free(struct hooks *h)
{
    if (!h)
        return;
    u64map_each(&h->by_addr, free_hook, NULL);
    u64map_each(&h->threads, free_thread, NULL);
    u64map_each(&h->procs, free_process, NULL);
    u64map_free(&h->by_addr);
    u64map_free(&h->threads);
    u64map_free(&h->procs);
    free(h->areas);
    sb_free(&h->args);
    sb_free(&h->ret);
    sb_free(&h->data);
    sb_free(&h->brief);
    sb_free(&h->brief_obj);
    fnsym_free(h->fnsym);
    sb_free(&h->site);
    free(h);
}

/* ---- calls in progress when their function is hooked --------------------------- */

#define ADOPT_MAX_FRAMES 256

/* The newly armed hook whose function holds pc, or NULL. */
static struct hook *new_hook_at(const struct hooks *h, const uint64_t *addrs, size_t n,
                                uint64_t pc)
{
    for (size_t i = 0; i < n; i++) {
        struct hook *k = u64map_get(&h->by_addr, addrs[i]);
        if (k && k->role == HOOK_TRACE && k->armed && pc >= k->addr &&
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
    uint64_t tramp = trampoline_for(h, areas_of_thread(h, t), k->addr);
    int at = 0;
    while (at < t->depth && t->frames[at].rsp > slot)
        at++;
    if (!tramp || !frame_push(t))
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
    struct thread *t = thread_get(h, tid);
    struct user_regs_struct regs;
    if (!t || n == 0 || !h->cfg.tuning.capture_exits ||
        ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return;
    /* As stacks.c does: real return addresses in place of trampolines and a pc in
     * relocated code moved back to its function while the stack is read. */
    uint64_t pc = regs.rip;
    hooks_unwind_begin(h, tid, &pc);
    struct user_regs_struct shown = regs;
    shown.rip = pc;
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &shown);
    struct unwind_result uw;
    bool unwound = unwind_thread(tid, t->memfd, ADOPT_MAX_FRAMES, 0, ADOPT_MAX_FRAMES,
                                 &uw) == 0;
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &regs);
    hooks_unwind_end(h, tid);
    if (!unwound)
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
