/*
 * session.c - the session registry: the live sessions, their lookup, and the requests
 * that reach a live session's collector (targets held, trace changes, stacks). See
 * session.h; the launch is session_launch.c, the output capture session_output.c, the
 * end session_end.c, output cap and call counts session_status.c (session_internal.h).
 *
 * A session's program is driven by a collector (core/collector.h), chosen per
 * program with collector_for() and reached only through its method table: this
 * module knows no tracer, no DWARF and no pattern resolution. The patterns in force
 * belong to the collector (it reads them on its own thread at entry points and
 * execs); the engine keeps the syntax checks and the pending set (core/patterns.h).
 *
 * Ordering guarantee: a session's status leaves "running" only in the output
 * capture's on_exit (core/output.h), after everything the main process wrote is
 * queued and the process_exit event behind it. Together with store_sync_session() in
 * session_resolve(), an agent that sees "exited" and then queries sees all output.
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "core/session_internal.h"

struct session_registry sessions = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                    .unused = PTHREAD_COND_INITIALIZER};

int64_t session_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sessions_init(struct store *store, const char *global_settings_path)
{
    sessions.store = store;
    sessions.global_settings = global_settings_path;
}

void sessions_settings(const char *project_root, struct settings *out)
{
    settings_load(out, sessions.global_settings, project_root);
}

struct session *session_find_live(const char *id)
{
    for (struct session *s = sessions.live; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

int session_not_found(const char *id, struct strobe_error *e)
{
    return err_set(e, ERR_SESSION_NOT_FOUND, "No session found with ID '%s'.", id);
}

/* How long a query or status waits for its session's events still on their way to
 * the database; past it the answer shows what is there (a flood of one session
 * never holds up another's answers: store_sync_session). */
#define RESOLVE_SYNC_MS 2000

int session_resolve(const char *id, int64_t *key, struct strobe_error *e)
{
    struct session_row row;
    int rc = store_session_get(sessions.store, id, &row);
    if (rc < 0)
        return err_set(e, ERR_INTERNAL, "cannot read session '%s' from the database", id);
    if (rc == 1)
        return session_not_found(id, e);
    *key = row.key;
    session_row_free(&row);
    store_sync_session(sessions.store, *key, RESOLVE_SYNC_MS);
    return 0;
}

struct session *session_acquire(const char *id, struct strobe_error *e)
{
    pthread_mutex_lock(&sessions.lock);
    struct session *s = session_find_live(id);
    if (s)
        s->users++;
    pthread_mutex_unlock(&sessions.lock);
    if (s)
        return s;
    int64_t key;
    if (session_resolve(id, &key, e) == 0)
        err_set(e, ERR_PROCESS_EXITED, "Session '%s' has no running process (it ended or "
                "was started by an earlier daemon).", id);
    return NULL;
}

void session_release(struct session *s)
{
    pthread_mutex_lock(&sessions.lock);
    if (--s->users == 0)
        pthread_cond_broadcast(&sessions.unused);
    pthread_mutex_unlock(&sessions.lock);
}

static int process_exited(const char *id, struct strobe_error *e)
{
    return err_set(e, ERR_PROCESS_EXITED, "Target process of session '%s' has exited.", id);
}

/* The target of live session id, with or without its processes (ended). */
static int target_get(const char *id, bool ended, struct session_target *out,
                      struct strobe_error *e)
{
    *out = (struct session_target){0};
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    if (!ended && atomic_load(&s->finished)) {
        session_release(s);
        return process_exited(id, e);
    }
    /* the joint once a runtime runs, or from the start for a process collector that
     * can stop threads (a runtime's breakpoint waits in it until one runs); one that
     * cannot says so itself */
    pthread_mutex_lock(&s->layers_lock);
    bool joint = s->joint && (s->n_layers > 0 || collector_stops_check(s->collector, NULL) == 0);
    pthread_mutex_unlock(&s->layers_lock);
    *out = (struct session_target){.collector = joint ? s->joint_methods : s->collector,
                                   .target = joint ? s->joint : s->target,
                                   .key = s->key, .t0_ns = s->t0_ns, .session = s,
                                   .pid = s->pid, .debug = s->debug};
    return 0;
}

int session_target_get(const char *id, struct session_target *out, struct strobe_error *e)
{
    return target_get(id, false, out, e);
}

int session_target_get_ended(const char *id, struct session_target *out,
                             struct strobe_error *e)
{
    return target_get(id, true, out, e);
}

void session_target_put(struct session_target *st)
{
    if (st->session)
        session_release(st->session);
    *st = (struct session_target){0};
}

struct store *sessions_store(void)
{
    return sessions.store;
}

int session_trace(const char *id, const char *const *add, int n_add,
                  const char *const *remove, int n_remove, int depth,
                  struct trace_result *res, struct strobe_error *e)
{
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc;
    if (atomic_load(&s->finished)) {
        collector_describe(s->collector, s->target, res);
        session_layers_trace(s, false, NULL, 0, NULL, 0, 0, res);
        rc = process_exited(id, e);
    } else {
        rc = collector_set_patterns(s->collector, s->target, add, n_add, remove, n_remove,
                                    depth, res, e);
        if (rc == 0) {
            const char *now[PATTERNS_MAX];
            for (int i = 0; i < res->n_patterns; i++)
                now[i] = res->patterns[i];
            session_layers_remember(s, now, res->n_patterns, res->depth);
            session_layers_trace(s, true, add, n_add, remove, n_remove, depth, res);
        }
    }
    session_release(s);
    return rc;
}

int session_trace_mode(const char *id, bool fast, struct strobe_error *e)
{
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc = atomic_load(&s->finished) ? process_exited(id, e)
                                       : collector_trace_mode(s->collector, s->target, fast, e);
    session_release(s);
    return rc;
}

int session_trace_describe(const char *id, struct trace_result *res, struct strobe_error *e)
{
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    collector_describe(s->collector, s->target, res);
    session_layers_trace(s, false, NULL, 0, NULL, 0, 0, res);
    session_release(s);
    return 0;
}

int session_stacks(const char *id, const struct collector_stacks_request *req,
                   struct collector_stacks *out, struct strobe_error *e)
{
    *out = (struct collector_stacks){0};
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc = atomic_load(&s->finished) ? process_exited(id, e)
                                       : collector_stacks(s->collector, s->target, req, out, e);
    if (rc == 0)
        session_layers_stacks(s, req, out);
    if (rc == 0 && !out->diagnosis)
        collector_stacks_diagnose(out);
    else if (rc != 0)
        collector_stacks_free(out);
    session_release(s);
    return rc;
}

int sessions_running(void)
{
    int n = 0;
    pthread_mutex_lock(&sessions.lock);
    for (struct session *s = sessions.live; s; s = s->next)
        n += !atomic_load(&s->finished);
    pthread_mutex_unlock(&sessions.lock);
    return n;
}

bool session_key_in_use(void *arg, int64_t key)
{
    (void)arg;
    pthread_mutex_lock(&sessions.lock);
    bool traced = false;
    for (struct session *s = sessions.live; s; s = s->next)
        if (s->key == key) {
            traced = s->target && !collector_finished(s->collector, s->target);
            break;
        }
    pthread_mutex_unlock(&sessions.lock);
    return traced;
}
