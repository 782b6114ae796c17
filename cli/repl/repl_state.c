/*
 * repl_state.c - the helpers every REPL command uses on its state: tool calls (the
 * daemon's MCP advice cut, since REPL commands are meant), errors, the session, the
 * last stop and the selected frame. See repl_state.h.
 */
#include "cli/repl/repl_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/render/render_hint.h"

int repl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* The daemon went away under a command (it was stopped, or died): connect to a new
 * one (started when none runs) so that the next command works, and say so in err
 * after the failure. The command is not sent again: it may have done its work. */
static void reconnect(struct repl *r, char *err, size_t errlen)
{
    char why[512];
    size_t n = strlen(err);
    rpc_close(&r->rpc);
    int fd = client_connect(true, why, sizeof why);
    if (fd >= 0) {
        rpc_init(&r->rpc, fd);
        if (rpc_handshake(&r->rpc, "strobe-repl", why, sizeof why) == 0) {
            snprintf(err + n, errlen - n, "; reconnected to the strobe daemon: run the "
                     "command again (a session of the daemon that went away may be gone)");
            return;
        }
        rpc_close(&r->rpc);
    }
    snprintf(err + n, errlen - n, "; reconnecting failed: %s", why);
}

cJSON *repl_tool_quiet(struct repl *r, const char *tool, cJSON *args, char *err,
                       size_t errlen)
{
    fflush(stdout);
    cJSON *answer = rpc_call_tool(&r->rpc, tool, args, err, errlen);
    /* The daemon's advice names MCP tools: cut, since REPL commands are meant. */
    if (!answer && r->rpc.failure == RPC_FAIL_CONNECTION)
        reconnect(r, err, errlen);
    else if (!answer)
        render_error_cut(err);
    return answer;
}

cJSON *repl_tool(struct repl *r, const char *tool, cJSON *args)
{
    char err[2048];
    cJSON *a = repl_tool_quiet(r, tool, args, err, sizeof err);
    if (!a)
        repl_fail("%s", err);
    return a;
}

const char *repl_need_session(struct repl *r)
{
    if (!r->sid)
        repl_fail("The program is not being run: `run` launches it, `session ID` "
                  "attaches to a session.");
    return r->sid;
}

void repl_set_stop(struct repl *r, const cJSON *stop)
{
    cJSON_Delete(r->stop);
    r->stop = stop ? cJSON_Duplicate(stop, true) : NULL;
    r->thread = 0;
    r->frame = 0;
    free(r->list_file);
    r->list_file = NULL;
}

void repl_forget_watches(struct repl *r)
{
    for (int k = 0; k < r->n_watches; k++) {
        free(r->watches[k].watch_id);
        free(r->watches[k].label);
    }
    r->n_watches = 0;
}

void repl_frame_args(struct repl *r, cJSON *args)
{
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    if (!r->stop)
        return;
    cJSON_AddNumberToObject(args, "threadId",
                            r->thread ? r->thread : json_num(r->stop, "threadId"));
    if (r->frame)
        cJSON_AddNumberToObject(args, "frame", r->frame);
}
