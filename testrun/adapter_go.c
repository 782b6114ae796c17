/*
 * adapter_go.c - `go test -json`: the test2json events on stdout (run, output,
 * pass, fail, skip per test, per package), where a test failed from its t.Error
 * lines ("    stack_test.go:34: message"), the compiler's errors when a package does
 * not build, and the goroutine dump the Go runtime prints on SIGQUIT for a stuck
 * test.
 */
#include "testrun/adapter.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_go(const char *command)
{
    while (*command == ' ' || *command == '\t')
        command++;
    return strncmp(command, "go", 2) == 0 &&
           (command[2] == '\0' || command[2] == ' ' || command[2] == '\t');
}

static int go_detect(const char *project_root, const char *command)
{
    if (!test_has_file(project_root, "go.mod"))
        return 0;
    return !command || is_go(command) ? 90 : 0;
}

/* ---- the command ------------------------------------------------------------- */

/* Appends s to sb with the regexp metacharacters escaped (Go's regexp.QuoteMeta). */
static void quote_meta(struct strbuf *sb, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr("\\.+*?()|[]{}^$", s[i]))
            sb_puts(sb, "\\");
        sb_append(sb, s + i, 1);
    }
}

/* Whether name is a whole test function's name (TestPop, BenchmarkX, Example_y),
 * not a piece of one. */
static bool whole_test_name(const char *name, size_t n)
{
    static const char *const prefixes[] = {"Test", "Benchmark", "Example", "Fuzz", NULL};
    for (const char *const *p = prefixes; *p; p++) {
        size_t k = strlen(*p);
        if (n >= k && memcmp(name, *p, k) == 0 &&
            (n == k || !islower((unsigned char)name[k])))
            return true;
    }
    return false;
}

/* -run's pattern: `go test` matches each '/'-separated level of a name with its own
 * expression. A whole test name (and every subtest level after it) is matched
 * exactly, anything else as a substring. */
static void run_pattern(struct strbuf *sb, const char *test)
{
    const char *slash = strchr(test, '/');
    size_t first = slash ? (size_t)(slash - test) : strlen(test);
    bool exact = whole_test_name(test, first);
    for (const char *p = test;;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (exact)
            sb_puts(sb, "^");
        quote_meta(sb, p, n);
        if (exact)
            sb_puts(sb, "$");
        if (!end)
            break;
        sb_puts(sb, "/");
        p = end + 1;
        exact = true;
    }
}

/* `go test -json -count=1 [-run PATTERN] ./...` (-count=1: a cached result runs
 * nothing, so there would be nothing to trace). Go has no notion of test levels: the
 * plan's level is ignored. */
static int go_command(const struct test_plan *plan, struct test_command *out,
                      struct strobe_error *e)
{
    bool packages = false;
    if (plan->command) {
        if (!is_go(plan->command) || tcmd_split(out, plan->command) != 0 || out->argc < 2)
            return err_set(e, ERR_VALIDATION, "command '%s' is not a go command line "
                           "(framework go runs `go test ...`).", plan->command);
        for (int i = 2; i < out->argc; i++)
            packages |= out->argv[i][0] != '-';
    } else {
        tcmd_arg(out, "go");
        tcmd_arg(out, "test");
    }
    if (plan->work_dir) {
        tcmd_arg(out, "-json");
        tcmd_arg(out, "-count=1");
    }
    if (plan->test) {
        struct strbuf sb = {0};
        run_pattern(&sb, plan->test);
        tcmd_arg(out, "-run");
        tcmd_arg(out, "%s", sb.buf);
        sb_free(&sb);
    }
    if (!packages)
        tcmd_arg(out, "./...");
    /* Without HOME the go command has nowhere for its build cache and module path
     * and refuses to run: they go beside the runs' directories, in Strobe's private
     * state directory (never a predictable /tmp path). */
    if (plan->work_dir && !getenv("HOME") && !getenv("GOCACHE") && !getenv("XDG_CACHE_HOME")) {
        const char *slash = strrchr(plan->work_dir, '/');
        int len = slash ? (int)(slash - plan->work_dir) : (int)strlen(plan->work_dir);
        tcmd_env(out, "GOCACHE=%.*s/go-cache", len, plan->work_dir);
        if (!getenv("GOPATH"))
            tcmd_env(out, "GOPATH=%.*s/go-path", len, plan->work_dir);
    }
    if (out->too_long)
        return err_set(e, ERR_VALIDATION, "the go command has too many arguments.");
    return 0;
}

