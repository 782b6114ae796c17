/*
 * ring.c - SPSC event ring. See ring.h.
 *
 * Layout: head and tail are byte offsets that only grow; (offset & mask) indexes the
 * buffer. A record is a struct record_head, then its strings, padded to 8 bytes, and
 * never wraps: when a record does not fit before the end of the buffer, the producer
 * writes a head with kind SKIP and starts over at offset 0. The producer publishes
 * with a release store of head, the consumer frees space with a release store of
 * tail; each reads the other's index with acquire.
 *
 * Time order (ring.h): idle is stored and loaded sequentially consistent. A producer
 * that clears it reads the clock only after the store is visible (the store is a
 * full barrier on x86, the clock read comes after it), so a consumer that still sees
 * it set knows the next stamp is later than everything it drained before looking;
 * a producer that sets it after a push has published the push first. Each record
 * carries the floor its producer had when it pushed it: floors only rise, so the
 * oldest record's is a bound for every event still to be read (ring_head_floor).
 */
#include "base/ring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

enum { REC_EVENT = 1, REC_SKIP = 2 };
#define ABSENT UINT32_MAX

struct record_head {
    uint32_t size; /* whole record, padded */
    uint32_t kind;
    int64_t session_key;
    int64_t ts_ns;
    int64_t seq;
    int64_t parent_seq;
    int64_t duration_ns;
    int64_t floor; /* the producer's floor when it pushed this record */
    int32_t type;
    int32_t pid;
    int32_t tid;
    int32_t line;
    int32_t sampled;
    uint32_t len[EVENT_STRINGS]; /* ABSENT or strlen; each string is followed by NUL */
};

struct ring {
    _Alignas(64) _Atomic uint64_t head; /* written by the producer */
    _Alignas(64) _Atomic uint64_t tail; /* written by the consumer */
    _Alignas(64) uint64_t mask;
    size_t max_record;
    uint8_t *buf;
    uint32_t peeked_size;
    _Atomic int producer_waiting;
    _Alignas(64) _Atomic int64_t floor; /* time order: written by the producer */
    _Atomic bool idle;
    pthread_mutex_t lock; /* only for the wait on a full ring */
    pthread_cond_t space;
};

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

struct ring *ring_create(size_t capacity)
{
    size_t cap = 64 * 1024;
    while (cap < capacity)
        cap <<= 1;
    struct ring *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->buf = malloc(cap);
    if (!r->buf) {
        free(r);
        return NULL;
    }
    r->mask = cap - 1;
    r->max_record = cap / 4;
    atomic_init(&r->floor, RING_NO_FLOOR);
    atomic_init(&r->idle, true);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->space, NULL);
    return r;
}

void ring_destroy(struct ring *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->space);
    free(r->buf);
    free(r);
}

size_t ring_max_record(const struct ring *r) { return r->max_record; }

uint64_t ring_produced(const struct ring *r)
{
    return atomic_load_explicit(&((struct ring *)r)->head, memory_order_acquire);
}

uint64_t ring_consumed(const struct ring *r)
{
    return atomic_load_explicit(&((struct ring *)r)->tail, memory_order_acquire);
}

size_t ring_used(const struct ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) -
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

void ring_floor(struct ring *r, int64_t ts_ns)
{
    atomic_store(&r->idle, false);
    if (ts_ns > atomic_load_explicit(&r->floor, memory_order_relaxed))
        atomic_store_explicit(&r->floor, ts_ns, memory_order_release);
}

void ring_idle(struct ring *r)
{
    atomic_store(&r->idle, true);
}

int64_t ring_stamp(struct ring *r, int64_t t0_ns)
{
    atomic_store(&r->idle, false);
    int64_t now = mono_ns();
    if (now - t0_ns > atomic_load_explicit(&r->floor, memory_order_relaxed))
        atomic_store_explicit(&r->floor, now - t0_ns, memory_order_release);
    return now;
}

int64_t ring_floor_get(const struct ring *r)
{
    return atomic_load_explicit(&((struct ring *)r)->floor, memory_order_acquire);
}

bool ring_is_idle(const struct ring *r)
{
    return atomic_load(&((struct ring *)r)->idle);
}

