/*
 * strobectl.c - the command-line client: one MCP exchange with the daemon per run
 * (initialize, notifications/initialized, one tools/call or tools/list) and the
 * human-readable rendering of the answer (`crash` pages through its query, and
 * crash_report.c renders its events). Argument parsing lives in ctl_args.c, the
 * connection in client.c. Exit status: 0 ok, 1 tool or JSON-RPC error, 2 the daemon
 * cannot be reached, 3 `crash` found no crash event, 64 usage error.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/client.h"
#include "cli/crash_report.h"
#include "cli/json_view.h"
#include "cli/ctl_args.h"
#include "base/version.h"


enum { EXIT_TOOL_ERROR = 1, EXIT_UNREACHABLE = 2, EXIT_NO_CRASH = 3, EXIT_USAGE = 64 };

/* `crash` follows hasMore with afterEventId; a daemon that never says "no more"
 * is not followed forever. */
#define CRASH_MAX_PAGES 1000

/* ---- small accessors -------------------------------------------------------------- */

static void print_json(const cJSON *v)
{
    char *s = cJSON_Print(v);
    if (s)
        puts(s);
    free(s);
}

/* "2026-02-05 14:32:07" from a Unix time in ms (seconds are accepted too). */
static void format_time(double t, char *out, size_t outlen)
{
    if (t <= 0) {
        snprintf(out, outlen, "-");
        return;
    }
    time_t secs = (time_t)(t > 1e11 ? t / 1000 : t);
    struct tm tm;
    localtime_r(&secs, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", &tm);
}

/* A value as one line of text: scalars as themselves, arrays joined with ", ",
 * objects as "k v, k v". Caller frees. */
static char *scalar_text(const char *key, const cJSON *v)
{
    char *out = NULL;
    if (cJSON_IsString(v))
        return strdup(v->valuestring);
    if (cJSON_IsBool(v))
        return strdup(cJSON_IsTrue(v) ? "yes" : "no");
    if (cJSON_IsNull(v))
        return strdup("-");
    if (cJSON_IsNumber(v)) {
        char buf[64];
        size_t klen = key ? strlen(key) : 0;
        if (klen > 2 && strcmp(key + klen - 2, "At") == 0) /* startedAt, endedAt */
            format_time(v->valuedouble, buf, sizeof buf);
        else if (v->valuedouble > -1e18 && v->valuedouble < 1e18 &&
                 v->valuedouble == (double)(long long)v->valuedouble)
            snprintf(buf, sizeof buf, "%lld", (long long)v->valuedouble);
        else
            snprintf(buf, sizeof buf, "%g", v->valuedouble);
        return strdup(buf);
    }
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (!f)
            return NULL;
        const cJSON *c;
        bool first = true;
        cJSON_ArrayForEach(c, v)
        {
            char *t = (cJSON_IsArray(c) || cJSON_IsObject(c)) ? cJSON_PrintUnformatted(c)
                                                              : scalar_text(NULL, c);
            fprintf(f, "%s%s%s%s", first ? "" : ", ", c->string ? c->string : "",
                    c->string ? " " : "", t ? t : "?");
            free(t);
            first = false;
        }
        if (first)
            fputs("(none)", f);
        fclose(f);
        return out;
    }
    return strdup("?");
}

/* Every member as an aligned "key: value" line. */
static void print_fields(const cJSON *o)
{
    int width = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        int n = (int)strlen(c->string);
        if (n > width)
            width = n;
    }
    cJSON_ArrayForEach(c, o)
    {
        char *t = scalar_text(c->string, c);
        printf("%s:%*s %s\n", c->string, width - (int)strlen(c->string), "", t ? t : "?");
        free(t);
    }
}

/* ---- per-command rendering ---------------------------------------------------------- */

static void print_launch(const cJSON *r)
{
    printf("session %s pid %lld\n", json_str(r, "sessionId") ? json_str(r, "sessionId") : "?",
           json_num(r, "pid"));
    const cJSON *w;
    cJSON_ArrayForEach(w, json_get(r, "warnings"))
        if (cJSON_IsString(w))
            printf("warning: %s\n", w->valuestring);
    if (json_has_num(r, "pendingPatternsApplied"))
        printf("pending patterns applied: %lld\n", json_num(r, "pendingPatternsApplied"));
    if (json_str(r, "nextSteps"))
        printf("%s\n", json_str(r, "nextSteps"));
}

