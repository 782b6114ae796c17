/*
 * resolve.c - pattern resolution and hook synchronization. See resolve.h.
 *
 * update_lock serializes whole updates. Preloaded patterns are armed on the tracer
 * thread when the program reaches its entry point; until then a client's update
 * waits (entry_pending), because holding update_lock it would wait for the tracer
 * thread in tracer_call() while the tracer thread waits for the lock.
 */
#include "ptrace/resolve.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pattern_match.h"
#include "base/u64map.h"
#include "dwarf/dwarf.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/proc/ifunc.h"
#include "ptrace/proc/match.h"
#include "ptrace/pattern_why.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/tracer/tracer.h"

struct trace {
    pthread_mutex_t update_lock;
    pthread_mutex_t patterns_lock; /* patterns and depth, for the tracer thread's
                                      snapshots (it must never wait on update_lock) */
    pthread_mutex_t entry_lock;
    pthread_cond_t entry_done;
    bool entry_pending;      /* preloaded patterns not armed yet */
    char project_root[PATH_MAX];
    int n_patterns;
    char patterns[PATTERNS_MAX][PATTERN_MAX_LEN];
    int depth;
    bool depth_asked;        /* depth was asked for, not the default */
    struct u64map hooked;    /* runtime address -> const struct dw_function */
    struct pattern_result last[PATTERNS_MAX]; /* of the last update, per pattern */
    bool resolved;           /* last holds an update (the patterns met the program) */
    atomic_bool image_replaced; /* the main process exec'd: hooked is stale */
};

struct trace *resolve_new(const char *project_root)
{
    struct trace *tr = calloc(1, sizeof *tr);
    if (!tr)
        return NULL;
    pthread_mutex_init(&tr->update_lock, NULL);
    pthread_mutex_init(&tr->patterns_lock, NULL);
    pthread_mutex_init(&tr->entry_lock, NULL);
    pthread_cond_init(&tr->entry_done, NULL);
    snprintf(tr->project_root, sizeof tr->project_root, "%s", project_root);
    tr->depth = 3;
    return tr;
}

void resolve_free(struct trace *tr)
{
    if (!tr)
        return;
    u64map_free(&tr->hooked);
    pthread_mutex_destroy(&tr->update_lock);
    pthread_mutex_destroy(&tr->patterns_lock);
    pthread_mutex_destroy(&tr->entry_lock);
    pthread_cond_destroy(&tr->entry_done);
    free(tr);
}

static bool is_exact(const char *p)
{
    return p[0] != '@' && !strchr(p, '*');
}

static bool has_pattern(const struct trace *tr, const char *p)
{
    for (int i = 0; i < tr->n_patterns; i++)
        if (strcmp(tr->patterns[i], p) == 0)
            return true;
    return false;
}

static void add_pattern(struct trace *tr, const char *p)
{
    if (!has_pattern(tr, p) && tr->n_patterns < PATTERNS_MAX)
        snprintf(tr->patterns[tr->n_patterns++], PATTERN_MAX_LEN, "%s", p);
}

static void remove_pattern(struct trace *tr, const char *p)
{
    for (int i = 0; i < tr->n_patterns; i++)
        if (strcmp(tr->patterns[i], p) == 0) {
            memmove(tr->patterns[i], tr->patterns[i + 1],
                    (size_t)(tr->n_patterns - i - 1) * PATTERN_MAX_LEN);
            tr->n_patterns--;
            return;
        }
}

int resolve_preload(struct trace *tr, const char *const *patterns, int n, int depth,
                    bool depth_asked)
{
    tr->depth = depth;
    tr->depth_asked = depth_asked;
    for (int i = 0; i < n; i++)
        add_pattern(tr, patterns[i]);
    tr->entry_pending = tr->n_patterns > 0;
    return tr->n_patterns;
}

/* ---- resolution ------------------------------------------------------------------ */

struct plan {
    struct hook_target *arm;
    size_t n_arm, cap_arm;
    uint64_t *disarm;
    size_t n_disarm;
    struct u64map wanted;    /* address -> function, the new hooked set */
    size_t matched;
    bool capped;
    bool exe_has_dwarf;
    const struct dw_index *exe;
    struct hooks_report report;
    struct hooks_stats stats;
    struct hooks_overhead overhead;
    size_t n_sampled;
    const char *sampled[16];
    int depth;
    bool depth_asked;
    struct trace *tr;        /* whose patterns exec'd images follow (runtime updates) */
    size_t pat_matched[PATTERNS_MAX], pat_armed[PATTERNS_MAX]; /* per pattern */
    size_t pat_ifunc[PATTERNS_MAX]; /* IFUNCs whose running variant a pattern armed */
    const struct dw_index *libs[64]; /* the libraries indexed, for the warnings */
    size_t n_libs;
    bool adopt;              /* a runtime update: calls in progress get their exits */
    struct hooks_adopt_report adopted;
};

