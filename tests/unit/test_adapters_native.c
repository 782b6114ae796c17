/*
 * test_adapters_native.c - unit tests of the cargo, GoogleTest and go test adapters
 * (testrun/adapter_{cargo,gtest,go}.c): detection, the commands they build,
 * their live progress, and parse() on output recorded from the fixture projects
 * under tests/fixtures/testproj/ (tests/unit/data/testrun/record_native.sh made the
 * recordings). Runs from the repository root, as make does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testrun/adapter.h"
#include "tests/unit/tmpdir.h"

#define DATA "tests/unit/data/testrun/"
#define PROJ "tests/fixtures/testproj/"

/* ---- the runner's progress calls, recorded ----------------------------------- */

static char live_log[8192];

static void live_log_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void live_log_add(const char *fmt, ...)
{
    size_t n = strlen(live_log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(live_log + n, sizeof live_log - n, fmt, ap);
    va_end(ap);
}

static const char *const STATUS[] = {"passed", "failed", "skipped"};
static const char *const PHASE[] = {"starting", "compiling", "running", "finished"};

void test_live_phase(struct test_live *lv, enum test_phase phase)
{
    (void)lv;
    live_log_add("phase %s\n", PHASE[phase]);
}

void test_live_started(struct test_live *lv, const char *name)
{
    (void)lv;
    live_log_add("started %s\n", name);
}

void test_live_finished(struct test_live *lv, const char *name, enum test_status st)
{
    (void)lv;
    live_log_add("finished %s %s\n", name, STATUS[st]);
}

/* Feeds every line of file on stream to the adapter's live parser. */
static void feed(const struct test_adapter *a, void *state, const char *file, int stream)
{
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        a->live_line(state, NULL, stream, line, n, false);
    }
    fclose(f);
}

/* ---- recorded runs ------------------------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    struct strbuf sb = {0};
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_append(&sb, buf, n);
    fclose(f);
    return sb.len ? sb_take(&sb) : strdup("");
}

struct recorded {
    struct test_plan plan;
    struct test_output out;
    char *stdout_text, *stderr_text;
    struct test_report report;
};

/* Parses the recording DATA/name.out and .err (report: a report file or NULL)
 * with adapter a, as a run in project root that ended with exit_code, or that the
 * runner killed as stuck. */
static void parse_as(struct recorded *r, const struct test_adapter *a, const char *root,
                     const char *name, const char *report, int exit_code, bool stuck)
{
    char path[512];
    memset(r, 0, sizeof *r);
    r->plan = (struct test_plan){.project_root = root, .work_dir = "/w"};
    snprintf(path, sizeof path, DATA "%s.out", name);
    r->stdout_text = slurp(path);
    snprintf(path, sizeof path, DATA "%s.err", name);
    r->stderr_text = slurp(path);
    r->out = (struct test_output){.plan = &r->plan,
                                  .out = r->stdout_text,
                                  .out_len = strlen(r->stdout_text),
                                  .err = r->stderr_text,
                                  .err_len = strlen(r->stderr_text),
                                  .exit_code = exit_code,
                                  .stuck = stuck,
                                  .report_path = report};
    test_report_init(&r->report);
    assert_int_equal(a->parse(&r->out, &r->report), 0);
}

static void parse_recorded(struct recorded *r, const struct test_adapter *a, const char *root,
                           const char *name, const char *report, int exit_code)
{
    parse_as(r, a, root, name, report, exit_code, false);
}

static void parse_killed(struct recorded *r, const struct test_adapter *a, const char *root,
                         const char *name, const char *report)
{
    parse_as(r, a, root, name, report, -1, true);
}

static const char STUCK_MESSAGE[] = "killed by Strobe: stuck (see `stuck` for its threads' "
                                    "stacks)";

static void recorded_free(struct recorded *r)
{
    test_report_free(&r->report);
    free(r->stdout_text);
    free(r->stderr_text);
}

static int count(const struct test_report *r, enum test_status st)
{
    int n = 0;
    for (size_t i = 0; i < r->n_cases; i++)
        n += r->cases[i].status == st;
    return n;
}

static const struct test_case *must_find(struct test_report *r, const char *name)
{
    const struct test_case *c = test_report_find(r, name);
    if (!c)
        fail_msg("no case named %s", name);
    return c;
}

