/*
 * test_adapters_xml.c - unit tests of the XML-fed test adapters and their readers:
 * xml.h (whole and streamed, broken documents), junit.h, and the Catch2, CTest and
 * pytest adapters' detect, command, live progress, parse and suggest, fed with
 * output recorded from the fixture projects under tests/fixtures/testproj/ (in
 * tests/unit/data/testrun/, absolute paths replaced by /src, /build and /run).
 *
 * The runner implements test_live_*; this file defines its own, which log each
 * call so the live parsers' progress can be compared line for line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "testrun/adapter.h"
#include "testrun/junit.h"
#include "testrun/xml.h"

/* ---- the runner's progress calls, logged ----------------------------------------- */

static struct strbuf live_log;

void test_live_phase(struct test_live *lv, enum test_phase phase)
{
    (void)lv;
    sb_printf(&live_log, "phase %d\n", (int)phase);
}

void test_live_started(struct test_live *lv, const char *name)
{
    (void)lv;
    sb_printf(&live_log, "started %s\n", name);
}

void test_live_finished(struct test_live *lv, const char *name, enum test_status st)
{
    (void)lv;
    static const char *const names[] = {"passed", "failed", "skipped"};
    sb_printf(&live_log, "finished %s %s\n", name, names[st]);
}

static const char *live_take(void)
{
    static char *last;
    free(last);
    last = sb_take(&live_log);
    return last;
}

/* Feeds text to an adapter's live parser line by line (stdout); a last line
 * without a newline goes as a partial line. */
static void live_feed(const struct test_adapter *a, const char *text)
{
    void *st = a->live_open ? a->live_open() : NULL;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        a->live_line(st, (struct test_live *)&live_log, 1, p, n, p[n] != '\n');
        p += n + (p[n] == '\n');
    }
    if (a->live_close)
        a->live_close(st);
}

/* ---- recorded output ------------------------------------------------------------------- */

static char data_dir[PATH_MAX];

/* tests/unit/data/testrun: from the source root (the cwd of `make unit`), else
 * next to BUILD/tests/ where the test binary is. */
