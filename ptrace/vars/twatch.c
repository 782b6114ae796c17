/*
 * twatch.c - trace watches. See twatch.h.
 */
#include "ptrace/vars/twatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptrace/proc/match.h"
#include "ptrace/proc/procmem.h"
#include "dwarf/value.h"
#include "ptrace/vars/varres.h"
#include "base/log.h"

#define VALUE_JSON_MAX 1024      /* a watch's value in an event; longer: a note */

struct twatch {
    struct trace_watch_info info;
    char broken[320];            /* "" or why it has no address now (after an exec) */
    enum memory_hint hint;       /* address watches */
    bool rewalk;                 /* through a pointer: resolved at each read */
    struct varres v;             /* variable watches: as resolved when added */
};

struct twatch_set {
    pthread_mutex_t lock;
    unsigned gen;                /* bumped by every change; never 0 */
    _Atomic int active;          /* n, read without the lock: events skip an empty set */
    int n;
    struct twatch w[TRACE_WATCHES_MAX];
    char project_root[4096];
    struct strbuf scratch;       /* tracer thread: one value */
    /* Tracer thread: the modules of the process last read through a pointer chain,
     * kept until the set changes or another process is read (varres_process). */
    struct varres_process proc;
    bool proc_open;
    unsigned proc_gen;
    /* Launch watches (twatch_stage), under stage_lock. */
    pthread_mutex_t stage_lock;
    pthread_cond_t staged_done;
    struct staged {
        bool has_label;
        enum memory_hint hint;
        struct trace_watch_info info;
    } *staged;
    int n_staged;
    bool staging;                /* staged and not applied yet */
    char warning[512];
};

struct twatch_set *twatch_set_new(const char *project_root)
{
    struct twatch_set *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    pthread_mutex_init(&ws->lock, NULL);
    pthread_mutex_init(&ws->stage_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ws->staged_done, &ca);
    pthread_condattr_destroy(&ca);
    ws->gen = 1;
    snprintf(ws->project_root, sizeof ws->project_root, "%s", project_root ? project_root : "");
    return ws;
}

void twatch_set_free(struct twatch_set *ws)
{
    if (!ws)
        return;
    pthread_mutex_destroy(&ws->lock);
    pthread_mutex_destroy(&ws->stage_lock);
    pthread_cond_destroy(&ws->staged_done);
    free(ws->staged);
    if (ws->proc_open)
        varres_process_close(&ws->proc);
    sb_free(&ws->scratch);
    free(ws);
}

bool twatch_applies(const char *const *on, int n_on, const struct dw_function *fn,
                    const char *project_root)
{
    if (n_on == 0)
        return true;
    for (int i = 0; i < n_on; i++)
        if (match_function(on[i], fn, project_root))
            return true;
    return false;
}

/* Whether expr reads through a pointer: its address may change between reads. */
static bool through_pointer(const char *expr)
{
    return strstr(expr, "->") || strchr(expr, '*') || strchr(expr, '[');
}

static void list_locked(const struct twatch_set *ws, struct trace_watch_result *out)
{
    snprintf(out->warning, sizeof out->warning, "%s", ws->warning);
    out->n = ws->n;
    for (int i = 0; i < ws->n; i++)
        out->watches[i] = ws->w[i].info;
}

static int update_now(struct twatch_set *ws, pid_t pid, const struct trace_watch_spec *add,
                      int n_add, const char *const *remove, int n_remove,
                      struct trace_watch_result *out, struct strobe_error *e);

static void list_now(struct twatch_set *ws, struct trace_watch_result *out)
{
    pthread_mutex_lock(&ws->lock);
    list_locked(ws, out);
    pthread_mutex_unlock(&ws->lock);
}

/* Waits (5 s at most) until the launch watches are added. */
static void wait_staged(struct twatch_set *ws)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&ws->stage_lock);
    while (ws->staging &&
           pthread_cond_timedwait(&ws->staged_done, &ws->stage_lock, &until) == 0)
        ;
    if (ws->staging) { /* the entry point never came: do not wait again */
        ws->staging = false;
        snprintf(ws->warning, sizeof ws->warning, "Pending watches not added: the "
                 "program did not reach its entry point within 5 s.");
    }
    pthread_mutex_unlock(&ws->stage_lock);
}

void twatch_list(struct twatch_set *ws, struct trace_watch_result *out)
{
    wait_staged(ws);
    list_now(ws, out);
}

