/*
 * ctl_trace.c - strobectl's verbs of what the program does and how it died: trace
 * (debug_trace: patterns and watches), crash (the crash events as reports) and
 * stacks (every thread now), their parsers and their rows of the verb table
 * (ctl_verbs.h).
 */
#include "cli/ctl/verbs/ctl_verbs.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void append_string(cJSON *obj, const char *key, const char *s)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!a)
        a = cJSON_AddArrayToObject(obj, key);
    cJSON_AddItemToArray(a, cJSON_CreateString(s));
}


/* --watch VAR[@PATTERN] into args.watches.add. */
static int add_watch(struct ctl_walker *w, cJSON *args, const char *value)
{
    /* VAR@PATTERN: the variable has no '@'; the pattern may ("@usercode"). */
    const char *at = strchr(value, '@');
    if (at == value || !*value)
        return ctl_usage_error(w->err, w->errlen, "--watch needs VAR or VAR@PATTERN, "
                               "not '%s'", value);
    if (at && !at[1])
        return ctl_usage_error(w->err, w->errlen, "--watch %s: a pattern must follow '@'",
                               value);
    cJSON *watches = cJSON_GetObjectItemCaseSensitive(args, "watches");
    if (!watches)
        watches = cJSON_AddObjectToObject(args, "watches");
    cJSON *add = cJSON_GetObjectItemCaseSensitive(watches, "add");
    if (!add)
        add = cJSON_AddArrayToObject(watches, "add");
    char *var = strndup(value, at ? (size_t)(at - value) : strlen(value));
    if (!var)
        return ctl_usage_error(w->err, w->errlen, "out of memory");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "variable", var);
    free(var);
    if (at)
        cJSON_AddItemToArray(cJSON_AddArrayToObject(t, "on"), cJSON_CreateString(at + 1));
    cJSON_AddItemToArray(add, t);
    return 0;
}

struct trace_ctx {
    cJSON *args;
    const char *cwd;
};

static int trace_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    struct trace_ctx *c = ctx;
    if (strcmp(name, "--project-root") == 0)
        return ctl_add_absolute(c->args, "projectRoot", c->cwd, value, w->err, w->errlen);
    if (strcmp(name, "--watch") == 0)
        return add_watch(w, c->args, value);
    if (strcmp(name, "--unwatch") == 0) {
        cJSON *watches = cJSON_GetObjectItemCaseSensitive(c->args, "watches");
        if (!watches)
            watches = cJSON_AddObjectToObject(c->args, "watches");
        append_string(watches, "remove", value);
    } else {
        append_string(c->args, name[2] == 'a' ? "add" : "remove", value);
    }
    return 0;
}

/* trace [SESSION] [--add P]... [--remove P]... [--watch V@P]... [--unwatch L]... */
static int parse_trace(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    static const struct ctl_opt opts[] = {
        { "--add", OPT_VALUE }, { "--remove", OPT_VALUE }, { "--project-root", OPT_VALUE },
        { "--watch", OPT_VALUE }, { "--unwatch", OPT_VALUE }, { 0 },
    };
    struct trace_ctx c = {out->args, cwd};
    const char *sid = NULL;
    if (ctl_collect(w, opts, trace_opt, &c, &sid, 1) < 0)
        return -1;
    if (sid)
        cJSON_AddStringToObject(out->args, "sessionId", sid);
    return 0;
}


/* crash: debug_query of every crash event, verbose (frames, locals, registers). */
static int crash_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    struct ctl_cmd *out = ctx;
    if (strcmp(name, "--full-paths") == 0)
        out->full_paths = true;
    else if (strcmp(name, "--registers") == 0)
        out->registers = true;
    else
        return ctl_set_int(w, out->args, "pid", name, value, 1, INT_MAX);
    return 0;
}

