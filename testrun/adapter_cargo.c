/*
 * adapter_cargo.c - Rust's `cargo test`: libtest's JSON events (one line each on
 * stdout, one suite per test binary), the panic message for where a test failed,
 * rustc's errors on stderr when the build fails, and libtest's text output when the
 * JSON is missing (a `command` without the JSON flags).
 *
 * libtest's JSON format is unstable: it needs `-Z unstable-options`, which stable
 * toolchains accept with RUSTC_BOOTSTRAP=1 in the environment (the same output on
 * Debian 12's rustc 1.63 and on current ones).
 */
#include "testrun/adapter.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

static const char *const RUST_SOURCES[] = {".rs", NULL};

static bool is_cargo(const char *command)
{
    while (*command == ' ' || *command == '\t')
        command++;
    return strncmp(command, "cargo", 5) == 0 &&
           (command[5] == '\0' || command[5] == ' ' || command[5] == '\t');
}

/* A Cargo.toml makes it a cargo project; a `command` that is not cargo is someone
 * else's (a test binary built by the project, say). */
static int cargo_detect(const char *project_root, const char *command)
{
    if (!test_has_file(project_root, "Cargo.toml"))
        return 0;
    return !command || is_cargo(command) ? 90 : 0;
}

/* `cargo test [cargo args] [level] [--no-fail-fast] -- [harness args] [filter]
 * [JSON flags]`. A name with "::" is a full test path (stack::tests::pop) and runs
 * with --exact, so its siblings with longer names stay out; a name without one is
 * libtest's substring filter (an integration test's top-level function is named
 * without "::" and is found that way too). */
static int cargo_command(const struct test_plan *plan, struct test_command *out,
                         struct strobe_error *e)
{
    struct test_command given = {0};
    if (plan->command) {
        if (tcmd_split(&given, plan->command) != 0 || given.argc == 0 ||
            !is_cargo(plan->command)) {
            tcmd_free(&given);
            return err_set(e, ERR_VALIDATION, "command '%s' is not a cargo command line "
                           "(framework cargo runs `cargo test ...`).", plan->command);
        }
    } else {
        tcmd_arg(&given, "cargo");
        tcmd_arg(&given, "test");
    }
    int dashes = given.argc;
    for (int i = 0; i < given.argc; i++)
        if (strcmp(given.argv[i], "--") == 0) {
            dashes = i;
            break;
        }
    for (int i = 0; i < dashes; i++)
        tcmd_arg(out, "%s", given.argv[i]);
    switch (plan->level) {
    case TEST_LEVEL_UNIT:
        tcmd_arg(out, "--lib");
        break;
    case TEST_LEVEL_INTEGRATION:
        tcmd_arg(out, "--test");
        tcmd_arg(out, "*");
        break;
    case TEST_LEVEL_E2E:
        tcmd_arg(out, "--test");
        tcmd_arg(out, "e2e*");
        break;
    case TEST_LEVEL_ALL:
        break;
    }
    if (plan->build_only) {
        tcmd_arg(out, "--no-run");
        tcmd_env(out, "RUSTC_BOOTSTRAP=1"); /* part of cargo's fingerprint: as the run */
        tcmd_free(&given);
        return out->too_long ? err_set(e, ERR_VALIDATION, "the cargo command has too many "
                                       "arguments.") : 0;
    }
    /* Doc tests are compiled by rustdoc as they run: traced, that is the compiler
     * under the debugger. --tests runs every test target but them. */
    if (plan->traced && plan->level == TEST_LEVEL_ALL)
        tcmd_arg(out, "--tests");
    /* Without it the first failing test binary stops the others from running. */
    if (plan->work_dir)
        tcmd_arg(out, "--no-fail-fast");
    bool harness = dashes < given.argc || plan->test || plan->work_dir;
    if (harness)
        tcmd_arg(out, "--");
    for (int i = dashes + 1; i < given.argc; i++)
        tcmd_arg(out, "%s", given.argv[i]);
    tcmd_free(&given);
    if (plan->test) {
        tcmd_arg(out, "%s", plan->test);
        if (strstr(plan->test, "::"))
            tcmd_arg(out, "--exact");
    }
    if (plan->work_dir) {
        tcmd_arg(out, "-Z");
        tcmd_arg(out, "unstable-options");
        tcmd_arg(out, "--format");
        tcmd_arg(out, "json");
        tcmd_arg(out, "--report-time");
        tcmd_env(out, "RUSTC_BOOTSTRAP=1");
    }
    if (out->too_long)
        return err_set(e, ERR_VALIDATION, "the cargo command has too many arguments.");
    return 0;
}