static void find_data_dir(void)
{
    struct stat st;
    if (stat("tests/unit/data/testrun", &st) == 0) {
        snprintf(data_dir, sizeof data_dir, "tests/unit/data/testrun");
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(data_dir, sizeof data_dir, "%s/../../tests/unit/data/testrun", dirname(exe));
}

static const char *data_path(const char *name)
{
    static char path[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    return path;
}

/* The recording name, whole (the caller frees). */
static char *slurp(const char *name)
{
    FILE *f = fopen(data_path(name), "rb");
    if (!f)
        fail_msg("%s: missing", data_path(name));
    struct strbuf sb = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_append(&sb, buf, n);
    fclose(f);
    return sb_take(&sb);
}

/* A run as parse() sees it: stdout (a recording or ""), the report file. */
struct run {
    struct test_plan plan;
    struct test_output o;
    char *out, *err;
    char report[PATH_MAX + 128];
    struct test_report r;
};

static bool run_stuck; /* the next run_parse's run was killed as stuck */

static void run_parse(struct run *run, const struct test_adapter *a, const char *out_name,
                      const char *err_name, const char *report_name, int exit_code)
{
    memset(run, 0, sizeof *run);
    run->plan.project_root = "/src";
    run->plan.work_dir = "/run";
    run->out = out_name ? slurp(out_name) : strdup("");
    run->err = err_name ? slurp(err_name) : strdup("");
    snprintf(run->report, sizeof run->report, "%s",
             report_name ? data_path(report_name) : "/nonexistent/report.xml");
    run->o = (struct test_output){.plan = &run->plan, .out = run->out,
                                  .out_len = strlen(run->out), .err = run->err,
                                  .err_len = strlen(run->err), .exit_code = exit_code,
                                  .stuck = run_stuck, .report_path = run->report};
    run_stuck = false;
    test_report_init(&run->r);
    assert_int_equal(a->parse(&run->o, &run->r), 0);
}

static void run_free(struct run *run)
{
    test_report_free(&run->r);
    free(run->out);
    free(run->err);
}

static void expect_case(const struct test_report *r, size_t i, const char *name,
                        enum test_status st, const char *file, int line, const char *message)
{
    assert_true(i < r->n_cases);
    const struct test_case *c = &r->cases[i];
    assert_string_equal(c->name, name);
    assert_int_equal(c->status, st);
    if (file)
        assert_string_equal(c->file, file);
    else
        assert_null(c->file);
    assert_int_equal(c->line, line);
    if (message)
        assert_string_equal(c->message, message);
    else
        assert_null(c->message);
}

/* The patterns suggest() gives for case c, joined by spaces. */
static char *suggestions(const struct test_adapter *a, const struct test_case *c)
{
    char *pats[8];
    int n = a->suggest(c, pats, 8);
    struct strbuf sb = {0};
    for (int i = 0; i < n; i++) {
        sb_printf(&sb, "%s%s", i ? " " : "", pats[i]);
        free(pats[i]);
    }
    return sb_take(&sb);
}

/* The command for plan, as one line of its argv words joined by spaces. */
static char *command_words(const struct test_adapter *a, const struct test_plan *plan,
                           int *rc, struct test_command *keep)
{
    struct test_command c = {0};
    struct strobe_error e = {0};
    *rc = a->command(plan, &c, &e);
    struct strbuf sb = {0};
    for (int i = 0; i < c.argc; i++)
        sb_printf(&sb, "%s%s", i ? " " : "", c.argv[i]);
    if (*rc != 0)
        sb_printf(&sb, "%s: %s", err_code_name(e.code), e.msg);
    if (keep)
        *keep = c;
    else
        tcmd_free(&c);
    return sb_take(&sb);
}

/* ---- scratch projects ---------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *scratch(void)
{
    char tmpl[] = "/tmp/strobe-adapters-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

/* ---- xml.h and junit.h ---------------------------------------------------------------- */

struct xml_log {
    struct strbuf sb;
};

static void log_start(void *ud, const char *name, const char **attrs, int depth)
{
    struct xml_log *l = ud;
    sb_printf(&l->sb, "<%s:%d", name, depth);
    for (; attrs[0]; attrs += 2)
        sb_printf(&l->sb, " %s=%s", attrs[0], attrs[1]);
    sb_puts(&l->sb, ">");
}

static void log_end(void *ud, const char *name, const char *text, size_t len, int depth)
{
    struct xml_log *l = ud;
    sb_printf(&l->sb, "[%.*s]</%s:%d>", (int)len, text, name, depth);
}

static void test_xml_whole_and_streamed(void **state)
{
    (void)state;
    const char doc[] = "<?xml version=\"1.0\"?>\n<a x=\"1 &amp; 2\"><b>one<c/>two</b>"
                       "<![CDATA[<raw>]]></a>";
    struct xml_log whole = {0};
    struct xml_callbacks cb = {.start = log_start, .end = log_end, .ud = &whole};
    char err[160];
    assert_int_equal(xml_parse(doc, strlen(doc), &cb, err, sizeof err), 0);
    assert_string_equal(whole.sb.buf, "<a:0 x=1 & 2><b:1><c:2>[]</c:2>[onetwo]</b:1>"
                                      "[<raw>]</a:0>");
    /* one byte at a time: the same calls */
    struct xml_log bytes = {0};
    cb.ud = &bytes;
    struct xml_reader *x = xml_open(&cb);
    for (size_t i = 0; i < strlen(doc); i++)
        assert_int_equal(xml_feed(x, doc + i, 1, false), 0);
    assert_int_equal(xml_feed(x, "", 0, true), 0);
    assert_string_equal(xml_error(x), "");
    xml_close(x);
    assert_string_equal(bytes.sb.buf, whole.sb.buf);
    sb_free(&whole.sb);
    sb_free(&bytes.sb);
}

static void test_xml_broken(void **state)
{
    (void)state;
    struct xml_log l = {0};
    struct xml_callbacks cb = {.start = log_start, .end = log_end, .ud = &l};
    char err[160];
    /* cut short: what came before is delivered */
    const char cut[] = "<a><b>x</b><b>y";
    assert_int_equal(xml_parse(cut, strlen(cut), &cb, err, sizeof err), -1);
    assert_string_equal(l.sb.buf, "<a:0><b:1>[x]</b:1><b:1>");
    assert_string_equal(err, "line 1: no element found");
    /* junk in the stream stops the reader for good */
    sb_free(&l.sb);
    struct xml_reader *x = xml_open(&cb);
    assert_int_equal(xml_feed(x, "<a><b/>\n", 8, false), 0);
    assert_int_equal(xml_feed(x, "printf & co\n", 12, false), -1);
    assert_int_equal(xml_feed(x, "<b/>", 4, false), -1);
    assert_string_equal(xml_error(x), "line 2: not well-formed (invalid token)");
    xml_close(x);
    assert_string_equal(l.sb.buf, "<a:0><b:1>[]</b:1>");
    sb_free(&l.sb);
}

static int add_named(void *ud, const struct junit_case *jc, struct test_report *r)
{
    (void)ud;
    char name[256];
    snprintf(name, sizeof name, "%s/%s", jc->classname ? jc->classname : "-", jc->name);
    return junit_add(jc, name, r) ? 0 : -1;
}

static void test_junit_generic(void **state)
{
    (void)state;
    const char doc[] =
        "<testsuites><testsuite name=\"s\">"
        "<testcase classname=\"k\" name=\"ok\" time=\"0.25\"><system-out>hi\n</system-out>"
        "<system-err>warn</system-err></testcase>"
        "<testcase classname=\"k\" name=\"bad\" time=\"1\">"
        "<skipped message=\"not this\"/><failure message=\"boom\" type=\"E\">trace 1</failure>"
        "<failure message=\"second\">trace 2</failure></testcase>"
        "<testcase classname=\"k\" name=\"err\"><error message=\"only an attribute\"/>"
        "</testcase>"
        "<testcase name=\"skip\" status=\"notrun\"/>"
        "<testcase name=\"gskip\" result=\"skipped\"/>"
        "<testcase name=\"cut\"><failure message=\"x\">unfinished";
    struct test_report r;
    test_report_init(&r);
    assert_int_equal(junit_parse(doc, strlen(doc), add_named, NULL, &r), 1);
    assert_true(r.structured);
    assert_int_equal(r.n_cases, 5);
    expect_case(&r, 0, "k/ok", TEST_PASSED, NULL, 0, NULL);
    assert_int_equal(r.cases[0].duration_ms, 250);
    assert_string_equal(r.cases[0].output, "hi\nwarn");
    expect_case(&r, 1, "k/bad", TEST_FAILED, NULL, 0, "trace 1\ntrace 2");
    assert_int_equal(r.cases[1].duration_ms, 1000);
    expect_case(&r, 2, "k/err", TEST_FAILED, NULL, 0, "only an attribute");
    expect_case(&r, 3, "-/skip", TEST_SKIPPED, NULL, 0, NULL);
    expect_case(&r, 4, "-/gskip", TEST_SKIPPED, NULL, 0, NULL);
    assert_string_equal(r.note, "the JUnit report breaks off (line 2: no element found): "
                                "the test it was writing and any after it are missing");
    test_report_free(&r);

    /* not JUnit, and no file at all */
    test_report_init(&r);
    assert_int_equal(junit_parse("<Catch/>", 8, add_named, NULL, &r), 1);
    assert_false(r.structured);
    assert_string_equal(r.note, "the report is XML but not JUnit");
    test_report_free(&r);
    test_report_init(&r);
    assert_int_equal(junit_parse_file("/nonexistent.xml", add_named, NULL, &r), 2);
    assert_int_equal(r.n_cases, 0);
    test_report_free(&r);
}

/* ---- Catch2 ----------------------------------------------------------------------------- */

static void test_catch2_detect(void **state)
{
    (void)state;
    char *dir = scratch();
    /* the marker across the probe's 1 MiB read boundary */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests_bin", dir);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < (1 << 20) - 10; i++)
        fputc('\x7f', f);
    fputs("A Catch2 test executable\n", f);
    fclose(f);
    chmod(path, 0755);
    write_file(dir, "gtest_bin", "Running main() from gtest_main.cc --gtest_filter");
    assert_int_equal(test_adapter_catch2.detect(dir, "./tests_bin"), 85);
    assert_int_equal(test_adapter_catch2.detect(dir, "tests_bin --order rand"), 0); /* PATH */
    snprintf(path, sizeof path, "'%s/tests_bin' -s", dir);
    assert_int_equal(test_adapter_catch2.detect("/", path), 85);
    assert_int_equal(test_adapter_catch2.detect(dir, "./gtest_bin"), 0);
    assert_int_equal(test_adapter_catch2.detect(dir, "./missing"), 0);
    assert_int_equal(test_adapter_catch2.detect(dir, NULL), 0);
    int conf;
    assert_ptr_equal(test_adapter_detect(dir, "./tests_bin", &conf), &test_adapter_catch2);
    assert_int_equal(conf, 85);
    rm_tree(dir);
    free(dir);
}

static void test_catch2_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_catch2;
    struct test_plan plan = {.project_root = "/p", .command = "build/stack_tests",
                             .work_dir = "/run"};
    int rc;
    char *s = command_words(a, &plan, &rc, NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "build/stack_tests -r xml -d yes");
    free(s);
    plan.level = TEST_LEVEL_INTEGRATION;
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "build/stack_tests -r xml -d yes [integration]");
    free(s);
    /* one test: a test spec matching that name only; it wins over the level */
    plan.test = "name, with [brackets] and \"quotes\"";
    struct test_command c;
    s = command_words(a, &plan, &rc, &c);
    assert_int_equal(c.argc, 6);
    assert_string_equal(c.argv[5], "name\\, with \\[brackets\\] and \\\"quotes\\\"");
    assert_null(c.report_path);
    tcmd_free(&c);
    free(s);
    /* the rerun line: no reporter */
    plan.work_dir = NULL;
    plan.test = "sum adds every value";
    s = command_words(a, &plan, &rc, &c);
    struct strbuf sb = {0};
    tcmd_shell(&c, "/p", &sb);
    assert_string_equal(sb.buf, "cd /p && build/stack_tests 'sum adds every value'");
    sb_free(&sb);
    tcmd_free(&c);
    free(s);
    plan.test = "-s";  /* a name, not Catch2's option */
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "build/stack_tests \\-s");
    free(s);
    plan.command = NULL;
    s = command_words(a, &plan, &rc, NULL);
    assert_int_equal(rc, -1);
    assert_string_equal(s, "VALIDATION_ERROR: Catch2 needs the test binary: pass its path "
                           "as `command` (build it first).");
    free(s);
}

