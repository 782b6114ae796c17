/*
 * order.c - the time order of a session's events: event ids are given in the order
 * of the events' timestamps within each session, although producers push them late
 * and in several rings. Events are read from their rings into their session's held
 * events and released to the batch (batch.c gives each its id), oldest first, only
 * up to the session's horizon: the time before which none of the session's
 * producers can push an event any more, as their rings' floors say (base/ring.h,
 * "Time order"). The tracer's floor lags by the fast path's drain (every 5 ms), so
 * a line of output waits until the calls made before it have been drained, and goes
 * after them.
 *
 * A gather (st_order_gather) reads every ring attached, then asks each whether its
 * producer is idle, and its floor: the ring's part of its session's horizon is no
 * limit when the producer is idle and nothing was pushed since the read (its next
 * event is stamped after everything read), else the floor (every event pushed after
 * that is at least as new), or, when events were pushed since or left unread, the
 * floor the oldest of them was pushed with (base/ring.h, ring_head_floor). The
 * session's horizon is the lowest part of its rings (rings attached with no session
 * take part once their first event names it). Equal timestamps keep the order in
 * which the events were read.
 *
 * Held events are kept in runs, each sorted by time and read from one ring: most
 * rings give their events in time order (one run each), the tracer's almost (a
 * logpoint's event comes before the fast path's older calls drained after it; each
 * process's records come in a drain of their own). An event a little older than the
 * last of its ring's latest run is inserted there (at most INSERT_MAX places back),
 * one older still opens a run of its own, and a release takes the oldest first
 * event of the session's runs: a few runs, so no heap over thousands of events.
 * The lowest position in its ring of the events a run holds is what
 * store_sync_session() waits for (st_order_held_from): its first event's, unless an
 * insertion put events read later before events read earlier (then the run is
 * searched).
 *
 * Bounds: an event waits for the horizon HOLD_MAX_NS after it was read at most (a
 * producer that stalls, such as a tracer busy for long or a thread stopped inside
 * the recorder with a record half written, holds the others up that long at most):
 * then it goes, the older ones with it; an event read after a newer one of its
 * session was released gets the next id, out of time order. Events that wait for
 * the writer only (it is behind) are not concerned. A session with PULL_MAX events
 * held is read no further while some are due; when none is, only the rings that hold
 * its horizon back are read: the others fill and their producers wait, as when the
 * writer is behind.
 */
#include "store/writer_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

/* The longest an event waits for a producer that does not catch up: longer than the
 * tracer takes between two drains even under valgrind, shorter than the 2 s a query
 * waits for its session's events (core/session.c), so a stalled producer delays the
 * events it holds back rather than hiding them from the answers. */
#define HOLD_MAX_NS 1000000000LL
/* A session's rings are read no further beyond this many events held (tens of MB):
 * they then fill and their producers wait, as when the writer is behind. */
#define PULL_MAX 65536
/* How far back in its ring's latest run an event out of order is inserted. */
#define INSERT_MAX 16

/* Held events are cut from chunks of CHUNK_BYTES, a chunk freed when the last of
 * its events is released (events go out almost in the order they came in): one
 * malloc per few hundred events instead of one each. A larger event has a block of
 * its own. */
#define CHUNK_BYTES (64u << 10)

struct chunk {
    int live;                 /* its events not released yet */
    size_t used;
    _Alignas(8) char data[];
};

struct held {
    struct event ev;          /* its strings point into the block after it */
    int64_t arrival;          /* the order read: ties of ts_ns keep it */
    int64_t held_at;          /* CLOCK_MONOTONIC when read */
    uint64_t pos;             /* its position in its ring */
    struct chunk *chunk;      /* where it was cut from, or NULL: a block of its own */
};

struct run {
    const struct ring *ring;  /* where its events were read */
    int64_t opened;           /* a ring's latest run (highest) takes its next events */
    struct held **ev;         /* ev[head..n): oldest first */
    int head, n, cap;
    bool shuffled;            /* not in the order read since it was last empty */
};

/* ---- the runs of a session ------------------------------------------------------- */

static bool before(const struct held *a, const struct held *b)
{
    return a->ev.ts_ns < b->ev.ts_ns || (a->ev.ts_ns == b->ev.ts_ns && a->arrival < b->arrival);
}

/* size bytes for a held event of ws (h->chunk still to be set); NULL when memory
 * runs out. */
static struct held *alloc_held(struct wsess *ws, size_t size, struct chunk **from)
{
    size = (size + 7) & ~(size_t)7;
    *from = NULL;
    if (size > CHUNK_BYTES / 4)
        return malloc(size);
    struct chunk *c = ws->chunk;
    if (!c || c->used + size > CHUNK_BYTES) {
        if (c && c->live == 0) {
            c->used = 0; /* all released: cut from it again */
        } else {
            if (!(c = malloc(sizeof *c + CHUNK_BYTES)))
                return NULL;
            *c = (struct chunk){0};
            ws->chunk = c; /* the previous one goes with its last event */
        }
    }
    struct held *h = (struct held *)(c->data + c->used);
    c->used += size;
    c->live++;
    *from = c;
    return h;
}

