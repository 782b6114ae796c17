/*
 * repl_fmt.c - gdb's text forms of values, frames, stops, exits, crashes and
 * watchpoint hits for the REPL. See repl_fmt.h.
 */
#include "cli/repl/repl_fmt.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"

const char *repl_base_name(const char *path)
{
    if (!path)
        return "?";
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether type is a C string: char * or char[N] (not char **). */
static bool is_char_type(const char *type)
{
    if (!type || !strstr(type, "char"))
        return false;
    const char *star = strchr(type, '*');
    return star ? !strchr(star + 1, '*') && !strchr(type, '[') : strchr(type, '[') != NULL;
}

/* Whether a string value without a type reads as a string (not an address, a
 * number, a marker such as "<optimized out>"): gdb quotes strings. */
static bool looks_like_text(const char *s)
{
    char *end;
    strtod(s, &end);
    return !(s[0] == '<' || strncmp(s, "0x", 2) == 0 || (*s && !*end));
}

static void fmt_integer(FILE *out, long long i, char fmt, int size)
{
    unsigned long long u = (unsigned long long)i;
    if (size > 0 && size < 8)
        u &= (1ULL << (size * 8)) - 1;
    switch (fmt) {
    case 'x': fprintf(out, "0x%llx", u); break;
    case 'o': fprintf(out, "0%llo", u); break;
    case 'u': fprintf(out, "%llu", u); break;
    case 'c': fprintf(out, "%lld '%c'", i, i >= 32 && i < 127 ? (int)i : '?'); break;
    case 't': {
        if (!u) {
            fputc('0', out);
            break;
        }
        int top = 63;
        while (!(u >> top))
            top--;
        for (; top >= 0; top--)
            fputc('0' + (int)((u >> top) & 1), out);
        break;
    }
    default: fprintf(out, "%lld", i); break;
    }
}

void repl_fmt_value(FILE *out, const cJSON *v, const char *type, char fmt, int size)
{
    if (cJSON_IsNull(v) && type && strchr(type, '*')) {
        fputs("0x0", out); /* a NULL pointer */
    } else if (!v || cJSON_IsNull(v)) {
        fputs("<unavailable>", out);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", out);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9.2e18)
            fmt_integer(out, (long long)d, fmt, size);
        else
            fprintf(out, "%.17g", d);
    } else if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        char *end;
        long long i = strtoll(s, &end, 0);
        if (fmt && fmt != 'd' && *s && !*end && s[0] != '"')
            fmt_integer(out, i, fmt, size);
        else if (is_char_type(type) || (!type && looks_like_text(s)))
            fprintf(out, "\"%s\"", s);
        else
            fputs(s, out);
    } else if (cJSON_IsArray(v)) {
        fputc('{', out);
        const cJSON *e;
        const char *sep = "";
        cJSON_ArrayForEach(e, v) {
            fputs(sep, out);
            repl_fmt_value(out, e, NULL, fmt, 0);
            sep = ", ";
        }
        fputc('}', out);
    } else if (cJSON_IsObject(v)) {
        const cJSON *ptr = json_get(v, "@ptr");
        if (cJSON_IsString(ptr)) { /* a pointer to a struct, followed: its address */
            fputs(ptr->valuestring, out);
            return;
        }
        fputc('{', out);
        const cJSON *e;
        const char *sep = "";
        cJSON_ArrayForEach(e, v) {
            fprintf(out, "%s%s = ", sep, e->string);
            repl_fmt_value(out, e, NULL, fmt, 0);
            sep = ", ";
        }
        fputc('}', out);
    } else {
        fputc('?', out);
    }
}

void repl_fmt_where(FILE *out, const char *function, const cJSON *args, const char *file,
                    long long line)
{
    fprintf(out, "%s (", function ? function : "??");
    const cJSON *a;
    const char *sep = "";
    cJSON_ArrayForEach(a, args) {
        fprintf(out, "%s%s=", sep, json_str(a, "name") ? json_str(a, "name") : "?");
        repl_fmt_value(out, json_get(a, "value"), json_str(a, "type"), 0, 0);
        sep = ", ";
    }
    fputc(')', out);
    if (file)
        fprintf(out, " at %s:%lld", repl_base_name(file), line);
}

void repl_fmt_frame(FILE *out, int level, const cJSON *f, const cJSON *args)
{
    fprintf(out, "#%-2d ", level);
    repl_fmt_where(out, json_str(f, "function"), args, json_str(f, "file"),
                   json_num(f, "line"));
    fputc('\n', out);
}

void repl_fmt_source(FILE *out, const char *path, long long line)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = -1;
    for (long long i = 1; f && (n = getline(&buf, &cap, f)) >= 0 && i < line; i++)
        ;
    if (f && n >= 0) {
        fprintf(out, "%lld\t%s", line, buf);
        if (n == 0 || buf[n - 1] != '\n')
            fputc('\n', out);
    } else {
        fprintf(out, "%lld\tin %s\n", line, path ? path : "??");
    }
    free(buf);
    if (f)
        fclose(f);
}

