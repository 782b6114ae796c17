/*
 * order.c - the time order of a session's events: event ids are given in the order
 * of the events' timestamps within each session, although producers push them late
 * and in several rings. Events are read from their rings into their session's heap
 * (oldest timestamp first) and released to the batch (batch.c gives each its id)
 * only up to the session's horizon: the time before which none of the session's
 * producers can push an event any more, as their rings' floors say (base/ring.h,
 * "Time order"). The tracer's floor lags by the fast path's drain (every 5 ms), so
 * a line of output waits in the heap until the calls made before it have been
 * drained, and goes after them.
 *
 * A gather (st_order_gather) reads, for every ring attached, its floor, then
 * everything it holds, then whether its producer is idle: the ring's part of its
 * session's horizon is the floor read first (every event pushed after that read is
 * at least as new), or no limit when the producer is idle and nothing was pushed
 * after the drain (its next event is stamped after everything drained). The
 * session's horizon is the lowest part of its rings (rings attached with no session
 * take part once their first event names it). Equal timestamps keep the order in
 * which the events were read.
 *
 * Bounds: an event is released at the latest HOLD_MAX_NS after it was read, whatever
 * the horizon (a producer that stalls, such as a tracer busy for long or a thread
 * stopped inside the recorder with a record half written, holds the others up that
 * long at most), and the events older than it go with it; an event read after a
 * newer one of its session was released gets the next id, out of time order. A
 * session with PULL_MAX events held is not read further until some are released (its
 * producers then wait on their full rings, as they do when the writer is behind),
 * and its horizon stays what its last full read made it.
 *
 * Barriers: a held event is not committed, so the position it had in its ring is
 * what store_sync_session() may wait for (st_order_held_from).
 */
#include "store/writer_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

#define HOLD_MAX_NS 1000000000LL
#define PULL_MAX 65536

struct held {
    struct event ev;          /* its strings point into the block after it */
    int64_t arrival;          /* the order read: ties of ts_ns keep it */
    int64_t held_at;          /* CLOCK_MONOTONIC when read */
    const struct ring *ring;  /* where it was read, and its position there */
    uint64_t pos;
};

/* ---- the heap of a session ------------------------------------------------------- */

static bool before(const struct held *a, const struct held *b)
{
    return a->ev.ts_ns < b->ev.ts_ns || (a->ev.ts_ns == b->ev.ts_ns && a->arrival < b->arrival);
}

