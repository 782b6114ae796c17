/*
 * failure_text.c - parsers for the runtimes' failure messages. See failure_text.h.
 *
 * Each recognizer matches the exact text its runtime prints (glibc assert.c,
 * libstdc++ vterminate.cc, Rust's default panic hook before and after 1.73, the
 * sanitizer common runtime), so a program that merely prints something similar in
 * the middle of its output is not mistaken for one only when the shape matches
 * completely.
 */
#include "base/failure_text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_span(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* The first ":<digits>: " in s, or NULL; *line gets the number. */
static const char *find_line_marker(const char *s, int *line)
{
    for (const char *p = strchr(s, ':'); p; p = strchr(p + 1, ':')) {
        const char *d = p + 1;
        if (!isdigit((unsigned char)*d))
            continue;
        while (isdigit((unsigned char)*d))
            d++;
        if (d[0] == ':' && d[1] == ' ') {
            *line = atoi(p + 1);
            return p;
        }
    }
    return NULL;
}

bool failure_parse_assertion(const char *msg, struct assertion_info *out)
{
    memset(out, 0, sizeof *out);
    const char *assertion = strstr(msg, "Assertion `");
    if (!assertion)
        return false;
    const char *expr = assertion + strlen("Assertion `");
    const char *expr_end = strstr(expr, "' failed.");
    int line = 0;
    const char *marker = find_line_marker(msg, &line);
    if (!expr_end || !marker || marker > assertion)
        return false;
    copy_span(out->expression, sizeof out->expression, expr, (size_t)(expr_end - expr));
    /* The file starts after "prog: " when the program name is there. */
    const char *file = msg;
    const char *sep = strstr(msg, ": ");
    if (sep && sep < marker)
        file = sep + 2;
    copy_span(out->file, sizeof out->file, file, (size_t)(marker - file));
    out->line = line;
    const char *after = strchr(marker + 1, ':') + 2; /* past ":<line>: " */
    if (after < assertion) {
        const char *fn_end = assertion;
        if (fn_end - after >= 2 && fn_end[-2] == ':' && fn_end[-1] == ' ')
            fn_end -= 2;
        copy_span(out->function, sizeof out->function, after, (size_t)(fn_end - after));
    }
    return true;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- libstdc++ -------------------------------------------------------------- */

static void scan_exception(struct strbuf *out, const char *const *lines, size_t n)
{
    static const char head[] = "terminate called after throwing an instance of '";
    for (size_t i = n; i-- > 0;) {
        const char *l = lines[i];
        if (starts_with(l, "terminate called without an active exception")) {
            sb_puts(out, ",\"exception\":{\"type\":null,\"what\":null}");
            return;
        }
        if (!starts_with(l, head))
            continue;
        const char *type = l + strlen(head);
        const char *end = strrchr(type, '\'');
        if (!end)
            continue;
        char buf[512];
        copy_span(buf, sizeof buf, type, (size_t)(end - type));
        sb_puts(out, ",\"exception\":{\"type\":");
        sb_json_string(out, buf);
        sb_puts(out, ",\"what\":");
        if (i + 1 < n && starts_with(lines[i + 1], "  what():  "))
            sb_json_string(out, lines[i + 1] + strlen("  what():  "));
        else
            sb_puts(out, "null");
        sb_puts(out, "}");
        return;
    }
}

/* ---- Rust -------------------------------------------------------------------- */

/* "file:line:col" at s (up to end), split from the right. */
static bool parse_location(const char *s, size_t len, char *file, size_t cap, int *line,
                           int *col)
{
    char buf[1024];
    copy_span(buf, sizeof buf, s, len);
    char *c2 = strrchr(buf, ':');
    if (!c2 || c2 == buf)
        return false;
    *c2 = '\0';
    char *c1 = strrchr(buf, ':');
    if (!c1)
        return false;
    *c1 = '\0';
    char *e1, *e2;
    long l = strtol(c1 + 1, &e1, 10), c = strtol(c2 + 1, &e2, 10);
    if (*e1 || *e2 || c1[1] == '\0' || c2[1] == '\0')
        return false;
    copy_span(file, cap, buf, strlen(buf));
    *line = (int)l;
    *col = (int)c;
    return true;
}

static bool ends_panic_message(const char *l)
{
    return starts_with(l, "note: ") || starts_with(l, "stack backtrace:") ||
           starts_with(l, "thread '");
}

/* After the thread name's closing quote: " panicked at ", or in recent Rust (1.95 here)
 * " (TID) panicked at ". The text after it, or NULL. */
static const char *panicked_at(const char *s)
{
    if (starts_with(s, " (")) {
        s += 2;
        while (isdigit((unsigned char)*s))
            s++;
        if (*s++ != ')')
            return NULL;
    }
    return starts_with(s, " panicked at ") ? s + strlen(" panicked at ") : NULL;
}

static void scan_panic(struct strbuf *out, const char *const *lines, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        const char *l = lines[i];
        if (!starts_with(l, "thread '"))
            continue;
        const char *name = l + strlen("thread '");
        const char *name_end = strchr(name, '\'');
        const char *rest = name_end ? panicked_at(name_end + 1) : NULL;
        if (!rest)
            continue;
        char file[512], thread[256];
        int line = 0, col = 0;
        struct strbuf msg = {0};
        size_t rlen = strlen(rest);
        if (rlen && rest[rlen - 1] == ':' &&
            parse_location(rest, rlen - 1, file, sizeof file, &line, &col)) {
            /* Rust >= 1.73: the message is on the following lines. */
            for (size_t j = i + 1; j < n && !ends_panic_message(lines[j]); j++) {
                if (msg.len)
                    sb_puts(&msg, "\n");
                sb_puts(&msg, lines[j]);
            }
        } else if (rest[0] == '\'') {
            /* Older: panicked at 'message', file:line:col */
            const char *q = strrchr(rest, '\'');
            if (!q || q == rest || strncmp(q, "', ", 3) != 0 ||
                !parse_location(q + 3, strlen(q + 3), file, sizeof file, &line, &col))
                continue;
            sb_append(&msg, rest + 1, (size_t)(q - rest - 1));
        } else {
            continue;
        }
        copy_span(thread, sizeof thread, name, (size_t)(name_end - name));
        sb_puts(out, ",\"panic\":{\"message\":");
        sb_json_string(out, msg.len ? msg.buf : "");
        sb_puts(out, ",\"file\":");
        sb_json_string(out, file);
        sb_printf(out, ",\"line\":%d,\"column\":%d,\"thread\":", line, col);
        sb_json_string(out, thread);
        sb_puts(out, "}");
        sb_free(&msg);
        return;
    }
}

