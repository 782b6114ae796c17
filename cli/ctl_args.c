/*
 * ctl_args.c - strobectl's argument parser: argv to a tools/call name and its JSON
 * arguments, following docs/PROTOCOL.md's request fields. See ctl_args.h.
 */
#include "cli/ctl_args.h"

#include "cli/ctl_break.h"
#include "cli/ctl_test.h"
#include "cli/ctl_walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U_LAUNCH "strobectl launch [--cwd DIR] [--project-root DIR] [--env K=V]... " \
                 "PROGRAM [--] [ARGS...]"
#define U_QUERY  "strobectl query SESSION [--type T] [--function S] " \
                 "[--function-equals N] [--function-regex RE] [--file S] [--pid N] " \
                 "[--thread S] [--since T] [--until T] [--min-duration NS] " \
                 "[--limit N] [--offset N] [--after ID] [--verbose]"
#define U_SESSIONS "strobectl sessions"
#define U_STATUS "strobectl status SESSION"
#define U_STOP   "strobectl stop SESSION [--retain]"
#define U_DELETE "strobectl delete SESSION"
#define U_TRACE  "strobectl trace [SESSION] [--add PATTERN]... [--remove PATTERN]... " \
                 "[--watch VAR[@PATTERN]]... [--unwatch LABEL]... [--project-root DIR]"
#define U_MEMREAD "strobectl memory read SESSION [VAR]... [--address A --type T " \
                  "[--size N]]... [--depth N] [--pid N]"
#define U_MEMWRITE "strobectl memory write SESSION VAR=VALUE... [--pid N]"
#define U_MEMPOLL "strobectl memory poll SESSION [VAR]... [--address A --type T]... " \
                  "--interval MS --duration MS [--depth N] [--pid N]"
#define U_WATCH  "strobectl watch SESSION VAR|--address A [--size N] [--type T] " \
                 "[--access write|readwrite] [--pid N]"
#define U_UNWATCH "strobectl unwatch SESSION ID|all"
#define U_CRASH  "strobectl crash SESSION [--pid N] [--full-paths] [--registers]"
#define U_STACKS "strobectl stacks SESSION [--pid N]"
#define U_MEMORY "strobectl memory SESSION [VARIABLE...] [--address ADDR:TYPE[:SIZE]]... " \
                 "[--set VARIABLE=VALUE]... [--depth N] [--pid N]"
#define U_TOOLS  "strobectl tools"
#define U_CALL   "strobectl call TOOL [JSON-ARGUMENTS]"
#define U_ANY    "strobectl [--json] COMMAND [ARGS...]; see strobectl --help"

