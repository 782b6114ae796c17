/*
 * tool_query.c - debug_query: filters in, a page of the timeline out.
 *
 * Token budget: the consumer is an LLM, so the answer is bounded twice: by limit
 * (default 50, max 500) and by size (answers.maxBytes, mcp/budget.h: the events get
 * four fifths of it, the rest is kept for the answer's other members). Output lines are cut
 * at 500 characters in summary mode. When either cut applies the answer says so and
 * how to get the rest (offset, afterEventId, verbose). A single event larger than the
 * budget is cut by the server's last step (budget.c), which says what it cut.
 *
 * The engine reads (core/timeline.h) and owns the crash event's shape
 * (core/crash_payload.h); the event filter is parsed by mcp/query_filter.h (shared
 * with the tools that wait for an event); this file validates paging, runs the
 * query and shapes the answer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "core/crash_payload.h"
#include "core/session.h"
#include "core/timeline.h"
#include "mcp/args.h"
#include "mcp/budget.h"
#include "mcp/query_filter.h"
#include "mcp/tools.h"

/* The share of the budget kept for the answer's other members (totalCount, notes,
 * openCalls, evicted): a fifth. */
#define ANSWER_RESERVE(budget) ((budget) / 5)
#define SUMMARY_TEXT_MAX 500
#define EVICTED_SHOWN 10 /* functions listed in evicted; the note counts them all */

/* debug_query's own fields; the rest are the event filter (mcp/query_filter.h). */
static const char *const paging_fields[] = {"sessionId", "limit", "offset", "verbose",
                                            "afterEventId", NULL};

/* An event id: an integer from 0 to 2^53 (exact in JSON), or a string of 1 to 19
 * digits within int64; nothing else (no blanks, signs or fractions). */
static int event_id_arg(const cJSON *v, int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d != floor(d) || d < 0 || d > 9007199254740992.0)
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    if (!cJSON_IsString(v))
        return -1;
    const char *s = v->valuestring;
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 19 || s[n] != '\0')
        return -1;
    errno = 0;
    long long id = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *out = id;
    return 0;
}

static const char *return_type(const char *json)
{
    if (!json)
        return "void";
    cJSON *v = cJSON_Parse(json);
    const char *t = !v ? "unknown" : cJSON_IsNull(v) ? "null" : cJSON_IsBool(v) ? "bool"
                  : cJSON_IsNumber(v) ? "number" : cJSON_IsString(v) ? "string"
                  : cJSON_IsArray(v) ? "array" : "object";
    cJSON_Delete(v);
    return t;
}

static void add_json_text(cJSON *o, const char *name, const char *json)
{
    cJSON *v = json ? cJSON_Parse(json) : NULL;
    cJSON_AddItemToObject(o, name, v ? v : cJSON_CreateNull());
}

static void add_text(cJSON *o, const char *text, bool verbose)
{
    size_t len = strlen(text);
    if (verbose || len <= SUMMARY_TEXT_MAX) {
        cJSON_AddStringToObject(o, "text", text);
        return;
    }
    size_t cut = SUMMARY_TEXT_MAX;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--; /* never split a UTF-8 sequence */
    char *s = malloc(cut + 1);
    if (!s)
        return;
    memcpy(s, text, cut);
    s[cut] = '\0';
    cJSON_AddStringToObject(o, "text", s);
    cJSON_AddNumberToObject(o, "textBytes", (double)len);
    cJSON_AddTrueToObject(o, "textTruncated");
    free(s);
}

/* Members of a function event's data shown only in verbose answers. */
static bool verbose_only_member(const char *name)
{
    return strcmp(name, "watchValues") == 0 || strcmp(name, "callSite") == 0 ||
           strcmp(name, "caller") == 0;
}

/* The event as debug_query shows it: the columns its type has, then its data
 * members as fields of its own. Crash events are completed by crash_payload.h. */