static void test_catch2_parse_suite(void **state)
{
    (void)state;
    struct run run;
    run_parse(&run, &test_adapter_catch2, "catch2/suite.xml", NULL, NULL, 1);
    const struct test_report *r = &run.r;
    assert_true(r->structured);
    assert_false(r->build_failed);
    assert_string_equal(r->note, "");
    assert_int_equal(r->n_cases, 5);
    expect_case(r, 0, "push then pop returns the last value", TEST_PASSED, "test_stack.cpp",
                13, NULL);
    expect_case(r, 1, "peek sees the top", TEST_PASSED, "test_stack.cpp", 22, NULL);
    expect_case(r, 2, "sum adds every value", TEST_FAILED, "test_stack.cpp", 36,
                "CHECK( s.sum() == 6 )\nwith expansion:\n  5 == 6");
    expect_case(r, 3, "grows past its capacity", TEST_SKIPPED, "test_stack.cpp", 43,
                "allowed to fail ([!mayfail]): REQUIRE( s.push(2) )\nwith expansion:\n"
                "  false");
    expect_case(r, 4, "hang_deadlock", TEST_PASSED, "test_stack.cpp", 71, NULL);
    for (size_t i = 0; i < r->n_cases; i++)
        assert_int_equal(r->cases[i].duration_ms, 0); /* microseconds each */
    char *s = suggestions(&test_adapter_catch2, &r->cases[2]);
    assert_string_equal(s, "@file:stack.cpp **::sum");
    free(s);
    run_free(&run);
}

