/*
 * hooks.c - entry/exit hooks. See hooks.h.
 *
 * Scratch areas: 1 MiB mapped near a module (so rel32 and RIP-relative fix-ups
 * reach). Byte 0 is the return trampoline (int3); slots of RELOC_SLOT_SIZE follow.
 * Every int3 (entries and trampolines) is a BP_TRACE_HOOK reference in the image's
 * breakpoint table (bptab.h). Code bytes change only while every thread of the
 * image is stopped: hooks_arm and hooks_disarm run inside the tracer's commands,
 * which stop them all; a hot function is not disarmed during its hit but flagged,
 * and the tracer applies the flag with hooks_tick under one stop of all threads
 * (hooks_patch_due). (A slot would be safe to write under running threads anyway:
 * it is written before any int3 leads to it.)
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
#include "ptrace/bptab.h"
#include "ptrace/inject.h"
#include "ptrace/procmem.h"
#include "ptrace/reloc.h"
#include "ptrace/twatch.h"

#define SCRATCH_SIZE (1u << 20)
#define COUNTERS_SIZE (64u << 10)
#define INT3 0xCC
#define HOT_WINDOW_NS 100000000LL
#define BACKOFF_MIN_NS 200000000LL
#define BACKOFF_MAX_NS 5000000000LL
#define SAMPLE_CALLS 64              /* recorded calls of a sample window */
#define SAMPLE_WINDOW_NS 20000000LL  /* ... or this long, whichever ends first */
#define JUMP_RETRY_MS 5              /* a thread was in the way of the jump */
#define MAX_FUNCTION_BYTES 65536     /* larger functions are not checked for a jump */
#define OVERHEAD_WINDOWS 10          /* the last second, in HOT_WINDOW_NS windows */
#define MAX_FRAMES 4096

/* A scratch area and, mapped with it (so every process has both or neither), a
 * writable block for the counting jumps' counters (0: none could be mapped). */
struct scratch {
    uint64_t base, used;
    uint64_t counters, counters_used;
};

struct hook {
    uint64_t addr;
    const struct dw_function *fn;
    struct reloc rel;
    uint64_t slot;
    bool armed;              /* int3 in place */
    bool wanted;             /* not disarmed by the user */
    enum hook_role role;
    bool needs_fp;           /* float arguments or return: read the SSE registers */
    bool hidden_ret;         /* returns a struct in memory through rdi */
    int64_t window_start, window_hits;
    int64_t backoff_ns, rearm_at;   /* rearm_at != 0 while throttled */
    bool sampled;            /* has been throttled: events are a sample */
    struct twatch_cache wcache; /* which trace watches apply to it */
    /* Exact counts (hooks.h, "Hot functions"). */
    uint64_t calls;          /* hits of the entry int3, recorded or not */
    uint64_t recorded;       /* enter events recorded */
    uint64_t folded;         /* counting-jump calls of processes that ended */
    bool quiet;              /* between samples: calls are counted, not recorded */
    int64_t sampled_since;   /* CLOCK_MONOTONIC when it first went quiet */
    int sample_left;         /* recorded calls left in the current sample window */
    int64_t sample_until;
    int64_t window_cost;     /* tracer ns spent on it in the overhead window */
    /* The counting jump: planned once (cj.why when refused), the trampoline
     * written at tramp; jumped while the jmp replaces the int3. */
    struct countjump cj;
    uint64_t tramp, counter;
    bool cj_planned, cj_ok, jumped, jump_blocked;
    char lost[96];           /* "" or where calls went uncounted */
};

/* A process's view of a counting jump's counter: its value when the process was
 * forked (a copy of the parent's), and the last value read. */
struct pcount {
    uint64_t hook_addr;
    uint64_t baseline, last;
    bool read;
};

struct overhead_window {
    int64_t busy_ns, run_ns;
};

