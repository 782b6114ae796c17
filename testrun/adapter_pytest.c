/*
 * adapter_pytest.c - pytest, recognized by its configuration (pytest.ini,
 * conftest.py, [tool.pytest.ini_options], [tool:pytest], tox.ini's [pytest]) or by
 * test_*.py files. Runs `python3 -m pytest -v --junitxml=FILE -o
 * junit_family=xunit1` (xunit1: each case carries its file and line, so its node
 * id, "tests/test_x.py::TestY::test_z", can be rebuilt; that id is what `test`
 * reruns). A failure's file:line is the last "path.py:LINE: Error" line of its
 * traceback (where the exception was raised) and its message the "E " lines. A
 * collection error (a test file that does not import) stops pytest before any
 * test: it is reported as a build failure. Live progress reads the -v lines:
 * "path::test " is printed before the test runs (seen as a partial line: that is
 * how a stuck test gets its name) and "PASSED [ 20%]" after.
 *
 * A stuck run: PYTHONFAULTHANDLER=1 makes CPython print every thread's Python stack
 * when the runner sends SIGABRT. Levels: pytest has none of its own (markers are
 * the project's choice), so `level` is ignored. Suggestions: Strobe traces native
 * code, and a failure in Python code names no native function; only a failure
 * located in a C or C++ file (an extension module) gets patterns.
 */
#include "testrun/adapter.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testrun/junit.h"
#include "testrun/pydump.h"
#include "testrun/tsuggest.h"

#define CONFIG_MAX (1u << 20)

/* ---- detection ------------------------------------------------------------------ */

/* Whether project_root/name holds section (read up to CONFIG_MAX bytes). */
static bool file_mentions(const char *project_root, const char *name, const char *section)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", project_root, name) >= (int)sizeof path)
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char *buf = malloc(CONFIG_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_MAX, f) : 0;
    fclose(f);
    bool yes = false;
    if (buf) {
        buf[n] = '\0';
        yes = strstr(buf, section) != NULL;
    }
    free(buf);
    return yes;
}

static bool is_test_file(const char *name)
{
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 3, ".py") != 0)
        return false;
    return strncmp(name, "test_", 5) == 0 || (n > 8 && strcmp(name + n - 8, "_test.py") == 0);
}

/* Whether dir (project_root/sub) has a test_*.py or *_test.py file. */
static bool has_test_files(const char *project_root, const char *sub)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", project_root, sub) >= (int)sizeof path)
        return false;
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool yes = false;
    struct dirent *de;
    while (!yes && (de = readdir(d)))
        yes = is_test_file(de->d_name);
    closedir(d);
    return yes;
}

static int pytest_detect(const char *project_root, const char *command)
{
    /* A command is what the agent wants run: pytest's own only when it says so (the
     * adapter then runs its command line, not that one). */
    if (command && !strstr(command, "pytest"))
        return 0;
    if (test_has_file(project_root, "pytest.ini"))
        return 90;
    if (file_mentions(project_root, "pyproject.toml", "[tool.pytest") ||
        file_mentions(project_root, "setup.cfg", "[tool:pytest]") ||
        file_mentions(project_root, "tox.ini", "[pytest]") ||
        test_has_file(project_root, "conftest.py"))
        return 85;
    if (has_test_files(project_root, ".") || has_test_files(project_root, "tests") ||
        has_test_files(project_root, "test"))
        return 80;
    return 0;
}

/* ---- command ---------------------------------------------------------------------- */

/* The interpreter: the project's virtualenv when it has one, else Debian's
 * /usr/bin/python3 (python3-pytest installs pytest for it; a python3 earlier in
 * PATH may lack pytest), else python3 from PATH. */
static void python_for(const char *project_root, struct test_command *out)
{
    static const char *const venvs[] = {".venv/bin/python3", "venv/bin/python3", NULL};
    for (const char *const *v = venvs; *v; v++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", project_root, *v) < (int)sizeof path &&
            access(path, X_OK) == 0) {
            tcmd_arg(out, "%s", path);
            return;
        }
    }
    tcmd_arg(out, "%s", access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                            : "python3");
}

