/*
 * tool_test.c - debug_test (action "run" and "status") and its spec-003 alias
 * debug_test_status: a test run started in the background (testrun/testrun.h)
 * and its progress or outcome, shaped for an agent.
 *
 * The outcome fits TEST_BUDGET: the summary and the build errors first, then
 * failures (each message cut to its first MESSAGE_LINES lines), then the stuck
 * test's threads with their frames cut to STUCK_FRAMES; what does not fit is counted
 * in `omitted` and stays in the details file whose path the answer gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/debug.h"
#include "testrun/testrun.h"
#include "mcp/args.h"
#include "mcp/budget.h"
#include "mcp/tools.h"

#define TEST_BUDGET tool_answer_budget() /* answers.maxBytes, mcp/budget.h */
#define MESSAGE_LINES 12
#define MESSAGE_BYTES 1500
#define STUCK_FRAMES 12
#define STUCK_THREADS 16
#define DUMP_BYTES 6000
#define TAIL_SHOWN 1500

static const char *const run_fields[] = {"action", "projectRoot", "framework", "level", "test",
                                         "command", "tracePatterns", "watches", "breakpoints",
                                         "env", "testRunId", "waitMs", NULL};

static const char *phase_name(enum test_phase p)
{
    static const char *const n[] = {"starting", "compiling", "running", "suites_finished"};
    return n[p];
}

static int parse_level(const char *s, enum test_level *out, struct strobe_error *e)
{
    static const char *const names[] = {"unit", "integration", "e2e"};
    static const enum test_level levels[] = {TEST_LEVEL_UNIT, TEST_LEVEL_INTEGRATION,
                                             TEST_LEVEL_E2E};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = levels[i];
            return 0;
        }
    return err_set(e, ERR_VALIDATION, "'level' must be \"unit\", \"integration\" or \"e2e\" "
                   "(omit it for every test), not '%.64s'.", s);
}

/* env {"KEY": "value"} as "KEY=VALUE" strings (malloc'd array of malloc'd strings). */
static int parse_env(const cJSON *args, char ***out, int *n, struct strobe_error *e)
{
    const cJSON *env;
    *out = NULL;
    *n = 0;
    if (args_object(args, "env", &env, e) != 0)
        return -1;
    if (!env)
        return 0;
    int count = cJSON_GetArraySize(env);
    if (count > TESTRUN_MAX_ENV)
        return err_set(e, ERR_VALIDATION, "'env' has %d entries; at most %d.", count,
                       TESTRUN_MAX_ENV);
    char **list = calloc((size_t)count + 1, sizeof *list);
    if (!list)
        return err_set(e, ERR_INTERNAL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, env) {
        if (!cJSON_IsString(it) || !it->string[0] || strchr(it->string, '=')) {
            for (int i = 0; i < *n; i++)
                free(list[i]);
            free(list);
            return err_set(e, ERR_VALIDATION, "'env.%.64s' must be a string value under a "
                           "name without '=' (env: {\"RUST_LOG\": \"debug\"}).", it->string);
        }
        if (asprintf(&list[*n], "%s=%s", it->string, it->valuestring) < 0)
            break;
        (*n)++;
    }
    *out = list;
    return 0;
}