/* ---- live progress ----------------------------------------------------------- */

struct go_live {
    bool compiling, running;
};

static void *go_live_open(void)
{
    return calloc(1, sizeof(struct go_live));
}

static void go_live_close(void *state)
{
    free(state);
}

/* Until the first test runs the go command builds (a compiler error or a package
 * without tests is the first thing it prints). */
static void go_live_line(void *state, struct test_live *lv, int stream, const char *line,
                         size_t len, bool partial)
{
    struct go_live *st = state;
    (void)partial;
    if (!st)
        return;
    cJSON *ev = stream == 1 && len && line[0] == '{' ? cJSON_ParseWithLength(line, len) : NULL;
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Action"));
    const char *test = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Test"));
    if (action && test && strcmp(action, "run") == 0) {
        if (!st->running)
            test_live_phase(lv, TEST_PHASE_RUNNING);
        st->running = true;
        test_live_started(lv, test);
    } else if (action && test && strcmp(action, "pass") == 0) {
        test_live_finished(lv, test, TEST_PASSED);
    } else if (action && test && strcmp(action, "fail") == 0) {
        test_live_finished(lv, test, TEST_FAILED);
    } else if (action && test && strcmp(action, "skip") == 0) {
        test_live_finished(lv, test, TEST_SKIPPED);
    } else if (!st->running && !st->compiling) {
        st->compiling = true;
        test_live_phase(lv, TEST_PHASE_COMPILING);
    }
    cJSON_Delete(ev);
}

/* ---- the outcome ------------------------------------------------------------- */

/* A test seen running, with what it printed. */
struct go_test {
    char *package, *name;
    struct strbuf output;
    bool done;
};

struct go_run {
    struct go_test *tests;
    size_t n, cap;
    struct strbuf pkg_output;   /* output outside any test, every package */
    char module[512];           /* go.mod's module path, "" unknown */
    const char *root;
};

static struct go_test *run_find(struct go_run *r, const char *pkg, const char *name)
{
    for (size_t i = r->n; i-- > 0;)
        if (strcmp(r->tests[i].name, name) == 0 && strcmp(r->tests[i].package, pkg) == 0)
            return &r->tests[i];
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        struct go_test *t = realloc(r->tests, cap * sizeof *t);
        if (!t)
            return NULL;
        r->tests = t;
        r->cap = cap;
    }
    struct go_test *t = &r->tests[r->n];
    *t = (struct go_test){.package = strdup(pkg), .name = strdup(name)};
    if (!t->package || !t->name) {
        free(t->package);
        free(t->name);
        return NULL;
    }
    r->n++;
    return t;
}

static void run_free(struct go_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->tests[i].package);
        free(r->tests[i].name);
        sb_free(&r->tests[i].output);
    }
    free(r->tests);
    sb_free(&r->pkg_output);
}

/* The module path from project_root/go.mod ("module example.com/x"). */
static void read_module(const char *root, char *out, size_t size)
{
    char path[PATH_MAX], line[1024];
    out[0] = '\0';
    if (snprintf(path, sizeof path, "%s/go.mod", root) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char mod[512];
        if (sscanf(line, " module %511s", mod) == 1) {
            size_t n = strlen(mod);
            if (n >= 2 && mod[0] == '"' && mod[n - 1] == '"') {
                mod[n - 1] = '\0';
                memmove(mod, mod + 1, n - 1);
            }
            snprintf(out, size, "%s", mod);
            break;
        }
    }
    fclose(f);
}

/* A file as go test names it (stack_test.go, in the package's directory) relative to
 * the project root: the package path below the module is the directory. */
static char *package_file(const struct go_run *r, const char *pkg, const char *file, size_t n)
{
    size_t m = strlen(r->module);
    char *s = NULL;
    if (m && strncmp(pkg, r->module, m) == 0 && pkg[m] == '/') {
        if (asprintf(&s, "%s/%.*s", pkg + m + 1, (int)n, file) < 0)
            return NULL;
        return s;
    }
    return strndup(file, n);
}