static bool push_target(struct plan *p, const struct hook_target *t)
{
    if (p->n_arm == p->cap_arm) {
        size_t cap = p->cap_arm ? p->cap_arm * 2 : 256;
        struct hook_target *a = realloc(p->arm, cap * sizeof *a);
        if (!a)
            return false;
        p->arm = a;
        p->cap_arm = cap;
    }
    p->arm[p->n_arm++] = *t;
    return true;
}

static void match_module(const struct trace *tr, struct plan *p, const struct module *m,
                         const struct dw_index *ix, bool is_exe, int memfd)
{
    bool user_module = is_exe || !procmem_system_path(m->path);
    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        const char *hit = NULL; /* the first pattern that selects f: its public name */
        uint64_t hits = 0; /* patterns 0..63 that match it (the rest are re-tested) */
        for (int k = 0; k < tr->n_patterns; k++) {
            const char *pat = tr->patterns[k];
            if ((!user_module && !is_exact(pat)) ||
                !match_function(pat, f, tr->project_root))
                continue;
            if (!hit)
                hit = pat;
            p->pat_matched[k]++;
            if (k < 64)
                hits |= 1ull << k;
        }
        if (!hit)
            continue;
        p->matched++;
        uint64_t addr = f->entry + m->bias;
        const struct dw_function *fn = f;
        /* An IFUNC's resolver is never called by the program: its variant is hooked */
        if (f->ifunc_slot && !(fn = ifunc_impl(ix, f, m->bias, m->start, m->end, memfd, &addr)))
            continue;
        for (int k = 0; k < tr->n_patterns && f->ifunc_slot; k++)
            p->pat_ifunc[k] += k < 64 && (hits >> k) & 1;
        if (!u64map_get(&p->wanted, addr)) {
            if (p->wanted.live >= TRACE_MAX_HOOKS) {
                p->capped = true;
                continue;
            }
            u64map_put(&p->wanted, addr, (void *)fn);
            if (!u64map_get(&tr->hooked, addr))
                push_target(p, &(struct hook_target){addr, fn, m->start, m->end, HOOK_TRACE,
                                                     match_public_name(hit, f)});
        }
        for (int k = 0; k < tr->n_patterns; k++)
            if (k < 64 ? (hits >> k) & 1
                       : (user_module || is_exact(tr->patterns[k])) &&
                             match_function(tr->patterns[k], f, tr->project_root))
                p->pat_armed[k]++;
    }
}

/* The C++ unwinder's entry and the start of catch handlers: hooked whenever
 * anything is, so exceptions never meet a trampoline (see hooks.h). */
static void add_exception_hooks(struct plan *p, const struct module *m,
                                const struct dw_index *ix)
{
    for (size_t i = 0; i < ix->n_functions; i++) {
        const char *name = ix->functions[i].name;
        enum hook_role role = strcmp(name, "_Unwind_RaiseException") == 0 ? HOOK_THROW
                            : strcmp(name, "__cxa_begin_catch") == 0      ? HOOK_CATCH
                                                                          : HOOK_TRACE;
        if (role != HOOK_TRACE)
            push_target(p, &(struct hook_target){ix->functions[i].entry + m->bias,
                                                 &ix->functions[i], m->start, m->end, role, NULL});
    }
}

static void collect_disarm(uint64_t addr, void *value, void *arg)
{
    (void)value;
    struct plan *p = arg;
    if (!u64map_get(&p->wanted, addr))
        p->disarm[p->n_disarm++] = addr;
}

