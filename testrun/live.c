/*
 * live.c - the progress reports of adapters' live parsers (adapter.h, live.h).
 */
#include "testrun/live.h"

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

/* current: the test that has run longest of those still running. */
static void pick_current(struct test_live *lv)
{
    const char *name = lv->n_running ? lv->running[0].name : "";
    if (strcmp(lv->current, name) == 0)
        return;
    snprintf(lv->current, sizeof lv->current, "%s", name);
    lv->current_since_ns = lv->n_running ? lv->running[0].since_ns : 0;
    lv->current_changed = true;
}

void test_live_started(struct test_live *lv, const char *name)
{
    if (lv->phase < TEST_PHASE_RUNNING)
        test_live_phase(lv, TEST_PHASE_RUNNING);
    for (int i = 0; i < lv->n_running; i++)
        if (strcmp(lv->running[i].name, name) == 0)
            return;
    if (lv->n_running == LIVE_RUNNING_MAX) {
        memmove(lv->running, lv->running + 1, (LIVE_RUNNING_MAX - 1) * sizeof *lv->running);
        lv->n_running--;
    }
    snprintf(lv->running[lv->n_running].name, sizeof lv->running[0].name, "%s", name);
    lv->running[lv->n_running++].since_ns = mono_ns();
    pick_current(lv);
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
    for (int i = 0; i < lv->n_running; i++)
        if (strcmp(lv->running[i].name, name) == 0) {
            memmove(lv->running + i, lv->running + i + 1,
                    (size_t)(lv->n_running - i - 1) * sizeof *lv->running);
            lv->n_running--;
            break;
        }
    pick_current(lv);
}