/* The command for plan as a shell line (cd PROJ && ...), with its report path. */
static const char *shell(const struct test_adapter *a, const struct test_plan *plan,
                         char *report, size_t report_size)
{
    static char line[2048];
    struct test_command c = {0};
    struct strobe_error e = {0};
    assert_int_equal(a->command(plan, &c, &e), 0);
    struct strbuf sb = {0};
    tcmd_shell(&c, NULL, &sb);
    snprintf(line, sizeof line, "%s", sb.buf);
    if (report)
        snprintf(report, report_size, "%s", c.report_path ? c.report_path : "");
    sb_free(&sb);
    tcmd_free(&c);
    return line;
}

/* Suggestions for c, joined with spaces. */
static const char *suggestions(const struct test_adapter *a, const struct test_case *c)
{
    static char buf[1024];
    char *out[8];
    int n = a->suggest(c, out, 8);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "", out[i]);
        free(out[i]);
    }
    return buf;
}

/* ---- cargo ----------------------------------------------------------------------- */

static void test_cargo_detect(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_cargo;
    assert_int_equal(a->detect(PROJ "cargo", NULL), 90);
    assert_int_equal(a->detect(PROJ "cargo", "cargo test -p stackfix"), 90);
    assert_int_equal(a->detect(PROJ "cargo", "build/stack_test"), 0);
    assert_int_equal(a->detect(PROJ "go", NULL), 0);
    int conf;
    assert_ptr_equal(test_adapter_detect(PROJ "cargo", NULL, &conf), a);
    assert_int_equal(conf, 90);
    assert_ptr_equal(test_adapter_named("Cargo"), a);
}

static void test_cargo_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_cargo;
    struct test_plan p = {.project_root = "/p", .work_dir = "/w"};
    assert_string_equal(shell(a, &p, NULL, 0),
                        "RUSTC_BOOTSTRAP=1 cargo test --no-fail-fast -- -Z unstable-options "
                        "--format json --report-time");
    p.level = TEST_LEVEL_UNIT;
    p.test = "stack::tests::pop_returns_last_pushed";
    assert_string_equal(shell(a, &p, NULL, 0),
                        "RUSTC_BOOTSTRAP=1 cargo test --lib --no-fail-fast -- "
                        "stack::tests::pop_returns_last_pushed --exact -Z unstable-options "
                        "--format json --report-time");
    p.level = TEST_LEVEL_INTEGRATION;
    p.test = NULL;
    assert_string_equal(shell(a, &p, NULL, 0),
                        "RUSTC_BOOTSTRAP=1 cargo test --test '*' --no-fail-fast -- -Z "
                        "unstable-options --format json --report-time");
    p.level = TEST_LEVEL_E2E;
    assert_string_equal(shell(a, &p, NULL, 0),
                        "RUSTC_BOOTSTRAP=1 cargo test --test 'e2e*' --no-fail-fast -- -Z "
                        "unstable-options --format json --report-time");
    /* The rerun a person types: a substring filter, no JSON. */
    p = (struct test_plan){.project_root = "/p", .test = "hang_deadlock"};
    assert_string_equal(shell(a, &p, NULL, 0), "cargo test -- hang_deadlock");
    /* A command of the agent's keeps its own arguments on both sides of "--". */
    p = (struct test_plan){.project_root = "/p", .command = "cargo test -p core -- --nocapture",
                           .work_dir = "/w", .test = "x"};
    assert_string_equal(shell(a, &p, NULL, 0),
                        "RUSTC_BOOTSTRAP=1 cargo test -p core --no-fail-fast -- --nocapture x "
                        "-Z unstable-options --format json --report-time");
    struct test_command c = {0};
    struct strobe_error e = {0};
    p.command = "make test";
    assert_int_equal(a->command(&p, &c, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    tcmd_free(&c);
}

static const char POP_MESSAGE[] = "assertion `left == right` failed: pop must return the last "
                                  "value pushed\n  left: Some(1)\n right: Some(3)";

static void check_cargo_suite(struct test_report *r, const char *pop_message)
{
    assert_int_equal(r->n_cases, 6);
    assert_int_equal(count(r, TEST_PASSED), 4);
    assert_int_equal(count(r, TEST_FAILED), 1);
    assert_int_equal(count(r, TEST_SKIPPED), 1);
    assert_false(r->build_failed);
    assert_int_equal(must_find(r, "stack::tests::push_then_len")->status, TEST_PASSED);
    assert_int_equal(must_find(r, "stack::tests::empty_pop_is_none")->status, TEST_PASSED);
    assert_int_equal(must_find(r, "stack::tests::hang_deadlock")->status, TEST_PASSED);
    assert_int_equal(must_find(r, "many_pushes_keep_count")->status, TEST_PASSED);
    const struct test_case *ign = must_find(r, "stack::tests::million_pushes");
    assert_int_equal(ign->status, TEST_SKIPPED);
    assert_string_equal(ign->message, "needs a million pushes");
    const struct test_case *f = must_find(r, "stack::tests::pop_returns_last_pushed");
    assert_int_equal(f->status, TEST_FAILED);
    assert_string_equal(f->file, "src/stack.rs");
    assert_int_equal(f->line, 67);
    assert_string_equal(f->message, pop_message);
    assert_non_null(strstr(f->output, "panicked at"));
}

static void test_cargo_parse_json(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_cargo, PROJ "cargo", "cargo/suite", NULL, 101);
    assert_true(r.report.structured);
    assert_string_equal(r.report.note, "");
    check_cargo_suite(&r.report, POP_MESSAGE);
    assert_true(must_find(&r.report, "stack::tests::push_then_len")->duration_ms >= 0);
    assert_string_equal(suggestions(&test_adapter_cargo,
                                    must_find(&r.report, "stack::tests::pop_returns_last_pushed")),
                        "**::stack::** @file:stack.rs");
    recorded_free(&r);
}

