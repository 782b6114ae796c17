/*
 * debug.c - pauses, steps and the waits of debug_continue, per-session state and the
 * controlling connection (debug.h); breakpoints themselves are breakpoints.c.
 */
#include "core/debug.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "base/event.h"
#include "core/session.h"

/* ---- per-session state ---- */

struct debug_state {
    char session_id[SESSION_ID_MAX];
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int refs;
    uint64_t gen;                 /* bumped at every pause change, exit, end */
    bool exited, ended;
    int exit_status;
    uint64_t controller;          /* the connection that controls it; 0: none */
    int64_t answered_seq;         /* the newest pause a debug_continue answered with */
    struct debug_state *next;     /* in states */
};

static struct {
    pthread_mutex_t lock;         /* states */
    struct debug_state *states;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct debug_state *debug_state_new(const char *session_id)
{
    struct debug_state *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    snprintf(d->session_id, sizeof d->session_id, "%s", session_id);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->changed, NULL);
    d->refs = 1;
    pthread_mutex_lock(&g.lock);
    d->next = g.states;
    g.states = d;
    pthread_mutex_unlock(&g.lock);
    return d;
}

static void state_ref(struct debug_state *d)
{
    pthread_mutex_lock(&d->lock);
    d->refs++;
    pthread_mutex_unlock(&d->lock);
}

static void state_unref(struct debug_state *d)
{
    pthread_mutex_lock(&d->lock);
    bool last = --d->refs == 0;
    pthread_mutex_unlock(&d->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->changed);
    free(d);
}

static void bump(struct debug_state *d)
{
    d->gen++;
    pthread_cond_broadcast(&d->changed);
}

void debug_state_end(struct debug_state *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&g.lock);
    for (struct debug_state **p = &g.states; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            break;
        }
    pthread_mutex_unlock(&g.lock);
    pthread_mutex_lock(&d->lock);
    d->ended = true;
    bump(d);
    pthread_mutex_unlock(&d->lock);
    state_unref(d);
}

void debug_state_notify(struct debug_state *d)
{
    pthread_mutex_lock(&d->lock);
    bump(d);
    pthread_mutex_unlock(&d->lock);
}

void debug_state_exited(struct debug_state *d, int ws)
{
    pthread_mutex_lock(&d->lock);
    d->exited = true;
    d->exit_status = ws;
    bump(d);
    pthread_mutex_unlock(&d->lock);
}

void debug_state_control(struct debug_state *d, const struct debug_conn *conn)
{
    if (!conn || conn->transient)
        return;
    pthread_mutex_lock(&d->lock);
    d->controller = conn->id;
    pthread_mutex_unlock(&d->lock);
}

/* ---- continue ---- */

#define PAUSES_SEEN 64

static int64_t newest_seq(const struct collector_pause *p, int n)
{
    int64_t seq = 0;
    for (int i = 0; i < n && i < PAUSES_SEEN; i++)
        if (p[i].seq > seq)
            seq = p[i].seq;
    return seq;
}

/* What the wait watches, read while holding the session. */
struct probe {
    int n_paused;
    struct collector_pause newest;   /* newest pause after the baseline; seq 0: none */
    bool gone;                       /* the program's processes are all gone */
};

static void read_pauses(const char *id, int64_t baseline, struct probe *p)
{
    *p = (struct probe){0};
    struct session_target st;
    struct strobe_error e;
    if (session_target_get(id, &st, &e) != 0) {
        p->gone = true;
        return;
    }
    struct collector_pause ps[PAUSES_SEEN];
    int n = collector_pauses(st.collector, st.target, ps, PAUSES_SEEN, NULL);
    p->n_paused = n;
    for (int i = 0; i < n && i < PAUSES_SEEN; i++)
        if (ps[i].seq > baseline && collector_pause_better(&ps[i], &p->newest))
            p->newest = ps[i];
    session_target_put(&st);
}

/* The stopped thread's stack with arguments and locals, for the answer, and the
 * count of paused threads once the snapshot is taken: the tracer thread has finished
 * what it was doing by then (an all-stop parks some threads as their own stops end). */
