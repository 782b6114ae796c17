/*
 * collector.c - the Python collector's slots (python.h).
 *
 * It launches nothing: the native collector runs every program and hands over each
 * process whose image exports Py_RunMain and PyRun_SimpleString (python_rule) when
 * it reaches Py_RunMain; adopt() then writes the agent's files, opens the process's
 * socket (link.c) and answers the loader text (loader.c) the process runs first.
 * From then on patterns and counts are commands on that socket, each answered
 * within COMMAND_MS or said to be late: an interpreter busy in native code with the
 * GIL held cannot answer, and the daemon never waits for it longer.
 *
 * Patterns are resolved by the agent from the project's source (ast): "matched" is
 * how many functions the source defines that a pattern selects, and they are all
 * armed (a function is traced at its first call; functions made at run time too).
 */
#include "python/python.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/patterns.h"
#include "python/python_internal.h"

#define NEAR_MAX 3

static const struct collector_adopt_rule python_rule = {
    .module_hint = "python",
    .needs = {"Py_RunMain", "PyRun_SimpleString"},
    .entry = "Py_RunMain",
    .call = "PyRun_SimpleString",
};

/* The start file, if the agent did not take it (it removes it as it reads it). */
static void forget_start_bps(struct collector_target *t)
{
    if (t->bps_path[0])
        unlink(t->bps_path);
    t->bps_path[0] = '\0';
}

static int python_adopt(const struct collector_adopt *req, struct collector_target **out,
                        char *buf, size_t cap, struct strobe_error *e)
{
    char dir[PATH_MAX];
    if (python_agent_install(req->state_dir, dir, sizeof dir, e) != 0)
        return -1;
    struct collector_target *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_INTERNAL, "out of memory adopting pid %d", (int)req->pid);
    t->pid = req->pid;
    t->t0_ns = req->sink.t0_ns;
    t->tuning = req->tuning;
    t->depth = req->depth > 0 ? req->depth : 3;
    for (int i = 0; i < req->n_patterns && i < PATTERNS_MAX; i++)
        snprintf(t->patterns[t->n_patterns++], PATTERN_MAX_LEN, "%s", req->patterns[i]);
    if (!(t->link = pylink_open(req->state_dir, req->pid, req->sink, req->paused,
                                req->paused_arg, e))) {
        free(t);
        return -1;
    }
    const char *list[PATTERNS_MAX];
    for (int i = 0; i < t->n_patterns; i++)
        list[i] = t->patterns[i];
    if (python_start_bps(pylink_socket(t->link), req->breakpoints, req->n_breakpoints,
                         t->bps_path, sizeof t->bps_path, e) != 0) {
        pylink_free(t->link);
        free(t);
        return -1;
    }
    struct python_start st = {
        .agent_dir = dir, .sock = pylink_socket(t->link), .token = pylink_token(t->link),
        .project_root = req->project_root, .patterns = list, .n_patterns = t->n_patterns,
        .depth = t->depth, .sample_after = t->tuning.sample_after,
        .hot_calls_per_second = t->tuning.hot_calls_per_second, .bps_file = t->bps_path,
    };
    if (python_loader(buf, cap, &st) != 0) {
        forget_start_bps(t);
        pylink_free(t->link);
        free(t);
        return err_set(e, ERR_INTERNAL, "the Python loader does not fit (too many patterns)");
    }
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return 0;
}

/* The warning of a pattern the source does not define: its near names. */
static void nothing_matched(struct pattern_result *r, const char *pattern_in, const cJSON *near)
{
    char pattern[PATTERN_MAX_LEN]; /* a copy: it and r may be one target's */
    snprintf(pattern, sizeof pattern, "%s", pattern_in);
    int n = snprintf(r->warning, sizeof r->warning,
                     "'%s' matches no Python function in the project's source", pattern);
    const cJSON *x;
    int k = 0;
    cJSON_ArrayForEach(x, near) {
        if (!cJSON_IsString(x) || k == NEAR_MAX || n >= (int)sizeof r->warning)
            break;
        n += snprintf(r->warning + n, sizeof r->warning - (size_t)n, "%s'%s'",
                      k++ ? ", " : " (nearest: ", x->valuestring);
    }
    if (k && n < (int)sizeof r->warning)
        snprintf(r->warning + n, sizeof r->warning - (size_t)n, ")");
}