/* ---- live progress ----------------------------------------------------------- */

static void cargo_live_line(void *state, struct test_live *lv, int stream, const char *line,
                            size_t len, bool partial)
{
    (void)state;
    while (len && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    if (stream == 2) {
        if (test_starts_with(line, len, "Compiling "))
            test_live_phase(lv, TEST_PHASE_COMPILING);
        else if (test_starts_with(line, len, "Running ") ||
                 test_starts_with(line, len, "Doc-tests "))
            test_live_phase(lv, TEST_PHASE_RUNNING);
        return;
    }
    if (len && line[0] == '{') {
        cJSON *ev = cJSON_ParseWithLength(line, len);
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
        const char *event = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "event"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "name"));
        if (type && event && name && strcmp(type, "test") == 0) {
            if (strcmp(event, "started") == 0)
                test_live_started(lv, name);
            else if (strcmp(event, "ok") == 0)
                test_live_finished(lv, name, TEST_PASSED);
            else if (strcmp(event, "failed") == 0)
                test_live_finished(lv, name, TEST_FAILED);
            else if (strcmp(event, "ignored") == 0)
                test_live_finished(lv, name, TEST_SKIPPED);
        }
        cJSON_Delete(ev);
        return;
    }
    /* Text: "test NAME ... ok"; with one test thread libtest prints "test NAME ... "
     * first and the verdict when the test ends. */
    if (!test_starts_with(line, len, "test "))
        return;
    const char *dots = memmem(line, len, " ... ", 5);
    if (!dots)
        return;
    char name[512];
    size_t n = (size_t)(dots - line) - 5;
    if (n == 0 || n >= sizeof name)
        return;
    memcpy(name, line + 5, n);
    name[n] = '\0';
    const char *verdict = dots + 5;
    size_t vlen = len - (size_t)(verdict - line);
    if (vlen == 0 && partial)
        test_live_started(lv, name);
    else if (test_starts_with(verdict, vlen, "ok"))
        test_live_finished(lv, name, TEST_PASSED);
    else if (test_starts_with(verdict, vlen, "FAILED"))
        test_live_finished(lv, name, TEST_FAILED);
    else if (test_starts_with(verdict, vlen, "ignored"))
        test_live_finished(lv, name, TEST_SKIPPED);
}

/* ---- the outcome ------------------------------------------------------------- */

/* "path:LINE:COL" at p, ending at end, a newline or a colon: *file_len, *line and
 * *column set. */
static bool location_at(const char *p, const char *end, size_t *file_len, int *line,
                        int *column)
{
    const char *c = p;
    while (c < end && *c != ':' && *c != '\n' && *c != ' ')
        c++;
    if (c == p || c >= end || *c != ':' || !isdigit((unsigned char)c[1]))
        return false;
    char *after;
    long l = strtol(c + 1, &after, 10);
    if (*after != ':' || !isdigit((unsigned char)after[1]))
        return false;
    long col = strtol(after + 1, &after, 10);
    if (after < end && *after != '\n' && *after != ':')
        return false;
    *file_len = (size_t)(c - p);
    *line = (int)l;
    *column = (int)col;
    return true;
}

