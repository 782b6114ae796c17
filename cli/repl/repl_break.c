/*
 * repl_break.c - the REPL's breakpoints and watchpoints: break, tbreak, delete,
 * enable/disable (refused: strobe has no disabled state), watch, rwatch, awatch and
 * the table of `info breakpoints`. Breakpoints are debug_breakpoint calls (staged for
 * the next launch when no program runs), watchpoints debug_memory watch/unwatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_parse.h"
#include "cli/repl/repl_state.h"

int repl_set_break(struct repl *r, const char *a, enum repl_bp_kind kind)
{
    bool temporary = kind != REPL_BP_KEEP;
    struct repl_location loc;
    char err[1024];
    const char *deffile = r->stop ? json_str(r->stop, "file") : NULL;
    if (repl_parse_location(a, deffile ? repl_base_name(deffile) : NULL, &loc, err,
                            sizeof err) != 0)
        return repl_fail("%s", err);
    cJSON *spec = repl_location_spec(&loc);
    repl_location_free(&loc);
    if (temporary)
        cJSON_AddBoolToObject(spec, "oneShot", true);
    /* Once the program has ended, a breakpoint is for the next run: staged. */
    bool staged = !r->sid || r->exit_shown;
    cJSON *args = cJSON_CreateObject();
    if (!staged)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "add"), cJSON_Duplicate(spec, true));
    cJSON *ans = repl_tool_quiet(r, "debug_breakpoint", args, err, sizeof err);
    if (!ans && !staged && strncmp(err, "PROCESS_EXITED:", 15) == 0) {
        /* it ended since the last command: staged after all */
        staged = true;
        args = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "add"), cJSON_Duplicate(spec, true));
        ans = repl_tool_quiet(r, "debug_breakpoint", args, err, sizeof err);
    }
    cJSON_Delete(spec);
    if (!ans)
        return repl_fail("%s", err);
    const cJSON *bps = json_get(ans, "breakpoints");
    const cJSON *b = cJSON_GetArrayItem(bps, cJSON_GetArraySize(bps) - 1);
    int id = (int)json_num(b, "id");
    if (staged && r->n_staged < 64)
        r->staged[r->n_staged++] = id;
    if (kind == REPL_BP_TEMPORARY && r->n_temporary < 64)
        r->temporary[r->n_temporary++] = id;
    if (kind == REPL_BP_SILENT)
        r->advance_id = id;
    if (id >= r->next_bp_num)
        r->next_bp_num = id + 1;
    if (kind == REPL_BP_SILENT) {
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
    return repl_set_break(r, a, REPL_BP_KEEP);
}

int repl_cmd_tbreak(struct repl *r, const char *a)
{
    return repl_set_break(r, a, REPL_BP_TEMPORARY);
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

/* Drops from r->bps_known the breakpoints of removal ("*", or an array of ids). */
static void forget_known(struct repl *r, const cJSON *removal)
{
    if (cJSON_IsString(removal)) {
        cJSON_Delete(r->bps_known);
        r->bps_known = NULL;
        return;
    }
    const cJSON *id;
    cJSON_ArrayForEach(id, removal)
        for (int i = cJSON_GetArraySize(r->bps_known) - 1; i >= 0; i--)
            if (json_num(cJSON_GetArrayItem(r->bps_known, i), "id") == (long long)id->valuedouble)
                cJSON_DeleteItemFromArray(r->bps_known, i);
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
    cJSON *removal = cJSON_Duplicate(json_get(args, "remove"), true);
    char err[1024];
    cJSON *ans = repl_tool_quiet(r, "debug_breakpoint", args, err, sizeof err);
    if (!ans && r->sid && strncmp(err, "PROCESS_EXITED:", 15) == 0) {
        forget_known(r, removal); /* the program ended: the next run stages the rest */
        ans = cJSON_CreateObject();
    } else if (!ans) {
        repl_fail("%s", err);
    }
    cJSON_Delete(removal);
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

cJSON *repl_breakpoint_list(struct repl *r, char *err, size_t errlen)
{
    cJSON *args = cJSON_CreateObject();
    if (r->sid)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON *ans = repl_tool_quiet(r, "debug_breakpoint", args, err, errlen);
    if (ans && r->sid) {
        cJSON_Delete(r->bps_known);
        r->bps_known = cJSON_Duplicate(json_get(ans, "breakpoints"), true);
    } else if (!ans && r->sid && strncmp(err, "PROCESS_EXITED:", 15) == 0) {
        /* the program ended: its breakpoints as last known, then those set since
         * (staged for the next run) */
        ans = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(ans, "breakpoints");
        const cJSON *b;
        cJSON_ArrayForEach(b, r->bps_known)
            cJSON_AddItemToArray(list, cJSON_Duplicate(b, true));
        cJSON *staged = repl_tool_quiet(r, "debug_breakpoint", cJSON_CreateObject(), err,
                                        errlen);
        cJSON_ArrayForEach(b, json_get(staged, "breakpoints"))
            for (int i = 0; i < r->n_staged; i++)
                if (r->staged[i] == json_num(b, "id"))
                    cJSON_AddItemToArray(list, cJSON_Duplicate(b, true));
        cJSON_Delete(staged);
    }
    return ans;
}

int repl_info_breakpoints(struct repl *r)
{
    char err[1024];
    cJSON *ans = repl_breakpoint_list(r, err, sizeof err);
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
