/*
 * session_adopt.c - the runtime collectors of a session (core/collector.h,
 * "adoption"): when the process collector reports a process running a runtime,
 * the rule's collector adopts it, with a ring of its own attached to the store, and
 * its target becomes one of the session's layers. The requests that concern every
 * collector of a session (patterns, their description, counts, the end) reach the
 * layers through this file, after the process collector: the answers are merged so
 * the agent sees one session.
 *
 * Merging a pattern's results: counts add up; a pattern that matches in one
 * collector drops the others' "matches nothing" warning; one that matches nowhere
 * keeps the warning of the collector whose names it looks like (a dotted name or a
 * .py file: the runtime's, when a runtime runs; else the process collector's).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/paths.h"
#include "core/session_internal.h"

#define LAYER_RING_BYTES (4u << 20)

void session_layers_remember(struct session *s, const char *const *patterns, int n, int depth)
{
    pthread_mutex_lock(&s->layers_lock);
    s->n_active = n < PATTERNS_MAX ? n : PATTERNS_MAX;
    for (int i = 0; i < s->n_active; i++)
        snprintf(s->active[i], PATTERN_MAX_LEN, "%s", patterns[i]);
    if (depth > 0)
        s->active_depth = depth;
    pthread_mutex_unlock(&s->layers_lock);
}

bool session_adopt(void *arg, int rule, pid_t pid, char *buf, size_t cap)
{
    struct session *s = arg;
    const struct collector_methods *m = collector_of_rule(rule);
    char home[PATH_MAX];
    if (!m || strobe_home(home, sizeof home, NULL) != 0)
        return false;
    struct ring *r = ring_create(LAYER_RING_BYTES);
    if (!r)
        return false;
    pthread_mutex_lock(&s->layers_lock);
    if (s->n_layers == SESSION_LAYERS_MAX) {
        pthread_mutex_unlock(&s->layers_lock);
        ring_destroy(r);
        log_warn("session %s: more than %d processes run a runtime; pid %d is traced as "
                 "native code only", s->id, SESSION_LAYERS_MAX, pid);
        return false;
    }
    const char *list[PATTERNS_MAX];
    for (int i = 0; i < s->n_active; i++)
        list[i] = s->active[i];
    struct collector_breakpoint bps[BREAKPOINTS_MAX + LOGPOINTS_MAX];
    int n_bps = session_joint_bps_of(s, m, bps, BREAKPOINTS_MAX + LOGPOINTS_MAX);
    struct collector_adopt req = {
        .pid = pid, .project_root = s->project_root, .state_dir = home,
        .sink = {.session_key = s->key, .t0_ns = s->t0_ns, .ring = r,
                 .wake = store_wake, .wake_arg = sessions.store},
        .tuning = s->tuning, .patterns = list, .n_patterns = s->n_active,
        .depth = s->active_depth, .paused = s->paused, .paused_arg = s,
        .breakpoints = bps, .n_breakpoints = n_bps,
    };
    store_attach_ring(sessions.store, r, s->key);
    struct collector_target *t = NULL;
    struct strobe_error e = {0};
    if (m->adopt(&req, &t, buf, cap, &e) != 0) {
        pthread_mutex_unlock(&s->layers_lock);
        store_release_ring(sessions.store, r);
        log_warn("session %s: %s cannot adopt pid %d: %s", s->id, m->name, pid, e.msg);
        return false;
    }
    s->layers[s->n_layers++] = (struct session_layer){m, t, r};
    pthread_mutex_unlock(&s->layers_lock);
    return true;
}

/* Whether a pattern names things the way a runtime does: "a.b", or "@file:" of a
 * .py file (native names have "::", native files other suffixes). */
static bool runtime_shaped(const char *p)
{
    size_t n = strlen(p);
    if (strncmp(p, "@file:", 6) == 0)
        return n > 3 && strcmp(p + n - 3, ".py") == 0;
    return p[0] != '@' && strchr(p, '.') && !strstr(p, "::");
}

static void drop_warning(struct trace_result *res, const char *w)
{
    for (int i = 0; i < res->n_warnings; i++)
        if (strcmp(res->warnings[i], w) == 0) {
            memmove(res->warnings[i], res->warnings[i + 1],
                    (size_t)(res->n_warnings - i - 1) * sizeof res->warnings[0]);
            res->n_warnings--;
            return;
        }
}

/* w may be inside res (a pattern's warning): moved, not printed from res into res. */
static void add_warning(struct trace_result *res, const char *w)
{
    if (!w[0] || res->n_warnings == (int)(sizeof res->warnings / sizeof res->warnings[0]))
        return;
    size_t n = strnlen(w, sizeof res->warnings[0] - 1);
    memmove(res->warnings[res->n_warnings], w, n);
    res->warnings[res->n_warnings++][n] = '\0';
}

