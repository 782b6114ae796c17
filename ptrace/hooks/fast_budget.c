/*
 * fast_budget.c - the fast path's hot functions: each traced function's budget in
 * the recorder (fast_abi.h, FAST_FN_BUDGET) and the daemon's looks at it.
 *
 * Why in the recorder: the daemon looks every HOT_WINDOW_NS (100 ms), and a
 * function called 30 million times a second used to fill the shared ring long
 * before that look quieted it; a rare function's calls then found no room (3 runs
 * recorded 10, 8 and 9 of 10 calls beside 3 million of a hot one). Now a function
 * records its quota (trace.sampleAfter calls) whatever comes, then its credit: the
 * calls it may record until the next look, CREDIT_LOOKS looks' worth of
 * trace.hotCallsPerSecond, each leaving a quarter of the ring to the functions still
 * within their quota. A call past both is counted, not recorded, at once.
 *
 * A look (fast_budget_look, from each drain, acting every HOT_WINDOW_NS) reads the
 * fast_fn table of every process of the image: a function whose credit went below
 * 0 in one of them, or that ran hotter than trace.hotCallsPerSecond in the main
 * process once past its quota, goes quiet (sampling.c: back-off, then sample
 * windows of SAMPLE_CALLS, which the credit bounds too); the others get their credit
 * back where they used some. The int3 path needs none of this: it decides at every
 * call (sampling_throttle_if_hot), and its calls wait for room instead of being lost.
 */
#include <stddef.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/u64map.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/fastpath_internal.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

/* The looks' worth of the hot rate a credit holds: one look late (a busy tracer)
 * does not sample a function that is not hot. */
#define CREDIT_LOOKS 2

int64_t fast_budget_credit(const struct hooks *h)
{
    int64_t c = CREDIT_LOOKS * h->cfg.tuning.hot_calls_per_second * HOT_WINDOW_NS / 1000000000LL;
    return c > SAMPLE_CALLS ? c : SAMPLE_CALLS;
}

void fast_budget_set_credit(struct hooks *h, struct hook *k, int64_t credit)
{
    if (h->fast && k->fast)
        fastpath_write_fn(h, k, offsetof(struct fast_fn, credit), &credit, sizeof credit);
}

/* What one look found, per function id. */
struct look {
    const struct fastpath *fp;
    int64_t full;            /* the credit a function gets back */
    struct fast_fn *table;   /* one process's, read */
    bool *spent;             /* its credit went below 0 in some process */
    bool *used;              /* ... or below full: given back */
};

static void look_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    struct look *l = arg;
    uint32_t n = l->fp->n_fns;
    if (!p->fast_ok ||
        !procmem_read(p->memfd, fastpath_fn_addr(l->fp, 0), l->table, n * sizeof *l->table))
        return;
    for (uint32_t i = 0; i < n; i++) {
        l->spent[i] |= l->table[i].credit < 0;
        l->used[i] |= l->table[i].credit < l->full;
    }
}

/* Whether k's look concerns it: a traced function recording whole or in a sample
 * window. */
static bool looked_at(const struct hook *k)
{
    return k->role == HOOK_TRACE && k->wanted && !k->quiet;
}

void fast_budget_look(struct hooks *h, int64_t now)
{
    struct fastpath *fp = h->fast;
    struct process *main = u64map_get(&h->procs, (uint64_t)h->cfg.pid);
    int64_t span = now - fp->hot_checked;
    if (span < HOT_WINDOW_NS || !fp->n_fns)
        return;
    uint32_t n = fp->n_fns;
    struct look l = {fp, fast_budget_credit(h), malloc(n * sizeof *l.table),
                     calloc(n, sizeof *l.spent), calloc(n, sizeof *l.used)};
    struct fast_fn *mine = malloc(n * sizeof *mine);
    bool have_main = main && main->fast_ok && mine &&
                     procmem_read(main->memfd, fastpath_fn_addr(fp, 0), mine, n * sizeof *mine);
    if (l.table && l.spent && l.used && (have_main || !main)) {
        u64map_each(&h->procs, look_in, &l);
        for (uint32_t i = 0; i < n; i++) {
            struct hook *k = fp->fns[i];
            uint64_t calls = have_main ? mine[i].calls - k->fast_calls_seen : 0;
            if (have_main)
                k->fast_calls_seen = mine[i].calls;
            if (!looked_at(k))
                continue;
            bool window = k->sample_left > 0 && now <= k->sample_until;
            bool hot = fp->hot_checked && (int64_t)k->recorded >= h->cfg.tuning.sample_after &&
                       (double)calls * 1e9 / (double)span >
                           (double)h->cfg.tuning.hot_calls_per_second;
            if (l.spent[i] || hot)
                sampling_go_quiet(h, k, now);
            else if (l.used[i] && !window)
                fast_budget_set_credit(h, k, l.full);
        }
        fp->hot_checked = now;
    }
    free(mine);
    free(l.table);
    free(l.spent);
    free(l.used);
}

void fast_budget_at_end(struct hooks *h, const struct fast_fn *table, uint32_t n)
{
    for (uint32_t i = 0; h->fast && i < n && i < h->fast->n_fns; i++) {
        struct hook *k = h->fast->fns[i];
        if (table[i].credit < 0 && k->role == HOOK_TRACE && !k->sampled) {
            k->sampled = true;
            k->sampled_since = mono_ns();
        }
    }
}
