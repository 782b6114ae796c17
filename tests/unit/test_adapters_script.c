/*
 * test_adapters_script.c - unit tests of the unittest, jest, vitest and mocha
 * adapters (testrun/adapter_*.c, jsproj.c): detection on the fixture projects
 * and on scratch ones, the commands they build, and parse() and the live parser
 * fed with output recorded from real runs of tests/fixtures/testproj/{unittest,js}
 * (tests/unit/data/testrun/, absolute paths rewritten to /src/testproj).
 *
 * The runner owns test_live_*; the stubs below record the calls instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testrun/adapter.h"
#include "tmpdir.h"

/* ---- the runner's progress calls, recorded ---------------------------------- */

#define LIVE_MAX 64
static struct {
    char what;        /* 'p' phase, 's' started, 'f' finished */
    char name[256];
    int value;        /* phase or status */
} live_calls[LIVE_MAX];
static int n_live;

static void live_record(char what, const char *name, int value)
{
    if (n_live == LIVE_MAX)
        return;
    live_calls[n_live].what = what;
    snprintf(live_calls[n_live].name, sizeof live_calls[n_live].name, "%s", name ? name : "");
    live_calls[n_live++].value = value;
}

void test_live_phase(struct test_live *lv, enum test_phase phase)
{
    (void)lv;
    live_record('p', NULL, (int)phase);
}

void test_live_started(struct test_live *lv, const char *name)
{
    (void)lv;
    live_record('s', name, 0);
}

void test_live_finished(struct test_live *lv, const char *name, enum test_status st)
{
    (void)lv;
    live_record('f', name, (int)st);
}

/* ---- helpers ------------------------------------------------------------------- */

static char repo[PATH_MAX]; /* the checkout: build/tests/<this> is three levels down */

static int find_repo(void **state)
{
    (void)state;
    ssize_t n = readlink("/proc/self/exe", repo, sizeof repo - 1);
    if (n <= 0)
        return -1;
    repo[n] = '\0';
    for (int i = 0; i < 3; i++) {
        char *slash = strrchr(repo, '/');
        if (!slash)
            return -1;
        *slash = '\0';
    }
    return 0;
}

static char *data(const char *rel, size_t *len)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/unit/data/testrun/%s", repo, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail_msg("cannot open %s", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static const char *fixture(const char *rel)
{
    static char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/fixtures/testproj/%s", repo, rel);
    return path;
}

static char report_path_buf[2 * PATH_MAX];
static const char *report_file(const char *rel)
{
    snprintf(report_path_buf, sizeof report_path_buf, "%s/tests/unit/data/testrun/%s", repo, rel);
    return report_path_buf;
}

/* The test filter of the next parse_recorded (NULL: the suite), and whether the
 * runner killed that run as stuck. */
static const char *plan_test;
static bool output_stuck;

/* Runs a's parse() over recorded stdout/stderr files (NULL: empty) and a report. */
static void parse_recorded(const struct test_adapter *a, const char *root, const char *out_rel,
                           const char *err_rel, const char *report, int exit_code,
                           struct test_report *r)
{
    struct test_plan plan = {.project_root = root, .test = plan_test};
    size_t out_len = 0, err_len = 0;
    char *out = out_rel ? data(out_rel, &out_len) : strdup("");
    char *err = err_rel ? data(err_rel, &err_len) : strdup("");
    struct test_output o = {.plan = &plan, .out = out, .out_len = out_len, .err = err,
                            .err_len = err_len, .exit_code = exit_code,
                            .stuck = output_stuck, .report_path = report};
    test_report_init(r);
    assert_int_equal(a->parse(&o, r), 0);
    free(out);
    free(err);
}

/* Feeds every line of a recording to a's live parser, as the runner would. */
static void live_recorded(const struct test_adapter *a, const char *rel, int stream)
{
    size_t len;
    char *text = data(rel, &len);
    void *st = a->live_open ? a->live_open() : NULL;
    n_live = 0;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        a->live_line(st, NULL, stream, p, n, false);
        p = nl ? nl + 1 : text + len;
    }
    if (a->live_close)
        a->live_close(st);
    free(text);
}