static void free_held(struct wsess *ws, struct held *h)
{
    struct chunk *c = h->chunk;
    if (!c)
        free(h);
    else if (--c->live == 0 && c != ws->chunk)
        free(c);
}

/* A copy of e in one block with its strings (they point into the ring, whose slot
 * is released once the event is read); NULL when memory runs out. */
static struct held *copy_event(struct wsess *ws, const struct event *e)
{
    struct event ev = *e;
    size_t len[EVENT_STRINGS], total = 0;
    for (int i = 0; i < EVENT_STRINGS; i++) {
        len[i] = *event_string(&ev, i) ? strlen(*event_string(&ev, i)) + 1 : 0;
        total += len[i];
    }
    struct chunk *from;
    struct held *h = alloc_held(ws, sizeof *h + total, &from);
    if (!h)
        return NULL;
    h->chunk = from;
    char *p = (char *)(h + 1);
    for (int i = 0; i < EVENT_STRINGS; i++)
        if (len[i]) {
            memcpy(p, *event_string(&ev, i), len[i]);
            *event_string(&ev, i) = p;
            p += len[i];
        }
    h->ev = ev;
    return h;
}

/* The latest run of ring in ws, or NULL. */
static struct run *latest_run(struct wsess *ws, const struct ring *ring)
{
    struct run *r = NULL;
    for (int i = 0; i < ws->nruns; i++)
        if (ws->runs[i].ring == ring && (!r || ws->runs[i].opened > r->opened))
            r = &ws->runs[i];
    return r;
}

/* Where h goes in r: its index, or -1 when more than INSERT_MAX of r's events are
 * newer (an event older than all r still holds goes first: older than some r has
 * released, it has lost its place anyway). */
static int place_in(const struct run *r, const struct held *h)
{
    int i = r->n;
    while (i > r->head && r->n - i < INSERT_MAX && before(h, r->ev[i - 1]))
        i--;
    return i > r->head && before(h, r->ev[i - 1]) ? -1 : i;
}

static struct run *open_run(struct writer *w, struct wsess *ws, const struct ring *ring)
{
    if (ws->nruns == ws->runs_cap) {
        int ncap = ws->runs_cap ? 2 * ws->runs_cap : 4;
        struct run *n = realloc(ws->runs, (size_t)ncap * sizeof *n);
        if (!n)
            return NULL;
        ws->runs = n;
        ws->runs_cap = ncap;
    }
    struct run *r = &ws->runs[ws->nruns++];
    *r = (struct run){.ring = ring, .opened = ++w->runs_opened};
    return r;
}

/* Holds a copy of e (read from ring at pos) in ws's runs; -1 when memory runs out. */
static int hold(struct writer *w, struct wsess *ws, const struct event *e,
                const struct ring *ring, uint64_t pos, int64_t now)
{
    struct held *h = copy_event(ws, e);
    if (!h)
        return -1;
    h->arrival = w->arrivals++;
    h->held_at = now;
    h->pos = pos;
    struct run *r = latest_run(ws, ring);
    int at = r ? place_in(r, h) : -1;
    if (at < 0 && !(r = open_run(w, ws, ring))) {
        free_held(ws, h);
        return -1;
    }
    if (at < 0)
        at = 0;
    if (r->n == r->cap) {
        if (r->head > 0) { /* what was released goes first */
            memmove(r->ev, r->ev + r->head, (size_t)(r->n - r->head) * sizeof *r->ev);
            r->n -= r->head;
            at -= r->head;
            r->head = 0;
        }
        if (r->n == r->cap) {
            int ncap = r->cap ? 2 * r->cap : 64;
            struct held **n = realloc(r->ev, (size_t)ncap * sizeof *n);
            if (!n) {
                free_held(ws, h);
                return -1;
            }
            r->ev = n;
            r->cap = ncap;
        }
    }
    memmove(r->ev + at + 1, r->ev + at, (size_t)(r->n - at) * sizeof *r->ev);
    r->ev[at] = h;
    r->shuffled |= at < r->n;
    r->n++;
    if (!ws->nheld++ || now < ws->oldest_held_at)
        ws->oldest_held_at = now;
    return 0;
}

/* The oldest event ws holds, its run's index in *run; NULL when none. */
static const struct held *oldest(const struct wsess *ws, int *run)
{
    const struct held *h = NULL;
    for (int i = 0; i < ws->nruns; i++) {
        const struct run *r = &ws->runs[i];
        if (r->head < r->n && (!h || before(r->ev[r->head], h))) {
            h = r->ev[r->head];
            *run = i;
        }
    }
    return h;
}

