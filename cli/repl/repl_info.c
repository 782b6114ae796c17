/*
 * repl_info.c - the REPL's `info` subcommands (breakpoints, threads, frame, locals,
 * args, sessions, registers) and `list` (source lines read from the file on disk,
 * around the current line or a location: a line, FILE:LINE, or a function's
 * declaration from the program's DWARF index).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/render/render.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_state.h"
#include "dwarf/dwarf.h"

const char *const repl_info_subcmds[] = {
    "args", "breakpoints", "frame", "locals", "registers", "sessions", "threads",
    "watchpoints", NULL,
};

/* "name = value" lines of a {name, type, value} array, or none_text. */
static int print_vars(const cJSON *vars, const char *none_text)
{
    if (cJSON_GetArraySize(vars) == 0) {
        puts(none_text);
        return 0;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, vars) {
        printf("%s = ", json_str(v, "name") ? json_str(v, "name") : "?");
        repl_fmt_value(stdout, json_get(v, "value"), json_str(v, "type"), 0, 0);
        putchar('\n');
    }
    return 0;
}

/* info locals / info args of frame 0 (the stop's answer). */
static int frame_vars(struct repl *r, const char *key, const char *none_text)
{
    if (!r->stop)
        return repl_fail("No frame selected.");
    if (r->frame != 0)
        return repl_fail("strobe lists %s of the innermost frame only: `frame 0`, or "
                         "`print NAME` reads one in this frame.", key);
    return print_vars(json_get(r->stop, key), none_text);
}

static const char *const regs[] = {"$rip", "$rsp", "$rbp", "$rax", "$rbx", "$rcx", "$rdx",
                                   "$rsi", "$rdi", "$r8", "$r9", "$r10", "$r11", "$r12",
                                   "$r13", "$r14", "$r15", NULL};

/* debug_memory read of the registers of the selected frame. */
static int registers(struct repl *r)
{
    if (!r->stop)
        return repl_fail("The program has no registers now: no thread is paused.");
    int n = 0;
    while (regs[n])
        n++;
    for (int start = 0; start < n; start += 16) {
        cJSON *args = cJSON_CreateObject();
        repl_frame_args(r, args);
        cJSON *t = cJSON_AddArrayToObject(args, "targets");
        for (int i = start; i < n && i < start + 16; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "variable", regs[i]);
            cJSON_AddItemToArray(t, o);
        }
        cJSON *ans = repl_tool(r, "debug_memory", args);
        if (!ans)
            return 1;
        const cJSON *res;
        cJSON_ArrayForEach(res, json_get(ans, "results")) {
            const char *name = json_str(res, "target");
            if (!name)
                name = json_str(json_get(res, "target"), "variable");
            printf("%-15s", name ? name + 1 : "?");
            const cJSON *v = json_get(res, "value");
            if (json_get(res, "error") && !cJSON_IsNull(json_get(res, "error"))) {
                puts("<not saved>");
                continue;
            }
            repl_fmt_value(stdout, v, NULL, 'x', 8);
            fputs("  ", stdout);
            repl_fmt_value(stdout, v, NULL, 0, 8);
            putchar('\n');
        }
        cJSON_Delete(ans);
    }
    return 0;
}

/* info threads: the paused threads of the session's status, and every thread's
 * frame from debug_session stacks. */
static int threads(struct repl *r)
{
    if (!repl_need_session(r))
        return 1;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "stacks");
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON_AddBoolToObject(args, "locals", false);
    cJSON *ans = repl_tool(r, "debug_session", args);
    if (!ans)
        return 1;
    long long cur = r->stop ? (r->thread ? r->thread : json_num(r->stop, "threadId")) : 0;
    puts("  Id       Target Id                        Frame");
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(ans, "threads")) {
        const cJSON *f = cJSON_GetArrayItem(json_get(t, "frames"), 0);
        char target[64];
        snprintf(target, sizeof target, "Thread %lld \"%s\"", json_num(t, "tid"),
                 json_str(t, "name") ? json_str(t, "name") : "?");
        printf("%c %-8lld %-32s %s\n", json_num(t, "tid") == cur ? '*' : ' ',
               json_num(t, "tid"), target,
               cJSON_IsString(f) ? f->valuestring : json_str(f, "function")
                                                        ? json_str(f, "function") : "??");
    }
    cJSON_Delete(ans);
    return 0;
}

static int sessions(struct repl *r)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "list");
    cJSON *ans = repl_tool(r, "debug_session", args);
    if (!ans)
        return 1;
    render_sessions(stdout, ans);
    cJSON_Delete(ans);
    return 0;
}

int repl_cmd_sessions(struct repl *r, const char *a)
{
    (void)a;
    return sessions(r);
}

