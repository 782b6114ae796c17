/*
 * tool_watch.c - debug_memory actions "watch" and "unwatch": hardware data
 * watchpoints (core/watch.h), and how a watch_hit event reads in debug_query.
 *
 * watch: {variable | address (+ size, type), access?, pid?} -> the watch (id, label,
 * address, size, type, access, currentValue) and every watch now active; each hit
 * becomes a watch_hit event. unwatch: {watchId | "*"} -> what went, what remains.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/watch.h"
#include "mcp/args.h"
#include "mcp/mem_targets.h"
#include "mcp/tools.h"

static void add_hex(cJSON *o, const char *name, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    cJSON_AddStringToObject(o, name, buf);
}

static void add_value(cJSON *o, const char *name, const char *json)
{
    cJSON *v = json && json[0] ? cJSON_Parse(json) : NULL;
    cJSON_AddItemToObject(o, name, v ? v : cJSON_CreateNull());
}

/* One watch as listed: short, since up to four are shown with every answer. */
static cJSON *watch_row(const struct collector_watch_info *w, bool full)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "watchId", w->id);
    cJSON_AddStringToObject(o, "label", w->label);
    if (full) {
        add_hex(o, "address", w->address);
        cJSON_AddNumberToObject(o, "size", (double)w->size);
        cJSON_AddStringToObject(o, "type", w->type);
    }
    cJSON_AddStringToObject(o, "access", w->readwrite ? "readwrite" : "write");
    cJSON_AddNumberToObject(o, "pid", w->pid);
    cJSON_AddNumberToObject(o, "hits", (double)w->hits);
    if (w->ended) {
        cJSON_AddStringToObject(o, "state", "ended");
        cJSON_AddStringToObject(o, "endedBecause", w->ended_reason);
    }
    return o;
}

/* activeWatches (and endedWatches when there are any) of session id into o. */
static void add_lists(cJSON *o, const char *id)
{
    struct collector_watch_info all[WATCH_LIST_MAX];
    int n = 0;
    if (session_watch_list(id, all, WATCH_LIST_MAX, &n, NULL) != 0)
        n = 0;
    cJSON *active = cJSON_AddArrayToObject(o, "activeWatches");
    cJSON *ended = NULL;
    for (int i = 0; i < n; i++) {
        if (!all[i].ended) {
            cJSON_AddItemToArray(active, watch_row(&all[i], false));
            continue;
        }
        if (!ended)
            ended = cJSON_CreateArray();
        cJSON_AddItemToArray(ended, watch_row(&all[i], false));
    }
    if (ended)
        cJSON_AddItemToObject(o, "endedWatches", ended);
}

