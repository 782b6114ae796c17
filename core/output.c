/*
 * output.c - the output capture thread. See output.h. Events are stamped as they are
 * pushed, so the ring is idle between them (base/ring.h, "Time order"): the store
 * holds back no other producer's events for it.
 */
#include "core/output.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/heldbytes.h"
#include "base/linesplit.h"
#include "base/log.h"

#define PARTIAL_LINE_MS 100
/* The longest bytes are held while a followed write is open (a thread stopped by
 * the debugger inside the recorder): as long as the store holds events back. */
#define HOLD_MAX_NS 1000000000LL

struct output;

struct stream {
    struct output *owner;
    int fd;                   /* -1 once closed */
    int type;                 /* EV_STDOUT or EV_STDERR */
    struct linesplit split;
    int64_t last_data_ns;
    struct heldbytes held;    /* read while following, not yet stamped */
    int64_t stamp_ns;         /* the time of the lines fed now; 0: when pushed */
};

struct output {
    struct output_config cfg;
    struct stream out, err;
    int wake_fd;              /* eventfd: exit reported, stop requested */
    pthread_t thread;
    _Atomic int exit_reported;
    int wait_status;          /* written before exit_reported is set */
    bool exit_handled;        /* on_exit has run (output thread only) */
    _Atomic int stop_requested;
    _Atomic int capped;
    int64_t bytes;
    /* One reader at a time: the output thread, or the tracer through
     * output_drain_now(). Guards the streams, bytes, and the pushes to the ring
     * (single-producer: whoever holds it is the producer). */
    pthread_mutex_t read_lock;
    bool following;           /* output_follow: bytes read are held (read_lock) */
    /* output_settle(): requests and completions, guarded by settle_lock. */
    pthread_mutex_t settle_lock;
    pthread_cond_t settled;
    uint64_t settle_requested, settle_done;
};

/* Pushes ev, stamped by ring_stamp (event_sink_now), with read_lock held: whoever
 * holds it is the ring's producer. */
static void push_locked(struct output *o, struct event *ev)
{
    if (!event_sink_push(&o->cfg.sink, ev))
        log_error("pid %d: event of type %d too large for the ring, dropped", o->cfg.pid,
                  ev->type);
    if (!o->following) /* else held lines may be older: the floor says how old */
        ring_idle(o->cfg.sink.ring); /* the next event is stamped later */
}

void output_push(struct output *o, struct event *ev)
{
    pthread_mutex_lock(&o->read_lock);
    ev->ts_ns = event_sink_now(&o->cfg.sink, ev->type).ts_ns;
    push_locked(o, ev);
    pthread_mutex_unlock(&o->read_lock);
}

static void emit_line(void *arg, const char *line, size_t len)
{
    struct stream *st = arg;
    struct output *o = st->owner;
    if (atomic_load(&o->capped))
        return;
    struct event ev = st->stamp_ns ? event_sink_init(&o->cfg.sink, st->type, st->stamp_ns)
                                   : event_sink_now(&o->cfg.sink, st->type);
    ev.pid = o->cfg.pid;
    ev.tid = o->cfg.pid;
    char marker[160];
    if (o->bytes + (int64_t)len > o->cfg.cap_bytes) {
        atomic_store(&o->capped, 1);
        snprintf(marker, sizeof marker,
                 "[strobe] output limit of %lld bytes reached; further output discarded "
                 "(setting output.maxBytesPerSession)", (long long)o->cfg.cap_bytes);
        ev.text = marker;
    } else {
        o->bytes += (int64_t)len;
        ev.text = line;
    }
    push_locked(o, &ev);
}

/* Reads what is available now, at most limit bytes; at EOF (or an error) flushes
 * and closes, on the output thread only (closing: that thread's poll must never see
 * a closed fd). */
