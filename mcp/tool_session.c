/*
 * tool_session.c - debug_session: status, stop, list, delete, and stacks (its
 * shaping is mcp/tool_stacks.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "core/timeline.h"
#include "mcp/args.h"
#include "mcp/budget.h"
#include "mcp/tools.h"

static const char *const fields[] = {"action", "sessionId", "retain", "pid", "tids",
                                     "locals", "verbose", NULL};
/* The fields only action "stacks" reads. */
static const char *const stacks_fields[] = {"pid", "tids", "locals", "verbose"};

/* The fields a session shows in status and list. */
static cJSON *row_json(const struct timeline_session *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "sessionId", r->id);
    cJSON_AddStringToObject(o, "status", r->status);
    cJSON_AddStringToObject(o, "binaryPath", r->binary_path);
    cJSON_AddNumberToObject(o, "pid", r->pid);
    cJSON_AddNumberToObject(o, "startedAt", (double)r->started_at_ms);
    if (r->ended_at_ms)
        cJSON_AddNumberToObject(o, "endedAt", (double)r->ended_at_ms);
    else
        cJSON_AddNullToObject(o, "endedAt");
    if (r->has_exit_code)
        cJSON_AddNumberToObject(o, "exitCode", r->exit_code);
    if (r->exit_signal)
        cJSON_AddStringToObject(o, "signal", r->exit_signal);
    cJSON_AddBoolToObject(o, "retained", r->retained);
    return o;
}

/* The budgets of status and list answers (the agent reads them whole). */
#define COMMAND_LINE_BUDGET 4096   /* bytes of argument text shown */
#define ARG_SHOWN_MAX 512          /* bytes of one argument shown */
#define SESSION_LAYERS_SHOWN 16    /* runtimes listed (a session adopts as many) */
#define LIST_BUDGET (tool_answer_budget() - 1024) /* room for the hint: budget.h */

/* The launch's argv (JSON array text) as commandLine, within COMMAND_LINE_BUDGET:
 * a long argument is cut with "...(N more bytes)", and arguments past the budget
 * are counted in commandLineOmittedArgs. */
static void add_command_line(cJSON *o, const char *json_text)
{
    cJSON *argv = cJSON_Parse(json_text);
    if (!cJSON_IsArray(argv)) {
        cJSON_Delete(argv);
        return;
    }
    cJSON *shown = cJSON_AddArrayToObject(o, "commandLine");
    size_t used = 0;
    int omitted = 0;
    for (const cJSON *a = argv->child; a; a = a->next) {
        const char *text = cJSON_IsString(a) ? a->valuestring : "";
        size_t len = strlen(text);
        if (used >= COMMAND_LINE_BUDGET) {
            omitted++;
            continue;
        }
        if (len <= ARG_SHOWN_MAX) {
            cJSON_AddItemToArray(shown, cJSON_CreateString(text));
            used += len;
            continue;
        }
        char cut[ARG_SHOWN_MAX + 48];
        size_t keep = ARG_SHOWN_MAX;
        while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
            keep--; /* not inside a UTF-8 character */
        snprintf(cut, sizeof cut, "%.*s...(%zu more bytes)", (int)keep, text, len - keep);
        cJSON_AddItemToArray(shown, cJSON_CreateString(cut));
        used += keep;
    }
    if (omitted)
        cJSON_AddNumberToObject(o, "commandLineOmittedArgs", omitted);
    cJSON_Delete(argv);
}

/* What the session's event cap took: every type (tool_add_evicted_events), and
 * evicted, the function events per function (what topFunctions counted but the
 * timeline no longer holds). */
static void add_evicted_status(cJSON *o, struct timeline_reader *rd, const char *id)
{
    int64_t key;
    struct timeline_evicted *rows;
    int n;
    if (session_resolve(id, &key, NULL) != 0)
        return;
    tool_add_evicted_events(o, rd, key, NULL);
    if (timeline_evicted(rd, key, &rows, &n, NULL) != 0)
        return;
    cJSON *list = n ? cJSON_AddArrayToObject(o, "evicted") : NULL;
    for (int i = 0; i < n && i < 10; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "function", rows[i].function);
        cJSON_AddNumberToObject(f, "events", (double)rows[i].events);
        cJSON_AddItemToArray(list, f);
    }
    timeline_evicted_free(rows, n);
}