struct frame {
    uint64_t ret;            /* the real return address */
    uint64_t rsp;            /* rsp at entry: where the return address lives */
    uint64_t hidden_ret;     /* rdi at entry for memory-returned structs */
    int64_t seq;             /* the enter event's seq */
    int64_t t_enter;
    struct hook *hook;
    bool tail_caller;        /* jumped to a traced callee that shares this slot */
    bool detached;           /* real return address restored (exception): no trampoline
                                will report its exit; pruned as unwound once the stack
                                is below it */
    bool lent;               /* detached only for an unwind of a thread that runs on
                                (hooks_unwind_begin): its trampoline comes back */
};

struct thread {
    pid_t tid, tgid;
    int memfd;               /* the process's /proc/PID/mem */
    struct frame *frames;
    int depth, cap;
    char name[16];
    uint32_t events_since_name; /* the name is re-read every 1024 events */
    bool name_read;             /* read at the first event: a clone's name is set later */
    int64_t resumed_at;         /* when the tracer last resumed it from a hook trap */
};

struct process {
    pid_t tgid;
    int memfd;
    /* Scratch areas mapped in this process: areas[0..n_areas). A forked child has
     * those of its parent at the fork; areas mapped later exist in the main
     * process only (see hooks_on_trap). The main process's count is h->n_areas. */
    size_t n_areas;
    bool forked;
    struct pcount *counts;   /* the counting jumps' counters in this process */
    size_t n_counts;
    bool execd;              /* its memory went with an exec: counters unreadable */
};

struct hooks {
    struct hooks_config cfg;
    struct value_opts vopts;
    struct u64map by_addr;   /* runtime address -> struct hook */
    struct u64map threads;   /* tid -> struct thread */
    struct u64map procs;     /* tgid -> struct process */
    struct scratch *areas;
    size_t n_areas;
    int64_t own_seq;
    int64_t *seq;            /* cfg.seq, or own_seq */
    uint64_t hits, single_step_hits;
    /* A hot function was throttled and still has its int3 (hooks_tick removes it);
     * next_rearm: the earliest back-off end, 0 if none is throttled. */
    bool disarm_pending;
    int64_t next_rearm;
    struct strbuf args, ret, data;
    /* The traced threads' time stopped at traps (busy: wake-up to resume plus the
     * round trip) and running between them (run): the session's totals, the current
     * window's (HOT_WINDOW_NS of wall time), and the last second's windows. */
    int64_t busy_total, run_total, win_start, win_busy, win_run;
    /* The kernel's share of a trap: the shortest time seen from resuming a thread
     * to waking up for its next trap (a trap, a wake-up, a resume with almost no
     * program code between), added to each trap's handling time. */
    int64_t round_trip;
    struct overhead_window recent[OVERHEAD_WINDOWS];
    int n_recent, recent_next;
};

/* ---- processes and threads ------------------------------------------------- */

static struct process *process_get(struct hooks *h, pid_t tgid)
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
    struct process *p = process_get(h, tgid);
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
static size_t areas_in(const struct hooks *h, const struct process *p)
{
    return p && p->forked ? p->n_areas : h->n_areas;
}

/* Whether addr lies in one of the first n scratch areas. */
static bool in_areas(const struct hooks *h, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n && i < h->n_areas; i++)
        if (addr >= h->areas[i].base && addr < h->areas[i].base + SCRATCH_SIZE)
            return true;
    return false;
}

static uint64_t map_counters(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t base);

/* A free slot of size bytes (a multiple of RELOC_SLOT_SIZE) near [lo, hi), mapping
 * a new area through stopped_tid if needed (0: only in the areas there are). */
static uint64_t slot_near(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t lo,
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
static uint64_t counter_near(struct hooks *h, uint64_t tramp)
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

static bool write_int3(struct hooks *h, struct hook *k)
{
    k->armed = patch(h, k, true);
    return k->armed;
}

static void restore_orig(struct hooks *h, struct hook *k)
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
    if (p->forked && in_areas(sc->h, p->n_areas, sc->addr))
        procmem_write(p->memfd, sc->addr, sc->bytes, sc->len);
}

/* Writes bytes into scratch memory at addr in the main process (memfd) and in the
 * forked children that have its area: they jump there too. */