/* Where the panic happened and its message, from a test's output:
 *   rustc >= 1.73: "thread 'NAME' (ID) panicked at src/x.rs:10:5:\nMESSAGE\nnote: ..."
 *   older:         "thread 'NAME' panicked at 'MESSAGE', src/x.rs:10:5\nnote: ..."
 * Without a panic the whole output is the message, and its first .rs location the
 * place. */
static void read_panic(const char *text, struct test_case *c)
{
    const char *end = text + strlen(text);
    const char *at = strstr(text, "panicked at ");
    size_t flen;
    int line, column;
    if (at) {
        at += strlen("panicked at ");
        if (*at == '\'') {
            for (const char *q = strstr(at + 1, "', "); q; q = strstr(q + 1, "', ")) {
                if (location_at(q + 3, end, &flen, &line, &column)) {
                    test_set_str(&c->file, q + 3, (long)flen);
                    c->line = line;
                    free(c->message);
                    c->message = strndup(at + 1, (size_t)(q - at - 1));
                    return;
                }
            }
        } else if (location_at(at, end, &flen, &line, &column)) {
            test_set_str(&c->file, at, (long)flen);
            c->line = line;
            const char *msg = strchr(at, '\n');
            msg = msg ? msg + 1 : end;
            const char *stop = end, *p = msg, *l;
            size_t n;
            while (test_next_line(&p, end, &l, &n))
                if (test_starts_with(l, n, "note: ") ||
                    test_starts_with(l, n, "stack backtrace:")) {
                    stop = l;
                    break;
                }
            free(c->message);
            c->message = str_trimmed_dup(msg, (size_t)(stop - msg));
            return;
        }
    }
    test_find_location(text, RUST_SOURCES, &c->file, &c->line);
    free(c->message);
    c->message = str_trimmed_dup(text, strlen(text));
}

static void fail_with_output(struct test_case *c, const char *output)
{
    test_set_str(&c->output, output, -1);
    read_panic(output, c);
    if (!c->message || !*c->message)
        test_set_str(&c->message, "the test failed without printing why", -1);
}

/* Tests started and not yet ended, in the order they started. */
struct running {
    char **names;
    size_t n, cap;
};

static int running_add(struct running *r, const char *name)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        char **p = realloc(r->names, cap * sizeof *p);
        if (!p)
            return -1;
        r->names = p;
        r->cap = cap;
    }
    r->names[r->n] = strdup(name);
    return r->names[r->n] ? (r->n++, 0) : -1;
}

static void running_end(struct running *r, const char *name)
{
    for (size_t i = r->n; i-- > 0;)
        if (strcmp(r->names[i], name) == 0) {
            free(r->names[i]);
            memmove(&r->names[i], &r->names[i + 1], (r->n - i - 1) * sizeof *r->names);
            r->n--;
            return;
        }
}

/* Tests that started and never ended: the test binary died under them (a crash, an
 * abort), or the runner killed the run as stuck. */
static int unfinished(const struct running *r, const struct test_output *o,
                      struct test_report *out)
{
    for (size_t i = 0; i < r->n; i++) {
        struct test_case *c = test_report_add(out, r->names[i], TEST_FAILED);
        if (!c)
            return -1;
        test_set_str(&c->message, o->stuck ? "killed by Strobe: stuck (see `stuck` for its "
                                             "threads' stacks)"
                                           : "the test binary ended while this test ran", -1);
    }
    return 0;
}