static void stop_stack(const char *id, struct debug_outcome *o)
{
    o->stack = (struct collector_stacks){0};
    struct session_target st;
    struct strobe_error e;
    if (session_target_get(id, &st, &e) != 0)
        return;
    pid_t tid = o->pause.tid;
    struct collector_stacks_request req = {.pid = o->pause.pid, .tids = &tid, .n_tids = 1,
                                           .locals = true, .arguments = true};
    if (collector_stacks(st.collector, st.target, &req, &o->stack, &e) != 0)
        o->stack = (struct collector_stacks){0};
    struct collector_pause ps[PAUSES_SEEN];
    o->n_paused = collector_pauses(st.collector, st.target, ps, PAUSES_SEEN, NULL);
    o->n_others = 0;
    pid_t others[8];
    for (int i = 0; i < o->n_paused && i < PAUSES_SEEN; i++)
        if (ps[i].tid != o->pause.tid && o->n_others < 8) {
            others[o->n_others] = ps[i].tid;
            o->others[o->n_others++] = ps[i];
        }
    o->others_stack = (struct collector_stacks){0};
    struct collector_stacks_request oreq = {.tids = others, .n_tids = o->n_others};
    if (o->n_others &&
        collector_stacks(st.collector, st.target, &oreq, &o->others_stack, &e) != 0)
        o->others_stack = (struct collector_stacks){0};
    session_target_put(&st);
}

/* The program is not running freely when threads are paused: an answer that would
 * say "running" shows the newest pause instead. */
static void show_paused(const char *id, struct debug_outcome *out)
{
    struct probe p;
    read_pauses(id, 0, &p);
    if (!p.newest.seq)
        return;
    out->state = DS_PAUSED;
    out->pause = p.newest;
    out->n_paused = p.n_paused;
}

static int evaluate_memory(const char *id, const char *cond, bool *met, char *values,
                           size_t cap, struct strobe_error *e)
{
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int rc = collector_evaluate(st.collector, st.target, 0, cond, met, values, cap, e);
    session_target_put(&st);
    return rc;
}

static int find_event(const struct debug_continue_req *req, int64_t key, int64_t after,
                      struct debug_outcome *out, struct strobe_error *e)
{
    int64_t from = req->event->after_id > after ? req->event->after_id : after;
    int rc = timeline_first_match(req->rd, key, req->event, from, &out->event, e);
    if (rc == 1)
        out->has_event = out->condition_met = true;
    return rc;
}

/* Resumes the pauses the request saw (seen[0..n)), each by its thread: a thread
 * that pauses while the request is on its way is the answer, not resumed unseen. */
static int resume_seen(struct session_target *st, const struct collector_pause *seen, int n,
                       struct strobe_error *e)
{
    pid_t tids[PAUSES_SEEN];
    for (int i = 0; i < n && i < PAUSES_SEEN; i++)
        tids[i] = seen[i].tid;
    return collector_resume_many(st->collector, st->target, tids,
                                 n < PAUSES_SEEN ? n : PAUSES_SEEN, e);
}

/* The action itself, holding the session; seen[0..n_seen) the pauses before it. */
static int act(struct session_target *st, const struct debug_continue_req *req,
               const struct collector_pause *seen, int n_seen, struct strobe_error *e)
{
    const struct collector_methods *c = st->collector;
    switch (req->action) {
    case DA_CONTINUE:
        /* Nothing paused: the collector says NOT_PAUSED, or lets steps in flight run
         * on. */
        if (req->tid || n_seen == 0)
            return collector_resume(c, st->target, req->tid, RESUME_CONTINUE, e);
        return resume_seen(st, seen, n_seen, e);
    case DA_STEP_OVER:
        return collector_resume(c, st->target, req->tid, RESUME_STEP_OVER, e);
    case DA_STEP_INTO:
        return collector_resume(c, st->target, req->tid, RESUME_STEP_INTO, e);
    case DA_STEP_OUT:
        return collector_resume(c, st->target, req->tid, RESUME_STEP_OUT, e);
    case DA_PAUSE:
        return collector_pause(c, st->target, 0, e); /* how many it stopped */
    case DA_UNTIL:
        return resume_seen(st, seen, n_seen, e);
    }
    return err_set(e, ERR_INTERNAL, "unknown action");
}