static void sift_up(struct held **hp, int i)
{
    while (i > 0 && before(hp[i], hp[(i - 1) / 2])) {
        struct held *t = hp[i];
        hp[i] = hp[(i - 1) / 2];
        hp[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void sift_down(struct held **hp, int n, int i)
{
    for (;;) {
        int m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(hp[l], hp[m]))
            m = l;
        if (r < n && before(hp[r], hp[m]))
            m = r;
        if (m == i)
            return;
        struct held *t = hp[i];
        hp[i] = hp[m];
        hp[m] = t;
        i = m;
    }
}

/* The string fields of an event, for the copy. */
static const char **field(struct event *e, int i)
{
    const char **f[] = {&e->thread_name, &e->function,  &e->function_raw, &e->source_file,
                        &e->arguments,   &e->return_value, &e->text,        &e->data};
    return i < 8 ? f[i] : NULL;
}

/* A copy of e (the ring's slot is released after it) in ws's heap; -1 when memory
 * runs out. */
static int hold(struct writer *w, struct wsess *ws, const struct event *e,
                const struct ring *ring, uint64_t pos, int64_t now)
{
    struct event ev = *e;
    size_t len[8], total = 0;
    for (int i = 0; field(&ev, i); i++) {
        len[i] = *field(&ev, i) ? strlen(*field(&ev, i)) + 1 : 0;
        total += len[i];
    }
    if (ws->nheld == ws->heap_cap) {
        int ncap = ws->heap_cap ? 2 * ws->heap_cap : 64;
        struct held **n = realloc(ws->heap, (size_t)ncap * sizeof *n);
        if (!n)
            return -1;
        ws->heap = n;
        ws->heap_cap = ncap;
    }
    struct held *h = malloc(sizeof *h + total);
    if (!h)
        return -1;
    char *p = (char *)(h + 1);
    for (int i = 0; field(&ev, i); i++)
        if (len[i]) {
            memcpy(p, *field(&ev, i), len[i]);
            *field(&ev, i) = p;
            p += len[i];
        }
    *h = (struct held){.ev = ev, .arrival = w->arrivals++, .held_at = now, .ring = ring,
                       .pos = pos};
    if (!ws->nheld || now < ws->oldest_held_at)
        ws->oldest_held_at = now;
    ws->heap[ws->nheld++] = h;
    sift_up(ws->heap, ws->nheld - 1);
    return 0;
}

const struct event *st_order_next(const struct wsess *ws)
{
    return ws->nheld && ws->heap[0]->ev.ts_ns <= ws->due ? &ws->heap[0]->ev : NULL;
}

void st_order_pop(struct wsess *ws)
{
    struct held *h = ws->heap[0];
    if (h->ev.ts_ns > ws->released_to)
        ws->released_to = h->ev.ts_ns;
    ws->heap[0] = ws->heap[--ws->nheld];
    sift_down(ws->heap, ws->nheld, 0);
    free(h);
}

void st_order_clear(struct wsess *ws)
{
    for (int i = 0; i < ws->nheld; i++)
        free(ws->heap[i]);
    free(ws->heap);
    ws->heap = NULL;
    ws->nheld = ws->heap_cap = 0;
}

/* ---- gathering ------------------------------------------------------------------- */

/* The first event read from a ring attached without a session names it; recorded in
 * s->rings too, where retention and store_sync_session() look for a session's
 * rings. */
static void note_ring_session(struct store *s, struct ring_slot *rs, int64_t key)
{
    rs->session = key;
    pthread_mutex_lock(&s->lock);
    for (int j = 0; j < s->nrings; j++)
        if (s->rings[j].ring == rs->ring)
            s->rings[j].session = key;
    pthread_mutex_unlock(&s->lock);
}

/* The ring list as producers left it, into w->rs; -1 when memory runs out (the
 * previous list stays). */
static int copy_rings(struct store *s, struct writer *w)
{
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (s->nrings > w->rs_cap) {
        int ncap = 2 * s->nrings;
        struct ring_slot *rs = realloc(w->rs, (size_t)ncap * sizeof *rs);
        int64_t *f = rs ? realloc(w->floor0, (size_t)ncap * sizeof *f) : NULL;
        if (rs)
            w->rs = rs;
        if (f) {
            w->floor0 = f;
            w->rs_cap = ncap;
        }
        rc = f ? 0 : -1;
    }
    if (rc == 0) {
        if (s->nrings)
            memcpy(w->rs, s->rings, (size_t)s->nrings * sizeof *w->rs);
        w->nrs = s->nrings;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Reads ring slot i up to where its producer was when the read began (a producer
 * faster than the writer cannot keep it here), into the heaps of its events'
 * sessions; how many it read. Not while the ring's session holds PULL_MAX events. */
static int64_t pull(struct store *s, struct writer *w, int i, int64_t now)
{
    struct ring_slot *rs = &w->rs[i];
    struct wsess *ws = rs->session ? st_wsess_get(w, rs->session) : NULL;
    if (ws && ws->nheld >= PULL_MAX) {
        ws->partial = true;
        return 0;
    }
    uint64_t end = ring_produced(rs->ring);
    int64_t n = 0;
    struct event e;
    while (ring_consumed(rs->ring) < end && ring_peek(rs->ring, &e)) {
        uint64_t pos = ring_consumed(rs->ring);
        if (!rs->session)
            note_ring_session(s, rs, e.session_key);
        ws = st_wsess_get(w, e.session_key);
        if (!ws || hold(w, ws, &e, rs->ring, pos, now) < 0) {
            st_writer_error(s, "out of memory ordering the events; one is lost");
            st_lost(s, e.session_key, 1);
        }
        ring_pop(rs->ring);
        n++;
    }
    return n;
}

int64_t st_order_gather(struct store *s, struct writer *w)
{
    if (copy_rings(s, w) < 0)
        st_writer_error(s, "out of memory in the writer");
    for (int i = 0; i < w->nrs; i++)
        w->floor0[i] = ring_floor_get(w->rs[i].ring);
    for (int i = 0; i < w->nsess; i++) {
        w->sess[i].cycle_floor = INT64_MAX;
        w->sess[i].partial = false;
    }
    int64_t now = mono_ns(), n = 0;
    for (int i = 0; i < w->nrs; i++)
        n += pull(s, w, i, now);
    for (int i = 0; i < w->nrs; i++) {
        const struct ring_slot *rs = &w->rs[i];
        struct wsess *ws = rs->session ? st_wsess_get(w, rs->session) : NULL;
        if (!ws)
            continue;
        /* idle first: a producer that sets it has published its push before */
        bool idle = rs->released || ring_is_idle(rs->ring);
        int64_t part = idle && ring_produced(rs->ring) == ring_consumed(rs->ring)
                           ? INT64_MAX : w->floor0[i];
        if (part < ws->cycle_floor)
            ws->cycle_floor = part;
    }
    for (int i = 0; i < w->nsess; i++)
        if (!w->sess[i].partial)
            w->sess[i].horizon = w->sess[i].cycle_floor;
    return n;
}

/* ---- releasing ------------------------------------------------------------------- */

/* The newest timestamp among the events ws has held HOLD_MAX_NS or longer (INT64_MIN
 * when none), and the time the oldest of them was read. */
static int64_t expired(struct wsess *ws, int64_t now)
{
    int64_t newest = INT64_MIN, oldest = now;
    for (int i = 0; i < ws->nheld; i++) {
        const struct held *h = ws->heap[i];
        if (now - h->held_at >= HOLD_MAX_NS && h->ev.ts_ns > newest)
            newest = h->ev.ts_ns;
        if (h->held_at < oldest)
            oldest = h->held_at;
    }
    ws->oldest_held_at = oldest;
    return newest;
}

void st_order_due(struct writer *w, int64_t now, bool stop)
{
    for (int i = 0; i < w->nsess; i++) {
        struct wsess *ws = &w->sess[i];
        /* Holding an event older than one released already keeps no order. */
        ws->due = ws->horizon > ws->released_to ? ws->horizon : ws->released_to;
        if (stop)
            ws->due = INT64_MAX;
        else if (ws->nheld && now - ws->oldest_held_at >= HOLD_MAX_NS) {
            int64_t late = expired(ws, now);
            if (late > ws->due)
                ws->due = late;
        }
    }
}

bool st_order_held_from(const struct writer *w, const struct ring *r, uint64_t *pos)
{
    bool any = false;
    for (int i = 0; i < w->nsess; i++)
        for (int j = 0; j < w->sess[i].nheld; j++) {
            const struct held *h = w->sess[i].heap[j];
            if (h->ring == r && (!any || h->pos < *pos)) {
                *pos = h->pos;
                any = true;
            }
        }
    return any;
}