static void test_catch2_parse_errors(void **state)
{
    (void)state;
    struct run run;
    run_parse(&run, &test_adapter_catch2, "catch2/errors.xml", NULL, NULL, 3);
    const struct test_report *r = &run.r;
    assert_int_equal(r->n_cases, 3);
    expect_case(r, 0, "pop on empty throws out of the test", TEST_FAILED, "errors.cpp", 7,
                "unexpected exception with message:\n  pop on an empty stack\n"
                "with message:\n  the stack is empty");
    expect_case(r, 1, "sections, info and FAIL", TEST_FAILED, "errors.cpp", 19,
                "CHECK( s.push(n) == false )\nwith expansion:\n  true == false\n"
                "with message:\n  n is 3\nin section: \"first push\"\n"
                "explicit failure with message:\n  gave up: <no & way>\n"
                "in section: \"explicit fail\"");
    expect_case(r, 2, "name, with [brackets] and \"quotes\"", TEST_PASSED, "errors.cpp", 26,
                NULL);
    /* errors.cpp is not named after a file under test: only what the checks call */
    char *s = suggestions(&test_adapter_catch2, &r->cases[0]);
    assert_string_equal(s, "@file:errors.cpp");
    free(s);
    s = suggestions(&test_adapter_catch2, &r->cases[1]);
    assert_string_equal(s, "**::push");
    free(s);
    run_free(&run);
}

static void test_catch2_parse_killed_and_empty(void **state)
{
    (void)state;
    struct run run;
    /* SIGKILL while hang_deadlock ran: the report stops inside it */
    run_parse(&run, &test_adapter_catch2, "catch2/killed.xml", NULL, NULL, -1);
    assert_true(run.r.structured);
    assert_int_equal(run.r.n_cases, 4);
    expect_case(&run.r, 2, "sum adds every value", TEST_FAILED, "test_stack.cpp", 36,
                "CHECK( s.sum() == 6 )\nwith expansion:\n  5 == 6");
    assert_string_equal(run.r.note, "the XML report cannot be read past line 33: no element "
                                    "found: test \"hang_deadlock\" has no result and any "
                                    "after it are missing (the run was cut short, or a test "
                                    "printed markup to stdout)");
    run_free(&run);

    run_parse(&run, &test_adapter_catch2, "catch2/nomatch.xml", NULL, NULL, 0);
    assert_int_equal(run.r.n_cases, 0);
    assert_string_equal(run.r.note, "");
    run_free(&run);
    memset(&run, 0, sizeof run);

    /* with a name: say that it matched nothing */
    struct test_plan plan = {.project_root = "/p", .test = "nonexistent", .work_dir = "/r"};
    char *out = slurp("catch2/nomatch.xml");
    struct test_output o = {.plan = &plan, .out = out, .out_len = strlen(out), .err = "",
                            .exit_code = 0};
    struct test_report r;
    test_report_init(&r);
    assert_int_equal(test_adapter_catch2.parse(&o, &r), 0);
    assert_string_equal(r.note, "no test case is named \"nonexistent\" (Catch2 matches whole "
                                "names, case-insensitively)");
    test_report_free(&r);
    free(out);

    /* not a Catch2 binary */
    test_report_init(&r);
    o = (struct test_output){.plan = &plan, .out = "usage: foo\n", .out_len = 11,
                             .err = "Error(s) in input:\n  Unrecognised token: -r\n",
                             .exit_code = 255};
    assert_int_equal(test_adapter_catch2.parse(&o, &r), 0);
    assert_false(r.structured);
    assert_int_equal(r.n_cases, 0);
    assert_string_equal(r.note, "no Catch2 XML report on stdout (is it a Catch2 v2 "
                                "binary?): Error(s) in input:");
    test_report_free(&r);
}

