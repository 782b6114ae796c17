/*
 * strobectl.c - the command-line client: one MCP exchange with the daemon per run
 * (initialize, notifications/initialized, one tools/call or tools/list), printed
 * with the renderers of cli/render/render.h (`crash` pages through its query, and
 * crash_report.h renders its events; `test` polls its run to the end and
 * render_test.h prints it). The verbs and their parsers are rows of
 * cli/ctl/verbs/ctl_verbs.h, the connection is cli/client.h, the waiting line on a
 * terminal cli/render/progress.h, the exit statuses cli/ctl/verbs/ctl_exit.h;
 * `strobectl repl` is cli/repl/repl.h's.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/version.h"
#include "cli/client.h"
#include "cli/render/crash_report.h"
#include "cli/ctl/verbs/ctl_args.h"
#include "cli/ctl/verbs/ctl_exit.h"
#include "cli/ctl/verbs/ctl_verbs.h"
#include "cli/json_view.h"
#include "cli/render/render.h"
#include "cli/render/progress.h"
#include "cli/render/render_break.h"
#include "cli/render/render_hint.h"
#include "cli/render/render_test.h"
#include "cli/repl/repl.h"



/* `crash` follows hasMore with afterEventId; a daemon that never says "no more"
 * is not followed forever. */
#define CRASH_MAX_PAGES 1000

/* Whether targets of a memory command failed (the exit status says so). */
static int failed_targets(const struct ctl_cmd *cmd, const cJSON *r)
{
    if (cmd->kind == CTL_MEM_POLL)
        return cJSON_GetArraySize(json_get(r, "errors")) > 0;
    if (cmd->kind != CTL_MEMORY && cmd->kind != CTL_MEM_READ && cmd->kind != CTL_MEM_WRITE)
        return 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(r, "results")) {
        const cJSON *err = json_get(t, "error");
        if (err && !cJSON_IsNull(err))
            return 1;
    }
    return 0;
}

/* Whether a debug_continue answer r says the wait ended with the program running
 * and no condition met (the timeout). */
static bool still_running(const struct ctl_cmd *cmd, const cJSON *r)
{
    return cmd->kind >= CTL_CONTINUE && cmd->kind <= CTL_UNTIL &&
           json_str(r, "state") && strcmp(json_str(r, "state"), "running") == 0 &&
           !cJSON_IsTrue(json_get(r, "conditionMet"));
}

/* Prints r; returns the exit status (CTL_EXIT_TARGETS when targets of a memory command
 * failed, CTL_EXIT_STILL_RUNNING when a wait timed out). */
