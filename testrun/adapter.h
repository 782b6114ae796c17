/*
 * adapter.h - a test framework as debug_test runs it: how to recognize it in a
 * project, the command that runs its suite or one test, what its output says while
 * it runs and once it ends, and what to trace when a test fails.
 *
 * An adapter is a table of functions in its own file (testrun/adapter_NAME.c).
 * It knows nothing of processes, sessions, time or MCP: the runner (runner.c) starts
 * the command, feeds the adapter's live parser each line of output, watches for a
 * stuck test, and hands the whole output to parse() at the end. Adapters never run
 * anything and never write files (a framework writes its own report file to the
 * path the adapter asked for, inside the run's private directory).
 *
 * To add a framework:
 *   1. write testrun/adapter_NAME.c: a `const struct test_adapter
 *      test_adapter_NAME` (the slots below; tcmd.c builds commands, report.c fills
 *      reports, xml.h parses XML with expat, junit.h reads JUnit reports,
 *      tsuggest.h suggests traces for C and C++ failures);
 *   2. declare it at the end of this file and add it to the table in adapters.c
 *      (the order there breaks ties between equal confidences);
 *   3. add a project under tests/fixtures/testproj/NAME/ with a passing, a failing,
 *      a skipped and a hanging test (it hangs only when STROBE_FIXTURE_HANG=1 is in
 *      its environment, so the plain suite run ends);
 *   4. test parse() on output recorded from that project in a
 *      tests/unit/test_adapters_*.c (the recordings under tests/unit/data/testrun/)
 *      and real runs through MCP in a tests/e2e/test_test_*.py; install the
 *      framework in scripts/deps.sh (Debian) or the fixture's package.json (npm);
 *   5. add its row to the framework table of docs/PROTOCOL.md.
 */
#ifndef STROBE_TESTRUN_ADAPTER_H
#define STROBE_TESTRUN_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/strbuf.h"

struct collector_stacks;

enum test_level { TEST_LEVEL_ALL, TEST_LEVEL_UNIT, TEST_LEVEL_INTEGRATION, TEST_LEVEL_E2E };
enum test_status { TEST_PASSED, TEST_FAILED, TEST_SKIPPED };
enum test_phase { TEST_PHASE_STARTING, TEST_PHASE_COMPILING, TEST_PHASE_RUNNING,
                  TEST_PHASE_SUITES_FINISHED };

/* What the agent asked for. */
struct test_plan {
    const char *project_root;  /* absolute path of a directory */
    const char *command;       /* debug_test's `command` (a test binary or a command
                                  line), NULL when not given */
    enum test_level level;
    const char *test;          /* one test by name, NULL: the whole suite */
    const char *work_dir;      /* the run's private directory: report files go there.
                                  NULL: the command a person would type (the rerun
                                  command shown with a failure): no report file */
    bool build_only;           /* compile the tests and run none (adapters with
                                  builds_first): a traced run builds first, untraced,
                                  so that the compiler is neither traced nor slowed */
    bool traced;               /* the run goes under the debugger: leave out what would
                                  compile while it runs (cargo's doc tests) */
};

/* A command line. Strings are malloc'd (tcmd.c builds and frees them). argv[0] is
 * looked up in PATH by the runner. */
#define TEST_ARGV_MAX 64
#define TEST_ENV_MAX 8
struct test_command {
    char *argv[TEST_ARGV_MAX + 1]; /* NULL-terminated */
    int argc;
    char *env[TEST_ENV_MAX];       /* "KEY=VALUE" added to the run's environment */
    int n_env;
    char *cwd;                     /* NULL: the project root */
    char *report_path;             /* the file the framework writes its report to,
                                      NULL: everything is on stdout */
    bool too_long;                 /* an argument or env entry did not fit */
};

/* One test's outcome. */
struct test_case {
    char *name;              /* as the framework names it: what `test` reruns */
    enum test_status status;
    int64_t duration_ms;     /* -1: not reported */
    char *file;              /* where it failed (else where it is declared); NULL */
    const char *file_found;  /* set by the runner for suggest: file as the file system
                                finds it (a relative one under the project root); NULL
                                when it cannot be found. Not owned. */
    int line;                /* 0: unknown */
    char *message;           /* a failure's text (whole), a skip's reason; NULL */
    char *output;            /* its own stdout/stderr when the framework keeps them
                                apart; NULL */
    bool stuck;              /* set by the runner: the test it killed as stuck (counted
                                as stuck, not as failed) */
};

