/*
 * live.h - a run's progress as its adapter's live parser reports it (the
 * test_live_* functions of adapter.h). The runner owns the struct and its lock:
 * the parser runs on the run's thread with the lock held, status readers take it.
 */
#ifndef STROBE_TESTRUN_LIVE_H
#define STROBE_TESTRUN_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "testrun/adapter.h"

#define LIVE_RUNNING_MAX 32      /* tests running at once that are followed */

struct test_live {
    int passed, failed, skipped;
    enum test_phase phase;
    int64_t running_since_ns;    /* when the phase became RUNNING, 0: not yet */
    /* Tests started and not finished, oldest first: frameworks run tests in
     * parallel (cargo), and a stuck test is one that never finishes while the
     * others do. When more run at once, the oldest are forgotten. */
    struct {
        char name[256];
        int64_t since_ns;
    } running[LIVE_RUNNING_MAX];
    int n_running;
    char current[256];           /* the longest-running of them, "" none */
    int64_t current_since_ns;
    bool current_changed;        /* a new current test: its baseline is to be read */
};

void test_live_init(struct test_live *lv);

#endif
