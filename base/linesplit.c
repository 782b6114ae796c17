/*
 * linesplit.c - line splitting and UTF-8 sanitizing of captured output. See
 * linesplit.h. The pending bytes are kept raw; sanitizing happens when a line is
 * emitted, so a multi-byte character split across two reads stays whole.
 */
#include "base/linesplit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is invalid/truncated. */
size_t utf8_char_len(const char *str, size_t avail)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c >= 0x01 && c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t utf8_escape(const char *in, size_t n, char *out, const char *prefix)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_char_len(in + i, n - i);
        if (len) {
            memcpy(out + o, in + i, len);
            o += len;
            i += len;
        } else {
            o += (size_t)sprintf(out + o, "%s%02X", prefix, (unsigned char)in[i]);
            i++;
        }
    }
    out[o] = '\0';
    return o;
}

size_t utf8_invalid_bytes(const char *in, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_char_len(in + i, n - i);
        bad += len == 0;
        i += len ? len : 1;
    }
    return bad;
}

size_t utf8_first_invalid(const char *in, size_t n)
{
    size_t i = 0;
    for (size_t len; i < n; i += len)
        if ((len = utf8_char_len(in + i, n - i)) == 0)
            break;
    return i;
}

/* How much of the string is shown before and after a bad byte: enough to recognise
 * a path. */
#define DESCRIBE_BEFORE 40
#define DESCRIBE_AFTER 20

bool utf8_describe_invalid(const char *text, size_t n, char *out, size_t outlen)
{
    size_t at = utf8_first_invalid(text, n);
    if (at == n)
        return false;
    /* The JSON string around it: such a byte can only be inside one. */
    size_t from = at, to = at + 1;
    while (from > 0 && text[from - 1] != '"' && at - from < DESCRIBE_BEFORE)
        from--;
    while (to < n && text[to] != '"' && to - at <= DESCRIBE_AFTER)
        to++;
    char shown[4 * (DESCRIBE_BEFORE + 1 + DESCRIBE_AFTER) + 1];
    utf8_sanitize(text + from, to - from, shown);
    snprintf(out, outlen, "byte 0x%02X at offset %zu, in \"%s%s%s\"",
             (unsigned char)text[at], at, from > 0 && text[from - 1] != '"' ? "..." : "",
             shown, to < n && text[to] != '"' ? "..." : "");
    return true;
}

size_t utf8_sanitize(const char *in, size_t n, char *out)
{
    return utf8_escape(in, n, out, "\\x");
}

static void emit_line(struct linesplit *ls, size_t len, line_fn emit, void *arg)
{
    size_t text_len = len;
    if (text_len > 0 && ls->buf[text_len - 1] == '\r')
        text_len--;
    char *clean = malloc(4 * text_len + 1);
    if (clean) {
        size_t m = utf8_sanitize(ls->buf, text_len, clean);
        emit(arg, clean, m);
        free(clean);
    }
}

void linesplit_feed(struct linesplit *ls, const char *data, size_t n, line_fn emit, void *arg)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        while (take > 0) {
            size_t room = LINESPLIT_MAX - ls->len;
            size_t chunk = take < room ? take : room;
            memcpy(ls->buf + ls->len, data, chunk);
            ls->len += chunk;
            data += chunk;
            n -= chunk;
            take -= chunk;
            if (ls->len == LINESPLIT_MAX) {
                emit_line(ls, ls->len, emit, arg);
                ls->len = 0;
            }
        }
        if (nl) {
            emit_line(ls, ls->len, emit, arg);
            ls->len = 0;
            data++;
            n--;
        }
    }
}

bool linesplit_flush(struct linesplit *ls, line_fn emit, void *arg)
{
    if (ls->len == 0)
        return false;
    emit_line(ls, ls->len, emit, arg);
    ls->len = 0;
    return true;
}
