/*
 * repl_run.c - the REPL's commands that run the program and stop it: file, run,
 * start, attach, kill, break, tbreak, delete, enable/disable, continue, next, step,
 * finish, until, advance, watch, rwatch, awatch, and the breakpoint table of `info
 * breakpoints`. Each is a debug_launch, debug_breakpoint, debug_continue,
 * debug_memory watch/unwatch or debug_session call (repl.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/repl.h"
#include "cli/repl_cmds.h"
#include "cli/repl_fmt.h"
#include "cli/repl_parse.h"

int repl_cmd_file(struct repl *r, const char *a)
{
    if (!*a)
        return repl_fail("Write `file PROGRAM`.");
    char path[8300];
    snprintf(path, sizeof path, "%s%s%s", a[0] == '/' ? "" : r->cwd, a[0] == '/' ? "" : "/",
             a);
    free(r->program);
    r->program = strdup(path);
    repl_complete_reset();
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

void repl_end_session(struct repl *r)
{
    if (!r->sid)
        return;
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
    repl_end_session(r);
    printf("[Inferior 1 (process %lld) killed]\n", pid);
    return 0;
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
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "sessionId", r->sid);
    char err[1024];
    cJSON *list = repl_tool_quiet(r, "debug_breakpoint", q, err, sizeof err);
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
    restage(r);
    repl_end_session(r);
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

/* How set_break reports a breakpoint: kept, deleted after its first stop (tbreak),
 * or that and silent (advance and until LOCATION, whose stop shows the place only). */
enum bp_kind { BP_KEEP, BP_TEMPORARY, BP_SILENT };

/* Sets a breakpoint from "LOCATION [if COND]": in the session, or staged for run. */
static int set_break(struct repl *r, const char *a, enum bp_kind kind)
{
    bool temporary = kind != BP_KEEP;
    struct repl_location loc;
    char err[512];
    const char *deffile = r->stop ? json_str(r->stop, "file") : NULL;
    if (repl_parse_location(a, deffile ? repl_base_name(deffile) : NULL, &loc, err,
                            sizeof err) != 0)
        return repl_fail("%s", err);
    cJSON *spec = repl_location_spec(&loc);
    repl_location_free(&loc);
    if (temporary)
        cJSON_AddBoolToObject(spec, "oneShot", true);
    cJSON *args = cJSON_CreateObject();
    if (r->sid)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "add"), spec);
    cJSON *ans = repl_tool(r, "debug_breakpoint", args);
    if (!ans)
        return 1;
    const cJSON *bps = json_get(ans, "breakpoints");
    const cJSON *b = cJSON_GetArrayItem(bps, cJSON_GetArraySize(bps) - 1);
    int id = (int)json_num(b, "id");
    if (!r->sid && r->n_staged < 64)
        r->staged[r->n_staged++] = id;
    if (kind == BP_TEMPORARY && r->n_temporary < 64)
        r->temporary[r->n_temporary++] = id;
    if (kind == BP_SILENT)
        r->advance_id = id;
    if (id >= r->next_bp_num)
        r->next_bp_num = id + 1;
    if (kind == BP_SILENT) {
        cJSON_Delete(ans);
        return 0;
    }
    const cJSON *where = cJSON_GetArrayItem(json_get(b, "where"), 0);
    printf("%s %d", temporary ? "Temporary breakpoint" : "Breakpoint", id);
    if (where)
        printf(" at %s: file %s, line %lld.\n", json_str(where, "address")
                                                     ? json_str(where, "address") : "?",
               repl_base_name(json_str(where, "file")), json_num(where, "line"));
    else if (json_str(b, "file"))
        printf(": file %s, line %lld.\n", json_str(b, "file"), json_num(b, "line"));
    else
        printf(": %s.\n", json_str(b, "function") ? json_str(b, "function") : "?");
    cJSON_Delete(ans);
    return 0;
}

int repl_cmd_break(struct repl *r, const char *a)
{
    return set_break(r, a, BP_KEEP);
}

int repl_cmd_tbreak(struct repl *r, const char *a)
{
    return set_break(r, a, BP_TEMPORARY);
}

int repl_cmd_start(struct repl *r, const char *a)
{
    if (set_break(r, "main", BP_TEMPORARY) != 0)
        return 1;
    return repl_cmd_run(r, a);
}

/* Removes watchpoint w (by its index), 0 or 1. */
static int unwatch(struct repl *r, int k)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "unwatch");
    cJSON_AddStringToObject(args, "sessionId", r->sid ? r->sid : "");
    cJSON_AddStringToObject(args, "watchId", r->watches[k].watch_id);
    char err[1024];
    cJSON *ans = repl_tool_quiet(r, "debug_memory", args, err, sizeof err);
    free(r->watches[k].watch_id);
    free(r->watches[k].label);
    r->watches[k] = r->watches[--r->n_watches];
    cJSON_Delete(ans);
    /* a watch of a program that ended is gone with it */
    if (!ans && strncmp(err, "PROCESS_EXITED:", 15) != 0)
        return repl_fail("%s", err);
    return 0;
}

