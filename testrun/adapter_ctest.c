/*
 * adapter_ctest.c - CTest, in a CMake build directory (the one holding
 * CTestTestfile.cmake: the project root itself, or its build/ subdirectory). Runs
 * `ctest --output-on-failure --output-junit FILE`: the JUnit file gives each
 * test's status, time and output, and a failure's file:line is the first
 * assertion-like line of that output with one (assert(), gtest, Catch2 and most
 * checkers print FILE:LINE). Live progress reads ctest's own lines
 * ("    Start 1: name", "1/4 Test #1: name ....   Passed    0.01 sec"), which are
 * also the fallback when no JUnit file was written (a run cut short).
 *
 * debug_test never builds: a source tree with tests but no configured build
 * directory is recognized with low confidence, and its command is refused with
 * the cmake lines that configure and build it.
 */
#include "testrun/adapter.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "testrun/junit.h"
#include "testrun/tsuggest.h"

#define CMAKELISTS_MAX (1u << 20)
#define MESSAGE_MAX 4096

/* ---- detection and command ----------------------------------------------------- */

/* Whether the top-level CMakeLists.txt declares tests. */
static bool cmakelists_has_tests(const char *project_root)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/CMakeLists.txt", project_root) >= (int)sizeof path)
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char *buf = malloc(CMAKELISTS_MAX + 1);
    size_t n = buf ? fread(buf, 1, CMAKELISTS_MAX, f) : 0;
    fclose(f);
    bool yes = false;
    if (buf) {
        buf[n] = '\0';
        yes = strstr(buf, "enable_testing") || strstr(buf, "add_test") ||
              strstr(buf, "include(CTest)") || strstr(buf, "gtest_discover_tests");
    }
    free(buf);
    return yes;
}

static int ctest_detect(const char *project_root, const char *command)
{
    /* A command is what the agent wants run: ctest only when it says so (the adapter
     * then runs its command line, not that one). */
    if (command && !strstr(command, "ctest"))
        return 0;
    if (test_has_file(project_root, "CTestTestfile.cmake"))
        return 80;
    if (test_has_file(project_root, "build/CTestTestfile.cmake"))
        return 75;
    return cmakelists_has_tests(project_root) ? 40 : 0;
}

/* name as an extended regular expression matching only itself. */
static void regex_quote(struct strbuf *sb, const char *name)
{
    for (const char *p = name; *p; p++) {
        if (strchr("\\.^$|()[]{}*+?", *p))
            sb_puts(sb, "\\");
        sb_append(sb, p, 1);
    }
}

static int ctest_command(const struct test_plan *plan, struct test_command *out,
                         struct strobe_error *e)
{
    const char *root = plan->project_root;
    if (!test_has_file(root, "CTestTestfile.cmake")) {
        if (!test_has_file(root, "build/CTestTestfile.cmake"))
            return err_set(e, ERR_VALIDATION, "%s has no CTestTestfile.cmake: CTest runs in "
                           "a configured and built CMake build directory. Configure and "
                           "build it (cmake -S %s -B %s/build && cmake --build %s/build), "
                           "then pass the build directory as projectRoot.",
                           root, root, root, root);
        if (asprintf(&out->cwd, "%s/build", root) < 0)
            out->cwd = NULL;
    }
    tcmd_arg(out, "ctest");
    tcmd_arg(out, "--output-on-failure");
    if (plan->work_dir) {
        tcmd_arg(out, "--output-junit");
        tcmd_arg(out, "%s/ctest.xml", plan->work_dir);
        if (asprintf(&out->report_path, "%s/ctest.xml", plan->work_dir) < 0)
            out->report_path = NULL;
    }
    if (plan->test) {
        struct strbuf sb = {0};
        sb_puts(&sb, "^");
        regex_quote(&sb, plan->test);
        sb_puts(&sb, "$");
        tcmd_arg(out, "-R");
        tcmd_arg(out, "%s", sb.buf);
        sb_free(&sb);
    } else if (plan->level != TEST_LEVEL_ALL) {
        /* Levels are CTest labels: set_tests_properties(t PROPERTIES LABELS unit). */
        tcmd_arg(out, "-L");
        tcmd_arg(out, "%s", plan->level == TEST_LEVEL_UNIT ? "^unit$"
                 : plan->level == TEST_LEVEL_INTEGRATION ? "^integration$" : "^e2e$");
    }
    return 0;
}

/* ---- ctest's progress lines ------------------------------------------------------ */

/* "1/6 Test #3: fields_trailing ......Subprocess aborted***Exception:   0.00 sec":
 * the name, what ctest says of it and its seconds. false for any other line. */
struct result_line {
    const char *name;
    int name_len;
    const char *verdict;
    int verdict_len;
    double seconds;
};

