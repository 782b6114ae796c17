/*
 * clock.h - the clock every timestamp of the timeline is read from: CLOCK_MONOTONIC,
 * so events of one session order correctly whichever thread stamped them (output
 * capture, tracer, crash capture) and a wall-clock step never reorders them. Also the
 * deadlines of timed waits (clock_after_ms).
 */
#ifndef STROBE_CLOCK_H
#define STROBE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns. */
static inline int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The time ns nanoseconds after now on clock: a deadline for pthread_cond_timedwait
 * (CLOCK_REALTIME, or CLOCK_MONOTONIC for a condition variable set to it). */
static inline struct timespec clock_after_ns(clockid_t clock, int64_t ns)
{
    struct timespec t;
    clock_gettime(clock, &t);
    int64_t sum = t.tv_nsec + ns % 1000000000;
    t.tv_sec += ns / 1000000000 + sum / 1000000000;
    t.tv_nsec = sum % 1000000000;
    return t;
}

static inline struct timespec clock_after_ms(clockid_t clock, int64_t ms)
{
    return clock_after_ns(clock, ms * 1000000);
}

#endif