/* Called with t->lock held: res from the patterns in force and the last answer. */
static void describe_locked(struct collector_target *t, struct trace_result *res)
{
    memset(res, 0, sizeof *res);
    res->n_patterns = t->n_patterns;
    res->depth = t->depth;
    char version[256], hooks[256], error[256];
    pylink_hello(t->link, version, hooks, error, sizeof version);
    for (int i = 0; i < t->n_patterns; i++) {
        snprintf(res->patterns[i], PATTERN_MAX_LEN, "%s", t->patterns[i]);
        res->per_pattern[i] = t->results[i];
        if (error[0]) /* the agent could not start: that is why nothing matches */
            snprintf(res->per_pattern[i].warning, sizeof res->per_pattern[i].warning,
                     "Python process %d: %.200s", (int)t->pid, error);
        res->matched += t->results[i].matched;
        res->hooked += t->results[i].armed;
        if (res->per_pattern[i].warning[0] && res->n_warnings < 8)
            memcpy(res->warnings[res->n_warnings++], res->per_pattern[i].warning,
                   sizeof res->warnings[0]);
    }
    if (error[0])
        snprintf(res->status, sizeof res->status, "Python process %d: %.200s", (int)t->pid,
                 error);
    else if (version[0] && t->n_patterns)
        snprintf(res->status, sizeof res->status, "Python %s process %d: %zu function(s) of "
                 "the source traced (%s).", version, (int)t->pid, res->hooked, hooks);
    else if (version[0])
        snprintf(res->status, sizeof res->status, "Python %s process %d: nothing traced.",
                 version, (int)t->pid);
}

/* The agent's answer to a pattern change, into t->results (t->lock held). */
static void take_results(struct collector_target *t, const cJSON *reply)
{
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(reply, "results"), *r;
    memset(t->results, 0, sizeof t->results);
    cJSON_ArrayForEach(r, results) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "pattern");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "matched");
        for (int i = 0; cJSON_IsString(p) && i < t->n_patterns; i++) {
            if (strcmp(t->patterns[i], p->valuestring) != 0)
                continue;
            struct pattern_result *out = &t->results[i];
            out->matched = out->armed = cJSON_IsNumber(m) ? (size_t)m->valuedouble : 0;
            if (!out->matched)
                nothing_matched(out, t->patterns[i],
                                cJSON_GetObjectItemCaseSensitive(r, "near"));
        }
    }
}

static int python_set_patterns(struct collector_target *t, const char *const *add, int n_add,
                               const char *const *remove, int n_remove, int depth,
                               struct trace_result *res, struct strobe_error *e)
{
    pthread_mutex_lock(&t->lock);
    for (int r = 0; r < n_remove; r++)
        for (int i = 0; i < t->n_patterns; i++)
            if (strcmp(t->patterns[i], remove[r]) == 0) {
                memmove(t->patterns[i], t->patterns[i + 1],
                        (size_t)(t->n_patterns - i - 1) * PATTERN_MAX_LEN);
                t->n_patterns--;
                break;
            }
    for (int a = 0; a < n_add && t->n_patterns < PATTERNS_MAX; a++) {
        bool have = false;
        for (int i = 0; i < t->n_patterns && !have; i++)
            have = strcmp(t->patterns[i], add[a]) == 0;
        if (!have)
            snprintf(t->patterns[t->n_patterns++], PATTERN_MAX_LEN, "%s", add[a]);
    }
    if (depth > 0)
        t->depth = depth;
    cJSON *msg = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(msg, "patterns");
    for (int i = 0; i < t->n_patterns; i++)
        cJSON_AddItemToArray(list, cJSON_CreateString(t->patterns[i]));
    cJSON_AddNumberToObject(msg, "depth", t->depth);
    cJSON *reply = pylink_command(t->link, "patterns", msg, COMMAND_MS, e);
    if (reply)
        take_results(t, reply);
    describe_locked(t, res);
    pthread_mutex_unlock(&t->lock);
    cJSON_Delete(reply);
    return reply ? 0 : -1;
}

static void python_describe(struct collector_target *t, struct trace_result *res)
{
    pthread_mutex_lock(&t->lock);
    describe_locked(t, res);
    pthread_mutex_unlock(&t->lock);
}

static int python_counts(struct collector_target *t, struct collector_counts *out)
{
    memset(out, 0, sizeof *out);
    cJSON *counts = pylink_final_counts(t->link), *reply = NULL;
    bool final = counts != NULL;
    if (!counts) {
        struct strobe_error e;
        reply = pylink_command(t->link, "counts", NULL, COMMAND_MS, &e);
        counts = reply ? cJSON_DetachItemFromObjectCaseSensitive(reply, "counts") : NULL;
        cJSON_Delete(reply);
        if (!counts)
            return -1;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, counts) {
        if (out->n == COUNTS_MAX)
            break;
        struct collector_fn_count *f = &out->fns[out->n++];
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        snprintf(f->function, sizeof f->function, "%s",
                 cJSON_IsString(fn) ? fn->valuestring : "?");
        f->calls = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "calls"));
        f->recorded =
            (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "recorded"));
        f->sampled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "sampled"));
        double since = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "sampledSince"));
        f->sampled_since_ns = f->sampled ? (int64_t)since - t->t0_ns : 0;
        f->exact = true;
        snprintf(f->mode, sizeof f->mode, "python");
    }
    out->final = final;
    cJSON_Delete(counts);
    return 0;
}

static char *dup_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

