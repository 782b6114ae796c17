/*
 * output.h - capture of a target's stdout and stderr into the timeline.
 *
 * One thread per session reads both pipes (non-blocking, with poll), turns bytes
 * into line events (base/linesplit.h), flushes a partial line after 100 ms of
 * silence, and enforces output.maxBytesPerSession with a single marker event (the
 * rest is read and dropped, so the target never blocks on a full pipe). Once told
 * that the main process has ended, it drains what the process wrote and calls
 * on_exit on its own thread: the process_exit event then lands behind the last
 * line, and a session reported ended has all of its output queryable.
 *
 * True order: the tracer calls output_drain_now() at each trap before it stamps the
 * trap's event. What is in the pipes then was written before the trapping thread
 * stopped, so its lines get timestamps before the event's; lines written between
 * two traps are stamped at the later one (or sooner, when this thread reads them).
 * One lock makes the two readers take turns.
 *
 * Followed writes: calls recorded inside the program (the fast path) take no trap,
 * so while a recorder follows the program's writes to the pipes (output_follow),
 * the bytes read are held instead of stamped (base/heldbytes.h). A followed write,
 * known by its first bytes and its count, gives its bytes the time it returned
 * (output_wrote, called by the tracer in the writes' time order); bytes no followed
 * write claims (another program writing to the same pipe, a record lost) take the
 * time they were read at once the drains have passed it (output_settled). The
 * ring's floor says how old the held lines can still be (base/ring.h). Measured in
 * docs/FASTPATH.md: a stop per write before.
 */
#ifndef STROBE_OUTPUT_H
#define STROBE_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/event.h"
#include "base/ring.h"
#include "store/store.h"

struct output;

struct output_config {
    int out_fd, err_fd;        /* read ends of the pipes, owned by the capture */
    struct store *store;       /* releases sink.ring when the thread ends */
    struct event_sink sink;    /* sink.ring is attached to the store */
    pid_t pid;
    int64_t cap_bytes;
    /* Called once on the output thread when the main process has ended and all it
     * wrote is in the ring, without the readers' lock (the tracer may read output
     * meanwhile); may push events with output_push(). */
    void (*on_exit)(void *arg, struct output *o, int wait_status);
    void *arg;
    /* Optional: every byte read from stream 1 (stdout) or 2 (stderr), as read and
     * before the cap, on the output thread (a test run parses what its framework
     * prints). */
    void (*tap)(void *tap_arg, int stream, const char *buf, size_t n);
    void *tap_arg;
    bool follow;               /* output_follow from the start */
};

/* Starts the thread. On success the capture owns the fds and the ring; NULL when
 * the thread cannot start (the caller still owns them). */
struct output *output_start(const struct output_config *cfg);

/* From on_exit only: stamps ev now and queues it behind the output. */
void output_push(struct output *o, struct event *ev);

/* The main process ended with wait_status. Any thread. */
void output_exited(struct output *o, int wait_status);

/* Waits (up to timeout_ms) until everything in the pipes now, partial lines
 * included, is in the ring: called by the tracer before it stamps a crash, so the
 * program's last words come before it in the timeline. Any thread but the
 * output thread. */
void output_settle(struct output *o, int timeout_ms);

/* Reads, without waiting, what the pipes hold now (not what running threads add
 * meanwhile: a flood cannot hold the caller) and stamps its complete lines now (a
 * partial line waits for its end or the 100 ms flush). Any thread but the output
 * thread; costs one poll(2) when the pipes are empty. */
void output_drain_now(struct output *o);

/* A recorder follows the program's writes to the pipes from now on (the tracer,
 * with every thread of the program stopped): what is read is held until a write
 * claims it or output_settled releases it. Any thread but the output thread. */
void output_follow(struct output *o);

/* A followed write returned at ts_ns (CLOCK_MONOTONIC) having written n bytes to
 * stream (1 stdout, 2 stderr), the first plen of them prefix: what the pipe holds
 * is read, the write's bytes are found by their first ones and take ts_ns (the
 * bytes held before them, another writer's, their read's time). Not found (already
 * released): nothing. Any thread but the output thread. */
void output_wrote(struct output *o, int stream, const char *prefix, size_t plen, size_t n,
                  int64_t ts_ns);

/* Every followed write that returned before floor_ns has been passed to
 * output_wrote; writing: a followed write has begun and not returned. The bytes
 * held that were read before floor_ns are released with their read times (all of
 * them when floor_ns is INT64_MAX: no recorder follows the writes any more; only
 * those held for over a second while writing). Any thread but the output thread. */
void output_settled(struct output *o, int64_t floor_ns, bool writing);

/* Stops reading once the exit has been handled, waits for the thread, frees o. */
void output_stop(struct output *o);

/* Whether the output cap was reached. Any thread. */
bool output_capped(const struct output *o);

#endif
