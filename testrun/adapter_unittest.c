/*
 * adapter_unittest.c - Python's unittest: `python3 -m unittest -v` (discovery
 * from the project root), one test with `-k NAME` (a substring of the dotted id
 * module.Class.test_x, or the whole id). unittest has no machine-readable output,
 * so its verbose text is the result: "test_x (mod.Class.test_x) ... ok|FAIL|
 * ERROR|skipped 'why'" per test on stderr, then a "FAIL:"/"ERROR:" block with the
 * traceback of each failure (the innermost frame in the project's own files is
 * where it failed, the exception's text is the message) and "Ran N tests". The
 * verdict line is printed in two halves around the test, so a partial line names
 * the test that is running. CPython prints every thread's Python stack on SIGABRT
 * when PYTHONFAULTHANDLER is set: that is the stuck test's runtime view.
 *
 * Detection: pytest scores any test*.py files at 80 and a pytest marker (pytest.ini,
 * conftest.py, [tool.pytest] config) at 85-90. Test files that import unittest and
 * nothing of pytest, in a project without a marker, are unittest's (82): they run
 * with nothing but the interpreter, where pytest may not be installed. With a
 * marker or `import pytest` this scores 10 (pytest runs TestCase classes too);
 * files that never import unittest hold no TestCase for it to find (0). A command
 * that runs unittest scores 90. unittest has no notion of unit/integration/e2e:
 * level is ignored.
 */
#include "testrun/adapter.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testrun/pydump.h"

#define SCAN_FILES_MAX 64
#define SCAN_BYTES_MAX (64 * 1024)
#define RULE_LEN 70 /* unittest's "=====" and "-----" separator lines */
#define FAILED_TEST_ID "unittest.loader._FailedTest."

static const char *const TEST_DIRS[] = {".", "tests", "test"};

/* The first SCAN_BYTES_MAX bytes of dir/name, NUL-terminated, or NULL. */
static char *read_head(const char *dir, const char *name)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(SCAN_BYTES_MAX + 1);
    size_t n = buf ? fread(buf, 1, SCAN_BYTES_MAX, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static bool file_has(const char *dir, const char *name, const char *needle)
{
    char *text = read_head(dir, name);
    bool found = text && strstr(text, needle);
    free(text);
    return found;
}

static bool is_test_file(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "test", 4) == 0 && n > 3 && strcmp(name + n - 3, ".py") == 0;
}

static bool pytest_marker(const char *root)
{
    return test_has_file(root, "pytest.ini") || test_has_file(root, "conftest.py") ||
           test_has_file(root, "tests/conftest.py") ||
           file_has(root, "pyproject.toml", "[tool.pytest") ||
           file_has(root, "setup.cfg", "[tool:pytest]") || file_has(root, "tox.ini", "[pytest]");
}

static int unittest_detect(const char *project_root, const char *command)
{
    if (command && strstr(command, "unittest"))
        return 90;
    bool tests = false, imports_unittest = false, imports_pytest = false;
    int scanned = 0;
    for (size_t i = 0; i < sizeof TEST_DIRS / sizeof *TEST_DIRS; i++) {
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s/%s", project_root, TEST_DIRS[i]) >= (int)sizeof dir)
            continue;
        DIR *d = opendir(dir);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL && scanned < SCAN_FILES_MAX) {
            if (!is_test_file(de->d_name))
                continue;
            scanned++;
            tests = true;
            char *text = read_head(dir, de->d_name);
            if (text) {
                imports_unittest |= strstr(text, "import unittest") ||
                                    strstr(text, "from unittest") != NULL;
                imports_pytest |= strstr(text, "import pytest") ||
                                  strstr(text, "from pytest") != NULL;
            }
            free(text);
        }
        closedir(d);
    }
    if (!tests)
        return 0;
    if (imports_pytest || pytest_marker(project_root))
        return 10;
    return imports_unittest ? 82 : 0;
}