/* Debian 12's rustc 1.63 words its panics the old way: 'MESSAGE', FILE:LINE:COL. */
static void test_cargo_parse_rust163(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_cargo, PROJ "cargo", "cargo/suite_rust163", NULL, 101);
    assert_true(r.report.structured);
    check_cargo_suite(&r.report, "assertion failed: `(left == right)`\n  left: `Some(1)`,\n "
                                 "right: `Some(3)`: pop must return the last value pushed");
    recorded_free(&r);
}

/* RUST_BACKTRACE=1: the message stops where the backtrace starts. */
static void test_cargo_parse_backtrace(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_cargo, PROJ "cargo", "cargo/backtrace", NULL, 101);
    assert_int_equal(r.report.n_cases, 1);
    const struct test_case *f = must_find(&r.report, "stack::tests::pop_returns_last_pushed");
    assert_string_equal(f->message, POP_MESSAGE);
    assert_string_equal(f->file, "src/stack.rs");
    assert_int_equal(f->line, 67);
    assert_true(f->duration_ms >= 0);
    assert_non_null(strstr(f->output, "stack backtrace:"));
    recorded_free(&r);
}

static void test_cargo_parse_text(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_cargo, PROJ "cargo", "cargo/text", NULL, 101);
    assert_false(r.report.structured);
    assert_non_null(strstr(r.report.note, "no JSON"));
    check_cargo_suite(&r.report, POP_MESSAGE);
    assert_int_equal(must_find(&r.report, "many_pushes_keep_count")->duration_ms, -1);
    recorded_free(&r);
}

static void test_cargo_parse_build_failure(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_cargo, PROJ "cargo", "cargo/build_fail", NULL, 101);
    assert_true(r.report.build_failed);
    assert_int_equal(r.report.n_cases, 0);
    assert_int_equal(r.report.n_diags, 2);
    const struct test_diagnostic *d = r.report.diags;
    assert_string_equal(d[0].file, "src/stack.rs");
    assert_int_equal(d[0].line, 22);
    assert_int_equal(d[0].column, 32);
    assert_string_equal(d[0].message, "cannot find value `zero` in this scope");
    assert_string_equal(d[1].file, "src/stack.rs");
    assert_int_equal(d[1].line, 26);
    assert_int_equal(d[1].column, 26);
    assert_string_equal(d[1].message, "cannot add `&str` to `usize`");
    recorded_free(&r);
}