static cJSON *run(const cJSON *args, struct strobe_error *e)
{
    const char *root = NULL, *framework = NULL, *level = NULL, *test = NULL, *command = NULL;
    const char **patterns = NULL;
    int n_patterns = 0;
    if (args_string(args, "projectRoot", true, &root, e) != 0 ||
        args_string(args, "framework", false, &framework, e) != 0 ||
        args_string(args, "level", false, &level, e) != 0 ||
        args_string(args, "test", false, &test, e) != 0 ||
        args_string(args, "command", false, &command, e) != 0 ||
        args_strings(args, "tracePatterns", &patterns, &n_patterns, e) != 0)
        return NULL;
    struct testrun_request req = {
        .project_root = root, .framework = framework, .command = command, .test = test,
        .patterns = patterns, .n_patterns = n_patterns,
    };
    cJSON *res = NULL;
    struct tool_watches *w = calloc(1, sizeof *w);
    struct collector_breakpoint bps[DEBUG_ADD_MAX];
    char **env = NULL;
    int n_env = 0;
    if (!w) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto out;
    }
    if (level && parse_level(level, &req.level, e) != 0)
        goto out;
    if (tool_breakpoints_given(args, bps, &req.n_breakpoints, e) != 0)
        goto out;
    req.breakpoints = bps;
    req.level_given = level != NULL;
    if (tool_watches_parse(args, w, e) != 0)
        goto out;
    if (w->n_remove) {
        err_set(e, ERR_VALIDATION, "'watches.remove' has nothing to remove before the run; "
                "give watches.add only.");
        goto out;
    }
    req.watches = w->add;
    req.n_watches = w->n_add;
    if (parse_env(args, &env, &n_env, e) != 0)
        goto out;
    req.env = (const char *const *)env;
    req.n_env = n_env;
    struct testrun_started st;
    if (testrun_start(&req, &st, e) != 0)
        goto out;
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "testRunId", st.id);
    cJSON_AddStringToObject(res, "status", "running");
    cJSON_AddStringToObject(res, "framework", st.adapter->name);
    if (!framework)
        cJSON_AddNumberToObject(res, "detectionConfidence", st.confidence);
    if (st.command[0])
        cJSON_AddStringToObject(res, "command", st.command);
    if (st.session_id[0]) {
        cJSON_AddStringToObject(res, "sessionId", st.session_id);
        tool_add_pattern_status(res, st.session_id); /* what each pattern matched */
    } else if (n_patterns || w->n_add || req.n_breakpoints)
        cJSON_AddStringToObject(res, "sessionPending", "The tests are built first, "
                                "untraced; status gives the sessionId once they run.");
    if (st.trace_note)
        cJSON_AddStringToObject(res, "warning", st.trace_note);
    char hint[256];
    snprintf(hint, sizeof hint, "Call debug_test({action: \"status\", testRunId: \"%s\"}): it "
             "waits up to 15 s for the end and answers with progress meanwhile.", st.id);
    cJSON_AddStringToObject(res, "next", hint);
out:
    for (int i = 0; i < n_env; i++)
        free(env[i]);
    free(env);
    if (w)
        free(w->remove);
    free(w);
    free(patterns);
    return res;
}

