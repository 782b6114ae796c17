/*
 * crash_report.c - renders a crash event as a terminal crash report (see
 * crash_report.h). Owned by the client side: the daemon stores the facts as JSON,
 * this file only decides how a person reads them. The layout borrows from gdb's
 * `bt full` (frames as "#N  function (args) at file:line"), Rust's panic message and
 * the sanitizers' report headers, so each part looks like what its tool prints.
 */
#include "cli/render/crash_report.h"
#include "cli/json_view.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* path as shown: its basename unless the full paths were asked for. */
static const char *shown(const char *path, unsigned flags)
{
    if (!path || (flags & CRASH_REPORT_FULL_PATHS))
        return path;
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* "FILE" or "FILE:LINE" of object o's key file_key and its "line". */
static void print_file_line(FILE *out, const cJSON *o, const char *file_key, unsigned flags)
{
    fputs(shown(json_str(o, file_key), flags), out);
    if (json_num(o, "line") > 0)
        fprintf(out, ":%lld", json_num(o, "line"));
}

/* text's first line after first, the others on lines of their own after indent;
 * trailing newlines are dropped. */
static void print_text(FILE *out, const char *first, const char *indent, const char *text)
{
    size_t end = strlen(text);
    while (end > 0 && text[end - 1] == '\n')
        end--;
    const char *p = text, *stop = text + end;
    fputs(first, out);
    do {
        size_t n = strcspn(p, "\n");
        if (p + n > stop)
            n = (size_t)(stop - p);
        if (p != text)
            fputs(indent, out);
        fprintf(out, "%.*s\n", (int)n, p);
        p += n + 1;
    } while (p < stop);
}

/* v as compact JSON, cut to max bytes (0: whole) on a UTF-8 character boundary. */
static void print_value(FILE *out, const cJSON *v, size_t max)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s) {
        fputs("?", out);
        return;
    }
    size_t n = strlen(s);
    if (max && n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
        fprintf(out, "%.*s...", (int)n, s);
    } else {
        fputs(s, out);
    }
    free(s);
}

/* "LABEL: 12, 40" for a non-empty array of event ids (decimal strings). */
static void print_ids(FILE *out, const char *label, const cJSON *ids)
{
    if (cJSON_GetArraySize(ids) == 0)
        return;
    fputs(label, out);
    const cJSON *id;
    bool first = true;
    cJSON_ArrayForEach(id, ids)
    {
        fputs(first ? ": " : ", ", out);
        if (cJSON_IsString(id))
            fputs(id->valuestring, out);
        else
            print_value(out, id, 0);
        first = false;
    }
    fputc('\n', out);
}

/* What led to the crash: one line per event ("  #12 stderr  text") when the
 * daemon sent them in brief, else their ids. */
static void print_last_events(FILE *out, const cJSON *e)
{
    const cJSON *briefs = json_get(e, "lastEvents");
    if (cJSON_GetArraySize(briefs) == 0) {
        print_ids(out, "last events before the crash", json_get(e, "lastEventIds"));
        return;
    }
    fputs("last events before the crash:\n", out);
    const cJSON *b;
    cJSON_ArrayForEach(b, briefs)
    {
        const char *what = json_str(b, "function") ? json_str(b, "function") : json_str(b, "text");
        fprintf(out, "  #%s %s  %s\n", json_str(b, "id") ? json_str(b, "id") : "?",
                json_str(b, "eventType") ? json_str(b, "eventType") : "?", what ? what : "");
    }
}

/* "... N more frames": frames the daemon did not keep. */
static void print_gap(FILE *out, long long n)
{
    fprintf(out, "... %lld more frame%s\n", n, n == 1 ? "" : "s");
}

/* The summary when the event has no text: "SIGSEGV (SEGV_MAPERR) at address 0x0 in
 * f (a.c:3)", or the kind in words for a crash without a signal. */
static void print_summary(FILE *out, const cJSON *e, unsigned flags)
{
    static const char *const kinds[][2] = {
        { "assertion", "assertion failed" },
        { "uncaught_exception", "uncaught exception" },
        { "panic", "panic" },
        { "sanitizer", "sanitizer report" },
    };
    const char *sig = json_str(e, "signal");
    if (sig) {
        fputs(sig, out);
        if (json_str(e, "signalCode"))
            fprintf(out, " (%s)", json_str(e, "signalCode"));
        if (json_str(e, "faultAddress"))
            fprintf(out, " at address %s", json_str(e, "faultAddress"));
        const cJSON *sender = cJSON_GetObjectItemCaseSensitive(e, "sender");
        if (sender)
            fprintf(out, " sent by pid %lld%s", json_num(sender, "pid"),
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sender, "self"))
                        ? " (itself)" : "");
    } else {
        const char *kind = json_str(e, "kind");
        const char *words = kind ? kind : "crash";
        for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
            if (strcmp(kind, kinds[i][0]) == 0)
                words = kinds[i][1];
        fputs(words, out);
    }
    if (json_str(e, "function"))
        fprintf(out, " in %s", json_str(e, "function"));
    if (json_str(e, "sourceFile")) {
        fputs(" (", out);
        print_file_line(out, e, "sourceFile", flags);
        fputc(')', out);
    }
}