static void test_catch2_parse_prints(void **state)
{
    (void)state;
    struct run run;
    /* printf lands inside <TestCase>, std::cout in <StdOut>: both are its output;
     * "<b>&" printed by the second test makes the rest unreadable */
    run_parse(&run, &test_adapter_catch2, "catch2/prints.xml", NULL, NULL, 1);
    assert_int_equal(run.r.n_cases, 1);
    expect_case(&run.r, 0, "prints", TEST_PASSED, "prints.cpp", 6, NULL);
    assert_string_equal(run.r.cases[0].output, "from printf\n\nfrom cout\n        ");
    assert_string_equal(run.r.note, "the XML report cannot be read past line 13: not "
                                    "well-formed (invalid token): test \"prints and fails\" "
                                    "has no result and any after it are missing (the run "
                                    "was cut short, or a test printed markup to stdout)");
    run_free(&run);

    /* what C stdio flushed at exit, after the report: ignored */
    char *xml = slurp("catch2/suite.xml");
    struct strbuf sb = {0};
    sb_printf(&sb, "%sleftover <output> & more\n", xml);
    struct test_plan plan = {.project_root = "/p", .work_dir = "/r"};
    struct test_output o = {.plan = &plan, .out = sb.buf, .out_len = sb.len, .err = "",
                            .exit_code = 1};
    struct test_report r;
    test_report_init(&r);
    assert_int_equal(test_adapter_catch2.parse(&o, &r), 0);
    assert_int_equal(r.n_cases, 5);
    assert_string_equal(r.note, "");
    test_report_free(&r);
    sb_free(&sb);
    free(xml);
}

static void test_catch2_deep_sections(void **state)
{
    (void)state;
    /* sections nested deeper than the adapter keeps: the outer names stay right */
    struct strbuf sb = {0};
    sb_puts(&sb, "<?xml version=\"1.0\"?><Catch><Group><TestCase name=\"t\" "
                 "filename=\"t.cpp\" line=\"1\">");
    for (int i = 0; i < 10; i++)
        sb_printf(&sb, "<Section name=\"s%d\">", i);
    for (int i = 0; i < 9; i++)
        sb_puts(&sb, "</Section>");
    sb_puts(&sb, "<Failure filename=\"t.cpp\" line=\"9\">late</Failure></Section>"
                 "<OverallResult success=\"false\"/></TestCase></Group></Catch>");
    struct test_plan plan = {.project_root = "/p", .work_dir = "/r"};
    struct test_output o = {.plan = &plan, .out = sb.buf, .out_len = sb.len, .err = ""};
    struct test_report r;
    test_report_init(&r);
    assert_int_equal(test_adapter_catch2.parse(&o, &r), 0);
    expect_case(&r, 0, "t", TEST_FAILED, "t.cpp", 9, "explicit failure with message:\n"
                "  late\nin section: \"s0\"");
    test_report_free(&r);
    sb_free(&sb);
}

static void test_catch2_live(void **state)
{
    (void)state;
    char *out = slurp("catch2/suite.xml");
    live_feed(&test_adapter_catch2, out);
    assert_string_equal(live_take(),
                        "phase 2\n"
                        "started push then pop returns the last value\n"
                        "finished push then pop returns the last value passed\n"
                        "started peek sees the top\n"
                        "finished peek sees the top passed\n"
                        "started sum adds every value\n"
                        "finished sum adds every value failed\n"
                        "started grows past its capacity\n"
                        "finished grows past its capacity skipped\n"
                        "started hang_deadlock\n"
                        "finished hang_deadlock passed\n");
    free(out);
    /* killed in hang_deadlock: its start is the last word */
    out = slurp("catch2/killed.xml");
    live_feed(&test_adapter_catch2, out);
    const char *log = live_take();
    const char *tail = "started hang_deadlock\n";
    assert_string_equal(log + strlen(log) - strlen(tail), tail);
    free(out);
}

/* ---- CTest --------------------------------------------------------------------------------- */