static cJSON *status(struct tool_ctx *ctx, const char *id, struct strobe_error *e)
{
    struct timeline_reader *rd = tool_reader(ctx, e);
    struct timeline_status st;
    if (!rd || timeline_status(rd, id, &st, e) != 0)
        return NULL;
    cJSON *o = row_json(&st.session);
    cJSON_AddStringToObject(o, "projectRoot", st.session.project_root);
    if (st.session.command_line)
        add_command_line(o, st.session.command_line);
    cJSON *pids = cJSON_AddArrayToObject(o, "pids");
    bool main_listed = false;
    for (int i = 0; i < st.n_pids; i++)
        main_listed |= st.pids[i] == st.session.pid;
    if (!main_listed)
        cJSON_AddItemToArray(pids, cJSON_CreateNumber(st.session.pid));
    for (int i = 0; i < st.n_pids; i++)
        cJSON_AddItemToArray(pids, cJSON_CreateNumber(st.pids[i]));
    char (*runtimes)[SESSION_RUNTIME_TEXT] = malloc(SESSION_LAYERS_SHOWN * sizeof *runtimes);
    int n_rt = runtimes ? session_runtimes(id, runtimes, SESSION_LAYERS_SHOWN) : 0;
    cJSON *rt = n_rt ? cJSON_AddArrayToObject(o, "runtimes") : NULL;
    for (int i = 0; i < n_rt; i++) /* the language each process runs, beyond native code */
        cJSON_AddItemToArray(rt, cJSON_CreateString(runtimes[i]));
    free(runtimes);
    cJSON *counts = cJSON_AddObjectToObject(o, "eventCounts");
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        if (st.counts[t])
            cJSON_AddNumberToObject(counts, event_type_name(t), (double)st.counts[t]);
    cJSON_AddNumberToObject(o, "totalEvents", (double)st.total_events);
    if (st.output_capped)
        cJSON_AddTrueToObject(o, "outputLimitReached");
    if (st.n_top > 0) {
        cJSON *top = cJSON_AddArrayToObject(o, "topFunctions");
        for (int i = 0; i < st.n_top; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "function", st.top[i].function);
            cJSON_AddNumberToObject(f, "calls", (double)st.top[i].count);
            if (st.top[i].function_raw)
                cJSON_AddStringToObject(f, "functionRaw", st.top[i].function_raw);
            /* The tracer's exact counts replace these (tool_add_counts) while it
             * holds the program or saved them; left here: recorded events only. */
            if (st.top[i].sampled)
                cJSON_AddFalseToObject(f, "callsExact");
            cJSON_AddItemToArray(top, f);
        }
    }
    tool_add_pattern_status(o, id);
    add_evicted_status(o, rd, id);
    pid_t left = session_left_running(id);
    if (left) {
        /* "stopped" says nothing records it; the process runs on all the same */
        cJSON_AddNumberToObject(o, "leftRunningPid", left);
        char note[400];
        snprintf(note, sizeof note, "Process %d of this session still runs: its daemon died "
                 "and this one does not trace it. What it printed since is kept in "
                 "orphaned/%s.stdout and .stderr under $STROBE_HOME. debug_session stop kills "
                 "it.", (int)left, id);
        cJSON_AddStringToObject(o, "leftRunningNote", note);
    }
    tool_add_hot(o, id);
    if (st.lost_events > 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%lld event(s) of this session could not be written to "
                 "the database and are missing from its timeline: %s",
                 (long long)st.lost_events, st.store_error);
        cJSON_AddNumberToObject(o, "lostEvents", (double)st.lost_events);
        cJSON_AddStringToObject(o, "storeErrors", msg);
    }
    tool_add_counts(o, id, true);
    if (strcmp(st.session.status, "running") == 0)
        tool_add_breakpoint_count(o, id);
    if (strcmp(st.session.status, "running") == 0 && tool_add_paused(o, id)) {
        cJSON_AddStringToObject(o, "hint", "Threads are paused: debug_continue({sessionId}) "
                                "resumes them (and waits for the next stop); debug_memory "
                                "with threadId reads their locals.");
        timeline_status_free(&st);
        return o;
    }
    const char *hint = strcmp(st.session.status, "running") == 0
        ? "Still running. Read its output with debug_query (eventType \"stdout\"/\"stderr\"), "
          "poll new events with afterEventId."
        : "Ended. Its events stay queryable with debug_query until debug_session stop.";
    cJSON_AddStringToObject(o, "hint", hint);
    timeline_status_free(&st);
    return o;
}