static int build_plan(struct trace *tr, pid_t pid, struct plan *p, struct strobe_error *e)
{
    struct module *mods = NULL;
    size_t n_mods = 0;
    if (procmem_modules(pid, &mods, &n_mods) != 0 || n_mods == 0) {
        free(mods);
        return err_set(e, ERR_PROCESS_EXITED, "cannot read the modules of process %d; it "
                       "has probably exited.", (int)pid);
    }
    char exe[PATH_MAX], link[64];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    int memfd = procmem_open(pid);
    bool any_exact = false;
    for (int k = 0; k < tr->n_patterns; k++)
        any_exact |= is_exact(tr->patterns[k]);
    for (size_t i = 0; i < n_mods; i++) {
        bool is_exe = strcmp(mods[i].path, exe) == 0;
        /* Indexing libc with its debug info costs ~150 ms: system libraries are read
         * only when a pattern can match there (an exact name), or for the unwinder. */
        const char *base = strrchr(mods[i].path, '/');
        bool unwinder = base && (strncmp(base + 1, "libgcc_s.", 9) == 0 ||
                                 strncmp(base + 1, "libstdc++.", 10) == 0);
        if (!is_exe && procmem_system_path(mods[i].path) && !any_exact && !unwinder)
            continue;
        const struct dw_index *ix = dw_index_get(mods[i].path, NULL);
        if (!ix)
            continue;
        if (is_exe) {
            p->exe = ix;
            p->exe_has_dwarf = ix->has_dwarf;
        } else if (p->n_libs < sizeof p->libs / sizeof *p->libs) {
            p->libs[p->n_libs++] = ix;
        }
        match_module(tr, p, &mods[i], ix, is_exe, memfd);
        if (tr->n_patterns > 0)
            add_exception_hooks(p, &mods[i], ix);
    }
    free(mods);
    if (memfd >= 0)
        close(memfd);
    p->disarm = calloc(tr->hooked.live + 1, sizeof *p->disarm);
    if (!p->disarm)
        return err_set(e, ERR_INTERNAL, "out of memory planning hooks");
    u64map_each(&tr->hooked, collect_disarm, p);
    return 0;
}

static void plan_free(struct plan *p)
{
    free(p->arm);
    free(p->disarm);
    u64map_free(&p->wanted);
}

/* The patterns as they are now, for the tracer thread: a trace of its own with
 * nothing hooked (an exec'd image is resolved from scratch). NULL on ENOMEM. */
static struct trace *snapshot(struct trace *tr)
{
    struct trace *snap = calloc(1, sizeof *snap);
    if (!snap)
        return NULL;
    pthread_mutex_lock(&tr->patterns_lock);
    memcpy(snap->patterns, tr->patterns, sizeof snap->patterns);
    snap->n_patterns = tr->n_patterns;
    snap->depth = tr->depth;
    snap->depth_asked = tr->depth_asked;
    memcpy(snap->project_root, tr->project_root, sizeof snap->project_root);
    pthread_mutex_unlock(&tr->patterns_lock);
    return snap;
}

/* Brings the image of pid (stopped) to the patterns of snap: arms what they match,
 * disarms what they no longer do. */
static void sync_image(struct trace *snap, pid_t pid, struct hooks *h)
{
    struct plan p = {.depth = snap->depth, .depth_asked = snap->depth_asked};
    struct strobe_error e = {0};
    if (build_plan(snap, pid, &p, &e) != 0) {
        log_warn("pid %d (exec'd): patterns not applied: %s", (int)pid, e.msg);
        plan_free(&p);
        return;
    }
    size_t n = hooks_traced(h, NULL, 0);
    uint64_t *traced = calloc(n + 1, sizeof *traced);
    size_t n_off = 0;
    if (traced) {
        hooks_traced(h, traced, n);
        for (size_t i = 0; i < n; i++)
            if (!u64map_get(&p.wanted, traced[i]))
                traced[n_off++] = traced[i];
        hooks_disarm(h, traced, n_off);
    }
    hooks_set_depth(h, p.depth, p.depth_asked);
    hooks_arm(h, pid, p.arm, p.n_arm, &p.report);
    log_info("pid %d (exec'd): %zu functions matched, %zu armed, %zu disarmed", (int)pid,
             p.matched, p.report.armed, n_off);
    free(traced);
    plan_free(&p);
}

static void sync_image_cb(pid_t pid, struct hooks *h, void *arg)
{
    sync_image(arg, pid, h);
}

struct adopt_ctx {
    struct hooks *h;
    uint64_t *addrs;
    size_t n;
    struct hooks_adopt_report *rep;
};

static void adopt_thread(pid_t tid, pid_t tgid, bool stopped, struct hooks *h, void *arg)
{
    (void)tgid;
    struct adopt_ctx *c = arg;
    if (stopped && h == c->h)
        hooks_adopt_frames(h, tid, c->addrs, c->n, c->rep);
}