/* Whether the until condition holds before anything runs. */
static int holds_now(const char *id, const struct debug_continue_req *req, int64_t key,
                     struct session_target *st, int64_t answered_seq,
                     struct debug_outcome *out, struct strobe_error *e)
{
    out->has_condition = true;
    if (req->until == UNTIL_BREAKPOINT) {
        /* The list first, then the pauses: a one-shot breakpoint is removed only
         * after its pause is registered, so one hit between the two reads is seen
         * by the second (the other order answered BREAKPOINT_NOT_FOUND for a hit
         * that came in between). */
        struct collector_bp_info *have = calloc(DEBUG_LIST_MAX, sizeof *have);
        int n = have ? collector_breakpoint_list(st->collector, st->target, have,
                                                 DEBUG_LIST_MAX, NULL) : 0;
        bool known = false;
        for (int i = 0; i < n && i < DEBUG_LIST_MAX && !known; i++)
            known = have[i].id == req->breakpoint_id;
        free(have);
        /* A thread paused there already (a one-shot breakpoint is gone by then) that
         * no answer has shown yet: a hit between two calls. One an answer showed is
         * resumed with the others, and the wait is for the next hit (gdb's
         * continue: an agent at a breakpoint asks for its next hit this way). */
        struct collector_pause ps[PAUSES_SEEN];
        int np = collector_pauses(st->collector, st->target, ps, PAUSES_SEEN, NULL);
        for (int i = 0; i < np && i < PAUSES_SEEN; i++)
            if (ps[i].breakpoint_id == req->breakpoint_id && ps[i].seq > answered_seq) {
                out->state = DS_PAUSED;
                out->pause = ps[i];
                out->condition_met = true;
                return 1;
            }
        if (!known)
            return err_set(e, ERR_BREAKPOINT_NOT_FOUND, "Session %s has no breakpoint %d (a "
                           "one-shot breakpoint goes after its hit) and no thread is paused "
                           "at it%s.", id, req->breakpoint_id,
                           np > 0 ? "; other threads are paused" : "");
        return 0;
    }
    if (req->until == UNTIL_EVENT)
        return find_event(req, key, 0, out, e);
    bool met = false;
    if (collector_evaluate(st->collector, st->target, 0, req->memory, &met, out->values,
                           sizeof out->values, e) != 0)
        return -1;
    out->condition_met = met;
    return met ? 1 : 0;
}

/* The last lines of one output stream after baseline, oldest first, appended. */
static void last_lines(struct timeline_reader *rd, int64_t key, int64_t baseline, int type,
                       struct debug_outcome *out)
{
    struct event_query q = {.after_id = baseline, .event_type = type, .limit = 1};
    struct timeline_page page;
    if (timeline_events(rd, key, &q, &page, NULL) != 0)
        return;
    int64_t total = page.total_count;
    timeline_page_free(&page);
    int want = DEBUG_OUTPUT_LINES - out->n_output;
    *(type == EV_STDERR ? &out->stderr_total : &out->stdout_total) = total > 0 ? total : 0;
    if (total <= 0 || want <= 0)
        return;
    q.limit = want;
    q.offset = total > want ? (int)(total - want) : 0;
    if (timeline_events(rd, key, &q, &page, NULL) != 0)
        return;
    for (int i = 0; i < page.n && out->n_output < DEBUG_OUTPUT_LINES; i++)
        if (page.events[i].text)
            snprintf(out->output[out->n_output++], sizeof out->output[0], "%s",
                     page.events[i].text);
    timeline_page_free(&page);
}

/* The first watchpoint hits since the baseline, quoted, and how many there were. */
static void watch_hits(struct timeline_reader *rd, int64_t key, int64_t baseline,
                       struct debug_outcome *out)
{
    struct event_query q = {.after_id = baseline, .event_type = EV_WATCH_HIT,
                            .limit = DEBUG_WATCH_HITS};
    struct timeline_page page;
    if (timeline_events(rd, key, &q, &page, NULL) != 0)
        return;
    out->watch_hits_total = page.total_count;
    for (int i = 0; i < page.n && out->n_watch_hits < DEBUG_WATCH_HITS; i++)
        if (page.events[i].text)
            snprintf(out->watch_hits[out->n_watch_hits++], sizeof out->watch_hits[0], "%s",
                     page.events[i].text);
    timeline_page_free(&page);
}

/* What happened while the program ran: how many events (recorded since the
 * baseline's mark, whatever the cap evicted since; the evicted ones are those no
 * longer stored after the baseline), the last output lines. */
static void meanwhile(struct timeline_reader *rd, int64_t key,
                      const struct timeline_mark *base, struct debug_outcome *out)
{
    int64_t baseline = base->last_id;
    struct event_query q = {.after_id = baseline, .limit = 1};
    struct timeline_page page;
    struct timeline_mark now;
    if (timeline_mark(rd, key, &now, NULL) != 0 ||
        timeline_events(rd, key, &q, &page, NULL) != 0)
        return;
    out->events_meanwhile = now.recorded - base->recorded;
    if (out->events_meanwhile < page.total_count) /* events of the instant it began */
        out->events_meanwhile = page.total_count;
    out->evicted_meanwhile = out->events_meanwhile - page.total_count;
    timeline_page_free(&page);
    last_lines(rd, key, baseline, EV_STDERR, out);
    last_lines(rd, key, baseline, EV_STDOUT, out);
}