/* Killed as stuck: the test that started and never ended failed. */
static void test_cargo_parse_killed(void **state)
{
    (void)state;
    struct recorded r;
    parse_killed(&r, &test_adapter_cargo, PROJ "cargo", "cargo/killed", NULL);
    assert_int_equal(r.report.n_cases, 1);
    const struct test_case *c = must_find(&r.report, "stack::tests::hang_deadlock");
    assert_int_equal(c->status, TEST_FAILED);
    assert_string_equal(c->message, STUCK_MESSAGE);
    recorded_free(&r);
}

static void test_cargo_live(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_cargo;
    live_log[0] = '\0';
    feed(a, NULL, DATA "cargo/backtrace.err", 2);
    feed(a, NULL, DATA "cargo/backtrace.out", 1);
    assert_string_equal(live_log,
                        "phase compiling\n"
                        "phase running\n"
                        "started stack::tests::pop_returns_last_pushed\n"
                        "finished stack::tests::pop_returns_last_pushed failed\n");
    live_log[0] = '\0';
    /* Text: one test thread prints the name first, the verdict when it ends. */
    const char begun[] = "test stack::tests::hang_deadlock ... ";
    a->live_line(NULL, NULL, 1, begun, strlen(begun), true);
    const char ignored[] = "test stack::tests::million_pushes ... ignored, needs a million pushes";
    a->live_line(NULL, NULL, 1, ignored, strlen(ignored), false);
    assert_string_equal(live_log, "started stack::tests::hang_deadlock\n"
                                  "finished stack::tests::million_pushes skipped\n");
}

/* ---- GoogleTest ---------------------------------------------------------------- */

