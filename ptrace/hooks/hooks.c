/*
 * hooks.c - the hooks of one image (hooks.h): their life cycle, the threads and
 * processes they follow (from the tracer's ptrace events) and their statistics.
 *
 * The rest of the hooks is one file per concern, sharing the state of
 * hooks_internal.h: hooks_arm.c arms and disarms functions in scratch areas,
 * hooks_trap.c handles the entry and return traps and builds their events,
 * hooks_unwind.c lends a traced thread's real return addresses to unwinders and
 * adopts the calls in progress when their function is hooked, sampling.c handles
 * hot functions and the exact counts.
 */
#include "base/strbuf.h"
#include "dwarf/value.h"
#include "ptrace/hooks/hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/u64map.h"
#include "ptrace/proc/callsite.h"
#include "ptrace/proc/fnsym.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

/* ---- processes and threads ------------------------------------------------- */

/* ---- bookkeeping ------------------------------------------------------------------- */

void hooks_on_clone(struct hooks *h, pid_t parent_tid, pid_t child_tid, bool new_process,
                    bool shares_memory)
{
    struct thread *parent = hooks_state_thread(h, parent_tid);
    pid_t tgid = new_process ? child_tid : (parent ? parent->tgid : procmem_tgid(child_tid));
    struct thread *child = u64map_get(&h->threads, (uint64_t)child_tid);
    if (child && child->gone) { /* a tid used again: the old thread's frames are not its */
        hooks_state_thread_forget(h, child);
        child = NULL;
    }
    if (!child)
        child = hooks_state_thread_new(h, child_tid, tgid);
    struct process *cp = new_process ? u64map_get(&h->procs, (uint64_t)tgid) : NULL;
    if (cp && parent) {
        cp->forked = true;
        cp->n_areas = hooks_areas_in(h, u64map_get(&h->procs, (uint64_t)parent->tgid));
        sampling_count_baselines(h, cp); /* its counters start as copies of the parent's */
        /* A vfork child records into its parent's ring, as its parent's thread. */
        if (!shares_memory)
            fastpath_on_fork(h, u64map_get(&h->procs, (uint64_t)parent->tgid), cp, parent_tid,
                             child_tid);
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

static void collect_gone_of(uint64_t key, void *value, void *arg)
{
    const struct thread *t = value;
    if (t->gone)
        collect_threads_of(key, value, arg);
}

void hooks_on_exit(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    if (!t)
        return;
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    if (t->tid != t->tgid && t->depth > 0 && p && p->fast_ok) {
        /* Its last exits may wait in the ring behind a record another thread is
         * still writing (the drain at its exit event stops there): its frames stay
         * for them, the thread forgotten once they are popped (fast_drain.c). */
        t->gone = true;
        return;
    }
    u64map_del(&h->threads, (uint64_t)tid);
    if (t->tid == t->tgid) {
        struct forget_state st = {.tgid = t->tgid};
        u64map_each(&h->threads, collect_gone_of, &st); /* their process goes */
        for (int i = 0; i < st.n; i++)
            hooks_state_thread_free(u64map_del(&h->threads, (uint64_t)st.tids[i]));
        p = u64map_del(&h->procs, (uint64_t)t->tgid);
        if (p)
            sampling_process_free(h, p);
    }
    hooks_state_thread_free(t);
}

/* A thread stops to exit: the fast path's records are drained while its slot
 * still names it, then the slot forgets it; its process's counters are read while
 * they are there. */
void hooks_on_exit_event(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    if (t && h->fast) {
        fast_drain_complete(h);
        fastpath_on_thread_exit(h, t);
    }
    struct process *p = t ? u64map_get(&h->procs, (uint64_t)t->tgid) : NULL;
    if (p)
        sampling_count_read_last(h, p);
}

bool hooks_owns_thread(const struct hooks *h, pid_t tid)
{
    return u64map_get(&h->threads, (uint64_t)tid) != NULL;
}

void hooks_adopt(struct hooks *h, pid_t pid)
{
    if (!u64map_get(&h->threads, (uint64_t)pid))
        hooks_state_thread_new(h, pid, pid);
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
    const struct hooks *h;
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
    if (s->out) {
        s->out->armed++;
        if (k->fast && s->h->cfg.tuning.fast)
            s->out->fast++;
        else if (s->h->cfg.tuning.fast && k->cj_planned && !k->fast) {
            if (!s->out->fast_fallback++)
                snprintf(s->out->fast_why, sizeof s->out->fast_why, "%s: %s",
                         hooks_state_function_name(k), k->cj.why);
        }
    }
    if (s->names && k->sampled && s->n < s->max)
        s->names[s->n++] = k->name ? k->name : k->fn->name;
}

void hooks_stats(const struct hooks *h, struct hooks_stats *out)
{
    memset(out, 0, sizeof *out);
    out->hits = h->hits;
    out->single_step_hits = h->single_step_hits;
    struct stats_state s = {h, out, NULL, 0, 0};
    u64map_each(&h->by_addr, count_hook, &s);
}

size_t hooks_sampled_names(const struct hooks *h, const char **names, size_t max)
{
    struct stats_state s = {h, NULL, names, max, 0};
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
    h->render.vopts = (struct value_opts){.max_depth = 3, .max_string = 1024, .max_array = 100};
    h->render.fnsym = fnsym_new();
    h->render.vopts.symbolize = h->render.fnsym ? fnsym_name : NULL;
    h->render.vopts.symbolize_ctx = h->render.fnsym;
    return h;
}

void hooks_set_depth(struct hooks *h, int depth, bool asked)
{
    h->render.vopts.max_depth = depth < 1 ? 1 : depth > 10 ? 10 : depth;
    h->render.vopts.depth_asked = asked;
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
    hooks_state_thread_free(value);
}

static void free_process(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    struct process *p = value;
    close(p->memfd);
    callsite_free_all(p->sites);
    free(p->counts);
    free(p->fast_lost);
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
    fastpath_free(h);
    sb_free(&h->render.args);
    sb_free(&h->render.ret);
    sb_free(&h->render.data);
    sb_free(&h->render.brief);
    sb_free(&h->render.brief_obj);
    sb_free(&h->render.brief_text);
    fnsym_free(h->render.fnsym);
    sb_free(&h->render.site);
    free(h);
}
