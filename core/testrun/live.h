/*
 * live.h - a run's progress as its adapter's live parser reports it (the
 * test_live_* functions of adapter.h). The runner owns the struct and its lock:
 * the parser runs on the run's thread with the lock held, status readers take it.
 */
#ifndef STROBE_TESTRUN_LIVE_H
#define STROBE_TESTRUN_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/testrun/adapter.h"

struct test_live {
    int passed, failed, skipped;
    enum test_phase phase;
    int64_t running_since_ns;    /* when the phase became RUNNING, 0: not yet */
    char current[256];           /* the test running now, "" none */
    int64_t current_since_ns;
    bool current_changed;        /* a new current test: its baseline is to be read */
};

void test_live_init(struct test_live *lv);

#endif