static void merge(struct trace_result *res, const struct trace_result *more)
{
    for (int i = 0; i < res->n_patterns; i++) {
        struct pattern_result *p = &res->per_pattern[i];
        for (int k = 0; k < more->n_patterns; k++) {
            const struct pattern_result *q = &more->per_pattern[k];
            if (strcmp(res->patterns[i], more->patterns[k]) != 0)
                continue;
            bool matched_here = p->matched > 0;
            p->matched += q->matched;
            p->armed += q->armed;
            if (q->matched > 0 || (!matched_here && runtime_shaped(res->patterns[i]))) {
                drop_warning(res, p->warning);
                snprintf(p->warning, sizeof p->warning, "%s", q->warning);
                add_warning(res, p->warning);
            }
        }
    }
    res->hooked += more->hooked;
    res->matched += more->matched;
    for (int k = 0; k < more->n_warnings; k++) {
        bool have = false;
        for (int i = 0; i < res->n_warnings && !have; i++)
            have = strcmp(res->warnings[i], more->warnings[k]) == 0;
        bool per_pattern = false;
        for (int i = 0; i < more->n_patterns && !per_pattern; i++)
            per_pattern = strcmp(more->per_pattern[i].warning, more->warnings[k]) == 0;
        if (!have && !per_pattern)
            add_warning(res, more->warnings[k]);
    }
    if (more->status[0]) {
        size_t n = strlen(res->status);
        snprintf(res->status + n, sizeof res->status - n, "%s%s", n ? " " : "", more->status);
    }
}

/* No process runs a runtime yet: a runtime-shaped pattern that matched nothing
 * natively is waiting for one, not wrong. */
static void awaiting_runtime(struct trace_result *res)
{
    const struct collector_adopt_rule *rules[1];
    if (collector_adopt_rules(rules, 1) == 0)
        return;
    const char *language = collector_of_rule(0)->language;
    for (int i = 0; i < res->n_patterns; i++) {
        struct pattern_result *p = &res->per_pattern[i];
        if (p->matched || !runtime_shaped(res->patterns[i]))
            continue;
        drop_warning(res, p->warning);
        char pattern[PATTERN_MAX_LEN];
        memcpy(pattern, res->patterns[i], sizeof pattern); /* not from res into res */
        snprintf(p->warning, sizeof p->warning, "'%.80s' matches no native function; it is "
                 "armed in each process of the program that runs %.60s, when it starts "
                 "(none has yet)", pattern, language);
        add_warning(res, p->warning);
    }
}

void session_layers_trace(struct session *s, bool change, const char *const *add, int n_add,
                          const char *const *remove, int n_remove, int depth,
                          struct trace_result *res)
{
    pthread_mutex_lock(&s->layers_lock);
    int n = s->n_layers;
    if (n == 0)
        awaiting_runtime(res);
    struct session_layer layers[SESSION_LAYERS_MAX];
    memcpy(layers, s->layers, (size_t)n * sizeof layers[0]);
    pthread_mutex_unlock(&s->layers_lock);
    struct trace_result *more = malloc(sizeof *more);
    for (int i = 0; more && i < n; i++) {
        const struct session_layer *l = &layers[i];
        memset(more, 0, sizeof *more);
        struct strobe_error e = {0};
        /* A process that ended keeps telling what it did (and why it did nothing). */
        if (!change || collector_finished(l->collector, l->target)) {
            collector_describe(l->collector, l->target, more);
        } else if (collector_set_patterns(l->collector, l->target, add, n_add, remove,
                                          n_remove, depth, more, &e) != 0) {
            add_warning(res, e.msg);
            continue;
        }
        merge(res, more);
    }
    free(more);
}

static bool runtime_frame(const struct collector_frame *f, const char *const *prefixes)
{
    for (size_t k = 0; f->function && prefixes && prefixes[k]; k++)
        if (strncmp(f->function, prefixes[k], strlen(prefixes[k])) == 0)
            return true;
    return false;
}

/* How many of th's innermost native frames matter beside the runtime's: above the
 * first of the runtime's own functions, up to the last frame of the program's own
 * native code (a C extension, a library of the project) with the system frames it
 * called (the read it blocks in); none when the thread is in the runtime's and the
 * system's code only (a lock wait, the runtime's own extension modules). */
static size_t native_prefix(const struct collector_thread *th, const char *const *prefixes)
{
    size_t keep = 0;
    for (size_t i = 0; i < th->n_frames && !runtime_frame(&th->frames[i], prefixes); i++)
        if (!th->frames[i].system)
            keep = i + 1;
    return prefixes ? keep : 0;
}

/* Moves runtime thread from onto native thread to (both the same tid): its frames
 * (after the native ones that matter, native_prefix), own frame, locals, and its
 * wait when it names one (else the native wait stays). */