static bool parse_result_line(const char *line, size_t len, struct result_line *rl)
{
    const char *end = line + len;
    const char *p = memmem(line, len, " Test #", 7);
    if (!p)
        return false;
    p = memchr(p, ':', (size_t)(end - p));
    if (!p || p + 2 > end)
        return false;
    p += 2;
    /* The name ends at the run of dots that pads it (" ...", at least three even
     * after a name longer than the padding). */
    const char *dots = memmem(p, (size_t)(end - p), " ..", 3);
    const char *sec = NULL;
    for (const char *q = end; q - 4 >= p; q--)
        if (memcmp(q - 4, " sec", 4) == 0) {
            sec = q - 4;
            break;
        }
    if (!dots || !sec || sec < dots)
        return false;
    rl->name = p;
    rl->name_len = (int)(dots - p);
    const char *v = dots + 1;
    while (v < sec && *v == '.')
        v++;
    /* the seconds: the number before " sec" */
    const char *num = sec;
    while (num > v && num[-1] != ' ')
        num--;
    rl->seconds = strtod(num, NULL);
    const char *vend = num;
    while (vend > v && (vend[-1] == ' ' || vend[-1] == ':'))
        vend--;
    while (v < vend && *v == ' ')
        v++;
    rl->verdict = v;
    rl->verdict_len = (int)(vend - v);
    return true;
}

static enum test_status verdict_status(const char *v, int n)
{
    if (n >= 6 && memcmp(v, "Passed", 6) == 0)
        return TEST_PASSED;
    if (memmem(v, (size_t)n, "Skipped", 7) || memmem(v, (size_t)n, "Disabled", 8))
        return TEST_SKIPPED;
    return TEST_FAILED;
}

static void ctest_live_line(void *state, struct test_live *lv, int stream,
                            const char *line, size_t len, bool partial)
{
    (void)state;
    if (stream != 1 || partial)
        return;
    char name[512];
    struct result_line rl;
    const char *p = line;
    while (p < line + len && *p == ' ')
        p++;
    size_t rest = len - (size_t)(p - line);
    if (rest > 6 && memcmp(p, "Start ", 6) == 0) {
        const char *colon = memchr(p, ':', rest);
        if (!colon || colon + 2 > line + len)
            return;
        snprintf(name, sizeof name, "%.*s", (int)(line + len - colon - 2), colon + 2);
        test_live_started(lv, name);
    } else if (parse_result_line(line, len, &rl)) {
        snprintf(name, sizeof name, "%.*s", rl.name_len, rl.name);
        test_live_finished(lv, name, verdict_status(rl.verdict, rl.verdict_len));
    } else if (rest >= 13 && memcmp(p, "Test project ", 13) == 0) {
        test_live_phase(lv, TEST_PHASE_RUNNING);
    }
}

/* ---- the outcome ------------------------------------------------------------------- */

static const char *const SOURCES[] = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".rs",
                                      ".go", ".py", NULL};

/* Lines of a test's output that report a failed check. */
static const char FAILURE_RE[] =
    "Assertion .* failed|assertion failed|Failure|FAILED|panicked at|Error|error:|"
    "Expected|expected|Aborted|Segmentation fault";

/* The verdict ctest printed for name on stdout ("Subprocess aborted"), into buf. */
static bool stdout_verdict(const struct test_output *o, const char *name, char *buf,
                           size_t buflen)
{
    const char *p = o->out, *end = o->out + o->out_len;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct result_line rl;
        if (parse_result_line(p, n, &rl) && (size_t)rl.name_len == strlen(name) &&
            memcmp(rl.name, name, (size_t)rl.name_len) == 0) {
            int vn = rl.verdict_len;
            const char *v = rl.verdict;
            /* "Subprocess aborted***Exception" -> "Subprocess aborted" */
            const char *stars = memmem(v, (size_t)vn, "***", 3);
            if (stars == v) {
                v += 3;
                vn -= 3;
                stars = memmem(v, (size_t)vn, "***", 3);
            }
            if (stars)
                vn = (int)(stars - v);
            snprintf(buf, buflen, "%.*s", vn, v);
            return true;
        }
        p = nl ? nl + 1 : NULL;
    }
    return false;
}

/* A failed test's message (its failure lines, else the end of its output, and
 * ctest's verdict) and its file:line (the first FILE:LINE among them). */