static int parse_crash(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct ctl_opt opts[] = {
        { "--pid", OPT_VALUE }, { "--full-paths", OPT_FLAG }, { "--registers", OPT_FLAG }, { 0 },
    };
    cJSON_AddStringToObject(out->args, "eventType", "crash");
    cJSON_AddTrueToObject(out->args, "verbose");
    cJSON_AddNumberToObject(out->args, "limit", 500);
    const char *sid = NULL;
    if (ctl_collect(w, opts, crash_opt, out, &sid, 1) < 0)
        return -1;
    return ctl_set_session(w, out->args, sid, "crash");
}


/* stacks: debug_session action stacks, of every process or --pid N. */
/* --pid N of a verb whose arguments are ctx. */
static int pid_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    return ctl_set_int(w, ctx, "pid", name, value, 1, INT_MAX);
}

static int parse_stacks(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct ctl_opt opts[] = { { "--pid", OPT_VALUE }, { 0 } };
    cJSON_AddStringToObject(out->args, "action", "stacks");
    const char *sid = NULL;
    if (ctl_collect(w, opts, pid_opt, out->args, &sid, 1) < 0)
        return -1;
    return ctl_set_session(w, out->args, sid, "stacks");
}


#define JSON_OPT "  --json          print the tool's structured result as JSON\n"

const struct ctl_verb ctl_trace_verbs[] = {
    { "trace", CTL_TRACE, "debug_trace",
      "strobectl trace [SESSION] [--add PATTERN]... [--remove PATTERN]... "
      "[--watch VAR[@PATTERN]]... [--unwatch LABEL]... [--project-root DIR]",
      "trace functions by pattern: calls, arguments, return values",
      "Adds or removes trace patterns of a running session (debug_trace): each call\n"
      "of a matching function records function_enter and function_exit events with\n"
      "arguments, return value and duration (strobectl query SESSION --type\n"
      "function_enter). Without SESSION the patterns are staged for the next launch.\n"
      "Prints the patterns, how many functions they hooked, and the watches.\n"
      "Patterns: strobe-patterns(7) (name, ns::*, parse_*, @usercode, @file:calc.c).\n",
      "  --add PATTERN         trace the functions PATTERN matches (repeat)\n"
      "  --remove PATTERN      stop tracing them\n"
      "  --watch VAR[@PATTERN] read the global VAR at each traced call (matching\n"
      "                        PATTERN); shown by query --verbose\n"
      "  --unwatch LABEL       remove a watch\n"
      "  --project-root DIR    what @usercode means when staging\n"
      JSON_OPT,
      "strobectl trace S --add 'parse_*'\n"
      "strobectl trace S --watch cfg.retries@'net::*'\n"
      "strobectl trace --add main   # staged for the next launch\n",
      0, "resolving the patterns", parse_trace },
    { "crash", CTL_CRASH, "debug_query", "strobectl crash SESSION [--pid N] [--full-paths] "
      "[--registers]",
      "how the program died: signal or panic, stack, arguments, locals",
      "Prints each crash event of the session like a crash reporter: the signal,\n"
      "assertion, uncaught exception, panic or sanitizer report, the stack with\n"
      "file:line and arguments, the crashing frame's locals. --json prints the crash\n"
      "events as an array.\n",
      "  --pid N         only that process's crash\n"
      "  --full-paths    source files and modules as recorded, not shortened\n"
      "  --registers     the registers at the crash too\n"
      JSON_OPT,
      "strobectl crash S\nstrobectl crash S --registers --full-paths\n",
      CTL_EXIT_BIT(CTL_EXIT_NO_CRASH), "reading the crash", parse_crash },
    { "stacks", CTL_STACKS, "debug_session", "strobectl stacks SESSION [--pid N]",
      "every thread's stack now, what it waits for; deadlocks first",
      "Stops every thread of the running program for a moment and prints where each\n"
      "one is (debug_session stacks, like gdb's thread apply all bt): name, state,\n"
      "what it waits for (a mutex and who holds it), frames. A deadlock (a wait\n"
      "cycle) is named first.\n",
      "  --pid N         only that process\n"
      JSON_OPT,
      "strobectl stacks S\n", 0, "reading the threads", parse_stacks },
    { 0 },
};