/* Whether ws's oldest event waits for the horizon (not merely for the writer). */
static bool blocked(const struct wsess *ws)
{
    int run;
    const struct held *h = oldest(ws, &run);
    return h && h->ev.ts_ns > ws->horizon && h->ev.ts_ns > ws->released_to;
}

const struct event *st_order_next(struct wsess *ws)
{
    const struct held *h = oldest(ws, &ws->next_run);
    return h && h->ev.ts_ns <= ws->due ? &h->ev : NULL;
}

void st_order_pop(struct wsess *ws)
{
    struct run *r = &ws->runs[ws->next_run];
    struct held *h = r->ev[r->head++];
    if (h->ev.ts_ns > ws->released_to)
        ws->released_to = h->ev.ts_ns;
    free_held(ws, h);
    ws->nheld--;
    if (r->head < r->n)
        return;
    r->head = r->n = 0;
    r->shuffled = false;
    if (latest_run(ws, r->ring) == r)
        return; /* kept for the ring's next events */
    free(r->ev);
    *r = ws->runs[--ws->nruns];
}

void st_order_clear(struct wsess *ws)
{
    for (int i = 0; i < ws->nruns; i++) {
        for (int j = ws->runs[i].head; j < ws->runs[i].n; j++)
            free_held(ws, ws->runs[i].ev[j]);
        free(ws->runs[i].ev);
    }
    free(ws->runs);
    free(ws->chunk);
    ws->runs = NULL;
    ws->chunk = NULL;
    ws->nruns = ws->runs_cap = ws->nheld = 0;
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
        struct ring_slot *rs = realloc(w->rs, (size_t)(2 * s->nrings) * sizeof *rs);
        if (rs) {
            w->rs = rs;
            w->rs_cap = 2 * s->nrings;
        }
        rc = rs ? 0 : -1;
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
 * faster than the writer cannot keep it here), into its events' sessions; how many
 * it read. While its session holds PULL_MAX events, only when none of them is due
 * and the ring holds the horizon back: reading it is then what lets events go. */
static int64_t pull(struct store *s, struct writer *w, int i, int64_t now)
{
    struct ring_slot *rs = &w->rs[i];
    struct wsess *ws = rs->session ? st_wsess_get(w, rs->session) : NULL;
    if (ws && ws->nheld >= PULL_MAX &&
        (!blocked(ws) || ring_head_floor(rs->ring) > ws->horizon))
        return 0;
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

/* Ring slot i's part of its session's horizon, once read (see the top of the file). */
static int64_t part_of(const struct ring_slot *rs)
{
    /* idle first: a producer that sets it has published its push before */
    bool idle = rs->released || ring_is_idle(rs->ring);
    int64_t floor = ring_floor_get(rs->ring);
    if (ring_produced(rs->ring) != ring_consumed(rs->ring))
        return ring_head_floor(rs->ring); /* pushed since, or left unread */
    return idle ? INT64_MAX : floor;
}

int64_t st_order_gather(struct store *s, struct writer *w)
{
    if (copy_rings(s, w) < 0)
        st_writer_error(s, "out of memory in the writer");
    int64_t now = mono_ns(), n = 0;
    for (int i = 0; i < w->nrs; i++)
        n += pull(s, w, i, now);
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].cycle_floor = INT64_MAX;
    for (int i = 0; i < w->nrs; i++) {
        struct wsess *ws = w->rs[i].session ? st_wsess_get(w, w->rs[i].session) : NULL;
        int64_t part = ws ? part_of(&w->rs[i]) : INT64_MAX;
        if (ws && part < ws->cycle_floor)
            ws->cycle_floor = part;
    }
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].horizon = w->sess[i].cycle_floor;
    return n;
}

/* ---- releasing ------------------------------------------------------------------- */

/* The newest timestamp among the events ws has held HOLD_MAX_NS or longer (INT64_MIN
 * when none), and the time the oldest of them was read. */
static int64_t expired(struct wsess *ws, int64_t now)
{
    int64_t newest = INT64_MIN, oldest = now;
    for (int i = 0; i < ws->nruns; i++)
        for (int j = ws->runs[i].head; j < ws->runs[i].n; j++) {
            const struct held *h = ws->runs[i].ev[j];
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
        else if (now - ws->oldest_held_at >= HOLD_MAX_NS && blocked(ws)) {
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
        for (int j = 0; j < w->sess[i].nruns; j++) {
            const struct run *run = &w->sess[i].runs[j];
            if (run->ring != r)
                continue;
            int end = run->shuffled ? run->n : run->head + 1;
            for (int k = run->head; k < run->n && k < end; k++)
                if (!any || run->ev[k]->pos < *pos) {
                    *pos = run->ev[k]->pos;
                    any = true;
                }
        }
    return any;
}