/* A file of size bytes with marker (when not NULL) at offset. */
static void write_probe(const char *path, long size, const char *marker, long offset)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char *buf = calloc(1, (size_t)size);
    assert_non_null(buf);
    if (marker)
        memcpy(buf + offset, marker, strlen(marker));
    assert_int_equal(fwrite(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    free(buf);
    chmod(path, 0755);
}

static void test_gtest_detect(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_gtest;
    char dir[] = "/tmp/strobe-gtest-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[PATH_MAX];
    /* Across the 1 MiB boundary of the probe's reads. */
    snprintf(path, sizeof path, "%s/straddle", dir);
    write_probe(path, 3L << 20, "gtest_output", (1L << 20) - 5);
    assert_int_equal(a->detect("/nowhere", path), 90);
    snprintf(path, sizeof path, "%s/dynamic", dir);
    write_probe(path, 4096, "_ZN7testing4TestC2Ev", 100);
    assert_int_equal(a->detect(dir, "dynamic --gtest_brief=1"), 0); /* not a path */
    assert_int_equal(a->detect(dir, "./dynamic --gtest_brief=1"), 90);
    snprintf(path, sizeof path, "%s/plain", dir);
    write_probe(path, 4096, NULL, 0);
    assert_int_equal(a->detect(dir, "./plain"), 0);
    assert_int_equal(a->detect(dir, "./missing"), 0);
    /* A project with a Makefile and no command is not GoogleTest's to claim. */
    assert_int_equal(a->detect(PROJ "gtest", NULL), 0);
    rm_dir(dir);
}

static void test_gtest_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_gtest;
    struct test_plan p = {.project_root = "/p", .work_dir = "/w"};
    struct test_command c = {0};
    struct strobe_error e = {0};
    assert_int_equal(a->command(&p, &c, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_non_null(strstr(e.msg, "command"));
    tcmd_free(&c);
    char report[256];
    p.command = "build/stack_test";
    assert_string_equal(shell(a, &p, report, sizeof report),
                        "build/stack_test --gtest_output=json:/w/gtest.json");
    assert_string_equal(report, "/w/gtest.json");
    p.test = "StackTest.PopReturnsLastPushed";
    assert_string_equal(shell(a, &p, NULL, 0),
                        "build/stack_test --gtest_filter=StackTest.PopReturnsLastPushed "
                        "--gtest_output=json:/w/gtest.json");
    p = (struct test_plan){.project_root = "/p", .command = "build/stack_test",
                           .test = "HangDeadlock"};
    assert_string_equal(shell(a, &p, report, sizeof report),
                        "build/stack_test '--gtest_filter=*HangDeadlock*'");
    assert_string_equal(report, "");
}

static void test_gtest_parse_report(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_gtest, PROJ "gtest", "gtest/suite", DATA "gtest/suite.json",
                   1);
    struct test_report *rep = &r.report;
    assert_true(rep->structured);
    assert_int_equal(rep->n_cases, 5);
    assert_int_equal(count(rep, TEST_PASSED), 3);
    assert_int_equal(count(rep, TEST_FAILED), 1);
    assert_int_equal(count(rep, TEST_SKIPPED), 1);
    const struct test_case *ok = must_find(rep, "StackTest.PushThenSize");
    assert_int_equal(ok->status, TEST_PASSED);
    assert_string_equal(ok->file, "stack_test.cpp");
    assert_int_equal(ok->line, 14);
    assert_int_equal(ok->duration_ms, 0);
    assert_int_equal(must_find(rep, "StackTest.HangDeadlock")->status, TEST_PASSED);
    const struct test_case *skip = must_find(rep, "StackTest.MillionPushes");
    assert_int_equal(skip->status, TEST_SKIPPED);
    assert_string_equal(skip->message, "needs a million pushes");
    const struct test_case *f = must_find(rep, "StackTest.PopReturnsLastPushed");
    assert_int_equal(f->status, TEST_FAILED);
    assert_string_equal(f->file, "stack_test.cpp");
    assert_int_equal(f->line, 35);
    assert_string_equal(f->message, "Expected equality of these values:\n  s.pop()\n    "
                                    "Which is: 1\n  3\npop must return the last value pushed");
    assert_string_equal(f->output, "stack_test.cpp:35: Failure\nExpected equality of these "
                                   "values:\n  s.pop()\n    Which is: 1\n  3\npop must return "
                                   "the last value pushed\n");
    assert_string_equal(suggestions(&test_adapter_gtest, f), "Stack*::** @file:stack.cpp **::pop");
    struct test_case outside = {.name = "StackTest.Pop", .file = "src/stack.cpp", .line = 9};
    assert_string_equal(suggestions(&test_adapter_gtest, &outside), "@file:stack.cpp");
    recorded_free(&r);
}

/* Without the report (a command without --gtest_output): the same from stdout. */
static void test_gtest_parse_text(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_gtest, PROJ "gtest", "gtest/suite", "/nonexistent", 1);
    struct test_report *rep = &r.report;
    assert_false(rep->structured);
    assert_non_null(strstr(rep->note, "no JSON report"));
    assert_int_equal(rep->n_cases, 5);
    assert_int_equal(count(rep, TEST_PASSED), 3);
    assert_string_equal(must_find(rep, "StackTest.MillionPushes")->message,
                        "needs a million pushes");
    const struct test_case *f = must_find(rep, "StackTest.PopReturnsLastPushed");
    assert_string_equal(f->file, "stack_test.cpp");
    assert_int_equal(f->line, 35);
    assert_string_equal(f->message, "Expected equality of these values:\n  s.pop()\n    "
                                    "Which is: 1\n  3\npop must return the last value pushed");
    recorded_free(&r);
}

/* A segfault in the middle: no report; the test without a verdict failed. */
static void test_gtest_parse_crash(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_gtest, PROJ "gtest", "gtest/crash", "/nonexistent", -1);
    struct test_report *rep = &r.report;
    assert_int_equal(rep->n_cases, 3);
    assert_int_equal(count(rep, TEST_PASSED), 2);
    const struct test_case *f = must_find(rep, "StackTest.PopReturnsLastPushed");
    assert_int_equal(f->status, TEST_FAILED);
    assert_string_equal(f->message, "the test binary was killed by a signal while this test ran");
    recorded_free(&r);
}

static void test_gtest_parse_killed(void **state)
{
    (void)state;
    struct recorded r;
    parse_killed(&r, &test_adapter_gtest, PROJ "gtest", "gtest/killed", "/nonexistent");
    struct test_report *rep = &r.report;
    assert_int_equal(rep->n_cases, 5);
    assert_int_equal(count(rep, TEST_PASSED), 2);
    assert_int_equal(count(rep, TEST_FAILED), 2);
    assert_int_equal(count(rep, TEST_SKIPPED), 1);
    const struct test_case *c = must_find(rep, "StackTest.HangDeadlock");
    assert_int_equal(c->status, TEST_FAILED);
    assert_string_equal(c->message, STUCK_MESSAGE);
    recorded_free(&r);
}

