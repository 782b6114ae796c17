/*
 * ctl_break.c - argv to the arguments of debug_breakpoint (break, breakpoints,
 * delete SESSION ID...|all) and debug_continue (continue, next, step, finish, pause,
 * until), field for field as docs/PROTOCOL.md names them. See ctl_break.h.
 */
#include "cli/ctl/verbs/ctl_break.h"

#include "cli/ctl/verbs/ctl_verbs.h"

#include <stdlib.h>
#include <string.h>

/* Largest thread id, breakpoint id and line number accepted. */
#define NUM_MAX 2147483647LL
/* debug_continue's timeoutMs range. */
#define TIMEOUT_MAX 60000

/* Replaces obj.key. */
static void set_item(cJSON *obj, const char *key, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, v);
}

/* ---- break ---------------------------------------------------------------------- */

/* The location of a spec: FILE:LINE when spec ends with ':' and digits after a
 * file name, else a function pattern (parse_config, ns::Parser::*, @file:calc.c). */
static int add_location(struct ctl_walker *w, const char *spec, cJSON *bp)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1] ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
        cJSON_AddStringToObject(bp, "function", spec);
        return 0;
    }
    char *end;
    long long line = strtoll(colon + 1, &end, 10);
    if (line < 1 || line > NUM_MAX)
        return ctl_usage_error(w->err, w->errlen, "the LINE of '%s' must be between 1 and "
                               "%lld", spec, NUM_MAX);
    char *file = strndup(spec, (size_t)(colon - spec));
    if (!file)
        return ctl_usage_error(w->err, w->errlen, "out of memory");
    cJSON_AddStringToObject(bp, "file", file);
    free(file);
    cJSON_AddNumberToObject(bp, "line", (double)line);
    return 0;
}

/* break's options into the spec object ctx. */
static int break_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    cJSON *bp = ctx;
    if (strcmp(name, "--hit") == 0) {
        long long n;
        if (ctl_parse_int(name, value, 1, NUM_MAX, &n, w->err, w->errlen) != 0)
            return -1;
        set_item(bp, "hitCount", cJSON_CreateNumber((double)n));
    } else if (strcmp(name, "--once") == 0) {
        set_item(bp, "oneShot", cJSON_CreateTrue());
    } else if (strcmp(name, "--all-stop") == 0) {
        set_item(bp, "allStop", cJSON_CreateTrue());
    } else {
        bool cond = strcmp(name, "--if") == 0;
        if (!*value)
            return ctl_usage_error(w->err, w->errlen, "%s needs %s", name,
                                   cond ? "a condition" : "a MESSAGE");
        set_item(bp, cond ? "condition" : "message", cJSON_CreateString(value));
    }
    return 0;
}

/* break [SESSION] FUNCTION|FILE:LINE [options]: one spec to add; without SESSION it
 * is staged for the next launch. */
static int parse_break(struct ctl_walker *w, cJSON *args)
{
    static const struct ctl_opt opts[] = {
        { "--if", OPT_VALUE }, { "--hit", OPT_VALUE }, { "--once", OPT_FLAG },
        { "--all-stop", OPT_FLAG }, { "--log", OPT_VALUE }, { 0 },
    };
    const char *pos[2];
    cJSON *options = cJSON_CreateObject();
    int n = ctl_collect(w, opts, break_opt, options, pos, 2);
    int rc = -1;
    if (n == 0)
        ctl_usage_error(w->err, w->errlen, "break needs a FUNCTION or FILE:LINE");
    else if (n > 0 && cJSON_HasObjectItem(options, "message") &&
             cJSON_HasObjectItem(options, "allStop"))
        ctl_usage_error(w->err, w->errlen, "--all-stop goes with breakpoints: a logpoint "
                        "(--log) never pauses");
    else if (n > 0)
        rc = 0;
    if (rc == 0) {
        if (n == 2)
            cJSON_AddStringToObject(args, "sessionId", pos[0]);
        cJSON *bp = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "add"), bp);
        rc = add_location(w, pos[n - 1], bp);
        cJSON *o;
        while (rc == 0 && (o = options->child))
            cJSON_AddItemToObject(bp, o->string,
                                  cJSON_DetachItemViaPointer(options, o));
    }
    cJSON_Delete(options);
    return rc;
}

/* ---- breakpoints, delete -------------------------------------------------------- */

