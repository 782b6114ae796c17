/*
 * session_output.c - a live session's output capture (core/output.h) and what its
 * collector reports about the target (core/collector.h, struct collector_events): the
 * end of the main process recorded as its process_exit event and the session's
 * status, output read before a crash or a trap is stamped, pauses woken.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "base/log.h"
#include "core/debug.h"
#include "core/output.h"
#include "core/poll.h"
#include "core/session_internal.h"

/* ---- the end of the main process ---------------------------------------------- */

/* The output capture's on_exit: the process_exit event, then the status. */
static void record_exit(void *arg, struct output *o, int ws)
{
    struct session *s = arg;
    bool stopped = atomic_load(&s->stop_requested);
    char text[128], data[96], sigbuf[32];
    bool has_code = event_describe_exit(s->pid, ws, stopped, text, sizeof text, data, sizeof data);
    int code = has_code ? WEXITSTATUS(ws) : 0;
    const char *signame = NULL;
    if (!has_code) {
        const char *abbrev = sigabbrev_np(WTERMSIG(ws));
        snprintf(sigbuf, sizeof sigbuf, "SIG%s", abbrev ? abbrev : "UNKNOWN");
        signame = sigbuf;
    }
    const char *status = stopped ? "stopped" : has_code ? "exited" : "crashed";
    struct event ev = event_init(s->key, EV_PROCESS_EXIT, 0); /* stamped when pushed */
    ev.pid = s->pid;
    ev.tid = s->pid;
    ev.text = text;
    ev.data = data;
    output_push(o, &ev);
    store_sync_session(sessions.store, s->key, -1);
    int rc = store_session_finish(sessions.store, s->key, status, session_wall_ms(), has_code,
                                  code, signame);
    if (rc > 0)
        log_warn("session %s: the database refused its end; it is kept and shown, and "
                 "written once the database takes it", s->id);
    else if (rc < 0)
        log_error("session %s: cannot record its end: out of memory", s->id);
    atomic_store(&s->finished, 1);
    polls_end_session(s->id, false); /* nothing left to sample */
    log_info("session %s: %s", s->id, text);
    if (s->tap_ended)
        s->tap_ended(s->tap_arg, ws);
}

/* Before a crash is stamped: what the program wrote before it is read first. A
 * program can crash before its output capture has started (the launch starts it
 * once the target runs): then it is waited for. The bounds only matter when the
 * daemon is starved (valgrind runs it 20-50x slower). */
static void settle_output(void *arg)
{
    struct session *s = arg;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&s->exit_lock);
    while (!s->output && !s->output_failed &&
           pthread_cond_timedwait(&s->output_ready, &s->exit_lock, &until) == 0)
        ;
    struct output *o = s->output;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_settle(o, 5000);
}

/* The output capture, once it has started (NULL before). */
static struct output *current_output(struct session *s)
{
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    pthread_mutex_unlock(&s->exit_lock);
    return o;
}

/* At a trap, before its event is stamped: what the program wrote by then is read
 * first (core/output.h). Nothing before the capture has started. */
static void drain_output(void *arg)
{
    struct output *o = current_output(arg);
    if (o)
        output_drain_now(o);
}

/* Writes followed by the collector (core/output.h, "Followed writes"). One that
 * starts before the capture does is passed on by session_output_start. */
static void output_follow_cb(void *arg)
{
    struct session *s = arg;
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    if (!o)
        s->follow_output = true;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_follow(o);
}

/* A followed write told before the capture started (the program runs from its
 * entry point, where staged patterns are armed, while the launch finishes): its
 * bytes wait in the pipe, and the write is told once the capture reads it. */
struct early_write {
    int stream;
    size_t plen, n;
    int64_t ts_ns;
    char prefix[32];
};
#define EARLY_MAX 4096 /* writes kept; later ones' bytes take their read time */