/* s cut to its first MESSAGE_LINES lines and MESSAGE_BYTES bytes (at a character). */
static void add_message(cJSON *o, const char *s)
{
    if (!s)
        return;
    size_t n = 0;
    int lines = 0;
    while (s[n] && n < MESSAGE_BYTES && lines < MESSAGE_LINES)
        if (s[n++] == '\n')
            lines++;
    while (n > 0 && s[n] && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;  /* not inside a UTF-8 character */
    char *cut = strndup(s, n);
    if (!cut)
        return;
    size_t len = strlen(cut);
    while (len && cut[len - 1] == '\n')
        cut[--len] = '\0';
    cJSON_AddStringToObject(o, "message", cut);
    if (s[n])
        cJSON_AddTrueToObject(o, "messageTruncated");
    free(cut);
}

static cJSON *failure_json(const struct testrun_failure *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", f->tc->name);
    if (f->tc->file)
        cJSON_AddStringToObject(o, "file", f->tc->file);
    if (f->tc->line > 0)
        cJSON_AddNumberToObject(o, "line", f->tc->line);
    add_message(o, f->tc->message ? f->tc->message : "(no message)");
    if (f->rerun)
        cJSON_AddStringToObject(o, "rerun", f->rerun);
    cJSON *sug = cJSON_AddArrayToObject(o, "suggestedTraces");
    for (int i = 0; i < f->n_suggested; i++)
        cJSON_AddItemToArray(sug, cJSON_CreateString(f->suggested[i]));
    return o;
}

/* A frame as one string, its file relative to the project when it is inside it
 * (tests/bank.rs, not bank.rs: a test crate may share its name with the library). */
static void frame_text(const struct collector_frame *f, const char *root, char *buf,
                       size_t cap)
{
    size_t n = strlen(root);
    if (f->file && n && strncmp(f->file, root, n) == 0 && f->file[n] == '/')
        snprintf(buf, cap, "%s (%s:%d)", f->function ? f->function : "??", f->file + n + 1,
                 f->line);
    else
        tool_frame_text(f, buf, cap);
}

/* A function worth tracing: the program's own, not its entry point. */
static bool traceable(const char *fn)
{
    size_t n = strlen(fn);
    return strcmp(fn, "main") != 0 && !(n > 6 && strcmp(fn + n - 6, "::main") == 0);
}

static cJSON *stuck_json(const struct testrun_stuck *s, const char *root)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->name ? s->name : "");
    cJSON_AddNumberToObject(o, "elapsedMs", (double)s->elapsed_ms);
    cJSON_AddStringToObject(o, "diagnosis", s->diagnosis);
    if (s->stacks.diagnosis)
        cJSON_AddStringToObject(o, "waitCycles", s->stacks.diagnosis);
    cJSON *threads = cJSON_AddArrayToObject(o, "threads");
    cJSON *sug = cJSON_CreateArray();
    size_t shown = 0;
    for (size_t i = 0; i < s->stacks.n_threads && shown < STUCK_THREADS; i++, shown++) {
        const struct collector_thread *th = &s->stacks.threads[i];
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", th->name);
        cJSON_AddNumberToObject(t, "tid", th->tid);
        cJSON_AddStringToObject(t, "state", th->state);
        if (th->syscall_name)
            cJSON_AddStringToObject(t, "syscall", th->syscall_name);
        if (th->wait_owner > 0) {
            cJSON_AddNumberToObject(t, th->wait == WAIT_JOIN ? "waitsForTid" : "lockOwnerTid",
                                    th->wait_owner);
        } else if (th->wait == WAIT_MUTEX) {
            char addr[32]; /* a lock that records no owner (Rust's): which one, at least */
            snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)th->wait_address);
            cJSON_AddStringToObject(t, "waitsForMutex", addr);
        }
        cJSON *stack = cJSON_AddArrayToObject(t, "stack");
        for (size_t f = 0; f < th->n_frames && f < STUCK_FRAMES; f++) {
            char buf[1024];
            frame_text(&th->frames[f], root, buf, sizeof buf);
            cJSON_AddItemToArray(stack, cJSON_CreateString(buf));
        }
        size_t more = th->omitted_frames + (th->n_frames > STUCK_FRAMES
                                                ? th->n_frames - STUCK_FRAMES : 0);
        if (more)
            cJSON_AddNumberToObject(t, "omittedFrames", (double)more);
        cJSON_AddItemToArray(threads, t);
        /* The program's own function where each thread waits: what to trace. */
        if (th->own_frame >= 0 && th->frames[th->own_frame].function &&
            traceable(th->frames[th->own_frame].function) && cJSON_GetArraySize(sug) < 4) {
            const char *fn = th->frames[th->own_frame].function;
            bool dup = false;
            const cJSON *it;
            cJSON_ArrayForEach(it, sug) dup |= strcmp(it->valuestring, fn) == 0;
            if (!dup)
                cJSON_AddItemToArray(sug, cJSON_CreateString(fn));
        }
    }
    if (s->stacks.n_threads > shown)
        cJSON_AddNumberToObject(o, "omittedThreads", (double)(s->stacks.n_threads - shown));
    if (s->runtime_dump) {
        size_t n = strlen(s->runtime_dump);
        char *cut = strndup(s->runtime_dump, n > DUMP_BYTES ? DUMP_BYTES : n);
        if (cut) {
            size_t k = strlen(cut);
            while (k > 0 && ((unsigned char)cut[k - 1] & 0xC0) == 0x80)
                cut[--k] = '\0';
            if (k > 0 && ((unsigned char)cut[k - 1] & 0xC0) == 0xC0)
                cut[--k] = '\0';
            cJSON_AddStringToObject(o, "runtimeStacks", cut);
            free(cut);
        }
        if (n > DUMP_BYTES)
            cJSON_AddTrueToObject(o, "runtimeStacksTruncated");
    }
    cJSON_AddItemToObject(o, "suggestedTraces", sug);
    return o;
}