static void print_detail(FILE *out, const cJSON *e, unsigned flags)
{
    if (cJSON_IsTrue(json_get(e, "stackOverflow")))
        fputs("stack overflow\n", out);
    if (cJSON_IsTrue(json_get(e, "handlerInstalled")))
        fprintf(out, "the program has its own %s handler\n",
                json_str(e, "signal") ? json_str(e, "signal") : "signal");

    const cJSON *a = json_get(e, "assertion");
    if (cJSON_IsObject(a)) {
        fprintf(out, "assertion failed: %s", json_str(a, "expression") ? json_str(a, "expression")
                                                                 : "?");
        if (json_str(a, "function"))
            fprintf(out, " in %s", json_str(a, "function"));
        if (json_str(a, "file")) {
            fputs(" at ", out);
            print_file_line(out, a, "file", flags);
        }
        fputc('\n', out);
    } else if (json_str(e, "abortMessage")) {
        /* An assertion's abort message only repeats it. */
        print_text(out, "abort message: ", "  ", json_str(e, "abortMessage"));
    }

    const cJSON *x = json_get(e, "exception");
    if (cJSON_IsObject(x)) {
        fprintf(out, "uncaught exception%s%s\n", json_str(x, "type") ? ": " : "",
                json_str(x, "type") ? json_str(x, "type") : "");
        if (json_str(x, "what"))
            print_text(out, "  what(): ", "  ", json_str(x, "what"));
        if (json_str(x, "message")) /* Python's: the message, then its causes */
            print_text(out, "  message: ", "  ", json_str(x, "message"));
        const cJSON *c;
        cJSON_ArrayForEach(c, json_get(e, "causes")) {
            const char *rel = json_str(c, "relation");
            fprintf(out, "  %s: %s: %s\n",
                    rel && strcmp(rel, "context") == 0 ? "while handling" : "caused by",
                    json_str(c, "type") ? json_str(c, "type") : "?",
                    json_str(c, "message") ? json_str(c, "message") : "");
        }
    }

    const cJSON *p = json_get(e, "panic");
    if (cJSON_IsObject(p)) {
        if (json_str(p, "thread"))
            fprintf(out, "thread '%s' ", json_str(p, "thread"));
        fputs("panicked", out);
        if (json_str(p, "file")) {
            fprintf(out, " at %s", json_str(p, "file"));
            if (json_num(p, "line") > 0)
                fprintf(out, ":%lld", json_num(p, "line"));
            if (json_num(p, "column") > 0)
                fprintf(out, ":%lld", json_num(p, "column"));
        }
        fputs(":\n", out);
        if (json_str(p, "message"))
            print_text(out, "  ", "  ", json_str(p, "message"));
    }

    const cJSON *s = json_get(e, "sanitizer");
    if (cJSON_IsObject(s)) {
        fprintf(out, "%s: %s\n", json_str(s, "tool") ? json_str(s, "tool") : "sanitizer",
                json_str(s, "report") ? json_str(s, "report") : "(no report line)");
        if (json_str(s, "summary"))
            fprintf(out, "  %s\n", json_str(s, "summary"));
        print_ids(out, "  report in events", json_get(s, "reportEventIds"));
    }

    const cJSON *py = json_get(e, "python"); /* a native crash's Python stack */
    if (cJSON_IsObject(py)) {
        fputs("Python stack (innermost first):\n", out);
        const cJSON *f;
        long long i = 0;
        cJSON_ArrayForEach(f, json_get(py, "frames")) {
            fprintf(out, "  #%-2lld %s at ", i++,
                    json_str(f, "function") ? json_str(f, "function") : "?");
            print_file_line(out, f, "file", flags);
            fputc('\n', out);
        }
    }
}

