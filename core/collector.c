/*
 * collector.c - the registry of collectors. See collector.h.
 *
 * Registration happens once, in strobe.c, before the daemon serves: the table is
 * written before any request thread exists and only read afterwards.
 */
#include "core/collector.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define MAX_COLLECTORS 8

static const struct collector_methods *registered[MAX_COLLECTORS];
static int n_registered;

static int stop_rank(const struct collector_pause *p)
{
    return p->reason == PAUSE_ALL_STOP ? 0 : p->reason == PAUSE_REQUEST ? 1 : 2;
}

bool collector_pause_better(const struct collector_pause *p, const struct collector_pause *best)
{
    if (!best->seq)
        return true;
    if (stop_rank(p) != stop_rank(best))
        return stop_rank(p) > stop_rank(best);
    if (p->reason == PAUSE_REQUEST)
        return p->tid < best->tid;
    return p->seq > best->seq;
}

int collector_register(const struct collector_methods *m)
{
    if (!m || !m->name || !m->language || !m->set_patterns || !m->describe || !m->kill ||
        !m->finished || !m->join || n_registered == MAX_COLLECTORS)
        return -1;
    bool runtime = m->adopt_rule && m->adopt;
    if (!runtime && (!m->probe || !m->launch))
        return -1;
    registered[n_registered++] = m;
    return 0;
}

/* The runtime collectors, in registration order: rule i is the i-th. */
static const struct collector_methods *runtime_at(int i)
{
    for (int k = 0; k < n_registered; k++)
        if (registered[k]->adopt_rule && i-- == 0)
            return registered[k];
    return NULL;
}

int collector_adopt_rules(const struct collector_adopt_rule **out, int max)
{
    int n = 0;
    for (const struct collector_methods *m; n < max && (m = runtime_at(n)); n++)
        out[n] = m->adopt_rule;
    return n;
}

const struct collector_methods *collector_of_rule(int i)
{
    return i >= 0 ? runtime_at(i) : NULL;
}

const struct collector_methods *collector_breakpoint_owner(const struct collector_breakpoint *bp)
{
    for (int i = 0; i < n_registered; i++) {
        const struct collector_methods *m = registered[i];
        if (!m->adopt_rule || !m->source_suffix)
            continue;
        size_t n = bp->file ? strlen(bp->file) : 0, k = strlen(m->source_suffix);
        if (bp->file && n > k && strcmp(bp->file + n - k, m->source_suffix) == 0)
            return m;
        if (!bp->file && bp->function && strchr(bp->function, '.') &&
            !strstr(bp->function, "::"))
            return m;
    }
    return NULL;
}

void collectors_init(const char *cache_dir)
{
    for (int i = 0; i < n_registered; i++)
        if (registered[i]->init)
            registered[i]->init(cache_dir);
}

void collectors_shutdown(void)
{
    for (int i = 0; i < n_registered; i++)
        if (registered[i]->shutdown)
            registered[i]->shutdown();
}

const struct collector_methods *collector_for(const char *path, struct collector_probe *out)
{
    for (int i = 0; i < n_registered; i++) {
        *out = (struct collector_probe){0};
        if (registered[i]->probe && registered[i]->probe(path, out)) {
            for (int k = 0; k < n_registered; k++)
                if (registered[k]->notice)
                    registered[k]->notice(path, out);
            return registered[i];
        }
    }
    return NULL;
}

int collector_stacks_of(const pid_t *pids, int n_pids, const struct collector_stacks_request *req,
                        struct collector_stacks *out, struct strobe_error *e)
{
    for (int i = 0; i < n_registered; i++)
        if (registered[i]->stacks_of)
            return registered[i]->stacks_of(pids, n_pids, req, out, e);
    return err_set(e, ERR_NOT_IMPLEMENTED, "no collector can read the stacks of a process "
                   "it does not trace.");
}

int collector_unsupported(const struct collector_methods *m, const char *what,
                          struct strobe_error *e)
{
    return err_set(e, ERR_NOT_IMPLEMENTED, "%c%s is not supported for %s programs (the %s "
                   "collector does not implement it yet).", toupper((unsigned char)what[0]),
                   what + 1, m->language, m->name);
}