static void exit_outcome(struct debug_state *d, struct debug_outcome *out)
{
    out->state = DS_EXITED;
    pthread_mutex_lock(&d->lock);
    int ws = d->exit_status;
    bool exited = d->exited;
    pthread_mutex_unlock(&d->lock);
    if (exited && WIFEXITED(ws)) {
        out->exited_normally = true;
        out->exit_code = WEXITSTATUS(ws);
    } else if (exited && WIFSIGNALED(ws)) {
        out->signal = WTERMSIG(ws);
    }
}

/* debug_continue with a reference to the session's debug state in *dref (NULL when
 * it returned before taking one), for the caller to note the answer and drop. */
static int continue_run(const char *id, const struct debug_conn *conn,
                        const struct debug_continue_req *req, struct debug_outcome *out,
                        struct debug_state **dref, struct strobe_error *e)
{
    *out = (struct debug_outcome){.state = DS_RUNNING};
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    if (collector_stops_check(st.collector, e) != 0) {
        session_target_put(&st);
        return -1;
    }
    struct debug_state *d = st.debug;
    state_ref(d);
    *dref = d;
    pthread_mutex_lock(&d->lock);
    int64_t answered_seq = d->answered_seq;
    pthread_mutex_unlock(&d->lock);
    int64_t key = st.key;
    struct collector_pause ps[PAUSES_SEEN];
    int np = collector_pauses(st.collector, st.target, ps, PAUSES_SEEN, NULL);
    int64_t baseline_seq = newest_seq(ps, np);
    struct timeline_mark base = {0};
    if (req->rd) {
        session_resolve(id, &key, NULL); /* what the program did so far is stored */
        timeline_mark(req->rd, key, &base, NULL);
    }
    int64_t baseline_id = base.last_id;
    int rc = 0;
    if (req->action == DA_UNTIL && req->until == UNTIL_NONE && np > 0) {
        /* A stop is what it waits for, and there is one: shown, nothing resumed. */
        session_target_put(&st);
        show_paused(id, out);
        stop_stack(id, out);
        return 0;
    }
    if (req->action == DA_UNTIL && req->until != UNTIL_NONE) {
        rc = holds_now(id, req, key, &st, answered_seq, out, e);
        if (rc != 0) {
            session_target_put(&st);
            if (rc < 0)
                return -1;
            out->n_paused = np;
            if (out->state == DS_RUNNING)
                show_paused(id, out);
            if (out->state == DS_PAUSED)
                stop_stack(id, out);
            return 0;
        }
    }
    pthread_mutex_lock(&d->lock);
    uint64_t gen = d->gen;
    pthread_mutex_unlock(&d->lock);
    rc = act(&st, req, ps, np, e);
    /* A pause that found every thread paused already has nothing to wait for. */
    bool all_paused = req->action == DA_PAUSE && rc == 0 && np > 0;
    if (rc > 0)
        rc = 0;
    if (rc == 0)
        debug_state_control(d, conn);
    if (rc == 0 && (req->action == DA_CONTINUE || req->action == DA_UNTIL)) {
        for (int i = 0; i < np && i < PAUSES_SEEN; i++)
            if (!req->tid || ps[i].tid == req->tid) {
                if (out->n_resumed < 8)
                    out->resumed[out->n_resumed] = ps[i];
                out->n_resumed++;
            }
    }
    session_target_put(&st);
    if (rc != 0 || all_paused) {
        if (rc != 0)
            return -1;
        show_paused(id, out);
        stop_stack(id, out);
        return 0;
    }
    int64_t start = mono_ns();
    int64_t deadline = start + (int64_t)req->timeout_ms * 1000000;
    int poll_ms = req->until == UNTIL_MEMORY ? DEBUG_MEMORY_POLL_MS
                  : req->until == UNTIL_EVENT ? DEBUG_EVENT_POLL_MS : 0;
    for (;;) {
        struct probe p;
        read_pauses(id, baseline_seq, &p);
        if (p.newest.seq) {
            out->state = DS_PAUSED;
            out->pause = p.newest;
            out->n_paused = p.n_paused;
            if (req->until == UNTIL_BREAKPOINT)
                out->condition_met = p.newest.breakpoint_id == req->breakpoint_id;
            break;
        }
        pthread_mutex_lock(&d->lock);
        bool exited = d->exited, ended = d->ended;
        pthread_mutex_unlock(&d->lock);
        /* The awaited event may be the program's last words: looked for first. */
        if (req->until == UNTIL_EVENT) {
            struct strobe_error qe = {0};
            session_resolve(id, &key, NULL);
            if (find_event(req, key, baseline_id, out, &qe) == 1)
                break;
        }
        /* The end is answered once the session recorded it: its last output is
         * stored by then (an event awaited among it was looked for above). */
        if (ended || p.gone) {
            exit_outcome(d, out);
            break;
        }
        if (req->until == UNTIL_MEMORY) {
            bool met = false;
            struct strobe_error me = {0};
            if (evaluate_memory(id, req->memory, &met, out->values, sizeof out->values,
                                &me) == 0 && met) {
                out->condition_met = true;
                break;
            }
        }
        int64_t now = mono_ns();
        if (now >= deadline)
            break;
        int64_t wait_ns = deadline - now;
        int64_t step_ms = exited ? DEBUG_EXIT_POLL_MS : poll_ms;
        if (step_ms && wait_ns > step_ms * 1000000)
            wait_ns = step_ms * 1000000;
        struct timespec until = clock_after_ns(CLOCK_REALTIME, wait_ns);
        pthread_mutex_lock(&d->lock);
        while (d->gen == gen &&
               pthread_cond_timedwait(&d->changed, &d->lock, &until) == 0)
            ;
        gen = d->gen;
        pthread_mutex_unlock(&d->lock);
    }
    out->waited_ms = (mono_ns() - start) / 1000000;
    if (out->state == DS_RUNNING)
        show_paused(id, out);
    if (out->state == DS_RUNNING && out->condition_met) {
        /* The awaited event may be the program's end (or came with it): the answer
         * says it ended rather than "running". */
        pthread_mutex_lock(&d->lock);
        bool exited = d->exited;
        pthread_mutex_unlock(&d->lock);
        if (exited)
            exit_outcome(d, out);
    }
    if (out->state == DS_PAUSED)
        stop_stack(id, out);
    if (req->rd) {
        session_resolve(id, &key, NULL);
        out->baseline_id = baseline_id;
        if (out->state != DS_PAUSED)
            meanwhile(req->rd, key, &base, out);
        /* a step or a run to a breakpoint can pass watchpoint hits: say so */
        watch_hits(req->rd, key, baseline_id, out);
    }
    return 0;
}