/* "    stack_test.go:34: message": the file's length and the line. */
static bool log_location(const char *line, size_t len, size_t *file_start, size_t *file_len,
                         int *lineno)
{
    size_t i = 0;
    while (i < len && line[i] == ' ')
        i++;
    if (i < 4)
        return false;
    size_t start = i;
    while (i < len && line[i] != ':' && line[i] != ' ')
        i++;
    if (i - start < 4 || memcmp(line + i - 3, ".go", 3) != 0 || i >= len)
        return false;
    char *end;
    long l = strtol(line + i + 1, &end, 10);
    if (end == line + i + 1 || end >= line + len || *end != ':' || l <= 0)
        return false;
    *file_start = start;
    *file_len = i - start;
    *lineno = (int)l;
    return true;
}

/* A go frame in a dump or panic, "\t/abs/dir/stack.go:27 +0x1d", inside the project:
 * the place a test died. */
static bool frame_in_project(const char *text, const char *root, char **file, int *line)
{
    size_t rn = strlen(root);
    const char *p = text, *end = text + strlen(text), *l;
    size_t n;
    while (test_next_line(&p, end, &l, &n)) {
        if (n < rn + 2 || l[0] != '\t' || strncmp(l + 1, root, rn) != 0 || l[1 + rn] != '/')
            continue;
        const char *f = l + 2 + rn, *colon = memchr(f, ':', n - 2 - rn);
        if (!colon || colon - f < 4 || memcmp(colon - 3, ".go", 3) != 0)
            continue;
        *file = strndup(f, (size_t)(colon - f));
        *line = atoi(colon + 1);
        return *file != NULL;
    }
    return false;
}

/* A test's message and place from its output: the t.Error/t.Skip lines, without
 * the framework's own (=== RUN, --- FAIL: ...), their indentation, and the place
 * in front of the first one. */
static void read_test_output(struct go_run *r, const struct go_test *t, struct test_case *c)
{
    const char *p = t->output.buf, *end = p + t->output.len, *line;
    size_t n;
    struct strbuf msg = {0};
    while (p && test_next_line(&p, end, &line, &n)) {
        const char *s = line;
        size_t k = n;
        while (k && *s == ' ') {
            s++;
            k--;
        }
        if (test_starts_with(s, k, "=== ") || test_starts_with(s, k, "--- "))
            continue;
        size_t fs, fl;
        int lineno;
        if (!c->file && log_location(line, n, &fs, &fl, &lineno)) {
            c->file = package_file(r, t->package, line + fs, fl);
            c->line = lineno;
            size_t skip = fs + fl + 1 + (size_t)snprintf(NULL, 0, "%d", lineno) + 1;
            while (skip < n && line[skip] == ' ')
                skip++;
            s = line + skip;
            k = n - skip;
        } else if (n >= 8 && memcmp(line, "        ", 8) == 0 && msg.len) {
            s = line + 8; /* a continuation of the message above */
            k = n - 8;
        }
        if (msg.len)
            sb_puts(&msg, "\n");
        sb_append(&msg, s, k);
    }
    if (msg.len)
        c->message = sb_take(&msg);
    else
        sb_free(&msg);
}

/* A test that failed without a message of its own: a panic (its "panic: " line and
 * the first frame in the project), a failed subtest, or nothing said. */
static void explain_failure(struct go_run *r, const struct go_test *t, struct test_case *c)
{
    const char *sources[] = {t->output.buf, r->pkg_output.buf};
    for (int i = 0; i < 2 && !c->message; i++) {
        const char *panic = sources[i] ? strstr(sources[i], "panic: ") : NULL;
        if (!panic)
            continue;
        test_set_str(&c->message, panic, (long)strcspn(panic, "\n"));
        if (!c->file)
            frame_in_project(panic, r->root, &c->file, &c->line);
    }
    if (!c->message) {
        size_t n = strlen(t->name);
        for (size_t i = 0; i < r->n && !c->message; i++)
            if (strncmp(r->tests[i].name, t->name, n) == 0 && r->tests[i].name[n] == '/')
                test_set_str(&c->message, "a subtest failed", -1);
    }
    if (!c->message)
        test_set_str(&c->message, "failed", -1);
}

/* A test still running when its package's binary ended: killed (the runner's stuck
 * verdict, SIGQUIT's dump) or crashed. */