static cJSON *list(struct tool_ctx *ctx, struct strobe_error *e)
{
    struct timeline_reader *rd = tool_reader(ctx, e);
    struct timeline_session *rows = NULL;
    int n = 0;
    if (!rd || timeline_sessions(rd, &rows, &n, e) != 0)
        return NULL;
    /* Newest first; the oldest beyond the budget are counted, not shown. */
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "sessions");
    size_t used = 0, budget = LIST_BUDGET;
    /* Sessions before a damaged database was set aside are in that file, not here. */
    struct timeline_store_note note;
    timeline_store_note(ctx->store, &note);
    if (note.set_aside[0]) {
        cJSON *aside = cJSON_AddObjectToObject(o, "storeSetAside");
        cJSON_AddStringToObject(aside, "file", note.set_aside);
        cJSON_AddStringToObject(aside, "note", note.set_aside_why);
        budget -= strlen(note.set_aside) + strlen(note.set_aside_why) + 40;
    }
    int shown = 0;
    for (; shown < n; shown++) {
        cJSON *row = row_json(&rows[shown]);
        char *text = cJSON_PrintUnformatted(row);
        used += text ? strlen(text) + 1 : 0;
        free(text);
        if (shown > 0 && used > budget) {
            cJSON_Delete(row);
            break;
        }
        cJSON_AddItemToArray(arr, row);
    }
    if (shown < n) {
        cJSON_AddNumberToObject(o, "omittedSessions", n - shown);
        char hint[200];
        snprintf(hint, sizeof hint, "%d older session(s) not shown (the answer is kept under "
                 "%d KB). Remove ended sessions with debug_session delete, or query one by "
                 "its id.", n - shown, (int)(tool_answer_budget() / 1024));
        cJSON_AddStringToObject(o, "hint", hint);
    }
    timeline_sessions_free(rows, n);
    return o;
}

cJSON *tool_debug_session(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    const char *action = NULL, *id = NULL;
    bool retain = false;
    if (args_only(args, "debug_session", fields, e) != 0 ||
        args_string(args, "action", true, &action, e) != 0 ||
        args_string(args, "sessionId", false, &id, e) != 0 ||
        args_bool(args, "retain", &retain, e) != 0)
        return NULL;
    if (strcmp(action, "list") == 0)
        return list(ctx, e);
    bool stacks = strcmp(action, "stacks") == 0;
    bool known = stacks || strcmp(action, "status") == 0 || strcmp(action, "stop") == 0 ||
                 strcmp(action, "delete") == 0;
    if (!known) {
        err_set(e, ERR_VALIDATION, "'action' must be one of status, stop, list, delete, "
                "stacks; not '%s'.", action);
        return NULL;
    }
    if (!id || !id[0]) {
        err_set(e, ERR_VALIDATION, "'sessionId' is required for action '%s'.", action);
        return NULL;
    }
    for (size_t i = 0; !stacks && i < sizeof stacks_fields / sizeof *stacks_fields; i++)
        if (cJSON_GetObjectItemCaseSensitive(args, stacks_fields[i])) {
            err_set(e, ERR_VALIDATION, "'%s' applies to action 'stacks' only.",
                    stacks_fields[i]);
            return NULL;
        }
    if (stacks)
        return tool_session_stacks(args, id, e);
    if (strcmp(action, "status") == 0)
        return status(ctx, id, e);
    int64_t events = 0;
    int rc = strcmp(action, "stop") == 0 ? session_stop(id, retain, &events, e)
                                          : session_delete(id, e);
    if (rc != 0)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddTrueToObject(o, "success");
    cJSON_AddStringToObject(o, "sessionId", id);
    if (strcmp(action, "stop") == 0) {
        cJSON_AddNumberToObject(o, "eventsCollected", (double)events);
        cJSON_AddBoolToObject(o, "retained", retain);
    }
    return o;
}