static cJSON *event_json(const struct timeline_event *r, bool verbose, bool multi_pid)
{
    cJSON *o = cJSON_CreateObject();
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)r->id);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddNumberToObject(o, "timestampNs", (double)r->ts_ns);
    cJSON_AddStringToObject(o, "eventType", event_type_name(r->type));
    bool function_event = r->type == EV_FUNCTION_ENTER || r->type == EV_FUNCTION_EXIT;
    if (function_event) {
        cJSON_AddStringToObject(o, "function", r->function ? r->function : "");
        if (r->source_file)
            cJSON_AddStringToObject(o, "sourceFile", r->source_file);
        if (r->line)
            cJSON_AddNumberToObject(o, "line", r->line);
        if (r->duration_ns >= 0)
            cJSON_AddNumberToObject(o, "durationNs", (double)r->duration_ns);
        if (r->type == EV_FUNCTION_EXIT)
            cJSON_AddStringToObject(o, "returnType", return_type(r->return_value));
    }
    if (r->type == EV_WATCH_HIT && r->function) {
        cJSON_AddStringToObject(o, "function", r->function);
        if (r->source_file)
            cJSON_AddStringToObject(o, "sourceFile", r->source_file);
        if (r->line)
            cJSON_AddNumberToObject(o, "line", r->line);
    }
    if (multi_pid || verbose || r->type == EV_PROCESS_EXIT)
        cJSON_AddNumberToObject(o, "pid", r->pid);
    /* A snapshot's text repeats its values in one line: verbose only. */
    if (r->text && (verbose || r->type != EV_VARIABLE_SNAPSHOT))
        add_text(o, r->text, verbose);
    if (r->data) {
        /* Type-specific extras (exit code, signal, a snapshot's values, ...) read as
         * fields of the event; a call's watchValues (spec 003) and call site are
         * verbose. */
        cJSON *d = cJSON_Parse(r->data);
        for (cJSON *f = d ? d->child : NULL; f;) {
            cJSON *next = f->next;
            if (verbose || !function_event || !verbose_only_member(f->string))
                cJSON_AddItemToObject(o, f->string, cJSON_DetachItemViaPointer(d, f));
            f = next;
        }
        cJSON_Delete(d);
    }
    if (verbose) {
        if (r->function_raw)
            cJSON_AddStringToObject(o, "functionRaw", r->function_raw);
        cJSON_AddNumberToObject(o, "threadId", r->tid);
        if (r->thread_name)
            cJSON_AddStringToObject(o, "threadName", r->thread_name);
        if (r->parent_id) {
            char pid[24];
            snprintf(pid, sizeof pid, "%lld", (long long)r->parent_id);
            cJSON_AddStringToObject(o, "parentEventId", pid);
        }
        if (function_event) {
            add_json_text(o, "arguments", r->arguments);
            add_json_text(o, "returnValue", r->return_value);
            cJSON_AddBoolToObject(o, "sampled", r->sampled);
        }
    }
    return o;
}

/* debug_query's shape of a logpoint or pause event (ev from its generic form, whose
 * data already gave breakpointId, file, line, function and, for pause, reason): the
 * thread is always shown (which thread logged or stopped), and where it was is taken
 * from the event's columns when its data did not say. */
static void stop_event_shape(cJSON *ev, const struct timeline_event *r)
{
    if (!cJSON_HasObjectItem(ev, "threadId"))
        cJSON_AddNumberToObject(ev, "threadId", r->tid);
    if (!cJSON_HasObjectItem(ev, "file") && r->source_file)
        cJSON_AddStringToObject(ev, "file", r->source_file);
    if (!cJSON_HasObjectItem(ev, "line") && r->line)
        cJSON_AddNumberToObject(ev, "line", r->line);
    if (!cJSON_HasObjectItem(ev, "function") && r->function)
        cJSON_AddStringToObject(ev, "function", r->function);
}

cJSON *tool_event_json(const struct timeline_event *r, bool verbose)
{
    cJSON *ev = event_json(r, verbose, false);
    if (r->type == EV_WATCH_HIT)
        tool_watch_hit_shape(ev, r->tid, verbose);
    if (r->type == EV_LOGPOINT || r->type == EV_PAUSE)
        stop_event_shape(ev, r);
    return ev;
}

/* An openCalls answer: each call names its thread, and openCalls groups them per
 * thread, outermost first and innermost last (the chain of traced callers down to
 * where the thread is now). When the session's processes are gone, the calls never
 * returned: each is marked neverReturned. rows are the n events shown. */