static void describe_failure(const struct test_output *o, struct test_case *c,
                             const struct regex *re)
{
    struct strbuf sb = {0};
    const char *out = c->output ? c->output : "";
    for (const char *p = out; *p && sb.len < MESSAGE_MAX;) {
        size_t n = strcspn(p, "\n");
        if (re && regex_match(re, p, n, NULL) == 1) {
            sb_append(&sb, p, n);
            sb_puts(&sb, "\n");
        }
        p += n + (p[n] == '\n');
    }
    if (sb.len == 0 && *out) {
        size_t len = strlen(out);
        size_t from = len > 1024 ? len - 1024 : 0;
        sb_puts(&sb, out + from);
        if (out[len - 1] != '\n')
            sb_puts(&sb, "\n");
    }
    if (!c->file)
        test_find_location(sb.buf ? sb.buf : out, SOURCES, &c->file, &c->line);
    if (!c->file)
        test_find_location(out, SOURCES, &c->file, &c->line);
    char verdict[128];
    if (stdout_verdict(o, c->name, verdict, sizeof verdict))
        sb_printf(&sb, "ctest: %s", verdict);
    else if (sb.len)
        sb.buf[--sb.len] = '\0';
    else
        sb_puts(&sb, "failed");
    test_set_str(&c->message, NULL, 0);
    c->message = sb_take(&sb);
}

struct ctest_parse {
    const struct test_output *o;
    struct regex *re;
};

static int on_case(void *ud, const struct junit_case *jc, struct test_report *r)
{
    struct ctest_parse *cp = ud;
    struct test_case *c = junit_add(jc, jc->name, r);
    if (!c)
        return -1;
    /* A test whose program is missing is "notrun" in JUnit but a failure to ctest:
     * the project is not built. */
    if (jc->message && strcmp(jc->message, "Unable to find executable") == 0) {
        c->status = TEST_FAILED;
        struct strbuf sb = {0};
        sb_printf(&sb, "%s (build the project: cmake --build .)",
                  jc->out ? jc->out : jc->message);
        test_set_str(&c->message, NULL, 0);
        c->message = sb_take(&sb);
        return 0;
    }
    if (c->status == TEST_FAILED)
        describe_failure(cp->o, c, cp->re);
    else if (c->status == TEST_SKIPPED && !c->message)
        c->message = strdup(jc->status && strcmp(jc->status, "disabled") == 0
                                ? "disabled (the DISABLED test property)" : "not run");
    return 0;
}

/* No JUnit file: the cases from ctest's result lines, failures with the output
 * --output-on-failure printed after them. */
static int parse_stdout(const struct test_output *o, struct test_report *out,
                        const struct regex *re)
{
    const char *p = o->out, *end = o->out + o->out_len;
    struct test_case *last = NULL;
    struct strbuf output = {0};
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct result_line rl;
        bool is_result = parse_result_line(p, n, &rl);
        bool is_other = n > 0 && (memmem(p, n, "    Start ", 10) == p ||
                                  memmem(p, n, "% tests passed", 14) ||
                                  memmem(p, n, "Total Test time", 15));
        if ((is_result || is_other) && last) {
            if (output.len)
                last->output = sb_take(&output);
            describe_failure(o, last, re);
            last = NULL;
        }
        if (is_result) {
            char name[512];
            snprintf(name, sizeof name, "%.*s", rl.name_len, rl.name);
            last = test_report_add(out, name, verdict_status(rl.verdict, rl.verdict_len));
            if (!last)
                return -1;
            last->duration_ms = (int64_t)(rl.seconds * 1000 + 0.5);
            if (last->status != TEST_FAILED)
                last = NULL;
        } else if (last) {
            sb_append(&output, p, n);
            sb_puts(&output, "\n");
        }
        p = nl ? nl + 1 : NULL;
    }
    if (last) {
        if (output.len)
            last->output = sb_take(&output);
        describe_failure(o, last, re);
    }
    sb_free(&output);
    return 0;
}

static int ctest_parse(const struct test_output *o, struct test_report *out)
{
    struct ctest_parse cp = {.o = o, .re = regex_compile(FAILURE_RE, NULL)};
    int rc = junit_parse_file(o->report_path, on_case, &cp, out);
    if (rc == 2) {
        out->structured = false;
        rc = parse_stdout(o, out, cp.re);
        snprintf(out->note, sizeof out->note, "ctest %s: results read from its progress "
                 "lines", o->stuck ? "was killed (stuck) before writing its JUnit report"
                                   : "wrote no JUnit report (the run was cut short?)");
    }
    if (rc >= 0 && out->n_cases == 0 && o->plan->test && !out->note[0])
        snprintf(out->note, sizeof out->note, "no CTest test is named \"%s\" (ctest -N "
                 "lists them)", o->plan->test);
    regex_free(cp.re);
    return rc < 0 ? -1 : 0;
}

const struct test_adapter test_adapter_ctest = {
    .name = "ctest",
    .display = "CTest",
    .language = "cpp",
    .build_system = "cmake",
    .program = "ctest",
    .provides = "Debian package cmake",
    .detect = ctest_detect,
    .command = ctest_command,
    .live_line = ctest_live_line,
    .parse = ctest_parse,
    .suggest = tsuggest_native,
    .no_tests_hint = "CTest runs the tests a CMakeLists.txt declares with enable_testing() "
                     "and add_test(NAME name COMMAND program args); configure and build, "
                     "then pass the build directory as projectRoot.",
};