bool ctl_delete_is_breakpoints(int argc, char **argv, int i)
{
    int n = 0;
    bool dd = false;
    for (; i < argc; i++) {
        if (!dd && strcmp(argv[i], "--") == 0)
            dd = true;
        else if (dd || argv[i][0] != '-' || argv[i][1] == '\0')
            n++;
    }
    return n >= 2;
}

/* delete SESSION ID...|all: remove [ids] or "*". */
static int parse_delete(struct ctl_walker *w, cJSON *args)
{
    static const struct ctl_opt no_opts[] = { { 0 } };
    const char *pos[1 + 64];
    int n = ctl_collect(w, no_opts, NULL, NULL, pos, (int)(sizeof pos / sizeof pos[0]));
    if (n < 0)
        return -1;
    if (n < 2)
        return ctl_usage_error(w->err, w->errlen, "delete needs a SESSION and breakpoint "
                               "IDs or 'all'");
    cJSON_AddStringToObject(args, "sessionId", pos[0]);
    cJSON *ids = cJSON_CreateArray();
    bool all = false;
    for (int j = 1; j < n; j++) {
        char *end;
        long long id = strtoll(pos[j], &end, 10);
        if (strcmp(pos[j], "all") == 0 || strcmp(pos[j], "*") == 0) {
            all = true;
        } else if (*pos[j] >= '0' && *pos[j] <= '9' && !*end && id >= 1 && id <= NUM_MAX) {
            cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)id));
        } else {
            cJSON_Delete(ids);
            return ctl_usage_error(w->err, w->errlen, "delete needs breakpoint IDs "
                                   "(numbers) or 'all', not '%s'", pos[j]);
        }
    }
    if (all && cJSON_GetArraySize(ids) > 0) {
        cJSON_Delete(ids);
        return ctl_usage_error(w->err, w->errlen, "delete takes breakpoint IDs or 'all', "
                               "not both");
    }
    if (all) {
        cJSON_Delete(ids);
        cJSON_AddStringToObject(args, "remove", "*");
    } else {
        cJSON_AddItemToObject(args, "remove", ids);
    }
    return 0;
}

/* ---- continue, next, step, finish, pause, until ---------------------------------- */

/* What the options of an execution command said. */
struct run_opts {
    long long thread, timeout, breakpoint; /* 0: not given */
    const char *memory, *text, *matches, *stream;
};

static int run_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    struct run_opts *o = ctx;
    if (strcmp(name, "--thread") == 0)
        return ctl_parse_int(name, value, 1, NUM_MAX, &o->thread, w->err, w->errlen);
    if (strcmp(name, "--timeout") == 0)
        return ctl_parse_int(name, value, 1, TIMEOUT_MAX, &o->timeout, w->err, w->errlen);
    if (strcmp(name, "--breakpoint") == 0)
        return ctl_parse_int(name, value, 1, NUM_MAX, &o->breakpoint, w->err, w->errlen);
    if (!*value)
        return ctl_usage_error(w->err, w->errlen, "%s needs a value", name);
    if (strcmp(name, "--stream") == 0 && strcmp(value, "stdout") != 0 &&
        strcmp(value, "stderr") != 0)
        return ctl_usage_error(w->err, w->errlen, "--stream is stdout or stderr, not '%s'",
                               value);
    const char **slot = strcmp(name, "--memory") == 0 ? &o->memory
                      : strcmp(name, "--text") == 0   ? &o->text
                      : strcmp(name, "--matches") == 0 ? &o->matches
                                                       : &o->stream;
    *slot = value;
    return 0;
}

/* until's condition: exactly one of breakpoint, memory, event. */
static cJSON *until_condition(struct ctl_walker *w, const struct run_opts *o)
{
    int n = (o->breakpoint != 0) + (o->memory != NULL) + (o->text != NULL) +
            (o->matches != NULL);
    if (n == 0) {
        ctl_usage_error(w->err, w->errlen, "until needs a condition: --breakpoint ID, "
                        "--memory EXPR, --text STRING or --matches REGEX");
        return NULL;
    }
    if (n > 1) {
        ctl_usage_error(w->err, w->errlen, "until waits for one condition; give only one "
                        "of --breakpoint, --memory, --text and --matches");
        return NULL;
    }
    if (o->stream && !o->text && !o->matches) {
        ctl_usage_error(w->err, w->errlen, "--stream goes with --text or --matches");
        return NULL;
    }
    cJSON *c = cJSON_CreateObject();
    if (o->breakpoint) {
        cJSON_AddNumberToObject(c, "breakpoint", (double)o->breakpoint);
    } else if (o->memory) {
        cJSON_AddStringToObject(c, "memory", o->memory);
    } else {
        cJSON *e = cJSON_AddObjectToObject(c, "event");
        cJSON *t = cJSON_AddObjectToObject(e, "text");
        cJSON_AddStringToObject(t, o->text ? "contains" : "matches",
                                o->text ? o->text : o->matches);
        if (o->stream)
            cJSON_AddStringToObject(e, "eventType", o->stream);
    }
    return c;
}

