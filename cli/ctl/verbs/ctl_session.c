/*
 * ctl_session.c - strobectl's verbs of sessions: launch, query, sessions, status,
 * stop, retain, delete (debug_launch, debug_query, debug_session), their parsers
 * and their rows of the verb table (ctl_verbs.h). `delete SESSION ID...` removes
 * breakpoints instead (ctl_break.c parses it).
 */
#include "cli/ctl/verbs/ctl_verbs.h"

#include <stdlib.h>
#include <string.h>

#include "cli/ctl/verbs/ctl_break.h"

/* --since/--until: an integer is absolute nanoseconds, anything else ("-5s") is a
 * relative time the daemon parses. */
static cJSON *time_value(const char *s)
{
    const char *d = s + (*s == '-');
    if (*d && strspn(d, "0123456789") == strlen(d))
        return cJSON_CreateNumber((double)strtoll(s, NULL, 10));
    return cJSON_CreateString(s);
}


/* Sets obj.outer.inner = s, creating obj.outer. */
static void add_nested(cJSON *obj, const char *outer, const char *inner, const char *s)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, outer);
    if (!o)
        o = cJSON_AddObjectToObject(obj, outer);
    cJSON_DeleteItemFromObjectCaseSensitive(o, inner);
    cJSON_AddStringToObject(o, inner, s);
}


/* launch [options] PROGRAM [--] [ARGS...] */
static int parse_launch(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    cJSON *args = out->args;
    static const struct ctl_opt opts[] = {
        { "--cwd", OPT_VALUE }, { "--project-root", OPT_VALUE }, { "--env", OPT_VALUE }, { 0 },
    };
    bool dd = false;
    bool have_root = false, have_cwd = false;
    const char *name, *value;
    int k;
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) == 1) {
        if (strcmp(name, "--env") == 0) {
            const char *eq = strchr(value, '=');
            if (!eq || eq == value)
                return ctl_usage_error(w->err, w->errlen, "--env needs KEY=VALUE, not '%s'",
                                   value);
            cJSON *env = cJSON_GetObjectItemCaseSensitive(args, "env");
            if (!env)
                env = cJSON_AddObjectToObject(args, "env");
            char *key = strndup(value, (size_t)(eq - value));
            if (!key)
                return ctl_usage_error(w->err, w->errlen, "out of memory");
            cJSON_DeleteItemFromObjectCaseSensitive(env, key);
            cJSON_AddStringToObject(env, key, eq + 1);
            free(key);
        } else {
            const char *key = strcmp(name, "--cwd") == 0 ? "cwd" : "projectRoot";
            have_root |= key[0] == 'p';
            have_cwd |= key[0] == 'c';
            if (ctl_add_absolute(args, key, cwd, value, w->err, w->errlen) != 0)
                return -1;
        }
    }
    if (k < 0)
        return -1;
    if (k == 0)
        return ctl_usage_error(w->err, w->errlen, "launch needs a PROGRAM");
    /* A PROGRAM with a '/' is a path: make it absolute here, where "relative" means
     * something; a bare name is left to the daemon's PATH search. */
    if (strchr(value, '/')) {
        if (ctl_add_absolute(args, "command", cwd, value, w->err, w->errlen) != 0)
            return -1;
    } else {
        cJSON_AddStringToObject(args, "command", value);
    }
    if (!have_root)
        cJSON_AddStringToObject(args, "projectRoot", cwd);
    /* The program runs where the caller is, as from a shell: its relative paths
     * ("python3 bug.py") mean what they meant at the prompt (the daemon's default,
     * the program's own directory, suits an agent naming a binary). */
    if (!have_cwd)
        cJSON_AddStringToObject(args, "cwd", cwd);
    /* Everything after PROGRAM belongs to it; a "--" right after it separates. */
    if (w->i < w->argc && strcmp(w->argv[w->i], "--") == 0)
        w->i++;
    cJSON *argv = cJSON_AddArrayToObject(args, "args");
    for (; w->i < w->argc; w->i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(w->argv[w->i]));
    return 0;
}