static void print_event(const cJSON *e, bool verbose)
{
    const char *type = json_str(e, "eventType") ? json_str(e, "eventType") : "?";
    const char *text = json_str(e, "text");
    printf("[%10.3f ms] %-7s", (double)json_num(e, "timestampNs") / 1e6, type);
    if (strncmp(type, "function_", 9) == 0 || (strcmp(type, "crash") == 0 && !text)) {
        const char *fn = json_str(e, "function");
        const char *file = json_str(e, "sourceFile");
        printf(" %s", fn ? fn : "?");
        if (file) {
            const char *base = strrchr(file, '/');
            printf(" (%s", verbose || !base ? file : base + 1);
            if (json_num(e, "line") > 0)
                printf(":%lld", json_num(e, "line"));
            putchar(')');
        }
        if (json_has_num(e, "durationNs") && json_num(e, "durationNs") >= 0)
            printf(" took %.3f ms", (double)json_num(e, "durationNs") / 1e6);
        static const char *const extras[][2] = { { "arguments", "args=" },
                                                 { "returnValue", "=> " } };
        for (size_t i = 0; i < 2; i++) {
            const cJSON *v = json_get(e, extras[i][0]);
            if (!v || cJSON_IsNull(v))
                continue;
            char *s = cJSON_PrintUnformatted(v);
            printf(" %s%s", extras[i][1], s ? s : "?");
            free(s);
        }
    } else if (text) {
        printf(" %s", text);
    } else if (strcmp(type, "process_exit") == 0) {
        if (json_str(e, "signal"))
            printf(" killed by %s", json_str(e, "signal"));
        else
            printf(" exited with code %lld", json_num(e, "exitCode"));
    } else if (json_get(e, "data")) {
        char *s = cJSON_PrintUnformatted(json_get(e, "data"));
        printf(" %s", s ? s : "?");
        free(s);
    }
    if (verbose && json_has_num(e, "pid")) {
        printf("  {pid %lld", json_num(e, "pid"));
        if (json_str(e, "threadName"))
            printf(", thread %s", json_str(e, "threadName"));
        else if (json_has_num(e, "threadId"))
            printf(", tid %lld", json_num(e, "threadId"));
        putchar('}');
    }
    putchar('\n');
}

static void print_query(const cJSON *r, const cJSON *args)
{
    bool verbose = cJSON_IsTrue(json_get(args, "verbose"));
    const cJSON *e;
    long long n = 0;
    cJSON_ArrayForEach(e, json_get(r, "events"))
    {
        print_event(e, verbose);
        n++;
    }
    printf("%lld of %lld events", n, json_num(r, "totalCount"));
    if (cJSON_IsTrue(json_get(r, "hasMore"))) {
        if (json_get(args, "afterEventId"))
            printf(" (more: --after %s)", json_str(r, "lastEventId") ? json_str(r, "lastEventId")
                                                                 : "?");
        else
            printf(" (more: --offset %lld)", json_num(args, "offset") + n);
    }
    putchar('\n');
    if (cJSON_IsString(json_get(r, "truncated")))
        printf("%s\n", json_str(r, "truncated"));
    if (json_get(r, "pids")) {
        char *s = scalar_text(NULL, json_get(r, "pids"));
        printf("pids: %s\n", s ? s : "?");
        free(s);
    }
}

static void print_sessions(const cJSON *r)
{
    const cJSON *list = json_get(r, "sessions");
    int n = cJSON_GetArraySize(list);
    if (n == 0) {
        puts("no sessions");
        return;
    }
    struct row { char status[64], pid[24], started[32]; const char *id, *bin; };
    struct row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows)
        return;
    int w_id = 7, w_status = 6, w_pid = 3;
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, list)
    {
        struct row *rw = &rows[i++];
        rw->id = json_str(s, "sessionId") ? json_str(s, "sessionId") : "?";
        rw->bin = json_str(s, "binaryPath") ? json_str(s, "binaryPath") : "?";
        const char *st = json_str(s, "status") ? json_str(s, "status") : "?";
        if (json_str(s, "signal"))
            snprintf(rw->status, sizeof rw->status, "%s(%s)", st, json_str(s, "signal"));
        else if (json_has_num(s, "exitCode"))
            snprintf(rw->status, sizeof rw->status, "%s(%lld)", st, json_num(s, "exitCode"));
        else
            snprintf(rw->status, sizeof rw->status, "%s", st);
        if (cJSON_IsTrue(json_get(s, "retained")))
            strncat(rw->status, ",retained", sizeof rw->status - strlen(rw->status) - 1);
        snprintf(rw->pid, sizeof rw->pid, "%lld", json_num(s, "pid"));
        const cJSON *t = json_get(s, "startedAt");
        format_time(cJSON_IsNumber(t) ? t->valuedouble : 0, rw->started,
                    sizeof rw->started);
        if ((int)strlen(rw->id) > w_id)
            w_id = (int)strlen(rw->id);
        if ((int)strlen(rw->status) > w_status)
            w_status = (int)strlen(rw->status);
        if ((int)strlen(rw->pid) > w_pid)
            w_pid = (int)strlen(rw->pid);
    }
    printf("%-*s  %-*s  %*s  %-19s  %s\n", w_id, "SESSION", w_status, "STATUS", w_pid,
           "PID", "STARTED", "BINARY");
    for (i = 0; i < n; i++)
        printf("%-*s  %-*s  %*s  %-19s  %s\n", w_id, rows[i].id, w_status,
               rows[i].status, w_pid, rows[i].pid, rows[i].started, rows[i].bin);
    free(rows);
}

