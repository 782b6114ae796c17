/*
 * breakpoints.c - breakpoints of sessions and those staged for the next launch
 * (debug.h): ids unique in the daemon, the staged set a launch copies, and the
 * all-or-nothing adds and removes through the collector's breakpoint slots.
 */
#include "core/debug.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cond.h"
#include "core/session.h"

static struct {
    pthread_mutex_t lock;         /* staged, next_id */
    struct collector_breakpoint staged[DEBUG_LIST_MAX];
    int n_staged;
    int next_id;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

/* ---- staged breakpoints ---- */

int debug_staged_count(void)
{
    pthread_mutex_lock(&g.lock);
    int n = g.n_staged;
    pthread_mutex_unlock(&g.lock);
    return n;
}

struct debug_staged {
    struct collector_breakpoint specs[DEBUG_LIST_MAX];
    int n;
};

struct debug_staged *debug_staged_take(const struct collector_breakpoint **specs, int *n)
{
    *specs = NULL;
    *n = 0;
    struct debug_staged *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&g.lock);
    for (int i = 0; i < g.n_staged; i++)
        if (collector_breakpoint_copy(&s->specs[s->n], &g.staged[i]) == 0)
            s->n++;
    pthread_mutex_unlock(&g.lock);
    *specs = s->specs;
    *n = s->n;
    return s;
}

void debug_staged_free(struct debug_staged *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        collector_breakpoint_release(&s->specs[i]);
    free(s);
}

/* A condition in C's syntax (base/cond.h); a runtime's breakpoint's condition is in
 * its language, checked by its collector when it is set. */
static int check_spec(const struct collector_breakpoint *b, struct strobe_error *e)
{
    if (!b->condition || collector_breakpoint_owner(b))
        return 0;
    struct strobe_error ce = {0};
    struct cond *c = cond_parse(b->condition, &ce);
    if (!c)
        return err_set(e, ERR_BAD_EXPRESSION, "condition %s", ce.msg);
    cond_free(c);
    return 0;
}