static void assert_case(const struct test_report *r, size_t i, const char *name,
                        enum test_status st)
{
    assert_true(i < r->n_cases);
    assert_string_equal(r->cases[i].name, name);
    assert_int_equal(r->cases[i].status, st);
}

static void assert_argv(const struct test_command *c, const char *const *want)
{
    int n = 0;
    while (want[n])
        n++;
    for (int i = 0; i < n && i < c->argc; i++)
        assert_string_equal(c->argv[i], want[i]);
    assert_int_equal(c->argc, n);
}

static void write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void remove_file(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* ---- unittest ---------------------------------------------------------------- */

static void test_unittest_parse_suite(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_unittest, "/src/testproj/unittest", NULL,
                   "unittest/suite.txt", NULL, 1, &r);
    assert_true(r.structured);
    assert_false(r.build_failed);
    assert_string_equal(r.note, "");
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "test_ledger.LedgerTest.test_deposit", TEST_PASSED);
    assert_case(&r, 1, "test_ledger.LedgerTest.test_hang_deadlock", TEST_PASSED);
    assert_case(&r, 2, "test_ledger.LedgerTest.test_overdraft_refused", TEST_SKIPPED);
    assert_string_equal(r.cases[2].message, "overdraft limits are not implemented");
    assert_case(&r, 3, "test_ledger.LedgerTest.test_transfer_moves_money", TEST_PASSED);
    assert_case(&r, 4, "test_ledger.LedgerTest.test_withdraw_charges_fee", TEST_FAILED);
    assert_string_equal(r.cases[4].file, "test_ledger.py");
    assert_int_equal(r.cases[4].line, 22);
    assert_string_equal(r.cases[4].message, "AssertionError: 7 != 6 : the fee was not charged");
    assert_int_equal(r.cases[4].duration_ms, -1);
    assert_null(r.cases[0].file);
    test_report_free(&r);
}

static void test_unittest_parse_error_in_library(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_unittest, "/src/testproj/unittest", NULL,
                   "unittest/error_in_lib.txt", NULL, 1, &r);
    assert_int_equal(r.n_cases, 5);
    /* ERROR counts as a failure, located where the exception was raised */
    assert_case(&r, 0, "test_ledger.LedgerTest.test_deposit", TEST_FAILED);
    assert_string_equal(r.cases[0].file, "ledger.py");
    assert_int_equal(r.cases[0].line, 18);
    assert_string_equal(r.cases[0].message, "ValueError: deposit must be positive");
    assert_case(&r, 4, "test_ledger.LedgerTest.test_withdraw_charges_fee", TEST_FAILED);
    assert_int_equal(r.cases[4].line, 22);
    test_report_free(&r);
}

static void test_unittest_parse_syntax_error(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_unittest, "/src/testproj/unittest", NULL,
                   "unittest/syntax_error.txt", NULL, 1, &r);
    assert_true(r.build_failed);
    assert_int_equal(r.n_cases, 0);
    assert_int_equal(r.n_diags, 1);
    assert_string_equal(r.diags[0].file, "test_ledger.py");
    assert_int_equal(r.diags[0].line, 12);
    assert_string_equal(r.diags[0].message, "SyntaxError: invalid syntax");
    test_report_free(&r);
}

static void test_unittest_parse_killed(void **state)
{
    (void)state;
    /* killed while test_hang_deadlock hung: no summary, the verdicts so far */
    struct test_report r;
    parse_recorded(&test_adapter_unittest, "/src/testproj/unittest", NULL,
                   "unittest/suite_hang_killed.txt", NULL, -1, &r);
    assert_false(r.structured);
    assert_int_equal(r.n_cases, 1);
    assert_case(&r, 0, "test_ledger.LedgerTest.test_deposit", TEST_PASSED);
    assert_string_equal(r.note, "unittest ended before its summary (\"Ran N tests\"): "
                        "results are the verdict lines it printed");
    test_report_free(&r);

    output_stuck = true;
    parse_recorded(&test_adapter_unittest, "/src/testproj/unittest", NULL,
                   "unittest/suite_hang_killed.txt", NULL, -1, &r);
    output_stuck = false;
    assert_int_equal(r.n_cases, 1);
    assert_string_equal(r.note, "unittest was killed as stuck before its summary (\"Ran N "
                        "tests\"): results are the verdict lines it printed");
    test_report_free(&r);
}