/* Calls of the newly armed functions already on the threads' stacks get their
 * returns reported (hooks_adopt_frames). */
static void adopt_in_progress(struct tracer *t, struct plan *p)
{
    struct adopt_ctx c = {tracer_hooks(t), calloc(p->n_arm, sizeof *c.addrs), p->n_arm,
                          &p->adopted};
    if (!c.addrs)
        return;
    for (size_t i = 0; i < p->n_arm; i++)
        c.addrs[i] = p->arm[i].addr;
    tracer_each_thread(t, adopt_thread, &c);
    free(c.addrs);
}

/* On the tracer thread, target stopped. */
static void apply_plan(struct tracer *t, void *arg)
{
    struct plan *p = arg;
    struct hooks *h = tracer_hooks(t);
    if (!h)
        return;
    if (p->n_arm > 0)
        tracer_pin(t);
    hooks_set_depth(h, p->depth, p->depth_asked);
    hooks_disarm(h, p->disarm, p->n_disarm);
    hooks_arm(h, tracer_pid(t), p->arm, p->n_arm, &p->report);
    if (p->adopt && p->report.armed)
        adopt_in_progress(t, p);
    hooks_stats(h, &p->stats);
    hooks_overhead(h, &p->overhead);
    p->n_sampled = hooks_sampled_names(h, p->sampled, 16);
    /* Child processes that exec'd other programs follow the same patterns. */
    struct trace *snap = p->tr ? snapshot(p->tr) : NULL;
    if (snap) {
        tracer_each_image(t, sync_image_cb, snap);
        u64map_free(&snap->hooked);
        free(snap);
    }
}

static void copy_hooked(uint64_t addr, void *value, void *arg)
{
    u64map_put(arg, addr, value);
}

/* ---- reporting ------------------------------------------------------------------- */

static void warn(struct trace_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct trace_result *res, const char *fmt, ...)
{
    if (res->n_warnings >= 8)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->warnings[res->n_warnings++], sizeof res->warnings[0], fmt, ap);
    va_end(ap);
}

/* tr->last: what each pattern did in the plan p just applied. */
static void record_results(struct trace *tr, const struct plan *p)
{
    for (int k = 0; k < tr->n_patterns; k++) {
        struct pattern_result *r = &tr->last[k];
        r->matched = p->pat_matched[k];
        r->armed = p->pat_armed[k];
        char warning[sizeof r->warning] = ""; /* written apart from tr, read from */
        struct pattern_scope scope = {p->exe, p->exe_has_dwarf, p->libs, p->n_libs};
        if (r->matched == 0)
            pattern_why_none(&scope, tr->patterns[k], warning, sizeof warning);
        else if (!p->pat_ifunc[k])
            pattern_why_ifunc(&scope, tr->patterns[k], warning, sizeof warning);
        memcpy(r->warning, warning, sizeof warning);
    }
    tr->resolved = true;
}

static void explain_no_match(const struct trace *tr, const struct plan *p,
                             struct trace_result *res)
{
    size_t len = (size_t)snprintf(res->status, sizeof res->status, "No function matches "
                                  "the active patterns.%s", p->exe_has_dwarf ? "" :
                                  " The program has no DWARF debug info, so only exported "
                                  "symbols are known: rebuild with -g.");
    for (int k = 0; k < tr->n_patterns && len < sizeof res->status; k++)
        len += (size_t)snprintf(res->status + len, sizeof res->status - len, " %s",
                                tr->last[k].warning);
}

/* The measured cost of the traced calls so far (hooks_overhead), as a sentence
 * that starts with a space; a thread-local buffer the caller formats at once. */
static const char *overhead_text(const struct hooks_overhead *o)
{
    static __thread char text[160];
    int64_t all = o->busy_ns + o->run_ns;
    if (all <= 0)
        return " Overhead: none measured yet (no traced call so far).";
    snprintf(text, sizeof text, " Overhead so far: the calling threads spent %.1f%% of "
             "their time stopped at traced calls.", (double)(o->busy_ns * 1000 / all) / 10.0);
    return text;
}

/* " (N through the fast path)" when trace.mode "fast" recorded any; a thread-local
 * buffer the caller formats at once. */
static const char *fast_text(const struct hooks_stats *s)
{
    static __thread char text[64];
    if (!s->fast)
        return "";
    snprintf(text, sizeof text, " (%zu through the fast path)", s->fast);
    return text;
}