static void open_calls_shape(cJSON *out, cJSON *events, const struct timeline_event *rows,
                             int n, const char *session_id)
{
    struct session_target t;
    struct strobe_error ignored = {0};
    bool live = session_target_get(session_id, &t, &ignored) == 0;
    if (live)
        session_target_put(&t);
    cJSON *threads = cJSON_AddArrayToObject(out, "openCalls");
    int i = 0;
    for (cJSON *ev = events->child; ev && i < n; ev = ev->next, i++) {
        if (!cJSON_HasObjectItem(ev, "threadId"))
            cJSON_AddNumberToObject(ev, "threadId", rows[i].tid);
        if (!live)
            cJSON_AddTrueToObject(ev, "neverReturned");
        cJSON *group = NULL;
        for (cJSON *g = threads->child; g && !group; g = g->next)
            if (cJSON_GetObjectItem(g, "threadId")->valueint == rows[i].tid &&
                cJSON_GetObjectItem(g, "pid")->valueint == rows[i].pid)
                group = g;
        if (!group) {
            group = cJSON_CreateObject();
            cJSON_AddNumberToObject(group, "threadId", rows[i].tid);
            cJSON_AddNumberToObject(group, "pid", rows[i].pid);
            if (rows[i].thread_name)
                cJSON_AddStringToObject(group, "threadName", rows[i].thread_name);
            cJSON_AddArrayToObject(group, "calls");
            cJSON_AddItemToArray(threads, group);
        }
        cJSON_AddItemToArray(cJSON_GetObjectItem(group, "calls"),
                             cJSON_CreateString(rows[i].function ? rows[i].function : ""));
    }
    cJSON_AddStringToObject(out, "openCallsNote", live
        ? "Calls entered and not yet returned, per thread, innermost last: where each "
          "thread is inside the traced code now. debug_session action \"stacks\" shows "
          "the whole stacks and names deadlocks."
        : "The program has ended: these calls never returned (it exited, was killed or "
          "crashed inside them).");
}

/* Whether a function named fn passes the query's function filter (its pattern
 * compiled by the query that ran with it). */
static bool function_selected(const struct event_query *q, const char *fn)
{
    if ((q->function_equals && strcmp(fn, q->function_equals) != 0) ||
        (q->function_contains && !strstr(fn, q->function_contains)))
        return false;
    if (!q->function_re)
        return true;
    return regex_match(q->function_re, fn, strlen(fn), NULL) == 1;
}

/* evicted: the functions of the answer's range whose oldest events the session's
 * event cap took, so an empty or short answer is not read as "never called". Not
 * for polling (afterEventId: only new events), nor for types the cap never evicts
 * from functions, nor when an absolute timeFrom starts after the last eviction. */
static void add_evicted(cJSON *out, struct timeline_reader *rd, int64_t key,
                        const struct event_query *q)
{
    if (q->after_id || (q->event_type && q->event_type != EV_FUNCTION_ENTER &&
                        q->event_type != EV_FUNCTION_EXIT))
        return;
    struct timeline_evicted *rows;
    int n;
    if (timeline_evicted(rd, key, &rows, &n, NULL) != 0)
        return;
    cJSON *list = NULL;
    int64_t total = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        if ((q->from.set && !q->from.relative && q->from.ns > rows[i].through_ns) ||
            !function_selected(q, rows[i].function))
            continue;
        total += rows[i].events;
        if (shown++ >= EVICTED_SHOWN)
            continue;
        if (!list)
            list = cJSON_AddArrayToObject(out, "evicted");
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "function", rows[i].function);
        cJSON_AddNumberToObject(f, "events", (double)rows[i].events);
        cJSON_AddNumberToObject(f, "throughNs", (double)rows[i].through_ns);
        cJSON_AddItemToArray(list, f);
    }
    timeline_evicted_free(rows, n);
    if (!list)
        return;
    char note[400];
    snprintf(note, sizeof note, "The session's event cap (setting events.maxPerSession) "
             "evicted the oldest %lld function event(s) of %lld function(s) in this range "
             "(each up to its throughNs), so counts here are short of the calls made. "
             "Raise events.maxPerSession in <projectRoot>/.strobe/settings.json before the "
             "next launch, or trace fewer functions.", (long long)total, (long long)shown);
    cJSON_AddStringToObject(out, "evictedNote", note);
}

/* The paging and presentation fields of args into q and *verbose. */
static int paging(const cJSON *args, struct event_query *q, bool *verbose,
                  struct strobe_error *e)
{
    int64_t v;
    bool present;
    q->limit = 50;
    if (args_int(args, "limit", 1, 500, &v, &present, e) != 0)
        return -1;
    if (present)
        q->limit = (int)v;
    if (args_int(args, "offset", 0, INT32_MAX, &v, &present, e) != 0)
        return -1;
    q->offset = present ? (int)v : 0;
    *verbose = false;
    if (args_bool(args, "verbose", verbose, e) != 0)
        return -1;
    const cJSON *after = cJSON_GetObjectItemCaseSensitive(args, "afterEventId");
    if (after && event_id_arg(after, &q->after_id) != 0)
        return err_set(e, ERR_VALIDATION, "'afterEventId' must be an event id (the "
                       "lastEventId of a previous answer: digits, as a string or an "
                       "integer), not %s%s%s.", args_type_name(after),
                       cJSON_IsString(after) ? " " : "",
                       cJSON_IsString(after) ? after->valuestring : "");
    return 0;
}

