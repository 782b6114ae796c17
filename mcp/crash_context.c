/*
 * crash_context.c - query-time context of crash events. See crash_context.h.
 */
#include "mcp/crash_context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/event.h"
#include "base/failure_text.h"
#include "base/strbuf.h"

/* The events of the session up to the crash's timestamp, latest `limit`. */
static int events_before(struct store_reader *rd, int64_t key, const struct store_event_row *row,
                         int type, int limit, struct store_result *res)
{
    struct store_query q = {
        .session_key = key, .event_type = type, .return_is_null = -1, .has_time_to = true,
        .time_to_ns = row->ts_ns, .limit = limit, .latest = true,
    };
    char *err = NULL;
    int rc = store_query_events(rd, &q, res, &err);
    free(err);
    return rc;
}

static cJSON *id_string(int64_t id)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", (long long)id);
    return cJSON_CreateString(buf);
}

/* One line of what led to the crash: enough to read the story without a second
 * query (the id gets the rest). */
static cJSON *brief(const struct store_event_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "id", id_string(r->id));
    cJSON_AddStringToObject(o, "eventType", event_type_name(r->type));
    if (r->function)
        cJSON_AddStringToObject(o, "function", r->function);
    if (r->text) {
        char cut[CRASH_CONTEXT_BRIEF_TEXT + 4];
        size_t n = strlen(r->text);
        snprintf(cut, sizeof cut, "%.*s%s", CRASH_CONTEXT_BRIEF_TEXT, r->text,
                 n > CRASH_CONTEXT_BRIEF_TEXT ? "..." : "");
        cJSON_AddStringToObject(o, "text", cut);
    }
    return o;
}

static void add_last_events(cJSON *ev, struct store_reader *rd, int64_t key,
                            const struct store_event_row *row)
{
    struct store_result res;
    if (events_before(rd, key, row, 0, CRASH_CONTEXT_LAST_EVENTS + 1, &res) != 0)
        return;
    cJSON *ids = cJSON_CreateArray(), *briefs = cJSON_CreateArray();
    int kept = 0;
    for (int i = res.n; i-- > 0 && kept < CRASH_CONTEXT_LAST_EVENTS;)
        if (res.rows[i].id != row->id) {
            cJSON_InsertItemInArray(ids, 0, id_string(res.rows[i].id));
            cJSON_InsertItemInArray(briefs, 0, brief(&res.rows[i]));
            kept++;
        }
    cJSON_AddItemToObject(ev, "lastEventIds", ids);
    cJSON_AddItemToObject(ev, "lastEvents", briefs);
    store_result_free(&res);
}

/* Which runtime account belongs to which kind of crash: an exception report next
 * to a segfault is somebody else's. */
static const char *account_for_kind(const char *kind)
{
    if (!kind)
        return NULL;
    if (strcmp(kind, "uncaught_exception") == 0)
        return "exception";
    if (strcmp(kind, "panic") == 0)
        return "panic";
    if (strcmp(kind, "sanitizer") == 0)
        return "sanitizer";
    return NULL;
}

static void add_runtime_account(cJSON *ev, struct store_reader *rd, int64_t key,
                                const struct store_event_row *row)
{
    const char *want = account_for_kind(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "kind")));
    if (!want || cJSON_GetObjectItem(ev, want))
        return;
    struct store_result res;
    if (events_before(rd, key, row, EV_STDERR, CRASH_CONTEXT_STDERR_LINES, &res) != 0)
        return;
    const char **lines = calloc((size_t)res.n + 1, sizeof *lines);
    for (int i = 0; lines && i < res.n; i++)
        lines[i] = res.rows[i].text ? res.rows[i].text : "";
    struct strbuf sb = {0};
    sb_puts(&sb, "{\"_\":0");
    if (lines)
        failure_scan_stderr(&sb, lines, (size_t)res.n);
    sb_puts(&sb, "}");
    cJSON *parsed = cJSON_Parse(sb.buf);
    cJSON *account = parsed ? cJSON_DetachItemFromObject(parsed, want) : NULL;
    size_t first, last;
    if (account && strcmp(want, "sanitizer") == 0 &&
        failure_sanitizer_span(lines, (size_t)res.n, &first, &last)) {
        cJSON *ids = cJSON_AddArrayToObject(account, "reportEventIds");
        cJSON_AddItemToArray(ids, id_string(res.rows[first].id));
        cJSON_AddItemToArray(ids, id_string(res.rows[last].id));
    }
    if (account)
        cJSON_AddItemToObject(ev, want, account);
    cJSON_Delete(parsed);
    sb_free(&sb);
    free(lines);
    store_result_free(&res);
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

void crash_context_add(cJSON *ev, struct store_reader *rd, int64_t session_key,
                       const struct store_event_row *row, bool verbose)
{
    add_last_events(ev, rd, session_key, row);
    add_runtime_account(ev, rd, session_key, row);
    if (!verbose)
        slim(ev);
}