static int pytest_command(const struct test_plan *plan, struct test_command *out,
                          struct strobe_error *e)
{
    (void)e;
    python_for(plan->project_root, out);
    tcmd_arg(out, "-m");
    tcmd_arg(out, "pytest");
    tcmd_arg(out, "-v");
    if (plan->work_dir) {
        tcmd_arg(out, "-p");
        tcmd_arg(out, "no:cacheprovider");
        tcmd_arg(out, "-o");
        tcmd_arg(out, "junit_family=xunit1");
        tcmd_arg(out, "--junitxml=%s/pytest.xml", plan->work_dir);
        if (asprintf(&out->report_path, "%s/pytest.xml", plan->work_dir) < 0)
            out->report_path = NULL;
    }
    /* A node id ("tests/test_x.py::test_y") or a file selects exactly; a bare name
     * (or one pytest would take for an option) goes through -k, its substring match. */
    if (plan->test && plan->test[0] != '-' &&
        (strstr(plan->test, "::") || strstr(plan->test, ".py"))) {
        tcmd_arg(out, "%s", plan->test);
    } else if (plan->test) {
        tcmd_arg(out, "-k");
        tcmd_arg(out, "%s", plan->test);
    }
    return 0;
}

/* ---- live progress ------------------------------------------------------------------ */

static const char *const VERDICTS[] = {"PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL",
                                       "XPASS", NULL};

static enum test_status verdict_status(const char *v)
{
    if (strcmp(v, "PASSED") == 0 || strcmp(v, "XPASS") == 0)
        return TEST_PASSED;
    if (strcmp(v, "SKIPPED") == 0 || strcmp(v, "XFAIL") == 0)
        return TEST_SKIPPED;
    return TEST_FAILED;
}

/* Whether line starts with a node id ("path::name", no space in the path): the
 * summary lines ("FAILED path::name - ...") do not. */
static bool starts_with_node_id(const char *line, size_t len)
{
    const char *sep = memmem(line, len, "::", 2);
    return sep && sep > line && !memchr(line, ' ', (size_t)(sep - line));
}

/* "tests/t.py::test_a PASSED   [ 20%]": the node id's length and the verdict;
 * false for other lines. */
static bool verdict_line(const char *line, size_t len, size_t *id_len, const char **verdict)
{
    if (!starts_with_node_id(line, len))
        return false;
    const char *sep = memmem(line, len, "::", 2);
    const char *best = NULL;
    for (const char *const *v = VERDICTS; *v; v++) {
        size_t k = strlen(*v);
        for (const char *p = sep; (p = memmem(p, len - (size_t)(p - line), *v, k));
             p += k) {
            bool word = p[-1] == ' ' && (p + k == line + len || p[k] == ' ');
            if (word) {
                if (!best || p < best) {
                    best = p;
                    *verdict = *v;
                }
                break;
            }
        }
    }
    if (!best)
        return false;
    *id_len = (size_t)(best - 1 - line);
    return true;
}

static void pytest_live_line(void *state, struct test_live *lv, int stream,
                             const char *line, size_t len, bool partial)
{
    (void)state;
    if (stream != 1)
        return;
    char name[1024];
    size_t id_len;
    const char *verdict;
    if (!starts_with_node_id(line, len)) {
        if (memmem(line, len, "collected ", 10)) /* "collecting ... collected 6 items" */
            test_live_phase(lv, TEST_PHASE_RUNNING);
    } else if (!partial && verdict_line(line, len, &id_len, &verdict)) {
        snprintf(name, sizeof name, "%.*s", (int)id_len, line);
        test_live_finished(lv, name, verdict_status(verdict));
    } else if (partial && line[len - 1] == ' ') {
        snprintf(name, sizeof name, "%.*s", (int)len - 1, line);
        test_live_started(lv, name);
    }
}

/* ---- the outcome -------------------------------------------------------------------- */

/* "tests.test_x.TestY" with file "tests/test_x.py": "tests/test_x.py::TestY::name". */
static char *node_id(const struct junit_case *jc)
{
    struct strbuf sb = {0};
    const char *cls = jc->classname ? jc->classname : "";
    if (jc->file) {
        sb_puts(&sb, jc->file);
        size_t flen = strlen(jc->file);
        size_t mlen = flen > 3 && strcmp(jc->file + flen - 3, ".py") == 0 ? flen - 3 : flen;
        /* the module's dotted name is the file's path, "/" read as "." */
        bool same = strlen(cls) >= mlen;
        for (size_t i = 0; i < mlen && same; i++)
            same = cls[i] == (jc->file[i] == '/' ? '.' : jc->file[i]);
        if (same && cls[mlen] == '.') {
            for (const char *p = cls + mlen; *p; p++) {
                if (*p == '.')
                    sb_puts(&sb, "::");
                else
                    sb_append(&sb, p, 1);
            }
        }
    } else if (*cls) {
        sb_puts(&sb, cls);
    }
    if (sb.len)
        sb_puts(&sb, "::");
    sb_puts(&sb, jc->name ? jc->name : "");
    return sb_take(&sb);
}