static int print_result(const struct ctl_cmd *cmd, const cJSON *r)
{
    switch (cmd->kind) {
    case CTL_MEMORY:
    case CTL_MEM_READ:
    case CTL_MEM_WRITE:
        render_memory(stdout, r);
        return failed_targets(cmd, r) ? CTL_EXIT_TARGETS : 0;
    case CTL_MEM_POLL:
        return render_poll(stdout, r, json_str(cmd->args, "sessionId")) ? CTL_EXIT_TARGETS : 0;
    case CTL_LAUNCH:
        render_launch(stdout, r);
        break;
    case CTL_QUERY:
        render_query(stdout, r, cmd->args, "--after", "--offset");
        break;
    case CTL_SESSIONS:
        render_sessions(stdout, r);
        break;
    case CTL_STOP:
        render_stopped(stdout, r);
        break;
    case CTL_DELETE:
        render_deleted(stdout, r);
        break;
    case CTL_STACKS:
        render_stacks(stdout, r);
        break;
    case CTL_BREAK:
    case CTL_BREAKPOINTS:
    case CTL_BP_DELETE:
        render_breakpoints(stdout, r);
        break;
    case CTL_CONTINUE:
    case CTL_NEXT:
    case CTL_STEP:
    case CTL_FINISH:
    case CTL_PAUSE:
    case CTL_UNTIL:
        return render_stop(stdout, r) ? CTL_EXIT_STILL_RUNNING : 0;
    default: /* status, trace, watch, unwatch */
        render_fields(stdout, r);
        break;
    }
    return 0;
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

/* Reports a tool error (isError) as "CODE: sentence", its next step as strobectl
 * verbs. */
static void report_tool_error(const cJSON *result, const cJSON *sc)
{
    const cJSON *e = json_get(sc, "error");
    if (json_str(e, "code") && json_str(e, "message")) {
        render_tool_error(stderr, json_str(e, "code"), json_str(e, "message"));
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
        *status = c->failure == RPC_FAIL_INPUT ? CTL_EXIT_USAGE : CTL_EXIT_UNREACHABLE;
        return NULL;
    }
    const cJSON *e = json_get(resp, "error");
    if (e) {
        fprintf(stderr, "strobectl: error %lld: %s\n", json_num(e, "code"),
                json_str(e, "message") ? json_str(e, "message") : "(no message)");
        cJSON_Delete(resp);
        *status = CTL_EXIT_TOOL_ERROR;
        return NULL;
    }
    cJSON *result = cJSON_DetachItemFromObjectCaseSensitive(resp, "result");
    cJSON_Delete(resp);
    if (!result) {
        fprintf(stderr, "strobectl: the daemon's answer to %s has no result\n", method);
        *status = CTL_EXIT_TOOL_ERROR;
    }
    return result;
}

/* tools/call of tool with args: its structured result (owned by the caller), or
 * NULL after reporting the failure with *status set. */
static cJSON *call_tool(struct rpc_client *c, const char *tool, cJSON *args, int *status)
{
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", tool);
    cJSON_AddItemReferenceToObject(params, "arguments", args);
    cJSON *result = call(c, "tools/call", params, status);
    if (!result)
        return NULL;
    cJSON *owned;
    const cJSON *sc = structured(result, &owned);
    cJSON *answer = NULL;
    if (cJSON_IsTrue(json_get(result, "isError"))) {
        report_tool_error(result, sc);
        *status = CTL_EXIT_TOOL_ERROR;
    } else if (!sc) {
        fprintf(stderr, "strobectl: the daemon's answer to %s has no structured result\n",
                tool);
        *status = CTL_EXIT_TOOL_ERROR;
    } else {
        answer = owned ? owned : cJSON_Duplicate(sc, true);
        owned = NULL;
    }
    cJSON_Delete(owned);
    cJSON_Delete(result);
    return answer;
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
        cJSON *sc = call_tool(c, cmd->tool, cmd->args, &status);
        if (!sc)
            break;
        const cJSON *e;
        cJSON_ArrayForEach(e, json_get(sc, "events"))
            cJSON_AddItemToArray(events, cJSON_Duplicate(e, true));
        const char *last = json_str(sc, "lastEventId");
        const char *after = json_str(cmd->args, "afterEventId");
        bool more = cJSON_IsTrue(json_get(sc, "hasMore")) && last &&
                    !(after && strcmp(after, last) == 0);
        if (more) {
            cJSON_DeleteItemFromObjectCaseSensitive(cmd->args, "afterEventId");
            cJSON_AddStringToObject(cmd->args, "afterEventId", last);
        }
        cJSON_Delete(sc);
        if (!more)
            break;
    }
    if (status == 0) {
        int n = cJSON_GetArraySize(events);
        if (cmd->json) {
            render_json(stdout, events);
        } else {
            unsigned flags = (cmd->full_paths ? CRASH_REPORT_FULL_PATHS : 0) |
                             (cmd->registers ? CRASH_REPORT_REGISTERS : 0);
            crash_report_print_all(stdout, events, sid, json_num(cmd->args, "pid"), flags);
        }
        if (n == 0)
            status = CTL_EXIT_NO_CRASH;
    }
    cJSON_Delete(events);
    return status;
}

/* The progress line of a running test run on stderr, a terminal: rewritten in place,
 * cut to the terminal's width so that it never wraps. */
static void show_progress(const cJSON *answer)
{
    struct winsize ws;
    int width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
    fputc('\r', stderr);
    render_test_progress(stderr, answer, width - 1);
    fputs("\033[K", stderr);
    fflush(stderr);
}

/* `test`: debug_test run, then its status until the run completes, each status call
 * waiting in the daemon (a short wait on a terminal, so that the progress line
 * moves); `test --status`: one status answer, now. Prints the outcome, or the
 * progress of a run still going. */
static int run_test(struct rpc_client *c, const struct ctl_cmd *cmd)
{
    bool tty = isatty(STDERR_FILENO);
    bool once = strcmp(json_str(cmd->args, "action"), "status") == 0;
    int status = 0;
    cJSON *args = cmd->args;
    if (!once) {
        cJSON *started = call_tool(c, cmd->tool, cmd->args, &status);
        if (!started)
            return status;
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        cJSON_AddStringToObject(args, "testRunId", json_str(started, "testRunId")
                                                       ? json_str(started, "testRunId") : "");
        cJSON_Delete(started);
    }
    cJSON_AddNumberToObject(args, "waitMs", once ? 0 : tty ? 1000 : 15000);
    cJSON *answer;
    bool drawn = false;
    while ((answer = call_tool(c, cmd->tool, args, &status))) {
        const char *st = json_str(answer, "status");
        if (once || !st || strcmp(st, "running") != 0)
            break;
        if (tty) {
            show_progress(answer);
            drawn = true;
        }
        cJSON_Delete(answer);
    }
    if (drawn)
        fputs("\r\033[K", stderr);
    if (answer) {
        if (cmd->json) {
            render_json(stdout, answer);
        } else if (json_get(answer, "result")) {
            render_test_result(stdout, answer);
        } else {
            render_test_progress(stdout, answer, 0);
            fputc('\n', stdout);
        }
        if (render_test_failed(answer))
            status = CTL_EXIT_TESTS_FAILED;
    }
    cJSON_Delete(answer);
    if (args != cmd->args)
        cJSON_Delete(args);
    return status;
}