int repl_cmd_info(struct repl *r, const char *a)
{
    size_t n = strcspn(a, " ");
    if (n == 0)
        return repl_fail("\"info\" must be followed by the name of an info command: %s.",
                         "breakpoints, threads, frame, locals, args, sessions, registers");
    const char *sub = NULL;
    /* the subcommands differ in their first letter: a prefix names one */
    for (int i = 0; repl_info_subcmds[i] && !sub; i++)
        if (strncmp(repl_info_subcmds[i], a, n) == 0)
            sub = repl_info_subcmds[i];
    if (!sub)
        return repl_fail("Undefined info command: \"%.*s\".  Try \"help info\".", (int)n, a);
    if (strcmp(sub, "breakpoints") == 0 || strcmp(sub, "watchpoints") == 0)
        return repl_info_breakpoints(r);
    if (strcmp(sub, "locals") == 0)
        return frame_vars(r, "locals", "No locals.");
    if (strcmp(sub, "args") == 0)
        return frame_vars(r, "arguments", "No arguments.");
    if (strcmp(sub, "registers") == 0)
        return registers(r);
    if (strcmp(sub, "threads") == 0)
        return threads(r);
    if (strcmp(sub, "sessions") == 0)
        return sessions(r);
    /* frame */
    if (!r->stop)
        return repl_fail("No stack.");
    const cJSON *f = cJSON_GetArrayItem(json_get(r->stop, "frames"), r->frame);
    printf("Stack level %d, thread %lld:\n in ", r->frame,
           r->thread ? r->thread : json_num(r->stop, "threadId"));
    repl_fmt_where(stdout, json_str(f, "function"), NULL, json_str(f, "file"),
                   json_num(f, "line"));
    putchar('\n');
    const cJSON *caller = cJSON_GetArrayItem(json_get(r->stop, "frames"), r->frame + 1);
    if (caller)
        printf(" called by frame at level %d: %s\n", r->frame + 1,
               json_str(caller, "function") ? json_str(caller, "function") : "??");
    if (r->frame == 0)
        printf(" stopped by: %s\n", json_str(r->stop, "reason") ? json_str(r->stop, "reason")
                                                                : "?");
    return 0;
}

/* The declaration of function name in the program's DWARF: its file and line. */
static int function_line(struct repl *r, const char *name, const char **file)
{
    const struct dw_index *ix = r->program ? dw_index_get(r->program, NULL) : NULL;
    for (size_t i = 0; ix && i < ix->n_functions; i++)
        if (ix->functions[i].decl_file && strcmp(ix->functions[i].name, name) == 0) {
            *file = ix->functions[i].decl_file;
            return ix->functions[i].decl_line;
        }
    return 0;
}

/* The full path of source file name (a base name or a path's tail): the last stop's
 * file, else a file of the program's functions (DWARF), else NULL. */
static const char *source_path(struct repl *r, const char *name, const char *stop_file)
{
    size_t n = strlen(name);
    if (stop_file && strcmp(repl_base_name(stop_file), name) == 0)
        return stop_file;
    const struct dw_index *ix = r->program ? dw_index_get(r->program, NULL) : NULL;
    for (size_t i = 0; ix && i < ix->n_functions; i++) {
        const char *f = ix->functions[i].decl_file;
        size_t len = f ? strlen(f) : 0;
        if (len > n && strcmp(f + len - n, name) == 0 && f[len - n - 1] == '/')
            return f;
    }
    return NULL;
}

int repl_cmd_list(struct repl *r, const char *a)
{
    const char *file = r->list_file;
    int first = r->list_line;
    if (*a) {
        const char *colon = strrchr(a, ':');
        const char *deffile = r->stop ? json_str(r->stop, "file") : NULL;
        int line = 0;
        char *fname = NULL;
        if (colon) {
            fname = strndup(a, (size_t)(colon - a));
            line = atoi(colon + 1);
        } else if (strspn(a, "0123456789") == strlen(a)) {
            line = atoi(a);
        } else {
            const char *decl = NULL;
            line = function_line(r, a, &decl);
            if (!line)
                return repl_fail("Function \"%s\" not defined.", a);
            fname = strdup(decl);
        }
        if (fname && fname[0] != '/') {
            const char *full = source_path(r, fname, deffile);
            if (full) {
                free(fname);
                fname = strdup(full);
            }
        }
        if (!fname && !deffile)
            return repl_fail("No default source file: write `list FILE:LINE`.");
        free(r->list_file);
        r->list_file = fname ? fname : strdup(deffile);
        file = r->list_file;
        first = line > 5 ? line - 5 : 1;
    } else if (!file) {
        if (!r->stop || !json_str(r->stop, "file"))
            return repl_fail("No default source file: write `list FILE:LINE` or `list "
                             "FUNCTION`.");
        const cJSON *f = cJSON_GetArrayItem(json_get(r->stop, "frames"), r->frame);
        const char *path = r->frame ? json_str(f, "file") : json_str(r->stop, "file");
        long long line = r->frame ? json_num(f, "line") : json_num(r->stop, "line");
        r->list_file = strdup(path ? path : json_str(r->stop, "file"));
        file = r->list_file;
        first = line > 5 ? (int)line - 5 : 1;
    }
    FILE *src = fopen(file, "r");
    if (!src)
        return repl_fail("%s: cannot open the source file.", file);
    char *buf = NULL;
    size_t cap = 0;
    int shown = 0;
    for (int i = 1; shown < 10 && getline(&buf, &cap, src) >= 0; i++)
        if (i >= first) {
            printf("%d\t%s", i, buf);
            shown++;
        }
    free(buf);
    fclose(src);
    if (!shown)
        return repl_fail("Line number %d out of range; \"%s\" has fewer lines.", first,
                         repl_base_name(file));
    r->list_line = first + shown;
    return 0;
}
