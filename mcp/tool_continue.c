/*
 * tool_continue.c - debug_continue: resume, step, pause and wait for a condition
 * (core/debug.h), answered with the stop itself (thread, line, frames, arguments,
 * locals) or with what happened while the program ran; and the paused threads as
 * debug_session status lists them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/event.h"
#include "core/session.h"
#include "mcp/args.h"
#include "mcp/query_filter.h"
#include "mcp/tools.h"

#define FRAMES_SHOWN 8
#define VARS_BUDGET (8 * 1024)    /* bytes of arguments and locals shown */

static const char *const fields[] = {"sessionId", "action", "threadId", "condition",
                                     "timeoutMs", NULL};
static const char *const condition_fields[] = {"breakpoint", "event", "memory", NULL};

static const struct {
    const char *name;
    enum debug_action action;
} actions[] = {
    {"continue", DA_CONTINUE}, {"step-over", DA_STEP_OVER}, {"step-into", DA_STEP_INTO},
    {"step-out", DA_STEP_OUT}, {"pause", DA_PAUSE}, {"until", DA_UNTIL},
};

static const char *reason_name(enum collector_pause_reason r)
{
    switch (r) {
    case PAUSE_BREAKPOINT: return "breakpoint";
    case PAUSE_STEP: return "step";
    case PAUSE_REQUEST: return "pause";
    case PAUSE_ALL_STOP: return "allStop";
    }
    return "?";
}

static void add_pause(cJSON *o, const struct collector_pause *p)
{
    cJSON_AddStringToObject(o, "reason", reason_name(p->reason));
    cJSON_AddNumberToObject(o, "threadId", p->tid);
    cJSON_AddNumberToObject(o, "pid", p->pid);
    if (p->breakpoint_id)
        cJSON_AddNumberToObject(o, "breakpointId", p->breakpoint_id);
    cJSON_AddStringToObject(o, "function", p->function[0] ? p->function : "?");
    if (p->file[0]) {
        cJSON_AddStringToObject(o, "file", p->file);
        cJSON_AddNumberToObject(o, "line", p->line);
    }
}

#define STATUS_DETAILED 8   /* paused threads status shows with frames and arguments */
#define STATUS_LISTED 32    /* paused threads status lists at all (the rest counted) */

/* "tick (poll_ticker.c:39)" */
static cJSON *frame_line(const struct collector_frame *f)
{
    char buf[512];
    const char *file = f->file ? strrchr(f->file, '/') : NULL;
    file = file ? file + 1 : f->file;
    if (file)
        snprintf(buf, sizeof buf, "%s (%s:%d)", f->function ? f->function : "?", file, f->line);
    else
        snprintf(buf, sizeof buf, "%s", f->function ? f->function : "?");
    return cJSON_CreateString(buf);
}

/* The backtrace and arguments of paused thread tid, from a snapshot of them all. */
static void add_details(cJSON *o, const struct collector_stacks *st, pid_t tid)
{
    for (size_t i = 0; i < st->n_threads; i++) {
        const struct collector_thread *th = &st->threads[i];
        if (th->tid != tid)
            continue;
        cJSON *bt = cJSON_AddArrayToObject(o, "backtrace");
        for (size_t k = 0; k < th->n_frames && k < FRAMES_SHOWN; k++)
            cJSON_AddItemToArray(bt, frame_line(&th->frames[k]));
        int own = th->own_frame >= 0 ? th->own_frame : 0;
        if (th->n_frames && th->frames[own].arguments) {
            cJSON *args = cJSON_Parse(th->frames[own].arguments);
            /* The first 8 arguments, as spec 002's pause state has them. */
            while (args && cJSON_GetArraySize(args) > 8)
                cJSON_DeleteItemFromArray(args, 8);
            if (args)
                cJSON_AddItemToObject(o, "arguments", args);
        }
        return;
    }
}

