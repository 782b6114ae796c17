/*
 * ring.h - single-producer single-consumer byte ring carrying events from a producer
 * thread (output capture, a tracer) to the store's writer thread.
 *
 * The fast path takes no lock and calls no allocator: a push serializes the event
 * into the ring, a peek hands the consumer a struct event whose strings point into
 * the ring until the matching pop. Each producer thread owns its own ring, so the
 * producer side never contends. When the ring is full the producer waits for space
 * (backpressure slows the target down instead of losing its events).
 *
 * Time order: the store gives a session's events their ids in timestamp order
 * (store/order.c), so it must know how old the events a producer has not pushed yet
 * can be. The producer says so through its ring's floor and idle flag:
 *   ring_floor(r, t)  every event pushed from now on has ts_ns >= t. A producer whose
 *                     events come late (the tracer, which drains the fast path's
 *                     records every 5 ms) keeps it at the time up to which it has
 *                     caught up.
 *   ring_idle(r)      every event pushed from now on is stamped after the consumer
 *                     reads this flag: the producer is between events and stamps its
 *                     next one with the clock it reads then. ring_floor() and
 *                     ring_stamp() clear it; a new ring is idle, with no floor.
 *   ring_stamp(r, t0) for a producer that stamps an event and pushes it at once
 *                     (output, memory polls): clears idle, then reads the clock for
 *                     the stamp and makes it the floor; ring_idle() after the push.
 * The consumer reads the flag, then the floor, after it has drained the ring: a
 * floor holds back the events of the ring's session newer than it, an idle ring
 * whose every event was drained holds back none, and one left with events to read
 * holds back those newer than the floor of the oldest of them (ring_head_floor).
 */
#ifndef STROBE_RING_H
#define STROBE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/event.h"

struct ring;

/* capacity is rounded up to a power of two, at least 64 KiB. NULL on ENOMEM. */
struct ring *ring_create(size_t capacity);
void ring_destroy(struct ring *r);

/* The largest serialized event a push accepts (a quarter of the capacity). */
size_t ring_max_record(const struct ring *r);

/* Producer. Copies e. Returns false if it does not fit right now, or never would
 * (size above ring_max_record(): the caller must shorten its strings). */
bool ring_try_push(struct ring *r, const struct event *e);

/* Producer. Pushes, waiting for the consumer to make room if needed; `wake` is
 * called (with `arg`) before each wait so the consumer knows to drain now. Returns
 * false only for a record above ring_max_record(). */
bool ring_push(struct ring *r, const struct event *e, void (*wake)(void *), void *arg);

/* Consumer. Fills *e with a view of the oldest event; false when empty. */
bool ring_peek(struct ring *r, struct event *e);
/* Consumer. Releases the event returned by the last ring_peek(). */
void ring_pop(struct ring *r);

/* Positions in the ring's byte stream, which only grow: how far the producer has
 * pushed, and how far the consumer has popped. Any thread. A consumer that notes
 * ring_consumed() after a pop knows every record before that point is its. */
uint64_t ring_produced(const struct ring *r);
uint64_t ring_consumed(const struct ring *r);

/* Bytes queued: for the consumer's heuristics and for tests. */
size_t ring_used(const struct ring *r);

/* Time order (above). Producer: */
void ring_floor(struct ring *r, int64_t ts_ns);
void ring_idle(struct ring *r);
/* CLOCK_MONOTONIC now, read after the ring's floor is set to it less t0_ns. */
int64_t ring_stamp(struct ring *r, int64_t t0_ns);
/* Consumer: the floor (RING_NO_FLOOR before the first; a lower one than the last is
 * ignored: a promise once made holds), and the flag. */
#define RING_NO_FLOOR INT64_MIN
int64_t ring_floor_get(const struct ring *r);
bool ring_is_idle(const struct ring *r);
/* The floor the producer had when it pushed the oldest event still in the ring (the
 * floor now when it is empty): no event the consumer has still to read, pushed yet
 * or not, is older. */
int64_t ring_head_floor(struct ring *r);

/* Where a producer's events go: the session they belong to, its clock origin, the
 * producer's own ring and the consumer's wake-up. Declared once; the tracer, its
 * hooks and its crash recorder all carry the one their session gave them. */
struct event_sink {
    int64_t session_key;
    int64_t t0_ns;               /* CLOCK_MONOTONIC at launch: event timestamps */
    struct ring *ring;
    void (*wake)(void *);
    void *wake_arg;
};

/* An event of sink's session at ts_ns (CLOCK_MONOTONIC), timestamped relative to t0. */
static inline struct event event_sink_init(const struct event_sink *s, int type, int64_t ts_ns)
{
    return event_init(s->session_key, type, ts_ns - s->t0_ns);
}

/* An event of sink's session stamped now, for a producer that pushes it at once
 * (ring_stamp: call ring_idle(s->ring) after the push). */
static inline struct event event_sink_now(const struct event_sink *s, int type)
{
    return event_init(s->session_key, type, ring_stamp(s->ring, s->t0_ns) - s->t0_ns);
}

/* ring_push into the sink's ring. */
static inline bool event_sink_push(const struct event_sink *s, const struct event *e)
{
    return ring_push(s->ring, e, s->wake, s->wake_arg);
}

#endif
