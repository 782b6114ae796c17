/*
 * tool_trace.c - debug_trace. Runtime mode (sessionId) changes the running
 * program's hooks through core/session, whose status states what was hooked (the
 * query hint is ours, mcp/hints.h); pending mode stages patterns that the next
 * debug_launch arms before the program's main runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/patterns.h"
#include "core/session.h"
#include "mcp/args.h"
#include "mcp/hints.h"
#include "mcp/tools.h"

static const char *const fields[] = {"sessionId", "add", "remove", "serializationDepth",
                                     "projectRoot", "watches", NULL};

static cJSON *strings(cJSON *parent, const char *name, const char (*list)[PATTERN_MAX_LEN],
                      int n)
{
    cJSON *arr = cJSON_AddArrayToObject(parent, name);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(list[i]));
    return arr;
}

static cJSON *answer(const char *mode, const struct trace_result *r,
                     const struct settings *settings)
{
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "mode", mode);
    strings(out, "activePatterns", r->patterns, r->n_patterns);
    cJSON_AddNumberToObject(out, "hookedFunctions", (double)r->hooked);
    cJSON_AddNumberToObject(out, "matchedFunctions", (double)r->matched);
    cJSON_AddArrayToObject(out, "activeWatches");
    cJSON *warnings = cJSON_AddArrayToObject(out, "warnings");
    for (int i = 0; i < r->n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(r->warnings[i]));
    for (int i = 0; i < settings->n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(settings->warnings[i]));
    cJSON_AddNumberToObject(out, "eventLimit", (double)settings->events_max_per_session);
    cJSON_AddNumberToObject(out, "serializationDepth", r->depth);
    cJSON_AddStringToObject(out, "status", r->status);
    if (r->n_sampled) {
        cJSON *s = cJSON_AddArrayToObject(out, "sampling");
        for (size_t i = 0; i < r->n_sampled; i++)
            cJSON_AddItemToArray(s, cJSON_CreateString(r->sampled[i]));
    }
    return out;
}

static cJSON *pending_mode(const char **add, int n_add, const char **remove, int n_remove,
                           int depth, const struct settings *settings, struct strobe_error *e)
{
    for (int i = 0; i < n_add; i++)
        if (patterns_pending_add(add[i], e) != 0)
            return NULL;
    for (int i = 0; i < n_remove; i++)
        patterns_pending_remove(remove[i]);
    if (depth)
        patterns_pending_set_depth(depth);
    static struct trace_result r; /* large: kept off the stack, guarded below */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    memset(&r, 0, sizeof r);
    r.n_patterns = patterns_pending_list(r.patterns, PATTERNS_MAX);
    if (r.n_patterns > PATTERNS_MAX)
        r.n_patterns = PATTERNS_MAX;
    r.depth = patterns_pending_depth();
    snprintf(r.status, sizeof r.status,
             "%d pattern(s) staged: the next debug_launch arms them before the program's "
             "main runs. Recommended instead: launch without patterns, read stderr/stdout "
             "with debug_query, then add patterns to the running session.", r.n_patterns);
    cJSON *out = answer("pending", &r, settings);
    pthread_mutex_unlock(&lock);
    return out;
}

cJSON *tool_debug_trace(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    const char *id = NULL, *root = NULL;
    const char **add = NULL, **remove = NULL;
    int n_add = 0, n_remove = 0;
    int64_t depth = 0;
    cJSON *out = NULL;
    if (args_only(args, "debug_trace", fields, e) != 0 ||
        args_string(args, "sessionId", false, &id, e) != 0 ||
        args_string(args, "projectRoot", false, &root, e) != 0 ||
        args_int(args, "serializationDepth", 1, 10, &depth, NULL, e) != 0 ||
        args_strings(args, "add", &add, &n_add, e) != 0 ||
        args_strings(args, "remove", &remove, &n_remove, e) != 0)
        goto done;
    for (int i = 0; i < n_add; i++)
        if (pattern_check(add[i], e) != 0)
            goto done;
    if (cJSON_HasObjectItem(args, "watches")) {
        err_set(e, ERR_NOT_IMPLEMENTED, "watches are not built yet. Trace the functions that "
                "change the variable and read their arguments meanwhile.");
        goto done;
    }
    struct settings settings;
    sessions_settings(root, &settings);
    if (!id) {
        out = pending_mode(add, n_add, remove, n_remove, (int)depth, &settings, e);
        goto done;
    }
    struct trace_result *r = malloc(sizeof *r);
    if (!r) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto done;
    }
    if (session_trace(id, add, n_add, remove, n_remove, (int)depth, r, e) == 0) {
        const char *hint = hint_trace_status(r);
        size_t len = strlen(r->status);
        if (hint)
            snprintf(r->status + len, sizeof r->status - len, " %s", hint);
        out = answer("runtime", r, &settings);
    }
    free(r);
done:
    free(add);
    free(remove);
    return out;
}