static void take_frames(struct collector_thread *to, struct collector_thread *from,
                        const char *const *prefixes)
{
    size_t keep = native_prefix(to, prefixes);
    struct collector_frame *frames = malloc((keep + from->n_frames + 1) * sizeof *frames);
    if (!frames)
        keep = 0;
    for (size_t i = 0; frames && i < keep; i++) { /* moved: not freed with to's */
        frames[i] = to->frames[i];
        to->frames[i] = (struct collector_frame){0};
    }
    char *native_wait = from->wait == WAIT_NONE ? to->wait_variable : NULL;
    if (native_wait)
        to->wait_variable = NULL;
    collector_thread_free(to);
    to->wait_variable = native_wait;
    snprintf(to->name, sizeof to->name, "%s", from->name); /* the runtime's name for it */
    if (frames) {
        memcpy(frames + keep, from->frames, from->n_frames * sizeof *frames);
        free(from->frames);
        from->frames = frames;
    }
    to->frames = from->frames;
    to->n_frames = keep + from->n_frames;
    to->omitted_frames = from->omitted_frames;
    to->own_frame = from->own_frame >= 0 ? from->own_frame + (int)keep : -1;
    to->locals = from->locals;
    if (from->wait != WAIT_NONE) {
        to->wait = from->wait;
        to->wait_address = from->wait_address;
        to->wait_variable = from->wait_variable;
        to->wait_owner = from->wait_owner;
        from->wait_variable = NULL;
    }
    from->frames = NULL;
    from->n_frames = 0;
    from->locals = NULL;
}

void session_layers_stacks(struct session *s, const struct collector_stacks_request *req,
                           struct collector_stacks *out)
{
    pthread_mutex_lock(&s->layers_lock);
    int n = s->n_layers;
    struct session_layer layers[SESSION_LAYERS_MAX];
    memcpy(layers, s->layers, (size_t)n * sizeof layers[0]);
    pthread_mutex_unlock(&s->layers_lock);
    for (int i = 0; i < n; i++) {
        const struct session_layer *l = &layers[i];
        struct collector_stacks more = {0};
        struct strobe_error e = {0};
        if (collector_finished(l->collector, l->target) ||
            collector_stacks(l->collector, l->target, req, &more, &e) != 0)
            continue;
        for (size_t k = 0; k < more.n_threads; k++)
            for (size_t j = 0; j < out->n_threads; j++) {
                struct collector_thread *th = &out->threads[j];
                if (th->tid != more.threads[k].tid)
                    continue;
                if (more.threads[k].agent) { /* the agent's own: not the program's */
                    collector_thread_free(th);
                    memmove(th, th + 1, (out->n_threads - j - 1) * sizeof *th);
                    out->n_threads--;
                } else {
                    take_frames(th, &more.threads[k], l->collector->native_prefixes);
                }
                break;
            }
        collector_stacks_free(&more);
    }
}

void session_layers_counts(struct session *s, struct collector_counts *out)
{
    pthread_mutex_lock(&s->layers_lock);
    int n = s->n_layers;
    struct session_layer layers[SESSION_LAYERS_MAX];
    memcpy(layers, s->layers, (size_t)n * sizeof layers[0]);
    pthread_mutex_unlock(&s->layers_lock);
    struct collector_counts *more = malloc(sizeof *more);
    for (int i = 0; more && i < n; i++) {
        if (collector_counts(layers[i].collector, layers[i].target, more, NULL) != 0)
            continue;
        for (size_t k = 0; k < more->n && out->n < COUNTS_MAX; k++)
            out->fns[out->n++] = more->fns[k];
    }
    free(more);
}

int session_runtimes(const char *id, char (*out)[SESSION_RUNTIME_TEXT], int max)
{
    struct session *s = session_acquire(id, NULL);
    if (!s)
        return 0;
    pthread_mutex_lock(&s->layers_lock);
    int n = s->n_layers, k = 0;
    struct session_layer layers[SESSION_LAYERS_MAX];
    memcpy(layers, s->layers, (size_t)n * sizeof layers[0]);
    pthread_mutex_unlock(&s->layers_lock);
    struct trace_result *res = malloc(sizeof *res);
    for (int i = 0; res && i < n && k < max; i++) {
        collector_describe(layers[i].collector, layers[i].target, res);
        if (res->status[0])
            snprintf(out[k++], SESSION_RUNTIME_TEXT, "%.*s", SESSION_RUNTIME_TEXT - 1,
                     res->status);
    }
    free(res);
    session_release(s);
    return k;
}

void session_layers_kill(struct session *s)
{
    pthread_mutex_lock(&s->layers_lock);
    for (int i = 0; i < s->n_layers; i++)
        collector_kill(s->layers[i].collector, s->layers[i].target);
    pthread_mutex_unlock(&s->layers_lock);
}

void session_layers_join(struct session *s)
{
    pthread_mutex_lock(&s->layers_lock);
    for (int i = 0; i < s->n_layers; i++) {
        collector_join(s->layers[i].collector, s->layers[i].target);
        store_release_ring(sessions.store, s->layers[i].ring);
    }
    s->n_layers = 0;
    pthread_mutex_unlock(&s->layers_lock);
}
