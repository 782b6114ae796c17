/*
 * adapter_vitest.c - Vitest: `vitest run --reporter=verbose --reporter=json
 * --outputFile.json=WORK/vitest.json`, one test with `-t` (a regex over
 * "describe title", given literally). The JSON report (jest's shape) is the
 * result; the verbose reporter's lines on stdout ("✓ file > describe > title 1ms")
 * give progress as tests end, and the fallback when the report is missing. Vitest
 * prints nothing when a test starts, so a stuck test is not named (and a test that
 * spins holds back the lines of the tests before it in its file). Vitest has no
 * notion of unit/integration/e2e: level is ignored.
 */
#include "testrun/adapter.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testrun/jsproj.h"

static int vitest_detect(const char *project_root, const char *command)
{
    return js_detect(project_root, command, JS_VITEST, 95);
}

static int vitest_command(const struct test_plan *plan, struct test_command *out,
                          struct strobe_error *e)
{
    /* "run": one pass, no watch mode (the agent's own command says it itself) */
    static const char *const RUN[] = {"run", NULL};
    if (js_command(plan, "vitest", plan->command ? NULL : RUN, out, e) != 0)
        return -1;
    if (plan->work_dir) {
        tcmd_arg(out, "--reporter=verbose");
        tcmd_arg(out, "--reporter=json");
        tcmd_arg(out, "--outputFile.json=%s/vitest.json", plan->work_dir);
        tcmd_env(out, "NO_COLOR=1");
        if (asprintf(&out->report_path, "%s/vitest.json", plan->work_dir) < 0)
            out->report_path = NULL;
    }
    if (plan->test) {
        char *re = js_regex_literal(plan->test);
        tcmd_arg(out, "-t");
        tcmd_arg(out, "%s", re);
        free(re);
    }
    return 0;
}

static const struct {
    const char *mark;
    enum test_status st;
} MARKS[] = {
    {" \xe2\x9c\x93 ", TEST_PASSED},  /* ✓ */
    {" \xc3\x97 ", TEST_FAILED},      /* × */
    {" \xe2\x86\x93 ", TEST_SKIPPED}, /* ↓ */
};

/* A verbose result line, " ✓ a.test.mjs > Stack > pops 1ms": the test's full name
 * ("Stack pops", the file dropped) in name, its file in file (may be NULL). */
static bool result_line(const char *line, size_t len, struct strbuf *name, char **file,
                        enum test_status *st)
{
    for (size_t i = 0; i < sizeof MARKS / sizeof *MARKS; i++) {
        size_t ml = strlen(MARKS[i].mark);
        if (len <= ml || memcmp(line, MARKS[i].mark, ml) != 0)
            continue;
        const char *t = line + ml, *end = line + len;
        /* " 12ms" */
        const char *d = end;
        if (d - t > 3 && d[-1] == 's' && d[-2] == 'm') {
            d -= 2;
            while (d > t && isdigit((unsigned char)d[-1]))
                d--;
            if (d > t && d[-1] == ' ' && isdigit((unsigned char)*d))
                end = d - 1;
        }
        const char *sep = NULL;
        for (const char *p = t; p + 3 <= end; p++)
            if (memcmp(p, " > ", 3) == 0) {
                sep = p;
                break;
            }
        name->len = 0;
        if (name->buf)
            name->buf[0] = '\0';
        if (file)
            *file = sep ? strndup(t, (size_t)(sep - t)) : NULL;
        for (const char *p = sep ? sep + 3 : t; p < end;) {
            const char *q = p;
            while (q + 3 <= end && memcmp(q, " > ", 3) != 0)
                q++;
            if (q + 3 > end)
                q = end;
            if (name->len)
                sb_puts(name, " ");
            sb_append(name, p, (size_t)(q - p));
            p = q == end ? end : q + 3;
        }
        *st = MARKS[i].st;
        return name->len > 0;
    }
    return false;
}

static void vitest_live_line(void *state, struct test_live *lv, int stream, const char *line,
                             size_t len, bool partial)
{
    (void)state;
    if (stream != 1 || partial)
        return;
    if (len > 5 && memcmp(line, " RUN ", 5) == 0) {
        test_live_phase(lv, TEST_PHASE_RUNNING);
        return;
    }
    struct strbuf name = {0};
    enum test_status st;
    if (result_line(line, len, &name, NULL, &st)) {
        test_live_started(lv, name.buf);
        test_live_finished(lv, name.buf, st);
    }
    sb_free(&name);
}

/* Without the JSON report: the verbose lines, with the "   → message" line the
 * reporter writes under a failed test. */
static void parse_text(const struct test_output *o, struct test_report *r)
{
    struct strbuf name = {0};
    struct test_case *last = NULL;
    const char *end = o->out + o->out_len;
    for (const char *p = o->out; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        enum test_status st;
        char *file = NULL;
        if (result_line(p, n, &name, &file, &st)) {
            last = test_report_add(r, name.buf, st);
            if (last && file)
                last->file = js_relative(file, o->plan->project_root);
        } else if (last && last->status == TEST_FAILED && n > 7 &&
                   memcmp(p, "   \xe2\x86\x92 ", 7) == 0) {
            test_set_str(&last->message, p + 7, (long)(n - 7));
            last = NULL;
        }
        free(file);
        p = nl ? nl + 1 : end;
    }
    sb_free(&name);
}

/* Vitest's JSON says a file failed to load but not where; its stderr does
 * ("  File: /abs/a.test.mjs:37:1"). */
static void locate_load_errors(const struct test_output *o, struct test_report *r)
{
    for (size_t i = 0; i < r->n_diags; i++) {
        struct test_diagnostic *d = &r->diags[i];
        if (d->line || !d->file)
            continue;
        size_t fl = strlen(d->file);
        for (const char *p = strstr(o->err, "File: "); p; p = strstr(p + 1, "File: ")) {
            const char *path = p + 6;
            const char *colon = strchr(path, ':');
            const char *nl = strchr(path, '\n');
            if (!colon || (nl && nl < colon) || (size_t)(colon - path) < fl ||
                memcmp(colon - fl, d->file, fl) != 0)
                continue;
            if (sscanf(colon, ":%d:%d", &d->line, &d->column) >= 1)
                break;
        }
    }
}

static int vitest_parse(const struct test_output *o, struct test_report *out)
{
    char *json = o->report_path ? js_read_file(o->report_path, NULL) : NULL;
    bool ok = json && js_parse_jest_json(json, o->plan->project_root, out);
    free(json);
    if (ok) {
        locate_load_errors(o, out);
    } else {
        parse_text(o, out);
        out->structured = false;
        snprintf(out->note, sizeof out->note, "%s: results read from its verbose lines on "
                 "stdout (no failure locations)",
                 o->stuck ? "killed as stuck before vitest wrote its JSON report"
                          : "vitest wrote no JSON report");
    }
    js_drop_filtered(out, o->plan->test);
    return 0;
}

const struct test_adapter test_adapter_vitest = {
    .name = "vitest",
    .display = "Vitest",
    .language = "javascript",
    .build_system = "npm",
    .program = "node",
    .provides = "Debian package nodejs",
    .detect = vitest_detect,
    .command = vitest_command,
    .live_line = vitest_live_line,
    .parse = vitest_parse,
    .suggest = js_suggest_none,
    .no_tests_hint = "Vitest runs files named *.test.{js,ts,mjs} / *.spec.* (import { test, "
                     "expect } from 'vitest').",
    .trace_note = "Strobe traces native code: patterns match node's and V8's C++ "
                  "functions (and native addons), not JavaScript functions; the results "
                  "are the same.",
};