/* "#0  read_field (n=null, depth=2) at crash_null.c:31" */
static void print_frame(FILE *out, const cJSON *f, long long index, unsigned flags)
{
    fprintf(out, "#%-2lld ", index);
    if (json_str(f, "function"))
        fputs(json_str(f, "function"), out);
    else
        fprintf(out, "%s in ??", json_str(f, "pc") ? json_str(f, "pc") : "?");
    /* A frame with source but no arguments recorded has unknown ones, unlike a
     * frame without debug info, which gdb prints with "()". */
    const cJSON *args = json_get(f, "arguments");
    if (!args && json_str(f, "file")) {
        fputs(" (...)", out);
    } else {
        fputs(" (", out);
        const cJSON *arg;
        bool first = true;
        cJSON_ArrayForEach(arg, args)
        {
            fprintf(out, "%s%s=", first ? "" : ", ",
                    json_str(arg, "name") ? json_str(arg, "name") : "?");
            print_value(out, json_get(arg, "value"), CRASH_REPORT_ARG_MAX);
            first = false;
        }
        fputc(')', out);
    }
    if (json_str(f, "file")) {
        fputs(" at ", out);
        print_file_line(out, f, "file", flags);
    } else if (json_str(f, "module")) {
        fprintf(out, " from %s", shown(json_str(f, "module"), flags));
    }
    if (cJSON_IsTrue(json_get(f, "inlined")))
        fputs(" [inlined]", out);
    fputc('\n', out);
}

static void print_locals(FILE *out, const cJSON *e)
{
    const cJSON *locals = json_get(e, "locals");
    if (!cJSON_IsArray(locals))
        return;
    const cJSON *f = json_has_num(e, "crashFrame")
                         ? cJSON_GetArrayItem(json_get(e, "frames"), (int)json_num(e, "crashFrame"))
                         : NULL;
    if (f)
        fprintf(out, "locals of #%lld %s:", json_num(e, "crashFrame"),
                json_str(f, "function") ? json_str(f, "function") : "??");
    else
        fputs("locals:", out);
    if (cJSON_GetArraySize(locals) == 0)
        fputs(" none", out);
    fputc('\n', out);
    const cJSON *l;
    cJSON_ArrayForEach(l, locals)
    {
        fprintf(out, "  %s = ", json_str(l, "name") ? json_str(l, "name") : "?");
        print_value(out, json_get(l, "value"), 0);
        fputc('\n', out);
    }
}

/* Four registers a line: "  rax    0x0000000000000000  rbx    0x...". */
static void print_registers(FILE *out, const cJSON *e)
{
    const cJSON *regs = json_get(e, "registers");
    if (!cJSON_IsObject(regs)) {
        fputs("registers: not recorded\n", out);
        return;
    }
    fputs("registers:\n", out);
    int i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, regs)
    {
        bool last_in_row = i % 4 == 3 || !r->next;
        char *v = cJSON_IsString(r) ? NULL : cJSON_PrintUnformatted(r);
        const char *text = cJSON_IsString(r) ? r->valuestring : v ? v : "?";
        fprintf(out, "  %-6s %-*s", r->string, last_in_row ? 0 : 18, text);
        free(v);
        if (last_in_row)
            fputc('\n', out);
        i++;
    }
}

void crash_report_print(FILE *out, const cJSON *e, const char *sid, unsigned flags)
{
    fprintf(out, "session %s", sid ? sid : "?");
    if (json_has_num(e, "pid"))
        fprintf(out, ", pid %lld", json_num(e, "pid"));
    if (json_has_num(e, "threadId"))
        fprintf(out, ", thread %lld", json_num(e, "threadId"));
    fputs(": ", out);
    if (json_str(e, "text"))
        fputs(json_str(e, "text"), out);
    else
        print_summary(out, e, flags);
    fputc('\n', out);

    print_detail(out, e, flags);

    /* The daemon may keep the innermost frames and the outermost ones: a gap in the
     * indexes, or fewer frames than framesTotal, is said where it is. */
    long long next = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, json_get(e, "frames"))
    {
        long long index = json_has_num(f, "index") ? json_num(f, "index") : next;
        if (index > next)
            print_gap(out, index - next);
        print_frame(out, f, index, flags);
        next = index + 1;
    }
    if (json_num(e, "framesTotal") > next)
        print_gap(out, json_num(e, "framesTotal") - next);

    print_locals(out, e);
    if (flags & CRASH_REPORT_REGISTERS)
        print_registers(out, e);

    print_last_events(out, e);
}

void crash_report_print_all(FILE *out, const cJSON *events, const char *sid, long long pid,
                            unsigned flags)
{
    if (cJSON_GetArraySize(events) == 0) {
        fprintf(out, "no crash recorded in session %s", sid ? sid : "?");
        if (pid)
            fprintf(out, " for pid %lld", pid);
        fputc('\n', out);
        return;
    }
    const cJSON *e;
    bool first = true;
    cJSON_ArrayForEach(e, events)
    {
        if (!first)
            fputc('\n', out);
        crash_report_print(out, e, sid, flags);
        first = false;
    }
}
