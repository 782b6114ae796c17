/*
 * repl_inspect.c - the REPL's commands that look at a stopped program: backtrace,
 * thread, frame, up, down, print, set var, x, display and undisplay (the displays
 * are printed after every stop: repl_show_displays). The frames, arguments and
 * locals come from the last stop's answer; values from debug_memory (the selected
 * thread and frame first, then globals); every thread's stack from debug_session
 * stacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/render/render.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_parse.h"
#include "cli/repl/repl_state.h"

/* The last stop, or NULL after saying "No stack." */
static const cJSON *need_stop(struct repl *r)
{
    if (!r->stop)
        repl_fail(r->sid ? "No stack: no thread is paused (Ctrl-C or a breakpoint stops "
                           "one; `thread apply all bt` shows every thread now)."
                         : "No stack: the program is not being run.");
    return r->stop;
}

/* Prints frame level of the last stop; the stop's arguments belong to its innermost
 * frame with a source file (library frames above it have none). */
static void print_frame(struct repl *r, int level)
{
    const cJSON *frames = json_get(r->stop, "frames");
    int own = 0;
    while (own < cJSON_GetArraySize(frames) &&
           !json_str(cJSON_GetArrayItem(frames, own), "file"))
        own++;
    repl_fmt_frame(stdout, level, cJSON_GetArrayItem(frames, level),
                   level == own ? json_get(r->stop, "arguments") : NULL);
}

int repl_cmd_bt(struct repl *r, const char *a)
{
    (void)a;
    if (!need_stop(r))
        return 1;
    int n = cJSON_GetArraySize(json_get(r->stop, "frames"));
    for (int i = 0; i < n; i++)
        print_frame(r, i);
    return 0;
}

/* Selects frame level and prints it with its source line. */
static int select_frame(struct repl *r, int level)
{
    if (!need_stop(r))
        return 1;
    int n = cJSON_GetArraySize(json_get(r->stop, "frames"));
    if (level < 0 || level >= n)
        return repl_fail(level < 0 ? "Bottom (innermost) frame selected; you cannot go down."
                                   : "Initial frame selected; you cannot go up.");
    r->frame = level;
    print_frame(r, level);
    const cJSON *f = cJSON_GetArrayItem(json_get(r->stop, "frames"), level);
    const char *file = json_str(f, "file");
    if (level == 0 && json_str(r->stop, "file"))
        file = json_str(r->stop, "file");
    if (file && json_num(f, "line") > 0)
        repl_fmt_source(stdout, file, json_num(f, "line"));
    return 0;
}

int repl_cmd_frame(struct repl *r, const char *a)
{
    return select_frame(r, *a ? atoi(a) : r->frame);
}

int repl_cmd_up(struct repl *r, const char *a)
{
    return select_frame(r, r->frame + (*a ? atoi(a) : 1));
}

int repl_cmd_down(struct repl *r, const char *a)
{
    return select_frame(r, r->frame - (*a ? atoi(a) : 1));
}

/* Every thread's stack now (debug_session stacks), as render_stacks prints it. */
static int all_stacks(struct repl *r)
{
    if (!repl_need_session(r))
        return 1;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "stacks");
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON *ans = repl_tool(r, "debug_session", args);
    if (!ans)
        return 1;
    render_stacks(stdout, ans);
    cJSON_Delete(ans);
    return 0;
}

int repl_cmd_thread(struct repl *r, const char *a)
{
    if (strncmp(a, "apply all", 9) == 0)
        return all_stacks(r);
    if (!need_stop(r))
        return 1;
    if (!*a) {
        printf("[Current thread is %lld]\n", r->thread ? r->thread
                                                       : json_num(r->stop, "threadId"));
        return 0;
    }
    char *end;
    long long tid = strtoll(a, &end, 10);
    if (*end || tid <= 0)
        return repl_fail("Invalid thread ID: %s (thread ids are the tids of `info threads`).",
                         a);
    r->thread = tid;
    r->frame = 0;
    printf("[Switching to thread %lld]\n", tid);
    return 0;
}

/* debug_memory read of expr in the selected frame: its result object (in *ans, to
 * delete), or NULL after printing the error. */
static const cJSON *read_var(struct repl *r, const char *expr, cJSON **ans)
{
    *ans = NULL;
    if (!repl_need_session(r))
        return NULL;
    cJSON *args = cJSON_CreateObject();
    repl_frame_args(r, args);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "variable", expr);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "targets"), t);
    if (!(*ans = repl_tool(r, "debug_memory", args)))
        return NULL;
    const cJSON *res = cJSON_GetArrayItem(json_get(*ans, "results"), 0);
    const cJSON *err = json_get(res, "error");
    if (err && !cJSON_IsNull(err)) {
        repl_fail("%s: %s", json_str(err, "code") ? json_str(err, "code") : "ERROR",
                  json_str(err, "message") ? json_str(err, "message") : "cannot read it");
        return NULL;
    }
    return res;
}