static void test_unittest_live(void **state)
{
    (void)state;
    live_recorded(&test_adapter_unittest, "unittest/suite.txt", 2);
    assert_int_equal(n_live, 11); /* phase once, then started+finished per test */
    assert_int_equal(live_calls[0].what, 'p');
    assert_int_equal(live_calls[0].value, TEST_PHASE_RUNNING);
    assert_int_equal(live_calls[1].what, 's');
    assert_string_equal(live_calls[1].name, "test_ledger.LedgerTest.test_deposit");
    assert_int_equal(live_calls[2].what, 'f');
    assert_int_equal(live_calls[2].value, TEST_PASSED);
    assert_string_equal(live_calls[6].name, "test_ledger.LedgerTest.test_overdraft_refused");
    assert_int_equal(live_calls[6].value, TEST_SKIPPED);
    assert_string_equal(live_calls[10].name, "test_ledger.LedgerTest.test_withdraw_charges_fee");
    assert_int_equal(live_calls[10].value, TEST_FAILED);

    /* a verdict line still open while the test runs names it; the whole line
     * later finishes it without starting it again */
    void *st = test_adapter_unittest.live_open();
    n_live = 0;
    const char *open = "test_hang_deadlock (test_ledger.LedgerTest.test_hang_deadlock) ... ";
    test_adapter_unittest.live_line(st, NULL, 2, open, strlen(open), true);
    assert_int_equal(n_live, 2);
    assert_int_equal(live_calls[1].what, 's');
    assert_string_equal(live_calls[1].name, "test_ledger.LedgerTest.test_hang_deadlock");
    const char *done = "test_hang_deadlock (test_ledger.LedgerTest.test_hang_deadlock) ... ok";
    test_adapter_unittest.live_line(st, NULL, 2, done, strlen(done), false);
    assert_int_equal(n_live, 3);
    assert_int_equal(live_calls[2].what, 'f');
    /* a docstring puts the verdict on the next line; the old (3.10) head names the
     * class only */
    n_live = 0;
    const char *head = "test_doc (pkg.mod.T)";
    const char *doc = "Checks the docs ... FAIL";
    test_adapter_unittest.live_line(st, NULL, 2, head, strlen(head), false);
    test_adapter_unittest.live_line(st, NULL, 2, doc, strlen(doc), false);
    assert_int_equal(n_live, 2); /* the phase was reported already */
    assert_int_equal(live_calls[0].what, 's');
    assert_string_equal(live_calls[0].name, "pkg.mod.T.test_doc");
    assert_int_equal(live_calls[1].what, 'f');
    assert_string_equal(live_calls[1].name, "pkg.mod.T.test_doc");
    assert_int_equal(live_calls[1].value, TEST_FAILED);
    test_adapter_unittest.live_close(st);
}