static int unfinished(struct go_run *r, const char *pkg, bool stuck, struct test_report *out)
{
    for (size_t i = 0; i < r->n; i++) {
        struct go_test *t = &r->tests[i];
        if (t->done || strcmp(t->package, pkg) != 0)
            continue;
        t->done = true;
        struct test_case *c = test_report_add(out, t->name, TEST_FAILED);
        if (!c)
            return -1;
        if (t->output.len)
            test_set_str(&c->output, t->output.buf, -1);
        const char *text = t->output.buf ? t->output.buf : "";
        const char *timeout = strstr(text, "panic: test timed out");
        if (timeout)
            test_set_str(&c->message, timeout, (long)strcspn(timeout, "\n"));
        else if (stuck)
            test_set_str(&c->message, "killed by Strobe: stuck (see `stuck` for its threads' "
                         "stacks; its goroutines are in the output)", -1);
        else if (strstr(text, "SIGQUIT: quit"))
            test_set_str(&c->message, "the test binary was stopped with SIGQUIT while this "
                         "test ran (its goroutines are in the output)", -1);
        else
            test_set_str(&c->message, "the test binary ended while this test ran", -1);
    }
    return 0;
}

/* A compiler error, "stack/stack.go:27:24: undefined: missing" (the go command's
 * lines start with "# package" or "FAIL"). */
static int diag_line(const char *line, size_t n, struct test_report *out)
{
    const char *colon = memchr(line, ':', n);
    if (!colon || colon - line < 4 || memcmp(colon - 3, ".go", 3) != 0 || line[0] == '#')
        return 0;
    char *end;
    long l = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || end >= line + n || *end != ':')
        return 0;
    long col = 0;
    if (isdigit((unsigned char)end[1]))
        col = strtol(end + 1, &end, 10);
    if (end >= line + n || *end != ':')
        return 0;
    const char *msg = end + 1;
    while (msg < line + n && *msg == ' ')
        msg++;
    char *file = strndup(line, (size_t)(colon - line));
    char *message = strndup(msg, (size_t)(line + n - msg));
    struct test_diagnostic *d = file && message
                                    ? test_report_diag(out, file, (int)l, (int)col, message)
                                    : NULL;
    free(file);
    free(message);
    return d ? 0 : -1;
}

static int diag_text(const char *text, size_t len, struct test_report *out)
{
    const char *p = text, *end = text + len, *line;
    size_t n;
    while (test_next_line(&p, end, &line, &n))
        if (diag_line(line, n, out) != 0)
            return -1;
    return 0;
}

static int go_event(struct go_run *r, const cJSON *ev, bool stuck, struct strbuf *build_output,
                    struct test_report *out)
{
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Action"));
    const char *pkg = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Package"));
    const char *test = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Test"));
    const char *output = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Output"));
    if (!action)
        return 0;
    /* Go 1.24 and later: the compiler's output as events of its own. */
    if (strcmp(action, "build-output") == 0) {
        if (output)
            sb_puts(build_output, output);
        return 0;
    }
    if (strcmp(action, "build-fail") == 0) {
        out->build_failed = true;
        return 0;
    }
    if (!pkg)
        return 0;
    if (!test) {
        if (strcmp(action, "output") == 0 && output) {
            sb_puts(&r->pkg_output, output);
            if (strstr(output, "[build failed]") || strstr(output, "[setup failed]"))
                out->build_failed = true;
        } else if (strcmp(action, "fail") == 0) {
            return unfinished(r, pkg, stuck, out);
        }
        return 0;
    }
    struct go_test *t = run_find(r, pkg, test);
    if (!t)
        return -1;
    if (strcmp(action, "output") == 0) {
        if (output)
            sb_puts(&t->output, output);
        return 0;
    }
    enum test_status st;
    if (strcmp(action, "pass") == 0)
        st = TEST_PASSED;
    else if (strcmp(action, "fail") == 0)
        st = TEST_FAILED;
    else if (strcmp(action, "skip") == 0)
        st = TEST_SKIPPED;
    else
        return 0; /* run, pause, cont */
    t->done = true;
    struct test_case *c = test_report_add(out, test, st);
    if (!c)
        return -1;
    const cJSON *elapsed = cJSON_GetObjectItem(ev, "Elapsed");
    if (cJSON_IsNumber(elapsed))
        c->duration_ms = (int64_t)(elapsed->valuedouble * 1000.0 + 0.5);
    if (t->output.len)
        test_set_str(&c->output, t->output.buf, -1);
    if (st == TEST_PASSED)
        return 0;
    read_test_output(r, t, c);
    if (st == TEST_FAILED && !c->message)
        explain_failure(r, t, c);
    return 0;
}