static void print_result(const struct ctl_cmd *cmd, const cJSON *r)
{
    switch (cmd->kind) {
    case CTL_LAUNCH:
        print_launch(r);
        break;
    case CTL_QUERY:
        print_query(r, cmd->args);
        break;
    case CTL_SESSIONS:
        print_sessions(r);
        break;
    case CTL_STOP:
        printf("stopped %s: %lld events collected, data %s\n",
               json_str(r, "sessionId") ? json_str(r, "sessionId") : "?", json_num(r, "eventsCollected"),
               cJSON_IsTrue(json_get(r, "retained")) ? "retained" : "deleted");
        break;
    case CTL_DELETE:
        printf("deleted %s\n", json_str(r, "sessionId") ? json_str(r, "sessionId") : "?");
        break;
    default: /* status, trace */
        print_fields(r);
        break;
    }
}

/* ---- the exchange ------------------------------------------------------------------- */

/* The structured result of a tools/call: structuredContent, else content[0].text
 * parsed as JSON. *owned is set when the caller must delete it. */
static const cJSON *structured(const cJSON *result, cJSON **owned)
{
    *owned = NULL;
    const cJSON *sc = json_get(result, "structuredContent");
    if (sc)
        return sc;
    const cJSON *first = cJSON_GetArrayItem(json_get(result, "content"), 0);
    if (json_str(first, "text"))
        *owned = cJSON_Parse(json_str(first, "text"));
    return *owned;
}

/* Reports a tool error (isError) as "CODE: sentence". */
static void report_tool_error(const cJSON *result, const cJSON *sc)
{
    const cJSON *e = json_get(sc, "error");
    if (json_str(e, "code") && json_str(e, "message")) {
        fprintf(stderr, "strobectl: %s: %s\n", json_str(e, "code"), json_str(e, "message"));
        return;
    }
    const cJSON *first = cJSON_GetArrayItem(json_get(result, "content"), 0);
    fprintf(stderr, "strobectl: %s\n",
            json_str(first, "text") ? json_str(first, "text") : "the tool failed");
}

/* Sends method and returns its result, or NULL after reporting the failure with
 * *status set. */
static cJSON *call(struct rpc_client *c, const char *method, cJSON *params, int *status)
{
    char err[512];
    cJSON *resp = rpc_request(c, method, params, err, sizeof err);
    if (!resp) {
        fprintf(stderr, "strobectl: %s\n", err);
        *status = EXIT_UNREACHABLE;
        return NULL;
    }
    const cJSON *e = json_get(resp, "error");
    if (e) {
        fprintf(stderr, "strobectl: error %lld: %s\n", json_num(e, "code"),
                json_str(e, "message") ? json_str(e, "message") : "(no message)");
        cJSON_Delete(resp);
        *status = EXIT_TOOL_ERROR;
        return NULL;
    }
    cJSON *result = cJSON_DetachItemFromObjectCaseSensitive(resp, "result");
    cJSON_Delete(resp);
    if (!result) {
        fprintf(stderr, "strobectl: the daemon's answer to %s has no result\n", method);
        *status = EXIT_TOOL_ERROR;
    }
    return result;
}

/* `crash`: every crash event of the session (debug_query answers are cut at about
 * 32 KiB, so it pages with afterEventId), then one report per event, or the events
 * as one JSON array. */