static void keep_early(struct session *s, int stream, const char *prefix, size_t plen, size_t n,
                       int64_t ts_ns)
{
    if (s->n_early == s->cap_early) {
        size_t cap = s->cap_early ? 2 * s->cap_early : 64;
        struct early_write *e = cap <= EARLY_MAX ? realloc(s->early, cap * sizeof *e) : NULL;
        if (!e)
            return;
        s->early = e;
        s->cap_early = cap;
    }
    struct early_write *w = &s->early[s->n_early++];
    *w = (struct early_write){.stream = stream, .plen = plen < sizeof w->prefix ? plen : 0,
                              .n = n, .ts_ns = ts_ns};
    memcpy(w->prefix, prefix, w->plen);
}

static void output_wrote_cb(void *arg, int stream, const char *prefix, size_t plen, size_t n,
                            int64_t ts_ns)
{
    struct session *s = arg;
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    if (!o && !s->output_failed)
        keep_early(s, stream, prefix, plen, n, ts_ns);
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_wrote(o, stream, prefix, plen, n, ts_ns);
}

static void output_settled_cb(void *arg, int64_t floor_ns, bool writing)
{
    struct output *o = current_output(arg);
    if (o)
        output_settled(o, floor_ns, writing);
}

static void on_paused(void *arg)
{
    struct session *s = arg;
    debug_state_notify(s->debug);
}

static void on_main_exit(void *arg, int wait_status)
{
    struct session *s = arg;
    debug_state_exited(s->debug, wait_status);
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    s->exited = true;
    s->exit_status = wait_status;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_exited(o, wait_status);
}

struct collector_events session_collector_events(struct session *s)
{
    return (struct collector_events){.main_exit = on_main_exit,
                                     .settle_output = settle_output,
                                     .drain_output = s->order_output ? drain_output : NULL,
                                     .output_follow = output_follow_cb,
                                     .output_wrote = output_wrote_cb,
                                     .output_settled = output_settled_cb,
                                     .paused = on_paused, .adopt = session_adopt,
                                     .arg = s};
}

/* Starts the output capture of a launched target; 0 or -1. */
int session_output_start(struct session *s)
{
    struct output_config cfg = {
        .out_fd = s->out_fd, .err_fd = s->err_fd, .store = sessions.store,
        .sink = {.session_key = s->key, .t0_ns = s->t0_ns, .ring = s->ring,
                 .wake = store_wake, .wake_arg = sessions.store},
        .pid = s->pid,
        .cap_bytes = s->output_cap, .on_exit = record_exit, .arg = s,
        .tap = s->tap, .tap_arg = s->tap_arg,
    };
    pthread_mutex_lock(&s->exit_lock);
    cfg.follow = s->follow_output;
    pthread_mutex_unlock(&s->exit_lock);
    struct output *o = output_start(&cfg);
    if (!o) {
        pthread_mutex_lock(&s->exit_lock);
        s->output_failed = true;
        pthread_cond_broadcast(&s->output_ready);
        pthread_mutex_unlock(&s->exit_lock);
        return -1;
    }
    s->out_fd = s->err_fd = -1;
    s->ring = NULL;
    /* The writes told before are told to the capture before the others see it:
     * each finds its bytes in the order they were written. */
    bool exited;
    for (;;) {
        pthread_mutex_lock(&s->exit_lock);
        struct early_write *early = s->early;
        size_t n_early = s->n_early;
        s->early = NULL;
        s->n_early = s->cap_early = 0;
        bool follow = s->follow_output && !cfg.follow;
        cfg.follow |= follow;
        if (!n_early && !follow) {
            s->output = o;
            pthread_cond_broadcast(&s->output_ready);
            exited = s->exited;
            pthread_mutex_unlock(&s->exit_lock);
            break;
        }
        pthread_mutex_unlock(&s->exit_lock);
        if (follow) /* followed since the capture started */
            output_follow(o);
        for (size_t i = 0; i < n_early; i++)
            output_wrote(o, early[i].stream, early[i].prefix, early[i].plen, early[i].n,
                         early[i].ts_ns);
        free(early);
    }
    if (exited) /* a program that ended at once */
        output_exited(o, s->exit_status);
    return 0;
}
