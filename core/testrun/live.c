/*
 * live.c - the progress reports of adapters' live parsers (adapter.h, live.h).
 */
#include "core/testrun/live.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"

void test_live_init(struct test_live *lv)
{
    *lv = (struct test_live){.phase = TEST_PHASE_STARTING};
}

void test_live_phase(struct test_live *lv, enum test_phase phase)
{
    if (phase == TEST_PHASE_RUNNING && !lv->running_since_ns)
        lv->running_since_ns = mono_ns();
    lv->phase = phase;
}

void test_live_started(struct test_live *lv, const char *name)
{
    if (lv->phase < TEST_PHASE_RUNNING)
        test_live_phase(lv, TEST_PHASE_RUNNING);
    if (strcmp(lv->current, name) == 0)
        return;
    snprintf(lv->current, sizeof lv->current, "%s", name);
    lv->current_since_ns = mono_ns();
    lv->current_changed = true;
}

void test_live_finished(struct test_live *lv, const char *name, enum test_status st)
{
    if (lv->phase < TEST_PHASE_RUNNING)
        test_live_phase(lv, TEST_PHASE_RUNNING);
    switch (st) {
    case TEST_PASSED: lv->passed++; break;
    case TEST_FAILED: lv->failed++; break;
    case TEST_SKIPPED: lv->skipped++; break;
    }
    if (strcmp(lv->current, name) == 0)
        lv->current[0] = '\0';
}
