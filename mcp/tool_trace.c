/*
 * tool_trace.c - debug_trace. Pending mode (no sessionId) validates and stages
 * patterns. Function hooks are not built yet: runtime mode answers
 * NOT_IMPLEMENTED and pending mode says plainly that staged patterns produce no
 * events yet, so an agent never mistakes the staging for tracing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/patterns.h"
#include "core/session.h"
#include "mcp/args.h"
#include "mcp/tools.h"

static const char *const fields[] = {"sessionId", "add", "remove", "serializationDepth",
                                     "projectRoot", "watches", NULL};

cJSON *tool_debug_trace(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    const char *id = NULL, *root = NULL;
    const char **add = NULL, **remove = NULL;
    int n_add = 0, n_remove = 0;
    int64_t depth = 3;
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
        err_set(e, ERR_NOT_IMPLEMENTED, "watches are not built yet. Read output with "
                "debug_query meanwhile.");
        goto done;
    }
    if (id) {
        int64_t key;
        if (session_resolve(id, &key, e) != 0)
            goto done;
        err_set(e, ERR_NOT_IMPLEMENTED,
                "function tracing is not built into this Strobe yet; session '%s' records "
                "stdout, stderr and its exit. Read them with debug_query({sessionId: \"%s\", "
                "eventType: \"stderr\"}).", id, id);
        goto done;
    }
    for (int i = 0; i < n_add; i++)
        if (patterns_pending_add(add[i], e) != 0)
            goto done;
    for (int i = 0; i < n_remove; i++)
        patterns_pending_remove(remove[i]);

    static char list[PATTERNS_MAX][PATTERN_MAX_LEN];
    static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
    struct settings settings;
    sessions_settings(root, &settings);
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "mode", "pending");
    cJSON *active = cJSON_AddArrayToObject(out, "activePatterns");
    pthread_mutex_lock(&list_lock);
    int n = patterns_pending_list(list, PATTERNS_MAX);
    for (int i = 0; i < n && i < PATTERNS_MAX; i++)
        cJSON_AddItemToArray(active, cJSON_CreateString(list[i]));
    pthread_mutex_unlock(&list_lock);
    cJSON_AddNumberToObject(out, "hookedFunctions", 0);
    cJSON_AddArrayToObject(out, "activeWatches");
    cJSON *warnings = cJSON_AddArrayToObject(out, "warnings");
    for (int i = 0; i < settings.n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(settings.warnings[i]));
    cJSON_AddNumberToObject(out, "eventLimit", (double)settings.events_max_per_session);
    cJSON_AddStringToObject(out, "status",
                            "Patterns staged for the next debug_launch, but function tracing "
                            "is not built into this Strobe yet: they will not produce events. "
                            "Launch without patterns and read stdout/stderr with debug_query.");
done:
    free(add);
    free(remove);
    return out;
}
