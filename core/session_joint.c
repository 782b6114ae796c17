/*
 * session_joint.c - a session whose processes run a runtime, seen by the engine as
 * one collector (the joint): session_target_get hands it out once a process of the
 * session was adopted (session_adopt.c), so breakpoints, pauses, steps and reads
 * (core/breakpoints.c, debug.c, memory.c, poll.c) reach every collector of the
 * session without knowing there are several.
 *
 * - A breakpoint on a runtime's source file (its source_suffix) or on a dotted
 *   function name is the runtime's (collector_breakpoint_owner): the session keeps
 *   its spec, sets it in each of the session's processes that run the runtime, all
 *   or none, and hands it to each process adopted later, before that runtime runs
 *   the program's code. Until one runs it is pending (said in its info), as gdb's
 *   breakpoints in a library not loaded yet: so a launch's staged breakpoints and
 *   those set just after a launch reach a Python program from its first line. The
 *   others are the process collector's. Clearing follows the id; lists are merged
 *   by id (the hits of one breakpoint in several processes add up).
 * - Pauses are merged; a resume, a step or a read of a paused thread goes to the
 *   collector that paused it; continuing every thread continues in each.
 * - Stacks are the process collector's with the runtime's frames joined
 *   (session_layers_stacks); the rest (watches, conditions over memory) is the
 *   process collector's. A launch's breakpoints are listed as the process collector
 *   bound them, then the runtimes' (session_joint_launch_bps split them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session_internal.h"

#define JOINT_PAUSES 64

struct collector_target {        /* this file's: the session it joins */
    struct session *s;
};

struct collector_target *session_joint_new(struct session *s)
{
    struct collector_target *j = calloc(1, sizeof *j);
    if (j)
        j->s = s;
    return j;
}

void session_joint_free(struct collector_target *j)
{
    free(j);
}

/* The session's runtime targets now (a copy: they stay until the session ends). */
static int layers(struct session *s, struct session_layer *out)
{
    pthread_mutex_lock(&s->layers_lock);
    int n = s->n_layers;
    memcpy(out, s->layers, (size_t)n * sizeof *out);
    pthread_mutex_unlock(&s->layers_lock);
    return n;
}

/* Whether id is one of s's runtime breakpoints; with forget, it is no longer. */
static bool runtime_id(struct session *s, int id, bool forget)
{
    pthread_mutex_lock(&s->layers_lock);
    bool have = false;
    for (int i = 0; i < s->n_runtime_bps && !have; i++)
        if ((have = s->runtime_bps[i].id == id) && forget) {
            collector_breakpoint_release(&s->runtime_bps[i]);
            s->runtime_bps[i] = s->runtime_bps[--s->n_runtime_bps];
        }
    pthread_mutex_unlock(&s->layers_lock);
    return have;
}

/* Keeps a copy of bp among s's runtime breakpoints; 0 or -1 with e. Called with
 * s->layers_lock held. */
static int keep_locked(struct session *s, const struct collector_breakpoint *bp,
                       struct strobe_error *e)
{
    if (s->n_runtime_bps == BREAKPOINTS_MAX + LOGPOINTS_MAX)
        return err_set(e, ERR_LIMIT_EXCEEDED, "At most %d breakpoints and logpoints may be "
                       "set in a session's runtime code: remove some first.",
                       BREAKPOINTS_MAX + LOGPOINTS_MAX);
    if (collector_breakpoint_copy(&s->runtime_bps[s->n_runtime_bps], bp) != 0)
        return err_set(e, ERR_INTERNAL, "out of memory keeping breakpoint %d", bp->id);
    s->n_runtime_bps++;
    return 0;
}

/* The info of a runtime breakpoint no process runs yet. */
static void pending_info(struct collector_bp_info *out, const struct collector_breakpoint *bp,
                         const struct collector_methods *owner)
{
    collector_bp_info_init(out, bp);
    out->pending = true;
    snprintf(out->note, sizeof out->note, "pending: no %s process of this session runs now; "
             "it is set in each one as it starts, before its code runs", owner->language);
}

int session_joint_launch_bps(struct session *s, const struct collector_breakpoint *bps, int n,
                             struct collector_breakpoint *native, struct strobe_error *e)
{
    int k = 0, rc = 0;
    pthread_mutex_lock(&s->layers_lock);
    for (int i = 0; i < n && rc == 0; i++)
        if (collector_breakpoint_owner(&bps[i]))
            rc = keep_locked(s, &bps[i], e);
        else
            native[k++] = bps[i];
    pthread_mutex_unlock(&s->layers_lock);
    return rc == 0 ? k : -1;
}