/* A compiler error that stopped the build before any test ran. */
struct test_diagnostic {
    char *file;
    int line, column;        /* 0: unknown */
    char *message;
};

struct test_report {
    struct test_case *cases;
    size_t n_cases, cap_cases;
    struct test_diagnostic *diags;
    size_t n_diags, cap_diags;
    bool structured;         /* read from the framework's machine-readable output
                                (false: a text fallback, less exact) */
    bool build_failed;       /* the tests were never run: see diags */
    char note[256];          /* what the parse could not do, for the agent; "" */
};

/* Everything the run left, for parse(). */
struct test_output {
    const struct test_plan *plan;
    const char *out;         /* all of stdout (NUL-terminated) */
    size_t out_len;
    const char *err;         /* all of stderr */
    size_t err_len;
    int exit_code;           /* -1 when killed by a signal */
    bool stuck;              /* the runner killed it as stuck (see the run's `stuck`) */
    const char *report_path; /* the command's report_path (the file may be missing) */
};

/* Progress while the tests run, kept by the runner; an adapter's live parser
 * reports through these (any may be left uncalled: the counts then come at the
 * end). name is copied. */
struct test_live;
void test_live_phase(struct test_live *lv, enum test_phase phase);
void test_live_started(struct test_live *lv, const char *name);
void test_live_finished(struct test_live *lv, const char *name, enum test_status st);

struct test_adapter {
    const char *name;          /* "cargo": debug_test's `framework` value */
    const char *display;       /* "Cargo" */
    const char *language;      /* "rust": the onboarding answer's project.language */
    const char *build_system;  /* "cargo" */
    const char *program;       /* the program it needs on PATH ("cargo"), NULL: the
                                  `command` itself */
    const char *provides;      /* where that program comes from, for an error:
                                  "Debian package cargo" */
    bool builds_first;         /* command() honours plan->build_only */

    /* Confidence 0-100 that the project (and command, NULL when not given) is this
     * framework's; 0: not it. Reads files, never runs anything. */
    int (*detect)(const char *project_root, const char *command);
    /* The command for plan (suite, level, or one test). -1 with VALIDATION_ERROR
     * when the plan cannot be run ("catch2 needs command"). */
    int (*command)(const struct test_plan *plan, struct test_command *out,
                   struct strobe_error *e);

    /* Live progress, optional (NULL: none). live_open makes the per-run state
     * passed to live_line (NULL is fine when the parser needs none). live_line gets
     * each line of stream 1 (stdout) or 2 (stderr) without its newline; partial:
     * the line has no newline yet and output has been silent for a second (pytest
     * prints a test's name before running it and its verdict after). */
    void *(*live_open)(void);
    void (*live_line)(void *state, struct test_live *lv, int stream, const char *line,
                      size_t len, bool partial);
    void (*live_close)(void *state);

    /* The outcome of the run. Fills out (test_report_init'ed by the caller); -1 only
     * when memory runs out. A run with no parseable result leaves out empty; the
     * runner then reports the exit code. */
    int (*parse)(const struct test_output *o, struct test_report *out);

    /* Trace patterns (base/pattern_match.h syntax) for a failed case: from where it
     * failed, else from its name. Appends at most max malloc'd strings to out;
     * returns how many. NULL: test_suggest_default (report.c). */
    int (*suggest)(const struct test_case *c, char **out, int max);