const char ctl_help[] =
    "usage: strobectl [--json] COMMAND [ARGS...]\n"
    "\n"
    "Talks to the strobe daemon (started if needed) over $STROBE_HOME/strobe.sock.\n"
    "\n"
    "commands:\n"
    "  " U_LAUNCH "\n"
    "      start PROGRAM under strobe; prints the session id and pid\n"
    "  strobectl query SESSION [OPTIONS]\n"
    "      print the session's events (output, function calls, exits); OPTIONS:\n"
    "      --type T, --function SUBSTR, --function-equals NAME, --function-regex RE,\n"
    "      --file SUBSTR, --pid N, --thread SUBSTR, --since T, --until T (ns since\n"
    "      the session started, or before its latest event: -5s, -500ms, -1m),\n"
    "      --min-duration NS, --limit N (default 50, max 500), --offset N,\n"
    "      --after EVENT-ID, --verbose\n"
    "  " U_SESSIONS "\n"
    "      list every stored session\n"
    "  " U_STATUS "\n"
    "  " U_STOP "\n"
    "      kill the target if it runs; delete its data unless --retain\n"
    "  " U_DELETE "\n"
    "  " U_TRACE "\n"
    "      add or remove trace patterns (pending for the next launch without SESSION);\n"
    "      --watch VAR@PATTERN reads VAR at every traced call matching PATTERN (every\n"
    "      traced call without @PATTERN): see query --verbose; --unwatch LABEL\n"
    "  " U_MEMREAD "\n"
    "      read globals and statics (cfg.max_retries, head->next->value, table[3]) or\n"
    "      raw memory of the running program without stopping it; prints\n"
    "      'name = value  (type at 0x...)', or 'name: CODE: sentence' for a target\n"
    "      that failed (exit status 4 when any did); same as memory SESSION below\n"
    "  " U_MEMWRITE "\n"
    "      set variables by their own type (range-checked); prints old and new values\n"
    "  " U_MEMPOLL "\n"
    "      sample the targets every MS (50-5000) for MS (100-30000) in the background,\n"
    "      as variable_snapshot events: strobectl query SESSION --type variable_snapshot\n"
    "  " U_WATCH "\n"
    "      a hardware data watchpoint (up to 8 bytes, 4 at once): each write (or\n"
    "      access) records a watch_hit event with old and new value and the writer\n"
    "  " U_UNWATCH "\n"
    "      remove watchpoint ID (as watch printed it), or all of them\n"
    "  " U_CRASH "\n"
    "      print how the session's processes crashed: signal, assertion, exception,\n"
    "      panic or sanitizer report, the stack with arguments, the crashing frame's\n"
    "      locals; --json prints the crash events; exits 3 when there is none\n"
    "  " U_STACKS "\n"
    "      stop every thread of the running program for a moment and print where each\n"
    "      one is (like gdb's thread apply all bt): name, state, what it waits for,\n"
    "      frames; a deadlock (wait cycle) is named first\n"
    "  " U_MEMORY "\n"
    "      read globals and statics of the running program (cfg.retries, p->next,\n"
    "      a[3], func::counter) or raw memory (--address 0x7f..:i32, TYPE one of i8 u8\n"
    "      i16 u16 i32 u32 i64 u64 f32 f64 pointer, or bytes:SIZE saved to a file),\n"
    "      without stopping it; --set writes instead (VALUE true/false, else as typed)\n"
    CTL_BREAK_HELP
    CTL_TEST_HELP
    "  " U_TOOLS "\n"
    "      list the daemon's MCP tools\n"
    "  " U_CALL "\n"
    "      call a tool with raw JSON arguments and print the result JSON\n"
    "\n"
    "options:\n"
    "  --json      print the tool's structured result as JSON\n"
    "  --help      this text\n"
    "  --version   print the version\n"
    "\n"
    "exit status: 0 ok, 1 the tool or the daemon reported an error,\n"
    "2 the daemon cannot be reached, 3 no crash recorded (crash), 4 some targets of\n"
    "memory [read|write|poll] failed (the others are printed), 5 continue, next,\n"
    "step, finish or until timed out with the program still running, 6 test: tests\n"
    "failed, were stuck or did not build, 64 usage error.\n";

static int add_absolute(cJSON *obj, const char *key, const char *cwd, const char *path)
{
    char *abs = ctl_absolute(cwd, path);
    if (!abs)
        return -1;
    cJSON_AddStringToObject(obj, key, abs);
    free(abs);
    return 0;
}

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

static void append_string(cJSON *obj, const char *key, const char *s)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!a)
        a = cJSON_AddArrayToObject(obj, key);
    cJSON_AddItemToArray(a, cJSON_CreateString(s));
}

static int parse_launch(struct ctl_walker *w, const char *cwd, cJSON *args)
{
    static const struct ctl_opt opts[] = {
        { "--cwd", OPT_VALUE }, { "--project-root", OPT_VALUE }, { "--env", OPT_VALUE }, { 0 },
    };
    bool dd = false;
    bool have_root = false;
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
            cJSON_DeleteItemFromObjectCaseSensitive(args, key);
            if (add_absolute(args, key, cwd, value) != 0)
                return ctl_usage_error(w->err, w->errlen, "out of memory");
        }
    }
    if (k < 0)
        return -1;
    if (k == 0)
        return ctl_usage_error(w->err, w->errlen, "launch needs a PROGRAM");
    /* A PROGRAM with a '/' is a path: make it absolute here, where "relative" means
     * something; a bare name is left to the daemon's PATH search. */
    if (strchr(value, '/')) {
        if (add_absolute(args, "command", cwd, value) != 0)
            return ctl_usage_error(w->err, w->errlen, "out of memory");
    } else {
        cJSON_AddStringToObject(args, "command", value);
    }
    if (!have_root)
        cJSON_AddStringToObject(args, "projectRoot", cwd);
    /* Everything after PROGRAM belongs to it; a "--" right after it separates. */
    if (w->i < w->argc && strcmp(w->argv[w->i], "--") == 0)
        w->i++;
    cJSON *argv = cJSON_AddArrayToObject(args, "args");
    for (; w->i < w->argc; w->i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(w->argv[w->i]));
    return 0;
}