int session_joint_bps_of(struct session *s, const struct collector_methods *m,
                         struct collector_breakpoint *out, int max)
{
    int k = 0;
    for (int i = 0; i < s->n_runtime_bps && k < max; i++)
        if (collector_breakpoint_owner(&s->runtime_bps[i]) == m)
            out[k++] = s->runtime_bps[i];
    return k;
}

static int joint_breakpoint_set(struct collector_target *j,
                                const struct collector_breakpoint *bp,
                                struct collector_bp_info *out, struct strobe_error *e)
{
    struct session *s = j->s;
    const struct collector_methods *owner = collector_breakpoint_owner(bp);
    if (!owner)
        return collector_breakpoint_set(s->collector, s->target, bp, out, e);
    /* kept before the layers are read: a process adopted meanwhile starts with it */
    struct session_layer l[SESSION_LAYERS_MAX];
    pthread_mutex_lock(&s->layers_lock);
    int rc = keep_locked(s, bp, e);
    int n = s->n_layers, done = 0, set[SESSION_LAYERS_MAX];
    memcpy(l, s->layers, (size_t)n * sizeof *l);
    pthread_mutex_unlock(&s->layers_lock);
    if (rc != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (l[i].collector != owner || collector_finished(l[i].collector, l[i].target))
            continue;
        struct collector_bp_info info;
        if (collector_breakpoint_set(l[i].collector, l[i].target, bp, &info, e) != 0) {
            for (int k = 0; k < done; k++)
                collector_breakpoint_clear(l[set[k]].collector, l[set[k]].target, bp->id, NULL);
            runtime_id(s, bp->id, true);
            return -1;
        }
        if (!done)
            *out = info;
        set[done++] = i;
    }
    if (!done)
        pending_info(out, bp, owner);
    return 0;
}

static int joint_breakpoint_clear(struct collector_target *j, int id, struct strobe_error *e)
{
    struct session *s = j->s;
    if (!runtime_id(s, id, true))
        return collector_breakpoint_clear(s->collector, s->target, id, e);
    struct session_layer l[SESSION_LAYERS_MAX];
    int n = layers(s, l);
    for (int i = 0; i < n; i++)
        if (!collector_finished(l[i].collector, l[i].target))
            collector_breakpoint_clear(l[i].collector, l[i].target, id, NULL);
    return 0;
}

/* Adds b to out[0..*n) (max), or its counts to the entry of the same id. */
static void merge_bp(struct collector_bp_info *out, int *n, int max,
                     const struct collector_bp_info *b)
{
    for (int i = 0; i < *n; i++)
        if (out[i].id == b->id) {
            out[i].hits += b->hits;
            out[i].traps += b->traps;
            out[i].condition_errors += b->condition_errors;
            return;
        }
    if (*n < max)
        out[(*n)++] = *b;
}

/* Appends to out[0..*n) (max) the runtime breakpoints: as the layers list them,
 * merged by id, then those no layer has (pending). */
static void runtime_infos(struct session *s, struct collector_bp_info *out, int *n, int max)
{
    struct session_layer l[SESSION_LAYERS_MAX];
    int nl = layers(s, l);
    struct collector_bp_info *more = malloc((BREAKPOINTS_MAX + LOGPOINTS_MAX) * sizeof *more);
    for (int i = 0; more && i < nl; i++) {
        int k = collector_breakpoint_list(l[i].collector, l[i].target, more, (BREAKPOINTS_MAX + LOGPOINTS_MAX),
                                          NULL);
        for (int b = 0; b < k; b++)
            merge_bp(out, n, max, &more[b]);
    }
    free(more);
    pthread_mutex_lock(&s->layers_lock);
    for (int i = 0; i < s->n_runtime_bps && *n < max; i++) {
        bool listed = false;
        for (int k = 0; k < *n && !listed; k++)
            listed = out[k].id == s->runtime_bps[i].id;
        if (!listed)
            pending_info(&out[(*n)++], &s->runtime_bps[i],
                         collector_breakpoint_owner(&s->runtime_bps[i]));
    }
    pthread_mutex_unlock(&s->layers_lock);
}