static int parse_run(struct ctl_walker *w, enum ctl_kind kind, cJSON *args)
{
    static const struct ctl_opt step_opts[] = {
        { "--thread", OPT_VALUE }, { "--timeout", OPT_VALUE }, { 0 },
    };
    static const struct ctl_opt until_opts[] = {
        { "--breakpoint", OPT_VALUE }, { "--memory", OPT_VALUE }, { "--text", OPT_VALUE },
        { "--matches", OPT_VALUE }, { "--stream", OPT_VALUE }, { "--timeout", OPT_VALUE },
        { 0 },
    };
    static const struct ctl_opt no_opts[] = { { 0 } };
    /* by kind - CTL_CONTINUE: the command and its action */
    static const char *const cmds[] = { "continue", "next", "step", "finish", "pause",
                                        "until" };
    static const char *const actions[] = { "continue", "step-over", "step-into",
                                           "step-out", "pause", "until" };
    const char *action = actions[kind - CTL_CONTINUE];
    struct run_opts o = { 0 };
    const char *sid;
    int n = ctl_collect(w, kind == CTL_UNTIL ? until_opts : kind == CTL_PAUSE ? no_opts
                                                                          : step_opts,
                    run_opt, &o, &sid, 1);
    if (n < 0)
        return -1;
    if (n == 0)
        return ctl_usage_error(w->err, w->errlen, "%s needs a SESSION id",
                               cmds[kind - CTL_CONTINUE]);
    cJSON *cond = NULL;
    if (kind == CTL_UNTIL && !(cond = until_condition(w, &o)))
        return -1;
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "action", action);
    if (o.thread)
        cJSON_AddNumberToObject(args, "threadId", (double)o.thread);
    if (cond)
        cJSON_AddItemToObject(args, "condition", cond);
    if (o.timeout)
        cJSON_AddNumberToObject(args, "timeoutMs", (double)o.timeout);
    return 0;
}

int ctl_parse_break(struct ctl_walker *w, enum ctl_kind kind, cJSON *args)
{
    static const struct ctl_opt no_opts[] = { { 0 } };
    const char *sid;
    int n;
    switch (kind) {
    case CTL_BREAK:
        return parse_break(w, args);
    case CTL_BREAKPOINTS:
        if ((n = ctl_collect(w, no_opts, NULL, NULL, &sid, 1)) < 0)
            return -1;
        if (n == 1)
            cJSON_AddStringToObject(args, "sessionId", sid);
        return 0;
    case CTL_BP_DELETE:
        return parse_delete(w, args);
    default:
        return parse_run(w, kind, args);
    }
}

static int parse_verb(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    return ctl_parse_break(w, out->kind, out->args);
}

#define JSON_OPT "  --json          print the tool's structured result as JSON\n"
#define STEP_OPTS \
    "  --thread TID    the paused thread (default: the one that paused last)\n" \
    "  --timeout MS    how long to wait for the stop (1-60000, default 10000)\n" JSON_OPT
#define STOP_PRINTS \
    "Prints where the thread stopped: the line, the frames, their arguments and\n" \
    "locals (or how the program ended). Exits 5 when the wait timed out with the\n" \
    "program still running.\n"
#define STILL_RUNNING CTL_EXIT_BIT(CTL_EXIT_STILL_RUNNING)