/* One filter option of query into the arguments ctx. */
static int query_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    cJSON *args = ctx;
    if (strcmp(name, "--type") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(args, "eventType");
        cJSON_AddStringToObject(args, "eventType", value);
    } else if (strcmp(name, "--function") == 0) {
        add_nested(args, "function", "contains", value);
    } else if (strcmp(name, "--function-equals") == 0) {
        add_nested(args, "function", "equals", value);
    } else if (strcmp(name, "--function-regex") == 0) {
        add_nested(args, "function", "matches", value);
    } else if (strcmp(name, "--file") == 0) {
        add_nested(args, "sourceFile", "contains", value);
    } else if (strcmp(name, "--thread") == 0) {
        add_nested(args, "threadName", "contains", value);
    } else if (strcmp(name, "--since") == 0 || strcmp(name, "--until") == 0) {
        const char *key = name[2] == 's' ? "timeFrom" : "timeTo";
        cJSON_DeleteItemFromObjectCaseSensitive(args, key);
        cJSON_AddItemToObject(args, key, time_value(value));
    } else if (strcmp(name, "--after") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(args, "afterEventId");
        cJSON_AddStringToObject(args, "afterEventId", value);
    } else if (strcmp(name, "--verbose") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(args, "verbose");
        cJSON_AddTrueToObject(args, "verbose");
    } else if (strcmp(name, "--open-calls") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(args, "openCalls");
        cJSON_AddTrueToObject(args, "openCalls");
    } else {
        /* The numeric ones: --pid, --min-duration, --limit, --offset. The daemon
         * checks the ranges of the protocol; here only what a number can be. */
        static const struct { const char *opt, *key; long long min, max; } nums[] = {
            { "--pid", "pid", 1, 2147483647LL },
            { "--min-duration", "minDurationNs", 0, 9007199254740992LL },
            { "--limit", "limit", 1, 2147483647LL },
            { "--offset", "offset", 0, 2147483647LL },
        };
        size_t j = 0;
        while (strcmp(nums[j].opt, name) != 0)
            j++;
        return ctl_set_int(w, args, nums[j].key, name, value, nums[j].min, nums[j].max);
    }
    return 0;
}

/* query SESSION [filters] */
static int parse_query(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct ctl_opt opts[] = {
        { "--type", OPT_VALUE },   { "--function", OPT_VALUE }, { "--function-equals", OPT_VALUE },
        { "--function-regex", OPT_VALUE }, { "--file", OPT_VALUE }, { "--pid", OPT_VALUE },
        { "--thread", OPT_VALUE }, { "--since", OPT_VALUE },    { "--until", OPT_VALUE },
        { "--min-duration", OPT_VALUE }, { "--limit", OPT_VALUE }, { "--offset", OPT_VALUE },
        { "--after", OPT_VALUE },  { "--verbose", OPT_FLAG },   { "--open-calls", OPT_FLAG },
        { 0 },
    };
    const char *sid = NULL;
    if (ctl_collect(w, opts, query_opt, out->args, &sid, 1) < 0)
        return -1;
    return ctl_set_session(w, out->args, sid, "query");
}


/* stop's --retain into the arguments ctx. */
static int retain_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    (void)w, (void)name, (void)value;
    if (!cJSON_HasObjectItem(ctx, "retain"))
        cJSON_AddTrueToObject(ctx, "retain");
    return 0;
}

/* status, stop, retain, delete: debug_session with one SESSION (and stop's
 * --retain; retain is stop --retain). */
static int parse_session(struct ctl_walker *w, const char *verb, const char *action,
                         cJSON *args)
{
    static const struct ctl_opt stop_opts[] = { { "--retain", OPT_FLAG }, { 0 } };
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool stop = strcmp(action, "stop") == 0;
    const char *sid = NULL;
    cJSON_AddStringToObject(args, "action", action);
    if (ctl_collect(w, stop ? stop_opts : no_opts, retain_opt, args, &sid, 1) < 0)
        return -1;
    return ctl_set_session(w, args, sid, verb);
}


static int parse_sessions(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    cJSON_AddStringToObject(out->args, "action", "list");
    return ctl_parse_none(w, "sessions");
}

static int parse_status(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    return parse_session(w, "status", "status", out->args);
}

static int parse_stop(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    return parse_session(w, "stop", "stop", out->args);
}

static int parse_retain(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    cJSON_AddTrueToObject(out->args, "retain");
    return parse_session(w, "retain", "stop", out->args);
}

/* delete SESSION deletes the session; delete SESSION ID...|all, breakpoints. */
static int parse_delete(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    if (!ctl_delete_is_breakpoints(w->argc, w->argv, w->i))
        return parse_session(w, "delete", "delete", out->args);
    out->kind = CTL_BP_DELETE;
    out->tool = "debug_breakpoint";
    out->usage = U_BPDELETE;
    return ctl_parse_break(w, CTL_BP_DELETE, out->args);
}

#define SESSION_OPT "  --json          print the tool's structured result as JSON\n"