static int joint_breakpoint_list(struct collector_target *j, struct collector_bp_info *out,
                                 int max)
{
    struct session *s = j->s;
    int n = collector_breakpoint_list(s->collector, s->target, out, max, NULL);
    if (n < 0)
        n = 0;
    runtime_infos(s, out, &n, max);
    return n;
}

static int joint_pauses(struct collector_target *j, struct collector_pause *out, int max)
{
    struct session *s = j->s;
    int n = collector_pauses(s->collector, s->target, out, max, NULL);
    if (n < 0)
        n = 0;
    struct session_layer l[SESSION_LAYERS_MAX];
    int nl = layers(s, l);
    for (int i = 0; i < nl && n < max; i++) {
        int k = collector_pauses(l[i].collector, l[i].target, out + n, max - n, NULL);
        n += k > 0 ? k : 0;
    }
    return n;
}

/* The runtime target that paused thread tid, or NULL (the process collector's). */
static const struct session_layer *pauser(const struct session_layer *l, int n, pid_t tid)
{
    struct collector_pause ps[JOINT_PAUSES];
    for (int i = 0; i < n; i++) {
        int k = collector_pauses(l[i].collector, l[i].target, ps, JOINT_PAUSES, NULL);
        for (int p = 0; p < k; p++)
            if (ps[p].tid == tid)
                return &l[i];
    }
    return NULL;
}

static int joint_pause(struct collector_target *j, pid_t pid, struct strobe_error *e)
{
    struct session *s = j->s;
    int total = collector_pause(s->collector, s->target, pid, e);
    if (total < 0)
        return -1;
    struct session_layer l[SESSION_LAYERS_MAX];
    int n = layers(s, l);
    for (int i = 0; i < n; i++) {
        if (collector_finished(l[i].collector, l[i].target))
            continue;
        int k = collector_pause(l[i].collector, l[i].target, pid, NULL);
        total += k > 0 ? k : 0;
    }
    return total;
}

static int joint_resume(struct collector_target *j, pid_t tid, enum collector_resume how,
                        struct strobe_error *e)
{
    struct session *s = j->s;
    struct session_layer l[SESSION_LAYERS_MAX];
    int n = layers(s, l);
    if (!tid && how != RESUME_CONTINUE) { /* a step of the selected thread, as gdb's */
        struct collector_pause ps[JOINT_PAUSES], best = {0};
        int np = joint_pauses(j, ps, JOINT_PAUSES);
        for (int i = 0; i < np; i++)
            if (collector_pause_better(&ps[i], &best))
                best = ps[i];
        tid = best.tid;
    }
    if (tid) {
        const struct session_layer *p = pauser(l, n, tid);
        return p ? collector_resume(p->collector, p->target, tid, how, e)
                 : collector_resume(s->collector, s->target, tid, how, e);
    }
    struct strobe_error first = {0};
    int ok = collector_resume(s->collector, s->target, 0, how, &first) == 0;
    for (int i = 0; i < n; i++) {
        struct collector_pause ps[1];
        if (collector_pauses(l[i].collector, l[i].target, ps, 1, NULL) > 0)
            ok += collector_resume(l[i].collector, l[i].target, 0, how, NULL) == 0;
    }
    if (ok)
        return 0;
    if (e)
        *e = first;
    return -1;
}

/* The process collector's threads in one call (it resumes them together: one that
 * hits an allStop breakpoint again at once finds the others still paused), the
 * runtimes' each by its collector. */
static int joint_resume_many(struct collector_target *j, const pid_t *tids, int n,
                             struct strobe_error *e)
{
    struct session *s = j->s;
    struct session_layer l[SESSION_LAYERS_MAX];
    int nl = layers(s, l), n_native = 0, rc = 0;
    pid_t *native = malloc((size_t)(n > 0 ? n : 1) * sizeof *native);
    if (!native)
        return err_set(e, ERR_INTERNAL, "out of memory resuming threads");
    for (int i = 0; i < n; i++) {
        const struct session_layer *p = pauser(l, nl, tids[i]);
        if (!p)
            native[n_native++] = tids[i];
        else if (collector_resume(p->collector, p->target, tids[i], RESUME_CONTINUE, e) != 0)
            rc = -1;
    }
    if (n_native && collector_resume_many(s->collector, s->target, native, n_native, e) != 0)
        rc = -1;
    free(native);
    return rc;
}

/* A memory condition (debug_continue until) over the process collector's globals,
 * else over a runtime's (Python's `progress >= 150 and done`, over __main__'s
 * globals): the first collector that can evaluate it answers. When none can, the
 * runtime's reason is given for a condition that is not C, the process collector's
 * otherwise. */