static int parse_json_event(const cJSON *ev, struct running *running, struct test_report *out)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
    const char *event = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "event"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "name"));
    if (!type || !event || !name || strcmp(type, "test") != 0)
        return 0;
    if (strcmp(event, "started") == 0)
        return running_add(running, name);
    enum test_status st;
    if (strcmp(event, "ok") == 0)
        st = TEST_PASSED;
    else if (strcmp(event, "failed") == 0)
        st = TEST_FAILED;
    else if (strcmp(event, "ignored") == 0)
        st = TEST_SKIPPED;
    else
        return 0; /* timeout: the verdict comes later */
    running_end(running, name);
    struct test_case *c = test_report_add(out, name, st);
    if (!c)
        return -1;
    const cJSON *t = cJSON_GetObjectItem(ev, "exec_time");
    if (cJSON_IsNumber(t))
        c->duration_ms = (int64_t)(t->valuedouble * 1000.0 + 0.5);
    const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "message"));
    const char *stdout_text = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "stdout"));
    if (st == TEST_FAILED)
        fail_with_output(c, stdout_text ? stdout_text : (message ? message : ""));
    else if (message)
        test_set_str(&c->message, message, -1);
    return 0;
}

/* libtest's text: "test NAME ... ok|FAILED|ignored[, reason]", then for each
 * failure a block "---- NAME stdout ----" with what it printed. */
static int parse_text(const char *text, size_t len, struct test_report *out)
{
    const char *p = text, *end = text + len, *line;
    size_t n;
    struct test_case *block = NULL;
    struct strbuf sb = {0};
    int rc = 0;
    while (rc == 0 && test_next_line(&p, end, &line, &n)) {
        if (test_starts_with(line, n, "---- ") && n > 17 &&
            memcmp(line + n - 12, " stdout ----", 12) == 0) {
            if (block)
                fail_with_output(block, sb.len ? sb.buf : "");
            sb_free(&sb);
            char *name = strndup(line + 5, n - 17);
            block = name ? test_report_find(out, name) : NULL;
            free(name);
            continue;
        }
        if (block && (n == 9 && memcmp(line, "failures:", 9) == 0)) {
            fail_with_output(block, sb.len ? sb.buf : "");
            block = NULL;
            continue;
        }
        if (block) {
            sb_append(&sb, line, n);
            sb_puts(&sb, "\n");
            continue;
        }
        const char *dots = test_starts_with(line, n, "test ") ? memmem(line, n, " ... ", 5) : NULL;
        if (!dots)
            continue;
        const char *v = dots + 5;
        size_t vn = n - (size_t)(v - line);
        enum test_status st;
        if (test_starts_with(v, vn, "ok"))
            st = TEST_PASSED;
        else if (test_starts_with(v, vn, "FAILED"))
            st = TEST_FAILED;
        else if (test_starts_with(v, vn, "ignored"))
            st = TEST_SKIPPED;
        else
            continue;
        char *name = strndup(line + 5, (size_t)(dots - line) - 5);
        struct test_case *c = name ? test_report_add(out, name, st) : NULL;
        free(name);
        if (!c) {
            rc = -1;
            break;
        }
        if (st == TEST_SKIPPED && test_starts_with(v, vn, "ignored, "))
            test_set_str(&c->message, v + 9, (long)(vn - 9));
        if (st == TEST_FAILED)
            test_set_str(&c->message, "the test failed without printing why", -1);
    }
    if (block && rc == 0)
        fail_with_output(block, sb.len ? sb.buf : "");
    sb_free(&sb);
    return rc;
}

/* rustc's errors: "error[E0425]: MESSAGE" (or "error: MESSAGE") and, before the
 * next blank line, " --> FILE:LINE:COL". Cargo's own "error: could not compile"
 * says the build failed; its errors without a place are left out unless no error
 * has one. */