int twatch_stage(struct twatch_set *ws, const struct trace_watch_spec *w, int n)
{
    if (n <= 0)
        return 0;
    struct staged *st = calloc((size_t)n, sizeof *st);
    if (!st)
        return -1;
    for (int i = 0; i < n; i++) {
        st[i].has_label = w[i].label != NULL;
        st[i].hint = w[i].hint;
        struct trace_watch_info *in = &st[i].info;
        if (w[i].label)
            snprintf(in->label, sizeof in->label, "%s", w[i].label);
        if (w[i].variable)
            snprintf(in->variable, sizeof in->variable, "%s", w[i].variable);
        in->address = w[i].address;
        in->n_on = w[i].n_on < TRACE_WATCH_ON_MAX ? w[i].n_on : TRACE_WATCH_ON_MAX;
        for (int k = 0; k < in->n_on; k++)
            snprintf(in->on[k], sizeof in->on[k], "%s", w[i].on[k]);
    }
    pthread_mutex_lock(&ws->stage_lock);
    free(ws->staged);
    ws->staged = st;
    ws->n_staged = n;
    ws->staging = true;
    pthread_mutex_unlock(&ws->stage_lock);
    return 0;
}

void twatch_apply_staged(struct twatch_set *ws, pid_t pid)
{
    pthread_mutex_lock(&ws->stage_lock);
    bool staging = ws->staging;
    pthread_mutex_unlock(&ws->stage_lock);
    if (!staging)
        return;
    struct trace_watch_result *res = malloc(sizeof *res);
    struct strbuf failed = {0};
    for (int i = 0; res && i < ws->n_staged; i++) {
        const struct staged *st = &ws->staged[i];
        const char *on[TRACE_WATCH_ON_MAX];
        for (int k = 0; k < st->info.n_on; k++)
            on[k] = st->info.on[k];
        struct trace_watch_spec spec = {
            .label = st->has_label ? st->info.label : NULL,
            .variable = st->info.variable[0] ? st->info.variable : NULL,
            .address = st->info.address, .hint = st->hint, .on = on, .n_on = st->info.n_on,
        };
        struct strobe_error e = {0};
        if (pid <= 0)
            err_set(&e, ERR_PROCESS_EXITED, "the program ended before its entry point");
        if (pid <= 0 || update_now(ws, pid, &spec, 1, NULL, 0, res, &e) != 0) {
            char label[MEMORY_EXPR_MAX + 1];
            if (st->has_label)
                snprintf(label, sizeof label, "%s", st->info.label);
            else
                trace_watch_default_label(&spec, label);
            sb_printf(&failed, "%s%s (%s: %s)", failed.len ? "; " : "", label,
                      err_code_name(e.code), e.msg);
        }
    }
    free(res);
    pthread_mutex_lock(&ws->stage_lock);
    if (failed.len) {
        snprintf(ws->warning, sizeof ws->warning, "Pending watches not added: %s",
                 failed.buf);
        log_warn("%s", ws->warning);
    }
    ws->staging = false;
    free(ws->staged);
    ws->staged = NULL;
    ws->n_staged = 0;
    pthread_cond_broadcast(&ws->staged_done);
    pthread_mutex_unlock(&ws->stage_lock);
    sb_free(&failed);
}

int twatch_update(struct twatch_set *ws, pid_t pid, const struct trace_watch_spec *add,
                  int n_add, const char *const *remove, int n_remove,
                  struct trace_watch_result *out, struct strobe_error *e)
{
    wait_staged(ws);
    return update_now(ws, pid, add, n_add, remove, n_remove, out, e);
}

