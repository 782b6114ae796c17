/*
 * session_end.c - the end of sessions: stop (with or without its data), delete, the
 * daemon's shutdown, and the teardown of a live session (its traced functions' calls
 * saved, its target killed and joined, its output capture stopped, its memory freed).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/ring.h"
#include "core/debug.h"
#include "core/output.h"
#include "core/poll.h"
#include "core/session_internal.h"

void session_free(struct session *s)
{
    if (s->out_fd >= 0)
        close(s->out_fd);
    if (s->err_fd >= 0)
        close(s->err_fd);
    if (s->ring && s->ring_attached)
        store_release_ring(sessions.store, s->ring);
    else
        ring_destroy(s->ring);
    if (s->collector_ring && s->ring_attached)
        store_release_ring(sessions.store, s->collector_ring);
    else
        ring_destroy(s->collector_ring);
    pthread_mutex_destroy(&s->exit_lock);
    pthread_cond_destroy(&s->output_ready);
    debug_state_end(s->debug);
    free(s->binary_path);
    free(s->project_root);
    free(s->early);
    pthread_mutex_destroy(&s->layers_lock);
    session_joint_free(s->joint);
    for (int i = 0; i < s->n_runtime_bps; i++)
        collector_breakpoint_release(&s->runtime_bps[i]);
    free(s);
}

/* The exact calls of s's traced functions go to the store before its tracer goes:
 * status after a stop with retain, or from a later daemon, still shows them. */
static void save_counts(struct session *s)
{
    struct collector_counts *c = malloc(sizeof *c);
    struct store_fn_calls *rows = c ? malloc(COUNTS_MAX * sizeof *rows) : NULL;
    if (rows && collector_counts(s->collector, s->target, c, NULL) == 0)
        session_layers_counts(s, c);
    if (rows && c->n > 0) {
        for (size_t i = 0; i < c->n; i++) {
            const struct collector_fn_count *f = &c->fns[i];
            rows[i] = (struct store_fn_calls){.calls = (int64_t)f->calls,
                                              .recorded = (int64_t)f->recorded,
                                              .sampled_since_ns = f->sampled_since_ns,
                                              .sampled = f->sampled};
            snprintf(rows[i].function, sizeof rows[i].function, "%s", f->function);
            snprintf(rows[i].lost, sizeof rows[i].lost, "%s", f->exact ? "" : f->lost);
        }
        if (store_function_calls_save(sessions.store, s->key, rows, (int)c->n) != 0)
            log_error("session %s: cannot store its functions' call counts", s->id);
    }
    free(rows);
    free(c);
}

/* Ends a live session's process and threads; s is unlinked and freed. Called
 * with sessions.lock held. */
static void end_live(struct session *s)
{
    save_counts(s);
    atomic_store(&s->stop_requested, 1);
    collector_kill(s->collector, s->target);
    session_layers_kill(s);
    while (s->users > 0) /* a trace update finishes: the dead target ends its wait */
        pthread_cond_wait(&sessions.unused, &sessions.lock);
    /* The collector is done once every process is gone, after reporting the main
     * one's end to the output capture, which records it before stopping. */
    collector_join(s->collector, s->target);
    session_layers_join(s);
    s->target = NULL;
    if (s->output)
        output_stop(s->output);
    for (struct session **p = &sessions.live; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    session_free(s);
}

static int stop_or_delete(const char *id, bool retain, int64_t *events,
                          struct strobe_error *e)
{
    polls_end_session(id, true); /* before sessions.lock: a sample may be waiting for it */
    pthread_mutex_lock(&sessions.lock);
    struct session *s = session_find_live(id);
    bool was_live = s != NULL;
    if (s)
        end_live(s);
    pthread_mutex_unlock(&sessions.lock);
    polls_end_session(id, true); /* one started meanwhile has found the session gone */
    struct session_row row;
    int rc = store_session_get(sessions.store, id, &row);
    if (rc == 0) { /* its last events in, then the row again for their count */
        int64_t key = row.key;
        session_row_free(&row);
        store_sync_session(sessions.store, key, -1);
        rc = store_session_get(sessions.store, id, &row);
    }
    if (rc < 0)
        return err_set(e, ERR_INTERNAL, "cannot read session '%s' from the database", id);
    if (rc == 1)
        return session_not_found(id, e);
    pid_t orphan = was_live ? 0 : session_orphan_pid(&row);
    if (orphan && session_orphan_kill(id, orphan, e) != 0) {
        session_row_free(&row);
        return -1;
    }
    if (events)
        *events = row.event_count;
    struct strobe_error why = {.msg = "?"}; /* store_session_set_retained tells none */
    if (retain)
        rc = store_session_set_retained(sessions.store, row.key, true);
    else
        rc = store_session_delete(sessions.store, row.key, &why);
    session_row_free(&row);
    if (rc != 0)
        return err_set(e, why.code == ERR_STORE_FULL ? ERR_STORE_FULL : ERR_INTERNAL,
                       "cannot update session '%s': %s", id, why.msg);
    log_info("session %s: %s", id, retain ? "stopped, data retained" : "deleted");
    return 0;
}

int session_stop(const char *id, bool retain, int64_t *events_collected,
                 struct strobe_error *e)
{
    return stop_or_delete(id, retain, events_collected, e);
}

int session_delete(const char *id, struct strobe_error *e)
{
    return stop_or_delete(id, false, NULL, e);
}

void sessions_shutdown(void)
{
    pthread_mutex_lock(&sessions.lock);
    while (sessions.live)
        end_live(sessions.live);
    pthread_mutex_unlock(&sessions.lock);
}
