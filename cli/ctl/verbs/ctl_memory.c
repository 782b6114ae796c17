/*
 * ctl_memory.c - strobectl's verbs of the program's memory: memory (read, write,
 * poll; `memory SESSION ...` reads, or writes with --set) and the data watchpoints
 * watch and unwatch (debug_memory), their parsers and their rows of the verb table
 * (ctl_verbs.h).
 */
#include "cli/ctl/verbs/ctl_verbs.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define U_MEMREAD "strobectl memory read SESSION [VAR]... [--address A --type T " \
                  "[--size N]]... [--depth N] [--pid N]"
#define U_MEMWRITE "strobectl memory write SESSION VAR=VALUE... [--pid N]"
#define U_MEMPOLL "strobectl memory poll SESSION [VAR]... [--address A --type T]... " \
                  "--interval MS --duration MS [--depth N] [--pid N]"
#define U_MEMORY "strobectl memory SESSION [VARIABLE...] [--address ADDR:TYPE[:SIZE]]... " \
                 "[--set VARIABLE=VALUE]... [--depth N] [--pid N]"
#define U_WATCH  "strobectl watch SESSION VAR|--address A [--size N] [--type T] " \
                 "[--access write|readwrite] [--pid N]"
#define U_UNWATCH "strobectl unwatch SESSION ID|all"

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


/* One option of watch into the arguments ctx. */
static int watch_opt(struct ctl_walker *w, const char *name, const char *value, void *ctx)
{
    if (strcmp(name, "--size") == 0 || strcmp(name, "--pid") == 0)
        return ctl_set_int(w, ctx, name + 2, name, value, 1, INT_MAX);
    if (strcmp(name, "--access") == 0 && strcmp(value, "write") != 0 &&
        strcmp(value, "readwrite") != 0)
        return ctl_usage_error(w->err, w->errlen, "--access is write or readwrite, not '%s'",
                               value);
    cJSON_DeleteItemFromObjectCaseSensitive(ctx, name + 2);
    cJSON_AddStringToObject(ctx, name + 2, value);
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
    const char *pos[2] = { 0 };
    cJSON_AddStringToObject(args, "action", unwatch ? "unwatch" : "watch");
    if (ctl_collect(w, unwatch ? no_opts : watch_opts, watch_opt, args, pos, 2) < 0)
        return -1;
    if (ctl_set_session(w, args, pos[0], unwatch ? "unwatch" : "watch") != 0)
        return -1;
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


/* memory read|write|poll SESSION ...; without one of those words, memory
 * SESSION ... (parse_memory: reads, or writes with --set). */
static int parse_memory_verb(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct { const char *op; enum ctl_kind kind; const char *usage; } ops[] = {
        { "read", CTL_MEM_READ, U_MEMREAD }, { "write", CTL_MEM_WRITE, U_MEMWRITE },
        { "poll", CTL_MEM_POLL, U_MEMPOLL },
    };
    for (size_t o = 0; w->i < w->argc && o < sizeof ops / sizeof ops[0]; o++) {
        if (strcmp(w->argv[w->i], ops[o].op) == 0) {
            w->i++;
            out->kind = ops[o].kind;
            out->usage = ops[o].usage;
            return parse_memory_op(w, out->kind, out->args);
        }
    }
    out->usage = U_MEMORY;
    return parse_memory(w, out->args);
}

static int parse_watch_verb(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    return parse_watch(w, out->kind == CTL_UNWATCH, out->args);
}

#define JSON_OPT "  --json          print the tool's structured result as JSON\n"

const struct ctl_verb ctl_memory_verbs[] = {
    { "memory", CTL_MEMORY, "debug_memory",
      U_MEMREAD "\n" U_MEMWRITE "\n" U_MEMPOLL "\n" U_MEMORY,
      "read, write or sample globals and memory of the running program",
      "Reads globals and statics as C names them (cfg.max_retries, head->next->value,\n"
      "table[3], *p, ns::g_state, func::counter) or raw memory, without stopping the\n"
      "program (debug_memory); prints 'name = value  (type at 0x...)', or\n"
      "'name: CODE: sentence' for a target that failed.\n"
      "write sets variables by their own type (range-checked) and prints the old and\n"
      "new values. poll samples the targets every --interval MS (50-5000) for\n"
      "--duration MS (100-30000) in the background as variable_snapshot events.\n"
      "`memory SESSION` reads, or writes with --set VAR=VALUE; its --address takes\n"
      "ADDR:TYPE[:SIZE] (TYPE: i8 u8 i16 u16 i32 u32 i64 u64 f32 f64 pointer, or\n"
      "bytes:SIZE saved to a file).\n",
      "  --address A --type T [--size N]   a raw target (read, poll)\n"
      "  --depth N       how deep to follow pointers and members (1-5)\n"
      "  --pid N         the process to read (default: the session's main one)\n"
      "  --interval MS, --duration MS      poll's period and length\n"
      "  --set VAR=VALUE write (memory SESSION form)\n"
      JSON_OPT,
      "strobectl memory read S cfg.retries 'table[3]'\n"
      "strobectl memory write S cfg.retries=5\n"
      "strobectl memory poll S g_count --interval 100 --duration 2000\n"
      "strobectl memory S --address 0x7ffd1000:u32\n",
      CTL_EXIT_BIT(CTL_EXIT_TARGETS), "reading the program's memory", parse_memory_verb },
    { "watch", CTL_WATCH, "debug_memory", U_WATCH,
      "a data watchpoint: who writes a variable (watch_hit events)",
      "Arms a hardware data watchpoint (debug_memory watch; up to 8 bytes, 4 at\n"
      "once) on VAR or an address in every thread: each write (or access) records a\n"
      "watch_hit event with the old and new value and the writing function and line\n"
      "(strobectl query SESSION --type watch_hit); the program runs on. Prints the\n"
      "watch's id.\n",
      "  --address A     watch an address instead of a VAR\n"
      "  --size N        bytes to watch (1, 2, 4 or 8) at --address\n"
      "  --type T        how to show the value at --address\n"
      "  --access write|readwrite   what triggers it (default write)\n"
      "  --pid N         the process\n"
      JSON_OPT,
      "strobectl watch S cfg.max_retries\nstrobectl watch S --address 0x4c6010 --size 4\n",
      0, NULL, parse_watch_verb },
    { "unwatch", CTL_UNWATCH, "debug_memory", U_UNWATCH,
      "remove a data watchpoint (or all of them)",
      "Removes watchpoint ID, as watch printed it, or all of them (debug_memory\n"
      "unwatch). The watch_hit events stay.\n",
      JSON_OPT, "strobectl unwatch S 1\nstrobectl unwatch S all\n", 0, NULL,
      parse_watch_verb },
    { 0 },
};