static void read_stream(struct stream *st, bool on_output_thread, size_t limit)
{
    char buf[65536];
    while (limit > 0) {
        ssize_t n = read(st->fd, buf, limit < sizeof buf ? limit : sizeof buf);
        if (n > 0) {
            struct output *o = st->owner;
            if (o->cfg.tap)
                o->cfg.tap(o->cfg.tap_arg, st->type == EV_STDOUT ? 1 : 2, buf, (size_t)n);
            if (!o->following || !held_append(&st->held, buf, (size_t)n, mono_ns()))
                linesplit_feed(&st->split, buf, (size_t)n, emit_line, st);
            st->last_data_ns = mono_ns();
            limit -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if ((n < 0 && errno == EAGAIN) || !on_output_thread)
            return;
        linesplit_flush(&st->split, emit_line, st);
        close(st->fd);
        st->fd = -1;
        return;
    }
}

/* held_fn: bytes leaving st's held bytes become lines stamped ts_ns. */
static void feed_at(void *arg, const char *data, size_t n, int64_t ts_ns)
{
    struct stream *st = arg;
    st->stamp_ns = ts_ns;
    linesplit_feed(&st->split, data, n, emit_line, st);
    st->stamp_ns = 0;
}

/* Every byte st holds becomes lines, with its read's time. */
static void release_held(struct stream *st)
{
    held_take(&st->held, st->held.len, INT64_MIN, feed_at, st);
}

/* ms until the oldest partial line is due, or -1. */
static int partial_line_timeout(struct stream *const *streams)
{
    int timeout = -1;
    for (int i = 0; i < 2; i++) {
        if (streams[i]->fd < 0 || streams[i]->split.len == 0)
            continue;
        int64_t due = streams[i]->last_data_ns + PARTIAL_LINE_MS * 1000000LL;
        int ms = (int)((due - mono_ns()) / 1000000) + 1;
        if (ms < 0)
            ms = 0;
        if (timeout < 0 || ms < timeout)
            timeout = ms;
    }
    return timeout;
}

/* Answers output_settle(): what is in the pipes now, partial lines included, goes
 * to the ring before the waiter is released. */
static void settle(struct output *o, struct stream *const *streams)
{
    pthread_mutex_lock(&o->settle_lock);
    uint64_t want = o->settle_requested;
    pthread_mutex_unlock(&o->settle_lock);
    if (want == o->settle_done)
        return;
    for (int i = 0; i < 2; i++) {
        if (streams[i]->fd >= 0)
            read_stream(streams[i], true, SIZE_MAX);
        release_held(streams[i]);
        linesplit_flush(&streams[i]->split, emit_line, streams[i]);
    }
    pthread_mutex_lock(&o->settle_lock);
    o->settle_done = want;
    pthread_cond_broadcast(&o->settled);
    pthread_mutex_unlock(&o->settle_lock);
}

static void *output_main(void *arg)
{
    struct output *o = arg;
    struct stream *streams[2] = {&o->out, &o->err};
    for (;;) {
        /* The tracer may read the streams between two turns (output_drain_now). */
        pthread_mutex_lock(&o->read_lock);
        if (o->exit_handled && (atomic_load(&o->stop_requested) ||
                                (o->out.fd < 0 && o->err.fd < 0))) {
            pthread_mutex_unlock(&o->read_lock);
            break;
        }
        struct pollfd pfd[3];
        int n = 0;
        for (int i = 0; i < 2; i++)
            if (streams[i]->fd >= 0)
                pfd[n++] = (struct pollfd){.fd = streams[i]->fd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = o->wake_fd, .events = POLLIN};
        int timeout = partial_line_timeout(streams);
        pthread_mutex_unlock(&o->read_lock);
        if (poll(pfd, n, timeout) < 0 && errno != EINTR)
            break;
        pthread_mutex_lock(&o->read_lock);
        for (int i = 0; i < 2; i++)
            if (streams[i]->fd >= 0)
                read_stream(streams[i], true, SIZE_MAX);
        for (int i = 0; i < 2; i++)
            if (streams[i]->split.len > 0 &&
                mono_ns() - streams[i]->last_data_ns >= PARTIAL_LINE_MS * 1000000LL)
                linesplit_flush(&streams[i]->split, emit_line, streams[i]);
        uint64_t v;
        if (pfd[n - 1].revents & POLLIN && read(o->wake_fd, &v, sizeof v) < 0)
            log_warn("pid %d: eventfd read: %s", o->cfg.pid, strerror(errno));
        settle(o, streams);
        bool ended = atomic_load(&o->exit_reported) && !o->exit_handled;
        if (ended) {
            /* Everything the process wrote is in the pipes now and was read above,
             * and its followed writes were drained before its end was reported;
             * its partial lines end with it. */
            for (int i = 0; i < 2; i++) {
                release_held(streams[i]);
                linesplit_flush(&streams[i]->split, emit_line, streams[i]);
            }
            o->following = false;
            ring_idle(o->cfg.sink.ring);
            o->exit_handled = true;
        }
        pthread_mutex_unlock(&o->read_lock);
        /* Unlocked: on_exit waits for the store, which may wait for the tracer, which
         * may wait for this lock at a trap (output_drain_now). */
        if (ended)
            o->cfg.on_exit(o->cfg.arg, o, o->wait_status);
    }
    pthread_mutex_lock(&o->read_lock);
    o->following = false;
    for (int i = 0; i < 2; i++) {
        release_held(streams[i]); /* before what is read now: it was read earlier */
        if (streams[i]->fd >= 0) {
            read_stream(streams[i], true, SIZE_MAX);
            if (streams[i]->fd >= 0) {
                close(streams[i]->fd);
                streams[i]->fd = -1;
            }
        }
    }
    pthread_mutex_unlock(&o->read_lock);
    store_release_ring(o->cfg.store, o->cfg.sink.ring);
    return NULL;
}

static void wake(struct output *o)
{
    uint64_t one = 1;
    if (write(o->wake_fd, &one, sizeof one) < 0)
        log_warn("pid %d: eventfd write: %s", o->cfg.pid, strerror(errno));
}

struct output *output_start(const struct output_config *cfg)
{
    struct output *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->cfg = *cfg;
    o->out = (struct stream){.owner = o, .fd = cfg->out_fd, .type = EV_STDOUT};
    o->err = (struct stream){.owner = o, .fd = cfg->err_fd, .type = EV_STDERR};
    o->following = cfg->follow;
    if (o->following) /* output_follow's promise */
        ring_floor(cfg->sink.ring, mono_ns() - cfg->sink.t0_ns);
    o->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&o->settle_lock, NULL);
    pthread_mutex_init(&o->read_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->settled, &ca);
    pthread_condattr_destroy(&ca);
    if (o->wake_fd < 0 || pthread_create(&o->thread, NULL, output_main, o) != 0) {
        if (o->wake_fd >= 0)
            close(o->wake_fd);
        pthread_mutex_destroy(&o->settle_lock);
        pthread_mutex_destroy(&o->read_lock);
        pthread_cond_destroy(&o->settled);
        free(o);
        return NULL;
    }
    return o;
}

