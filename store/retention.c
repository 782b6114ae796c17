/*
 * retention.c - store_purge_expired(): which stored sessions the retention policy
 * removes, and in what order. The daemon calls it at start and then periodically
 * (core/daemon.c); the numbers come from the retention.* settings.
 *
 * Candidates are the sessions whose status is not "running" and for which no
 * attached ring has carried events (each ring names its session when attached,
 * store_attach_ring). The status leaves "running" when the main process ends, but its
 * children may live on: while they hold the output pipes, the output ring stays
 * attached, and a tracer ring that has carried function events stays attached until
 * the session is stopped; such a session waits for a later check, so a purge does
 * not leave events behind it. A tracer ring that has carried nothing keeps no
 * session from a purge: the daemon's in_use callback covers it, since a session
 * whose processes it still traces is never a candidate. Retained and
 * merely ended sessions are treated alike: both are data nobody is producing any
 * more.
 *
 * The list is read once, oldest first by started_at, then every session is deleted
 * by st_session_delete() (session.c: the same rows a user's delete removes), one at
 * a time and in chunks, so the writer and the session API keep going meanwhile.
 * Sessions created after the list was read are newer than every candidate and
 * running, so they could not have been picked anyway.
 *
 * Size is store_used_bytes(): the pages in use. The WAL is left out: it is a
 * journal of pages the database already counts, bounded by the writer's
 * checkpoints. After a purge nothing is vacuumed: auto_vacuum is off, so
 * PRAGMA incremental_vacuum would do nothing, and a full VACUUM rewrites the whole
 * file while holding the write lock, which would stall tracing. Freed pages are
 * reused by later events before the file grows again.
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

struct candidate {
    int64_t key;
    char *id;
    int64_t last_ms; /* ended_at, or started_at when it never ended */
    bool done;       /* purged by age, deleted by a user meanwhile, or in use */
};

static void free_candidates(struct candidate *c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i].id);
    free(c);
}

/* Keys of the sessions some ring that has carried events still serves (under
 * s->lock): attached, or released with events not yet committed (a released ring
 * the writer has committed everything of waits for its next pass to be destroyed).
 * A ring names its session from its attachment on; one that never carried an event
 * keeps no session from a purge (see the top of the file). */
static int busy_sessions(struct store *s, int64_t **keys, int *n)
{
    pthread_mutex_lock(&s->lock);
    *n = 0;
    *keys = malloc((s->nrings ? s->nrings : 1) * sizeof **keys);
    if (*keys)
        for (int i = 0; i < s->nrings; i++)
            if (s->rings[i].session && ring_produced(s->rings[i].ring) > 0 &&
                !(s->rings[i].released && s->rings[i].done == ring_produced(s->rings[i].ring)))
                (*keys)[(*n)++] = s->rings[i].session;
    pthread_mutex_unlock(&s->lock);
    return *keys ? 0 : -1;
}

static bool is_busy(const int64_t *keys, int n, int64_t key)
{
    for (int i = 0; i < n; i++)
        if (keys[i] == key)
            return true;
    return false;
}

/* Sessions that are not running and not busy, oldest first by started_at. */
static int list_candidates(struct store *s, struct candidate **out, int *n,
                           struct strobe_error *e)
{
    *out = NULL;
    *n = 0;
    int64_t *busy;
    int nbusy;
    if (busy_sessions(s, &busy, &nbusy) < 0)
        return err_set(e, ERR_INTERNAL, "out of memory listing sessions to purge");
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int ret = -1, cap = 0, rc;
    if (sqlite3_prepare_v2(s->sdb,
                           "SELECT key, id, coalesce(ended_at, started_at) FROM sessions"
                           " WHERE status != 'running' AND deleted = 0 ORDER BY started_at, key",
                           -1, &st, NULL) != SQLITE_OK) {
        st_fail_db(e, s->sdb, "cannot list sessions to purge");
        goto out;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t key = sqlite3_column_int64(st, 0);
        if (is_busy(busy, nbusy, key))
            continue;
        struct candidate *nc = st_grow(*out, *n, &cap, sizeof *nc, 16);
        if (!nc) {
            err_set(e, ERR_INTERNAL, "out of memory listing sessions to purge");
            goto out;
        }
        *out = nc;
        struct candidate *c = &(*out)[*n];
        c->key = key;
        c->done = false;
        c->id = st_strdup((const char *)sqlite3_column_text(st, 1));
        c->last_ms = sqlite3_column_int64(st, 2);
        (*n)++;
        if (!c->id) {
            err_set(e, ERR_INTERNAL, "out of memory listing sessions to purge");
            goto out;
        }
    }
    if (rc != SQLITE_DONE) {
        st_fail_db(e, s->sdb, "cannot list sessions to purge");
        goto out;
    }
    ret = 0;
out:
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    free(busy);
    if (ret < 0) {
        free_candidates(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return ret;
}

/* Deletes c and reports it; 1 purged, 0 already gone (a user deleted it meanwhile),
 * -1 with e set. */
static int purge(struct store *s, struct candidate *c, struct store_purged *p,
                 void (*on_purge)(void *, const struct store_purged *), void *arg,
                 struct strobe_error *e)
{
    int rc = st_session_delete(s, c->key, e);
    if (rc == 1 && on_purge) {
        p->session_id = c->id;
        on_purge(arg, p);
    }
    c->done = true;
    return rc;
}

int store_purge_expired(struct store *s, const struct store_retention *policy,
                        void (*on_purge)(void *arg, const struct store_purged *p),
                        void *arg, struct strobe_error *e)
{
    struct candidate *c;
    int n, purged = 0, rc = 0;
    if (list_candidates(s, &c, &n, e) < 0)
        return -1;
    /* Asked outside the store's locks: the daemon's registry lock is taken by
     * launches that then create sessions in the store. */
    for (int i = 0; i < n && policy->in_use; i++)
        if (policy->in_use(policy->in_use_arg, c[i].key))
            c[i].done = true;
    for (int i = 0; i < n && rc >= 0; i++) {
        if (c[i].done)
            continue;
        int64_t age = policy->now_ms - c[i].last_ms;
        if (age <= policy->max_age_ms)
            continue;
        struct store_purged p = {.by_age = true, .age_ms = age, .used_bytes = -1};
        rc = purge(s, &c[i], &p, on_purge, arg, e);
        purged += rc > 0;
    }
    /* Pages of sessions still being deleted in the background count in the used
     * bytes until the writer is done with them: purging others to make up for them
     * would delete data for space that is coming back anyway. The next run looks. */
    bool deleting = store_deletes_pending(s) > 0;
    for (int i = 0; i < n && rc >= 0 && !deleting; i++) {
        if (c[i].done)
            continue;
        int64_t used = store_used_bytes(s);
        if (used < 0) {
            rc = err_set(e, ERR_INTERNAL, "cannot measure the database");
            break;
        }
        if (used <= policy->max_used_bytes)
            break;
        struct store_purged p = {.by_age = false, .age_ms = policy->now_ms - c[i].last_ms,
                                 .used_bytes = used};
        rc = purge(s, &c[i], &p, on_purge, arg, e);
        purged += rc > 0;
    }
    free_candidates(c, n);
    return rc < 0 ? -1 : purged;
}