    /* The onboarding sentence when the project has no tests ("Cargo projects
     * support #[test] functions in src/ and a tests/ directory."). */
    const char *no_tests_hint;
    /* How to make a stuck process print its own stacks (a runtime's view, which
     * native stacks of an interpreter do not give): the signal the runner sends
     * before the kill, 0: none; env entries the run needs for that ("KEY=VALUE",
     * NULL: none). What it prints goes into the stuck test's report. */
    int dump_signal;
    const char *dump_env;
    /* What tracing can and cannot see in this framework's tests, told with every
     * traced run (tracePatterns or watches); NULL: nothing to add. */
    const char *trace_note;
    /* Its runs cannot go under the debugger (trace_note says why): a traced run
     * request runs plain, and says so. */
    bool untraceable;
    /* Optional: that dump as a person reads it, from what the processes printed
     * after the signal (go test wraps it in JSON events); NULL: as printed. */
    void (*dump_text)(const char *printed, size_t n, struct strbuf *out);
    /* Optional: that dump's stacks in place of the native ones, thread by thread
     * (testrun/pydump.h for CPython's); returns how many threads it read. */
    int (*dump_stacks)(const char *dump, const char *root, struct collector_stacks *stacks);
};

/* ---- helpers for adapters (tcmd.c, report.c) ------------------------------- */

void tcmd_arg(struct test_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tcmd_env(struct test_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Splits a command line (the `command` field) into arguments as sh would for
 * words, single and double quotes and backslashes (no expansions). -1 when a quote
 * is not closed. */
int tcmd_split(struct test_command *c, const char *line);
void tcmd_free(struct test_command *c);
/* The command as one line a POSIX shell runs as is (env, cd, quoting). */
void tcmd_shell(const struct test_command *c, const char *project_root, struct strbuf *out);

void test_report_init(struct test_report *r);
void test_report_free(struct test_report *r);
/* Appends a case named name (copied); NULL when memory runs out. */
struct test_case *test_report_add(struct test_report *r, const char *name,
                                  enum test_status st);
/* The case named name, NULL if none. */
struct test_case *test_report_find(struct test_report *r, const char *name);
struct test_diagnostic *test_report_diag(struct test_report *r, const char *file, int line,
                                         int column, const char *message);
/* Sets *field to a copy of the first n bytes of s (n < 0: all of it), freeing the
 * old value. */
void test_set_str(char **field, const char *s, long n);
/* Finds the first "FILE:LINE" in text whose FILE ends with one of the suffixes
 * (".rs", ".c" ...); fills file (malloc'd) and line. false when none. */
bool test_find_location(const char *text, const char *const *suffixes, char **file,
                        int *line);
/* Appends a copy of pattern to out[0..*n) unless it is there, empty, or out holds
 * max already. */
void test_suggest_add(char **out, int *n, int max, const char *pattern);
/* Suggested patterns without framework knowledge: the failure file's stem as a
 * file pattern ("@file:parser.c"), and the test name's namespaces ("parser::*"). */
int test_suggest_default(const struct test_case *c, char **out, int max);
/* The next line of [*p, end) in *line and *len, without its newline, and *p moved
 * past it; false at the end. */
bool test_next_line(const char **p, const char *end, const char **line, size_t *len);
/* Whether s (n bytes) starts with prefix. */
bool test_starts_with(const char *s, size_t n, const char *prefix);
/* Whether project_root contains path (relative); for detect(). */
bool test_has_file(const char *project_root, const char *path);

/* ---- the adapters (adapters.c holds the table) ----------------------------- */

extern const struct test_adapter test_adapter_cargo;
extern const struct test_adapter test_adapter_gtest;
extern const struct test_adapter test_adapter_catch2;
extern const struct test_adapter test_adapter_ctest;
extern const struct test_adapter test_adapter_pytest;
extern const struct test_adapter test_adapter_unittest;
extern const struct test_adapter test_adapter_go;
extern const struct test_adapter test_adapter_jest;
extern const struct test_adapter test_adapter_vitest;
extern const struct test_adapter test_adapter_mocha;
extern const struct test_adapter test_adapter_generic;

/* Every adapter, generic last. */
extern const struct test_adapter *const test_adapters[];
extern const size_t test_adapters_count;
/* By framework name ("cargo"), case-insensitive; NULL when unknown. */
const struct test_adapter *test_adapter_named(const char *name);
/* The adapter with the highest confidence for the project; generic when none is
 * above 0. *confidence gets its value. */
const struct test_adapter *test_adapter_detect(const char *project_root, const char *command,
                                               int *confidence);

#endif