/* Resolves one watch to add into *w; 0 or -1 with e naming it. */
static int prepare(const struct trace_watch_spec *s, pid_t pid, int memfd,
                   struct twatch *w, struct strobe_error *e)
{
    memset(w, 0, sizeof *w);
    struct trace_watch_info *in = &w->info;
    if (s->label)
        snprintf(in->label, sizeof in->label, "%s", s->label);
    else
        trace_watch_default_label(s, in->label);
    if (s->n_on > TRACE_WATCH_ON_MAX)
        return err_set(e, ERR_VALIDATION, "watch '%s': at most %d 'on' patterns.", in->label,
                       TRACE_WATCH_ON_MAX);
    in->n_on = s->n_on;
    for (int i = 0; i < s->n_on; i++) {
        if (strlen(s->on[i]) >= TRACE_WATCH_ON_LEN)
            return err_set(e, ERR_VALIDATION, "watch '%s': an 'on' pattern is longer than %d "
                           "characters.", in->label, TRACE_WATCH_ON_LEN - 1);
        snprintf(in->on[i], sizeof in->on[i], "%s", s->on[i]);
    }
    if (!s->variable) {
        w->hint = s->hint;
        in->address = s->address;
        in->size = varres_hint_type(s->hint) ? varres_hint_type(s->hint)->size : 0;
        snprintf(in->type, sizeof in->type, "%s", memory_hint_name(s->hint));
        unsigned char probe[8];
        if (pid > 0 && !procmem_read(memfd, s->address, probe, in->size))
            return err_set(e, ERR_MEMORY_UNREADABLE, "watch '%s': address 0x%llx cannot be "
                           "read in process %d.", in->label,
                           (unsigned long long)s->address, (int)pid);
        return 0;
    }
    snprintf(in->variable, sizeof in->variable, "%s", s->variable);
    if (pid <= 0)
        return err_set(e, ERR_PROCESS_EXITED, "watch '%s' cannot be resolved: the program "
                       "has exited.", in->label);
    struct strobe_error re = {0};
    w->rewalk = through_pointer(s->variable);
    if (varres_resolve(pid, memfd, s->variable, &w->v, &re) != 0) {
        /* A pointer on the way that is NULL now may be set later: the watch stands
         * and each event says what it finds then. Anything else is a mistake. */
        if (w->rewalk && re.code == ERR_MEMORY_UNREADABLE)
            return 0;
        return err_set(e, re.code, "watch '%s': %s", in->label, re.msg);
    }
    in->address = w->v.has_address ? w->v.address : 0;
    in->size = w->v.size;
    snprintf(in->type, sizeof in->type, "%s", w->v.type_name);
    return 0;
}

static int update_now(struct twatch_set *ws, pid_t pid, const struct trace_watch_spec *add,
                      int n_add, const char *const *remove, int n_remove,
                      struct trace_watch_result *out, struct strobe_error *e)
{
    struct twatch *fresh = n_add > 0 ? calloc((size_t)n_add, sizeof *fresh) : NULL;
    int memfd = pid > 0 && n_add > 0 ? procmem_open(pid) : -1;
    int rc = -1;
    bool listed = false;
    if (n_add > 0 && !fresh) {
        err_set(e, ERR_INTERNAL, "out of memory adding watches");
        goto done;
    }
    if (n_add > 0 && pid > 0 && memfd < 0)
        pid = 0; /* gone: a variable cannot be resolved */
    for (int i = 0; i < n_add; i++) {
        if (prepare(&add[i], pid, memfd, &fresh[i], e) != 0)
            goto done;
    }
    pthread_mutex_lock(&ws->lock);
    /* All or nothing: check everything before changing the set. */
    const char *have[TRACE_WATCHES_MAX], *added[TRACE_WATCHES_MAX + 1];
    bool keep[TRACE_WATCHES_MAX];
    for (int i = 0; i < ws->n; i++)
        have[i] = ws->w[i].info.label;
    /* More than a set holds is refused by the check, which needs only one more. */
    int n_added = n_add <= TRACE_WATCHES_MAX ? n_add : TRACE_WATCHES_MAX + 1;
    for (int k = 0; k < n_added; k++)
        added[k] = fresh[k].info.label;
    if (trace_watch_change_check(have, ws->n, added, n_added, remove, n_remove, "active", keep,
                                 e) != 0)
        goto unlock;
    int n = 0;
    for (int i = 0; i < ws->n; i++)
        if (keep[i])
            ws->w[n++] = ws->w[i];
    for (int k = 0; k < n_add; k++)
        ws->w[n++] = fresh[k];
    ws->n = n;
    atomic_store(&ws->active, n);
    if (n_add || n_remove)
        ws->gen = ws->gen + 1 ? ws->gen + 1 : 1;
    rc = 0;
unlock:
    list_locked(ws, out);
    listed = true;
    pthread_mutex_unlock(&ws->lock);
done:
    if (!listed)
        list_now(ws, out);
    if (memfd >= 0)
        close(memfd);
    free(fresh);
    return rc;
}

