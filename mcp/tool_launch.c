/*
 * tool_launch.c - debug_launch: validate, launch through core/session, answer with
 * the session id and the next step of the output-first workflow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/patterns.h"
#include "core/session.h"
#include "mcp/args.h"
#include "mcp/tools.h"

static const char *const fields[] = {"command", "args", "cwd", "projectRoot", "env",
                                     "tracePatterns", "breakpoints", "watches", NULL};

/* What this launch traces, breaks at and watches when it names any of them itself
 * (tracePatterns, breakpoints, watches): these, and none of the staged ones, which
 * stay staged. */
struct own_tracing {
    const char **patterns;
    int n_patterns;
    struct collector_breakpoint bps[DEBUG_ADD_MAX];
    int n_bps;
    struct tool_watches watches;
};

static int own_tracing_parse(const cJSON *args, struct own_tracing *o, struct strobe_error *e)
{
    if (args_strings(args, "tracePatterns", &o->patterns, &o->n_patterns, e) != 0)
        return -1;
    if (o->n_patterns > PATTERNS_MAX)
        return err_set(e, ERR_LIMIT_EXCEEDED, "'tracePatterns' holds %d patterns; at most %d.",
                       o->n_patterns, PATTERNS_MAX);
    for (int i = 0; i < o->n_patterns; i++)
        if (pattern_check(o->patterns[i], e) != 0)
            return -1;
    if (tool_breakpoints_given(args, o->bps, &o->n_bps, e) != 0)
        return -1;
    if (tool_watches_parse(args, &o->watches, e) != 0)
        return -1;
    if (o->watches.n_remove)
        return err_set(e, ERR_VALIDATION, "'watches.remove' has nothing to remove before the "
                       "launch; give watches.add only.");
    return 0;
}

static bool own_tracing_given(const cJSON *args)
{
    return cJSON_HasObjectItem(args, "tracePatterns") ||
           cJSON_HasObjectItem(args, "breakpoints") || cJSON_HasObjectItem(args, "watches");
}

/* A launch that named its own tracing says which staged items it left for later. */
static void add_staged_left(cJSON *out)
{
    static char names[PATTERNS_MAX][PATTERN_MAX_LEN];
    int n_patterns = patterns_pending_list(names, PATTERNS_MAX);
    struct collector_bp_info *infos = calloc(DEBUG_LIST_MAX, sizeof *infos);
    int n_bps = 0;
    if (infos)
        debug_breakpoints_list(NULL, infos, DEBUG_LIST_MAX, &n_bps, NULL);
    free(infos);
    if (!n_patterns && !n_bps)
        return;
    char note[256];
    snprintf(note, sizeof note, "This launch named its own tracing: %d staged pattern(s) and "
             "%d staged breakpoint(s) were not applied (they stay staged for launches "
             "without tracePatterns, breakpoints or watches).", n_patterns, n_bps);
    cJSON_AddStringToObject(out, "stagedNotApplied", note);
}

/* env {K: V} -> "K=V" strings (malloc'd array and strings). */
static int env_entries(const cJSON *env, char ***out, int *n, struct strobe_error *e)
{
    *out = NULL;
    *n = 0;
    if (!env)
        return 0;
    int count = cJSON_GetArraySize(env);
    char **arr = calloc((size_t)count + 1, sizeof *arr);
    if (!arr)
        return err_set(e, ERR_INTERNAL, "out of memory");
    int i = 0;
    for (const cJSON *v = env->child; v; v = v->next) {
        if (!cJSON_IsString(v) || !v->string[0] || strchr(v->string, '=')) {
            for (int j = 0; j < i; j++)
                free(arr[j]);
            free(arr);
            if (!cJSON_IsString(v))
                return err_set(e, ERR_VALIDATION, "'env.%s' must be a string, not %s.",
                               v->string, args_type_name(v));
            return err_set(e, ERR_VALIDATION, "'env' has an invalid variable name '%s'.",
                           v->string);
        }
        size_t len = strlen(v->string) + strlen(v->valuestring) + 2;
        arr[i] = malloc(len);
        if (arr[i])
            snprintf(arr[i], len, "%s=%s", v->string, v->valuestring);
        i++;
    }
    *out = arr;
    *n = i;
    return 0;
}

/* How each staged breakpoint bound: breakpoints [...] (a runtime's pending there
 * while no process runs it yet), and breakpointErrors [...] for those that bound
 * nowhere (dropped from the session, and so from the staged set: debug.h, one
 * breakpoint; the sentence says so). Returns how many that bound can stop the
 * program (logpoints never do). */
static int add_staged_breakpoints(cJSON *out, const char *id, bool own)
{
    int stoppers = 0;
    struct collector_bp_info *infos = calloc(DEBUG_LIST_MAX, sizeof *infos);
    int n = 0;
    struct strobe_error e = {0};
    if (!infos || debug_breakpoints_launched(id, infos, DEBUG_LIST_MAX, &n, &e) != 0) {
        if (e.code != ERR_NONE)
            cJSON_AddStringToObject(out, "breakpointsUnknown", e.msg);
        free(infos);
        return 0;
    }
    cJSON *ok = cJSON_AddArrayToObject(out, "breakpoints");
    cJSON *bad = NULL;
    for (int i = 0; i < n && i < DEBUG_LIST_MAX; i++) {
        if (infos[i].n_locations || infos[i].pending) {
            cJSON_AddItemToArray(ok, tool_breakpoint_json(&infos[i], false));
            stoppers += !infos[i].logpoint;
            continue;
        }
        if (!bad)
            bad = cJSON_AddArrayToObject(out, "breakpointErrors");
        cJSON *o = tool_breakpoint_json(&infos[i], true);
        cJSON_DeleteItemFromObject(o, "staged");
        char error[sizeof infos[i].note + 96];
        snprintf(error, sizeof error, own ? "%s Give it corrected to the next launch." :
                 "%s It is no longer staged: add it again, corrected, for the next launch.",
                 infos[i].note);
        cJSON_AddStringToObject(o, "error", error);
        cJSON_AddItemToArray(bad, o);
        int removed, n_removed;
        debug_breakpoints_remove(id, &infos[i].id, 1, false, &removed, &n_removed, NULL);
    }
    free(infos);
    return stoppers;
}