const struct ctl_verb ctl_break_verbs[] = {
    { "break", CTL_BREAK, "debug_breakpoint", U_BREAK,
      "pause a thread at a function or FILE:LINE; logpoints",
      "Sets a breakpoint (debug_breakpoint add) at FUNCTION (a trace pattern) or\n"
      "FILE:LINE: a thread that reaches it while --if COND holds (a C expression over\n"
      "its arguments, locals and globals) pauses, and `strobectl continue` waits for\n"
      "it. --log MESSAGE makes a logpoint instead: it records MESSAGE ({expr}\n"
      "replaced by its value) as a logpoint event and never pauses. Without SESSION\n"
      "the breakpoint is staged for the next launch. Prints the breakpoints.\n",
      "  --if COND       pause only when COND holds\n"
      "  --hit N         from the Nth hit on (with --once: only the Nth)\n"
      "  --once          remove it after it pauses once\n"
      "  --all-stop      stop every thread, not only the one that hit it\n"
      "  --log MESSAGE   a logpoint\n" JSON_OPT,
      "strobectl break S calc.c:42 --if 'n > 3'\n"
      "strobectl break S parse_config --log 'path={path}'\n"
      "strobectl break main   # staged for the next launch\n",
      0, "binding the breakpoint", parse_verb },
    { "breakpoints", CTL_BREAKPOINTS, "debug_breakpoint", U_BREAKPOINTS,
      "list the breakpoints: id, kind, where, hits, condition",
      "Lists the session's breakpoints and logpoints (debug_breakpoint), or the\n"
      "staged ones without SESSION: id, kind, where they bound, hits, condition.\n"
      "Remove them with strobectl delete SESSION ID...|all.\n",
      JSON_OPT, "strobectl breakpoints S\n", 0, NULL, parse_verb },
    { "continue", CTL_CONTINUE, "debug_continue", U_CONTINUE,
      "resume the paused threads and wait for the next stop",
      "Resumes the paused threads (--thread: that one) and waits for a thread to\n"
      "pause or the program to end (debug_continue). With nothing paused it waits\n"
      "for the next stop, like gdb's continue in a running program.\n" STOP_PRINTS,
      STEP_OPTS, "strobectl continue S\nstrobectl continue S --timeout 30000\n",
      STILL_RUNNING, "waiting for a stop", parse_verb },
    { "next", CTL_NEXT, "debug_continue", U_NEXT,
      "step the paused thread to the next line, over calls",
      "Steps the paused thread to the next source line, running over calls\n"
      "(debug_continue step-over, gdb's next).\n" STOP_PRINTS,
      STEP_OPTS, "strobectl next S\n", STILL_RUNNING, "stepping", parse_verb },
    { "step", CTL_STEP, "debug_continue", U_STEP,
      "step the paused thread into the function it calls",
      "Steps the paused thread to the next source line, into a called function\n"
      "(debug_continue step-into, gdb's step).\n" STOP_PRINTS,
      STEP_OPTS, "strobectl step S --thread 1235\n", STILL_RUNNING, "stepping", parse_verb },
    { "finish", CTL_FINISH, "debug_continue", U_FINISH,
      "run the paused thread out to its caller; prints the return value",
      "Runs the paused thread until its function returns (debug_continue step-out,\n"
      "gdb's finish) and prints the return value with the stop.\n" STOP_PRINTS,
      STEP_OPTS, "strobectl finish S\n", STILL_RUNNING, "stepping out", parse_verb },
    { "until", CTL_UNTIL, "debug_continue", U_UNTIL,
      "resume until a breakpoint, a memory condition or a line of output",
      "Resumes and waits (debug_continue until) until breakpoint ID pauses a thread,\n"
      "the C expression over globals holds, or a line of output contains STRING or\n"
      "matches REGEX.\n" STOP_PRINTS,
      "  --breakpoint ID  a breakpoint pauses a thread\n"
      "  --memory EXPR    EXPR over globals holds (g_count >= 100)\n"
      "  --text STRING    a line of output contains STRING\n"
      "  --matches REGEX  a line of output matches REGEX\n"
      "  --stream stdout|stderr   which output --text and --matches read\n"
      "  --timeout MS     how long to wait (1-60000, default 10000)\n" JSON_OPT,
      "strobectl until S --text ready --stream stdout\n"
      "strobectl until S --memory 'g_count >= 100'\n",
      STILL_RUNNING, "waiting for the condition", parse_verb },
    { "pause", CTL_PAUSE, "debug_continue", U_PAUSE,
      "interrupt every thread of the program now",
      "Interrupts every thread of the running program (debug_continue pause) and\n"
      "prints where the latest one stopped; continue, next, step or finish go on.\n",
      JSON_OPT, "strobectl pause S\n", STILL_RUNNING, "pausing the program", parse_verb },
    { 0 },
};