static int joint_evaluate(struct collector_target *j, pid_t pid, const char *condition,
                          bool *result, char *values, size_t cap, struct strobe_error *e)
{
    struct session *s = j->s;
    struct strobe_error native = {0};
    if (collector_evaluate(s->collector, s->target, pid, condition, result, values, cap,
                           &native) == 0)
        return 0;
    struct session_layer l[SESSION_LAYERS_MAX];
    int n = layers(s, l);
    struct strobe_error runtime = {0};
    for (int i = 0; i < n; i++) {
        if (collector_finished(l[i].collector, l[i].target))
            continue;
        if (collector_evaluate(l[i].collector, l[i].target, 0, condition, result, values, cap,
                               &runtime) == 0)
            return 0;
    }
    if (e)
        *e = runtime.code != ERR_NONE && native.code == ERR_BAD_EXPRESSION ? runtime : native;
    return -1;
}

static int joint_breakpoints_staged(struct collector_target *j, struct collector_bp_info *out,
                                    int max)
{
    struct session *s = j->s;
    int n = collector_breakpoints_staged(s->collector, s->target, out, max, NULL);
    if (n < 0)
        n = 0;
    runtime_infos(s, out, &n, max);
    return n;
}

static int joint_memory(struct collector_target *j, const struct collector_mem_request *req,
                        struct collector_mem_result *out, struct strobe_error *e)
{
    struct session *s = j->s;
    struct session_layer l[SESSION_LAYERS_MAX];
    int n = layers(s, l);
    const struct session_layer *p = req->tid ? pauser(l, n, req->tid) : NULL;
    return p ? collector_memory(p->collector, p->target, req, out, e)
             : collector_memory(s->collector, s->target, req, out, e);
}

/* Threads a runtime paused (a pause answer's) are its alone: their native frames are
 * the interpreter waiting in the runtime's own code, and reading them would stop
 * every thread of the process for nothing. */
static int joint_stacks(struct collector_target *j, const struct collector_stacks_request *req,
                        struct collector_stacks *out, struct strobe_error *e)
{
    struct session *s = j->s;
    if (req->n_tids > 0) {
        struct session_layer l[SESSION_LAYERS_MAX];
        int n = layers(s, l);
        const struct session_layer *p = pauser(l, n, req->tids[0]);
        for (int i = 1; p && i < req->n_tids; i++)
            if (pauser(l, n, req->tids[i]) != p)
                p = NULL;
        if (p)
            return collector_stacks(p->collector, p->target, req, out, e);
    }
    if (collector_stacks(s->collector, s->target, req, out, e) != 0)
        return -1;
    session_layers_stacks(s, req, out);
    return 0;
}

static int joint_trace_watches(struct collector_target *j, const struct trace_watch_spec *add,
                               int n_add, const char *const *remove, int n_remove,
                               struct trace_watch_result *out, struct strobe_error *e)
{
    return collector_trace_watches(j->s->collector, j->s->target, add, n_add, remove, n_remove,
                                   out, e);
}

static int joint_watch_set(struct collector_target *j, const struct collector_watch_request *w,
                           struct collector_watch_info *out, struct strobe_error *e)
{
    return collector_watch_set(j->s->collector, j->s->target, w, out, e);
}

static int joint_watch_clear(struct collector_target *j, int id, struct strobe_error *e)
{
    return collector_watch_clear(j->s->collector, j->s->target, id, e);
}

static int joint_watch_list(struct collector_target *j, struct collector_watch_info *out, int max)
{
    return collector_watch_list(j->s->collector, j->s->target, out, max, NULL);
}

/* Only the slots the engine reaches through session_target_get. */
const struct collector_methods session_joint = {
    .name = "joint",
    .language = "this program's languages",
    .trace_watches = joint_trace_watches,
    .breakpoint_set = joint_breakpoint_set,
    .breakpoint_clear = joint_breakpoint_clear,
    .breakpoint_list = joint_breakpoint_list,
    .pauses = joint_pauses,
    .pause = joint_pause,
    .resume = joint_resume,
    .evaluate = joint_evaluate,
    .breakpoints_staged = joint_breakpoints_staged,
    .resume_many = joint_resume_many,
    .memory = joint_memory,
    .stacks = joint_stacks,
    .watch_set = joint_watch_set,
    .watch_clear = joint_watch_clear,
    .watch_list = joint_watch_list,
};