/* The "E   " lines of a traceback, the "E" and the indentation they share removed. */
static char *e_lines(const char *text)
{
    size_t indent = SIZE_MAX;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 1 && p[0] == 'E' && p[1] == ' ') {
            size_t k = 1;
            while (k < n && p[k] == ' ')
                k++;
            if (k < n && k - 1 < indent)
                indent = k - 1;
        }
        p += n + (p[n] == '\n');
    }
    if (indent == SIZE_MAX)
        return NULL;
    struct strbuf sb = {0};
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n > 1 && p[0] == 'E' && p[1] == ' ') {
            if (sb.len)
                sb_puts(&sb, "\n");
            size_t skip = 1 + indent < n ? 1 + indent : n;
            sb_append(&sb, p + skip, n - skip);
        }
        p += n + (p[n] == '\n');
    }
    return sb_take(&sb);
}

/* The last "path.py:LINE: ..." line at the start of a traceback line. */
static bool raise_location(const char *text, char **file, int *line)
{
    bool found = false;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        const char *colon = memmem(p, n, ".py:", 4);
        if (colon && !memchr(p, ' ', (size_t)(colon - p))) {
            char *end;
            long v = strtol(colon + 4, &end, 10);
            if (v > 0 && v < INT_MAX && *end == ':') {
                test_set_str(file, p, (long)(colon + 3 - p));
                *line = (int)v;
                found = true;
            }
        }
        p += n + (p[n] == '\n');
    }
    return found;
}

/* A collection error: `File "path", line N` of a SyntaxError, else the traceback's
 * last location, else the module's file. */
static int collection_error(const struct junit_case *jc, struct test_report *r)
{
    const char *text = jc->text ? jc->text : "";
    char *file = NULL;
    int line = 0;
    const char *f = strstr(text, "File \"");
    if (f) {
        f += 6;
        const char *q = strchr(f, '"');
        if (q && strncmp(q, "\", line ", 8) == 0) {
            test_set_str(&file, f, (long)(q - f));
            line = atoi(q + 8);
        }
    }
    if (!file && !raise_location(text, &file, &line))
        test_set_str(&file, jc->file, -1);
    char *msg = e_lines(text);
    struct test_diagnostic *d =
        test_report_diag(r, file, line, 0, msg ? msg : jc->message ? jc->message : text);
    free(file);
    free(msg);
    return d ? 0 : -1;
}

static int on_case(void *ud, const struct junit_case *jc, struct test_report *r)
{
    (void)ud;
    if (jc->kind && strcmp(jc->kind, "error") == 0 && jc->message &&
        strcmp(jc->message, "collection failure") == 0)
        return collection_error(jc, r);
    char *id = node_id(jc);
    struct test_case *c = id ? junit_add(jc, id, r) : NULL;
    free(id);
    if (!c)
        return -1;
    test_set_str(&c->file, jc->file, -1);
    c->line = jc->line >= 0 ? jc->line + 1 : 0; /* xunit1's line counts from 0 */
    if (c->status == TEST_SKIPPED && jc->message) {
        test_set_str(&c->message, jc->message, -1);
    } else if (c->status == TEST_FAILED && jc->text) {
        raise_location(jc->text, &c->file, &c->line);
        char *msg = e_lines(jc->text);
        if (msg) {
            free(c->message);
            c->message = msg;
        }
    }
    return 0;
}

/* The "____ test_name ____" block of the FAILURES section for id, NULL if none;
 * *len gets its length. The header names "Class.test" for "file::Class::test". */