bool tool_add_paused(cJSON *o, const char *id)
{
    struct collector_pause ps[64];
    int n = debug_pauses(id, ps, 64);
    if (n <= 0)
        return false;
    pid_t tids[STATUS_DETAILED];
    int n_tids = 0;
    for (int i = 0; i < n && i < 64 && n_tids < STATUS_DETAILED; i++)
        tids[n_tids++] = ps[i].tid;
    struct collector_stacks_request req = {.tids = tids, .n_tids = n_tids, .arguments = true};
    struct collector_stacks st = {0};
    bool have_stacks = session_stacks(id, &req, &st, NULL) == 0;
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n && i < STATUS_LISTED; i++) {
        cJSON *o = cJSON_CreateObject();
        add_pause(o, &ps[i]);
        if (have_stacks)
            add_details(o, &st, ps[i].tid);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToObject(o, "paused", arr);
    if (n > STATUS_LISTED)
        cJSON_AddNumberToObject(o, "omittedPausedThreads", n - STATUS_LISTED);
    if (have_stacks)
        collector_stacks_free(&st);
    return true;
}

static cJSON *parse_json_or(const char *text, const char *fallback)
{
    cJSON *v = text ? cJSON_Parse(text) : NULL;
    return v ? v : cJSON_Parse(fallback);
}

/* frames, arguments and locals of the stopped thread, within the budget. */
static void add_stack(cJSON *o, const struct collector_stacks *st)
{
    if (st->n_threads == 0)
        return;
    const struct collector_thread *th = &st->threads[0];
    /* The frames below the outermost one with a source line (libc's start code under
     * main, a thread's start routine) are counted, not shown. */
    size_t shown = th->n_frames;
    while (shown > 1 && !th->frames[shown - 1].file)
        shown--;
    cJSON *frames = cJSON_AddArrayToObject(o, "frames");
    for (size_t i = 0; i < shown && i < FRAMES_SHOWN; i++) {
        const struct collector_frame *f = &th->frames[i];
        cJSON *fr = cJSON_CreateObject();
        cJSON_AddStringToObject(fr, "function", f->function ? f->function : "?");
        if (f->file) {
            cJSON_AddStringToObject(fr, "file", f->file);
            cJSON_AddNumberToObject(fr, "line", f->line);
        }
        if (f->inlined)
            cJSON_AddTrueToObject(fr, "inlined");
        cJSON_AddItemToArray(frames, fr);
    }
    size_t more = th->n_frames - (shown < FRAMES_SHOWN ? shown : FRAMES_SHOWN);
    if (more + th->omitted_frames)
        cJSON_AddNumberToObject(o, "omittedFrames", (double)(more + th->omitted_frames));
    int own = th->own_frame >= 0 ? th->own_frame : 0;
    const char *args_text = th->n_frames ? th->frames[own].arguments : NULL;
    cJSON *args = parse_json_or(args_text, "[]");
    cJSON *locals = parse_json_or(th->locals, "[]");
    char *a = cJSON_PrintUnformatted(args), *l = cJSON_PrintUnformatted(locals);
    size_t size = (a ? strlen(a) : 0) + (l ? strlen(l) : 0);
    free(a);
    free(l);
    if (size > VARS_BUDGET) {
        cJSON_Delete(locals);
        locals = NULL;
        cJSON_AddStringToObject(o, "localsOmitted", "The locals are over 8 KiB: read the ones "
                                "you need with debug_memory({sessionId, threadId, targets: "
                                "[{variable: \"name\"}]}).");
    }
    if (own)
        cJSON_AddNumberToObject(o, "variablesOfFrame", own);
    cJSON_AddItemToObject(o, "arguments", args);
    if (locals)
        cJSON_AddItemToObject(o, "locals", locals);
}