static int parse_query(struct ctl_walker *w, cJSON *args)
{
    static const struct ctl_opt opts[] = {
        { "--type", OPT_VALUE },   { "--function", OPT_VALUE }, { "--function-equals", OPT_VALUE },
        { "--function-regex", OPT_VALUE }, { "--file", OPT_VALUE }, { "--pid", OPT_VALUE },
        { "--thread", OPT_VALUE }, { "--since", OPT_VALUE },    { "--until", OPT_VALUE },
        { "--min-duration", OPT_VALUE }, { "--limit", OPT_VALUE }, { "--offset", OPT_VALUE },
        { "--after", OPT_VALUE },  { "--verbose", OPT_FLAG },   { 0 },
    };
    bool dd = false;
    const char *sid = NULL, *name, *value;
    int k;
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (sid)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            sid = value;
            continue;
        }
        long long n = 0;
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
            if (ctl_parse_int(name, value, nums[j].min, nums[j].max, &n, w->err,
                          w->errlen) != 0)
                return -1;
            cJSON_DeleteItemFromObjectCaseSensitive(args, nums[j].key);
            cJSON_AddNumberToObject(args, nums[j].key, (double)n);
        }
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "query needs a SESSION id");
    cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}

/* status, stop, delete: debug_session with one SESSION (and stop's --retain). */
static int parse_session(struct ctl_walker *w, const char *action, cJSON *args)
{
    static const struct ctl_opt stop_opts[] = { { "--retain", OPT_FLAG }, { 0 } };
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool stop = strcmp(action, "stop") == 0;
    bool dd = false;
    const char *sid = NULL, *name, *value;
    int k;
    cJSON_AddStringToObject(args, "action", action);
    while ((k = ctl_walk(w, stop ? stop_opts : no_opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (sid)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            sid = value;
        } else if (!cJSON_HasObjectItem(args, "retain")) {
            cJSON_AddTrueToObject(args, "retain");
        }
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "%s needs a SESSION id", action);
    cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}

static int parse_trace(struct ctl_walker *w, const char *cwd, cJSON *args)
{
    static const struct ctl_opt opts[] = {
        { "--add", OPT_VALUE }, { "--remove", OPT_VALUE }, { "--project-root", OPT_VALUE },
        { "--watch", OPT_VALUE }, { "--unwatch", OPT_VALUE }, { 0 },
    };
    bool dd = false;
    const char *sid = NULL, *name, *value;
    int k;
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (sid)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            sid = value;
        } else if (strcmp(name, "--project-root") == 0) {
            cJSON_DeleteItemFromObjectCaseSensitive(args, "projectRoot");
            if (add_absolute(args, "projectRoot", cwd, value) != 0)
                return ctl_usage_error(w->err, w->errlen, "out of memory");
        } else if (strcmp(name, "--watch") == 0) {
            /* VAR@PATTERN: the variable has no '@'; the pattern may ("@usercode"). */
            const char *at = strchr(value, '@');
            if (at == value || !*value)
                return ctl_usage_error(w->err, w->errlen, "--watch needs VAR or VAR@PATTERN, "
                                   "not '%s'", value);
            cJSON *watches = cJSON_GetObjectItemCaseSensitive(args, "watches");
            if (!watches)
                watches = cJSON_AddObjectToObject(args, "watches");
            cJSON *add = cJSON_GetObjectItemCaseSensitive(watches, "add");
            if (!add)
                add = cJSON_AddArrayToObject(watches, "add");
            cJSON *t = cJSON_CreateObject();
            char *var = strndup(value, at ? (size_t)(at - value) : strlen(value));
            if (!var) {
                cJSON_Delete(t);
                return ctl_usage_error(w->err, w->errlen, "out of memory");
            }
            cJSON_AddStringToObject(t, "variable", var);
            free(var);
            if (at) {
                if (!at[1]) {
                    cJSON_Delete(t);
                    return ctl_usage_error(w->err, w->errlen, "--watch %s: a pattern must "
                                       "follow '@'", value);
                }
                cJSON *on = cJSON_AddArrayToObject(t, "on");
                cJSON_AddItemToArray(on, cJSON_CreateString(at + 1));
            }
            cJSON_AddItemToArray(add, t);
        } else if (strcmp(name, "--unwatch") == 0) {
            cJSON *watches = cJSON_GetObjectItemCaseSensitive(args, "watches");
            if (!watches)
                watches = cJSON_AddObjectToObject(args, "watches");
            append_string(watches, "remove", value);
        } else {
            append_string(args, name[2] == 'a' ? "add" : "remove", value);
        }
    }
    if (sid)
        cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}

