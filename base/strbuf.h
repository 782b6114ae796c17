/*
 * strbuf.h - a growable string, and JSON text built with it. The engine writes
 * JSON-valued event fields (arguments, data) as text with these helpers instead of
 * depending on a JSON library; only mcp/ parses and builds JSON trees.
 */
#ifndef STROBE_STRBUF_H
#define STROBE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *buf;     /* always NUL-terminated once anything was appended */
    size_t len, cap;
    bool oom;      /* an allocation failed: contents are truncated */
};

void sb_append(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a quoted JSON string, escaping as RFC 8259 requires. */
void sb_json_string(struct strbuf *sb, const char *s);
/* Returns the string (caller frees) and resets sb; "" rather than NULL when empty. */
char *sb_take(struct strbuf *sb);
void sb_free(struct strbuf *sb);

/* s[0..n) without the blanks (spaces, tabs, newlines) at its ends, as a new string
 * (the caller frees), or NULL when out of memory. */
char *str_trimmed_dup(const char *s, size_t n);

#endif