void repl_fmt_stop(FILE *out, const cJSON *a, const char *before_fn, const char *label,
                   int *values)
{
    const char *reason = json_str(a, "reason");
    const char *fn = json_str(a, "function");
    const char *file = json_str(a, "file");
    /* the arguments are those of the innermost frame with source (not libc's) */
    const cJSON *args = file ? json_get(a, "arguments") : NULL;
    bool where = true;
    if (reason && strcmp(reason, "breakpoint") == 0 && label) {
        fprintf(out, "\n%s %lld, ", label, json_num(a, "breakpointId"));
    } else if (reason && strcmp(reason, "pause") == 0) {
        fputs("\nProgram received signal SIGINT, Interrupt.\n", out);
    } else if (reason && strcmp(reason, "step") == 0) {
        where = !before_fn || !fn || strcmp(before_fn, fn) != 0 ||
                json_get(a, "returnValue");
    }
    if (where) {
        repl_fmt_where(out, fn, args, file, json_num(a, "line"));
        fputc('\n', out);
    }
    if (file)
        repl_fmt_source(out, file, json_num(a, "line"));
    const cJSON *rv = json_get(a, "returnValue");
    if (rv) {
        fprintf(out, "Value returned is $%d = ", ++*values);
        if (cJSON_IsObject(rv) && json_get(rv, "value"))
            repl_fmt_value(out, json_get(rv, "value"), json_str(rv, "type"), 0, 0);
        else
            repl_fmt_value(out, rv, NULL, 0, 0);
        fputc('\n', out);
    }
}

/* "SIGSEGV, Segmentation fault" for signal number sig. */
static void signal_text(FILE *out, int sig)
{
    const char *abbrev = sigabbrev_np(sig);
    fprintf(out, "SIG%s, %s", abbrev ? abbrev : "?", strsignal(sig));
}

void repl_fmt_exit(FILE *out, const cJSON *a, long long pid)
{
    if (json_has_num(a, "signal")) {
        fputs("\nProgram terminated with signal ", out);
        signal_text(out, (int)json_num(a, "signal"));
        fputs(".\nThe program no longer exists.\n", out);
        return;
    }
    long long code = json_num(a, "exitCode");
    if (code == 0)
        fprintf(out, "[Inferior 1 (process %lld) exited normally]\n", pid);
    else
        fprintf(out, "[Inferior 1 (process %lld) exited with code %lld]\n", pid, code);
}

void repl_fmt_crash(FILE *out, const cJSON *e)
{
    fputs("\nProgram received signal ", out);
    signal_text(out, (int)json_num(e, "signalNumber"));
    fputs(".\n", out);
    const cJSON *frames = json_get(e, "frames");
    const cJSON *f = cJSON_GetArrayItem(frames, (int)json_num(e, "crashFrame"));
    if (!f)
        f = cJSON_GetArrayItem(frames, 0);
    const char *file = f ? json_str(f, "file") : json_str(e, "sourceFile");
    long long line = f ? json_num(f, "line") : json_num(e, "line");
    repl_fmt_where(out, f ? json_str(f, "function") : json_str(e, "function"),
                   f ? json_get(f, "arguments") : NULL, file, line);
    fputc('\n', out);
    if (file && line > 0)
        repl_fmt_source(out, file, line);
}

void repl_fmt_watch_hit(FILE *out, const cJSON *e, int num, const char *kind)
{
    fprintf(out, "\n%s %d: %s\n\n", kind, num, json_str(e, "label") ? json_str(e, "label")
                                                                     : "?");
    if (json_get(e, "changed") && !cJSON_IsTrue(json_get(e, "changed"))) {
        fputs("Value = ", out);
        repl_fmt_value(out, json_get(e, "newValue"), NULL, 0, 0);
        fputc('\n', out);
    } else {
        fputs("Old value = ", out);
        repl_fmt_value(out, json_get(e, "oldValue"), NULL, 0, 0);
        fputs("\nNew value = ", out);
        repl_fmt_value(out, json_get(e, "newValue"), NULL, 0, 0);
        fputc('\n', out);
    }
    const char *file = json_str(e, "sourceFile");
    repl_fmt_where(out, json_str(e, "function"), NULL, file, json_num(e, "line"));
    fputc('\n', out);
    if (file)
        repl_fmt_source(out, file, json_num(e, "line"));
    /* unlike gdb's: said every time, since bt and info locals find no stop here */
    fputs("(recorded as it ran: strobe's watchpoints do not stop the program; `continue` "
          "shows the next hit)\n", out);
}