/* Appends w's value as JSON, read through rd. */
static void read_value(struct twatch_set *ws, struct twatch *w, pid_t pid, int memfd,
                       mem_read_fn rd, void *rd_ctx, struct strbuf *out)
{
    struct strbuf *sb = &ws->scratch;
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
    if (w->broken[0]) {
        sb_json_string(sb, w->broken);
    } else if (!w->info.variable[0]) {
        unsigned char buf[8];
        if (rd(rd_ctx, w->info.address, buf, w->info.size))
            value_json(sb, varres_hint_type(w->hint), buf, NULL, NULL, NULL);
        else
            sb_json_string(sb, "<unreadable>");
    } else if (w->rewalk) {
        struct varres v;
        struct strobe_error e = {0};
        if (ws->proc_open && (ws->proc.pid != pid || ws->proc.memfd != memfd)) {
            varres_process_close(&ws->proc);
            ws->proc_open = false;
        }
        if (!ws->proc_open) {
            varres_process_open(&ws->proc, pid, memfd);
            ws->proc_open = true;
        }
        if (varres_resolve_in(&ws->proc, w->info.variable, &v, &e) == 0) {
            varres_render(rd, rd_ctx, &v, 1, false, sb);
        } else {
            char note[300];
            snprintf(note, sizeof note, "<%s: %.250s>", err_code_name(e.code), e.msg);
            sb_json_string(sb, note);
        }
    } else {
        varres_render(rd, rd_ctx, &w->v, 1, false, sb);
    }
    if (sb->oom || !sb->buf || !sb->len) {
        sb_puts(out, "null");
    } else if (sb->len > VALUE_JSON_MAX) {
        char note[96];
        snprintf(note, sizeof note, "<%zu characters of JSON: read it with debug_memory>",
                 sb->len);
        sb_json_string(out, note);
    } else {
        sb_append(out, sb->buf, sb->len);
    }
}

void twatch_rebind(struct twatch_set *ws, pid_t pid)
{
    int memfd = procmem_open(pid);
    pthread_mutex_lock(&ws->lock);
    if (ws->proc_open) {
        varres_process_close(&ws->proc);
        ws->proc_open = false;
    }
    for (int i = 0; i < ws->n; i++) {
        struct twatch *w = &ws->w[i];
        if (!w->info.variable[0])
            continue; /* an address stays an address */
        struct strobe_error e = {0};
        struct varres v;
        if (memfd >= 0 && varres_resolve(pid, memfd, w->info.variable, &v, &e) == 0) {
            w->v = v;
            w->broken[0] = '\0';
            w->info.address = v.has_address ? v.address : 0;
            w->info.size = v.size;
            snprintf(w->info.type, sizeof w->info.type, "%s", v.type_name);
        } else if (!(w->rewalk && e.code == ERR_MEMORY_UNREADABLE)) {
            snprintf(w->broken, sizeof w->broken, "<%s: %.250s>",
                     err_code_name(memfd >= 0 ? e.code : ERR_PROCESS_EXITED),
                     memfd >= 0 ? e.msg : "the process is gone");
            w->info.address = 0;
        }
    }
    ws->gen = ws->gen + 1 ? ws->gen + 1 : 1;
    pthread_mutex_unlock(&ws->lock);
    if (memfd >= 0)
        close(memfd);
}

bool twatch_render(struct twatch_set *ws, const struct dw_function *fn,
                   struct twatch_cache *cache, pid_t pid, int memfd, mem_read_fn rd,
                   void *rd_ctx, struct strbuf *out)
{
    if (!ws || atomic_load_explicit(&ws->active, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&ws->lock);
    if (ws->n == 0) {
        pthread_mutex_unlock(&ws->lock);
        return false;
    }
    if (ws->proc_open && ws->proc_gen != ws->gen) {
        varres_process_close(&ws->proc); /* re-read the modules after a change */
        ws->proc_open = false;
    }
    ws->proc_gen = ws->gen;
    if (cache->gen != ws->gen) {
        cache->mask = 0;
        for (int i = 0; i < ws->n; i++) {
            const char *on[TRACE_WATCH_ON_MAX];
            for (int k = 0; k < ws->w[i].info.n_on; k++)
                on[k] = ws->w[i].info.on[k];
            if (twatch_applies(on, ws->w[i].info.n_on, fn, ws->project_root))
                cache->mask |= 1u << i;
        }
        cache->gen = ws->gen;
    }
    if (!cache->mask) {
        pthread_mutex_unlock(&ws->lock);
        return false;
    }
    sb_puts(out, "\"watchValues\":{");
    int k = 0;
    for (int i = 0; i < ws->n; i++) {
        if (!(cache->mask & (1u << i)))
            continue;
        if (k++)
            sb_puts(out, ",");
        sb_json_string(out, ws->w[i].info.label);
        sb_puts(out, ":");
        read_value(ws, &ws->w[i], pid, memfd, rd, rd_ctx, out);
    }
    sb_puts(out, "}");
    pthread_mutex_unlock(&ws->lock);
    return true;
}