/* patterns: [{pattern, matched, armed, warning?}] for the staged patterns this launch
 * armed before main; returns what the collector said (malloc'd: its warnings go into
 * the answer's warnings), or NULL. */
static struct trace_result *staged_pattern_results(cJSON *out, const char *id)
{
    struct trace_result *r = malloc(sizeof *r);
    struct strobe_error e = {0};
    if (!r || session_trace_describe(id, r, &e) != 0) {
        free(r);
        return NULL;
    }
    tool_pattern_results(out, r);
    return r;
}

cJSON *tool_debug_launch(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    struct launch_request req = {0};
    const cJSON *env = NULL;
    const char **argv = NULL;
    if (args_only(args, "debug_launch", fields, e) != 0 ||
        args_string(args, "command", true, &req.command, e) != 0 ||
        args_string(args, "projectRoot", true, &req.project_root, e) != 0 ||
        args_string(args, "cwd", false, &req.cwd, e) != 0 ||
        args_object(args, "env", &env, e) != 0 ||
        args_strings(args, "args", &argv, &req.n_args, e) != 0)
        return NULL;
    req.args = argv;
    char **env_list = NULL;
    int n_env = 0;
    if (env_entries(env, &env_list, &n_env, e) != 0) {
        free(argv);
        return NULL;
    }
    req.env = (const char *const *)env_list;
    req.n_env = n_env;
    struct own_tracing *own = calloc(1, sizeof *own);
    int rc = own ? 0 : err_set(e, ERR_INTERNAL, "out of memory");
    if (rc == 0 && own_tracing_given(args)) {
        rc = own_tracing_parse(args, own, e);
        req.explicit_tracing = true;
        req.patterns = own->patterns;
        req.n_patterns = own->n_patterns;
        req.breakpoints = own->bps;
        req.n_breakpoints = own->n_bps;
        req.watches = own->watches.add;
        req.n_watches = own->watches.n_add;
    }

    struct launch_result res;
    if (rc == 0)
        rc = session_launch(&req, &res, e);
    if (own) {
        free(own->patterns);
        free(own->watches.remove);
    }
    free(own);
    free(argv);
    for (int i = 0; i < n_env; i++)
        free(env_list[i]);
    free(env_list);
    if (rc != 0)
        return NULL;

    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "sessionId", res.session_id);
    cJSON_AddNumberToObject(out, "pid", res.pid);
    struct trace_result *patterns = NULL;
    if (res.pending_applied) {
        cJSON_AddNumberToObject(out, req.explicit_tracing ? "patternsApplied"
                                                          : "pendingPatternsApplied",
                                res.pending_applied);
        patterns = staged_pattern_results(out, res.session_id);
    }
    if (req.explicit_tracing)
        add_staged_left(out);
    if (res.pending_watches)
        cJSON_AddNumberToObject(out, "pendingWatchesApplied", res.pending_watches);
    int stoppers = res.staged_breakpoints ?
                   add_staged_breakpoints(out, res.session_id, req.explicit_tracing) : 0;
    const char *whose = req.explicit_tracing ? "this launch's" : "the staged";
    char next[512];
    if (stoppers)
        snprintf(next, sizeof next, "The program runs with %s breakpoints armed: "
                 "debug_continue({sessionId: \"%s\", action: \"until\"}) waits for the first "
                 "stop (or answers with it at once) with the thread, its line and its locals.",
                 whose, res.session_id);
    else if (res.staged_breakpoints)
        snprintf(next, sizeof next, "The program runs with %s logpoints armed (they "
                 "never stop it): read their messages with debug_query({sessionId: \"%s\", "
                 "eventType: \"logpoint\"}), and check whether it ended with "
                 "debug_session({action: \"status\", sessionId: \"%s\"}).", whose,
                 res.session_id, res.session_id);
    else
        snprintf(next, sizeof next,
                 "The program is running and its output is being recorded. Read it first: "
                 "debug_query({sessionId: \"%s\", eventType: \"stderr\"}) and eventType "
                 "\"stdout\". Check whether it ended with debug_session({action: \"status\", "
                 "sessionId: \"%s\"}). Add traces with debug_trace only if output is not "
                 "enough.", res.session_id, res.session_id);
    cJSON_AddStringToObject(out, "nextSteps", next);
    int n_pattern_warnings = patterns ? patterns->n_warnings : 0;
    if (res.settings.n_warnings + res.n_warnings + n_pattern_warnings > 0 ||
        res.watch_warning[0]) {
        cJSON *w = cJSON_AddArrayToObject(out, "warnings");
        for (int i = 0; i < n_pattern_warnings; i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(patterns->warnings[i]));
        if (res.watch_warning[0])
            cJSON_AddItemToArray(w, cJSON_CreateString(res.watch_warning));
        for (int i = 0; i < res.n_warnings; i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(res.warnings[i]));
        for (int i = 0; i < res.settings.n_warnings; i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(res.settings.warnings[i]));
    }
    free(patterns);
    return out;
}
