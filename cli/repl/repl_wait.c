/*
 * repl_wait.c - the REPL waiting for the program and telling what happened: the waits
 * of debug_continue (asked again while the program runs on, turned into a pause by
 * Ctrl-C), the stop, exit, crash and watchpoint-hit reports in gdb's words
 * (repl_fmt.h), and the program's stdout and stderr printed before them. See
 * repl_wait.h.
 */
#include "cli/repl/repl_wait.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/json_view.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_state.h"

/* debug_continue waits at most this long per call; the REPL prints the program's
 * output and asks again after it, so that output shows while the program runs
 * (a quarter of a second late at most). */
#define WAIT_SLICE_MS 250

/* Whether event id a comes before b (decimal strings). */
static int id_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

static int by_id(const void *x, const void *y)
{
    return id_cmp(json_str(*(cJSON *const *)x, "id"), json_str(*(cJSON *const *)y, "id"));
}

int repl_query_all(struct repl *r, const char *type, const char *after, cJSON *out,
                   char *err)
{
    char *from = after ? strdup(after) : NULL;
    char buf[512];
    int status = 0;
    for (int page = 0; page < 1000; page++) {
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "sessionId", r->sid);
        if (type)
            cJSON_AddStringToObject(q, "eventType", type);
        cJSON_AddNumberToObject(q, "limit", 500);
        if (from)
            cJSON_AddStringToObject(q, "afterEventId", from);
        cJSON *a = repl_tool_quiet(r, "debug_query", q, err ? err : buf, err ? 1024 : sizeof buf);
        if (!a) {
            status = -1;
            break;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, json_get(a, "events"))
            if (json_str(e, "id"))
                cJSON_AddItemToArray(out, cJSON_Duplicate(e, true));
        bool more = cJSON_IsTrue(json_get(a, "hasMore")) && json_str(a, "lastEventId");
        free(from);
        from = more ? strdup(json_str(a, "lastEventId")) : NULL;
        cJSON_Delete(a);
        if (!more)
            break;
    }
    free(from);
    return status;
}

void repl_show_output(struct repl *r, const char *before)
{
    if (!r->sid)
        return;
    cJSON *all = cJSON_CreateArray();
    static const char *const types[] = {"stdout", "stderr"};
    for (int t = 0; t < 2; t++)
        repl_query_all(r, types[t], r->output_after, all, NULL);
    int n = cJSON_GetArraySize(all);
    cJSON **v = calloc((size_t)n + 1, sizeof *v);
    int i = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, all)
        v[i++] = e;
    qsort(v, (size_t)n, sizeof *v, by_id);
    while (before && n > 0 && id_cmp(json_str(v[n - 1], "id"), before) > 0)
        n--;
    for (i = 0; i < n; i++) {
        FILE *f = strcmp(json_str(v[i], "eventType") ? json_str(v[i], "eventType") : "",
                         "stderr") == 0 ? stderr : stdout;
        fprintf(f, "%s\n", json_str(v[i], "text") ? json_str(v[i], "text") : "");
        fflush(f);
    }
    if (n) {
        free(r->output_after);
        r->output_after = strdup(json_str(v[n - 1], "id"));
    }
    free(v);
    cJSON_Delete(all);
}

/* The crash events of the session, printed as gdb reports a fatal signal. */
static void report_crash(struct repl *r)
{
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "sessionId", r->sid);
    cJSON_AddStringToObject(q, "eventType", "crash");
    char err[512];
    cJSON *a = repl_tool_quiet(r, "debug_query", q, err, sizeof err);
    const cJSON *e = cJSON_GetArrayItem(json_get(a, "events"), 0);
    if (e)
        repl_fmt_crash(stdout, e);
    cJSON_Delete(a);
}

/* The watchpoint whose daemon id is id, or NULL. */
static const struct repl_watch *watch_of(struct repl *r, const char *id)
{
    for (int i = 0; id && i < r->n_watches; i++)
        if (strcmp(r->watches[i].watch_id, id) == 0)
            return &r->watches[i];
    return NULL;
}