static cJSON *result_json(const struct testrun_view *v)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "framework", v->adapter->name);
    cJSON *sum = cJSON_AddObjectToObject(r, "summary");
    cJSON_AddNumberToObject(sum, "passed", v->passed);
    cJSON_AddNumberToObject(sum, "failed", v->failed);
    cJSON_AddNumberToObject(sum, "skipped", v->skipped);
    cJSON_AddNumberToObject(sum, "stuck", v->n_stuck);
    cJSON_AddNumberToObject(sum, "durationMs", (double)v->elapsed_ms);
    cJSON_AddNumberToObject(r, "exitCode", v->exit_code);
    if (v->exit_code < 0)
        cJSON_AddStringToObject(r, "killed", v->n_stuck ? "by Strobe: the test was stuck"
                                : v->timed_out ? "by Strobe: the hard timeout"
                                : "by a signal (see the details file's stderr)");
    if (v->error[0])
        cJSON_AddStringToObject(r, "error", v->error);
    if (v->timed_out) {
        char msg[160];
        snprintf(msg, sizeof msg, "The run was killed at the level's hard timeout of %lld s.",
                 (long long)(v->timeout_ms / 1000));
        cJSON_AddStringToObject(r, "timedOut", msg);
    }
    if (v->report->note[0])
        cJSON_AddStringToObject(r, "note", v->report->note);
    if (v->report->build_failed || v->report->n_diags) {
        cJSON *be = cJSON_AddArrayToObject(r, "buildErrors");
        for (size_t i = 0; i < v->report->n_diags && i < 10; i++) {
            const struct test_diagnostic *d = &v->report->diags[i];
            cJSON *o = cJSON_CreateObject();
            if (d->file)
                cJSON_AddStringToObject(o, "file", d->file);
            if (d->line)
                cJSON_AddNumberToObject(o, "line", d->line);
            if (d->column)
                cJSON_AddNumberToObject(o, "column", d->column);
            add_message(o, d->message);
            cJSON_AddItemToArray(be, o);
        }
    }
    cJSON *fails = cJSON_AddArrayToObject(r, "failures");
    cJSON *stuck = cJSON_AddArrayToObject(r, "stuck");
    for (int i = 0; i < v->n_stuck; i++)
        cJSON_AddItemToArray(stuck, stuck_json(&v->stuck[i], v->project_root));
    if (v->n_stuck)
        cJSON_AddStringToObject(r, "stoppedEarly", "The run was killed at the stuck test: "
                                "tests that had not reported by then are not in these "
                                "counts. Fix it, or run the others with test set to each.");
    if (v->details_path[0])
        cJSON_AddStringToObject(r, "details", v->details_path);
    if (v->no_tests) {
        cJSON_AddTrueToObject(r, "noTests");
        cJSON *p = cJSON_AddObjectToObject(r, "project");
        cJSON_AddStringToObject(p, "language", v->language);
        cJSON_AddStringToObject(p, "buildSystem", v->build_system);
        cJSON_AddStringToObject(r, "hint", v->hint);
    }
    if (v->tail) {
        size_t n = strlen(v->tail);
        const char *from = n > TAIL_SHOWN ? v->tail + n - TAIL_SHOWN : v->tail;
        while (*from && ((unsigned char)*from & 0xC0) == 0x80)
            from++;
        cJSON_AddStringToObject(r, "outputTail", from);
    }
    /* Failures while they fit; the rest are counted. */
    int shown = 0;
    for (; shown < v->n_failures; shown++) {
        cJSON_AddItemToArray(fails, failure_json(&v->failures[shown]));
        if (tool_json_size(r) > TEST_BUDGET && shown > 0) {
            cJSON_DeleteItemFromArray(fails, shown);
            break;
        }
    }
    if (shown < v->n_failures) {
        char msg[256];
        snprintf(msg, sizeof msg, "%d more failure(s) did not fit the %d KB answer: every "
                 "test with its whole message is in the details file.", v->n_failures - shown,
                 (int)(TEST_BUDGET / 1024));
        cJSON_AddNumberToObject(r, "failuresOmitted", v->n_failures - shown);
        cJSON_AddStringToObject(r, "truncated", msg);
    }
    return r;
}