/* continue with nothing paused (breakpoints set in a running program): NOT_PAUSED
 * from debug_continue, which strobectl turns into a wait for the next stop, as gdb's
 * continue does in a program that runs: the action becomes "until" (no condition)
 * and true says to ask again. */
static bool continue_waits(struct ctl_cmd *cmd, const cJSON *sc)
{
    const char *code = json_str(json_get(sc, "error"), "code");
    if (cmd->kind != CTL_CONTINUE || cJSON_HasObjectItem(cmd->args, "threadId") || !code ||
        strcmp(code, "NOT_PAUSED") != 0)
        return false;
    cJSON_ReplaceItemInObject(cmd->args, "action", cJSON_CreateString("until"));
    return true;
}

static int run(struct ctl_cmd *cmd)
{
    char err[1024];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "strobectl: %s\n", err);
        return CTL_EXIT_UNREACHABLE;
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
    if (rpc_notify(&c, "notifications/initialized", NULL, err, sizeof err) != 0) {
        fprintf(stderr, "strobectl: %s\n", err);
        status = CTL_EXIT_UNREACHABLE;
        goto out;
    }

    if (cmd->kind == CTL_CRASH || cmd->kind == CTL_TEST) {
        status = cmd->kind == CTL_CRASH ? run_crash(&c, cmd) : run_test(&c, cmd);
        goto out;
    }
    if (cmd->kind == CTL_TOOLS) {
        result = call(&c, "tools/list", NULL, &status);
        if (!result)
            goto out;
        if (cmd->json)
            render_json(stdout, result);
        else
            render_tools(stdout, result);
        cJSON_Delete(result);
        goto out;
    }

    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", cmd->tool);
    cJSON_AddItemReferenceToObject(params, "arguments", cmd->args);
    const char *waiting = cmd->verb ? cmd->verb->progress : NULL;
    struct progress *p = progress_start(waiting);
    result = call(&c, "tools/call", params, &status);
    progress_stop(p);
    if (!result)
        goto out;
    cJSON *owned;
    const cJSON *sc = structured(result, &owned);
    bool is_error = cJSON_IsTrue(json_get(result, "isError"));
    if (is_error && continue_waits(cmd, sc)) {
        cJSON_Delete(owned);
        cJSON_Delete(result);
        params = cJSON_CreateObject();
        cJSON_AddStringToObject(params, "name", cmd->tool);
        cJSON_AddItemReferenceToObject(params, "arguments", cmd->args);
        p = progress_start(waiting);
        result = call(&c, "tools/call", params, &status);
        progress_stop(p);
        if (!result)
            goto out;
        sc = structured(result, &owned);
        is_error = cJSON_IsTrue(json_get(result, "isError"));
    }
    if (cmd->kind == CTL_CALL)
        render_json(stdout, result);
    else if (cmd->json)
        render_json(stdout, sc ? sc : result);
    if (is_error) {
        report_tool_error(result, sc);
        status = CTL_EXIT_TOOL_ERROR;
    } else if (cmd->kind != CTL_CALL && !cmd->json) {
        if (sc) {
            status = print_result(cmd, sc);
            render_store_notes(stderr, sc);
        } else
            render_json(stdout, result);
    } else if (cmd->json && sc && failed_targets(cmd, sc)) {
        status = CTL_EXIT_TARGETS;
    } else if (cmd->json && sc && still_running(cmd, sc)) {
        status = CTL_EXIT_STILL_RUNNING;
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
        return CTL_EXIT_TOOL_ERROR;
    }
    struct ctl_cmd cmd;
    char err[1024];
    if (ctl_parse(argc, argv, cwd, &cmd, err, sizeof err) != 0) {
        fprintf(stderr, "strobectl: %s\nusage: ", err);
        /* A synopsis of several forms: one a line, aligned under the first. */
        for (const char *u = cmd.usage; *u;) {
            size_t n = strcspn(u, "\n");
            fprintf(stderr, "%s%.*s\n", u == cmd.usage ? "" : "       ", (int)n, u);
            u += n + (u[n] == '\n');
        }
        return CTL_EXIT_USAGE;
    }
    int status = 0;
    if (cmd.kind == CTL_HELP && cmd.verb)
        ctl_print_verb_help(stdout, cmd.verb);
    else if (cmd.kind == CTL_HELP)
        ctl_print_overview(stdout);
    else if (cmd.kind == CTL_VERSION)
        printf("strobectl %s\n", STROBE_VERSION);
    else if (cmd.kind == CTL_REPL) /* it parses its own command line (cli/repl/repl.h) */
        status = repl_main(argc - cmd.repl_argi, argv + cmd.repl_argi);
    else
        status = run(&cmd);
    ctl_cmd_free(&cmd);
    return status;
}