int repl_report(struct repl *r, const cJSON *a, const char *before_fn)
{
    const char *state = json_str(a, "state");
    /* what the program printed before a watchpoint hit comes before it */
    repl_show_output(r, json_str(json_get(a, "event"), "id"));
    if (state && strcmp(state, "paused") == 0) {
        long long id = json_num(a, "breakpointId");
        const char *label = "Breakpoint";
        for (int i = 0; i < r->n_temporary; i++)
            if (r->temporary[i] == id)
                label = "Temporary breakpoint";
        if (id && id == r->advance_id)
            label = NULL;
        repl_set_stop(r, a);
        char err[512];
        cJSON_Delete(repl_breakpoint_list(r, err, sizeof err)); /* the hit counts now */
        repl_fmt_stop(stdout, a, before_fn, label, &r->values);
        repl_show_displays(r);
        const cJSON *rv = json_get(a, "returnValue");
        if (rv && cJSON_IsObject(rv) && json_get(rv, "value")) {
            cJSON_AddItemToArray(r->history, cJSON_Duplicate(rv, true));
        } else if (rv) {
            cJSON *h = cJSON_CreateObject();
            cJSON_AddItemToObject(h, "value", cJSON_Duplicate(rv, true));
            cJSON_AddItemToArray(r->history, h);
        }
        return 0;
    }
    const cJSON *e = json_get(a, "event");
    const char *type = json_str(e, "eventType");
    if (cJSON_IsTrue(json_get(a, "conditionMet")) && type && strcmp(type, "watch_hit") == 0) {
        /* a watchpoint hit: recorded, the program ran on (no thread is paused), and
         * may have ended since */
        repl_set_stop(r, NULL);
        const char *wid = json_str(e, "watchId");
        char num[32];
        snprintf(num, sizeof num, "%lld", json_num(e, "watchId"));
        const struct repl_watch *w = watch_of(r, wid ? wid : num);
        repl_fmt_watch_hit(stdout, e, w ? w->num : 0, w ? w->kind : "Hardware watchpoint");
        r->watch_from = json_num(e, "timestampNs") + 1;
        return 0; /* one hit per continue, as gdb stops at each; the end comes after
                     the recorded hits (report_ended) */
    }
    if (state && strcmp(state, "exited") == 0) {
        repl_set_stop(r, NULL);
        r->exit_shown = true;
        if (json_has_num(a, "signal"))
            report_crash(r);
        repl_fmt_exit(stdout, a, r->pid);
    }
    return 0;
}

/* A wait found the program gone: its end, when not reported yet (it ran to the end
 * after the last stop, e.g. past recorded watchpoint hits), else an error. */
static int report_ended(struct repl *r)
{
    if (r->exit_shown)
        return repl_fail("The program is not being run.");
    /* The process can be gone a moment before its session has recorded how it ended
     * (status still "running"): asked again, for up to 2 s. */
    cJSON *st = NULL;
    for (int tries = 0; tries < 100; tries++) {
        cJSON_Delete(st);
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        cJSON_AddStringToObject(args, "sessionId", r->sid);
        if (!(st = repl_tool(r, "debug_session", args)))
            return 1;
        const char *status = json_str(st, "status");
        if (!status || strcmp(status, "running") != 0)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    cJSON_ReplaceItemInObject(st, "status", cJSON_CreateString("exited"));
    cJSON_AddStringToObject(st, "state", "exited");
    /* status names the signal ("SIGSEGV"); the report wants its number */
    const char *sig = json_str(st, "signal");
    for (int n = 1; sig && n < NSIG; n++) {
        const char *abbrev = sigabbrev_np(n);
        if (abbrev && strncmp(sig, "SIG", 3) == 0 && strcmp(sig + 3, abbrev) == 0) {
            cJSON_ReplaceItemInObject(st, "signal", cJSON_CreateNumber(n));
            break;
        }
    }
    repl_report(r, st, NULL);
    cJSON_Delete(st);
    return 0;
}

int repl_wait(struct repl *r, cJSON *args)
{
    char *before = r->stop && json_str(r->stop, "function")
                       ? strdup(json_str(r->stop, "function")) : NULL;
    cJSON_DeleteItemFromObject(args, "timeoutMs");
    cJSON_AddNumberToObject(args, "timeoutMs", WAIT_SLICE_MS);
    int status = 0;
    bool pause_sent = false;
    r->waiting = REPL_WAIT_PROGRAM;
    for (;;) {
        char err[2048];
        if (r->interrupted && !pause_sent) {
            /* Ctrl-C came before the program was there to pause (during run's
             * launch): pause it now */
            cJSON_ReplaceItemInObject(args, "action", cJSON_CreateString("pause"));
            cJSON_DeleteItemFromObject(args, "threadId");
            cJSON_DeleteItemFromObject(args, "condition");
            pause_sent = true;
        }
        cJSON *a = repl_tool_quiet(r, "debug_continue", cJSON_Duplicate(args, true), err,
                                   sizeof err);
        if (!a && strncmp(err, "NOT_PAUSED:", 11) == 0 &&
            strcmp(json_str(args, "action"), "continue") == 0) {
            /* gdb's continue in a running program: wait for its next stop */
            cJSON_ReplaceItemInObject(args, "action", cJSON_CreateString("until"));
            continue;
        }
        if (!a && strncmp(err, "PROCESS_EXITED:", 15) == 0) {
            status = report_ended(r);
            break;
        }
        if (!a) {
            status = repl_fail("%s", err);
            break;
        }
        const char *state = json_str(a, "state");
        bool running = state && strcmp(state, "running") == 0 &&
                       !cJSON_IsTrue(json_get(a, "conditionMet"));
        if (running) {
            /* still running: show what it printed meanwhile and wait on for the
             * stop (after Ctrl-C, the pause it asked for) */
            cJSON_Delete(a);
            repl_show_output(r, NULL);
            if (!json_get(args, "condition"))
                cJSON_ReplaceItemInObject(args, "action", cJSON_CreateString("until"));
            if (r->interrupted) {
                cJSON_ReplaceItemInObject(args, "action", cJSON_CreateString("until"));
                cJSON_DeleteItemFromObject(args, "condition");
                pause_sent = true;
            }
            continue;
        }
        repl_report(r, a, before);
        cJSON_Delete(a);
        break;
    }
    r->waiting = REPL_WAIT_NONE;
    r->interrupted = 0;
    free(before);
    cJSON_Delete(args);
    return status;
}
