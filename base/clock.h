/*
 * clock.h - the clock every timestamp of the timeline is read from: CLOCK_MONOTONIC,
 * so events of one session order correctly whichever thread stamped them (output
 * capture, tracer, crash capture) and a wall-clock step never reorders them.
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

#endif
