/*
 * testrun.h - debug_test's engine: test runs started in the background, watched
 * for stuck tests, and their outcome kept for the front end to read.
 *
 * A run picks an adapter (adapter.h: named, or detected from the project), starts
 * its command and returns at once with the run's id. Without trace patterns or
 * watches the command runs as a plain child process (no overhead); with them it runs
 * as a debug session under the collector (core/session.h), so the agent can query
 * its events, change its patterns while it runs and see its crashes, and a
 * framework that forks or execs the test binary is followed.
 *
 * While it runs the runner keeps the progress (counts, the current test, how long
 * it has run, its usual duration from the last 10 runs) and watches for a stuck
 * test: output silent and CPU time sampled every 2 s; from 6 s of silence it takes
 * every thread's stack, and when two snapshots 2 s apart are the same it decides
 * (deadlock: no CPU; infinite loop: all CPU), keeps the stacks, kills the whole
 * process tree and reports. Silent work whose stacks change runs on until the
 * level's hard timeout.
 *
 * At the end the adapter parses the output; the runner writes every detail (each
 * test, its output, the raw output) to a file of its own under
 * $STROBE_HOME/tests/ and keeps a summary for testrun_status. Runs are kept in
 * memory for the daemon's life (the last TESTRUN_KEEP of them).
 */
#ifndef STROBE_TESTRUN_H
#define STROBE_TESTRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/session_id.h"
#include "core/collector.h"
#include "testrun/adapter.h"

struct daemon_service;
struct store;

#define TESTRUN_ID_MAX 40        /* "tr-" + 32 hex digits */
#define TESTRUN_KEEP 64          /* finished runs kept in memory */
#define TESTRUN_STATUS_WAIT_MS 15000
#define TESTRUN_MAX_PATTERNS 32
#define TESTRUN_MAX_ENV 64

/* The runs as a service of the daemon (core/daemon.h), which strobe.c installs:
 * init binds them to the store and $STROBE_HOME/tests (created 0700), busy is
 * testruns_running, shutdown testruns_shutdown. */
extern const struct daemon_service testrun_service;

/* Binds the module to the store (duration history) and tests_dir, where each run's
 * details go ("" keeps none). */
void testruns_init(struct store *store, const char *tests_dir);
/* Kills every run still going and waits for them. */
void testruns_shutdown(void);
/* Runs still going (the daemon does not idle out with any). */
int testruns_running(void);

struct testrun_request {
    const char *project_root;      /* required: an existing directory */
    const char *framework;         /* NULL: detect */
    const char *command;           /* NULL: the adapter's own */
    enum test_level level;
    bool level_given;              /* sets the hard timeout of the level */
    const char *test;              /* NULL: the suite */
    const char *const *patterns;   /* trace patterns (syntax checked here) */
    int n_patterns;
    const struct trace_watch_spec *watches;
    int n_watches;
    const struct collector_breakpoint *breakpoints; /* numbered for a launch
                                      (debug_breakpoints_for_launch): the run goes under
                                      the debugger, and a test paused at one is neither
                                      stuck nor timed out while it stays paused */
    int n_breakpoints;
    const char *const *env;        /* "KEY=VALUE" */
    int n_env;
};

struct testrun_started {
    char id[TESTRUN_ID_MAX];
    const struct test_adapter *adapter;
    int confidence;                /* detection's, 100 when named */
    char session_id[SESSION_ID_MAX]; /* "" on the plain path, and until the build is done
                                        for adapters that build first (then in status) */
    char command[1024];            /* what runs, as a shell line */
    const char *trace_note;        /* traced runs: the adapter's trace_note, or NULL */
};

/* Starts a run. -1 with VALIDATION_ERROR (no such directory, bad pattern, unknown
 * framework: the sentence lists the known ones), COMMAND_NOT_FOUND (the framework's
 * program is not installed: the sentence names the package), or the session's
 * launch errors on the traced path. */
int testrun_start(const struct testrun_request *req, struct testrun_started *out,
                  struct strobe_error *e);

enum testrun_state { TESTRUN_RUNNING, TESTRUN_COMPLETED };

struct testrun_warning {         /* a test that may be stuck, not yet decided */
    char test[256];
    int64_t idle_ms;
    char diagnosis[160];
};

struct testrun_stuck {           /* a test found stuck and killed */
    char *name;                  /* "" when the framework did not say which */
    int64_t elapsed_ms;
    char diagnosis[256];         /* "Deadlock: 0% CPU, identical stacks across 2 samples" */
    struct collector_stacks stacks; /* captured before the kill */
    char *runtime_dump;          /* what the runtime printed of its own stacks, or NULL */
};

struct testrun_failure {
    const struct test_case *tc;  /* in report */
    char *rerun;                 /* shell command running it alone */
    char *suggested[8];
    int n_suggested;
};

struct testrun_view {
    char id[TESTRUN_ID_MAX];
    enum testrun_state state;
    char session_id[SESSION_ID_MAX]; /* a traced run that builds first: "" until the
                                        build is done */
    char error[512];             /* "CODE: sentence" when the run could not go on (the
                                    traced launch after the build failed); "" */
    const struct test_adapter *adapter;
    char command[1024];
    char project_root[4096];
    /* progress */
    int64_t elapsed_ms;
    int passed, failed, skipped;
    enum test_phase phase;
    char current_test[256];      /* "" none */
    int64_t current_elapsed_ms;
    int64_t current_baseline_ms; /* -1: no history */
    struct testrun_warning warnings[4];
    int n_warnings;
    /* result (TESTRUN_COMPLETED): shared with the run, read-only, valid until
     * testrun_view_free */
    const struct test_report *report;  /* every case, NULL while running */
    const struct testrun_failure *failures;
    int n_failures;
    const struct testrun_stuck *stuck;
    int n_stuck;
    int exit_code;               /* -1: killed */
    bool timed_out;              /* the level's hard timeout ended it */
    int64_t timeout_ms;
    char details_path[4096];     /* "" when it could not be written */
    bool no_tests;               /* onboarding: no test ran and nothing failed */
    char hint[512];
    const char *language;        /* the project's, as its files suggest ("rust") */
    const char *build_system;    /* "cargo" */
    const char *tail;            /* the end of the output when the adapter found no
                                    results (a crash before any test), else NULL */
    void *ref;                   /* private: the run, held */
};

/* The run's state, waiting up to wait_ms for it to finish while it runs (0: now).
 * -1 with TEST_RUN_NOT_FOUND. Free with testrun_view_free. */
int testrun_status(const char *id, int wait_ms, struct testrun_view *out,
                   struct strobe_error *e);
void testrun_view_free(struct testrun_view *v);

#endif
