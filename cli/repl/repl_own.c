/*
 * repl_own.c - strobe's own REPL commands, beyond gdb's: trace (debug_trace),
 * events (strobectl query's flags, parsed by ctl_parse), crash (the crash reports of
 * crash_report.h), output (the program's stdout and stderr), test (strobectl
 * test's flags; polled to the end, Ctrl-C stops waiting), and session (attach the
 * REPL to a session the daemon runs).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/render/crash_report.h"
#include "cli/ctl/verbs/ctl_args.h"
#include "cli/ctl/verbs/ctl_verbs.h"
#include "cli/json_view.h"
#include "cli/render/render.h"
#include "cli/render/render_test.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_state.h"
#include "cli/repl/repl_wait.h"

/* Most words a command line is split into for ctl_parse. */
#define MAX_WORDS 64

/* Splits s into words (blanks separate them; '...' and "..." quote) after the
 * leading words lead[0..nlead), into argv (each malloc'd). The count, or -1 when
 * there are too many or a quote is not closed. */
static int split_words(const char *s, const char *const *lead, int nlead, char **argv)
{
    int n = 0;
    for (; n < nlead; n++)
        argv[n] = strdup(lead[n]);
    while (*s) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        if (n == MAX_WORDS - 1)
            goto fail;
        char *w = malloc(strlen(s) + 1), *o = w;
        while (*s && !isspace((unsigned char)*s)) {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s && *s != q)
                    *o++ = *s++;
                if (*s != q) {
                    free(w);
                    goto fail;
                }
                s++;
            } else {
                *o++ = *s++;
            }
        }
        *o = '\0';
        argv[n++] = w;
    }
    argv[n] = NULL;
    return n;
fail:
    while (n)
        free(argv[--n]);
    return -1;
}

static void free_words(char **argv, int n)
{
    for (int i = 0; i < n; i++)
        free(argv[i]);
}

/* ctl_parse of "strobectl LEAD... a"; 0 with *cmd filled, 1 after the usage error,
 * or -1 after printing the strobectl verb's help that --help asked for. */
static int parse_ctl(struct repl *r, const char *const *lead, int nlead, const char *a,
                     struct ctl_cmd *cmd)
{
    char *argv[MAX_WORDS];
    int argc = split_words(a, lead, nlead, argv);
    if (argc < 0)
        return repl_fail("Unbalanced quotes, or more than %d words.", MAX_WORDS - 2);
    char err[1024];
    int rc = ctl_parse(argc, argv, r->cwd, cmd, err, sizeof err);
    free_words(argv, argc);
    if (rc != 0)
        return repl_fail("%s\nusage: %s", err, cmd->usage ? cmd->usage + 10 : "");
    if (cmd->kind == CTL_HELP && cmd->verb) {
        printf("The options are strobectl %s's (the REPL gives the session):\n\n",
               cmd->verb->name);
        ctl_print_verb_help(stdout, cmd->verb);
        ctl_cmd_free(cmd);
        return -1;
    }
    return 0;
}

int repl_cmd_events(struct repl *r, const char *a)
{
    if (!repl_need_session(r))
        return 1;
    const char *lead[] = {"strobectl", "query", r->sid};
    struct ctl_cmd cmd;
    int rc = parse_ctl(r, lead, 3, a, &cmd);
    if (rc != 0)
        return rc > 0;
    cJSON *ans = repl_tool(r, "debug_query", cJSON_Duplicate(cmd.args, true));
    if (ans) {
        if (cmd.json)
            render_json(stdout, ans);
        else
            render_query(stdout, ans, cmd.args, "--after", "--offset");
    }
    cJSON_Delete(ans);
    ctl_cmd_free(&cmd);
    return ans ? 0 : 1;
}