void output_settle(struct output *o, int timeout_ms)
{
    struct timespec until = clock_after_ms(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&o->settle_lock);
    uint64_t ticket = ++o->settle_requested;
    pthread_mutex_unlock(&o->settle_lock);
    wake(o);
    pthread_mutex_lock(&o->settle_lock);
    while (o->settle_done < ticket &&
           pthread_cond_timedwait(&o->settled, &o->settle_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&o->settle_lock);
}

/* What the pipes hold now, read with read_lock held (output_drain_now). */
static void read_available(struct output *o)
{
    struct stream *streams[2] = {&o->out, &o->err};
    struct pollfd pfd[2];
    struct stream *polled[2];
    int n = 0;
    for (int i = 0; i < 2; i++)
        if (streams[i]->fd >= 0) {
            polled[n] = streams[i];
            pfd[n++] = (struct pollfd){.fd = streams[i]->fd, .events = POLLIN};
        }
    /* What the pipe holds now, and no more: threads that run on may keep writing,
     * and their later bytes are not this trap's to stamp. */
    int avail;
    if (n > 0 && poll(pfd, n, 0) > 0)
        for (int i = 0; i < n; i++)
            if (pfd[i].revents && ioctl(pfd[i].fd, FIONREAD, &avail) == 0 && avail > 0)
                read_stream(polled[i], false, (size_t)avail);
}

void output_drain_now(struct output *o)
{
    pthread_mutex_lock(&o->read_lock);
    read_available(o);
    pthread_mutex_unlock(&o->read_lock);
}

void output_follow(struct output *o)
{
    pthread_mutex_lock(&o->read_lock);
    if (!o->following && !o->exit_handled) {
        o->following = true;
        /* Every write followed from now on returns after now. */
        ring_floor(o->cfg.sink.ring, mono_ns() - o->cfg.sink.t0_ns);
    }
    pthread_mutex_unlock(&o->read_lock);
}

void output_wrote(struct output *o, int stream, const char *prefix, size_t plen, size_t n,
                  int64_t ts_ns)
{
    pthread_mutex_lock(&o->read_lock);
    read_available(o);
    struct stream *st = stream == 1 ? &o->out : &o->err;
    long at = o->following ? held_find(&st->held, prefix, plen) : -1;
    if (at >= 0) {
        held_take(&st->held, (size_t)at, INT64_MIN, feed_at, st); /* another writer's */
        held_take(&st->held, n, ts_ns, feed_at, st);
    }
    pthread_mutex_unlock(&o->read_lock);
}

void output_settled(struct output *o, int64_t floor_ns, bool writing)
{
    pthread_mutex_lock(&o->read_lock);
    if (!o->following) {
        pthread_mutex_unlock(&o->read_lock);
        return;
    }
    struct stream *streams[2] = {&o->out, &o->err};
    int64_t until = floor_ns == INT64_MAX ? INT64_MAX
                  : writing ? mono_ns() - HOLD_MAX_NS : floor_ns;
    int64_t oldest = floor_ns;
    for (int i = 0; i < 2; i++) {
        held_take_older(&streams[i]->held, until, feed_at, streams[i]);
        if (held_oldest(&streams[i]->held) < oldest)
            oldest = held_oldest(&streams[i]->held);
    }
    if (floor_ns == INT64_MAX) {
        o->following = false;
        ring_idle(o->cfg.sink.ring);
    } else {
        ring_floor(o->cfg.sink.ring, oldest - o->cfg.sink.t0_ns);
    }
    pthread_mutex_unlock(&o->read_lock);
}

void output_exited(struct output *o, int wait_status)
{
    o->wait_status = wait_status;
    atomic_store(&o->exit_reported, 1);
    wake(o);
}

void output_stop(struct output *o)
{
    atomic_store(&o->stop_requested, 1);
    wake(o);
    pthread_join(o->thread, NULL);
    close(o->wake_fd);
    pthread_mutex_destroy(&o->settle_lock);
    pthread_mutex_destroy(&o->read_lock);
    pthread_cond_destroy(&o->settled);
    held_free(&o->out.held);
    held_free(&o->err.held);
    free(o);
}

bool output_capped(const struct output *o)
{
    return atomic_load(&o->capped);
}