static int run_crash(struct rpc_client *c, const struct ctl_cmd *cmd)
{
    const char *sid = json_str(cmd->args, "sessionId");
    cJSON *events = cJSON_CreateArray();
    int status = 0;
    for (int page = 0; page < CRASH_MAX_PAGES; page++) {
        cJSON *params = cJSON_CreateObject();
        cJSON_AddStringToObject(params, "name", cmd->tool);
        cJSON_AddItemReferenceToObject(params, "arguments", cmd->args);
        cJSON *result = call(c, "tools/call", params, &status);
        if (!result)
            break;
        cJSON *owned;
        const cJSON *sc = structured(result, &owned);
        bool more = false;
        if (cJSON_IsTrue(json_get(result, "isError"))) {
            report_tool_error(result, sc);
            status = EXIT_TOOL_ERROR;
        } else if (!sc) {
            fprintf(stderr, "strobectl: the daemon's answer to debug_query has no "
                            "structured result\n");
            status = EXIT_TOOL_ERROR;
        } else {
            const cJSON *e;
            cJSON_ArrayForEach(e, json_get(sc, "events"))
                cJSON_AddItemToArray(events, cJSON_Duplicate(e, true));
            const char *last = json_str(sc, "lastEventId");
            const char *after = json_str(cmd->args, "afterEventId");
            more = cJSON_IsTrue(json_get(sc, "hasMore")) && last &&
                   !(after && strcmp(after, last) == 0);
            if (more) {
                cJSON_DeleteItemFromObjectCaseSensitive(cmd->args, "afterEventId");
                cJSON_AddStringToObject(cmd->args, "afterEventId", last);
            }
        }
        cJSON_Delete(owned);
        cJSON_Delete(result);
        if (!more)
            break;
    }
    if (status == 0) {
        int n = cJSON_GetArraySize(events);
        if (cmd->json) {
            print_json(events);
        } else if (n == 0) {
            printf("no crash recorded in session %s", sid ? sid : "?");
            if (json_has_num(cmd->args, "pid"))
                printf(" for pid %lld", json_num(cmd->args, "pid"));
            putchar('\n');
        } else {
            unsigned flags = (cmd->full_paths ? CRASH_REPORT_FULL_PATHS : 0) |
                             (cmd->registers ? CRASH_REPORT_REGISTERS : 0);
            const cJSON *e;
            bool first = true;
            cJSON_ArrayForEach(e, events)
            {
                if (!first)
                    putchar('\n');
                crash_report_print(stdout, e, sid, flags);
                first = false;
            }
        }
        if (n == 0)
            status = EXIT_NO_CRASH;
    }
    cJSON_Delete(events);
    return status;
}

static int run(struct ctl_cmd *cmd)
{
    char err[1024];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "strobectl: %s\n", err);
        return EXIT_UNREACHABLE;
    }
    struct rpc_client c;
    rpc_init(&c, fd);
    int status = 0;

    cJSON *init = cJSON_CreateObject();
    cJSON_AddStringToObject(init, "protocolVersion", "2025-06-18");
    cJSON_AddObjectToObject(init, "capabilities");
    cJSON *info = cJSON_AddObjectToObject(init, "clientInfo");
    cJSON_AddStringToObject(info, "name", "strobectl");
    cJSON_AddStringToObject(info, "version", STROBE_VERSION);
    cJSON *result = call(&c, "initialize", init, &status);
    if (!result)
        goto out;
    cJSON_Delete(result);
    if (rpc_notify(&c, "notifications/initialized", NULL) != 0) {
        fprintf(stderr, "strobectl: lost the connection to the strobe daemon\n");
        status = EXIT_UNREACHABLE;
        goto out;
    }

    if (cmd->kind == CTL_CRASH) {
        status = run_crash(&c, cmd);
        goto out;
    }
    if (cmd->kind == CTL_TOOLS) {
        result = call(&c, "tools/list", NULL, &status);
        if (!result)
            goto out;
        if (cmd->json) {
            print_json(result);
        } else {
            const cJSON *t;
            cJSON_ArrayForEach(t, json_get(result, "tools"))
                if (json_str(t, "name"))
                    puts(json_str(t, "name"));
        }
        cJSON_Delete(result);
        goto out;
    }

    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", cmd->tool);
    cJSON_AddItemReferenceToObject(params, "arguments", cmd->args);
    result = call(&c, "tools/call", params, &status);
    if (!result)
        goto out;
    cJSON *owned;
    const cJSON *sc = structured(result, &owned);
    bool is_error = cJSON_IsTrue(json_get(result, "isError"));
    if (cmd->kind == CTL_CALL)
        print_json(result);
    else if (cmd->json)
        print_json(sc ? sc : result);
    if (is_error) {
        report_tool_error(result, sc);
        status = EXIT_TOOL_ERROR;
    } else if (cmd->kind != CTL_CALL && !cmd->json) {
        if (sc)
            print_result(cmd, sc);
        else
            print_json(result);
    }
    cJSON_Delete(owned);
    cJSON_Delete(result);
out:
    rpc_close(&c);
    return status;
}

int main(int argc, char **argv)
{
    /* A daemon that goes away mid-write is reported, not a silent death. */
    signal(SIGPIPE, SIG_IGN);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        perror("strobectl: cannot get the current directory");
        return EXIT_TOOL_ERROR;
    }
    struct ctl_cmd cmd;
    char err[1024];
    if (ctl_parse(argc, argv, cwd, &cmd, err, sizeof err) != 0) {
        fprintf(stderr, "strobectl: %s\nusage: %s\n", err, cmd.usage);
        return EXIT_USAGE;
    }
    int status = 0;
    if (cmd.kind == CTL_HELP)
        fputs(ctl_help, stdout);
    else if (cmd.kind == CTL_VERSION)
        printf("strobectl %s\n", STROBE_VERSION);
    else
        status = run(&cmd);
    ctl_cmd_free(&cmd);
    return status;
}