static bool write_scratch(struct hooks *h, int memfd, uint64_t addr, const uint8_t *bytes,
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
    return write_scratch(h, memfd, k->slot, k->rel.slot, k->rel.slot_len);
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
        if (!k->armed && !k->jumped && write_int3(h, k))
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
    uint64_t slot = slot_near(h, stopped_tid, memfd, t->module_lo, t->module_hi,
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
    if (u64map_put(&h->by_addr, t->addr, k) != 0 || !write_int3(h, k)) {
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
    struct process *p = process_get(h, h->cfg.pid);
    if (!p) {
        rep->failed = n;
        snprintf(rep->first_failure, sizeof rep->first_failure,
                 "cannot open the memory of process %d", (int)h->cfg.pid);
        return;
    }
    for (size_t i = 0; i < n; i++)
        arm_one(h, stopped_tid, p->memfd, &t[i], rep);
}

static void unjump(struct hooks *h, struct hook *k);

void hooks_disarm(struct hooks *h, const uint64_t *addrs, size_t n)
{
    struct process *p = process_get(h, h->cfg.pid);
    for (size_t i = 0; i < n && p; i++) {
        struct hook *k = u64map_get(&h->by_addr, addrs[i]);
        if (!k || k->role != HOOK_TRACE)
            continue;
        k->wanted = false;
        k->rearm_at = 0;
        k->quiet = false;
        unjump(h, k); /* its counter stays readable in its trampoline */
        restore_orig(h, k);
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

void hooks_set_depth(struct hooks *h, int depth)
{
    h->vopts.max_depth = depth < 1 ? 1 : depth > 10 ? 10 : depth;
}

/* ---- events ------------------------------------------------------------------- */

static void push_event(struct hooks *h, struct event *ev)
{
    event_sink_push(&h->cfg.sink, ev);
}

static void fill_location(struct event *ev, const struct hook *k, const struct thread *t)
{
    ev->pid = t->tgid;
    ev->tid = t->tid;
    ev->thread_name = t->name[0] ? t->name : NULL;
    ev->function = k->fn->name;
    ev->function_raw = k->fn->linkage_name;
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

/* Sampling starts (or a sample window ends): calls are counted, not recorded, until
 * the back-off (200 ms, doubling up to 5 s) ends with the next sample window; the
 * tracer puts the counting jump in place at its next tick (hooks_tick). */
static void go_quiet(struct hooks *h, struct hook *k, int64_t now)
{
    k->quiet = true;
    k->sample_left = 0;
    if (!k->sampled) {
        k->sampled = true;
        k->sampled_since = now;
    }
    k->backoff_ns = k->backoff_ns ? k->backoff_ns * 2 : BACKOFF_MIN_NS;
    if (k->backoff_ns > BACKOFF_MAX_NS)
        k->backoff_ns = BACKOFF_MAX_NS;
    k->rearm_at = now + k->backoff_ns;
    h->disarm_pending = true;
    if (!h->next_rearm || k->rearm_at < h->next_rearm)
        h->next_rearm = k->rearm_at;
}

/* After a recorded call of k: ends a full sample window, or starts sampling when k
 * has used its recording budget (trace.sampleAfter) and is hot. */
static void throttle_if_hot(struct hooks *h, struct hook *k, int64_t now)
{
    if (now - k->window_start > HOT_WINDOW_NS) {
        k->window_start = now;
        k->window_hits = 0;
    }
    k->window_hits++;
    if (k->sample_left > 0) {
        /* A window that fills within its time: still hot, quiet again. One that
         * does not: it cooled down and is recorded whole again. */
        if (now > k->sample_until)
            k->sample_left = 0;
        else if (--k->sample_left == 0)
            go_quiet(h, k, now);
        return;
    }
    int64_t limit = h->cfg.tuning.hot_calls_per_second * HOT_WINDOW_NS / 1000000000LL;
    if ((int64_t)k->recorded >= h->cfg.tuning.sample_after &&
        k->window_hits > (limit > 0 ? limit : 1))
        go_quiet(h, k, now);
}

static void reset_window_cost(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    ((struct hook *)value)->window_cost = 0;
}

struct costliest {
    const struct hooks *h;
    struct hook *k;
};

static void find_costliest(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct costliest *c = arg;
    if (k->role == HOOK_TRACE && !k->quiet && k->armed &&
        (int64_t)k->recorded >= c->h->cfg.tuning.sample_after &&
        k->window_cost > 0 && (!c->k || k->window_cost > c->k->window_cost))
        c->k = k;
}

/* Accounts a trap that kept its thread stopped busy ns after it ran run ns of its
 * own since the last one, charged to k (NULL: none). At the end of each window, a
 * tracer share above the budget samples the function that cost the most in it. */
static void account(struct hooks *h, struct hook *k, int64_t now, int64_t busy, int64_t run)
{
    if (!h->win_start)
        h->win_start = now;
    h->busy_total += busy;
    h->run_total += run;
    h->win_busy += busy;
    h->win_run += run;
    if (k)
        k->window_cost += busy;
    if (now - h->win_start < HOT_WINDOW_NS)
        return;
    h->recent[h->recent_next] = (struct overhead_window){h->win_busy, h->win_run};
    h->recent_next = (h->recent_next + 1) % OVERHEAD_WINDOWS;
    if (h->n_recent < OVERHEAD_WINDOWS)
        h->n_recent++;
    int64_t budget = h->cfg.tuning.overhead_budget_percent;
    if (budget > 0 && budget < 100 && h->win_busy * 100 > budget * (h->win_busy + h->win_run)) {
        struct costliest c = {h, NULL};
        u64map_each(&h->by_addr, find_costliest, &c);
        if (c.k)
            go_quiet(h, c.k, now);
    }
    h->win_start = now;
    h->win_busy = h->win_run = 0;
    u64map_each(&h->by_addr, reset_window_cost, NULL);
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
    if (!in_areas(h, h->n_areas, *pc))
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
    if (!in_areas(h, h->n_areas, *pc))
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
    if (kind == EXIT_UNWOUND) {
        ev.data = "{\"unwound\":true}";
    } else {
        struct abi_regs a;
        abi_regs_from(&a, regs, t->tid, f->hook->needs_fp);
        h->ret.len = 0;
        if (h->ret.buf)
            h->ret.buf[0] = '\0';
        abi_return_json(&h->ret, f->hook->fn->return_type, &a, f->hidden_ret, procmem_read_ctx,
                        &t->memfd, &h->vopts);
        ev.return_value = h->ret.oom ? NULL : h->ret.buf;
    }
    ev.data = watch_data(h, t, f->hook, kind == EXIT_UNWOUND ? "\"unwound\":true" : NULL,
                         ev.data);
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
    return areas_in(h, u64map_get(&h->procs, (uint64_t)t->tgid));
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
    throttle_if_hot(h, k, now);
    if (!t->name_read || ++t->events_since_name >= 1024) {
        t->name_read = true;
        t->events_since_name = 0;
        procmem_thread_name(t->tid, t->name, sizeof t->name);
    }
    struct abi_regs a;
    abi_regs_from(&a, regs, t->tid, k->needs_fp);
    h->args.len = 0;
    if (h->args.buf)
        h->args.buf[0] = '\0';
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
    ev.data = watch_data(h, t, k, NULL, NULL);
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
    if (k->cj_ok && in_areas(h, areas_in(h, p), k->tramp)) {
        regs->rip = k->tramp + COUNTJUMP_COUNT_LEN;
        return resume(tid, regs);
    }
    switch (k->rel.kind) {
    case RELOC_OUT_OF_LINE:
        /* A child forked before this slot's area was mapped has no copy of it:
         * it steps the original instruction instead. */
        if (!in_areas(h, areas_in(h, p), k->slot))
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
    account(h, k, now, now - woke_ns + h->round_trip,
            gap > h->round_trip ? gap - h->round_trip : 0);
    return v;
}

/* ---- bookkeeping ------------------------------------------------------------------- */

static void process_free(struct hooks *h, struct process *p);
static void count_baselines(struct hooks *h, struct process *p);

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
        cp->n_areas = areas_in(h, u64map_get(&h->procs, (uint64_t)parent->tgid));
        count_baselines(h, cp); /* its counters start as copies of the parent's */
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
            process_free(h, p);
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

/* ---- the counting jump ---------------------------------------------------------- */

/* Takes k's jump out: the program's bytes come back, and k's int3 if it is still
 * traced. Its trampoline stays, counter included (counts stay readable). */
static void unjump(struct hooks *h, struct hook *k)
{
    if (!k->jumped)
        return;
    bptab_unpatch(h->cfg.bp, k->addr);
    k->jumped = false;
    if (k->wanted)
        write_int3(h, k);
}

/* An int3 is wanted inside k's jump (a user breakpoint): k goes back to its int3,
 * counting only, until its next sample window. */
static void evict_jump(void *arg, uint64_t addr)
{
    struct hooks *h = arg;
    struct hook *k = u64map_get(&h->by_addr, addr);
    if (!k || !k->jumped) {
        bptab_unpatch(h->cfg.bp, addr);
        return;
    }
    unjump(h, k);
    k->jump_blocked = true;
}

/* Plans k's counting jump once and writes its trampoline into every process that
 * has the scratch area; false (k->cj.why) when k cannot take one. */
static bool plan_jump(struct hooks *h, struct hook *k)
{
    if (k->cj_planned)
        return k->cj_ok;
    k->cj_planned = true;
    struct process *p = process_get(h, h->cfg.pid);
    uint64_t len = k->fn->end > k->fn->entry ? k->fn->end - k->fn->entry : 0;
    uint8_t *code = len && len <= MAX_FUNCTION_BYTES ? malloc(len) : NULL;
    uint64_t tramp = 0, counter = 0;
    if (!code)
        snprintf(k->cj.why, sizeof k->cj.why, "%s", !len ? "its size is unknown"
                 : len > MAX_FUNCTION_BYTES ? "too large to check its branches"
                 : "out of memory");
    else if (!p || !bptab_read(h->cfg.bp, p->memfd, k->addr, code, len))
        snprintf(k->cj.why, sizeof k->cj.why, "its code cannot be read");
    else if (!(tramp = slot_near(h, 0, p->memfd, k->addr, k->addr + len,
                                 COUNTJUMP_SLOT_SIZE)) || !(counter = counter_near(h, tramp)))
        snprintf(k->cj.why, sizeof k->cj.why, "no scratch memory near it");
    else if (countjump_plan(code, len, k->addr, tramp, counter, &k->cj) &&
             write_scratch(h, p->memfd, tramp, k->cj.tramp, k->cj.tramp_len)) {
        k->tramp = tramp;
        k->counter = counter;
    }
    free(code);
    k->cj_ok = k->tramp != 0;
    return k->cj_ok;
}

struct jump_check {
    const struct hooks *h;
    const struct hook *k;
    bool blocked;   /* a thread is in the way: retry */
    bool missing;   /* a process lacks the trampoline's area */
};

/* Whether t, at a + 1, is stopped by the trap of the int3 at a (a kernel SIGTRAP,
 * not yet handled): once the int3 has gone, the tracer rewinds it onto a, where the
 * jump counts the call. Otherwise it came back from a relocated instruction. */
static bool int3_trap_pending(const struct thread *t, uint64_t a)
{
    siginfo_t si;
    struct user_regs_struct r;
    return ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0 && si.si_signo == SIGTRAP &&
           si.si_code == SI_KERNEL && ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 &&
           r.rip == a + 1;
}

/* A stopped thread whose pc is inside the bytes the jump replaces (past the first)
 * or in k's relocated instruction (which returns into them) would run a broken
 * instruction. */
static void check_thread(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct thread *t = value;
    struct jump_check *c = arg;
    struct user_regs_struct r;
    if (c->blocked || ptrace(PTRACE_GETREGS, t->tid, 0, &r) != 0)
        return;
    uint64_t a = c->k->addr;
    c->blocked = (r.rip > a && r.rip < a + c->k->cj.displaced && !int3_trap_pending(t, a)) ||
                 (r.rip >= c->k->slot && r.rip < c->k->slot + RELOC_SLOT_SIZE);
}

static void check_process(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct jump_check *c = arg;
    if (!in_areas(c->h, areas_in(c->h, value), c->k->tramp))
        c->missing = true;
}

/* Puts k's counting jump in place of its int3. False when a thread is in the way
 * (the caller retries soon); otherwise k jumps, or stays on its int3 counting. */
static bool try_jump(struct hooks *h, struct hook *k)
{
    if (!k->armed || k->jump_blocked || !plan_jump(h, k))
        return true;
    struct jump_check c = {h, k, false, false};
    u64map_each(&h->procs, check_process, &c);
    if (c.missing)
        return true;
    u64map_each(&h->threads, check_thread, &c);
    if (c.blocked)
        return false;
    restore_orig(h, k);
    if (k->armed)
        return true;
    if (bptab_patch(h->cfg.bp, k->addr, k->cj.patch, COUNTJUMP_LEN, evict_jump, h)) {
        k->jumped = true;
        return true;
    }
    write_int3(h, k); /* another owner's int3 in the way: count on ours */
    k->jump_blocked = true;
    return true;
}

struct tick_state {
    struct hooks *h;
    int64_t now, next;
};

static void due(struct tick_state *s, int64_t at)
{
    if (s->next < 0 || at < s->next)
        s->next = at;
}

/* A quiet function gets its jump; one whose back-off ended gets its int3 back for
 * a sample window. */
static void tick_hook(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct tick_state *s = arg;
    if (!k->rearm_at || !k->wanted)
        return;
    if (k->rearm_at <= s->now) {
        k->rearm_at = 0;
        k->jump_blocked = false;
        unjump(s->h, k);
        k->quiet = false;
        k->sample_left = SAMPLE_CALLS;
        k->sample_until = s->now + SAMPLE_WINDOW_NS;
        return;
    }
    due(s, k->rearm_at);
    if (k->quiet && !k->jumped && !try_jump(s->h, k))
        due(s, s->now + JUMP_RETRY_MS * 1000000LL);
}

int hooks_tick(struct hooks *h)
{
    /* The image's own process may have exited: its forks still run the code, and
     * the table writes whichever processes remain. */
    struct tick_state s = {h, mono_ns(), -1};
    u64map_each(&h->by_addr, tick_hook, &s);
    h->disarm_pending = false;
    h->next_rearm = s.next < 0 ? 0 : s.next;
    if (s.next < 0)
        return -1;
    return (int)((s.next - s.now) / 1000000) + 1;
}

bool hooks_patch_due(const struct hooks *h, int64_t now)
{
    return h->disarm_pending || (h->next_rearm && now >= h->next_rearm);
}

/* ---- exact counts ---------------------------------------------------------------- */

static struct pcount *pcount_of(struct process *p, uint64_t hook_addr)
{
    for (size_t i = 0; i < p->n_counts; i++)
        if (p->counts[i].hook_addr == hook_addr)
            return &p->counts[i];
    struct pcount *grown = realloc(p->counts, (p->n_counts + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    p->counts = grown;
    grown[p->n_counts] = (struct pcount){.hook_addr = hook_addr};
    return &grown[p->n_counts++];
}

struct count_walk {
    struct hooks *h;
    struct hook *k;       /* one hook, or NULL: every hook with a trampoline */
    struct process *p;    /* one process, or NULL: every process */
    enum { READ_LAST, SET_BASELINE, FOLD } op;
    uint64_t sum;         /* READ_LAST: calls counted by the processes */
};

/* One counter (k's in p) for the operation of w. */
static void count_one(struct count_walk *w, struct process *p, struct hook *k)
{
    if (!k->tramp || !in_areas(w->h, areas_in(w->h, p), k->tramp))
        return;
    struct pcount *pc = pcount_of(p, k->addr);
    uint64_t v;
    if (!pc)
        return;
    bool ok = w->op != FOLD &&
              procmem_read(p->memfd, k->counter, &v, sizeof v);
    if (w->op == SET_BASELINE) {
        pc->baseline = ok ? v : 0;
        return;
    }
    if (ok) {
        pc->last = v;
        pc->read = true;
    }
    if (w->op == READ_LAST && pc->read) {
        w->sum += pc->last - pc->baseline;
    } else if (w->op == FOLD && pc->read) {
        k->folded += pc->last - pc->baseline;
    }
    if (w->op == FOLD && (p->execd || !pc->read) && !k->lost[0])
        snprintf(k->lost, sizeof k->lost, "process %d %s before its counter of counting-jump "
                 "calls was read", (int)p->tgid, p->execd ? "exec'd" : "ended");
}

static void count_in_process(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct count_walk *w = arg;
    count_one(w, value, w->k);
}

static void count_hook_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct count_walk *w = arg;
    count_one(w, w->p, value);
}

/* Runs w over k in every process, or over every hook in w->p. */
static void count_walk(struct count_walk *w)
{
    if (w->k)
        u64map_each(&w->h->procs, count_in_process, w);
    else
        u64map_each(&w->h->by_addr, count_hook_in, w);
}

static uint64_t total_calls(struct hooks *h, struct hook *k)
{
    struct count_walk w = {h, k, NULL, READ_LAST, 0};
    count_walk(&w);
    return k->calls + k->folded + w.sum;
}

static void count_baselines(struct hooks *h, struct process *p)
{
    struct count_walk w = {h, NULL, p, SET_BASELINE, 0};
    count_walk(&w);
}

void hooks_on_exit_event(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    struct process *p = t ? u64map_get(&h->procs, (uint64_t)t->tgid) : NULL;
    struct count_walk w = {h, NULL, p, READ_LAST, 0};
    if (p)
        count_walk(&w);
}

/* A process goes: what its counters counted joins the hooks' totals. */
static void process_free(struct hooks *h, struct process *p)
{
    struct count_walk w = {h, NULL, p, FOLD, 0};
    count_walk(&w);
    close(p->memfd);
    free(p->counts);
    free(p);
}

struct counts_state {
    struct hooks *h;
    struct hooks_count *rows;
    size_t n, cap;
};

static void collect_count(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct counts_state *s = arg;
    if (k->role != HOOK_TRACE || s->n == s->cap)
        return;
    uint64_t calls = total_calls(s->h, k);
    if (!calls)
        return;
    s->rows[s->n++] = (struct hooks_count){
        .function = k->fn->name, .calls = calls, .recorded = k->recorded,
        .sampled = k->sampled, .sampled_since = k->sampled_since - s->h->cfg.sink.t0_ns,
        .lost = k->lost[0] ? k->lost : NULL,
        .mode = k->jumped ? "jump" : k->quiet ? "count-only" : "recorded",
        .no_jump = k->cj_planned && !k->cj_ok ? k->cj.why : NULL};
}

static int by_calls(const void *a, const void *b)
{
    const struct hooks_count *x = a, *y = b;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

size_t hooks_counts(struct hooks *h, struct hooks_count *rows, size_t max)
{
    struct counts_state s = {h, rows, 0, max};
    u64map_each(&h->by_addr, collect_count, &s);
    qsort(rows, s.n, sizeof *rows, by_calls);
    return s.n;
}

void hooks_overhead(const struct hooks *h, struct hooks_overhead *out)
{
    out->busy_ns = h->busy_total;
    out->run_ns = h->run_total;
    out->last_second_busy_ns = h->win_busy;
    out->last_second_run_ns = h->win_run;
    for (int i = 0; i < h->n_recent; i++) {
        out->last_second_busy_ns += h->recent[i].busy_ns;
        out->last_second_run_ns += h->recent[i].run_ns;
    }
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
        s->names[s->n++] = k->fn->name;
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
    free(h);
}
