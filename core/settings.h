/*
 * settings.h - file-based settings of spec 003: built-in defaults, overridden by
 * $STROBE_HOME/settings.json, overridden by <projectRoot>/.strobe/settings.json.
 * Re-read on every tool call (no cache): editing a file takes effect at once.
 * A bad value (wrong type, out of range, unknown key, unreadable or invalid file)
 * keeps the lower layer's value and adds a warning for the caller to show.
 *
 * The retention.* keys govern the whole database, not one project's sessions, and
 * answers.maxBytes the agent's context, not one project's: they are read from the
 * global file only, and a project file that sets one gets a
 * warning saying so.
 */
#ifndef STROBE_SETTINGS_H
#define STROBE_SETTINGS_H

#include <stdint.h>

#define SETTINGS_MAX_WARNINGS 8

enum { TRACE_MODE_INT3 = 0, TRACE_MODE_FAST = 1 };

struct settings {
    int64_t events_max_per_session;   /* events.maxPerSession */
    int64_t test_status_retry_ms;     /* test.statusRetryMs */
    int64_t output_max_bytes;         /* output.maxBytesPerSession */
    int64_t output_order_at_traps;    /* output.orderAtTraps, 0 or 1 */
    int64_t hot_calls_per_second;     /* trace.hotCallsPerSecond */
    int64_t sample_after;             /* trace.sampleAfter */
    int64_t overhead_budget_percent;  /* trace.overheadBudgetPercent, 100: no budget */
    int64_t capture_exits;            /* trace.captureExits, 0 or 1 */
    int64_t pin_cpu;                  /* trace.pinCpu, 0 or 1 */
    int64_t trace_mode;               /* trace.mode: "fast" (TRACE_MODE_FAST, the
                                         default: the in-process recorder,
                                         ptrace/hooks/hooks.h "Fast path",
                                         docs/FASTPATH.md) or "int3"
                                         (TRACE_MODE_INT3: two ptrace stops per
                                         call) */
    int64_t answers_max_bytes;        /* answers.maxBytes: every tool answer's JSON
                                         (global file only) */
    int64_t retention_max_age_days;   /* retention.maxAgeDays (global file only) */
    int64_t retention_max_total_bytes; /* retention.maxTotalBytes (global file only) */
    int n_warnings;
    char warnings[SETTINGS_MAX_WARNINGS][256];
};

/* Loads the three layers. global_path may be NULL (no global file), project_root
 * may be NULL (no project layer). Never fails: problems become warnings. */
void settings_load(struct settings *out, const char *global_path, const char *project_root);

#endif