/* ---- sanitizers ------------------------------------------------------------- */

/* "==PID==ERROR: Tool: report": the tool name (up to ':') and the report. */
static bool sanitizer_error_line(const char *l, const char **tool, size_t *tool_len,
                                 const char **report)
{
    if (!starts_with(l, "=="))
        return false;
    const char *p = l + 2;
    while (isdigit((unsigned char)*p))
        p++;
    if (p == l + 2 || !starts_with(p, "==ERROR: "))
        return false;
    *tool = p + strlen("==ERROR: ");
    const char *colon = strstr(*tool, ": ");
    if (!colon || !strstr(*tool, "Sanitizer"))
        return false;
    *tool_len = (size_t)(colon - *tool);
    *report = colon + 2;
    return true;
}

static bool is_runtime_error_line(const char *l)
{
    return strstr(l, ": runtime error: ") != NULL; /* UBSan */
}

bool failure_sanitizer_span(const char *const *lines, size_t n, size_t *first, size_t *last)
{
    for (size_t i = n; i-- > 0;) {
        const char *tool, *report;
        size_t tlen;
        if (!sanitizer_error_line(lines[i], &tool, &tlen, &report) &&
            !is_runtime_error_line(lines[i]))
            continue;
        /* The report runs to "==PID==ABORTING" when the tool prints it (after the
         * shadow-byte map), else to its SUMMARY line. */
        *first = i;
        *last = i;
        bool summary = false;
        for (size_t j = i + 1; j < n; j++) {
            if (strstr(lines[j], "==ABORTING")) {
                *last = j;
                break;
            }
            if (!summary && starts_with(lines[j], "SUMMARY: ")) {
                *last = j;
                summary = true;
            }
        }
        return true;
    }
    return false;
}