static void test_unittest_command(void **state)
{
    (void)state;
    struct strobe_error e = {0};
    struct test_plan plan = {.project_root = "/src/p", .work_dir = "/run/w"};
    struct test_command c = {0};
    assert_int_equal(test_adapter_unittest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"python3", "-m", "unittest", "-v", NULL});
    assert_int_equal(c.n_env, 1); /* the runner adds dump_env */
    assert_string_equal(c.env[0], "PYTHONUNBUFFERED=1");
    assert_string_equal(test_adapter_unittest.dump_env, "PYTHONFAULTHANDLER=1");
    assert_null(c.report_path);
    tcmd_free(&c);

    plan.test = "LedgerTest.test_deposit";
    assert_int_equal(test_adapter_unittest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"python3", "-m", "unittest", "-v", "-k",
                                          "LedgerTest.test_deposit", NULL});
    tcmd_free(&c);

    /* the rerun a person types */
    plan.work_dir = NULL;
    assert_int_equal(test_adapter_unittest.command(&plan, &c, &e), 0);
    struct strbuf sb = {0};
    tcmd_shell(&c, plan.project_root, &sb);
    assert_string_equal(sb.buf, "cd /src/p && python3 -m unittest -k LedgerTest.test_deposit");
    sb_free(&sb);
    tcmd_free(&c);

    /* the agent's own command gets -v when it lacks it */
    plan.work_dir = "/run/w";
    plan.test = NULL;
    plan.command = "python3 -m unittest discover -s tests";
    assert_int_equal(test_adapter_unittest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"python3", "-m", "unittest", "discover", "-s", "tests",
                                          "-v", NULL});
    tcmd_free(&c);

    assert_int_equal(test_adapter_unittest.dump_signal, SIGABRT);
    assert_string_equal(test_adapter_unittest.dump_env, "PYTHONFAULTHANDLER=1");
}

static void test_unittest_detect(void **state)
{
    (void)state;
    assert_int_equal(test_adapter_unittest.detect(fixture("unittest"), NULL), 82);
    assert_int_equal(test_adapter_unittest.detect(fixture("js/jest"), NULL), 0);
    assert_int_equal(test_adapter_unittest.detect("/nonexistent", "python3 -m unittest"), 90);

    char dir[] = "/tmp/strobe-ut-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "test_a.py", "import unittest\nclass T(unittest.TestCase): pass\n", 0644);
    assert_int_equal(test_adapter_unittest.detect(dir, NULL), 82);
    write_file(dir, "pytest.ini", "[pytest]\n", 0644);
    assert_int_equal(test_adapter_unittest.detect(dir, NULL), 10);
    remove_file(dir, "pytest.ini");
    write_file(dir, "test_a.py", "def test_x():\n    assert 1\n", 0644);
    assert_int_equal(test_adapter_unittest.detect(dir, NULL), 0);
    rm_dir(dir);
}

static void test_unittest_suggests_nothing(void **state)
{
    (void)state;
    struct test_case c = {.name = "test_ledger.LedgerTest.test_x", .file = "ledger.py",
                          .line = 3, .status = TEST_FAILED};
    char *out[4];
    assert_int_equal(test_adapter_unittest.suggest(&c, out, 4), 0);
}

/* ---- jest ---------------------------------------------------------------------- */

static void test_jest_parse(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_jest, "/src/testproj/js/jest", NULL, "jest/jest.err",
                   report_file("jest/jest.json"), 1, &r);
    assert_true(r.structured);
    assert_false(r.build_failed);
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "Stack push_then_pop", TEST_PASSED);
    assert_int_equal(r.cases[0].duration_ms, 1);
    assert_string_equal(r.cases[0].file, "stack.test.js");
    assert_case(&r, 1, "Stack pop_empty_throws", TEST_PASSED);
    assert_int_equal(r.cases[1].duration_ms, 2);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_string_equal(r.cases[2].file, "stack.test.js");
    assert_int_equal(r.cases[2].line, 20);
    assert_string_equal(r.cases[2].message, "Error: expect(received).toBe(expected) // "
                        "Object.is equality\n\nExpected: 3\nReceived: 1");
    assert_case(&r, 3, "Stack grows_past_capacity", TEST_SKIPPED);
    assert_int_equal(r.cases[3].duration_ms, -1);
    assert_case(&r, 4, "Stack hang_busy_loop", TEST_PASSED);
    test_report_free(&r);

    /* with -t, the tests it left out (reported as skipped) are not results: here
     * the skipped one the filter does not name */
    plan_test = "hang_busy";
    parse_recorded(&test_adapter_jest, "/src/testproj/js/jest", NULL, NULL,
                   report_file("jest/jest.json"), 1, &r);
    plan_test = NULL;
    assert_int_equal(r.n_cases, 4);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_case(&r, 3, "Stack hang_busy_loop", TEST_PASSED);
    test_report_free(&r);
}