/* The project's virtualenv interpreter when it has one, else python3 from PATH. */
static void add_python(const struct test_plan *plan, struct test_command *out)
{
    static const char *const VENVS[] = {".venv/bin/python3", "venv/bin/python3"};
    for (size_t i = 0; i < sizeof VENVS / sizeof *VENVS; i++) {
        if (!test_has_file(plan->project_root, VENVS[i]))
            continue;
        if (plan->work_dir)
            tcmd_arg(out, "%s/%s", plan->project_root, VENVS[i]);
        else
            tcmd_arg(out, "%s", VENVS[i]);
        return;
    }
    tcmd_arg(out, "python3");
}

static int unittest_command(const struct test_plan *plan, struct test_command *out,
                            struct strobe_error *e)
{
    if (plan->command) {
        if (tcmd_split(out, plan->command) != 0 || out->argc == 0)
            return err_set(e, ERR_VALIDATION, "command '%s' has an unclosed quote or no "
                           "words.", plan->command);
        bool verbose = false;
        for (int i = 1; i < out->argc; i++)
            verbose |= strcmp(out->argv[i], "-v") == 0 || strcmp(out->argv[i], "--verbose") == 0;
        if (!verbose && plan->work_dir)
            tcmd_arg(out, "-v");
    } else {
        add_python(plan, out);
        tcmd_arg(out, "-m");
        tcmd_arg(out, "unittest");
        if (plan->work_dir)
            tcmd_arg(out, "-v");
    }
    if (plan->work_dir) {
        tcmd_env(out, "PYTHONUNBUFFERED=1");
    }
    if (plan->test) {
        tcmd_arg(out, "-k");
        tcmd_arg(out, "%s", plan->test);
    }
    return 0;
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* "test_x (mod.Class.test_x)" at the start of line (Python 3.11; before it,
 * "test_x (mod.Class)"): the dotted id in id; returns the bytes it took, 0 when
 * the line does not start so. */
static size_t test_head(const char *line, size_t len, struct strbuf *id)
{
    size_t m = 0;
    while (m < len && ident_char(line[m]))
        m++;
    if (m == 0 || m + 2 >= len || line[m] != ' ' || line[m + 1] != '(')
        return 0;
    size_t s = m + 2, p = s;
    while (p < len && line[p] != ')' && line[p] != ' ' && line[p] != '(')
        p++;
    if (p == s || p >= len || line[p] != ')')
        return 0;
    id->len = 0;
    sb_append(id, line + s, p - s);
    /* the old form names the class only */
    size_t idl = p - s;
    if (!(idl > m && line[s + idl - m - 1] == '.' && memcmp(line + s + idl - m, line, m) == 0)) {
        sb_puts(id, ".");
        sb_append(id, line, m);
    }
    return p + 1;
}

/* The verdict after " ... ": ok, FAIL, ERROR, skipped 'why', expected failure,
 * unexpected success. false when it is not one (yet). */
static bool verdict(const char *v, size_t n, enum test_status *st, const char **reason,
                    size_t *reason_n)
{
    *reason = NULL;
    *reason_n = 0;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\r'))
        n--;
#define IS(word) (n == strlen(word) && memcmp(v, word, n) == 0)
    if (IS("ok") || IS("expected failure"))
        *st = TEST_PASSED;
    else if (IS("FAIL") || IS("ERROR") || IS("unexpected success"))
        *st = TEST_FAILED;
    else if (n >= 7 && memcmp(v, "skipped", 7) == 0) {
        *st = TEST_SKIPPED;
        if (n > 10 && v[8] == '\'' && v[n - 1] == '\'') {
            *reason = v + 9;
            *reason_n = n - 10;
        }
    } else
        return false;
#undef IS
    return true;
}

/* Where " ... " is in line, or NULL. */
static const char *dots(const char *line, size_t len)
{
    for (size_t i = 0; i + 5 <= len; i++)
        if (memcmp(line + i, " ... ", 5) == 0)
            return line + i;
    if (len >= 4 && memcmp(line + len - 4, " ...", 4) == 0)
        return line + len - 4;
    return NULL;
}

/* The verdict lines, live or at the end. A test with a docstring prints its
 * head alone, then "first docstring line ... ok": pending holds that head. */
struct ut_walk {
    struct strbuf pending;  /* id whose verdict is on a later line */
    struct strbuf started;  /* the last id reported started */
    bool running;           /* the running phase was reported */
};

/* Feeds a line; *id_out is set to the test the line is about (NULL: none),
 * *has_verdict when the line ends it. */
static void walk_line(struct ut_walk *w, const char *line, size_t len, struct strbuf *id,
                      const char **id_out, bool *has_verdict, enum test_status *st,
                      const char **reason, size_t *reason_n)
{
    *id_out = NULL;
    *has_verdict = false;
    size_t h = test_head(line, len, id);
    const char *rest;
    if (h) {
        rest = line + h;
        if (h == len) {
            w->pending.len = 0;
            sb_append(&w->pending, id->buf, id->len);
            *id_out = w->pending.buf;
            return;
        }
        if (!(len - h >= 4 && memcmp(rest, " ...", 4) == 0))
            return;
        w->pending.len = 0;
        *id_out = id->buf;
    } else {
        if (!w->pending.len)
            return;
        rest = dots(line, len);
        if (!rest)
            return;
        *id_out = w->pending.buf;
    }
    const char *v = rest + 4;
    size_t vn = (size_t)(line + len - v);
    while (vn && *v == ' ') {
        v++;
        vn--;
    }
    *has_verdict = verdict(v, vn, st, reason, reason_n);
}

static void *unittest_live_open(void)
{
    return calloc(1, sizeof(struct ut_walk));
}

static void unittest_live_line(void *state, struct test_live *lv, int stream, const char *line,
                               size_t len, bool partial)
{
    struct ut_walk *w = state;
    if (!w || stream != 2)
        return;
    struct strbuf id = {0};
    const char *name, *reason;
    size_t reason_n;
    bool done;
    enum test_status st;
    walk_line(w, line, len, &id, &name, &done, &st, &reason, &reason_n);
    if (name && strncmp(name, FAILED_TEST_ID, strlen(FAILED_TEST_ID)) != 0) {
        char *copy = strdup(name);
        if (copy && (!w->started.buf || strcmp(w->started.buf, copy) != 0)) {
            if (!w->running)
                test_live_phase(lv, TEST_PHASE_RUNNING);
            w->running = true;
            test_live_started(lv, copy);
            w->started.len = 0;
            sb_puts(&w->started, copy);
        }
        if (copy && done && !partial) {
            test_live_finished(lv, copy, st);
            if (!w->pending.len || strcmp(w->pending.buf, copy) == 0)
                w->pending.len = 0;
        }
        free(copy);
    }
    sb_free(&id);
}

static void unittest_live_close(void *state)
{
    struct ut_walk *w = state;
    if (w) {
        sb_free(&w->pending);
        sb_free(&w->started);
    }
    free(w);
}

static bool is_rule(const char *p, size_t n, char c)
{
    if (n != RULE_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] != c)
            return false;
    return true;
}