static void test_ctest_detect_and_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_ctest;
    char *dir = scratch();
    write_file(dir, "CMakeLists.txt", "project(x C)\nenable_testing()\nadd_test(NAME t "
                                      "COMMAND t)\n");
    assert_int_equal(a->detect(dir, NULL), 40);
    struct test_plan plan = {.project_root = dir, .work_dir = "/run"};
    int rc;
    char *s = command_words(a, &plan, &rc, NULL);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(s, "VALIDATION_ERROR: "));
    assert_non_null(strstr(s, "has no CTestTestfile.cmake"));
    free(s);

    write_file(dir, "build/CTestTestfile.cmake", "add_test(t \"t\")\n");
    assert_int_equal(a->detect(dir, NULL), 75);
    struct test_command c;
    s = command_words(a, &plan, &rc, &c);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "ctest --output-on-failure --output-junit /run/ctest.xml");
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s/build", dir);
    assert_string_equal(c.cwd, want);
    assert_string_equal(c.report_path, "/run/ctest.xml");
    tcmd_free(&c);
    free(s);

    write_file(dir, "CTestTestfile.cmake", "add_test(t \"t\")\n");
    assert_int_equal(a->detect(dir, NULL), 80);
    assert_int_equal(a->detect(dir, "ctest -j4"), 80);
    assert_int_equal(a->detect(dir, "./csv_tests fields_basic"), 0);
    plan.level = TEST_LEVEL_UNIT;
    s = command_words(a, &plan, &rc, &c);
    assert_string_equal(s, "ctest --output-on-failure --output-junit /run/ctest.xml "
                           "-L ^unit$");
    assert_null(c.cwd);
    tcmd_free(&c);
    free(s);
    plan.test = "a.b(c)+";
    plan.work_dir = NULL;
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "ctest --output-on-failure -R ^a\\.b\\(c\\)\\+$");
    free(s);
    rm_tree(dir);
    free(dir);
}

static const char TRAILING_MESSAGE[] =
    "csv_tests: /src/ctest/csv_tests.c:26: fields_trailing: Assertion "
    "`csv_count_fields(\"a,b,\") == 3' failed.\nctest: Subprocess aborted";

static void test_ctest_parse_junit(void **state)
{
    (void)state;
    struct run run;
    run_parse(&run, &test_adapter_ctest, "ctest/suite.out", NULL, "ctest/suite.xml", 8);
    const struct test_report *r = &run.r;
    assert_true(r->structured);
    assert_string_equal(r->note, "");
    assert_int_equal(r->n_cases, 6);
    expect_case(r, 0, "fields_basic", TEST_PASSED, NULL, 0, NULL);
    assert_string_equal(r->cases[0].output, "fields_basic: ok\n");
    assert_int_equal(r->cases[0].duration_ms, 1);
    expect_case(r, 1, "fields_quoted", TEST_PASSED, NULL, 0, NULL);
    expect_case(r, 2, "fields_trailing", TEST_FAILED, "/src/ctest/csv_tests.c", 26,
                TRAILING_MESSAGE);
    expect_case(r, 3, "skip_needs_network", TEST_SKIPPED, NULL, 0, "SKIP_RETURN_CODE=77");
    expect_case(r, 4, "fields_unicode", TEST_SKIPPED, NULL, 0,
                "disabled (the DISABLED test property)");
    expect_case(r, 5, "hang_deadlock", TEST_PASSED, NULL, 0, NULL);
    char *s = suggestions(&test_adapter_ctest, &r->cases[2]);
    assert_string_equal(s, "@file:csv.c **::csv_count_fields");
    free(s);
    run_free(&run);

    /* configured, never built: every test "Unable to find executable" */
    run_parse(&run, &test_adapter_ctest, NULL, NULL, "ctest/notbuilt.xml", 8);
    assert_int_equal(run.r.n_cases, 5);
    expect_case(&run.r, 0, "fields_basic", TEST_FAILED, NULL, 0,
                "Unable to find executable: /build/ctest/csv_tests (build the project: "
                "cmake --build .)");
    expect_case(&run.r, 4, "fields_unicode", TEST_SKIPPED, NULL, 0,
                "disabled (the DISABLED test property)");
    run_free(&run);
}

static void test_ctest_parse_text(void **state)
{
    (void)state;
    struct run run;
    /* the same run without its JUnit file */
    run_parse(&run, &test_adapter_ctest, "ctest/suite.out", NULL, NULL, 8);
    const struct test_report *r = &run.r;
    assert_false(r->structured);
    assert_string_equal(r->note, "ctest wrote no JUnit report (the run was cut short?): "
                                 "results read from its progress lines");
    assert_int_equal(r->n_cases, 6);
    expect_case(r, 0, "fields_basic", TEST_PASSED, NULL, 0, NULL);
    expect_case(r, 2, "fields_trailing", TEST_FAILED, "/src/ctest/csv_tests.c", 26,
                TRAILING_MESSAGE);
    expect_case(r, 3, "skip_needs_network", TEST_SKIPPED, NULL, 0, NULL);
    expect_case(r, 4, "fields_unicode", TEST_SKIPPED, NULL, 0, NULL);
    expect_case(r, 5, "hang_deadlock", TEST_PASSED, NULL, 0, NULL);
    run_free(&run);

    /* killed as stuck while hang_deadlock ran: nothing finished */
    run_stuck = true;
    run_parse(&run, &test_adapter_ctest, "ctest/killed.out", NULL, NULL, -1);
    assert_int_equal(run.r.n_cases, 0);
    assert_false(run.r.structured);
    assert_string_equal(run.r.note, "ctest was killed (stuck) before writing its JUnit "
                                    "report: results read from its progress lines");
    run_free(&run);
}