static void test_jest_parse_syntax_error(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_jest, "/src/testproj/js/jest", NULL, NULL,
                   report_file("jest/jest_syntax.json"), 1, &r);
    assert_true(r.build_failed);
    assert_int_equal(r.n_cases, 0);
    assert_int_equal(r.n_diags, 1);
    assert_string_equal(r.diags[0].file, "stack.test.js");
    assert_int_equal(r.diags[0].line, 9);
    assert_int_equal(r.diags[0].column, 0);
    assert_string_equal(r.diags[0].message, "SyntaxError: /src/testproj/js/jest/stack.test.js: "
                        "Unexpected token (9:0)");
    test_report_free(&r);
}

static void test_jest_parse_text_fallback(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_jest, "/src/testproj/js/jest", NULL, "jest/jest.err",
                   "/nonexistent/jest.json", 1, &r);
    assert_false(r.structured);
    assert_string_equal(r.note, "jest wrote no JSON report: results read from its verbose "
                        "listing on stderr");
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "Stack push_then_pop", TEST_PASSED);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_string_equal(r.cases[2].file, "stack.test.js");
    assert_int_equal(r.cases[2].line, 20);
    assert_non_null(strstr(r.cases[2].message, "Expected: 3"));
    assert_case(&r, 3, "Stack hang_busy_loop", TEST_PASSED);
    assert_case(&r, 4, "Stack grows_past_capacity", TEST_SKIPPED);
    test_report_free(&r);
}

static void test_jest_live(void **state)
{
    (void)state;
    live_recorded(&test_adapter_jest, "jest/jest.err", 2);
    assert_int_equal(n_live, 11);
    assert_int_equal(live_calls[0].what, 'p');
    assert_int_equal(live_calls[0].value, TEST_PHASE_RUNNING);
    assert_int_equal(live_calls[1].what, 's');
    assert_string_equal(live_calls[1].name, "Stack push_then_pop");
    assert_int_equal(live_calls[6].what, 'f');
    assert_string_equal(live_calls[6].name, "Stack peek_returns_top");
    assert_int_equal(live_calls[6].value, TEST_FAILED);
    assert_string_equal(live_calls[10].name, "Stack grows_past_capacity");
    assert_int_equal(live_calls[10].value, TEST_SKIPPED);
}

static void test_jest_command(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-js-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[PATH_MAX], bin[PATH_MAX], path[2 * PATH_MAX];
    snprintf(sub, sizeof sub, "%s/pkg", dir);
    snprintf(bin, sizeof bin, "%s/node_modules/.bin", dir);
    mkdir(sub, 0755);
    snprintf(path, sizeof path, "%s/node_modules", dir);
    mkdir(path, 0755);
    mkdir(bin, 0755);

    struct strobe_error e = {0};
    struct test_plan plan = {.project_root = sub, .work_dir = "/run/w"};
    struct test_command c = {0};
    /* not installed: the npm package is named */
    assert_int_equal(test_adapter_jest.command(&plan, &c, &e), -1);
    assert_int_equal(e.code, ERR_COMMAND_NOT_FOUND);
    assert_non_null(strstr(e.msg, "npm install --save-dev jest"));
    tcmd_free(&c);

    /* installed in a parent (a workspace) */
    write_file(bin, "jest", "#!/bin/sh\n", 0755);
    snprintf(path, sizeof path, "%s/jest", bin);
    plan.test = "Stack peek(top)";
    assert_int_equal(test_adapter_jest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){path, "--json", "--outputFile=/run/w/jest.json",
                                          "--verbose", "-t", "Stack peek\\(top\\)", NULL});
    assert_string_equal(c.report_path, "/run/w/jest.json");
    tcmd_free(&c);

    plan.work_dir = NULL;
    assert_int_equal(test_adapter_jest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"npx", "jest", "-t", "Stack peek\\(top\\)", NULL});
    assert_null(c.report_path);
    tcmd_free(&c);

    remove_file(bin, "jest");
    rmdir(bin);
    snprintf(path, sizeof path, "%s/node_modules", dir);
    rmdir(path);
    rmdir(sub);
    rm_dir(dir);
}