static void test_gtest_live(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_gtest;
    void *st = a->live_open();
    live_log[0] = '\0';
    feed(a, st, DATA "gtest/suite.out", 1);
    a->live_close(st);
    /* The summary's "[  FAILED  ] StackTest.PopReturnsLastPushed" is not a second
     * verdict. */
    assert_string_equal(live_log,
                        "phase running\n"
                        "started StackTest.PushThenSize\n"
                        "finished StackTest.PushThenSize passed\n"
                        "started StackTest.EmptyPop\n"
                        "finished StackTest.EmptyPop passed\n"
                        "started StackTest.PopReturnsLastPushed\n"
                        "finished StackTest.PopReturnsLastPushed failed\n"
                        "started StackTest.MillionPushes\n"
                        "finished StackTest.MillionPushes skipped\n"
                        "started StackTest.HangDeadlock\n"
                        "finished StackTest.HangDeadlock passed\n");
}

/* ---- go test ------------------------------------------------------------------- */

static void test_go_detect_and_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_go;
    assert_int_equal(a->detect(PROJ "go", NULL), 90);
    assert_int_equal(a->detect(PROJ "go", "go test ./stack"), 90);
    assert_int_equal(a->detect(PROJ "cargo", NULL), 0);
    assert_int_equal(a->dump_signal, SIGQUIT);
    struct test_plan p = {.project_root = "/p", .work_dir = "/w"};
    assert_string_equal(shell(a, &p, NULL, 0), "go test -json -count=1 ./...");
    p.test = "TestHangDeadlock";
    p.level = TEST_LEVEL_UNIT; /* no such notion in go: ignored */
    assert_string_equal(shell(a, &p, NULL, 0),
                        "go test -json -count=1 -run '^TestHangDeadlock$' ./...");
    p = (struct test_plan){.project_root = "/p", .test = "TestLen/two"};
    assert_string_equal(shell(a, &p, NULL, 0), "go test -run '^TestLen$/^two$' ./...");
    p.test = "Deadlock";
    assert_string_equal(shell(a, &p, NULL, 0), "go test -run Deadlock ./...");
    p.test = "a.b(c)";
    assert_string_equal(shell(a, &p, NULL, 0), "go test -run 'a\\.b\\(c\\)' ./...");
    p = (struct test_plan){.project_root = "/p", .command = "go test -v ./stack", .work_dir = "/w"};
    assert_string_equal(shell(a, &p, NULL, 0), "go test -v ./stack -json -count=1");
}

static void test_go_parse(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_go, PROJ "go", "go/suite", NULL, 1);
    struct test_report *rep = &r.report;
    assert_true(rep->structured);
    assert_false(rep->build_failed);
    assert_int_equal(rep->n_cases, 8);
    assert_int_equal(count(rep, TEST_PASSED), 6);
    assert_int_equal(count(rep, TEST_FAILED), 1);
    assert_int_equal(count(rep, TEST_SKIPPED), 1);
    static const char *const passed[] = {"TestPushThenLen", "TestEmptyPop", "TestLen",
                                         "TestLen/empty", "TestLen/two", "TestHangDeadlock"};
    for (size_t i = 0; i < sizeof passed / sizeof *passed; i++)
        assert_int_equal(must_find(rep, passed[i])->status, TEST_PASSED);
    const struct test_case *skip = must_find(rep, "TestMillionPushes");
    assert_int_equal(skip->status, TEST_SKIPPED);
    assert_string_equal(skip->message, "needs a million pushes");
    assert_string_equal(skip->file, "stack/stack_test.go");
    assert_int_equal(skip->line, 56);
    const struct test_case *f = must_find(rep, "TestPopReturnsLastPushed");
    assert_int_equal(f->status, TEST_FAILED);
    assert_string_equal(f->file, "stack/stack_test.go");
    assert_int_equal(f->line, 34);
    assert_string_equal(f->message, "Pop() = 1, want 3: pop must return the last value pushed");
    assert_int_equal(f->duration_ms, 0);
    assert_string_equal(suggestions(&test_adapter_go, f), "@file:stack/stack.go");
    recorded_free(&r);
}