/* A traceback: the innermost frame in the project (else the innermost at all)
 * and the exception's text after the last frame. */
struct traceback {
    char *file;
    int line;
    char *message;
};

static bool in_project(const char *path, size_t n, const char *root)
{
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    if (n > 0 && path[0] != '/')
        return path[0] != '<';
    return n > rl && strncmp(path, root, rl) == 0 && path[rl] == '/';
}

static void read_traceback(const char *body, size_t len, const char *root, struct traceback *tb)
{
    const char *end = body + len, *after_last = NULL;
    const char *best = NULL, *last = NULL;
    size_t best_n = 0, last_n = 0;
    int best_line = 0, last_line = 0;
    for (const char *p = body; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 8 && memcmp(p, "  File \"", 8) == 0) {
            const char *q = memchr(p + 8, '"', n - 8);
            int line = 0;
            if (q && sscanf(q, "\", line %d", &line) == 1) {
                last = p + 8;
                last_n = (size_t)(q - last);
                last_line = line;
                if (in_project(last, last_n, root)) {
                    best = last;
                    best_n = last_n;
                    best_line = line;
                }
            }
            after_last = nl ? nl + 1 : end;
        }
        p = nl ? nl + 1 : end;
    }
    if (!best) {
        best = last;
        best_n = last_n;
        best_line = last_line;
    }
    if (best) {
        size_t rl = strlen(root);
        while (rl > 1 && root[rl - 1] == '/')
            rl--;
        if (best_n > rl && strncmp(best, root, rl) == 0 && best[rl] == '/') {
            best += rl + 1;
            best_n -= rl + 1;
        }
        test_set_str(&tb->file, best, (long)best_n);
        tb->line = best_line;
    }
    /* the exception's text: from the first unindented line after the last frame */
    const char *m = after_last ? after_last : body;
    while (m < end && (*m == ' ' || *m == '\t')) {
        const char *nl = memchr(m, '\n', (size_t)(end - m));
        m = nl ? nl + 1 : end;
    }
    size_t mn = (size_t)(end - m);
    while (mn && isspace((unsigned char)m[mn - 1]))
        mn--;
    test_set_str(&tb->message, m, (long)mn);
}