/* ---- vitest -------------------------------------------------------------------- */

static void test_vitest_parse(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_vitest, "/src/testproj/js/vitest", "vitest/vitest.out", NULL,
                   report_file("vitest/vitest.json"), 1, &r);
    assert_true(r.structured);
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "Stack push_then_pop", TEST_PASSED);
    assert_int_equal(r.cases[0].duration_ms, 1);
    assert_case(&r, 1, "Stack pop_empty_throws", TEST_PASSED);
    assert_int_equal(r.cases[1].duration_ms, 0);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_int_equal(r.cases[2].duration_ms, 4);
    assert_string_equal(r.cases[2].file, "stack.test.mjs");
    assert_int_equal(r.cases[2].line, 21);
    assert_string_equal(r.cases[2].message,
                        "AssertionError: expected 1 to be 3 // Object.is equality");
    assert_case(&r, 3, "Stack grows_past_capacity", TEST_SKIPPED);
    assert_case(&r, 4, "Stack hang_busy_loop", TEST_PASSED);
    test_report_free(&r);
}

static void test_vitest_parse_syntax_error(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_vitest, "/src/testproj/js/vitest", NULL,
                   "vitest/vitest_syntax.err", report_file("vitest/vitest_syntax.json"), 1, &r);
    assert_true(r.build_failed);
    assert_int_equal(r.n_cases, 0);
    assert_int_equal(r.n_diags, 1);
    assert_string_equal(r.diags[0].file, "stack.test.mjs");
    assert_int_equal(r.diags[0].line, 37);
    assert_int_equal(r.diags[0].column, 1);
    assert_string_equal(r.diags[0].message,
                        "Failed to parse source for import analysis because the content "
                        "contains invalid JS syntax. If you are using JSX, make sure to name "
                        "the file with the .jsx or .tsx extension.");
    test_report_free(&r);
}

static void test_vitest_parse_text_fallback(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_vitest, "/src/testproj/js/vitest", "vitest/vitest.out", NULL,
                   NULL, 1, &r);
    assert_false(r.structured);
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "Stack push_then_pop", TEST_PASSED);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_string_equal(r.cases[2].file, "stack.test.mjs");
    assert_string_equal(r.cases[2].message, "expected 1 to be 3 // Object.is equality");
    assert_case(&r, 3, "Stack grows_past_capacity", TEST_SKIPPED);
    assert_case(&r, 4, "Stack hang_busy_loop", TEST_PASSED);
    test_report_free(&r);
}

static void test_vitest_live(void **state)
{
    (void)state;
    live_recorded(&test_adapter_vitest, "vitest/vitest.out", 1);
    assert_int_equal(n_live, 11);
    assert_int_equal(live_calls[0].what, 'p');
    assert_string_equal(live_calls[1].name, "Stack push_then_pop");
    assert_int_equal(live_calls[6].what, 'f');
    assert_string_equal(live_calls[6].name, "Stack peek_returns_top");
    assert_int_equal(live_calls[6].value, TEST_FAILED);
    assert_int_equal(live_calls[8].value, TEST_SKIPPED);
}

static void test_vitest_command(void **state)
{
    (void)state;
    struct strobe_error e = {0};
    struct test_plan plan = {.project_root = "/src/p", .test = "Stack pop"};
    struct test_command c = {0};
    assert_int_equal(test_adapter_vitest.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"npx", "vitest", "run", "-t", "Stack pop", NULL});
    assert_int_equal(c.n_env, 0);
    tcmd_free(&c);
    /* the fixture's own install, one directory up */
    plan.project_root = fixture("js/vitest");
    plan.work_dir = "/run/w";
    plan.test = NULL;
    if (!test_has_file(plan.project_root, "../node_modules/.bin/vitest"))
        skip();
    assert_int_equal(test_adapter_vitest.command(&plan, &c, &e), 0);
    assert_non_null(strstr(c.argv[0], "/testproj/js/node_modules/.bin/vitest"));
    assert_argv(&c, (const char *const[]){c.argv[0], "run", "--reporter=verbose",
                                          "--reporter=json",
                                          "--outputFile.json=/run/w/vitest.json", NULL});
    assert_string_equal(c.env[0], "NO_COLOR=1");
    assert_string_equal(c.report_path, "/run/w/vitest.json");
    tcmd_free(&c);
}