int collector_resume_many(const struct collector_methods *c, struct collector_target *t,
                          const pid_t *tids, int n, struct strobe_error *e)
{
    if (c->resume_many)
        return c->resume_many(t, tids, n, e);
    for (int i = 0; i < n; i++) {
        struct strobe_error one = {0};
        if (collector_resume(c, t, tids[i], RESUME_CONTINUE, &one) != 0 &&
            (one.code == ERR_PROCESS_EXITED || one.code == ERR_NOT_IMPLEMENTED)) {
            if (e)
                *e = one;
            return -1;
        }
    }
    return 0;
}

void collector_frames_free(struct collector_frame *frames, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        free(frames[k].function);
        free(frames[k].function_raw);
        free(frames[k].file);
        free(frames[k].arguments);
    }
    free(frames);
}

void collector_thread_free(struct collector_thread *th)
{
    collector_frames_free(th->frames, th->n_frames);
    free(th->locals);
    free(th->wait_variable);
    th->frames = NULL;
    th->n_frames = 0;
    th->locals = NULL;
    th->wait_variable = NULL;
}

void collector_stacks_free(struct collector_stacks *s)
{
    for (size_t i = 0; i < s->n_threads; i++)
        collector_thread_free(&s->threads[i]);
    free(s->threads);
    free(s->diagnosis);
    *s = (struct collector_stacks){0};
}

/* The thread th waits for: the mutex's owner or the joined thread, when it is one
 * of the snapshot's threads; -1 otherwise. */
static long waits_for(const struct collector_stacks *s, const struct collector_thread *th)
{
    if ((th->wait != WAIT_MUTEX && th->wait != WAIT_JOIN) || th->wait_owner <= 0)
        return -1;
    for (size_t i = 0; i < s->n_threads; i++)
        if (s->threads[i].tid == th->wait_owner)
            return (long)i;
    return -1;
}

/* The mutex th waits for, after its label: " (g_table.lock, 0x…)" or " (0x…)". */
static void mutex_phrase(struct strbuf *sb, const struct collector_thread *th)
{
    if (th->wait_variable)
        sb_printf(sb, " (%s, 0x%llx)", th->wait_variable, (unsigned long long)th->wait_address);
    else
        sb_printf(sb, " (0x%llx)", (unsigned long long)th->wait_address);
}

/* What th waits for, before the thread that holds it: "M2 (0x…)" for a mutex. */
static void wait_phrase(struct strbuf *sb, const struct collector_thread *th, int label)
{
    if (th->wait == WAIT_MUTEX) {
        sb_printf(sb, "M%d", label);
        mutex_phrase(sb, th);
    } else {
        sb_puts(sb, "the end (pthread_join) of");
    }
}

/* Threads that hold a mutex others wait for and wait for nothing themselves: running
 * (a long or endless loop under the lock, the hang a wait cycle does not explain) or
 * blocked in a system call while they hold it. One snapshot cannot tell a loop from
 * progress, so the sentence says how to tell. */
static void holders_at_large(const struct collector_stacks *s, struct strbuf *sb)
{
    for (size_t w = 0; w < s->n_threads; w++) {
        const struct collector_thread *first = &s->threads[w];
        long o = first->wait == WAIT_MUTEX ? waits_for(s, first) : -1;
        if (o < 0 || s->threads[o].wait != WAIT_NONE)
            continue;
        /* One sentence per mutex, from its first waiter. */
        size_t waiters = 0;
        bool seen = false;
        for (size_t i = 0; i < s->n_threads; i++)
            if (s->threads[i].wait == WAIT_MUTEX &&
                s->threads[i].wait_address == first->wait_address &&
                s->threads[i].wait_owner == first->wait_owner) {
                seen |= i < w;
                waiters++;
            }
        if (seen)
            continue;
        const struct collector_thread *own = &s->threads[o];
        bool running = strcmp(own->state, "running") == 0;
        bool in_call = !running && own->syscall_nr >= 0; /* not "paused" by the debugger */
        sb_printf(sb, "%stid %d (%s) holds the mutex", sb->len ? "; " : "", (int)own->tid,
                  own->name);
        mutex_phrase(sb, first);
        sb_printf(sb, " that tid %d (%s)", (int)first->tid, first->name);
        if (waiters > 1)
            sb_printf(sb, " and %zu other thread(s)", waiters - 1);
        sb_puts(sb, waiters > 1 ? " wait for, and " : " waits for, and ");
        sb_printf(sb, "is %s", own->state[0] ? own->state : "stopped");
        if (in_call)
            sb_printf(sb, " in %s", own->syscall_name ? own->syscall_name : "a system call");
        const struct collector_frame *f = own->own_frame >= 0 ? &own->frames[own->own_frame]
                                        : own->n_frames ? &own->frames[0] : NULL;
        if (f && f->function) {
            const char *base = f->file ? strrchr(f->file, '/') : NULL;
            sb_printf(sb, " in %s", f->function);
            if (f->file)
                sb_printf(sb, " (%s:%d)", base ? base + 1 : f->file, f->line);
        }
        if (running)
            sb_puts(sb, ": a long or endless loop under the lock? The same function in a "
                        "second stacks call means it is stuck there");
        else if (in_call)
            sb_puts(sb, ": it blocks while it holds the lock");
    }
}

