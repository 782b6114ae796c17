/*
 * adapter_mocha.c - Mocha: `mocha --reporter json --reporter-option
 * output=WORK/mocha.json`, one test with `--fgrep` (a plain substring of
 * "describe title"). The JSON report is the result. Mocha takes one reporter
 * only and its JSON one prints nothing while the tests run, so there is no live
 * progress (and a stuck test is not named). When mocha cannot load a test file it
 * writes no report and prints node's error on stderr ("Exception during run:
 * FILE:LINE ... SyntaxError: ..."): that is read as a build failure. Mocha has
 * no notion of unit/integration/e2e: level is ignored.
 */
#include "testrun/adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testrun/jsproj.h"

static int mocha_detect(const char *project_root, const char *command)
{
    return js_detect(project_root, command, JS_MOCHA, 90);
}

static int mocha_command(const struct test_plan *plan, struct test_command *out,
                         struct strobe_error *e)
{
    if (js_command(plan, "mocha", NULL, out, e) != 0)
        return -1;
    if (plan->work_dir) {
        tcmd_arg(out, "--reporter");
        tcmd_arg(out, "json");
        tcmd_arg(out, "--reporter-option");
        tcmd_arg(out, "output=%s/mocha.json", plan->work_dir);
        if (asprintf(&out->report_path, "%s/mocha.json", plan->work_dir) < 0)
            out->report_path = NULL;
    }
    if (plan->test) {
        tcmd_arg(out, "--fgrep");
        tcmd_arg(out, "%s", plan->test);
    }
    return 0;
}

static const char *str_of(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool same_test(const cJSON *a, const cJSON *b)
{
    const char *ta = str_of(a, "fullTitle"), *tb = str_of(b, "fullTitle");
    const char *fa = str_of(a, "file"), *fb = str_of(b, "file");
    return ta && tb && strcmp(ta, tb) == 0 && (!fa || !fb || strcmp(fa, fb) == 0);
}

static bool listed(const cJSON *list, const cJSON *t)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
        if (same_test(x, t))
            return true;
    return false;
}

static void add_test(const cJSON *t, enum test_status st, const char *root,
                     struct test_report *r)
{
    struct test_case *c = test_report_add(r, str_of(t, "fullTitle"), st);
    if (!c)
        return;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "duration");
    if (cJSON_IsNumber(d))
        c->duration_ms = (int64_t)(d->valuedouble + 0.5);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(t, "err");
    if (st == TEST_FAILED) {
        const char *stack = str_of(err, "stack");
        if (stack)
            js_split_error(stack, root, &c->message, &c->file, &c->line);
        else
            test_set_str(&c->message, str_of(err, "message"), -1);
    }
    if (!c->file && str_of(t, "file"))
        c->file = js_relative(str_of(t, "file"), root);
}

static bool parse_json(const char *json, const char *root, struct test_report *r)
{
    cJSON *doc = cJSON_Parse(json);
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(doc, "tests");
    if (!cJSON_IsArray(tests)) {
        cJSON_Delete(doc);
        return false;
    }
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(doc, "pending");
    const cJSON *failures = cJSON_GetObjectItemCaseSensitive(doc, "failures");
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(t, "err");
        enum test_status st = cJSON_GetArraySize(err) > 0 ? TEST_FAILED
                              : listed(pending, t)      ? TEST_SKIPPED
                                                        : TEST_PASSED;
        add_test(t, st, root, r);
    }
    /* A failed hook ("before each" hook for "x") is a failure but not a test. */
    cJSON_ArrayForEach(t, failures)
        if (!listed(tests, t))
            add_test(t, TEST_FAILED, root, r);
    r->structured = true;
    cJSON_Delete(doc);
    return true;
}

/* Node's report of a file it could not load, after "Exception during run: ":
 * "FILE:LINE\n<source>\n^\n\nSyntaxError: ...". */
static void parse_load_error(const struct test_output *o, struct test_report *r)
{
    const char *p = strstr(o->err, "Exception during run: ");
    if (!p)
        return;
    p += strlen("Exception during run: ");
    const char *nl = strchr(p, '\n');
    char *first = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
    static const char *const SOURCES[] = {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", NULL};
    char *file = NULL;
    int line = 0;
    if (first && test_find_location(first, SOURCES, &file, &line)) {
        char *rel = js_relative(file, o->plan->project_root);
        free(file);
        file = rel;
    }
    char *message = js_error_line(p);
    r->build_failed = true;
    test_report_diag(r, file, line, 0, message);
    free(first);
    free(file);
    free(message);
}

static int mocha_parse(const struct test_output *o, struct test_report *out)
{
    char *json = o->report_path ? js_read_file(o->report_path, NULL) : NULL;
    bool ok = json && parse_json(json, o->plan->project_root, out);
    free(json);
    if (ok)
        return 0;
    parse_load_error(o, out);
    out->structured = false;
    if (o->stuck)
        snprintf(out->note, sizeof out->note, "killed as stuck before mocha wrote its JSON "
                 "report (it prints nothing per test meanwhile)");
    else if (!out->build_failed)
        snprintf(out->note, sizeof out->note, "mocha wrote no JSON report and printed no "
                 "load error: see the output's tail");
    return 0;
}

const struct test_adapter test_adapter_mocha = {
    .name = "mocha",
    .display = "Mocha",
    .language = "javascript",
    .build_system = "npm",
    .program = "node",
    .provides = "Debian package nodejs",
    .detect = mocha_detect,
    .command = mocha_command,
    .parse = mocha_parse,
    .suggest = js_suggest_none,
    .no_tests_hint = "Mocha runs ./test/*.spec.js (or the spec in .mocharc.*): describe('x', "
                     "() => { it('does y', () => { assert.equal(a, b) }) }).",
    .trace_note = "Strobe traces native code: patterns match node's and V8's C++ "
                  "functions (and native addons), not JavaScript functions; the results "
                  "are the same.",
};