cJSON *tool_debug_query(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    const char *id;
    struct query_filter filter;
    bool verbose;
    if (query_filter_parse(args, "debug_query", paging_fields, &filter, e) != 0 ||
        args_string(args, "sessionId", true, &id, e) != 0 ||
        paging(args, &filter.q, &verbose, e) != 0) {
        query_filter_free(&filter);
        return NULL;
    }
    struct timeline_reader *rd = tool_reader(ctx, e);
    int64_t key;
    struct timeline_page res;
    int rc = !rd || session_resolve(id, &key, e) != 0 ? -1 : 0;
    if (rc == 0 && (rc = timeline_events(rd, key, &filter.q, &res, e)) != 0)
        query_filter_explain(&filter, e);
    int offset = filter.q.offset;
    int64_t after_id = filter.q.after_id;
    bool open_calls = filter.q.open_calls;
    if (rc != 0) {
        query_filter_free(&filter);
        return NULL;
    }
    int *pids = NULL, n_pids = 0;
    timeline_pids(rd, key, &pids, &n_pids, NULL); /* without them, pids are not shown */

    cJSON *out = cJSON_CreateObject();
    cJSON *events = cJSON_AddArrayToObject(out, "events");
    size_t used = 0, budget = tool_answer_budget();
    budget -= ANSWER_RESERVE(budget);
    int shown = 0;
    int64_t last_id = after_id;
    for (; shown < res.n; shown++) {
        const struct timeline_event *row = &res.events[shown];
        cJSON *ev = event_json(row, verbose, n_pids > 1);
        if (row->type == EV_CRASH) {
            /* What could not be joined is left out; the event itself stands. */
            struct timeline_crash_context cc;
            timeline_crash_context(rd, key, row, &cc, NULL);
            crash_payload_shape(ev, row, &cc, verbose);
            timeline_crash_context_free(&cc);
        }
        if (row->type == EV_WATCH_HIT)
            tool_watch_hit_shape(ev, row->tid, verbose);
        if (row->type == EV_LOGPOINT || row->type == EV_PAUSE)
            stop_event_shape(ev, row);
        char *text = cJSON_PrintUnformatted(ev);
        size_t size = text ? strlen(text) : 0;
        free(text);
        if (shown > 0 && used + size > budget) {
            cJSON_Delete(ev);
            break;
        }
        used += size;
        cJSON_AddItemToArray(events, ev);
        last_id = res.events[shown].id;
    }
    if (open_calls)
        open_calls_shape(out, events, res.events, shown, id);
    add_evicted(out, rd, key, &filter.q);
    tool_add_evicted_events(out, rd, key, &filter.q);
    query_filter_free(&filter);
    cJSON_AddNumberToObject(out, "totalCount", (double)res.total_count);
    if (res.total_is_lower_bound)
        cJSON_AddTrueToObject(out, "totalCountIsLowerBound");
    cJSON_AddBoolToObject(out, "hasMore", res.has_more || shown < res.n);
    char last[24];
    snprintf(last, sizeof last, "%lld", (long long)last_id);
    if (last_id)
        cJSON_AddStringToObject(out, "lastEventId", last);
    else
        cJSON_AddNullToObject(out, "lastEventId");
    if (shown < res.n) {
        char note[256];
        snprintf(note, sizeof note, "Answer cut at %d KiB after %d events: continue with "
                 "offset %d, or afterEventId \"%s\" when polling.",
                 (int)(tool_answer_budget() / 1024),
                 shown, offset + shown, last);
        cJSON_AddStringToObject(out, "truncated", note);
    }
    if (n_pids > 1) {
        cJSON *arr = cJSON_AddArrayToObject(out, "pids");
        for (int i = 0; i < n_pids; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(pids[i]));
    }
    if (session_key_in_use(NULL, key)) {
        /* An empty or short answer is not "never happened" while the program runs. */
        cJSON_AddTrueToObject(out, "running");
        char note[300];
        snprintf(note, sizeof note, "The program is still running: more events may come. "
                 "Wait for one with debug_continue {action: \"until\", condition: {event: "
                 "{...this filter}}}, or poll again with afterEventId \"%s\".",
                 last_id ? last : "0");
        cJSON_AddStringToObject(out, "runningNote", note);
        tool_add_hot(out, id);
    }
    tool_add_sampling(out, id); /* the events of sampled functions are a sample */
    free(pids);
    timeline_page_free(&res);
    return out;
}
