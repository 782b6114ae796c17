/*
 * producers.c - the writer's side facing the rest of the daemon (store.h): rings
 * attached by producers and released when they are done (the writer destroys them
 * once drained), wake-ups, the store_sync() and store_sync_session() barriers (each
 * waits for the rings' done positions, which the writer publishes at its commits:
 * writer.c), and the per-session event caps the writer applies (eviction.c).
 * Everything here works under s->lock.
 */
#include "store/writer_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"

void store_attach_ring(struct store *s, struct ring *r, int64_t session_key)
{
    pthread_mutex_lock(&s->lock);
    if (s->nrings == s->rings_cap) {
        int ncap = s->rings_cap ? s->rings_cap * 2 : 16;
        struct ring_slot *n = realloc(s->rings, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->lock);
            st_writer_error(s, "out of memory attaching a ring; its events are not stored");
            return;
        }
        s->rings = n;
        s->rings_cap = ncap;
    }
    s->rings[s->nrings++] =
        (struct ring_slot){.ring = r, .session = session_key, .done = ring_consumed(r)};
    pthread_mutex_unlock(&s->lock);
}

void store_release_ring(struct store *s, struct ring *r)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nrings; i++)
        if (s->rings[i].ring == r)
            s->rings[i].released = true;
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    pthread_mutex_unlock(&s->lock);
}

void store_wake(void *store)
{
    struct store *s = store;
    pthread_mutex_lock(&s->lock);
    s->wake = true;
    pthread_cond_signal(&s->wake_cond);
    pthread_mutex_unlock(&s->lock);
}

/* Waits until every event pushed before the call into a ring of session key (0: any
 * ring) is committed, or timeout_ms passed (-1: no limit): 0, or 1 on the timeout.
 * A session's rings include those whose owner is not known yet (no event of theirs
 * read so far: they may be the session's, a new one's first events). */
static int wait_done(struct store *s, int64_t key, int timeout_ms)
{
    struct target {
        const struct ring *ring;
        uint64_t pos;
    };
    pthread_mutex_lock(&s->lock);
    struct target *t = s->nrings ? malloc((size_t)s->nrings * sizeof *t) : NULL;
    int n = 0;
    for (int j = 0; t && j < s->nrings; j++) {
        const struct ring_slot *rs = &s->rings[j];
        uint64_t pos = ring_produced(rs->ring);
        if ((!key || rs->session == key || !rs->session) && pos > rs->done)
            t[n++] = (struct target){rs->ring, pos};
    }
    struct timespec until = clock_after_ms(CLOCK_REALTIME, timeout_ms);
    int rc = 0;
    if (n > 0) {
        s->wake = true;
        pthread_cond_signal(&s->wake_cond);
    }
    s->sync_waiters++;
    while (n > 0 && s->thread_started && !s->stop) {
        int pending = 0;
        for (int i = 0; i < n; i++) {
            const struct ring_slot *rs = NULL;
            for (int j = 0; j < s->nrings && !rs; j++)
                if (s->rings[j].ring == t[i].ring)
                    rs = &s->rings[j];
            pending += rs && rs->done < t[i].pos; /* gone: drained and destroyed */
        }
        if (!pending)
            break;
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->sync_cond, &s->lock);
        } else if (pthread_cond_timedwait(&s->sync_cond, &s->lock, &until) == ETIMEDOUT) {
            rc = 1;
            break;
        }
    }
    s->sync_waiters--;
    pthread_mutex_unlock(&s->lock);
    free(t);
    return rc;
}

void store_sync(struct store *s)
{
    wait_done(s, 0, -1);
}

int store_sync_session(struct store *s, int64_t key, int timeout_ms)
{
    return wait_done(s, key, timeout_ms);
}

void store_session_set_limit(struct store *s, int64_t key, int64_t max_events)
{
    if (max_events < 1)
        max_events = 1;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nlimits; i++)
        if (s->limits[i].key == key) {
            s->limits[i].limit = max_events;
            pthread_mutex_unlock(&s->lock);
            return;
        }
    if (s->nlimits == s->limits_cap) {
        int ncap = s->limits_cap ? s->limits_cap * 2 : 16;
        struct limit_entry *n = realloc(s->limits, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
        s->limits = n;
        s->limits_cap = ncap;
    }
    s->limits[s->nlimits++] = (struct limit_entry){key, max_events};
    pthread_mutex_unlock(&s->lock);
}