bool ring_try_push(struct ring *r, const struct event *e)
{
    struct event copy = *e;
    struct record_head h = {0};
    size_t size = sizeof h;
    for (int i = 0; i < EVENT_STRINGS; i++) {
        const char **s = event_string(&copy, i);
        h.len[i] = (s && *s) ? (uint32_t)strlen(*s) : ABSENT;
        if (h.len[i] != ABSENT)
            size += h.len[i] + 1;
    }
    size = pad8(size);
    if (size > r->max_record)
        return false;

    uint64_t cap = r->mask + 1;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint64_t to_end = cap - (head & r->mask);
    uint64_t need = size <= to_end ? size : to_end + size;
    if (cap - (head - tail) < need)
        return false;
    if (size > to_end) {
        struct record_head *skip = (struct record_head *)(r->buf + (head & r->mask));
        /* to_end is a multiple of 8 and at least 8, enough for size and kind. */
        skip->size = (uint32_t)to_end;
        skip->kind = REC_SKIP;
        head += to_end;
    }
    uint8_t *p = r->buf + (head & r->mask);
    h.size = (uint32_t)size;
    h.kind = REC_EVENT;
    h.session_key = e->session_key;
    h.ts_ns = e->ts_ns;
    h.seq = e->seq;
    h.parent_seq = e->parent_seq;
    h.duration_ns = e->duration_ns;
    h.floor = atomic_load_explicit(&r->floor, memory_order_relaxed);
    h.type = e->type;
    h.pid = e->pid;
    h.tid = e->tid;
    h.line = e->line;
    h.sampled = e->sampled;
    memcpy(p, &h, sizeof h);
    uint8_t *s = p + sizeof h;
    for (int i = 0; i < EVENT_STRINGS; i++) {
        if (h.len[i] == ABSENT)
            continue;
        memcpy(s, *event_string(&copy, i), h.len[i] + 1);
        s += h.len[i] + 1;
    }
    atomic_store_explicit(&r->head, head + size, memory_order_release);
    return true;
}

bool ring_push(struct ring *r, const struct event *e, void (*wake)(void *), void *arg)
{
    while (!ring_try_push(r, e)) {
        if (ring_used(r) == 0)
            return false; /* empty and still no room: the record is too large */
        if (wake)
            wake(arg);
        pthread_mutex_lock(&r->lock);
        atomic_store(&r->producer_waiting, 1);
        struct timespec until = clock_after_ms(CLOCK_REALTIME, 10);
        /* A bounded wait: a pop between our failed push and this wait is caught by
         * the timeout instead of a lost wake-up. */
        pthread_cond_timedwait(&r->space, &r->lock, &until);
        atomic_store(&r->producer_waiting, 0);
        pthread_mutex_unlock(&r->lock);
    }
    return true;
}

bool ring_peek(struct ring *r, struct event *e)
{
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail == head)
            return false;
        const uint8_t *p = r->buf + (tail & r->mask);
        struct record_head h;
        memcpy(&h, p, sizeof h.size + sizeof h.kind);
        if (h.kind == REC_SKIP) {
            atomic_store_explicit(&r->tail, tail + h.size, memory_order_release);
            continue;
        }
        memcpy(&h, p, sizeof h);
        *e = event_init(h.session_key, h.type, h.ts_ns);
        e->seq = h.seq;
        e->parent_seq = h.parent_seq;
        e->duration_ns = h.duration_ns;
        e->pid = h.pid;
        e->tid = h.tid;
        e->line = h.line;
        e->sampled = h.sampled;
        const char *s = (const char *)p + sizeof h;
        for (int i = 0; i < EVENT_STRINGS; i++) {
            if (h.len[i] == ABSENT)
                continue;
            const char **slot = event_string(e, i);
            if (slot)
                *slot = s;
            s += h.len[i] + 1;
        }
        r->peeked_size = h.size;
        return true;
    }
}

int64_t ring_head_floor(struct ring *r)
{
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail == head)
            return ring_floor_get(r);
        const uint8_t *p = r->buf + (tail & r->mask);
        struct record_head h;
        memcpy(&h, p, sizeof h.size + sizeof h.kind);
        if (h.kind != REC_SKIP) {
            memcpy(&h, p, sizeof h);
            return h.floor;
        }
        atomic_store_explicit(&r->tail, tail + h.size, memory_order_release);
    }
}

void ring_pop(struct ring *r)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + r->peeked_size, memory_order_release);
    r->peeked_size = 0;
    /* Wake a waiting producer once half the ring is free, not on every pop: a
     * wake-up per event would cost more than the events themselves. */
    if (atomic_load(&r->producer_waiting) && ring_used(r) <= (r->mask + 1) / 2) {
        pthread_mutex_lock(&r->lock);
        pthread_cond_signal(&r->space);
        pthread_mutex_unlock(&r->lock);
    }
}