static void test_ctest_live(void **state)
{
    (void)state;
    char *out = slurp("ctest/suite.out");
    live_feed(&test_adapter_ctest, out);
    assert_string_equal(live_take(),
                        "phase 2\n"
                        "started fields_basic\n"
                        "finished fields_basic passed\n"
                        "started fields_quoted\n"
                        "finished fields_quoted passed\n"
                        "started fields_trailing\n"
                        "finished fields_trailing failed\n"
                        "started skip_needs_network\n"
                        "finished skip_needs_network skipped\n"
                        "started fields_unicode\n"
                        "finished fields_unicode skipped\n"
                        "started hang_deadlock\n"
                        "finished hang_deadlock passed\n");
    free(out);
}

/* ---- pytest ------------------------------------------------------------------------------ */

static void test_pytest_detect_and_command(void **state)
{
    (void)state;
    const struct test_adapter *a = &test_adapter_pytest;
    char *dir = scratch();
    assert_int_equal(a->detect(dir, NULL), 0);
    write_file(dir, "tests/test_x.py", "def test_a():\n    pass\n");
    assert_int_equal(a->detect(dir, NULL), 80);
    write_file(dir, "pyproject.toml", "[project]\nname = \"x\"\n");
    assert_int_equal(a->detect(dir, NULL), 80);
    write_file(dir, "pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-q\"\n");
    assert_int_equal(a->detect(dir, NULL), 85);
    write_file(dir, "pytest.ini", "[pytest]\n");
    assert_int_equal(a->detect(dir, NULL), 90);
    assert_int_equal(a->detect(dir, "python3 -m pytest -x"), 90);
    assert_int_equal(a->detect(dir, "build/stack_tests"), 0); /* another program's */

    struct test_plan plan = {.project_root = dir, .work_dir = "/run",
                             .level = TEST_LEVEL_UNIT};
    int rc;
    struct test_command c;
    char *s = command_words(a, &plan, &rc, &c);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "/usr/bin/python3 -m pytest -v -p no:cacheprovider -o "
                           "junit_family=xunit1 --junitxml=/run/pytest.xml");
    assert_string_equal(c.report_path, "/run/pytest.xml");
    tcmd_free(&c);
    free(s);
    plan.work_dir = NULL;
    plan.test = "tests/test_x.py::TestY::test_z";
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "/usr/bin/python3 -m pytest -v tests/test_x.py::TestY::test_z");
    free(s);
    plan.test = "double_space";
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "/usr/bin/python3 -m pytest -v -k double_space");
    free(s);
    plan.test = "--x.py::y";
    s = command_words(a, &plan, &rc, NULL);
    assert_string_equal(s, "/usr/bin/python3 -m pytest -v -k --x.py::y");
    free(s);
    /* the project's virtualenv first */
    write_file(dir, ".venv/bin/python3", "#!/bin/sh\n");
    char py[PATH_MAX + 32];
    snprintf(py, sizeof py, "%s/.venv/bin/python3", dir);
    chmod(py, 0755);
    s = command_words(a, &plan, &rc, NULL);
    assert_true(strncmp(s, py, strlen(py)) == 0);
    free(s);
    assert_int_equal(a->dump_signal, SIGABRT);
    assert_string_equal(a->dump_env, "PYTHONFAULTHANDLER=1");
    rm_tree(dir);
    free(dir);
}

#define WC "tests/test_wordcount.py"

static void expect_wordcount_suite(const struct test_report *r, bool junit)
{
    assert_int_equal(r->n_cases, 6);
    expect_case(r, 0, WC "::test_simple_sentence", TEST_PASSED, junit ? WC : NULL,
                junit ? 12 : 0, NULL);
    expect_case(r, 1, WC "::test_empty_text", TEST_PASSED, junit ? WC : NULL,
                junit ? 16 : 0, NULL);
    expect_case(r, 2, WC "::test_double_space", TEST_FAILED, WC, 22,
                "AssertionError: two words separated by two spaces\nassert 3 == 2");
    expect_case(r, 3, WC "::test_unicode_later", TEST_SKIPPED, junit ? WC : NULL,
                junit ? 25 : 0, junit ? "unicode spaces are not supported yet" : NULL);
    expect_case(r, 4, WC "::TestLines::test_single_word", TEST_PASSED, junit ? WC : NULL,
                junit ? 31 : 0, NULL);
    expect_case(r, 5, WC "::test_hang_deadlock", TEST_PASSED, junit ? WC : NULL,
                junit ? 55 : 0, NULL);
}

