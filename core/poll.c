/*
 * poll.c - memory polls. See poll.h.
 *
 * Registry: every poll of the daemon is on one list under one lock, which also
 * guards each poll's stop flag; a poll waits for its next sample on its own
 * condition variable (CLOCK_MONOTONIC), so a stop wakes it at once. A poll thread
 * that ended by itself stays on the list, done, until someone joins it: the next
 * poll_start, the end of its session, or the daemon's shutdown.
 */
#include "core/poll.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/ring.h"
#include "base/session_id.h"
#include "core/session.h"
#include "store/store.h"

#define POLL_RING_BYTES (256u << 10)

struct poll {
    int id;
    char session_id[SESSION_ID_MAX];
    int64_t key, t0_ns;
    pid_t pid;                       /* the process read (for the events) */
    pid_t req_pid;                   /* as asked: 0 = the main process */
    struct collector_mem_target targets[MEMORY_MAX_TARGETS];
    char *variables[MEMORY_MAX_TARGETS];
    int n_targets, depth;
    int64_t interval_ns;
    int samples;                     /* to take */
    struct ring *ring;
    struct store *store;
    pthread_t thread;
    pthread_cond_t wake;
    bool stop, done, joining;
    struct poll *next;
};

static struct {
    pthread_mutex_t lock;
    struct poll *list;
    int next_id;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

int poll_expected_samples(int interval_ms, int duration_ms)
{
    if (interval_ms <= 0 || duration_ms <= 0)
        return 1;
    return (duration_ms + interval_ms - 1) / interval_ms;
}

/* ---- the snapshot's shape ------------------------------------------------------ */

/* Appends up to max characters of s, never splitting a UTF-8 sequence; "..." when cut. */
static void put_cut(struct strbuf *sb, const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len <= max) {
        sb_append(sb, s, len);
        return;
    }
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    sb_append(sb, s, cut);
    sb_puts(sb, "...");
}

void poll_snapshot_format(const struct collector_mem_result *r, int n,
                          struct strbuf *data, struct strbuf *text)
{
    sb_puts(data, "{\"values\":{");
    int n_values = 0, n_errors = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].error != ERR_NONE || !r[i].value) {
            n_errors++;
            continue;
        }
        const char *name = r[i].target ? r[i].target : "?";
        if (n_values++)
            sb_puts(data, ",");
        sb_json_string(data, name);
        sb_puts(data, ":");
        if (strlen(r[i].value) > POLL_VALUE_JSON_MAX) {
            char note[96];
            snprintf(note, sizeof note, "<%zu characters of JSON: read it with a one-shot "
                     "read>", strlen(r[i].value));
            sb_json_string(data, note);
        } else {
            sb_puts(data, r[i].value);
        }
        if (text->len < POLL_TEXT_MAX) {
            if (text->len)
                sb_puts(text, " ");
            put_cut(text, name, 80);
            sb_puts(text, "=");
            put_cut(text, r[i].value, 80);
        }
    }
    sb_puts(data, "}");
    if (n_errors) {
        sb_puts(data, ",\"errors\":{");
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (r[i].error == ERR_NONE && r[i].value)
                continue;
            const char *name = r[i].target ? r[i].target : "?";
            char msg[512];
            snprintf(msg, sizeof msg, "%s: %s",
                     err_code_name(r[i].error != ERR_NONE ? r[i].error : ERR_INTERNAL),
                     r[i].error_message ? r[i].error_message : "no value");
            if (k++)
                sb_puts(data, ",");
            sb_json_string(data, name);
            sb_puts(data, ":");
            sb_json_string(data, msg);
            if (text->len < POLL_TEXT_MAX) {
                if (text->len)
                    sb_puts(text, " ");
                put_cut(text, name, 80);
                sb_puts(text, "=<");
                sb_puts(text, err_code_name(r[i].error != ERR_NONE ? r[i].error
                                                                  : ERR_INTERNAL));
                sb_puts(text, ">");
            }
        }
        sb_puts(data, "}");
    }
    sb_puts(data, "}");
    if (text->len > POLL_TEXT_MAX) {
        text->len = POLL_TEXT_MAX;
        while (text->len > 0 && ((unsigned char)text->buf[text->len] & 0xC0) == 0x80)
            text->len--;
        text->buf[text->len] = '\0';
        sb_puts(text, "...");
    }
    if (!text->len)
        sb_puts(text, "(no values)");
}

/* ---- the sampler ------------------------------------------------------------------ */