int repl_cmd_print(struct repl *r, const char *a)
{
    char fmt = 0;
    if (a[0] == '/') {
        fmt = a[1];
        a += 2 + strcspn(a + 2, " ");
        a += strspn(a, " ");
    }
    if (!*a)
        return repl_fail("Write `print EXPR` (a variable, argument, $register or global).");
    cJSON *ans = NULL;
    const cJSON *res;
    if (a[0] == '$' && (a[1] == '\0' || a[1] == '$' || (a[1] >= '0' && a[1] <= '9'))) {
        /* the value history: $ the last value, $$ the one before, $N */
        int n = a[1] == '\0' ? r->values : a[1] == '$' ? r->values - 1 : atoi(a + 1);
        res = cJSON_GetArrayItem(r->history, n - 1);
        if (!res || n < 1)
            return repl_fail("History has not yet reached %s.", a);
    } else {
        res = read_var(r, a, &ans);
    }
    if (res) {
        cJSON_AddItemToArray(r->history, cJSON_Duplicate(res, true));
        printf("$%d = ", ++r->values);
        if (cJSON_IsString(json_get(json_get(res, "value"), "@ptr")))
            printf("(%s) ", json_str(res, "type") ? json_str(res, "type") : "?");
        repl_fmt_value(stdout, json_get(res, "value"), json_str(res, "type"), fmt,
                       (int)json_num(res, "size"));
        putchar('\n');
    }
    cJSON_Delete(ans);
    return res ? 0 : 1;
}

/* "N: EXPR = VALUE" for display number num, or the read's error. */
static void show_display(struct repl *r, int num, const char *expr)
{
    cJSON *ans;
    const cJSON *res = read_var(r, expr, &ans);
    if (res) {
        printf("%d: %s = ", num, expr);
        repl_fmt_value(stdout, json_get(res, "value"), json_str(res, "type"), 0,
                       (int)json_num(res, "size"));
        putchar('\n');
    }
    cJSON_Delete(ans);
}

void repl_show_displays(struct repl *r)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, r->displays)
        show_display(r, (int)json_num(d, "num"), json_str(d, "expr"));
}

int repl_cmd_display(struct repl *r, const char *a)
{
    if (!*a) {
        const cJSON *d;
        cJSON_ArrayForEach(d, r->displays)
            printf("%lld: %s\n", json_num(d, "num"), json_str(d, "expr"));
        return 0;
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "num", ++r->next_display);
    cJSON_AddStringToObject(d, "expr", a);
    cJSON_AddItemToArray(r->displays, d);
    if (r->stop)
        show_display(r, r->next_display, a);
    return 0;
}

int repl_cmd_undisplay(struct repl *r, const char *a)
{
    if (!*a) {
        cJSON_Delete(r->displays);
        r->displays = cJSON_CreateArray();
        return 0;
    }
    char *copy = strdup(a);
    int status = 0;
    for (char *save, *w = strtok_r(copy, " ,", &save); w; w = strtok_r(NULL, " ,", &save)) {
        int i = 0, n = atoi(w);
        const cJSON *d;
        cJSON_ArrayForEach(d, r->displays) {
            if (json_num(d, "num") == n)
                break;
            i++;
        }
        if (d)
            cJSON_DeleteItemFromArray(r->displays, i);
        else
            status = repl_fail("No display number %s.", w);
    }
    free(copy);
    return status;
}

int repl_cmd_set(struct repl *r, const char *a)
{
    char *name, *value, err[256];
    if (repl_parse_assign(a, &name, &value, err, sizeof err) != 0)
        return repl_fail("%s", err);
    if (!repl_need_session(r)) {
        free(name);
        free(value);
        return 1;
    }
    cJSON *args = cJSON_CreateObject();
    repl_frame_args(r, args);
    cJSON_AddStringToObject(args, "action", "write");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "variable", name);
    cJSON_AddItemToObject(t, "value", repl_parse_value(value));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "targets"), t);
    free(name);
    free(value);
    cJSON *ans = repl_tool(r, "debug_memory", args);
    if (!ans)
        return 1;
    const cJSON *e = json_get(cJSON_GetArrayItem(json_get(ans, "results"), 0), "error");
    int status = 0;
    if (e && !cJSON_IsNull(e))
        status = repl_fail("%s: %s", json_str(e, "code") ? json_str(e, "code") : "ERROR",
                           json_str(e, "message") ? json_str(e, "message") : "not written");
    cJSON_Delete(ans);
    return status;
}

/* The hint type of a unit of fmt for an address target. */
static const char *unit_type(const struct repl_xfmt *f)
{
    if (f->format == 'f')
        return f->size == 4 ? "f32" : "f64";
    bool sign = f->format == 'd' || f->format == 'c';
    switch (f->size) {
    case 1: return sign ? "i8" : "u8";
    case 2: return sign ? "i16" : "u16";
    case 4: return sign ? "i32" : "u32";
    default: return sign ? "i64" : "u64";
    }
}