const struct ctl_verb ctl_session_verbs[] = {
    { "launch", CTL_LAUNCH, "debug_launch",
      "strobectl launch [--cwd DIR] [--project-root DIR] [--env K=V]... PROGRAM [--] "
      "[ARGS...]",
      "start PROGRAM under strobe; prints its session id and next steps",
      "Starts PROGRAM under strobe (debug_launch): its stdout and stderr are\n"
      "recorded, the trace patterns and breakpoints staged without a SESSION are\n"
      "applied. Prints 'session ID pid N' and the strobectl commands to run next.\n"
      "A PROGRAM with a '/' is made absolute against the current directory; a bare\n"
      "name is searched in PATH. Everything after PROGRAM is its own arguments.\n",
      "  --cwd DIR            the program's working directory (default: its own)\n"
      "  --project-root DIR   the project whose code is 'user code' (default: .)\n"
      "  --env K=V            set a variable in the program's environment (repeat)\n"
      SESSION_OPT,
      "strobectl launch ./app -- --port 8080\n"
      "strobectl --json launch --env RUST_LOG=debug build/server\n",
      0, "starting the program", parse_launch },
    { "query", CTL_QUERY, "debug_query",
      "strobectl query SESSION [--type T] [--function S] [--function-equals N] "
      "[--function-regex RE] [--file S] [--pid N] [--thread S] [--since T] [--until T] "
      "[--min-duration NS] [--open-calls] [--limit N] [--offset N] [--after ID] [--verbose]",
      "print a session's events: output, function calls, crashes, exits",
      "Prints the session's events (debug_query) one a line, oldest first, and how to\n"
      "get the next page. Output (stdout, stderr) is always recorded; function calls\n"
      "once `strobectl trace` added patterns.\n",
      "  --type T             stdout, stderr, function_enter, function_exit, crash,\n"
      "                       process_exit, variable_snapshot, watch_hit, pause,\n"
      "                       logpoint, ...\n"
      "  --function S         function name contains S (--function-equals N: is N,\n"
      "                       --function-regex RE: matches the Perl regex RE)\n"
      "  --file S             source file contains S\n"
      "  --pid N, --thread S  one process; thread name contains S\n"
      "  --since T, --until T ns since the session started, or before its latest\n"
      "                       event: -5s, -500ms, -1m\n"
      "  --min-duration NS    calls that took at least NS nanoseconds\n"
      "  --open-calls         calls entered and not yet returned, innermost last\n"
      "  --limit N            at most N events (default 50, max 500)\n"
      "  --offset N, --after ID  the next page: skip N, or events after event ID\n"
      "  --verbose            full paths, process and thread, watch values\n"
      SESSION_OPT,
      "strobectl query S --type stderr\n"
      "strobectl query S --function parse_ --since -5s --verbose\n",
      0, "querying the session", parse_query },
    { "sessions", CTL_SESSIONS, "debug_session", "strobectl sessions",
      "list every stored session: running, ended, retained",
      "Lists every session the daemon stores (debug_session list): id, state,\n"
      "pid, command, and whether its data is retained.\n",
      SESSION_OPT, "strobectl sessions\n", 0, NULL, parse_sessions },
    { "status", CTL_STATUS, "debug_session", "strobectl status SESSION",
      "is it running or how it ended; paused threads, trace state",
      "Prints the session's state (debug_session status): running or how it ended\n"
      "(exit code, signal), its processes, paused threads, trace patterns, event\n"
      "counts.\n",
      SESSION_OPT, "strobectl status S\n", 0, NULL, parse_status },
    { "stop", CTL_STOP, "debug_session", "strobectl stop SESSION [--retain]",
      "end the program (killed if it runs) and delete its data",
      "Ends the session (debug_session stop): kills the program if it still runs,\n"
      "then deletes its events, unless --retain keeps them queryable.\n",
      "  --retain        keep the session's events (same as strobectl retain)\n"
      SESSION_OPT,
      "strobectl stop S\nstrobectl stop S --retain\n", 0, "stopping the program",
      parse_stop },
    { "retain", CTL_STOP, "debug_session", "strobectl retain SESSION",
      "end the program and keep its data (stop --retain)",
      "Ends the session like stop, keeping its events queryable (query, crash,\n"
      "sessions list it as retained) until `strobectl delete SESSION`.\n",
      SESSION_OPT, "strobectl retain S\n", 0, "stopping the program", parse_retain },
    { "delete", CTL_DELETE, "debug_session",
      "strobectl delete SESSION\nstrobectl delete SESSION ID...|all",
      "delete a stored session; with IDs or all, remove breakpoints",
      "With a SESSION alone: deletes the session and its data (debug_session\n"
      "delete; the program is killed if it runs). With breakpoint IDs (as break and\n"
      "breakpoints print them) or 'all': removes those breakpoints\n"
      "(debug_breakpoint remove) and keeps the session.\n",
      SESSION_OPT,
      "strobectl delete S\nstrobectl delete S 1 3\nstrobectl delete S all\n",
      0, NULL, parse_delete },
    { 0 },
};