/* Waits until deadline (CLOCK_MONOTONIC ns) or a stop; true when stopped. */
static bool wait_until(struct poll *p, int64_t deadline)
{
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    pthread_mutex_lock(&reg.lock);
    while (!p->stop && mono_ns() < deadline)
        pthread_cond_timedwait(&p->wake, &reg.lock, &ts);
    bool stop = p->stop;
    pthread_mutex_unlock(&reg.lock);
    return stop;
}

/* One sample: false when the poll must end (session or processes gone). */
static bool sample(struct poll *p)
{
    struct session_target st;
    struct strobe_error e = {0};
    if (session_target_get(p->session_id, &st, &e) != 0)
        return false;
    struct collector_mem_result res[MEMORY_MAX_TARGETS];
    memset(res, 0, sizeof res);
    struct collector_mem_request req = {.pid = p->req_pid, .targets = p->targets,
                                        .n_targets = p->n_targets, .depth = p->depth};
    int rc = collector_memory(st.collector, st.target, &req, res, &e);
    session_target_put(&st);
    if (rc != 0) {
        collector_mem_results_free(res, p->n_targets);
        return false;
    }
    /* Stamped when read; the ring's floor holds from the stamp to the push (the
     * store's time order, base/ring.h). */
    int64_t now = ring_stamp(p->ring, p->t0_ns);
    struct strbuf data = {0}, text = {0};
    poll_snapshot_format(res, p->n_targets, &data, &text);
    struct event ev = event_init(p->key, EV_VARIABLE_SNAPSHOT, now - p->t0_ns);
    ev.pid = p->pid;
    ev.tid = p->pid;
    ev.text = text.oom ? NULL : text.buf;
    ev.data = data.oom ? NULL : data.buf;
    if (ev.data && !ring_push(p->ring, &ev, store_wake, p->store))
        log_warn("poll %d: a snapshot of %zu bytes does not fit its ring", p->id, data.len);
    ring_idle(p->ring);
    sb_free(&data);
    sb_free(&text);
    collector_mem_results_free(res, p->n_targets);
    return true;
}

static void *poll_main(void *arg)
{
    struct poll *p = arg;
    int64_t start = mono_ns();
    int taken = 0;
    for (int k = 0; k < p->samples; k++) {
        if (wait_until(p, start + k * p->interval_ns))
            break;
        if (!sample(p))
            break;
        taken++;
    }
    store_release_ring(p->store, p->ring);
    p->ring = NULL;
    log_info("poll %d of session %s: ended after %d sample(s)", p->id, p->session_id, taken);
    pthread_mutex_lock(&reg.lock);
    p->done = true;
    pthread_mutex_unlock(&reg.lock);
    return NULL;
}

static void poll_free(struct poll *p)
{
    for (int i = 0; i < p->n_targets; i++)
        free(p->variables[i]);
    pthread_cond_destroy(&p->wake);
    free(p);
}

/* Unlinks the polls matching (session_id, or all when NULL; only finished ones when
 * done_only) after telling them to stop, and joins and frees them. */
static void reap(const char *session_id, bool done_only)
{
    struct poll *joined = NULL;
    pthread_mutex_lock(&reg.lock);
    for (struct poll **pp = &reg.list; *pp;) {
        struct poll *p = *pp;
        bool match = !session_id || strcmp(p->session_id, session_id) == 0;
        if (!match || (done_only && !p->done) || p->joining) {
            pp = &p->next;
            continue;
        }
        p->stop = true;
        p->joining = true;
        pthread_cond_signal(&p->wake);
        *pp = p->next;
        p->next = joined;
        joined = p;
    }
    pthread_mutex_unlock(&reg.lock);
    while (joined) {
        struct poll *p = joined;
        joined = p->next;
        pthread_join(p->thread, NULL);
        poll_free(p);
    }
}

void polls_end_session(const char *session_id, bool join)
{
    if (join) {
        reap(session_id, false);
        return;
    }
    pthread_mutex_lock(&reg.lock);
    for (struct poll *p = reg.list; p; p = p->next)
        if (strcmp(p->session_id, session_id) == 0) {
            p->stop = true;
            pthread_cond_signal(&p->wake);
        }
    pthread_mutex_unlock(&reg.lock);
}

int polls_running(const char *session_id)
{
    int n = 0;
    pthread_mutex_lock(&reg.lock);
    for (struct poll *p = reg.list; p; p = p->next)
        n += !p->done && !p->stop && strcmp(p->session_id, session_id) == 0;
    pthread_mutex_unlock(&reg.lock);
    return n;
}

void polls_shutdown(void)
{
    reap(NULL, false);
}

void poll_started_free(struct poll_started *p)
{
    collector_mem_results_free(p->results, p->n_results);
    p->n_results = 0;
}