static int parse_condition(const cJSON *c, struct debug_continue_req *req,
                           struct query_filter *filter, struct strobe_error *e)
{
    if (!c)
        return 0; /* the next stop, whatever it is */
    if (!cJSON_IsObject(c))
        return err_set(e, ERR_VALIDATION, "'condition' of action \"until\" is an object: "
                       "{breakpoint: id}, {event: {text: {contains: \"ready\"}}} or {memory: "
                       "\"g_count >= 100\"}.");
    if (args_only(c, "condition", condition_fields, e) != 0)
        return -1;
    const cJSON *bp = cJSON_GetObjectItemCaseSensitive(c, "breakpoint");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(c, "event");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(c, "memory");
    if ((bp != NULL) + (ev != NULL) + (mem != NULL) != 1)
        return err_set(e, ERR_VALIDATION, "'condition' takes exactly one of breakpoint, event "
                       "and memory.");
    if (bp) {
        int64_t id;
        bool present;
        if (args_int(c, "breakpoint", 1, INT32_MAX, &id, &present, e) != 0)
            return -1;
        req->until = UNTIL_BREAKPOINT;
        req->breakpoint_id = (int)id;
        return 0;
    }
    if (mem) {
        if (!cJSON_IsString(mem) || !mem->valuestring[0] ||
            strlen(mem->valuestring) > BP_TEXT_MAX)
            return err_set(e, ERR_VALIDATION, "'condition.memory' is a condition over globals "
                           "of 1 to %d characters, e.g. \"g_count >= 100\".", BP_TEXT_MAX);
        req->until = UNTIL_MEMORY;
        req->memory = mem->valuestring;
        return 0;
    }
    if (!cJSON_IsObject(ev))
        return err_set(e, ERR_VALIDATION, "'condition.event' is a debug_query filter object, "
                       "e.g. {eventType: \"stderr\", text: {contains: \"error\"}}.");
    if (query_filter_parse(ev, "condition.event", NULL, filter, e) != 0)
        return -1;
    req->until = UNTIL_EVENT;
    req->event = &filter->q;
    return 0;
}

static int parse(const cJSON *args, const char **id, struct debug_continue_req *req,
                 struct query_filter *filter, struct strobe_error *e)
{
    const char *action = "continue";
    int64_t tid = 0, timeout = DEBUG_TIMEOUT_DEFAULT_MS;
    bool present;
    if (args_only(args, "debug_continue", fields, e) != 0 ||
        args_string(args, "sessionId", true, id, e) != 0 ||
        args_string(args, "action", false, &action, e) != 0 ||
        args_int(args, "threadId", 1, INT32_MAX, &tid, &present, e) != 0 ||
        args_int(args, "timeoutMs", 1, DEBUG_TIMEOUT_MAX_MS, &timeout, &present, e) != 0)
        return -1;
    if (!action)
        action = "continue";
    size_t i = 0;
    for (; i < sizeof actions / sizeof *actions; i++)
        if (strcmp(actions[i].name, action) == 0)
            break;
    if (i == sizeof actions / sizeof *actions)
        return err_set(e, ERR_VALIDATION, "'action' must be one of continue, step-over, "
                       "step-into, step-out, pause, until; not '%s'.", action);
    *req = (struct debug_continue_req){.action = actions[i].action, .tid = (pid_t)tid,
                                       .timeout_ms = (int)timeout};
    const cJSON *cond = cJSON_GetObjectItemCaseSensitive(args, "condition");
    if (req->action == DA_UNTIL)
        return parse_condition(cond, req, filter, e);
    if (cond)
        return err_set(e, ERR_VALIDATION, "'condition' goes with action \"until\".");
    return 0;
}

/* name: n more items, with the debug_query that shows them all (afterEventId; the
 * events of event_type, or every kind when NULL). */
static void add_omitted(cJSON *o, const char *name, int64_t n, int64_t baseline,
                        const char *event_type)
{
    cJSON *m = cJSON_AddObjectToObject(o, name);
    cJSON_AddNumberToObject(m, "count", (double)n);
    char query[160];
    snprintf(query, sizeof query, "debug_query({sessionId, afterEventId: \"%lld\"%s%s%s})",
             (long long)baseline, event_type ? ", eventType: \"" : "",
             event_type ? event_type : "", event_type ? "\"" : "");
    cJSON_AddStringToObject(m, "showAll", query);
}