int repl_cmd_delete(struct repl *r, const char *a)
{
    /* "delete breakpoints N" is gdb's long form */
    if (strncmp(a, "breakpoints", 11) == 0)
        a += 11 + strspn(a + 11, " ");
    cJSON *args = cJSON_CreateObject();
    if (r->sid)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    int status = 0;
    if (!*a) {
        while (r->n_watches)
            status |= unwatch(r, 0);
        cJSON_AddStringToObject(args, "remove", "*");
        if (!r->sid)
            r->n_staged = 0;
    } else {
        cJSON *ids = cJSON_AddArrayToObject(args, "remove");
        char *copy = strdup(a);
        for (char *save, *w = strtok_r(copy, " ,", &save); w; w = strtok_r(NULL, " ,", &save)) {
            char *end;
            long n = strtol(w, &end, 10);
            if (*end || n <= 0) {
                repl_fail("Convenience variable must have integer value: \"%s\" is not a "
                          "breakpoint number.", w);
                free(copy);
                cJSON_Delete(args);
                return 1;
            }
            int k = 0;
            while (k < r->n_watches && r->watches[k].num != n)
                k++;
            if (k < r->n_watches)
                status |= unwatch(r, k);
            else
                cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)n));
        }
        free(copy);
        if (cJSON_GetArraySize(ids) == 0) {
            cJSON_Delete(args);
            return status;
        }
    }
    cJSON *ans = repl_tool(r, "debug_breakpoint", args);
    cJSON_Delete(ans);
    return ans ? status : 1;
}

int repl_cmd_enable(struct repl *r, const char *a)
{
    (void)r;
    (void)a;
    return repl_fail("strobe's breakpoints cannot be disabled or enabled: `delete N` "
                     "removes one, `break` sets it again.");
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
    if (set_break(r, a, BP_SILENT) != 0)
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

/* watch / rwatch / awatch: debug_memory watch of a variable or an address. */
static int set_watch(struct repl *r, const char *a, const char *access, const char *kind)
{
    if (!*a)
        return repl_fail("Write `watch EXPR`: a global variable or an address.");
    if (!repl_need_session(r))
        return 1;
    if (r->n_watches == REPL_MAX_WATCHES)
        return repl_fail("Too many watchpoints: `delete N` one first.");
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "watch");
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    if (strncmp(a, "0x", 2) == 0 || strncmp(a, "*0x", 3) == 0) {
        cJSON_AddStringToObject(args, "address", a[0] == '*' ? a + 1 : a);
        cJSON_AddNumberToObject(args, "size", 4);
    } else {
        cJSON_AddStringToObject(args, "variable", a);
    }
    cJSON_AddStringToObject(args, "access", access);
    cJSON *ans = repl_tool(r, "debug_memory", args);
    if (!ans)
        return 1;
    struct repl_watch *w = &r->watches[r->n_watches++];
    const cJSON *id = json_get(ans, "watchId");
    char buf[64];
    if (cJSON_IsNumber(id))
        snprintf(buf, sizeof buf, "%lld", (long long)id->valuedouble);
    w->watch_id = strdup(cJSON_IsString(id) ? id->valuestring : buf);
    w->label = strdup(json_str(ans, "label") ? json_str(ans, "label") : a);
    w->kind = kind;
    if (r->next_bp_num < 1)
        r->next_bp_num = 1;
    w->num = r->next_bp_num++;
    printf("%s %d: %s\n", kind, w->num, w->label);
    cJSON_Delete(ans);
    return 0;
}

int repl_cmd_watch(struct repl *r, const char *a)
{
    return set_watch(r, a, "write", "Hardware watchpoint");
}

int repl_cmd_rwatch(struct repl *r, const char *a)
{
    return set_watch(r, a, "readwrite", "Hardware read watchpoint");
}

int repl_cmd_awatch(struct repl *r, const char *a)
{
    return set_watch(r, a, "readwrite", "Hardware access (read/write) watchpoint");
}

int repl_info_breakpoints(struct repl *r)
{
    cJSON *args = cJSON_CreateObject();
    if (r->sid)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    char err[1024];
    cJSON *ans = repl_tool_quiet(r, "debug_breakpoint", args, err, sizeof err);
    if (!ans && strncmp(err, "PROCESS_EXITED:", 15) == 0)
        ans = cJSON_CreateObject(); /* the program ended: its breakpoints are gone */
    if (!ans)
        return repl_fail("%s", err);
    const cJSON *bps = json_get(ans, "breakpoints");
    if (cJSON_GetArraySize(bps) == 0 && r->n_watches == 0) {
        puts("No breakpoints or watchpoints.");
        cJSON_Delete(ans);
        return 0;
    }
    puts("Num     Type           Disp Enb Address            What");
    const cJSON *b;
    cJSON_ArrayForEach(b, bps) {
        const cJSON *w = cJSON_GetArrayItem(json_get(b, "where"), 0);
        bool once = cJSON_IsTrue(json_get(b, "oneShot"));
        printf("%-7lld %-14s %-4s y   %-18s ", json_num(b, "id"),
               json_str(b, "kind") && strcmp(json_str(b, "kind"), "logpoint") == 0
                   ? "logpoint" : "breakpoint",
               once ? "del" : "keep", w && json_str(w, "address") ? json_str(w, "address")
                                                                   : "<PENDING>");
        if (w)
            printf("in %s at %s:%lld\n", json_str(w, "function") ? json_str(w, "function")
                                                                  : "??",
                   repl_base_name(json_str(w, "file")), json_num(w, "line"));
        else if (json_str(b, "file"))
            printf("%s:%lld\n", json_str(b, "file"), json_num(b, "line"));
        else
            printf("%s\n", json_str(b, "function") ? json_str(b, "function") : "?");
        if (json_str(b, "condition"))
            printf("\tstop only if %s\n", json_str(b, "condition"));
        long long hits = json_num(b, "hits");
        if (hits)
            printf("\tbreakpoint already hit %lld time%s\n", hits, hits == 1 ? "" : "s");
    }
    for (int i = 0; i < r->n_watches; i++)
        printf("%-7d %-14s keep y                      %s\n", r->watches[i].num,
               strstr(r->watches[i].kind, "access") ? "acc watchpoint"
               : strstr(r->watches[i].kind, "read") ? "read watchpoint" : "hw watchpoint",
               r->watches[i].label);
    cJSON_Delete(ans);
    return 0;
}
