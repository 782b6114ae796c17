/*
 * hooks_state.c - the bottom of the hooks' room: the processes and threads the
 * hooks follow, the frames of a thread's traced calls, and the names a hook's
 * events carry. Every other file of the hooks builds on these and nothing here calls
 * back up (scripts/check-calls.py).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/u64map.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

struct process *hooks_state_process(struct hooks *h, pid_t tgid)
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

struct thread *hooks_state_thread_new(struct hooks *h, pid_t tid, pid_t tgid)
{
    struct process *p = hooks_state_process(h, tgid);
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

struct thread *hooks_state_thread(struct hooks *h, pid_t tid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    return t ? t : hooks_state_thread_new(h, tid, procmem_tgid(tid));
}

struct thread *hooks_state_thread_in(struct hooks *h, pid_t tid, pid_t tgid)
{
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    return t ? t : hooks_state_thread_new(h, tid, tgid);
}

struct frame *hooks_state_frame_push(struct thread *t)
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

void hooks_state_thread_free(struct thread *t)
{
    free(t->frames);
    free(t);
}

void hooks_state_thread_forget(struct hooks *h, struct thread *t)
{
    u64map_del(&h->threads, (uint64_t)t->tid);
    hooks_state_thread_free(t);
}

const char *hooks_state_function_name(const struct hook *k)
{
    return k->name ? k->name : k->fn->name;
}

const char *hooks_state_function_raw(const struct hook *k)
{
    return k->fn->linkage_name ? k->fn->linkage_name
         : k->name && strcmp(k->name, k->fn->name) != 0 ? k->fn->name : NULL;
}
