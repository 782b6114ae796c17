/*
 * adapter_jest.c - Jest: `jest --json --outputFile=WORK/jest.json --verbose`,
 * one test with `-t` (a regex over "describe title", given literally). The JSON
 * report is the result; the verbose listing jest prints on stderr when a test file
 * ends gives progress (per test, but only once its whole file has run: jest prints
 * nothing when a test starts, so a stuck jest test is not named) and the fallback
 * when the report is missing. Jest has no notion of unit/integration/e2e: level is
 * ignored.
 */
#include "testrun/adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testrun/jsproj.h"

#define DEPTH_MAX 16

static int jest_detect(const char *project_root, const char *command)
{
    return js_detect(project_root, command, JS_JEST, 92);
}

static int jest_command(const struct test_plan *plan, struct test_command *out,
                        struct strobe_error *e)
{
    if (js_command(plan, "jest", NULL, out, e) != 0)
        return -1;
    if (plan->work_dir) {
        tcmd_arg(out, "--json");
        tcmd_arg(out, "--outputFile=%s/jest.json", plan->work_dir);
        tcmd_arg(out, "--verbose");
        if (asprintf(&out->report_path, "%s/jest.json", plan->work_dir) < 0)
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

/* The verbose listing: "PASS ./a.test.js", then describe titles and results
 * indented two spaces a level ("    ✓ title (1 ms)", "✕", "○ skipped", "✎ todo"),
 * ended by an empty line. */
struct jest_walk {
    bool in_block;
    int depth;
    int indent[DEPTH_MAX];
    char *title[DEPTH_MAX];
};

static void walk_reset(struct jest_walk *w)
{
    for (int i = 0; i < w->depth; i++)
        free(w->title[i]);
    w->depth = 0;
}

static const struct {
    const char *mark;
    const char *word; /* after the mark, dropped */
    enum test_status st;
} MARKS[] = {
    {"\xe2\x9c\x93 ", "", TEST_PASSED},        /* ✓ */
    {"\xe2\x9c\x95 ", "", TEST_FAILED},        /* ✕ */
    {"\xe2\x97\x8b ", "skipped ", TEST_SKIPPED}, /* ○ */
    {"\xe2\x9c\x8e ", "todo ", TEST_SKIPPED},  /* ✎ */
};

/* Feeds one stderr line; true when it is a test's result, its full name in name. */
static bool walk_line(struct jest_walk *w, const char *line, size_t len, struct strbuf *name,
                      enum test_status *st)
{
    if (len > 5 && (memcmp(line, "PASS ", 5) == 0 || memcmp(line, "FAIL ", 5) == 0)) {
        walk_reset(w);
        w->in_block = true;
        return false;
    }
    if (!w->in_block)
        return false;
    int indent = 0;
    while ((size_t)indent < len && line[indent] == ' ')
        indent++;
    if ((size_t)indent == len) {
        w->in_block = false;
        walk_reset(w);
        return false;
    }
    while (w->depth > 0 && w->indent[w->depth - 1] >= indent)
        free(w->title[--w->depth]);
    const char *t = line + indent;
    size_t n = len - (size_t)indent;
    for (size_t i = 0; i < sizeof MARKS / sizeof *MARKS; i++) {
        size_t ml = strlen(MARKS[i].mark), wl = strlen(MARKS[i].word);
        if (n < ml + wl || memcmp(t, MARKS[i].mark, ml) != 0 ||
            memcmp(t + ml, MARKS[i].word, wl) != 0)
            continue;
        t += ml + wl;
        n -= ml + wl;
        /* " (12 ms)" */
        if (n > 5 && memcmp(t + n - 4, " ms)", 4) == 0) {
            const char *open = t + n;
            while (open > t && *open != '(')
                open--;
            if (open > t && open[-1] == ' ')
                n = (size_t)(open - 1 - t);
        }
        name->len = 0;
        for (int d = 0; d < w->depth; d++) {
            sb_puts(name, w->title[d]);
            sb_puts(name, " ");
        }
        sb_append(name, t, n);
        *st = MARKS[i].st;
        return true;
    }
    if (w->depth < DEPTH_MAX && (w->title[w->depth] = strndup(t, n)) != NULL)
        w->indent[w->depth++] = indent;
    return false;
}

static void *jest_live_open(void)
{
    return calloc(1, sizeof(struct jest_walk));
}

static void jest_live_line(void *state, struct test_live *lv, int stream, const char *line,
                           size_t len, bool partial)
{
    struct jest_walk *w = state;
    if (!w || stream != 2 || partial)
        return;
    struct strbuf name = {0};
    enum test_status st;
    if (len > 5 && (memcmp(line, "PASS ", 5) == 0 || memcmp(line, "FAIL ", 5) == 0))
        test_live_phase(lv, TEST_PHASE_RUNNING);
    if (walk_line(w, line, len, &name, &st) && name.buf) {
        test_live_started(lv, name.buf);
        test_live_finished(lv, name.buf, st);
    }
    sb_free(&name);
}

static void jest_live_close(void *state)
{
    struct jest_walk *w = state;
    if (w)
        walk_reset(w);
    free(w);
}

/* The "  ● describe › title" block of a failure in the text output, up to the next
 * one or the summary. */
static void fallback_failure(struct test_report *r, const char *root, const char *head,
                             size_t head_n, const char *body, size_t body_n)
{
    struct strbuf name = {0};
    for (size_t i = 0; i < head_n;) {
        if (head_n - i >= 5 && memcmp(head + i, " \xe2\x80\xba ", 5) == 0) {
            sb_puts(&name, " ");
            i += 5;
        } else {
            sb_append(&name, head + i++, 1);
        }
    }
    struct test_case *c = name.buf ? test_report_find(r, name.buf) : NULL;
    if (c) {
        char *text = strndup(body, body_n);
        if (text)
            js_split_error(text, root, &c->message, &c->file, &c->line);
        free(text);
    }
    sb_free(&name);
}

/* Without the JSON report (jest crashed, or was killed): the verbose listing. */
static void parse_text(const struct test_output *o, struct test_report *r)
{
    struct jest_walk w = {0};
    struct strbuf name = {0};
    const char *end = o->err + o->err_len;
    const char *fail_head = NULL, *fail_body = NULL;
    size_t fail_head_n = 0;
    for (const char *p = o->err; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        enum test_status st;
        if (walk_line(&w, p, n, &name, &st) && name.buf)
            test_report_add(r, name.buf, st);
        bool head = n > 6 && memcmp(p, "  \xe2\x97\x8f ", 6) == 0;
        bool top = n > 0 && p[0] != ' ';
        if ((head || top) && fail_head) {
            fallback_failure(r, o->plan->project_root, fail_head, fail_head_n, fail_body,
                             (size_t)(p - fail_body));
            fail_head = NULL;
        }
        if (head) {
            fail_head = p + 6;
            fail_head_n = n - 6;
            fail_body = nl ? nl + 1 : end;
        }
        p = nl ? nl + 1 : end;
    }
    if (fail_head)
        fallback_failure(r, o->plan->project_root, fail_head, fail_head_n, fail_body,
                         (size_t)(end - fail_body));
    walk_reset(&w);
    sb_free(&name);
}

static int jest_parse(const struct test_output *o, struct test_report *out)
{
    char *json = o->report_path ? js_read_file(o->report_path, NULL) : NULL;
    bool ok = json && js_parse_jest_json(json, o->plan->project_root, out);
    free(json);
    if (!ok) {
        parse_text(o, out);
        out->structured = false;
        snprintf(out->note, sizeof out->note, "%s: results read from its verbose listing "
                 "on stderr", o->stuck ? "killed as stuck before jest wrote its JSON report"
                                       : "jest wrote no JSON report");
    }
    js_drop_filtered(out, o->plan->test);
    return 0;
}

const struct test_adapter test_adapter_jest = {
    .name = "jest",
    .display = "Jest",
    .language = "javascript",
    .build_system = "npm",
    .program = "node",
    .provides = "Debian package nodejs",
    .detect = jest_detect,
    .command = jest_command,
    .live_open = jest_live_open,
    .live_line = jest_live_line,
    .live_close = jest_live_close,
    .parse = jest_parse,
    .suggest = js_suggest_none,
    .no_tests_hint = "Jest runs files named *.test.js / *.spec.js or under __tests__/ "
                     "(test('name', () => { expect(x).toBe(y) })).",
    .trace_note = "Strobe traces native code: patterns match node's and V8's C++ "
                  "functions (and native addons), not JavaScript functions; the results "
                  "are the same.",
};