static int num(const cJSON *o, const char *k)
{
    return (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* One thread of the agent's "stacks" answer (python/agent/_strobe_agent/stacks.py). */
static void take_thread(struct collector_target *t, const cJSON *j, struct collector_thread *th)
{
    th->tid = num(j, "tid");
    th->pid = t->pid;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    snprintf(th->name, sizeof th->name, "%s", cJSON_IsString(name) ? name->valuestring : "?");
    /* paused at a breakpoint or step (the agent holds it), else the native stacks tell */
    snprintf(th->state, sizeof th->state, "%s",
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "paused")) ? "paused" : "unknown");
    th->syscall_nr = -1;
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(j, "frames"), *f;
    int n = cJSON_GetArraySize(frames);
    th->frames = calloc(n > 0 ? (size_t)n : 1, sizeof *th->frames);
    cJSON_ArrayForEach(f, frames) {
        if (!th->frames || th->n_frames == STACKS_MAX_FRAMES)
            break;
        struct collector_frame *cf = &th->frames[th->n_frames++];
        cf->function = dup_str(f, "function");
        cf->file = dup_str(f, "file");
        cf->line = num(f, "line");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
        cf->arguments = args ? cJSON_PrintUnformatted(args) : NULL;
    }
    th->omitted_frames = (size_t)n > th->n_frames ? (size_t)n - th->n_frames : 0;
    th->agent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "agent"));
    th->own_frame = num(j, "ownFrame");
    if (th->own_frame >= (int)th->n_frames)
        th->own_frame = -1;
    const cJSON *locals = cJSON_GetObjectItemCaseSensitive(j, "locals");
    th->locals = locals ? cJSON_PrintUnformatted(locals) : NULL;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "wait");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(w, "kind");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "lock") == 0) {
        th->wait = WAIT_MUTEX; /* a threading.Lock, by its id() */
        th->wait_address = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(w, "id"));
        th->wait_variable = dup_str(w, "variable");
        th->wait_owner = num(w, "owner");
    }
}

static int python_stacks(struct collector_target *t, const struct collector_stacks_request *req,
                         struct collector_stacks *out, struct strobe_error *e)
{
    *out = (struct collector_stacks){0};
    if (req->pid && req->pid != t->pid)
        return 0;
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddBoolToObject(msg, "locals", req->locals);
    cJSON_AddBoolToObject(msg, "arguments", req->arguments);
    cJSON *reply = pylink_command(t->link, "stacks", msg, COMMAND_MS, e);
    if (!reply)
        return -1;
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(reply, "threads"), *j;
    int n = cJSON_GetArraySize(threads);
    out->threads = calloc(n > 0 ? (size_t)n : 1, sizeof *out->threads);
    cJSON_ArrayForEach(j, threads) {
        if (!out->threads)
            break;
        bool asked = req->n_tids == 0;
        for (int k = 0; k < req->n_tids && !asked; k++)
            asked = req->tids[k] == num(j, "tid");
        if (asked)
            take_thread(t, j, &out->threads[out->n_threads++]);
    }
    cJSON_Delete(reply);
    return 0;
}

static void python_kill(struct collector_target *t)
{
    pylink_shutdown(t->link);
}

static bool python_finished(struct collector_target *t)
{
    return pylink_closed(t->link);
}

static void python_join(struct collector_target *t)
{
    forget_start_bps(t);
    pylink_free(t->link);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* PyPy runs Python too, but not through CPython's API the agent needs: said at the
 * launch, so that a Python pattern matching nothing is not a mystery. */
static void python_notice(const char *path, struct collector_probe *out)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (strncmp(base, "pypy", 4) != 0 ||
        out->n_warnings == (int)(sizeof out->warnings / sizeof out->warnings[0]))
        return;
    snprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0],
             "%.200s is PyPy, not CPython: Strobe debugs Python code in CPython 3.9 or newer "
             "(its functions, breakpoints, stacks); under PyPy the output is captured and the "
             "native code traced only. Run it with python3 to debug its Python code.", path);
}

/* CPython's own C functions: its API and internals are named Py* and _Py*. */
static const char *const python_native_prefixes[] = {"Py", "_Py", NULL};

const struct collector_methods python_collector = {
    .name = "python",
    .language = "Python (CPython 3.9 or newer)",
    .adopt_rule = &python_rule,
    .adopt = python_adopt,
    .set_patterns = python_set_patterns,
    .describe = python_describe,
    .kill = python_kill,
    .finished = python_finished,
    .join = python_join,
    .counts = python_counts,
    .stacks = python_stacks,
    .source_suffix = ".py",
    .notice = python_notice,
    .native_prefixes = python_native_prefixes,
    .breakpoint_set = python_breakpoint_set,
    .breakpoint_clear = python_breakpoint_clear,
    .breakpoint_list = python_breakpoint_list,
    .pauses = python_pauses,
    .pause = python_pause,
    .resume = python_resume,
    .evaluate = python_evaluate,
    .memory = python_memory,
};