static int stage(struct collector_breakpoint *specs, int n, struct collector_bp_info *out,
                 struct strobe_error *e)
{
    for (int i = 0; i < n; i++)
        if (check_spec(&specs[i], e) != 0)
            return -1;
    pthread_mutex_lock(&g.lock);
    int bps = 0, lps = 0;
    for (int i = 0; i < g.n_staged; i++)
        ++*(g.staged[i].message ? &lps : &bps);
    for (int i = 0; i < n; i++)
        ++*(specs[i].message ? &lps : &bps);
    if (bps > BREAKPOINTS_MAX || lps > LOGPOINTS_MAX) {
        pthread_mutex_unlock(&g.lock);
        return err_set(e, ERR_LIMIT_EXCEEDED, "At most %d breakpoints and %d logpoints may be "
                       "staged.", BREAKPOINTS_MAX, LOGPOINTS_MAX);
    }
    for (int i = 0; i < n; i++) {
        specs[i].id = g.next_id + i;
        if (collector_breakpoint_copy(&g.staged[g.n_staged + i], &specs[i]) != 0) {
            while (i-- > 0)
                collector_breakpoint_release(&g.staged[g.n_staged + i]);
            pthread_mutex_unlock(&g.lock);
            return err_set(e, ERR_INTERNAL, "out of memory staging breakpoints");
        }
        collector_bp_info_init(&out[i], &specs[i]);
    }
    g.next_id += n;
    g.n_staged += n;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

int debug_breakpoints_for_launch(struct collector_breakpoint *specs, int n,
                                 struct strobe_error *e)
{
    int bps = 0, lps = 0;
    for (int i = 0; i < n; i++) {
        if (check_spec(&specs[i], e) != 0)
            return -1;
        ++*(specs[i].message ? &lps : &bps);
    }
    if (bps > BREAKPOINTS_MAX || lps > LOGPOINTS_MAX)
        return err_set(e, ERR_LIMIT_EXCEEDED, "At most %d breakpoints and %d logpoints may be "
                       "given to a launch.", BREAKPOINTS_MAX, LOGPOINTS_MAX);
    pthread_mutex_lock(&g.lock);
    for (int i = 0; i < n; i++)
        specs[i].id = g.next_id++;
    pthread_mutex_unlock(&g.lock);
    return 0;
}

/* ---- breakpoints of a session ---- */

int debug_breakpoints_add(const char *id, const struct debug_conn *conn,
                          struct collector_breakpoint *specs, int n,
                          struct collector_bp_info *out, struct strobe_error *e)
{
    if (!id)
        return stage(specs, n, out, e);
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int done = 0;
    int rc = collector_stops_check(st.collector, e);
    for (int i = 0; i < n && rc == 0; i++)
        rc = check_spec(&specs[i], e);
    if (rc == 0) {
        pthread_mutex_lock(&g.lock);
        int first = g.next_id;
        g.next_id += n;
        pthread_mutex_unlock(&g.lock);
        for (; done < n && rc == 0; done++) {
            specs[done].id = first + done;
            rc = collector_breakpoint_set(st.collector, st.target, &specs[done], &out[done], e);
            if (rc != 0)
                break;
        }
        /* All or nothing: those set before the failure go, and a rejected add uses up
         * no id (unless another add took ids since: then ids stay unique). */
        if (rc != 0) {
            for (int i = 0; i < done; i++)
                collector_breakpoint_clear(st.collector, st.target, specs[i].id, NULL);
            pthread_mutex_lock(&g.lock);
            if (g.next_id == first + n)
                g.next_id = first;
            pthread_mutex_unlock(&g.lock);
        } else {
            debug_state_control(st.debug, conn);
        }
    }
    session_target_put(&st);
    return rc;
}

/* Drops the staged breakpoints of ids (all of them when all), noting their ids in
 * removed when not NULL. The caller holds g.lock. */
static void drop_staged_locked(const int *ids, int n, bool all, int *removed, int *n_removed)
{
    int kept = 0;
    for (int k = 0; k < g.n_staged; k++) {
        bool go = all;
        for (int i = 0; i < n && !go; i++)
            go = g.staged[k].id == ids[i];
        if (go) {
            if (removed)
                removed[(*n_removed)++] = g.staged[k].id;
            collector_breakpoint_release(&g.staged[k]);
        } else {
            g.staged[kept++] = g.staged[k];
        }
    }
    g.n_staged = kept;
}

static int remove_staged(const int *ids, int n, bool all, int *removed, int *n_removed,
                         struct strobe_error *e)
{
    pthread_mutex_lock(&g.lock);
    for (int i = 0; i < n && !all; i++) {
        bool found = false;
        for (int k = 0; k < g.n_staged && !found; k++)
            found = g.staged[k].id == ids[i];
        if (!found) {
            pthread_mutex_unlock(&g.lock);
            return err_set(e, ERR_BREAKPOINT_NOT_FOUND, "No staged breakpoint has id %d.",
                           ids[i]);
        }
    }
    drop_staged_locked(ids, n, all, removed, n_removed);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

int debug_breakpoints_remove(const char *id, const int *ids, int n, bool all, int *removed,
                             int *n_removed, struct strobe_error *e)
{
    *n_removed = 0;
    if (!id)
        return remove_staged(ids, n, all, removed, n_removed, e);
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int rc = collector_stops_check(st.collector, e);
    if (rc == 0) {
        struct collector_bp_info *have = calloc(DEBUG_LIST_MAX, sizeof *have);
        int n_have = have ? collector_breakpoint_list(st.collector, st.target, have,
                                                      DEBUG_LIST_MAX, NULL) : 0;
        if (n_have > DEBUG_LIST_MAX)
            n_have = DEBUG_LIST_MAX;
        for (int i = 0; i < n && !all && rc == 0; i++) {
            bool found = false;
            for (int k = 0; k < n_have && !found; k++)
                found = have[k].id == ids[i];
            if (!found)
                rc = err_set(e, ERR_BREAKPOINT_NOT_FOUND, "Session %s has no breakpoint %d.",
                             id, ids[i]);
        }
        for (int k = 0; k < n_have && rc == 0; k++) {
            bool go = all;
            for (int i = 0; i < n && !go; i++)
                go = have[k].id == ids[i];
            if (go && collector_breakpoint_clear(st.collector, st.target, have[k].id, NULL) == 0)
                removed[(*n_removed)++] = have[k].id;
        }
        free(have);
    }
    session_target_put(&st);
    /* A bound copy of a staged breakpoint keeps its id: it is one breakpoint, as in
     * gdb, so removing it from the session unstages it too. */
    pthread_mutex_lock(&g.lock);
    drop_staged_locked(removed, *n_removed, false, NULL, NULL);
    pthread_mutex_unlock(&g.lock);
    return rc;
}

int debug_breakpoints_list(const char *id, struct collector_bp_info *out, int max, int *n,
                           struct strobe_error *e)
{
    *n = 0;
    if (!id) {
        pthread_mutex_lock(&g.lock);
        for (int i = 0; i < g.n_staged; i++) {
            if (i < max)
                collector_bp_info_init(&out[i], &g.staged[i]);
            ++*n;
        }
        pthread_mutex_unlock(&g.lock);
        return 0;
    }
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int rc = collector_stops_check(st.collector, e);
    if (rc == 0)
        *n = collector_breakpoint_list(st.collector, st.target, out, max, NULL);
    session_target_put(&st);
    return rc;
}

int debug_breakpoints_launched(const char *id, struct collector_bp_info *out, int max, int *n,
                               struct strobe_error *e)
{
    *n = 0;
    struct session_target st;
    /* a program that ended before the launch answer (logpoints alone never stop it)
     * still tells how its breakpoints bound */
    if (session_target_get_ended(id, &st, e) != 0)
        return -1;
    int got = collector_breakpoints_staged(st.collector, st.target, out, max, e);
    session_target_put(&st);
    if (got < 0)
        return -1;
    *n = got;
    return 0;
}

int debug_pauses(const char *id, struct collector_pause *out, int max)
{
    struct session_target st;
    struct strobe_error e;
    if (session_target_get(id, &st, &e) != 0)
        return 0;
    int n = collector_pauses(st.collector, st.target, out, max, NULL);
    session_target_put(&st);
    return n > 0 ? n : 0; /* a collector without pauses has none */
}