struct load_error {
    char *module;
    struct traceback tb;
};

/* A "FAIL: name (id)" / "ERROR: name (id)" block. */
static void take_block(const char *head, size_t head_n, const char *body, size_t body_n,
                       const char *root, struct test_report *r, struct load_error *errs,
                       int *n_errs, int max_errs)
{
    size_t skip = head_n > 6 && memcmp(head, "FAIL: ", 6) == 0    ? 6
                  : head_n > 7 && memcmp(head, "ERROR: ", 7) == 0 ? 7
                                                                   : 0;
    struct strbuf id = {0};
    if (!skip || !test_head(head + skip, head_n - skip, &id)) {
        sb_free(&id);
        return;
    }
    struct traceback tb = {0};
    read_traceback(body, body_n, root, &tb);
    if (strncmp(id.buf, FAILED_TEST_ID, strlen(FAILED_TEST_ID)) == 0) {
        if (*n_errs < max_errs) {
            errs[*n_errs].module = strdup(id.buf + strlen(FAILED_TEST_ID));
            errs[(*n_errs)++].tb = tb;
        } else {
            free(tb.file);
            free(tb.message);
        }
        sb_free(&id);
        return;
    }
    struct test_case *c = test_report_find(r, id.buf);
    if (!c)
        c = test_report_add(r, id.buf, TEST_FAILED);
    if (c) {
        c->status = TEST_FAILED;
        free(c->file);
        free(c->message);
        c->file = tb.file;
        c->line = tb.line;
        c->message = tb.message;
    } else {
        free(tb.file);
        free(tb.message);
    }
    sb_free(&id);
}