/* ---- mocha --------------------------------------------------------------------- */

static void test_mocha_parse(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_mocha, "/src/testproj/js/mocha", NULL, NULL,
                   report_file("mocha/mocha.json"), 1, &r);
    assert_true(r.structured);
    assert_int_equal(r.n_cases, 5);
    assert_case(&r, 0, "Stack push_then_pop", TEST_PASSED);
    assert_int_equal(r.cases[0].duration_ms, 1);
    assert_string_equal(r.cases[0].file, "test/stack.spec.js");
    assert_case(&r, 1, "Stack pop_empty_throws", TEST_PASSED);
    assert_case(&r, 2, "Stack peek_returns_top", TEST_FAILED);
    assert_string_equal(r.cases[2].file, "test/stack.spec.js");
    assert_int_equal(r.cases[2].line, 21);
    assert_string_equal(r.cases[2].message, "AssertionError [ERR_ASSERTION]: peek() must "
                        "return the last pushed item\n\n1 !== 3");
    assert_case(&r, 3, "Stack grows_past_capacity", TEST_SKIPPED);
    assert_int_equal(r.cases[3].duration_ms, -1);
    assert_case(&r, 4, "Stack hang_busy_loop", TEST_PASSED);
    test_report_free(&r);
}

static void test_mocha_parse_syntax_error(void **state)
{
    (void)state;
    struct test_report r;
    parse_recorded(&test_adapter_mocha, "/src/testproj/js/mocha", NULL,
                   "mocha/mocha_syntax.err", "/nonexistent/mocha.json", 1, &r);
    assert_false(r.structured);
    assert_true(r.build_failed);
    assert_int_equal(r.n_diags, 1);
    assert_string_equal(r.diags[0].file, "test/stack.spec.js");
    assert_int_equal(r.diags[0].line, 9);
    assert_string_equal(r.diags[0].message, "SyntaxError: Unexpected token ')'");
    test_report_free(&r);
}

static void test_mocha_command(void **state)
{
    (void)state;
    struct strobe_error e = {0};
    struct test_plan plan = {.project_root = "/src/p", .test = "Stack peek_returns_top",
                             .command = "npx mocha --recursive"};
    struct test_command c = {0};
    assert_int_equal(test_adapter_mocha.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"npx", "mocha", "--recursive", "--fgrep",
                                          "Stack peek_returns_top", NULL});
    tcmd_free(&c);
    plan.work_dir = "/run/w";
    plan.test = NULL;
    assert_int_equal(test_adapter_mocha.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"npx", "mocha", "--recursive", "--reporter", "json",
                                          "--reporter-option", "output=/run/w/mocha.json",
                                          NULL});
    assert_string_equal(c.report_path, "/run/w/mocha.json");
    tcmd_free(&c);
    /* a package manager's script gets the options after "--" */
    plan.command = "npm test";
    assert_int_equal(test_adapter_mocha.command(&plan, &c, &e), 0);
    assert_argv(&c, (const char *const[]){"npm", "test", "--", "--reporter", "json",
                                          "--reporter-option", "output=/run/w/mocha.json",
                                          NULL});
    tcmd_free(&c);
    assert_null(test_adapter_mocha.live_line);
}

/* ---- detection among the JS frameworks ------------------------------------------ */

