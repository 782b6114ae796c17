/*
 * crash_payload.c - the crash event's read forms. The schema, and why its writer
 * lives in ptrace/tracer/crash.c, are in crash_payload.h.
 */
#include "core/crash_payload.h"

#include <stdio.h>
#include <string.h>

#include "base/event.h"

/* Which runtime account belongs to which kind of crash. */
static const char *const accounts[][2] = {
    {"uncaught_exception", "exception"},
    {"panic", "panic"},
    {"sanitizer", "sanitizer"},
    {"signal", "python"}, /* a native crash in a Python process: its Python stack */
};

const char *crash_payload_account_wanted(const char *data_json)
{
    cJSON *data = cJSON_Parse(data_json);
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "kind"));
    const char *want = NULL;
    for (size_t i = 0; kind && i < sizeof accounts / sizeof *accounts; i++)
        if (strcmp(kind, accounts[i][0]) == 0)
            want = accounts[i][1];
    if (want && cJSON_HasObjectItem(data, want))
        want = NULL;
    cJSON_Delete(data);
    return want;
}

static cJSON *id_string(int64_t id)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", (long long)id);
    return cJSON_CreateString(buf);
}

/* One line of what led to the crash: enough to read the story without a second
 * query (the id gets the rest). */
static cJSON *brief(const struct timeline_event *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "id", id_string(r->id));
    cJSON_AddStringToObject(o, "eventType", event_type_name(r->type));
    if (r->function)
        cJSON_AddStringToObject(o, "function", r->function);
    if (r->text) {
        char cut[CRASH_BRIEF_TEXT + 4];
        size_t n = strlen(r->text);
        snprintf(cut, sizeof cut, "%.*s%s", CRASH_BRIEF_TEXT, r->text,
                 n > CRASH_BRIEF_TEXT ? "..." : "");
        cJSON_AddStringToObject(o, "text", cut);
    }
    return o;
}

static void add_context(cJSON *ev, const struct timeline_crash_context *ctx)
{
    if (ctx->has_before) {
        cJSON *ids = cJSON_AddArrayToObject(ev, "lastEventIds");
        cJSON *briefs = cJSON_AddArrayToObject(ev, "lastEvents");
        for (int i = 0; i < ctx->before.n; i++) {
            cJSON_AddItemToArray(ids, id_string(ctx->before.events[i].id));
            cJSON_AddItemToArray(briefs, brief(&ctx->before.events[i]));
        }
    }
    cJSON *account = ctx->account_json ? cJSON_Parse(ctx->account_json) : NULL;
    if (!account)
        return;
    if (ctx->report_first_id) {
        cJSON *ids = cJSON_AddArrayToObject(account, "reportEventIds");
        cJSON_AddItemToArray(ids, id_string(ctx->report_first_id));
        cJSON_AddItemToArray(ids, id_string(ctx->report_last_id));
    }
    cJSON_AddItemToObject(ev, ctx->account_name, account);
}

static void slim(cJSON *ev)
{
    cJSON_DeleteItemFromObject(ev, "registers");
    cJSON *frames = cJSON_GetObjectItem(ev, "frames");
    for (cJSON *f = frames ? frames->child : NULL; f; f = f->next) {
        cJSON_DeleteItemFromObject(f, "pc");
        /* Without a function name, the module and the address in it are all there
         * is to say. */
        if (cJSON_IsString(cJSON_GetObjectItem(f, "function")))
            cJSON_DeleteItemFromObject(f, "module");
    }
}

void crash_payload_shape(cJSON *ev, const struct timeline_event *row,
                         const struct timeline_crash_context *ctx, bool verbose)
{
    /* The crashing frame, and where: crash events always say which process and,
     * in summary too, which thread. */
    if (row->function && !cJSON_HasObjectItem(ev, "function"))
        cJSON_AddStringToObject(ev, "function", row->function);
    if (row->source_file && !cJSON_HasObjectItem(ev, "sourceFile"))
        cJSON_AddStringToObject(ev, "sourceFile", row->source_file);
    if (row->line && !cJSON_HasObjectItem(ev, "line"))
        cJSON_AddNumberToObject(ev, "line", row->line);
    if (!cJSON_HasObjectItem(ev, "pid"))
        cJSON_AddNumberToObject(ev, "pid", row->pid);
    if (!cJSON_HasObjectItem(ev, "threadId"))
        cJSON_AddNumberToObject(ev, "threadId", row->tid);
    if (ctx)
        add_context(ev, ctx);
    if (!verbose)
        slim(ev);
}