int debug_continue(const char *id, const struct debug_conn *conn,
                   const struct debug_continue_req *req, struct debug_outcome *out,
                   struct strobe_error *e)
{
    struct debug_state *d = NULL;
    int rc = continue_run(id, conn, req, out, &d, e);
    if (!d)
        return rc;
    pthread_mutex_lock(&d->lock);
    if (rc == 0 && out->state == DS_PAUSED && out->pause.seq > d->answered_seq)
        d->answered_seq = out->pause.seq;
    pthread_mutex_unlock(&d->lock);
    state_unref(d);
    return rc;
}

void debug_outcome_free(struct debug_outcome *o)
{
    collector_stacks_free(&o->stack);
    collector_stacks_free(&o->others_stack);
    if (o->has_event)
        timeline_event_free(&o->event);
}

/* ---- connections ---- */

void debug_release_connection(uint64_t conn)
{
    char ids[64][SESSION_ID_MAX];
    int n = 0;
    pthread_mutex_lock(&g.lock);
    for (struct debug_state *d = g.states; d && n < 64; d = d->next) {
        pthread_mutex_lock(&d->lock);
        if (d->controller == conn) {
            d->controller = 0;
            snprintf(ids[n++], SESSION_ID_MAX, "%s", d->session_id);
        }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_unlock(&g.lock);
    for (int i = 0; i < n; i++) {
        struct session_target st;
        struct strobe_error e;
        if (session_target_get(ids[i], &st, &e) != 0)
            continue;
        if (collector_stops_check(st.collector, NULL) == 0) {
            struct collector_bp_info *have = calloc(DEBUG_LIST_MAX, sizeof *have);
            int nb = have ? collector_breakpoint_list(st.collector, st.target, have,
                                                      DEBUG_LIST_MAX, NULL) : 0;
            for (int k = 0; k < nb && k < DEBUG_LIST_MAX; k++)
                if (!have[k].logpoint)
                    collector_breakpoint_clear(st.collector, st.target, have[k].id, NULL);
            free(have);
            collector_resume(st.collector, st.target, 0, RESUME_CONTINUE, &e);
        }
        session_target_put(&st);
    }
}