/* A write's VALUE: a JSON number when it reads as one, true/false, else a string
 * (an enumerator, a char, a char array's text, a pointer in hex). */
static cJSON *value_of(const char *s)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return cJSON_CreateBool(s[0] == 't');
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (*s && !*end && !hex && errno == 0 && strspn(s, "+-0123456789.eE") == strlen(s))
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(s);
}

/* memory read|write|poll and watch: the targets and options of debug_memory. */
static int parse_memory_op(struct ctl_walker *w, enum ctl_kind kind, cJSON *args)
{
    static const struct ctl_opt read_opts[] = {
        { "--address", OPT_VALUE }, { "--type", OPT_VALUE }, { "--size", OPT_VALUE },
        { "--depth", OPT_VALUE }, { "--pid", OPT_VALUE }, { "--interval", OPT_VALUE },
        { "--duration", OPT_VALUE }, { 0 },
    };
    static const struct ctl_opt write_opts[] = { { "--pid", OPT_VALUE }, { 0 } };
    bool dd = false;
    const char *sid = NULL, *name, *value;
    cJSON *targets = cJSON_AddArrayToObject(args, "targets");
    cJSON *last_address = NULL;
    long long interval = -1, duration = -1;
    int k;
    cJSON_AddStringToObject(args, "action", kind == CTL_MEM_WRITE ? "write" : "read");
    while ((k = ctl_walk(w, kind == CTL_MEM_WRITE ? write_opts : read_opts, &dd, &name,
                     &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (!sid) {
                sid = value;
                continue;
            }
            cJSON *t = cJSON_CreateObject();
            if (kind == CTL_MEM_WRITE) {
                const char *eq = strchr(value, '=');
                if (!eq || eq == value) {
                    cJSON_Delete(t);
                    return ctl_usage_error(w->err, w->errlen, "write needs VAR=VALUE, not '%s'",
                                       value);
                }
                char *var = strndup(value, (size_t)(eq - value));
                if (!var) {
                    cJSON_Delete(t);
                    return ctl_usage_error(w->err, w->errlen, "out of memory");
                }
                cJSON_AddStringToObject(t, "variable", var);
                free(var);
                cJSON_AddItemToObject(t, "value", value_of(eq + 1));
            } else {
                cJSON_AddStringToObject(t, "variable", value);
            }
            cJSON_AddItemToArray(targets, t);
            continue;
        }
        long long n;
        if (strcmp(name, "--address") == 0) {
            last_address = cJSON_CreateObject();
            cJSON_AddStringToObject(last_address, "address", value);
            cJSON_AddItemToArray(targets, last_address);
        } else if (strcmp(name, "--type") == 0 || strcmp(name, "--size") == 0) {
            if (!last_address)
                return ctl_usage_error(w->err, w->errlen, "%s goes after the --address it "
                                   "describes", name);
            const char *key = name + 2;
            cJSON_DeleteItemFromObjectCaseSensitive(last_address, key);
            if (key[0] == 't') {
                cJSON_AddStringToObject(last_address, key, value);
            } else {
                if (ctl_parse_int(name, value, 1, 1 << 20, &n, w->err, w->errlen) != 0)
                    return -1;
                cJSON_AddNumberToObject(last_address, key, (double)n);
            }
        } else if (strcmp(name, "--interval") == 0 || strcmp(name, "--duration") == 0) {
            if (kind != CTL_MEM_POLL)
                return ctl_usage_error(w->err, w->errlen, "%s belongs to memory poll", name);
            if (ctl_parse_int(name, value, 1, 1000000, &n, w->err, w->errlen) != 0)
                return -1;
            *(name[2] == 'i' ? &interval : &duration) = n;
        } else {
            bool depth = strcmp(name, "--depth") == 0;
            if (ctl_parse_int(name, value, 1, depth ? 5 : 2147483647LL, &n, w->err,
                          w->errlen) != 0)
                return -1;
            cJSON_DeleteItemFromObjectCaseSensitive(args, name + 2);
            cJSON_AddNumberToObject(args, name + 2, (double)n);
        }
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "memory needs a SESSION id");
    if (cJSON_GetArraySize(targets) == 0)
        return ctl_usage_error(w->err, w->errlen, "name at least one %s",
                           kind == CTL_MEM_WRITE ? "VAR=VALUE" : "VAR or --address A");
    if (kind == CTL_MEM_POLL) {
        if (interval < 0 || duration < 0)
            return ctl_usage_error(w->err, w->errlen, "memory poll needs --interval MS and "
                               "--duration MS");
        cJSON *p = cJSON_AddObjectToObject(args, "poll");
        cJSON_AddNumberToObject(p, "intervalMs", (double)interval);
        cJSON_AddNumberToObject(p, "durationMs", (double)duration);
    }
    cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}

/* watch SESSION VAR|--address A and unwatch SESSION ID|all. */
static int parse_watch(struct ctl_walker *w, bool unwatch, cJSON *args)
{
    static const struct ctl_opt watch_opts[] = {
        { "--address", OPT_VALUE }, { "--size", OPT_VALUE }, { "--type", OPT_VALUE },
        { "--access", OPT_VALUE }, { "--pid", OPT_VALUE }, { 0 },
    };
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool dd = false;
    const char *pos[3] = { 0 }, *name, *value;
    int n = 0, k;
    cJSON_AddStringToObject(args, "action", unwatch ? "unwatch" : "watch");
    while ((k = ctl_walk(w, unwatch ? no_opts : watch_opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (n == 2)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            pos[n++] = value;
            continue;
        }
        long long v;
        if (strcmp(name, "--size") == 0 || strcmp(name, "--pid") == 0) {
            if (ctl_parse_int(name, value, 1, 2147483647LL, &v, w->err, w->errlen) != 0)
                return -1;
            cJSON_DeleteItemFromObjectCaseSensitive(args, name + 2);
            cJSON_AddNumberToObject(args, name + 2, (double)v);
        } else {
            if (strcmp(name, "--access") == 0 && strcmp(value, "write") != 0 &&
                strcmp(value, "readwrite") != 0)
                return ctl_usage_error(w->err, w->errlen, "--access is write or readwrite, "
                                   "not '%s'", value);
            cJSON_DeleteItemFromObjectCaseSensitive(args, name + 2);
            cJSON_AddStringToObject(args, name + 2, value);
        }
    }
    if (!pos[0])
        return ctl_usage_error(w->err, w->errlen, "%s needs a SESSION id",
                           unwatch ? "unwatch" : "watch");
    cJSON_AddStringToObject(args, "sessionId", pos[0]);
    if (unwatch) {
        if (!pos[1])
            return ctl_usage_error(w->err, w->errlen, "unwatch needs a watch ID or 'all'");
        char *end;
        long id = strtol(pos[1], &end, 10);
        if (strcmp(pos[1], "all") == 0 || strcmp(pos[1], "*") == 0)
            cJSON_AddStringToObject(args, "watchId", "*");
        else if (*pos[1] && !*end && id > 0)
            cJSON_AddNumberToObject(args, "watchId", (double)id);
        else
            return ctl_usage_error(w->err, w->errlen, "unwatch needs a watch ID (a number) or "
                               "'all', not '%s'", pos[1]);
        return 0;
    }
    bool has_address = cJSON_HasObjectItem(args, "address");
    if (pos[1] && has_address)
        return ctl_usage_error(w->err, w->errlen, "watch takes a VAR or --address, not both");
    if (!pos[1] && !has_address)
        return ctl_usage_error(w->err, w->errlen, "watch needs a VAR or --address A");
    if (pos[1])
        cJSON_AddStringToObject(args, "variable", pos[1]);
    return 0;
}

/* crash: debug_query of every crash event, verbose (frames, locals, registers). */
static int parse_crash(struct ctl_walker *w, struct ctl_cmd *out)
{
    static const struct ctl_opt opts[] = {
        { "--pid", OPT_VALUE }, { "--full-paths", OPT_FLAG }, { "--registers", OPT_FLAG }, { 0 },
    };
    bool dd = false;
    const char *sid = NULL, *name, *value;
    int k;
    cJSON_AddStringToObject(out->args, "eventType", "crash");
    cJSON_AddTrueToObject(out->args, "verbose");
    cJSON_AddNumberToObject(out->args, "limit", 500);
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (sid)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            sid = value;
        } else if (strcmp(name, "--full-paths") == 0) {
            out->full_paths = true;
        } else if (strcmp(name, "--registers") == 0) {
            out->registers = true;
        } else {
            long long pid;
            if (ctl_parse_int(name, value, 1, 2147483647LL, &pid, w->err, w->errlen) != 0)
                return -1;
            cJSON_DeleteItemFromObjectCaseSensitive(out->args, "pid");
            cJSON_AddNumberToObject(out->args, "pid", (double)pid);
        }
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "crash needs a SESSION id");
    cJSON_AddStringToObject(out->args, "sessionId", sid);
    return 0;
}