static const char *failure_block(const char *out, const char *id, size_t *len)
{
    const char *sec = strstr(out, " FAILURES ");
    const char *tail = strrchr(id, ':');
    if (!sec || !tail || tail == id)
        return NULL;
    const char *cls = NULL;
    for (const char *p = strstr(id, "::"); p && p < tail - 1; p = strstr(p + 2, "::"))
        cls = p + 2;
    struct strbuf want = {0};
    if (cls)
        sb_printf(&want, " %.*s.%s ", (int)(tail - 1 - cls), cls, tail + 1);
    else
        sb_printf(&want, " %s ", tail ? tail + 1 : id);
    const char *found = NULL;
    for (const char *p = strchr(sec, '\n'); p && !found && want.buf; p = strchr(p + 1, '\n')) {
        const char *l = p + 1;
        if (*l == '=')
            break;
        size_t n = strcspn(l, "\n");
        if (n > 4 && l[0] == '_' && memmem(l, n, want.buf, want.len)) {
            const char *body = l + n + (l[n] == '\n');
            const char *next = body;
            /* up to the next test's "____ name ____" or the next section ("_ _ _"
             * lines separate the frames of one traceback) */
            while (*next && strncmp(next, "__", 2) != 0 && *next != '=') {
                next += strcspn(next, "\n");
                next += *next == '\n';
            }
            *len = (size_t)(next - body);
            found = body;
        }
    }
    sb_free(&want);
    return found;
}

/* No JUnit file (a run cut short, an old pytest): the cases from the -v lines,
 * failures completed from the FAILURES section. */
static int parse_stdout(const struct test_output *o, struct test_report *out)
{
    const char *p = o->out, *end = o->out + o->out_len;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t id_len;
        const char *verdict;
        if (verdict_line(p, n, &id_len, &verdict)) {
            char id[1024];
            snprintf(id, sizeof id, "%.*s", (int)id_len, p);
            struct test_case *c = test_report_find(out, id);
            if (!c || c->status != TEST_FAILED) {
                /* a teardown ERROR after PASSED fails the same test */
                if (c)
                    c->status = verdict_status(verdict);
                else if (!(c = test_report_add(out, id, verdict_status(verdict))))
                    return -1;
            }
            if (c->status == TEST_FAILED && !c->message) {
                size_t blen = 0;
                const char *b = failure_block(o->out, id, &blen);
                char *text = b ? strndup(b, blen) : NULL;
                if (text) {
                    raise_location(text, &c->file, &c->line);
                    c->message = e_lines(text);
                    free(text);
                }
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

static int pytest_parse(const struct test_output *o, struct test_report *out)
{
    int rc = junit_parse_file(o->report_path, on_case, NULL, out);
    if (rc == 2) {
        out->structured = false;
        rc = o->out ? parse_stdout(o, out) : 0;
        snprintf(out->note, sizeof out->note, "pytest %s: results read from its -v lines",
                 o->stuck ? "was killed (stuck) before writing its JUnit report"
                          : "wrote no JUnit report (the run was cut short?)");
    }
    if (rc < 0)
        return -1;
    if (out->n_diags > 0 && out->n_cases == 0)
        out->build_failed = true;
    else if (out->n_cases == 0 && o->plan->test && !out->note[0])
        snprintf(out->note, sizeof out->note, "no test matched \"%s\" (a node id such as "
                 "tests/test_x.py::test_y, or a -k expression)", o->plan->test);
    return 0;
}

static int pytest_suggest(const struct test_case *c, char **out, int max)
{
    static const char *const native[] = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", NULL};
    if (!c->file || max <= 0)
        return 0;
    size_t n = strlen(c->file);
    for (const char *const *s = native; *s; s++) {
        size_t k = strlen(*s);
        if (n <= k || strcmp(c->file + n - k, *s) != 0)
            continue;
        const char *base = strrchr(c->file, '/');
        struct strbuf sb = {0};
        sb_printf(&sb, "@file:%s", base ? base + 1 : c->file);
        if (sb.oom)
            return 0;
        out[0] = sb_take(&sb);
        return c->message ? tsuggest_calls(c->message, out, 1, max) : 1;
    }
    return 0;
}

const struct test_adapter test_adapter_pytest = {
    .name = "pytest",
    .display = "pytest",
    .language = "python",
    .build_system = "pip",
    .program = "python3",
    .provides = "Debian package python3-pytest",
    .detect = pytest_detect,
    .command = pytest_command,
    .live_line = pytest_live_line,
    .parse = pytest_parse,
    .suggest = pytest_suggest,
    .no_tests_hint = "pytest runs test_*.py files (functions named test_*, classes named "
                     "Test*); put them in tests/ with a pytest.ini at the project root.",
    .dump_signal = SIGABRT,
    .dump_env = "PYTHONFAULTHANDLER=1",
    .dump_stacks = pydump_stacks,
    .trace_note = "Strobe traces native code: patterns match CPython's own C functions "
                  "(and C extensions), not Python functions; the results are the same.",
};