void collector_stacks_diagnose(struct collector_stacks *s)
{
    free(s->diagnosis); /* a second call describes the same waits again */
    s->diagnosis = NULL;
    size_t n = s->n_threads;
    if (n == 0)
        return;
    long *cycle = malloc(n * sizeof *cycle);
    if (!cycle)
        return;
    struct strbuf sb = {0};
    for (size_t start = 0; start < n; start++) {
        /* Follow the wait-for edges from start; a cycle is reported once, from its
         * thread with the lowest index. */
        size_t len = 0;
        long cur = (long)start;
        bool closed = false;
        while (cur >= 0 && len < n) {
            if (len > 0 && cur == (long)start) {
                closed = true;
                break;
            }
            if ((size_t)cur < start)
                break;
            cycle[len++] = cur;
            cur = waits_for(s, &s->threads[cur]);
        }
        if (!closed)
            continue;
        const struct collector_thread *first = &s->threads[cycle[0]];
        const struct collector_thread *last = &s->threads[cycle[len - 1]];
        sb_printf(&sb, "%sdeadlock: tid %d (%s)", sb.len ? "; " : "", (int)first->tid,
                  first->name);
        if (last->wait == WAIT_MUTEX) {
            sb_puts(&sb, " holds M1");
            mutex_phrase(&sb, last);
            sb_puts(&sb, " and");
        }
        for (size_t i = 0; i < len; i++) {
            const struct collector_thread *th = &s->threads[cycle[i]];
            const struct collector_thread *next = &s->threads[cycle[(i + 1) % len]];
            sb_puts(&sb, i == 0 ? " waits for " : ", which waits for ");
            if (i + 1 == len) {
                if (th->wait == WAIT_MUTEX)
                    sb_puts(&sb, "M1");
                else
                    sb_printf(&sb, "the end (pthread_join) of tid %d", (int)next->tid);
                break;
            }
            wait_phrase(&sb, th, (int)i + 2);
            sb_printf(&sb, "%s tid %d (%s)", th->wait == WAIT_MUTEX ? " held by" : "",
                      (int)next->tid, next->name);
        }
    }
    free(cycle);
    holders_at_large(s, &sb);
    s->diagnosis = sb.len ? sb_take(&sb) : NULL;
    sb_free(&sb);
}

static const char *const hint_names[] = {
    [MEMH_I8] = "i8",   [MEMH_U8] = "u8",   [MEMH_I16] = "i16", [MEMH_U16] = "u16",
    [MEMH_I32] = "i32", [MEMH_U32] = "u32", [MEMH_I64] = "i64", [MEMH_U64] = "u64",
    [MEMH_F32] = "f32", [MEMH_F64] = "f64", [MEMH_POINTER] = "pointer",
    [MEMH_BYTES] = "bytes",
};

int memory_hint_parse(const char *name)
{
    for (size_t i = MEMH_I8; i < sizeof hint_names / sizeof *hint_names; i++)
        if (strcmp(hint_names[i], name) == 0)
            return (int)i;
    return -1;
}

