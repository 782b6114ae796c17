/*
 * session_output.c - a live session's output capture (core/output.h) and what its
 * collector reports about the target (core/collector.h, struct collector_events): the
 * end of the main process recorded as its process_exit event and the session's
 * status, output read before a crash or a trap is stamped, pauses woken.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
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

/* At a trap, before its event is stamped: what the program wrote by then is read
 * first (core/output.h). Nothing before the capture has started. */
static void drain_output(void *arg)
{
    struct session *s = arg;
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_drain_now(o);
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
    pthread_mutex_lock(&s->exit_lock);
    s->output = o;
    pthread_cond_broadcast(&s->output_ready);
    bool exited = s->exited;
    pthread_mutex_unlock(&s->exit_lock);
    if (exited) /* a program that ended at once */
        output_exited(o, s->exit_status);
    return 0;
}