/* The pointer stored at address (hex), read raw; 0 after printing an error. */
static unsigned long long pointer_at(struct repl *r, const char *address)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", r->sid);
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "address", address);
    cJSON_AddStringToObject(t, "type", "pointer");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "targets"), t);
    cJSON *ans = repl_tool(r, "debug_memory", args);
    const cJSON *v = json_get(cJSON_GetArrayItem(json_get(ans, "results"), 0), "value");
    unsigned long long p = cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 0)
                           : cJSON_IsNumber(v) ? (unsigned long long)v->valuedouble : 0;
    cJSON_Delete(ans);
    return p;
}

/* The address x starts at: hex as typed, &VAR's address, else the value of a pointer
 * (or the address of any other variable). 0 after printing an error. */
static unsigned long long x_address(struct repl *r, const char *expr)
{
    if (strncmp(expr, "0x", 2) == 0)
        return strtoull(expr, NULL, 16);
    bool amp = expr[0] == '&';
    cJSON *ans;
    const cJSON *res = read_var(r, amp ? expr + 1 : expr, &ans);
    unsigned long long addr = 0;
    const char *type = json_str(res, "type");
    const cJSON *v = json_get(res, "value");
    bool pointer = !amp && ((type && strchr(type, '*')) || expr[0] == '$');
    if (res && pointer && cJSON_IsString(v) && strncmp(v->valuestring, "0x", 2) != 0 &&
        json_str(res, "address"))
        addr = pointer_at(r, json_str(res, "address")); /* a char * read as its string */
    else if (res && pointer && cJSON_IsString(v))
        addr = strtoull(v->valuestring, NULL, 0);
    else if (res && pointer && cJSON_IsNumber(v))
        addr = (unsigned long long)v->valuedouble;
    else if (res && json_str(res, "address"))
        addr = strtoull(json_str(res, "address"), NULL, 16);
    else if (res)
        repl_fail("%s has no address in memory.", expr);
    cJSON_Delete(ans);
    return addr;
}

int repl_cmd_x(struct repl *r, const char *a)
{
    static struct repl_xfmt last = {1, 'x', 4};
    struct repl_xfmt f = last;
    char err[256];
    if (a[0] == '/') {
        char spec[32];
        size_t n = strcspn(a + 1, " ");
        snprintf(spec, sizeof spec, "%.*s", (int)(n < 31 ? n : 31), a + 1);
        if (repl_parse_xfmt(spec, &last, &f, err, sizeof err) != 0)
            return repl_fail("%s", err);
        a += 1 + n;
        a += strspn(a, " ");
    }
    if (f.format == 'i')
        return repl_fail("x/i is not supported: strobe does not disassemble. Use "
                         "another format (x/8xb).");
    if (!*a)
        return repl_fail("Write `x/FMT ADDRESS` (0x..., &variable, or a pointer).");
    if (!repl_need_session(r))
        return 1;
    unsigned long long addr = x_address(r, a);
    if (!addr)
        return 1;
    last = f;
    int per_line = f.size == 8 ? 2 : f.size == 4 ? 4 : 8;
    if (f.format == 's') {
        f.count *= 256;
        per_line = 1 << 30;
    }
    int shown = 0, status = 0;
    while (shown < f.count) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "sessionId", r->sid);
        cJSON *targets = cJSON_AddArrayToObject(args, "targets");
        int batch = f.count - shown < 16 ? f.count - shown : 16;
        for (int i = 0; i < batch; i++) {
            char hex[32];
            snprintf(hex, sizeof hex, "0x%llx", addr + (unsigned long long)(shown + i) * f.size);
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "address", hex);
            cJSON_AddStringToObject(t, "type", unit_type(&f));
            cJSON_AddItemToArray(targets, t);
        }
        cJSON *ans = repl_tool(r, "debug_memory", args);
        if (!ans)
            return 1;
        const cJSON *res;
        bool end = false;
        cJSON_ArrayForEach(res, json_get(ans, "results")) {
            const cJSON *e = json_get(res, "error");
            if (e && !cJSON_IsNull(e)) {
                status = repl_fail("Cannot access memory at address %s",
                                   json_str(res, "target") ? json_str(res, "target") : "?");
                end = true;
                break;
            }
            const cJSON *v = json_get(res, "value");
            if (f.format == 's') {
                long long c = json_num(res, "value");
                if (shown == 0)
                    printf("0x%llx:\t\"", addr);
                if (c == 0) {
                    puts("\"");
                    end = true;
                    break;
                }
                putchar(c >= 32 && c < 127 ? (int)c : '?');
            } else {
                if (shown % per_line == 0)
                    printf("%s0x%llx:", shown ? "\n" : "",
                           addr + (unsigned long long)shown * f.size);
                putchar('\t');
                char fm = f.format == 'a' ? 'x' : f.format == 'f' ? 0 : f.format;
                repl_fmt_value(stdout, v, NULL, fm, f.size);
            }
            shown++;
        }
        cJSON_Delete(ans);
        if (end)
            break;
    }
    if (f.format != 's' && shown)
        putchar('\n');
    return status;
}