static void test_pytest_parse(void **state)
{
    (void)state;
    struct run run;
    run_parse(&run, &test_adapter_pytest, "pytest/suite.out", NULL, "pytest/suite.xml", 1);
    assert_true(run.r.structured);
    assert_string_equal(run.r.note, "");
    expect_wordcount_suite(&run.r, true);
    /* Python code: nothing native to trace */
    char *pats[4];
    assert_int_equal(test_adapter_pytest.suggest(&run.r.cases[2], pats, 4), 0);
    struct test_case ext = {.name = "t", .file = "src/_speedups.c", .line = 3,
                            .message = "SystemError: tokenize() failed"};
    char *s = suggestions(&test_adapter_pytest, &ext);
    assert_string_equal(s, "@file:_speedups.c **::tokenize");
    free(s);
    run_free(&run);

    /* without the report: the -v lines and the FAILURES section */
    run_parse(&run, &test_adapter_pytest, "pytest/suite.out", NULL, NULL, 1);
    assert_false(run.r.structured);
    assert_string_equal(run.r.note, "pytest wrote no JUnit report (the run was cut short?): "
                                    "results read from its -v lines");
    expect_wordcount_suite(&run.r, false);
    run_free(&run);

    /* killed as stuck in test_hang_deadlock: no verdict line at all */
    run_stuck = true;
    run_parse(&run, &test_adapter_pytest, "pytest/killed.out", "pytest/killed.err", NULL, -1);
    assert_int_equal(run.r.n_cases, 0);
    assert_string_equal(run.r.note, "pytest was killed (stuck) before writing its JUnit "
                                    "report: results read from its -v lines");
    run_free(&run);
}

static void test_pytest_collection_error(void **state)
{
    (void)state;
    struct run run;
    run_parse(&run, &test_adapter_pytest, "pytest/collect_error.out", NULL,
              "pytest/collect_error.xml", 2);
    const struct test_report *r = &run.r;
    assert_true(r->build_failed);
    assert_int_equal(r->n_cases, 0);
    assert_int_equal(r->n_diags, 1);
    assert_string_equal(r->diags[0].file, "/src/pytest/tests/test_broken.py");
    assert_int_equal(r->diags[0].line, 1);
    assert_int_equal(r->diags[0].column, 0);
    assert_string_equal(r->diags[0].message,
                        "  File \"/src/pytest/tests/test_broken.py\", line 1\n"
                        "    def test_broken(:\n"
                        "                    ^\n"
                        "SyntaxError: invalid syntax");
    run_free(&run);
}

static void test_pytest_live(void **state)
{
    (void)state;
    char *out = slurp("pytest/suite.out");
    live_feed(&test_adapter_pytest, out);
    assert_string_equal(live_take(),
                        "phase 2\n"
                        "finished " WC "::test_simple_sentence passed\n"
                        "finished " WC "::test_empty_text passed\n"
                        "finished " WC "::test_double_space failed\n"
                        "finished " WC "::test_unicode_later skipped\n"
                        "finished " WC "::TestLines::test_single_word passed\n"
                        "finished " WC "::test_hang_deadlock passed\n");
    free(out);
    /* the name printed before a test runs, seen as a partial line */
    out = slurp("pytest/killed.out");
    live_feed(&test_adapter_pytest, out);
    assert_string_equal(live_take(), "phase 2\nstarted " WC "::test_hang_deadlock\n");
    free(out);
}

int main(void)
{
    find_data_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_whole_and_streamed),
        cmocka_unit_test(test_xml_broken),
        cmocka_unit_test(test_junit_generic),
        cmocka_unit_test(test_catch2_detect),
        cmocka_unit_test(test_catch2_command),
        cmocka_unit_test(test_catch2_parse_suite),
        cmocka_unit_test(test_catch2_parse_errors),
        cmocka_unit_test(test_catch2_parse_killed_and_empty),
        cmocka_unit_test(test_catch2_parse_prints),
        cmocka_unit_test(test_catch2_deep_sections),
        cmocka_unit_test(test_catch2_live),
        cmocka_unit_test(test_ctest_detect_and_command),
        cmocka_unit_test(test_ctest_parse_junit),
        cmocka_unit_test(test_ctest_parse_text),
        cmocka_unit_test(test_ctest_live),
        cmocka_unit_test(test_pytest_detect_and_command),
        cmocka_unit_test(test_pytest_parse),
        cmocka_unit_test(test_pytest_collection_error),
        cmocka_unit_test(test_pytest_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