/* stacks: debug_session action stacks, of every process or --pid N. */
static int parse_stacks(struct ctl_walker *w, cJSON *args)
{
    static const struct ctl_opt opts[] = { { "--pid", OPT_VALUE }, { 0 } };
    bool dd = false;
    const char *sid = NULL, *name, *value;
    int k;
    cJSON_AddStringToObject(args, "action", "stacks");
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 2) {
            if (sid)
                return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
            sid = value;
        } else {
            long long pid;
            if (ctl_parse_int(name, value, 1, 2147483647LL, &pid, w->err, w->errlen) != 0)
                return -1;
            cJSON_DeleteItemFromObjectCaseSensitive(args, "pid");
            cJSON_AddNumberToObject(args, "pid", (double)pid);
        }
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "stacks needs a SESSION id");
    cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}

/* An --address ADDR:TYPE[:SIZE] target. */
static cJSON *address_target(struct ctl_walker *w, const char *spec)
{
    char addr[64], type[16];
    long long size = 0;
    int n = 0;
    if (sscanf(spec, "%63[^:]:%15[^:]%n", addr, type, &n) != 2 ||
        (spec[n] && (spec[n] != ':' ||
                     ctl_parse_int("--address SIZE", spec + n + 1, 1, 1 << 20, &size, w->err,
                               w->errlen) != 0))) {
        if (!w->err[0])
            ctl_usage_error(w->err, w->errlen, "--address needs ADDR:TYPE or ADDR:bytes:SIZE, not "
                        "'%s'", spec);
        return NULL;
    }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "address", addr);
    cJSON_AddStringToObject(t, "type", type);
    if (size)
        cJSON_AddNumberToObject(t, "size", (double)size);
    return t;
}

