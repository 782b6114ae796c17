/*
 * sampling.c - hot functions: the recording budget, the overhead budget, the
 * counting jump and the exact counts (hooks.h, "Hot functions"; the state is
 * hooks_internal.h). Runs on the tracer thread like the rest of the hooks; code is
 * patched only in hooks_tick, with every thread of the image stopped.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "base/clock.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/proc/callsite.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

/* ---- sampling and the overhead budget ------------------------------------------ */

/* Sampling starts (or a sample window ends): calls are counted, not recorded, until
 * the back-off (200 ms, doubling up to 5 s) ends with the next sample window; the
 * tracer puts the counting jump in place at its next tick (hooks_tick). */
void sampling_go_quiet(struct hooks *h, struct hook *k, int64_t now)
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
void sampling_throttle_if_hot(struct hooks *h, struct hook *k, int64_t now)
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
            sampling_go_quiet(h, k, now);
        return;
    }
    int64_t limit = h->cfg.tuning.hot_calls_per_second * HOT_WINDOW_NS / 1000000000LL;
    if ((int64_t)k->recorded >= h->cfg.tuning.sample_after &&
        k->window_hits > (limit > 0 ? limit : 1))
        sampling_go_quiet(h, k, now);
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
void sampling_account(struct hooks *h, struct hook *k, int64_t now, int64_t busy, int64_t run)
{
    struct hk_overhead *o = &h->overhead;
    if (!o->win_start)
        o->win_start = now;
    o->busy_total += busy;
    o->run_total += run;
    o->win_busy += busy;
    o->win_run += run;
    if (k)
        k->window_cost += busy;
    if (now - o->win_start < HOT_WINDOW_NS)
        return;
    o->recent[o->recent_next] = (struct overhead_window){o->win_busy, o->win_run};
    o->recent_next = (o->recent_next + 1) % OVERHEAD_WINDOWS;
    if (o->n_recent < OVERHEAD_WINDOWS)
        o->n_recent++;
    int64_t budget = h->cfg.tuning.overhead_budget_percent;
    if (budget > 0 && budget < 100 && o->win_busy * 100 > budget * (o->win_busy + o->win_run)) {
        struct costliest c = {h, NULL};
        u64map_each(&h->by_addr, find_costliest, &c);
        if (c.k)
            sampling_go_quiet(h, c.k, now);
    }
    o->win_start = now;
    o->win_busy = o->win_run = 0;
    u64map_each(&h->by_addr, reset_window_cost, NULL);
}

/* ---- the counting jump ---------------------------------------------------------- */

/* Takes k's jump out: the program's bytes come back, and k's int3 if it is still
 * traced. Its trampoline stays, counter included (counts stay readable). */
void sampling_unjump(struct hooks *h, struct hook *k)
{
    if (!k->jumped)
        return;
    bptab_unpatch(h->cfg.bp, k->addr);
    k->jumped = false;
    if (k->wanted)
        hooks_areas_write_int3(h, k);
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
    sampling_unjump(h, k);
    k->jump_blocked = true;
}

/* Plans k's counting jump once and writes its trampoline into every process that
 * has the scratch area; false (k->cj.why) when k cannot take one. */
