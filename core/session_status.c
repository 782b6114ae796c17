/*
 * session_status.c - what only the live sessions know of a session's report
 * (session.h): whether its output went over the cap (the rest of its status is read
 * from the database by core/timeline.c), and the exact calls of its traced functions,
 * from its collector while the target is held, else as stored when it was let go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/output.h"
#include "core/session_internal.h"

bool session_output_capped(const char *id)
{
    pthread_mutex_lock(&sessions.lock);
    struct session *s = session_find_live(id);
    bool capped = s && s->output && output_capped(s->output);
    pthread_mutex_unlock(&sessions.lock);
    return capped;
}

/* The counts store_function_calls_save kept for a session that is not live. */
static int stored_counts(const char *id, struct collector_counts *out, struct strobe_error *e)
{
    int64_t key;
    struct store_fn_calls *rows = malloc(COUNTS_MAX * sizeof *rows);
    int n = rows && session_resolve(id, &key, e) == 0
                ? store_function_calls_load(sessions.store, key, rows, COUNTS_MAX) : -1;
    for (int i = 0; i < n; i++) {
        struct collector_fn_count *f = &out->fns[i];
        snprintf(f->function, sizeof f->function, "%s", rows[i].function);
        f->calls = (uint64_t)rows[i].calls;
        f->recorded = (uint64_t)rows[i].recorded;
        f->sampled = rows[i].sampled;
        f->sampled_since_ns = rows[i].sampled_since_ns;
        f->exact = !rows[i].lost[0];
        snprintf(f->lost, sizeof f->lost, "%s", rows[i].lost);
        snprintf(f->mode, sizeof f->mode, "%s", "stored");
    }
    free(rows);
    out->n = n > 0 ? (size_t)n : 0;
    out->final = true;
    return n > 0 ? 0 : -1;
}

int session_counts(const char *id, struct collector_counts *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&sessions.lock);
    bool live = session_find_live(id) != NULL;
    pthread_mutex_unlock(&sessions.lock);
    if (!live)
        return stored_counts(id, out, e);
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc = collector_counts(s->collector, s->target, out, e);
    if (rc == 0)
        session_layers_counts(s, out);
    session_release(s);
    return rc;
}