static int parse_build_errors(const char *text, size_t len, struct test_report *out)
{
    const char *p = text, *end = text + len, *line;
    size_t n;
    char *message = NULL, *fallback = NULL;
    bool failed = false;
    while (test_next_line(&p, end, &line, &n)) {
        if (test_starts_with(line, n, "error: could not compile")) {
            failed = true;
            if (!fallback)
                fallback = strndup(line, n);
            continue;
        }
        if (test_starts_with(line, n, "error[") || test_starts_with(line, n, "error: ")) {
            const char *colon = memchr(line, ':', n);
            free(message);
            message = str_trimmed_dup(colon + 1, n - (size_t)(colon + 1 - line));
            continue;
        }
        if (n == 0) {
            free(message);
            message = NULL;
            continue;
        }
        const char *l = line, *lend = line + n;
        while (l < lend && *l == ' ')
            l++;
        if (message && lend - l > 4 && memcmp(l, "--> ", 4) == 0) {
            size_t flen;
            int lineno, column;
            if (location_at(l + 4, lend, &flen, &lineno, &column)) {
                char *file = strndup(l + 4, flen);
                if (!file || !test_report_diag(out, file, lineno, column, message)) {
                    free(file);
                    free(message);
                    free(fallback);
                    return -1;
                }
                free(file);
            }
            free(message);
            message = NULL;
        }
    }
    free(message);
    if (failed) {
        out->build_failed = true;
        if (out->n_diags == 0 && !test_report_diag(out, NULL, 0, 0, fallback)) {
            free(fallback);
            return -1;
        }
    }
    free(fallback);
    return 0;
}

static int cargo_parse(const struct test_output *o, struct test_report *out)
{
    const char *p = o->out, *end = o->out + o->out_len, *line;
    size_t n;
    bool json = false;
    struct running running = {0};
    int rc = 0;
    while (rc == 0 && test_next_line(&p, end, &line, &n)) {
        if (n == 0 || line[0] != '{')
            continue;
        cJSON *ev = cJSON_ParseWithLength(line, n);
        if (!ev)
            continue;
        json = true;
        rc = parse_json_event(ev, &running, out);
        cJSON_Delete(ev);
    }
    if (rc == 0)
        rc = unfinished(&running, o, out);
    for (size_t i = 0; i < running.n; i++)
        free(running.names[i]);
    free(running.names);
    if (rc != 0)
        return -1;
    out->structured = json;
    if (!json) {
        if (parse_text(o->out, o->out_len, out) != 0)
            return -1;
        if (out->n_cases)
            snprintf(out->note, sizeof out->note, "cargo printed no JSON events (the "
                     "command lacks `-- -Z unstable-options --format json`): results "
                     "read from its text output, without durations");
    }
    if (parse_build_errors(o->err, o->err_len, out) != 0)
        return -1;
    return 0;
}

/* "stack::tests::pop" -> "**::stack::**": the module under test in whatever crate
 * (the traced names carry the crate: stackfix::stack::Stack<T>::pop); the failure's
 * file unless it is an integration test's own (tests/). */
static int cargo_suggest(const struct test_case *c, char **out, int max)
{
    int n = 0;
    char pattern[600];
    const char *sep = c->name ? strstr(c->name, "::") : NULL;
    int len = sep ? (int)(sep - c->name) : 0;
    if (len > 0 && len < 512 && !(len == 5 && strncmp(c->name, "tests", 5) == 0)) {
        snprintf(pattern, sizeof pattern, "**::%.*s::**", len, c->name);
        test_suggest_add(out, &n, max, pattern);
    }
    if (c->file && strncmp(c->file, "tests/", 6) != 0 && !strstr(c->file, "/tests/")) {
        const char *base = strrchr(c->file, '/');
        base = base ? base + 1 : c->file;
        if (strlen(base) < 512) {
            snprintf(pattern, sizeof pattern, "@file:%s", base);
            test_suggest_add(out, &n, max, pattern);
        }
    }
    return n;
}

const struct test_adapter test_adapter_cargo = {
    .name = "cargo",
    .display = "Cargo",
    .language = "rust",
    .build_system = "cargo",
    .program = "cargo",
    .provides = "Debian package cargo",
    .builds_first = true,
    .detect = cargo_detect,
    .command = cargo_command,
    .live_line = cargo_live_line,
    .parse = cargo_parse,
    .suggest = cargo_suggest,
    .no_tests_hint = "No tests found. Cargo projects support #[test] functions in src/ "
                     "(in a #[cfg(test)] mod tests) and integration tests in tests/.",
};