static bool plan_jump(struct hooks *h, struct hook *k)
{
    if (k->cj_planned)
        return k->cj_ok;
    k->cj_planned = true;
    struct process *p = hooks_state_process(h, h->cfg.pid);
    uint64_t len = k->fn->end > k->fn->entry ? k->fn->end - k->fn->entry : 0;
    uint8_t *code = len && len <= MAX_FUNCTION_BYTES ? malloc(len) : NULL;
    uint64_t tramp = 0, counter = 0;
    if (!code)
        snprintf(k->cj.why, sizeof k->cj.why, "%s", !len ? "its size is unknown"
                 : len > MAX_FUNCTION_BYTES ? "too large to check its branches"
                 : "out of memory");
    else if (!p || !bptab_read(h->cfg.bp, p->memfd, k->addr, code, len))
        snprintf(k->cj.why, sizeof k->cj.why, "its code cannot be read");
    else if (!(tramp = hooks_areas_slot_near(h, 0, p->memfd, k->addr, k->addr + len,
                                             COUNTJUMP_SLOT_SIZE)) ||
             !(counter = hooks_areas_counter_near(h, tramp)))
        snprintf(k->cj.why, sizeof k->cj.why, "no scratch memory near it");
    else if (reloc_countjump_plan(code, len, k->addr, tramp, counter, &k->cj) &&
             hooks_areas_write_scratch(h, p->memfd, tramp, k->cj.tramp, k->cj.tramp_len)) {
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

bool sampling_int3_trap_pending(pid_t tid, uint64_t a)
{
    siginfo_t si;
    struct user_regs_struct r;
    return ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_signo == SIGTRAP &&
           si.si_code == SI_KERNEL && ptrace(PTRACE_GETREGS, tid, 0, &r) == 0 &&
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
    c->blocked =
        (r.rip > a && r.rip < a + c->k->cj.displaced && !sampling_int3_trap_pending(t->tid, a)) ||
        (r.rip >= c->k->slot && r.rip < c->k->slot + RELOC_SLOT_SIZE);
}

static void check_process(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct jump_check *c = arg;
    if (!hooks_areas_contain(c->h, hooks_areas_in(c->h, value), c->k->tramp))
        c->missing = true;
}

/* Puts k's planned jump (the counting jump, or the fast path's) in place of its
 * int3. False when a thread is in the way (the caller retries soon); otherwise k
 * jumps, or stays on its int3. */
bool sampling_try_jump(struct hooks *h, struct hook *k)
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
    hooks_areas_restore_orig(h, k);
    if (k->armed)
        return true;
    if (bptab_patch(h->cfg.bp, k->addr, k->cj.patch, COUNTJUMP_LEN, evict_jump, h)) {
        k->jumped = true;
        return true;
    }
    hooks_areas_write_int3(h, k); /* another owner's int3 in the way: count on ours */
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

/* A fast-path function: its jump, when a thread was in the way at its arming;
 * its recorder counts only while it is quiet and records again for a sample
 * window when its back-off ends. */
static void tick_fast(struct tick_state *s, struct hook *k)
{
    if (k->armed && !k->jumped && !k->jump_blocked && !sampling_try_jump(s->h, k))
        due(s, s->now + JUMP_RETRY_MS * 1000000LL);
    if (k->rearm_at && k->rearm_at <= s->now) {
        k->rearm_at = 0;
        k->quiet = false;
        k->sample_left = SAMPLE_CALLS;
        k->sample_until = s->now + SAMPLE_WINDOW_NS;
        fast_budget_set_credit(s->h, k, SAMPLE_CALLS); /* the recorder ends the window */
    } else if (k->rearm_at) {
        due(s, k->rearm_at);
    }
    fastpath_update_flags(s->h, k);
}

/* A quiet function gets its jump; one whose back-off ended gets its int3 back for
 * a sample window. */
static void tick_hook(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct hook *k = value;
    struct tick_state *s = arg;
    if (k->fast && k->wanted && s->h->cfg.tuning.fast) {
        tick_fast(s, k);
        return;
    }
    if (!k->rearm_at || !k->wanted)
        return;
    if (k->rearm_at <= s->now) {
        k->rearm_at = 0;
        k->jump_blocked = false;
        sampling_unjump(s->h, k);
        k->quiet = false;
        k->sample_left = SAMPLE_CALLS;
        k->sample_until = s->now + SAMPLE_WINDOW_NS;
        return;
    }
    due(s, k->rearm_at);
    if (k->quiet && !k->jumped && !k->fast && !sampling_try_jump(s->h, k))
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
    if (!k->tramp || !hooks_areas_contain(w->h, hooks_areas_in(w->h, p), k->tramp))
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

void sampling_count_baselines(struct hooks *h, struct process *p)
{
    struct count_walk w = {h, NULL, p, SET_BASELINE, 0};
    count_walk(&w);
}

void sampling_count_read_last(struct hooks *h, struct process *p)
{
    struct count_walk w = {h, NULL, p, READ_LAST, 0};
    count_walk(&w);
}

/* A process goes: what its counters counted joins the hooks' totals. */
void sampling_process_free(struct hooks *h, struct process *p)
{
    struct count_walk w = {h, NULL, p, FOLD, 0};
    count_walk(&w);
    fastpath_process_free(h, p);
    close(p->memfd);
    callsite_free_all(p->sites);
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
    uint64_t ring_full = fastpath_ring_full(s->h, k);
    if (ring_full && !k->sampled) { /* its events are a sample: said, never silent */
        k->sampled = true;
        k->sampled_since = mono_ns();
    }
    s->rows[s->n++] = (struct hooks_count){
        .function = hooks_state_function_name(k), .function_raw = hooks_state_function_raw(k),
        .calls = calls, .recorded = k->recorded,
        .sampled = k->sampled, .sampled_since = k->sampled_since - s->h->cfg.sink.t0_ns,
        .lost = k->lost[0] ? k->lost : NULL,
        .mode = k->fast && k->jumped ? "fast" : k->jumped ? "jump"
              : k->quiet ? "count-only" : "recorded",
        .no_jump = k->cj_planned && !k->cj_ok ? k->cj.why : NULL, .ring_full = ring_full};
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
    out->stops = h->overhead.stops;
    out->busy_ns = h->overhead.busy_total;
    out->run_ns = h->overhead.run_total;
    out->last_second_busy_ns = h->overhead.win_busy;
    out->last_second_run_ns = h->overhead.win_run;
    for (int i = 0; i < h->overhead.n_recent; i++) {
        out->last_second_busy_ns += h->overhead.recent[i].busy_ns;
        out->last_second_run_ns += h->overhead.recent[i].run_ns;
    }
}