static void add_running(cJSON *o, const struct debug_outcome *out)
{
    cJSON_AddNumberToObject(o, "waitedMs", (double)out->waited_ms);
    cJSON_AddNumberToObject(o, "eventsMeanwhile", (double)out->events_meanwhile);
    if (out->evicted_meanwhile) {
        /* A count, not a cap: the cap (events.maxPerSession) took some already. */
        cJSON_AddNumberToObject(o, "eventsMeanwhileEvicted", (double)out->evicted_meanwhile);
        char note[300];
        snprintf(note, sizeof note, "%lld of the %lld events recorded meanwhile were already "
                 "evicted by the session's event cap (events.maxPerSession): the timeline "
                 "keeps the newest. Raise the setting before the next launch to keep more.",
                 (long long)out->evicted_meanwhile, (long long)out->events_meanwhile);
        cJSON_AddStringToObject(o, "evictedNote", note);
    }
    if (out->n_output) {
        cJSON *lines = cJSON_AddArrayToObject(o, "outputMeanwhile");
        for (int i = 0; i < out->n_output; i++)
            cJSON_AddItemToArray(lines, cJSON_CreateString(out->output[i]));
    }
    int64_t lines = out->stdout_total + out->stderr_total;
    if (lines > out->n_output)
        add_omitted(o, "outputOmitted", lines - out->n_output, out->baseline_id,
                    !out->stderr_total ? "stdout" : !out->stdout_total ? "stderr" : NULL);
}

/* The watchpoint hits since the call began (the first few, quoted). */
static void add_watch_hits(cJSON *o, const struct debug_outcome *out)
{
    if (!out->n_watch_hits)
        return;
    cJSON *hits = cJSON_AddArrayToObject(o, "watchHits");
    for (int i = 0; i < out->n_watch_hits; i++)
        cJSON_AddItemToArray(hits, cJSON_CreateString(out->watch_hits[i]));
    if (out->watch_hits_total > out->n_watch_hits)
        add_omitted(o, "watchHitsOmitted", out->watch_hits_total - out->n_watch_hits,
                    out->baseline_id, "watch_hit");
}

/* The snapshot's thread tid, NULL when it has none. */
static const struct collector_thread *thread_in(const struct collector_stacks *st, pid_t tid)
{
    for (size_t i = 0; st && i < st->n_threads; i++)
        if (st->threads[i].tid == tid)
            return &st->threads[i];
    return NULL;
}

/* name: ["thread T at FILE:LINE in F (breakpoint N)", ...] for the n_described
 * pauses of ps (at most 8): where each pause left its thread, or, with a stacks
 * snapshot (st), where it is in the program's own code and what it waits for (a
 * thread an all-stop caught inside libc says little by its pc); omitted: how many of
 * the total were not described. */
static void add_pause_list(cJSON *o, const char *name, const char *omitted,
                           const struct collector_pause *ps, int n_described, int total,
                           const struct collector_stacks *st)
{
    if (total <= 0)
        return;
    cJSON *r = cJSON_AddArrayToObject(o, name);
    for (int i = 0; i < n_described && i < 8; i++) {
        const struct collector_pause *p = &ps[i];
        char where[1024];
        const struct collector_thread *th = p->file[0] ? NULL : thread_in(st, p->tid);
        if (th) {
            int len = snprintf(where, sizeof where, "thread %d ", (int)p->tid);
            tool_thread_where(th, where + len, sizeof where - (size_t)len);
            if (where[len]) {
                cJSON_AddItemToArray(r, cJSON_CreateString(where));
                continue;
            }
        }
        const char *file = strrchr(p->file, '/');
        int len = p->file[0]
                      ? snprintf(where, sizeof where, "thread %d at %s:%d in %s", (int)p->tid,
                                 file ? file + 1 : p->file, p->line,
                                 p->function[0] ? p->function : "?")
                      : snprintf(where, sizeof where, "thread %d in %s", (int)p->tid,
                                 p->function[0] ? p->function : "?");
        if (p->breakpoint_id > 0 && len > 0 && (size_t)len < sizeof where)
            snprintf(where + len, sizeof where - (size_t)len, " (breakpoint %d)",
                     p->breakpoint_id);
        cJSON_AddItemToArray(r, cJSON_CreateString(where));
    }
    int shown = n_described < 8 ? n_described : 8;
    if (total > shown)
        cJSON_AddNumberToObject(o, omitted, total - shown);
}