/* One stream's verdict lines and failure blocks. */
static bool parse_stream(const char *text, size_t len, const char *root, struct test_report *r,
                         struct load_error *errs, int *n_errs, int max_errs)
{
    struct ut_walk w = {0};
    struct strbuf id = {0};
    bool ran = false;
    const char *end = text + len;
    const char *head = NULL, *body = NULL;
    size_t head_n = 0;
    int rules_after_head = 0;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *next = nl ? nl + 1 : end;
        bool eq = is_rule(p, n, '='), dash = is_rule(p, n, '-');
        if (head && (eq || (dash && rules_after_head > 0))) {
            take_block(head, head_n, body, (size_t)(p - body), root, r, errs, n_errs, max_errs);
            head = NULL;
        }
        if (head && dash && rules_after_head == 0) {
            rules_after_head = 1;
            body = next;
        } else if (eq && next < end) {
            const char *hn = memchr(next, '\n', (size_t)(end - next));
            head = next;
            head_n = hn ? (size_t)(hn - next) : (size_t)(end - next);
            rules_after_head = 0;
            body = end;
            next = hn ? hn + 1 : end;
        } else if (!head) {
            const char *name, *reason;
            size_t reason_n;
            bool done;
            enum test_status st;
            walk_line(&w, p, n, &id, &name, &done, &st, &reason, &reason_n);
            if (name && done && strncmp(name, FAILED_TEST_ID, strlen(FAILED_TEST_ID)) != 0) {
                struct test_case *c = test_report_add(r, name, st);
                if (c && reason)
                    test_set_str(&c->message, reason, (long)reason_n);
                w.pending.len = 0;
            }
            int ran_n;
            if (sscanf(p, "Ran %d test", &ran_n) == 1)
                ran = true;
        }
        p = next;
    }
    if (head && body < end)
        take_block(head, head_n, body, (size_t)(end - body), root, r, errs, n_errs, max_errs);
    sb_free(&w.pending);
    sb_free(&w.started);
    sb_free(&id);
    return ran;
}

static int unittest_parse(const struct test_output *o, struct test_report *out)
{
    struct load_error errs[32];
    int n_errs = 0, max = (int)(sizeof errs / sizeof *errs);
    const char *root = o->plan->project_root;
    bool ran = parse_stream(o->err, o->err_len, root, out, errs, &n_errs, max);
    ran |= parse_stream(o->out, o->out_len, root, out, errs, &n_errs, max);
    /* A module that failed to import ran none of its tests: when nothing else ran
     * either, the run is a build failure; otherwise it counts as one failure. */
    out->build_failed = n_errs > 0 && out->n_cases == 0;
    for (int i = 0; i < n_errs; i++) {
        struct load_error *le = &errs[i];
        if (out->build_failed) {
            test_report_diag(out, le->tb.file, le->tb.line, 0, le->tb.message);
        } else {
            struct test_case *c = test_report_add(out, le->module, TEST_FAILED);
            if (c) {
                test_set_str(&c->file, le->tb.file, -1);
                c->line = le->tb.line;
                test_set_str(&c->message, le->tb.message, -1);
            }
        }
        free(le->module);
        free(le->tb.file);
        free(le->tb.message);
    }
    out->structured = ran;
    if (!ran && (out->n_cases || out->n_diags || o->stuck))
        snprintf(out->note, sizeof out->note, "%s before its summary (\"Ran N tests\"): "
                 "results are the verdict lines it printed",
                 o->stuck ? "unittest was killed as stuck" : "unittest ended");
    return 0;
}

/* Strobe traces native code; CPython runs a test's functions in its interpreter
 * loop, where there are no per-function symbols to hook: no pattern would match. */
static int unittest_suggest(const struct test_case *c, char **out, int max)
{
    (void)c;
    (void)out;
    (void)max;
    return 0;
}

const struct test_adapter test_adapter_unittest = {
    .name = "unittest",
    .display = "unittest",
    .language = "python",
    .build_system = "python",
    .program = "python3",
    .provides = "Debian package python3",
    .detect = unittest_detect,
    .command = unittest_command,
    .live_open = unittest_live_open,
    .live_line = unittest_live_line,
    .live_close = unittest_live_close,
    .parse = unittest_parse,
    .suggest = unittest_suggest,
    .no_tests_hint = "unittest discovers test*.py files in the project root (or packages "
                     "below it) holding unittest.TestCase classes with test_* methods.",
    .dump_signal = SIGABRT,
    .dump_env = "PYTHONFAULTHANDLER=1",
    .dump_stacks = pydump_stacks,
    .trace_note = "Strobe traces native code: patterns match CPython's own C functions "
                  "(and C extensions), not Python functions; the results are the same.",
};
