/*
 * linesplit.h - turns a byte stream (a target's stdout or stderr) into text lines
 * fit for the timeline: one line per '\n' (the newline dropped, a trailing '\r'
 * too), a line longer than LINESPLIT_MAX cut into pieces, a partial line emitted
 * when the caller decides it has waited long enough, and every byte that is not
 * valid UTF-8 (or is NUL) written as the four characters "\xNN".
 */
#ifndef STROBE_LINESPLIT_H
#define STROBE_LINESPLIT_H

#include <stdbool.h>
#include <stddef.h>

#define LINESPLIT_MAX (64 * 1024)

typedef void (*line_fn)(void *arg, const char *line, size_t len);

struct linesplit {
    char buf[LINESPLIT_MAX];
    size_t len;
};

/* Feeds n bytes; calls emit for each complete line. */
void linesplit_feed(struct linesplit *ls, const char *data, size_t n, line_fn emit, void *arg);
/* Emits the pending partial line, if any. Returns whether it emitted. */
bool linesplit_flush(struct linesplit *ls, line_fn emit, void *arg);

/* Writes in[0..n) to out as valid UTF-8, escaping invalid bytes and NUL as "\xNN".
 * out must hold 4*n+1 bytes; it is NUL-terminated. Returns the length written. */
size_t utf8_sanitize(const char *in, size_t n, char *out);

/* The same with the escape written as prefix + two hex digits (utf8_sanitize's is
 * "\x"; inside JSON text it is "\\x"): out must hold n + bad*(strlen(prefix)+1) + 1
 * bytes, bad = utf8_invalid_bytes(in, n). */
size_t utf8_escape(const char *in, size_t n, char *out, const char *prefix);
/* How many bytes of in[0..n) utf8_escape escapes. */
size_t utf8_invalid_bytes(const char *in, size_t n);

/* The length of the valid UTF-8 character at s (1-4), or 0 when the bytes there
 * (avail of them) are not one: a stray continuation byte, an overlong form, a
 * surrogate, a truncated sequence, or NUL. */
size_t utf8_char_len(const char *s, size_t avail);

/* Where the first byte of in[0..n) that is not valid UTF-8 (or is NUL) lies; n when
 * there is none. */
size_t utf8_first_invalid(const char *in, size_t n);

/* When text[0..n) (JSON text) is not valid UTF-8, writes into out (outlen bytes) a
 * phrase naming the first bad byte, its offset and the JSON string it sits in, the
 * bad bytes shown as \xNN: `byte 0xFF at offset 57, in "/tmp/d/t\xFF"`; returns
 * whether it did. What a client or the daemon says of text it cannot send or read. */
bool utf8_describe_invalid(const char *text, size_t n, char *out, size_t outlen);

#endif