int repl_cmd_trace(struct repl *r, const char *a)
{
    size_t n = strcspn(a, " ");
    bool add = n && strncmp(a, "add", n) == 0, rm = n && strncmp(a, "remove", n) == 0;
    const char *pats = a + n + strspn(a + n, " ");
    if ((!add && !rm) || !*pats)
        return repl_fail("Write `trace add PATTERN...` or `trace remove PATTERN...`.");
    cJSON *args = cJSON_CreateObject();
    if (r->sid)
        cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON *list = cJSON_AddArrayToObject(args, add ? "add" : "remove");
    char *copy = strdup(pats);
    for (char *save, *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
        cJSON_AddItemToArray(list, cJSON_CreateString(w));
    free(copy);
    cJSON *ans = repl_tool(r, "debug_trace", args);
    if (ans)
        render_fields(stdout, ans);
    cJSON_Delete(ans);
    return ans ? 0 : 1;
}

int repl_cmd_crash(struct repl *r, const char *a)
{
    (void)a;
    if (!repl_need_session(r))
        return 1;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddStringToObject(args, "eventType", "crash");
    cJSON_AddBoolToObject(args, "verbose", true);
    cJSON *ans = repl_tool(r, "debug_query", args);
    if (ans)
        crash_report_print_all(stdout, json_get(ans, "events"), r->sid, 0, 0);
    cJSON_Delete(ans);
    return ans ? 0 : 1;
}

int repl_cmd_output(struct repl *r, const char *a)
{
    if (!repl_need_session(r))
        return 1;
    if (*a && strcmp(a, "stdout") != 0 && strcmp(a, "stderr") != 0)
        return repl_fail("Write `output`, `output stdout` or `output stderr`.");
    cJSON *events = cJSON_CreateArray();
    char err[1024];
    int status = repl_query_all(r, *a ? a : NULL, NULL, events, err) == 0 ? 0 : 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *t = json_str(e, "eventType");
        if (t && (strcmp(t, "stdout") == 0 || strcmp(t, "stderr") == 0))
            printf("%s\n", json_str(e, "text") ? json_str(e, "text") : "");
    }
    cJSON_Delete(events);
    if (status)
        repl_fail("%s", err);
    return status;
}

int repl_cmd_test(struct repl *r, const char *a)
{
    const char *lead[] = {"strobectl", "test"};
    struct ctl_cmd cmd;
    int rc = parse_ctl(r, lead, 2, a, &cmd);
    if (rc != 0)
        return rc > 0;
    cJSON *args = cJSON_Duplicate(cmd.args, true);
    int status = 0;
    if (strcmp(json_str(args, "action"), "status") != 0) {
        cJSON *started = repl_tool(r, "debug_test", args);
        if (!started) {
            ctl_cmd_free(&cmd);
            return 1;
        }
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        cJSON_AddStringToObject(args, "testRunId", json_str(started, "testRunId")
                                                       ? json_str(started, "testRunId") : "");
        cJSON_Delete(started);
        printf("Running the tests (Ctrl-C stops waiting; the run goes on).\n");
    }
    cJSON_AddNumberToObject(args, "waitMs", 1000);
    cJSON *ans = NULL;
    r->interrupted = 0;
    for (;;) {
        r->waiting = REPL_WAIT_TEST;
        ans = repl_tool(r, "debug_test", cJSON_Duplicate(args, true));
        r->waiting = REPL_WAIT_NONE;
        const char *st = json_str(ans, "status");
        if (!ans || !st || strcmp(st, "running") != 0 || r->interrupted)
            break;
        cJSON_Delete(ans);
    }
    r->interrupted = 0;
    if (!ans) {
        status = 1;
    } else if (json_get(ans, "result")) {
        render_test_result(stdout, ans);
        status = render_test_failed(ans);
    } else {
        render_test_progress(stdout, ans, 0);
        printf("\nStill running: `test --status %s` shows it later.\n",
               json_str(args, "testRunId") ? json_str(args, "testRunId") : "ID");
    }
    cJSON_Delete(ans);
    cJSON_Delete(args);
    ctl_cmd_free(&cmd);
    return status;
}

int repl_cmd_session(struct repl *r, const char *a)
{
    if (!*a)
        return repl_fail("Write `session SESSION_ID` (`sessions` lists them).");
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "status");
    cJSON_AddStringToObject(args, "sessionId", a);
    cJSON *ans = repl_tool(r, "debug_session", args);
    if (!ans)
        return 1;
    if (r->sid && r->own_session && strcmp(r->sid, a) != 0)
        printf("Leaving session %s running.\n", r->sid);
    free(r->sid);
    r->sid = strdup(a);
    r->own_session = false;
    r->exit_shown = false;
    r->pid = json_num(ans, "pid");
    free(r->output_after);
    r->output_after = NULL;
    repl_forget_watches(r);
    repl_set_stop(r, NULL);
    if (json_str(ans, "binaryPath") && (!r->program ||
                                        strcmp(r->program, json_str(ans, "binaryPath")))) {
        free(r->program);
        r->program = strdup(json_str(ans, "binaryPath"));
    }
    printf("[Attached to session %s: process %lld, %s]\n", a, r->pid,
           json_str(ans, "status") ? json_str(ans, "status") : "?");
    /* a thread already paused becomes the selected stop */
    bool paused = cJSON_GetArraySize(json_get(ans, "paused")) > 0;
    cJSON_Delete(ans);
    if (paused) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "sessionId", r->sid);
        cJSON_AddStringToObject(c, "action", "until");
        return repl_wait(r, c);
    }
    return 0;
}
