/*
 * stuck.h - the stuck-test detector of spec 002 ("Smart Stuck Detection"), as a
 * pure state machine: the runner feeds it the time of the last output, CPU time
 * samples and stack snapshots; it says when to take stacks and what it concludes.
 *
 *   output   CPU        stacks over two samples   verdict
 *   active   any        -                         not stuck
 *   silent   ~0%        same                      deadlock: capture, kill, report
 *   silent   ~100%      same                      infinite loop: capture, kill, report
 *   silent   ~100%      different                 working: wait for the hard timeout
 *
 * CPU is the share of one core the test's processes wanted over the last sample: the
 * time they ran plus the time they waited for a CPU (tproc_cpu_demand_ns), so that a
 * loop beside other busy processes, which gets a fraction of a core, is still busy
 * (with the time they ran alone, a loop given 20% of a core on a loaded machine was
 * neither busy nor idle and never found stuck).
 *
 * Stacks are compared by the function names of every frame of every thread (not the
 * pcs: a loop's pc moves inside the same functions), each thread's up to the first of
 * two unnamed frames in a row: past code the unwinder cannot name (a JIT's), the
 * frames it finds differ from one snapshot to the next. An idle program is stuck after
 * STUCK_IDLE_SAMPLES identical snapshots (8 s of silence); a busy one only after
 * STUCK_BUSY_SAMPLES (10 s), since a long computation in one function looks the same
 * for a while. A program that waits only for deadlines (threads blocked in sleeps
 * and timed waits, none blocked without a deadline, no wait cycle) is given
 * STUCK_SLEEP_MS of silence: a test may sleep on purpose, and a test harness's own
 * threads (libtest's, a runtime's) wait with timeouts while a test deadlocks, which
 * the threads blocked for good then show.
 */
#ifndef STROBE_TESTRUN_STUCK_H
#define STROBE_TESTRUN_STUCK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/collector.h"

#define STUCK_SAMPLE_MS 2000     /* CPU sampling period */
#define STUCK_SILENCE_MS 6000    /* silence before stacks are compared */
#define STUCK_SLEEP_MS 30000     /* silence before a sleeping program counts */
#define STUCK_IDLE_SAMPLES 2
#define STUCK_BUSY_SAMPLES 3
#define STUCK_IDLE_PCT 5         /* at most this much of one core: idle */
#define STUCK_BUSY_PCT 50        /* at least this much of one core: busy */

enum stuck_verdict { STUCK_NONE, STUCK_DEADLOCK, STUCK_LOOP };

struct stuck {
    int64_t last_output_ns;
    int64_t last_sample_ns;      /* 0: no CPU sample yet */
    int64_t last_cpu_ns;
    int cpu_pct;                 /* of one core over the last sample period, -1: unknown */
    char *signature;             /* the last snapshot's, malloc'd */
    int same;                    /* consecutive snapshots with that signature */
    bool sleeping;               /* the last snapshot had a thread in a timed sleep and
                                    no wait cycle */
    char warning[160];           /* "" or what the detector suspects now */
};

void stuck_init(struct stuck *s, int64_t now_ns);
void stuck_free(struct stuck *s);
/* Output was seen at now_ns: resets the suspicion. */
void stuck_output(struct stuck *s, int64_t now_ns);
/* A CPU sample (the run's processes' total CPU time) at now_ns. */
void stuck_cpu(struct stuck *s, int64_t now_ns, int64_t cpu_ns);
/* Whether the runner should take a stack snapshot now (silent long enough, and a
 * sample period since the last one). */
bool stuck_wants_stacks(const struct stuck *s, int64_t now_ns);
/* A snapshot taken at now_ns (diagnosed: collector_stacks_diagnose). Returns the
 * verdict; diagnosis gets its sentence ("Deadlock: 0% CPU, identical stacks across
 * 2 samples 2 s apart; ..."). */
enum stuck_verdict stuck_stacks(struct stuck *s, int64_t now_ns,
                                const struct collector_stacks *st, char *diagnosis,
                                size_t cap);

#endif