static void test_go_parse_build_failure(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_go, PROJ "go", "go/build_fail", NULL, 1);
    struct test_report *rep = &r.report;
    assert_true(rep->build_failed);
    assert_int_equal(rep->n_cases, 0);
    assert_int_equal(rep->n_diags, 1);
    assert_string_equal(rep->diags[0].file, "stack/stack.go");
    assert_int_equal(rep->diags[0].line, 30);
    assert_int_equal(rep->diags[0].column, 24);
    assert_string_equal(rep->diags[0].message, "undefined: missing");
    recorded_free(&r);
}

/* The stuck test stopped with SIGQUIT: failed, the goroutine dump its output. */
static void test_go_parse_sigquit(void **state)
{
    (void)state;
    struct recorded r;
    parse_recorded(&r, &test_adapter_go, PROJ "go", "go/sigquit", NULL, 1);
    struct test_report *rep = &r.report;
    assert_int_equal(rep->n_cases, 1);
    const struct test_case *c = must_find(rep, "TestHangDeadlock");
    assert_int_equal(c->status, TEST_FAILED);
    assert_string_equal(c->message, "the test binary was stopped with SIGQUIT while this test "
                                    "ran (its goroutines are in the output)");
    assert_non_null(strstr(c->output, "stackfix/stack.lockAThenB("));
    assert_non_null(strstr(c->output, "stackfix/stack.lockBThenA("));
    recorded_free(&r);
}

/* Killed with the go command: no package verdict, the running test failed. */
static void test_go_parse_killed(void **state)
{
    (void)state;
    struct recorded r;
    parse_killed(&r, &test_adapter_go, PROJ "go", "go/killed", NULL);
    assert_int_equal(r.report.n_cases, 1);
    const struct test_case *c = must_find(&r.report, "TestHangDeadlock");
    assert_int_equal(c->status, TEST_FAILED);
    assert_string_equal(c->message, "killed by Strobe: stuck (see `stuck` for its threads' "
                                    "stacks; its goroutines are in the output)");
    recorded_free(&r);
}

static void test_go_live(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_go;
    void *st = a->live_open();
    live_log[0] = '\0';
    const char build[] = "# example.com/stackfix/stack [example.com/stackfix/stack.test]";
    a->live_line(st, NULL, 2, build, strlen(build), false);
    feed(a, st, DATA "go/suite.out", 1);
    a->live_close(st);
    assert_string_equal(live_log,
                        "phase compiling\n"
                        "phase running\n"
                        "started TestPushThenLen\n"
                        "finished TestPushThenLen passed\n"
                        "started TestEmptyPop\n"
                        "finished TestEmptyPop passed\n"
                        "started TestPopReturnsLastPushed\n"
                        "finished TestPopReturnsLastPushed failed\n"
                        "started TestLen\n"
                        "started TestLen/empty\n"
                        "started TestLen/two\n"
                        "finished TestLen/empty passed\n"
                        "finished TestLen/two passed\n"
                        "finished TestLen passed\n"
                        "started TestMillionPushes\n"
                        "finished TestMillionPushes skipped\n"
                        "started TestHangDeadlock\n"
                        "finished TestHangDeadlock passed\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cargo_detect),
        cmocka_unit_test(test_cargo_command),
        cmocka_unit_test(test_cargo_parse_json),
        cmocka_unit_test(test_cargo_parse_rust163),
        cmocka_unit_test(test_cargo_parse_backtrace),
        cmocka_unit_test(test_cargo_parse_text),
        cmocka_unit_test(test_cargo_parse_build_failure),
        cmocka_unit_test(test_cargo_parse_killed),
        cmocka_unit_test(test_cargo_live),
        cmocka_unit_test(test_gtest_detect),
        cmocka_unit_test(test_gtest_command),
        cmocka_unit_test(test_gtest_parse_report),
        cmocka_unit_test(test_gtest_parse_text),
        cmocka_unit_test(test_gtest_parse_crash),
        cmocka_unit_test(test_gtest_parse_killed),
        cmocka_unit_test(test_gtest_live),
        cmocka_unit_test(test_go_detect_and_command),
        cmocka_unit_test(test_go_parse),
        cmocka_unit_test(test_go_parse_build_failure),
        cmocka_unit_test(test_go_parse_sigquit),
        cmocka_unit_test(test_go_parse_killed),
        cmocka_unit_test(test_go_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