static void fill_result(const struct trace *tr, const struct plan *p, struct trace_result *res)
{
    res->n_patterns = tr->n_patterns;
    memcpy(res->patterns, tr->patterns, (size_t)tr->n_patterns * PATTERN_MAX_LEN);
    res->depth = tr->depth;
    memcpy(res->per_pattern, tr->last, (size_t)tr->n_patterns * sizeof *tr->last);
    for (int k = 0; k < tr->n_patterns; k++)
        if (tr->last[k].warning[0])
            warn(res, "%s", tr->last[k].warning);
    res->matched = p->matched;
    res->hooked = p->stats.armed;
    res->in_progress = p->adopted.adopted;
    res->in_progress_lost = p->adopted.lost;
    if (p->adopted.lost)
        warn(res, "%zu in-progress call(s) could not be followed (no frame information "
             "locates their return address): their returns will not be reported",
             p->adopted.lost);
    res->n_sampled = p->n_sampled;
    memcpy(res->sampled, p->sampled, p->n_sampled * sizeof *p->sampled);
    if (p->capped)
        warn(res, "more than %d functions matched; only the first %d are hooked: narrow the "
             "patterns", TRACE_MAX_HOOKS, TRACE_MAX_HOOKS);
    if (p->report.failed)
        warn(res, "%zu function(s) could not be hooked, e.g.: %s", p->report.failed,
             p->report.first_failure);
    if (p->report.single_step || p->stats.single_step_hits)
        warn(res, "%zu newly hooked function(s) start with an instruction that cannot run "
             "out of line and take a slower single-step (%llu such hits so far)",
             p->report.single_step, (unsigned long long)p->stats.single_step_hits);
    if (p->stats.fast_fallback)
        warn(res, "%zu function(s) could not take the fast path (trace.mode \"fast\") and "
             "are traced with int3 breakpoints, which cost 25-60 us per call instead of "
             "~0.05-0.8 us, e.g. %s", p->stats.fast_fallback, p->stats.fast_why);
    if (p->n_sampled)
        warn(res, "%zu hot function(s) are sampled (e.g. %s): their events are a sample; "
             "narrow the patterns for full capture", p->n_sampled, p->sampled[0]);
    if (tr->n_patterns == 0)
        snprintf(res->status, sizeof res->status, "No active patterns: nothing is traced. "
                 "stdout/stderr are still captured.");
    else if (p->matched == 0)
        explain_no_match(tr, p, res);
    else
        snprintf(res->status, sizeof res->status, "%zu function(s) hooked%s.%s%s",
                 res->hooked, fast_text(&p->stats), overhead_text(&p->overhead),
                 p->n_sampled ? " Hot functions are being sampled (every call is still "
                                "counted)." : "");
}

/* Waits (5 s at most: the entry breakpoint may have failed to go in) until the
 * preloaded patterns are armed or the program died before its entry point. */
static void wait_for_entry(struct trace *tr)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&tr->entry_lock);
    while (tr->entry_pending &&
           pthread_cond_timedwait(&tr->entry_done, &tr->entry_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&tr->entry_lock);
}

static int update_locked(struct trace *tr, struct tracer *t, struct trace_result *res,
                         struct strobe_error *e)
{
    if (atomic_exchange(&tr->image_replaced, false))
        u64map_free(&tr->hooked); /* nothing of the old image is armed any more */
    struct plan p = {.depth = tr->depth, .depth_asked = tr->depth_asked, .tr = tr,
                     .adopt = res != NULL};
    int rc = build_plan(tr, tracer_pid(t), &p, e);
    if (rc == 0 && !p.exe_has_dwarf)
        for (int k = 0; k < tr->n_patterns; k++)
            if (tr->patterns[k][0] == '@') {
                rc = err_set(e, ERR_NO_DEBUG_SYMBOLS,
                             "Binary has no DWARF debug info, so '%s' cannot be resolved "
                             "(it needs the source file of each function).",
                             tr->patterns[k]);
                break;
            }
    if (rc == 0)
        rc = tracer_call(t, apply_plan, &p, e);
    if (rc == 0) {
        u64map_free(&tr->hooked);
        u64map_each(&p.wanted, copy_hooked, &tr->hooked);
        record_results(tr, &p);
        if (res)
            fill_result(tr, &p, res);
        log_info("trace: %zu matched, %zu armed now, %zu new, %zu removed", p.matched,
                 p.stats.armed, p.report.armed, p.n_disarm);
    }
    plan_free(&p);
    return rc;
}