cJSON *tool_memory_watch(const cJSON *args, const char *id, struct strobe_error *e)
{
    const char *variable = NULL, *address = NULL, *type = NULL, *access = "write";
    int64_t size = 0, pid = 0;
    bool has_size = false, has_pid = false;
    if (args_string(args, "variable", false, &variable, e) != 0 ||
        args_string(args, "address", false, &address, e) != 0 ||
        args_string(args, "type", false, &type, e) != 0 ||
        args_string(args, "access", false, &access, e) != 0 ||
        args_int(args, "size", 1, 1 << 20, &size, &has_size, e) != 0 ||
        args_int(args, "pid", 1, INT32_MAX, &pid, &has_pid, e) != 0)
        return NULL;
    if (cJSON_HasObjectItem(args, "targets") || cJSON_HasObjectItem(args, "poll") ||
        cJSON_HasObjectItem(args, "watchId")) {
        err_set(e, ERR_VALIDATION, "action \"watch\" takes variable or address (with size, "
                "type, access, pid); targets, poll and watchId belong to other actions.");
        return NULL;
    }
    if (!!variable == !!address) {
        err_set(e, ERR_VALIDATION, "action \"watch\" needs exactly one of 'variable' (\"cfg."
                "max_retries\") or 'address' (\"0x...\" with size or type).");
        return NULL;
    }
    if (variable && strlen(variable) > MEMORY_EXPR_MAX) {
        err_set(e, ERR_VALIDATION, "'variable' is longer than %d characters.",
                MEMORY_EXPR_MAX);
        return NULL;
    }
    if (!access)
        access = "write";
    bool readwrite;
    if (strcmp(access, "write") == 0)
        readwrite = false;
    else if (strcmp(access, "readwrite") == 0)
        readwrite = true;
    else {
        err_set(e, ERR_VALIDATION, "'access' must be \"write\" or \"readwrite\" (x86 debug "
                "registers cannot watch reads alone); not '%s'.", access);
        return NULL;
    }
    struct collector_watch_request req = {.pid = (pid_t)pid, .variable = variable,
                                          .size = (size_t)size, .readwrite = readwrite};
    if (address && !mem_parse_address(address, &req.address)) {
        err_set(e, ERR_VALIDATION, "'address' must be a non-zero address in hex like "
                "\"0x5581a2c04010\"; not '%.64s'.", address);
        return NULL;
    }
    if (type) {
        int h = memory_hint_parse(type);
        if (h < 0 || h == MEMH_BYTES) {
            err_set(e, ERR_VALIDATION, "'type' must be one of i8, u8, i16, u16, i32, u32, "
                    "i64, u64, f32, f64, pointer; not '%s'.", type);
            return NULL;
        }
        if (variable) {
            err_set(e, ERR_VALIDATION, "'type' is for address watches; a variable is shown "
                    "by its own type.");
            return NULL;
        }
        req.hint = (enum memory_hint)h;
    }
    struct collector_watch_info w;
    if (session_watch_set(id, &req, &w, e) != 0) {
        if (variable && (e->code == ERR_VARIABLE_NOT_FOUND || e->code == ERR_BAD_EXPRESSION)) {
            /* a paused frame's name: its address is one read away */
            size_t len = strlen(e->msg);
            snprintf(e->msg + len, sizeof e->msg - len, " A watch names globals and statics; "
                     "for a paused frame's local or member, read it with debug_memory({"
                     "sessionId, threadId, targets: [{variable}]}) and watch the address "
                     "the answer gives (address, size).");
        }
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "watchId", w.id);
    cJSON_AddStringToObject(o, "label", w.label);
    add_hex(o, "address", w.address);
    cJSON_AddNumberToObject(o, "size", (double)w.size);
    cJSON_AddStringToObject(o, "type", w.type);
    cJSON_AddStringToObject(o, "access", w.readwrite ? "readwrite" : "write");
    cJSON_AddNumberToObject(o, "pid", w.pid);
    add_value(o, "currentValue", w.value);
    add_lists(o, id);
    char hint[768];
    snprintf(hint, sizeof hint, "The program runs on; every %s of %s records a watch_hit "
             "event (old and new value, the thread, the writing function and line). Read "
             "them with debug_query({sessionId: \"%s\", eventType: \"watch_hit\"}).",
             w.readwrite ? "read or write" : "write", w.label, id);
    cJSON_AddStringToObject(o, "hint", hint);
    return o;
}

cJSON *tool_memory_unwatch(const cJSON *args, const char *id, struct strobe_error *e)
{
    const cJSON *wid = cJSON_GetObjectItemCaseSensitive(args, "watchId");
    int watch_id = -1;
    if (cJSON_IsString(wid) && strcmp(wid->valuestring, "*") == 0)
        watch_id = 0;
    else if (cJSON_IsNumber(wid) && wid->valuedouble >= 1 && wid->valuedouble <= INT32_MAX &&
             wid->valuedouble == (double)(int)wid->valuedouble)
        watch_id = (int)wid->valuedouble;
    else if (cJSON_IsString(wid)) {
        char *end = NULL;
        long v = strtol(wid->valuestring, &end, 10);
        if (wid->valuestring[0] && end && !*end && v >= 1 && v <= INT32_MAX)
            watch_id = (int)v;
    }
    if (watch_id < 0) {
        err_set(e, ERR_VALIDATION, "action \"unwatch\" needs 'watchId': the id a watch "
                "returned, or \"*\" for all.");
        return NULL;
    }
    struct collector_watch_info removed[WATCH_LIST_MAX];
    int n = 0;
    if (session_watch_clear(id, watch_id, removed, WATCH_LIST_MAX, &n, e) != 0)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "removed");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, watch_row(&removed[i], false));
    add_lists(o, id);
    return o;
}

void tool_watch_hit_shape(cJSON *ev, int tid, bool verbose)
{
    if (verbose)
        return;
    cJSON_AddNumberToObject(ev, "threadId", tid); /* which thread wrote: always shown */
    /* Summary: label, old -> new, where (function, sourceFile, line); the stack and
     * the raw facts are verbose's. */
    static const char *const verbose_only[] = {"frames", "ownFrame", "address", "size",
                                               "hits"};
    for (size_t i = 0; i < sizeof verbose_only / sizeof *verbose_only; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(ev, verbose_only[i]);
}