static struct poll *poll_new(const char *session_id, const struct poll_request *req,
                             const struct poll_started *first)
{
    struct poll *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->wake, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(p->session_id, sizeof p->session_id, "%s", session_id);
    p->req_pid = req->pid;
    p->depth = req->depth;
    p->interval_ns = (int64_t)req->interval_ms * 1000000;
    p->samples = poll_expected_samples(req->interval_ms, req->duration_ms);
    for (int i = 0; i < req->n_targets; i++) {
        if (first->results[i].error != ERR_NONE)
            continue; /* answered up front; not sampled */
        struct collector_mem_target *t = &p->targets[p->n_targets];
        *t = req->targets[i];
        if (req->targets[i].variable) {
            p->variables[p->n_targets] = strdup(req->targets[i].variable);
            if (!p->variables[p->n_targets]) {
                poll_free(p);
                return NULL;
            }
            t->variable = p->variables[p->n_targets];
        }
        p->n_targets++;
    }
    return p;
}

int poll_start(const char *session_id, const struct poll_request *req,
               struct poll_started *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    reap(NULL, true);
    if (req->n_targets < 1 || req->n_targets > MEMORY_MAX_TARGETS)
        return err_set(e, ERR_LIMIT_EXCEEDED, "A poll reads 1 to %d targets, not %d.",
                       MEMORY_MAX_TARGETS, req->n_targets);
    struct session_target st;
    if (session_target_get(session_id, &st, e) != 0)
        return -1;
    int rc = -1;
    struct poll *p = NULL;
    if (polls_running(session_id) >= POLL_MAX_PER_SESSION) {
        err_set(e, ERR_LIMIT_EXCEEDED, "Session '%s' already runs %d polls, the most at "
                "once; one ends when its duration has passed.", session_id,
                POLL_MAX_PER_SESSION);
        goto out;
    }
    struct collector_mem_request mr = {.pid = req->pid, .targets = req->targets,
                                       .n_targets = req->n_targets, .depth = req->depth};
    if (collector_memory(st.collector, st.target, &mr, out->results, e) != 0)
        goto out;
    out->n_results = req->n_targets;
    for (int i = 0; i < req->n_targets; i++)
        out->n_polled += out->results[i].error == ERR_NONE;
    if (out->n_polled == 0) {
        const struct collector_mem_result *r0 = &out->results[0];
        err_set(e, r0->error != ERR_NONE ? r0->error : ERR_INTERNAL,
                "No target can be read, so no poll was started. %.200s: %.250s",
                r0->target ? r0->target : "?",
                r0->error_message ? r0->error_message : "no value");
        goto out;
    }
    p = poll_new(session_id, req, out);
    if (!p || !(p->ring = ring_create(POLL_RING_BYTES))) {
        err_set(e, ERR_INTERNAL, "out of memory starting a poll");
        goto out;
    }
    p->key = st.key;
    p->t0_ns = st.t0_ns;
    p->pid = req->pid ? req->pid : st.pid;
    p->store = sessions_store();
    out->expected_samples = p->samples;
    store_attach_ring(p->store, p->ring, p->key);
    pthread_mutex_lock(&reg.lock);
    int running = 0;
    for (struct poll *o = reg.list; o; o = o->next)
        running += !o->done && !o->stop && strcmp(o->session_id, session_id) == 0;
    if (running >= POLL_MAX_PER_SESSION) { /* another request started one meanwhile */
        pthread_mutex_unlock(&reg.lock);
        store_release_ring(p->store, p->ring);
        p->ring = NULL;
        err_set(e, ERR_LIMIT_EXCEEDED, "Session '%s' already runs %d polls, the most at "
                "once.", session_id, POLL_MAX_PER_SESSION);
        goto out;
    }
    p->id = reg.next_id++;
    out->poll_id = p->id;
    if (pthread_create(&p->thread, NULL, poll_main, p) != 0) {
        pthread_mutex_unlock(&reg.lock);
        store_release_ring(p->store, p->ring);
        p->ring = NULL;
        err_set(e, ERR_INTERNAL, "cannot start the poll's thread");
        goto out;
    }
    p->next = reg.list;
    reg.list = p;
    pthread_mutex_unlock(&reg.lock);
    log_info("poll %d of session %s: %d target(s) every %d ms for %d ms", p->id,
             session_id, p->n_targets, req->interval_ms, req->duration_ms);
    p = NULL;
    rc = 0;
out:
    if (p) {
        ring_destroy(p->ring);
        poll_free(p);
    }
    session_target_put(&st);
    return rc;
}