static void scan_sanitizer(struct strbuf *out, const char *const *lines, size_t n)
{
    size_t first, last;
    if (!failure_sanitizer_span(lines, n, &first, &last))
        return;
    const char *tool, *report;
    size_t tlen;
    char name[128];
    if (sanitizer_error_line(lines[first], &tool, &tlen, &report)) {
        copy_span(name, sizeof name, tool, tlen);
    } else {
        snprintf(name, sizeof name, "UndefinedBehaviorSanitizer");
        report = strstr(lines[first], ": runtime error: ") + 2;
    }
    sb_puts(out, ",\"sanitizer\":{\"tool\":");
    sb_json_string(out, name);
    sb_puts(out, ",\"report\":");
    sb_json_string(out, report);
    for (size_t j = first; j <= last; j++)
        if (starts_with(lines[j], "SUMMARY: ")) {
            sb_puts(out, ",\"summary\":");
            sb_json_string(out, lines[j]);
        }
    sb_puts(out, "}");
}

/* '  File "F", line N in NAME' into its parts; false when l is not one. */
static bool python_frame(const char *l, char *file, size_t cap, int *line, const char **name)
{
    if (!starts_with(l, "  File \""))
        return false;
    const char *f = l + strlen("  File \"");
    const char *q = strstr(f, "\", line ");
    const char *in = q ? strstr(q, " in ") : NULL;
    if (!in)
        return false;
    copy_span(file, cap, f, (size_t)(q - f));
    *line = atoi(q + strlen("\", line "));
    *name = in + 4;
    return true;
}

void failure_scan_python(struct strbuf *out, const char *const *lines, size_t n, int max)
{
    size_t fatal = n;
    for (size_t i = 0; i < n && fatal == n; i++)
        if (starts_with(lines[i], "Fatal Python error: "))
            fatal = i;
    if (fatal == n)
        return;
    size_t current = n;
    int others = 0;
    for (size_t i = fatal + 1; i < n; i++) {
        if (starts_with(lines[i], "Current thread 0x") && current == n)
            current = i;
        else if (starts_with(lines[i], "Thread 0x"))
            others++;
        else if (starts_with(lines[i], "Fatal Python error: "))
            break; /* another process's dump */
    }
    if (current == n)
        return;
    sb_puts(out, ",\"python\":{\"error\":");
    sb_json_string(out, lines[fatal] + strlen("Fatal Python error: "));
    sb_puts(out, ",\"frames\":[");
    int k = 0;
    char file[512];
    int line;
    const char *name;
    for (size_t i = current + 1; i < n && k < max &&
                                 python_frame(lines[i], file, sizeof file, &line, &name); i++) {
        sb_puts(out, k++ ? ",{\"function\":" : "{\"function\":");
        sb_json_string(out, name);
        sb_puts(out, ",\"file\":");
        sb_json_string(out, file);
        sb_printf(out, ",\"line\":%d}", line);
    }
    sb_printf(out, "],\"otherThreads\":%d}", others);
}

void failure_scan_stderr(struct strbuf *out, const char *const *lines, size_t n)
{
    scan_exception(out, lines, n);
    scan_panic(out, lines, n);
    scan_sanitizer(out, lines, n);
}
