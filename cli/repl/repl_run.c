/*
 * repl_run.c - the REPL's commands that run the program: file, run, start, attach,
 * kill, continue, next, step, finish, until, advance. Each is a debug_launch,
 * debug_continue or debug_session call (repl_state.h) and waits for the program
 * (repl_wait.h); breakpoints are in repl_break.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_state.h"
#include "cli/repl/repl_wait.h"

int repl_cmd_file(struct repl *r, const char *a)
{
    if (!*a)
        return repl_fail("Write `file PROGRAM`.");
    char path[8300];
    snprintf(path, sizeof path, "%s%s%s", a[0] == '/' ? "" : r->cwd, a[0] == '/' ? "" : "/",
             a);
    free(r->program);
    r->program = strdup(path);
    printf("Program: %s\n", r->program);
    return 0;
}

int repl_cmd_attach(struct repl *r, const char *a)
{
    (void)r;
    (void)a;
    return repl_fail("strobe cannot attach to a running process: it launches programs "
                     "itself. Use `file PROGRAM` then `run`, or `session ID` to attach "
                     "to a session the daemon already runs.");
}

/* Removes the staged breakpoints the REPL added (they stay staged for any later
 * launch of the daemon otherwise). */
static void unstage(struct repl *r)
{
    if (!r->n_staged)
        return;
    cJSON *a = cJSON_CreateObject();
    cJSON *ids = cJSON_AddArrayToObject(a, "remove");
    for (int i = 0; i < r->n_staged; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->staged[i]));
    char err[512];
    cJSON_Delete(repl_tool_quiet(r, "debug_breakpoint", a, err, sizeof err));
    r->n_staged = 0;
}

/* Stages again, for the next launch, the breakpoints of the session the REPL is
 * leaving (gdb keeps breakpoints across runs), with the ids the daemon gives them. */
static void restage(struct repl *r)
{
    if (!r->sid || !r->own_session)
        return;
    char err[1024];
    cJSON *list = repl_breakpoint_list(r, err, sizeof err);
    cJSON *add = cJSON_CreateArray();
    static const char *const fields[] = {"function", "file", "line", "condition", "hitCount",
                                         "oneShot", "allStop", "message", NULL};
    const cJSON *b;
    cJSON_ArrayForEach(b, json_get(list, "breakpoints")) {
        cJSON *spec = cJSON_CreateObject();
        for (int i = 0; fields[i]; i++)
            if (json_get(b, fields[i]))
                cJSON_AddItemToObject(spec, fields[i],
                                      cJSON_Duplicate(json_get(b, fields[i]), true));
        cJSON_AddItemToArray(add, spec);
    }
    cJSON_Delete(list);
    if (cJSON_GetArraySize(add) == 0) {
        cJSON_Delete(add);
        return;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddItemToObject(args, "add", add);
    cJSON *staged = repl_tool(r, "debug_breakpoint", args);
    cJSON_ArrayForEach(b, json_get(staged, "breakpoints")) {
        if (r->n_staged < 64)
            r->staged[r->n_staged++] = (int)json_num(b, "id");
        if (cJSON_IsTrue(json_get(b, "oneShot")) && r->n_temporary < 64)
            r->temporary[r->n_temporary++] = (int)json_num(b, "id");
    }
    cJSON_Delete(staged);
}

void repl_end_session(struct repl *r, bool keep_breakpoints)
{
    if (!r->sid)
        return;
    if (keep_breakpoints)
        restage(r);
    cJSON_Delete(r->bps_known);
    r->bps_known = NULL;
    if (r->own_session) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "action", "stop");
        cJSON_AddStringToObject(a, "sessionId", r->sid);
        char err[512];
        cJSON_Delete(repl_tool_quiet(r, "debug_session", a, err, sizeof err));
    }
    free(r->sid);
    r->sid = NULL;
    free(r->output_after);
    r->output_after = NULL;
    r->watch_from = 0;
    repl_forget_watches(r);
    repl_set_stop(r, NULL);
}

int repl_cmd_kill(struct repl *r, const char *a)
{
    (void)a;
    if (!repl_need_session(r))
        return 1;
    long long pid = r->pid;
    bool ended = r->exit_shown;
    repl_end_session(r, true);
    if (ended)
        return repl_fail("The program is not being run.");
    printf("[Inferior 1 (process %lld) killed]\n", pid);
    return 0;
}