static cJSON *progress_json(const struct testrun_view *v)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "elapsedMs", (double)v->elapsed_ms);
    cJSON_AddNumberToObject(p, "passed", v->passed);
    cJSON_AddNumberToObject(p, "failed", v->failed);
    cJSON_AddNumberToObject(p, "skipped", v->skipped);
    cJSON_AddStringToObject(p, "phase", phase_name(v->phase));
    if (v->current_test[0]) {
        cJSON_AddStringToObject(p, "currentTest", v->current_test);
        cJSON_AddNumberToObject(p, "currentTestElapsedMs", (double)v->current_elapsed_ms);
        if (v->current_baseline_ms >= 0)
            cJSON_AddNumberToObject(p, "currentTestBaselineMs",
                                    (double)v->current_baseline_ms);
    }
    cJSON *warnings = cJSON_AddArrayToObject(p, "warnings");
    for (int i = 0; i < v->n_warnings; i++) {
        cJSON *w = cJSON_CreateObject();
        if (v->warnings[i].test[0])
            cJSON_AddStringToObject(w, "testName", v->warnings[i].test);
        cJSON_AddNumberToObject(w, "idleMs", (double)v->warnings[i].idle_ms);
        cJSON_AddStringToObject(w, "diagnosis", v->warnings[i].diagnosis);
        cJSON_AddItemToArray(warnings, w);
    }
    return p;
}

static cJSON *status(const cJSON *args, struct strobe_error *e)
{
    const char *id = NULL;
    int64_t wait = TESTRUN_STATUS_WAIT_MS;
    if (args_string(args, "testRunId", true, &id, e) != 0 ||
        args_int(args, "waitMs", 0, TESTRUN_STATUS_WAIT_MS, &wait, NULL, e) != 0)
        return NULL;
    struct testrun_view v;
    if (testrun_status(id, (int)wait, &v, e) != 0)
        return NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "testRunId", v.id);
    cJSON_AddStringToObject(res, "status", v.state == TESTRUN_RUNNING ? "running"
                                                                       : "completed");
    if (v.session_id[0]) {
        cJSON_AddStringToObject(res, "sessionId", v.session_id);
        tool_add_pattern_status(res, v.session_id);
    }
    if (v.session_id[0] && v.state != TESTRUN_RUNNING) {
        char note[SESSION_ID_MAX * 2 + 200];
        snprintf(note, sizeof note, "The traced run's events stay in session %s: "
                 "debug_query({sessionId: \"%s\"}) reads them, debug_session({action: "
                 "\"stop\", sessionId}) deletes them.", v.session_id, v.session_id);
        cJSON_AddStringToObject(res, "sessionNote", note);
    }
    if (v.state == TESTRUN_RUNNING) {
        cJSON_AddItemToObject(res, "progress", progress_json(&v));
        cJSON_AddStringToObject(res, "next", "Still running: call status again (it waits "
                                "up to 15 s); no need to sleep.");
    } else {
        cJSON_AddItemToObject(res, "result", result_json(&v));
    }
    testrun_view_free(&v);
    return res;
}

cJSON *tool_debug_test(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    const char *action = NULL;
    if (args_only(args, "debug_test", run_fields, e) != 0 ||
        args_string(args, "action", false, &action, e) != 0)
        return NULL;
    if (!action || strcmp(action, "run") == 0) {
        if (cJSON_HasObjectItem(args, "testRunId") || cJSON_HasObjectItem(args, "waitMs")) {
            err_set(e, ERR_VALIDATION, "testRunId and waitMs go with action \"status\"; "
                    "action \"run\" starts a new run.");
            return NULL;
        }
        return run(args, e);
    }
    if (strcmp(action, "status") == 0)
        return status(args, e);
    err_set(e, ERR_VALIDATION, "'action' must be \"run\" or \"status\", not '%.64s'.", action);
    return NULL;
}

cJSON *tool_debug_test_status(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    static const char *const fields[] = {"testRunId", "waitMs", NULL};
    if (args_only(args, "debug_test_status", fields, e) != 0)
        return NULL;
    return status(args, e);
}