/* memory: debug_memory read of the positional variables and --address targets, or a
 * write of the --set ones (true and false are booleans; other values go as strings,
 * which the daemon reads by the variable's type). */
static int parse_memory(struct ctl_walker *w, cJSON *args)
{
    static const struct ctl_opt opts[] = { { "--pid", OPT_VALUE }, { "--depth", OPT_VALUE },
                                           { "--address", OPT_VALUE }, { "--set", OPT_VALUE },
                                           { 0 } };
    bool dd = false, reads = false, writes = false;
    const char *sid = NULL, *name, *value;
    cJSON *targets = cJSON_AddArrayToObject(args, "targets");
    int k;
    w->err[0] = '\0';
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        cJSON *t = NULL;
        long long n;
        if (k < 0)
            return -1;
        if (k == 2 && !sid) {
            sid = value;
            continue;
        }
        if (k == 2) {
            t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "variable", value);
            reads = true;
        } else if (strcmp(name, "--address") == 0) {
            if (!(t = address_target(w, value)))
                return -1;
            reads = true;
        } else if (strcmp(name, "--set") == 0) {
            const char *eq = strchr(value, '=');
            if (!eq || eq == value)
                return ctl_usage_error(w->err, w->errlen, "--set needs VARIABLE=VALUE, not '%s'",
                                   value);
            t = cJSON_CreateObject();
            char *variable = strndup(value, (size_t)(eq - value));
            cJSON_AddStringToObject(t, "variable", variable);
            free(variable);
            if (strcmp(eq + 1, "true") == 0 || strcmp(eq + 1, "false") == 0)
                cJSON_AddBoolToObject(t, "value", eq[1] == 't');
            else
                cJSON_AddStringToObject(t, "value", eq + 1);
            writes = true;
        } else if (ctl_parse_int(name, value, 1, strcmp(name, "--pid") == 0 ? 2147483647LL : 5,
                             &n, w->err, w->errlen) != 0) {
            return -1;
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(args, name + 2);
            cJSON_AddNumberToObject(args, name + 2, (double)n);
        }
        if (t)
            cJSON_AddItemToArray(targets, t);
    }
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "memory needs a SESSION id");
    if (reads == writes)
        return ctl_usage_error(w->err, w->errlen, reads ? "memory reads or writes (--set), not "
                           "both at once" : "memory needs a VARIABLE, --address or --set");
    if (writes && cJSON_HasObjectItem(args, "depth"))
        return ctl_usage_error(w->err, w->errlen, "--depth goes with reads, not --set");
    cJSON_AddStringToObject(args, "sessionId", sid);
    if (writes)
        cJSON_AddStringToObject(args, "action", "write");
    return 0;
}