static int go_parse(const struct test_output *o, struct test_report *out)
{
    struct go_run r = {.root = o->plan->project_root};
    read_module(o->plan->project_root, r.module, sizeof r.module);
    struct strbuf build_output = {0};
    const char *p = o->out, *end = o->out + o->out_len, *line;
    size_t n;
    bool json = false;
    int rc = 0;
    while (rc == 0 && test_next_line(&p, end, &line, &n)) {
        cJSON *ev = n && line[0] == '{' ? cJSON_ParseWithLength(line, n) : NULL;
        if (!ev)
            continue;
        json = true;
        rc = go_event(&r, ev, o->stuck, &build_output, out);
        cJSON_Delete(ev);
    }
    /* Killed with the go command (a stuck run): no package verdict came. */
    for (size_t i = 0; rc == 0 && i < r.n; i++)
        if (!r.tests[i].done)
            rc = unfinished(&r, r.tests[i].package, o->stuck, out);
    out->structured = json;
    if (rc == 0 && out->build_failed) {
        rc = diag_text(o->err, o->err_len, out);
        if (rc == 0 && build_output.len)
            rc = diag_text(build_output.buf, build_output.len, out);
    }
    if (rc == 0 && !json && o->err_len && diag_text(o->err, o->err_len, out) == 0 &&
        out->n_diags) {
        out->build_failed = true;
        snprintf(out->note, sizeof out->note, "go test printed no JSON events: only its "
                 "compiler errors were read");
    }
    sb_free(&build_output);
    run_free(&r);
    return rc;
}

/* The code under test: a test file's package file (stack/stack_test.go ->
 * @file:stack/stack.go), else the failure's file itself. */
static int go_suggest(const struct test_case *c, char **out, int max)
{
    int n = 0;
    char pattern[600];
    size_t len = c->file ? strlen(c->file) : 0;
    if (len == 0 || len >= 512)
        return 0;
    if (len > 8 && strcmp(c->file + len - 8, "_test.go") == 0)
        snprintf(pattern, sizeof pattern, "@file:%.*s.go", (int)(len - 8), c->file);
    else
        snprintf(pattern, sizeof pattern, "@file:%s", c->file);
    test_suggest_add(out, &n, max, pattern);
    return n;
}

/* The goroutine dump SIGQUIT makes the test binary print, out of go test's JSON
 * events (their Output fields); lines that are not events as they are. */
static void go_dump_text(const char *printed, size_t n, struct strbuf *out)
{
    const char *p = printed, *end = printed + n, *line;
    size_t len;
    while (test_next_line(&p, end, &line, &len)) {
        cJSON *ev = len && line[0] == '{' ? cJSON_ParseWithLength(line, len) : NULL;
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "Output"));
        if (text) {
            sb_puts(out, text);
        } else if (!ev) {
            sb_append(out, line, len);
            sb_puts(out, "\n");
        }
        cJSON_Delete(ev);
    }
}

const struct test_adapter test_adapter_go = {
    .name = "go",
    .display = "Go",
    .language = "go",
    .build_system = "go",
    .program = "go",
    .provides = "Debian package golang-go",
    .detect = go_detect,
    .command = go_command,
    .live_open = go_live_open,
    .live_line = go_live_line,
    .live_close = go_live_close,
    .parse = go_parse,
    .suggest = go_suggest,
    .no_tests_hint = "No tests found. Go runs func TestXxx(t *testing.T) in *_test.go "
                     "files next to the code they test.",
    .dump_signal = SIGQUIT,
    .dump_text = go_dump_text,
    .trace_note = "go test cannot run under Strobe's tracer yet (the go tool's own "
                  "programs die of SIGTRAP there, and go test links its test binaries "
                  "without symbols): this run went untraced, with the same results. The "
                  "stuck detector's goroutine dump still works.",
    .untraceable = true,
};