int repl_cmd_run(struct repl *r, const char *a)
{
    if (!r->program)
        return repl_fail("No executable file specified: use `file PROGRAM` or start the "
                         "REPL with `strobectl repl PROGRAM`.");
    if (*a) {
        cJSON_Delete(r->prog_args);
        r->prog_args = cJSON_CreateArray();
        char *copy = strdup(a);
        for (char *save, *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
            cJSON_AddItemToArray(r->prog_args, cJSON_CreateString(w));
        free(copy);
    }
    repl_end_session(r, true);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "command", r->program);
    cJSON_AddStringToObject(args, "projectRoot", r->cwd);
    cJSON_AddStringToObject(args, "cwd", r->cwd);
    if (r->prog_args)
        cJSON_AddItemToObject(args, "args", cJSON_Duplicate(r->prog_args, true));
    printf("Starting program: %s", r->program);
    const cJSON *w;
    cJSON_ArrayForEach(w, r->prog_args)
        printf(" %s", w->valuestring);
    putchar('\n');
    r->interrupted = 0;
    r->waiting = REPL_WAIT_PROGRAM; /* Ctrl-C from now on pauses the program (repl_wait) */
    cJSON *l = repl_tool(r, "debug_launch", args);
    unstage(r);
    if (!l) {
        r->waiting = REPL_WAIT_NONE;
        return 1;
    }
    r->sid = strdup(json_str(l, "sessionId") ? json_str(l, "sessionId") : "");
    r->pid = json_num(l, "pid");
    r->own_session = true;
    r->exit_shown = false;
    const cJSON *e;
    cJSON_ArrayForEach(e, json_get(l, "breakpointErrors"))
        fprintf(stderr, "Breakpoint %lld not set: %s\n", json_num(e, "id"),
                json_str(json_get(e, "error"), "message")
                    ? json_str(json_get(e, "error"), "message") : "it did not bind");
    cJSON_Delete(l);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "sessionId", r->sid);
    cJSON_AddStringToObject(c, "action", "until");
    return repl_wait(r, c);
}

int repl_cmd_start(struct repl *r, const char *a)
{
    if (repl_set_break(r, "main", REPL_BP_TEMPORARY) != 0)
        return 1;
    return repl_cmd_run(r, a);
}

/* debug_continue with action, for the selected thread when tid. */
static int resume(struct repl *r, const char *action, bool tid)
{
    if (!repl_need_session(r))
        return 1;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddStringToObject(args, "action", action);
    if (tid && r->stop)
        cJSON_AddNumberToObject(args, "threadId",
                                r->thread ? r->thread : json_num(r->stop, "threadId"));
    return repl_wait(r, args);
}

int repl_cmd_continue(struct repl *r, const char *a)
{
    (void)a;
    if (!repl_need_session(r))
        return 1;
    puts("Continuing.");
    if (!r->n_watches)
        return resume(r, "continue", false);
    /* with watchpoints, a hit ends the wait as well as a stop: strobe records the hits
     * and lets the program run on, so those recorded since the last one shown come
     * first */
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "sessionId", r->sid);
    cJSON_AddStringToObject(q, "eventType", "watch_hit");
    cJSON_AddNumberToObject(q, "limit", 1);
    if (r->watch_from)
        cJSON_AddNumberToObject(q, "timeFrom", (double)r->watch_from);
    cJSON *hits = repl_tool(r, "debug_query", q);
    cJSON *hit = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(hits, "events"), 0);
    cJSON_Delete(hits);
    if (hit) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddBoolToObject(a, "conditionMet", true);
        cJSON_AddItemToObject(a, "event", hit);
        repl_report(r, a, NULL);
        cJSON_Delete(a);
        return 0;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddStringToObject(args, "action", "until");
    cJSON *ev = cJSON_AddObjectToObject(cJSON_AddObjectToObject(args, "condition"), "event");
    cJSON_AddStringToObject(ev, "eventType", "watch_hit");
    if (r->watch_from)
        cJSON_AddNumberToObject(ev, "timeFrom", (double)r->watch_from);
    return repl_wait(r, args);
}

int repl_cmd_next(struct repl *r, const char *a)
{
    (void)a;
    return resume(r, "step-over", true);
}

int repl_cmd_step(struct repl *r, const char *a)
{
    (void)a;
    return resume(r, "step-into", true);
}

int repl_cmd_finish(struct repl *r, const char *a)
{
    (void)a;
    if (!repl_need_session(r))
        return 1;
    if (r->stop) {
        const cJSON *frames = json_get(r->stop, "frames");
        fputs("Run till exit from ", stdout);
        repl_fmt_frame(stdout, 0, cJSON_GetArrayItem(frames, 0),
                       json_get(r->stop, "arguments"));
    }
    return resume(r, "step-out", true);
}

/* Runs to LOCATION: a temporary breakpoint there, then continue. */
static int run_to(struct repl *r, const char *a)
{
    if (!repl_need_session(r))
        return 1;
    if (repl_set_break(r, a, REPL_BP_SILENT) != 0)
        return 1;
    return resume(r, "continue", false);
}

int repl_cmd_until(struct repl *r, const char *a)
{
    return *a ? run_to(r, a) : resume(r, "step-over", true);
}

int repl_cmd_advance(struct repl *r, const char *a)
{
    if (!*a)
        return repl_fail("Write `advance LOCATION` (a function or FILE:LINE).");
    return run_to(r, a);
}