/* sessions, tools: no arguments at all. */
static int parse_none(struct ctl_walker *w, const char *cmd)
{
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool dd = false;
    const char *name, *value;
    int k = ctl_walk(w, no_opts, &dd, &name, &value);
    if (k == 2)
        return ctl_usage_error(w->err, w->errlen, "%s takes no arguments, not '%s'", cmd,
                           value);
    return k < 0 ? -1 : 0;
}

static int parse_call(struct ctl_walker *w, struct ctl_cmd *out)
{
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool dd = false;
    const char *pos[3] = { 0 }, *name, *value;
    int n = 0, k;
    while ((k = ctl_walk(w, no_opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (n == 2)
            return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
        pos[n++] = value;
    }
    if (n == 0)
        return ctl_usage_error(w->err, w->errlen, "call needs a TOOL name");
    out->tool = pos[0];
    if (pos[1]) {
        cJSON *a = cJSON_Parse(pos[1]);
        if (!cJSON_IsObject(a)) {
            cJSON_Delete(a);
            return ctl_usage_error(w->err, w->errlen,
                               "the arguments of call must be a JSON object, not '%s'",
                               pos[1]);
        }
        cJSON_Delete(out->args);
        out->args = a;
    }
    return 0;
}

int ctl_parse(int argc, char **argv, const char *cwd, struct ctl_cmd *out, char *err,
              size_t errlen)
{
    *out = (struct ctl_cmd){ .kind = CTL_HELP, .usage = U_ANY };
    int i = 1;
    /* Global options before the command. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            out->json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            out->kind = CTL_HELP;
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            out->kind = CTL_VERSION;
            return 0;
        } else {
            return ctl_usage_error(err, errlen, "unknown option %s", argv[i]);
        }
    }
    if (i == argc)
        return ctl_usage_error(err, errlen, "no command given");

    static const struct { const char *name; enum ctl_kind kind; const char *tool, *usage; }
    cmds[] = {
        { "launch", CTL_LAUNCH, "debug_launch", U_LAUNCH },
        { "query", CTL_QUERY, "debug_query", U_QUERY },
        { "sessions", CTL_SESSIONS, "debug_session", U_SESSIONS },
        { "status", CTL_STATUS, "debug_session", U_STATUS },
        { "stop", CTL_STOP, "debug_session", U_STOP },
        { "delete", CTL_DELETE, "debug_session", U_DELETE },
        { "trace", CTL_TRACE, "debug_trace", U_TRACE },
        { "crash", CTL_CRASH, "debug_query", U_CRASH },
        { "stacks", CTL_STACKS, "debug_session", U_STACKS },
        { "memory", CTL_MEMORY, "debug_memory", U_MEMORY },
        { "watch", CTL_WATCH, "debug_memory", U_WATCH },
        { "unwatch", CTL_UNWATCH, "debug_memory", U_UNWATCH },
        { "break", CTL_BREAK, "debug_breakpoint", U_BREAK },
        { "breakpoints", CTL_BREAKPOINTS, "debug_breakpoint", U_BREAKPOINTS },
        { "continue", CTL_CONTINUE, "debug_continue", U_CONTINUE },
        { "next", CTL_NEXT, "debug_continue", U_NEXT },
        { "step", CTL_STEP, "debug_continue", U_STEP },
        { "finish", CTL_FINISH, "debug_continue", U_FINISH },
        { "pause", CTL_PAUSE, "debug_continue", U_PAUSE },
        { "until", CTL_UNTIL, "debug_continue", U_UNTIL },
        { "test", CTL_TEST, "debug_test", U_TEST },
        { "tools", CTL_TOOLS, NULL, U_TOOLS },
        { "call", CTL_CALL, NULL, U_CALL },
        { "help", CTL_HELP, NULL, U_ANY },
    };
    const char *cmd = argv[i++];
    size_t c = 0;
    while (c < sizeof cmds / sizeof cmds[0] && strcmp(cmds[c].name, cmd) != 0)
        c++;
    if (c == sizeof cmds / sizeof cmds[0])
        return ctl_usage_error(err, errlen, "unknown command '%s'", cmd);
    out->kind = cmds[c].kind;
    out->usage = cmds[c].usage;
    if (out->kind == CTL_HELP)
        return 0;
    out->tool = cmds[c].tool;
    out->args = cJSON_CreateObject();

    if (out->kind == CTL_MEMORY && i < argc &&
        (strcmp(argv[i], "read") == 0 || strcmp(argv[i], "write") == 0 ||
         strcmp(argv[i], "poll") == 0)) {
        /* memory read|write|poll SESSION ...; without one of those words, memory
         * SESSION ... (parse_memory: reads, or writes with --set) */
        static const struct { const char *op; enum ctl_kind kind; const char *usage; }
        ops[] = {
            { "read", CTL_MEM_READ, U_MEMREAD }, { "write", CTL_MEM_WRITE, U_MEMWRITE },
            { "poll", CTL_MEM_POLL, U_MEMPOLL },
        };
        size_t o = 0;
        while (strcmp(argv[i], ops[o].op) != 0)
            o++;
        out->kind = ops[o].kind;
        out->usage = ops[o].usage;
        i++;
    }
    if (out->kind == CTL_DELETE && ctl_delete_is_breakpoints(argc, argv, i)) {
        out->kind = CTL_BP_DELETE;
        out->tool = "debug_breakpoint";
        out->usage = U_BPDELETE;
    }
    struct ctl_walker w = { argc, argv, i, &out->json, err, errlen };
    int rc;
    switch (out->kind) {
    case CTL_LAUNCH:
        rc = parse_launch(&w, cwd, out->args);
        break;
    case CTL_QUERY:
        rc = parse_query(&w, out->args);
        break;
    case CTL_SESSIONS:
        cJSON_AddStringToObject(out->args, "action", "list");
        rc = parse_none(&w, cmd);
        break;
    case CTL_STATUS:
    case CTL_STOP:
    case CTL_DELETE:
        rc = parse_session(&w, cmd, out->args);
        break;
    case CTL_TRACE:
        rc = parse_trace(&w, cwd, out->args);
        break;
    case CTL_CRASH:
        rc = parse_crash(&w, out);
        break;
    case CTL_STACKS:
        rc = parse_stacks(&w, out->args);
        break;
    case CTL_MEM_READ:
    case CTL_MEM_WRITE:
    case CTL_MEM_POLL:
        rc = parse_memory_op(&w, out->kind, out->args);
        break;
    case CTL_WATCH:
    case CTL_UNWATCH:
        rc = parse_watch(&w, out->kind == CTL_UNWATCH, out->args);
        break;
    case CTL_MEMORY:
        rc = parse_memory(&w, out->args);
        break;
    case CTL_BREAK:
    case CTL_BREAKPOINTS:
    case CTL_BP_DELETE:
    case CTL_CONTINUE:
    case CTL_NEXT:
    case CTL_STEP:
    case CTL_FINISH:
    case CTL_PAUSE:
    case CTL_UNTIL:
        rc = ctl_parse_break(&w, out->kind, out->args);
        break;
    case CTL_TEST:
        rc = ctl_parse_test(&w, cwd, out);
        break;
    case CTL_TOOLS:
        cJSON_Delete(out->args);
        out->args = NULL;
        rc = parse_none(&w, cmd);
        break;
    default: /* CTL_CALL */
        rc = parse_call(&w, out);
        break;
    }
    if (rc != 0) {
        cJSON_Delete(out->args);
        out->args = NULL;
        out->tool = NULL;
    }
    return rc;
}

void ctl_cmd_free(struct ctl_cmd *c)
{
    cJSON_Delete(c->args);
    c->args = NULL;
}