static void test_js_detect(void **state)
{
    (void)state;
    /* the fixtures: each folder's config file decides */
    assert_int_equal(test_adapter_jest.detect(fixture("js/jest"), NULL), 92);
    assert_int_equal(test_adapter_vitest.detect(fixture("js/jest"), NULL), 0);
    assert_int_equal(test_adapter_vitest.detect(fixture("js/vitest"), NULL), 95);
    assert_int_equal(test_adapter_mocha.detect(fixture("js/mocha"), NULL), 90);
    assert_int_equal(test_adapter_jest.detect(fixture("js/mocha"), NULL), 0);
    /* the fixture's top: package.json depends on all three, nothing else says */
    assert_int_equal(test_adapter_vitest.detect(fixture("js"), NULL), 85);
    assert_int_equal(test_adapter_jest.detect(fixture("js"), NULL), 82);
    assert_int_equal(test_adapter_mocha.detect(fixture("js"), NULL), 80);
    int conf;
    assert_ptr_equal(test_adapter_detect(fixture("js/mocha"), NULL, &conf), &test_adapter_mocha);
    assert_int_equal(conf, 90);
    assert_ptr_equal(test_adapter_detect(fixture("unittest"), NULL, &conf),
                     &test_adapter_unittest);

    char dir[] = "/tmp/strobe-jsd-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "package.json", "{\"devDependencies\": {\"jest\": \"30\", \"mocha\": \"12\"},"
               " \"scripts\": {\"test\": \"mocha --recursive\"}}", 0644);
    /* the test script names mocha */
    assert_int_equal(test_adapter_mocha.detect(dir, NULL), 90);
    assert_int_equal(test_adapter_jest.detect(dir, NULL), 40);
    /* the agent's command wins over both */
    assert_int_equal(test_adapter_jest.detect(dir, "npx jest --ci"), 92);
    /* jest's config kept in package.json */
    write_file(dir, "package.json", "{\"devDependencies\": {\"jest\": \"30\"}, \"jest\": {}}",
               0644);
    assert_int_equal(test_adapter_jest.detect(dir, NULL), 92);
    assert_int_equal(test_adapter_vitest.detect(dir, NULL), 0);
    remove_file(dir, "package.json");
    assert_int_equal(test_adapter_jest.detect(dir, NULL), 0);
    rm_dir(dir);
}

static void test_js_suggests_nothing(void **state)
{
    (void)state;
    struct test_case c = {.name = "Stack peek_returns_top", .file = "stack.test.js",
                          .line = 20, .status = TEST_FAILED};
    char *out[4];
    assert_int_equal(test_adapter_jest.suggest(&c, out, 4), 0);
    assert_int_equal(test_adapter_vitest.suggest(&c, out, 4), 0);
    assert_int_equal(test_adapter_mocha.suggest(&c, out, 4), 0);
    assert_ptr_equal(test_adapter_named("Vitest"), &test_adapter_vitest);
    assert_ptr_equal(test_adapter_named("unittest"), &test_adapter_unittest);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unittest_parse_suite),
        cmocka_unit_test(test_unittest_parse_error_in_library),
        cmocka_unit_test(test_unittest_parse_syntax_error),
        cmocka_unit_test(test_unittest_parse_killed),
        cmocka_unit_test(test_unittest_live),
        cmocka_unit_test(test_unittest_command),
        cmocka_unit_test(test_unittest_detect),
        cmocka_unit_test(test_unittest_suggests_nothing),
        cmocka_unit_test(test_jest_parse),
        cmocka_unit_test(test_jest_parse_syntax_error),
        cmocka_unit_test(test_jest_parse_text_fallback),
        cmocka_unit_test(test_jest_live),
        cmocka_unit_test(test_jest_command),
        cmocka_unit_test(test_vitest_parse),
        cmocka_unit_test(test_vitest_parse_syntax_error),
        cmocka_unit_test(test_vitest_parse_text_fallback),
        cmocka_unit_test(test_vitest_live),
        cmocka_unit_test(test_vitest_command),
        cmocka_unit_test(test_mocha_parse),
        cmocka_unit_test(test_mocha_parse_syntax_error),
        cmocka_unit_test(test_mocha_command),
        cmocka_unit_test(test_js_detect),
        cmocka_unit_test(test_js_suggests_nothing),
    };
    return cmocka_run_group_tests(tests, find_repo, NULL);
}