const char *memory_hint_name(enum memory_hint h)
{
    return h > MEMH_NONE && (size_t)h < sizeof hint_names / sizeof *hint_names
               ? hint_names[h] : NULL;
}

void collector_mem_results_free(struct collector_mem_result *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].target);
        free(r[i].type);
        free(r[i].value);
        free(r[i].old_value);
        free(r[i].note);
        free(r[i].bytes);
        free(r[i].file);
        free(r[i].error_message);
        r[i] = (struct collector_mem_result){0};
    }
}

void trace_watch_default_label(const struct trace_watch_spec *w, char *out)
{
    if (w->variable)
        snprintf(out, MEMORY_EXPR_MAX + 1, "%s", w->variable);
    else
        snprintf(out, MEMORY_EXPR_MAX + 1, "0x%llx", (unsigned long long)w->address);
}

int trace_watch_change_check(const char *const *have, int n_have, const char *const *add,
                             int n_add, const char *const *remove, int n_remove,
                             const char *set, bool keep[], struct strobe_error *e)
{
    for (int i = 0; i < n_add; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(add[j], add[i]) == 0)
                return err_set(e, ERR_VALIDATION, "Two watches are labelled '%s'; give one a "
                               "different label.", add[i]);
    for (int r = 0; r < n_remove; r++) {
        bool found = false;
        for (int i = 0; i < n_have && !found; i++)
            found = strcmp(have[i], remove[r]) == 0;
        if (!found) {
            struct strbuf names = {0};
            for (int i = 0; i < n_have; i++)
                sb_printf(&names, "%s'%s'", i ? ", " : "", have[i]);
            err_set(e, ERR_VALIDATION, "No %s watch is labelled '%.200s'; the %s watches are: "
                    "%.250s.", set, remove[r], set, n_have ? names.buf : "none");
            sb_free(&names);
            return -1;
        }
    }
    int kept = 0;
    for (int i = 0; i < n_have; i++) {
        keep[i] = true;
        for (int r = 0; r < n_remove && keep[i]; r++)
            keep[i] = strcmp(have[i], remove[r]) != 0;
        if (!keep[i])
            continue;
        kept++;
        for (int k = 0; k < n_add; k++)
            if (strcmp(have[i], add[k]) == 0)
                return err_set(e, ERR_VALIDATION, "A watch labelled '%s' is %s already; "
                               "remove it first or give this one another label.", add[k], set);
    }
    if (kept + n_add > TRACE_WATCHES_MAX)
        return err_set(e, ERR_LIMIT_EXCEEDED, "%d watches would be %s; a session has at most "
                       "%d. Remove some first.", kept + n_add, set, TRACE_WATCHES_MAX);
    return 0;
}

static char *dup_opt(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    *oom |= s && !d;
    return d;
}

int collector_breakpoint_copy(struct collector_breakpoint *dst,
                              const struct collector_breakpoint *src)
{
    bool oom = false;
    *dst = *src;
    dst->function = dup_opt(src->function, &oom);
    dst->file = dup_opt(src->file, &oom);
    dst->condition = dup_opt(src->condition, &oom);
    dst->message = dup_opt(src->message, &oom);
    if (!oom)
        return 0;
    collector_breakpoint_release(dst);
    return -1;
}

void collector_breakpoint_release(struct collector_breakpoint *b)
{
    free((char *)b->function);
    free((char *)b->file);
    free((char *)b->condition);
    free((char *)b->message);
    b->function = b->file = b->condition = b->message = NULL;
}

void collector_bp_info_init(struct collector_bp_info *info, const struct collector_breakpoint *b)
{
    *info = (struct collector_bp_info){.id = b->id, .logpoint = b->message != NULL,
                                       .line = b->line, .line_asked = b->line,
                                       .hit_count = b->hit_count, .one_shot = b->one_shot,
                                       .all_stop = b->all_stop, .hit_limit = b->hit_limit};
    snprintf(info->function, sizeof info->function, "%s", b->function ? b->function : "");
    snprintf(info->file, sizeof info->file, "%s", b->file ? b->file : "");
    snprintf(info->condition, sizeof info->condition, "%s", b->condition ? b->condition : "");
    snprintf(info->message, sizeof info->message, "%s", b->message ? b->message : "");
}
