/*
 * pauses.c - the paused threads of one target (pauses.h): a small array under a
 * mutex; a target has at most as many pauses as threads, and few at a time.
 */
#include "ptrace/debugger/pauses.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/frame.h"

struct paused {
    struct collector_pause p;
    struct user_regs_struct regs;
};

struct pauses {
    pthread_mutex_t lock;
    struct paused *v;
    size_t n, cap;
    int64_t seq;
    int batch;                  /* pauses_batch depth: notifications wait for its end */
    bool changed_in_batch;
    void (*changed)(void *arg);
    void *arg;
};

struct pauses *pauses_new(void (*changed)(void *arg), void *arg)
{
    struct pauses *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    pthread_mutex_init(&ps->lock, NULL);
    ps->changed = changed;
    ps->arg = arg;
    return ps;
}

void pauses_free(struct pauses *ps)
{
    if (!ps)
        return;
    pthread_mutex_destroy(&ps->lock);
    free(ps->v);
    free(ps);
}

static struct paused *find(struct pauses *ps, pid_t tid)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].p.tid == tid)
            return &ps->v[i];
    return NULL;
}

static void notify(struct pauses *ps)
{
    pthread_mutex_lock(&ps->lock);
    bool later = ps->batch > 0;
    ps->changed_in_batch |= later;
    pthread_mutex_unlock(&ps->lock);
    if (!later && ps->changed)
        ps->changed(ps->arg);
}

void pauses_batch(struct pauses *ps, bool begin)
{
    pthread_mutex_lock(&ps->lock);
    ps->batch += begin ? 1 : -1;
    bool flush = ps->batch == 0 && ps->changed_in_batch;
    if (flush)
        ps->changed_in_batch = false;
    pthread_mutex_unlock(&ps->lock);
    if (flush && ps->changed)
        ps->changed(ps->arg);
}

void pauses_add(struct pauses *ps, struct collector_pause *p,
                const struct user_regs_struct *regs)
{
    pthread_mutex_lock(&ps->lock);
    p->seq = ++ps->seq;
    struct paused *slot = find(ps, p->tid);
    if (slot) {
        /* A new pause of the same thread goes last, as the newest. */
        size_t i = (size_t)(slot - ps->v);
        memmove(&ps->v[i], &ps->v[i + 1], (ps->n - i - 1) * sizeof *ps->v);
        ps->n--;
    }
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 8;
        struct paused *v = realloc(ps->v, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&ps->lock);
            return;
        }
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = (struct paused){*p, *regs};
    pthread_mutex_unlock(&ps->lock);
    notify(ps);
}

bool pauses_remove(struct pauses *ps, pid_t tid)
{
    pthread_mutex_lock(&ps->lock);
    struct paused *slot = find(ps, tid);
    if (slot) {
        size_t i = (size_t)(slot - ps->v);
        memmove(&ps->v[i], &ps->v[i + 1], (ps->n - i - 1) * sizeof *ps->v);
        ps->n--;
    }
    pthread_mutex_unlock(&ps->lock);
    if (slot)
        notify(ps);
    return slot != NULL;
}

void pauses_set_regs(struct pauses *ps, pid_t tid, const struct user_regs_struct *regs)
{
    pthread_mutex_lock(&ps->lock);
    struct paused *slot = find(ps, tid);
    if (slot)
        slot->regs = *regs;
    pthread_mutex_unlock(&ps->lock);
}

int pauses_list(struct pauses *ps, struct collector_pause *out, int max)
{
    pthread_mutex_lock(&ps->lock);
    int n = (int)ps->n;
    for (int i = 0; i < n && i < max; i++)
        out[i] = ps->v[i].p;
    pthread_mutex_unlock(&ps->lock);
    return n;
}

bool pauses_get(struct pauses *ps, pid_t tid, struct collector_pause *out,
                struct user_regs_struct *regs)
{
    pthread_mutex_lock(&ps->lock);
    struct paused *slot = find(ps, tid);
    if (slot) {
        if (out)
            *out = slot->p;
        if (regs)
            *regs = slot->regs;
    }
    pthread_mutex_unlock(&ps->lock);
    return slot != NULL;
}

pid_t pauses_selected(struct pauses *ps)
{
    pthread_mutex_lock(&ps->lock);
    const struct collector_pause *best = NULL;
    for (size_t i = 0; i < ps->n; i++)
        if (!best || collector_pause_better(&ps->v[i].p, best))
            best = &ps->v[i].p;
    pid_t tid = best ? best->tid : 0;
    pthread_mutex_unlock(&ps->lock);
    return tid;
}

int pauses_tids(struct pauses *ps, pid_t *out, int max)
{
    pthread_mutex_lock(&ps->lock);
    int n = (int)ps->n;
    for (int i = 0; i < n && i < max; i++)
        out[i] = ps->v[i].p.tid;
    pthread_mutex_unlock(&ps->lock);
    return n;
}

void pauses_describe_site(struct collector_pause *p, const char *module, uint64_t bias)
{
    struct dw_site sites[8];
    size_t n = module && module[0] ? dw_frame_sites(module, p->pc - bias, sites, 8) : 0;
    if (n == 0)
        return;
    if (sites[0].function)
        snprintf(p->function, sizeof p->function, "%s", sites[0].function);
    if (sites[0].file)
        snprintf(p->file, sizeof p->file, "%s", sites[0].file);
    p->line = sites[0].line;
    dw_sites_free(sites, n);
}