static cJSON *answer(const char *id, const struct debug_continue_req *req,
                     const struct debug_outcome *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "sessionId", id);
    static const char *const states[] = {[DS_PAUSED] = "paused", [DS_RUNNING] = "running",
                                         [DS_EXITED] = "exited"};
    cJSON_AddStringToObject(o, "state", states[out->state]);
    if (req->until != UNTIL_NONE)
        cJSON_AddBoolToObject(o, "conditionMet", out->condition_met);
    /* What this call let go, so a pause nobody had seen is not resumed unnoticed. */
    add_pause_list(o, "resumed", "omittedResumed", out->resumed,
                   out->n_resumed < 8 ? out->n_resumed : 8, out->n_resumed, NULL);
    const char *hint = NULL;
    char buf[512];
    if (out->state == DS_PAUSED) {
        add_pause(o, &out->pause);
        if (out->pause.return_value[0])
            cJSON_AddItemToObject(o, "returnValue", parse_json_or(out->pause.return_value,
                                                                   "null"));
        if (out->pause.note[0])
            cJSON_AddStringToObject(o, "note", out->pause.note);
        add_stack(o, &out->stack);
        cJSON_AddNumberToObject(o, "pausedThreads", out->n_paused);
        /* The others are paused by their own stops (each resumes with its threadId). */
        add_pause_list(o, "otherPaused", "omittedOtherPaused", out->others, out->n_others,
                       out->n_paused - 1 > out->n_others ? out->n_paused - 1 : out->n_others,
                       &out->others_stack);
        snprintf(buf, sizeof buf, "Thread %d is paused. Read or change its variables with "
                 "debug_memory({sessionId, threadId: %d, targets: [...]}) (frame: 1 for the "
                 "caller); step with debug_continue({sessionId, action: \"step-over\" | "
                 "\"step-into\" | \"step-out\"}); resume with debug_continue({sessionId}).",
                 (int)out->pause.tid, (int)out->pause.tid);
        hint = buf;
    } else if (out->state == DS_EXITED) {
        if (out->exited_normally)
            cJSON_AddNumberToObject(o, "exitCode", out->exit_code);
        else if (out->signal)
            cJSON_AddNumberToObject(o, "signal", out->signal);
        if (out->has_event) /* until an event: the program ended with (or after) it */
            cJSON_AddItemToObject(o, "event", tool_event_json(&out->event, false));
        add_running(o, out);
        hint = "The program has ended; its output and events stay queryable with debug_query.";
    } else {
        if (out->has_event)
            cJSON_AddItemToObject(o, "event", tool_event_json(&out->event, false));
        if (out->values[0])
            cJSON_AddStringToObject(o, "values", out->values);
        add_running(o, out);
        hint = out->condition_met
                   ? "The condition holds; the program runs on. Set a breakpoint or use "
                     "action \"pause\" to stop it here."
                   : "No stop within timeoutMs: the program is still running. Call "
                     "debug_continue again to wait longer, action \"until\" to wait for a "
                     "condition, or action \"pause\" to stop it now.";
    }
    add_watch_hits(o, out);
    cJSON_AddStringToObject(o, "hint", hint);
    return o;
}

cJSON *tool_debug_continue(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    const char *id = NULL;
    struct debug_continue_req req;
    struct query_filter filter = {0};
    cJSON *res = NULL;
    if (parse(args, &id, &req, &filter, e) != 0)
        goto done;
    req.rd = tool_reader(ctx, e);
    if (!req.rd)
        goto done;
    struct debug_outcome out;
    if (debug_continue(id, &ctx->conn, &req, &out, e) != 0) {
        if (req.until == UNTIL_EVENT)
            query_filter_explain(&filter, e);
        goto done;
    }
    res = answer(id, &req, &out);
    if (out.state != DS_EXITED)
        tool_add_hot(res, id); /* what slows the program down */
    debug_outcome_free(&out);
done:
    query_filter_free(&filter);
    return res;
}
