/*
 * trace_watches.c - debug_trace's watches. See trace_watches.h.
 */
#include "core/trace_watches.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "core/patterns.h"
#include "core/session.h"

int trace_watch_check(const struct trace_watch_spec *w, struct strobe_error *e)
{
    char label[MEMORY_EXPR_MAX + 1];
    if (w->label) {
        if (!*w->label)
            return err_set(e, ERR_VALIDATION, "A watch's label is empty; omit it to use the "
                           "expression.");
        if (strlen(w->label) > MEMORY_EXPR_MAX)
            return err_set(e, ERR_VALIDATION, "A watch's label is longer than %d characters.",
                           MEMORY_EXPR_MAX);
    }
    if (w->variable) {
        if (!*w->variable)
            return err_set(e, ERR_VALIDATION, "A watch's variable is empty.");
        if (strlen(w->variable) > MEMORY_EXPR_MAX)
            return err_set(e, ERR_VALIDATION, "Watch variable '%.40s...' is longer than %d "
                           "characters.", w->variable, MEMORY_EXPR_MAX);
    } else if (!w->address) {
        return err_set(e, ERR_VALIDATION, "A watch needs a variable or a non-zero address.");
    }
    trace_watch_default_label(w, label);
    const char *name = w->label ? w->label : label;
    if (w->n_on > TRACE_WATCH_ON_MAX)
        return err_set(e, ERR_VALIDATION, "Watch '%.200s' has %d 'on' patterns; at most %d.",
                       name, w->n_on, TRACE_WATCH_ON_MAX);
    for (int i = 0; i < w->n_on; i++) {
        if (strlen(w->on[i]) >= TRACE_WATCH_ON_LEN)
            return err_set(e, ERR_VALIDATION, "Watch '%.200s': an 'on' pattern is longer "
                           "than %d characters.", name, TRACE_WATCH_ON_LEN - 1);
        if (pattern_check(w->on[i], e) != 0)
            return -1;
    }
    return 0;
}

int session_trace_watches(const char *id, const struct trace_watch_spec *add, int n_add,
                          const char *const *remove, int n_remove,
                          struct trace_watch_result *out, struct strobe_error *e)
{
    out->n = 0;
    for (int i = 0; i < n_add; i++)
        if (trace_watch_check(&add[i], e) != 0)
            return -1;
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int rc = collector_trace_watches(st.collector, st.target, add, n_add, remove, n_remove,
                                     out, e);
    session_target_put(&st);
    return rc;
}

/* ---- pending ---------------------------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending {
    bool has_label;
    enum memory_hint hint;
    struct trace_watch_info info; /* label, variable, address, on */
} pending[TRACE_WATCHES_MAX];
static int n_pending;

static void list_locked(struct trace_watch_result *out)
{
    out->n = n_pending;
    for (int i = 0; i < n_pending; i++) {
        out->watches[i] = pending[i].info;
        if (!pending[i].info.variable[0])
            snprintf(out->watches[i].type, sizeof out->watches[i].type, "%s",
                     memory_hint_name(pending[i].hint) ? memory_hint_name(pending[i].hint)
                                                       : "");
    }
}

void trace_watches_pending_list(struct trace_watch_result *out)
{
    pthread_mutex_lock(&lock);
    list_locked(out);
    pthread_mutex_unlock(&lock);
}

int trace_watches_pending_update(const struct trace_watch_spec *add, int n_add,
                                 const char *const *remove, int n_remove,
                                 struct trace_watch_result *out, struct strobe_error *e)
{
    struct pending *fresh = n_add ? calloc((size_t)n_add, sizeof *fresh) : NULL;
    if (n_add && !fresh)
        return err_set(e, ERR_INTERNAL, "out of memory");
    int rc = -1;
    for (int i = 0; i < n_add; i++) {
        if (trace_watch_check(&add[i], e) != 0)
            goto out;
        struct pending *p = &fresh[i];
        p->has_label = add[i].label != NULL;
        p->hint = add[i].hint;
        if (add[i].label)
            snprintf(p->info.label, sizeof p->info.label, "%s", add[i].label);
        else
            trace_watch_default_label(&add[i], p->info.label);
        if (add[i].variable)
            snprintf(p->info.variable, sizeof p->info.variable, "%s", add[i].variable);
        else
            p->info.address = add[i].address;
        p->info.n_on = add[i].n_on;
        for (int k = 0; k < add[i].n_on; k++)
            snprintf(p->info.on[k], sizeof p->info.on[k], "%s", add[i].on[k]);
    }
    pthread_mutex_lock(&lock);
    const char *have[TRACE_WATCHES_MAX], *added[TRACE_WATCHES_MAX + 1];
    bool keep[TRACE_WATCHES_MAX];
    for (int i = 0; i < n_pending; i++)
        have[i] = pending[i].info.label;
    /* More than a set holds is refused by the check, which needs only one more. */
    int n_added = n_add <= TRACE_WATCHES_MAX ? n_add : TRACE_WATCHES_MAX + 1;
    for (int k = 0; k < n_added; k++)
        added[k] = fresh[k].info.label;
    if (trace_watch_change_check(have, n_pending, added, n_added, remove, n_remove, "pending",
                                 keep, e) != 0)
        goto unlock;
    int n = 0;
    for (int i = 0; i < n_pending; i++)
        if (keep[i])
            pending[n++] = pending[i];
    for (int k = 0; k < n_add; k++)
        pending[n++] = fresh[k];
    n_pending = n;
    rc = 0;
unlock:
    list_locked(out);
    pthread_mutex_unlock(&lock);
    free(fresh);
    return rc;
out:
    trace_watches_pending_list(out);
    free(fresh);
    return rc;
}

struct trace_watches_staged {
    int n;
    struct pending copy[TRACE_WATCHES_MAX];
    const char *on[TRACE_WATCHES_MAX][TRACE_WATCH_ON_MAX];
    struct trace_watch_spec specs[TRACE_WATCHES_MAX];
};

struct trace_watches_staged *trace_watches_pending_take(const struct trace_watch_spec **specs,
                                                        int *n)
{
    *specs = NULL;
    *n = 0;
    pthread_mutex_lock(&lock);
    int count = n_pending;
    struct trace_watches_staged *s = count ? malloc(sizeof *s) : NULL;
    if (s) {
        s->n = count;
        memcpy(s->copy, pending, (size_t)count * sizeof *pending);
    }
    pthread_mutex_unlock(&lock);
    if (!s)
        return NULL;
    for (int i = 0; i < s->n; i++) {
        const struct pending *p = &s->copy[i];
        for (int k = 0; k < p->info.n_on; k++)
            s->on[i][k] = p->info.on[k];
        s->specs[i] = (struct trace_watch_spec){
            .label = p->has_label ? p->info.label : NULL,
            .variable = p->info.variable[0] ? p->info.variable : NULL,
            .address = p->info.address, .hint = p->hint, .on = s->on[i],
            .n_on = p->info.n_on,
        };
    }
    *specs = s->specs;
    *n = s->n;
    return s;
}

void trace_watches_staged_free(struct trace_watches_staged *s)
{
    free(s);
}