int resolve_update(struct trace *tr, struct tracer *t, const char *const *add, int n_add,
                   const char *const *remove, int n_remove, int depth,
                   struct trace_result *res, struct strobe_error *e)
{
    memset(res, 0, sizeof *res);
    wait_for_entry(tr);
    pthread_mutex_lock(&tr->update_lock);
    char saved[PATTERNS_MAX][PATTERN_MAX_LEN];
    int n_saved = tr->n_patterns, saved_depth = tr->depth;
    bool saved_asked = tr->depth_asked;
    memcpy(saved, tr->patterns, sizeof saved);
    pthread_mutex_lock(&tr->patterns_lock);
    for (int i = 0; i < n_remove; i++)
        remove_pattern(tr, remove[i]);
    for (int i = 0; i < n_add; i++)
        add_pattern(tr, add[i]);
    if (depth > 0) {
        tr->depth = depth;
        tr->depth_asked = true;
    }
    pthread_mutex_unlock(&tr->patterns_lock);
    int rc = update_locked(tr, t, res, e);
    if (rc != 0) { /* a failed update changes nothing */
        pthread_mutex_lock(&tr->patterns_lock);
        memcpy(tr->patterns, saved, sizeof saved);
        tr->n_patterns = n_saved;
        tr->depth = saved_depth;
        tr->depth_asked = saved_asked;
        pthread_mutex_unlock(&tr->patterns_lock);
    }
    pthread_mutex_unlock(&tr->update_lock);
    return rc;
}

void resolve_describe(struct trace *tr, struct trace_result *res)
{
    memset(res, 0, sizeof *res);
    wait_for_entry(tr);
    pthread_mutex_lock(&tr->update_lock);
    res->n_patterns = tr->n_patterns;
    memcpy(res->patterns, tr->patterns, (size_t)tr->n_patterns * PATTERN_MAX_LEN);
    memcpy(res->per_pattern, tr->last, (size_t)tr->n_patterns * sizeof *tr->last);
    for (int k = 0; k < tr->n_patterns && !tr->resolved; k++)
        snprintf(res->per_pattern[k].warning, sizeof res->per_pattern[k].warning,
                 "'%.120s' is not armed: the program has not reached its entry point (or "
                 "ended before it).",
                 tr->patterns[k]);
    for (int k = 0; k < tr->n_patterns; k++)
        if (res->per_pattern[k].warning[0])
            warn(res, "%s", res->per_pattern[k].warning);
    res->depth = tr->depth;
    res->hooked = 0;
    pthread_mutex_unlock(&tr->update_lock);
    snprintf(res->status, sizeof res->status, "The process has exited: nothing is hooked.");
}

void resolve_entry_passed(struct trace *tr)
{
    pthread_mutex_lock(&tr->entry_lock);
    tr->entry_pending = false;
    pthread_cond_broadcast(&tr->entry_done);
    pthread_mutex_unlock(&tr->entry_lock);
}

void resolve_on_entry(void *arg, struct tracer *t)
{
    struct trace *tr = arg;
    pthread_mutex_lock(&tr->entry_lock);
    bool pending = tr->entry_pending;
    pthread_mutex_unlock(&tr->entry_lock);
    if (!pending) {
        /* Re-exec of the main process. A client update holding the lock would wait
         * for this thread: it resolves against the new image itself, so skip. */
        pthread_mutex_lock(&tr->patterns_lock);
        int n = tr->n_patterns;
        pthread_mutex_unlock(&tr->patterns_lock);
        if (n == 0 || pthread_mutex_trylock(&tr->update_lock) != 0)
            return;
    } else {
        pthread_mutex_lock(&tr->update_lock);
    }
    struct strobe_error e = {0};
    if (update_locked(tr, t, NULL, &e) != 0)
        log_warn("arming pending patterns at the entry point: %s", e.msg);
    pthread_mutex_unlock(&tr->update_lock);
    resolve_entry_passed(tr);
}

void resolve_main_exec(struct trace *tr)
{
    atomic_store(&tr->image_replaced, true);
}

void resolve_on_image(struct trace *tr, pid_t pid, struct hooks *h)
{
    struct trace *snap = snapshot(tr);
    if (!snap)
        return;
    if (snap->n_patterns > 0)
        sync_image(snap, pid, h);
    u64map_free(&snap->hooked);
    free(snap);
}
