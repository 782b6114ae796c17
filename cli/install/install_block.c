/*
 * install_block.c - the marker-delimited blocks of `strobe install` in TOML and
 * markdown files. See install_block.h.
 */
#include "cli/install/install_block.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

/* Offset of the first line at or after `from` that is exactly `line`, or SIZE_MAX. */
static size_t line_at(const char *text, size_t len, size_t from, const char *line)
{
    size_t n = strlen(line);
    for (size_t i = from; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        size_t l = e - i;
        if (l > 0 && text[e - 1] == '\r')
            l--;
        if (l == n && memcmp(text + i, line, n) == 0)
            return i;
        i = e + 1;
    }
    return SIZE_MAX;
}

static int line_number(const char *text, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at; i++)
        line += text[i] == '\n';
    return line;
}

int block_find_line(const char *text, size_t len, const char *line)
{
    size_t at = line_at(text, len, 0, line);
    return at == SIZE_MAX ? 0 : line_number(text, at);
}

/* Finds the block: [*b, *e) from its begin line through its end line's newline. */
static enum edit_result locate(const char *text, size_t len, const char *begin,
                               const char *end, size_t *b, size_t *e, char *err, size_t errlen)
{
    *b = line_at(text, len, 0, begin);
    if (*b == SIZE_MAX)
        return EDIT_NONE;
    size_t at = line_at(text, len, *b, end);
    if (at == SIZE_MAX) {
        snprintf(err, errlen, "line %d: \"%s\" has no \"%s\" line after it; delete the partial "
                 "block", line_number(text, *b), begin, end);
        return EDIT_ERROR;
    }
    const char *nl = memchr(text + at, '\n', len - at);
    *e = nl ? (size_t)(nl - text) + 1 : len;
    return EDIT_CHANGE;
}

enum edit_result block_set(const char *text, size_t len, const char *begin, const char *end,
                           const char *body, struct splice *sp, char *err, size_t errlen)
{
    *sp = (struct splice){0};
    size_t b, e;
    enum edit_result found = locate(text, len, begin, end, &b, &e, err, errlen);
    if (found == EDIT_ERROR)
        return EDIT_ERROR;
    struct strbuf block = {0};
    sb_printf(&block, "%s\n%s%s\n", begin, body, end);
    if (found == EDIT_CHANGE) {
        if (e - b == block.len && memcmp(text + b, block.buf, block.len) == 0) {
            sb_free(&block);
            return EDIT_NONE;
        }
        *sp = (struct splice){.at = b, .del = e - b, .ins = sb_take(&block)};
        return EDIT_CHANGE;
    }
    struct strbuf ins = {0};
    if (len)
        sb_puts(&ins, "\n");
    sb_append(&ins, block.buf, block.len);
    sb_free(&block);
    *sp = (struct splice){.at = len, .del = 0, .ins = sb_take(&ins)};
    return EDIT_CHANGE;
}

enum edit_result block_remove(const char *text, size_t len, const char *begin,
                              const char *end, struct splice *sp, char *err, size_t errlen)
{
    *sp = (struct splice){0};
    size_t b, e;
    enum edit_result found = locate(text, len, begin, end, &b, &e, err, errlen);
    if (found != EDIT_CHANGE)
        return found;
    if (b > 0 && text[b - 1] == '\n')
        b--;
    *sp = (struct splice){.at = b, .del = e - b, .ins = strdup("")};
    return EDIT_CHANGE;
}
