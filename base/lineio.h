/*
 * lineio.h - newline-delimited lines over a file descriptor: the transport of the
 * daemon socket (one JSON-RPC message per line, docs/PROTOCOL.md), read by the
 * daemon's connection handler and by every client, and the write-all loop every
 * writer of a whole buffer uses.
 */
#ifndef STROBE_LINEIO_H
#define STROBE_LINEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- line reader ------------------------------------------------------------ */

/* A buffered reader of '\n'-terminated lines from one fd. The buffer grows as
 * needed up to max bytes of line content; a longer line is reported once as
 * LR_TOO_LONG and the rest of it, up to its newline, is discarded. */
struct line_reader {
    int fd;
    size_t max;       /* longest accepted line, without the '\n' */
    char *buf;
    size_t cap;       /* bytes allocated */
    size_t start;     /* first unconsumed byte */
    size_t len;       /* end of the buffered bytes */
    size_t scanned;   /* bytes after start already known to hold no '\n' */
    bool skipping;    /* discarding the rest of an overlong line */
    bool eof;         /* read() returned 0 */
};

enum lr_status {
    LR_LINE = 1,      /* *line holds a line (NUL-terminated, '\n' removed) */
    LR_AGAIN = 0,     /* no complete line buffered: call lr_fill() */
    LR_EOF = -1,      /* end of input; a partial last line is returned as LR_LINE */
    LR_TOO_LONG = -2, /* a line over max: dropped */
    LR_ERROR = -3,    /* read error or out of memory; errno says which */
};

/* Sets up r to read fd, lines up to max bytes. Allocates nothing yet. */
void lr_init(struct line_reader *r, int fd, size_t max);
/* Frees the buffer (not the fd). */
void lr_free(struct line_reader *r);
/* One read() into the buffer, retried on EINTR. Returns bytes read, 0 at end of
 * input (r->eof is set), -1 on error (including EAGAIN on a non-blocking fd). */
ssize_t lr_fill(struct line_reader *r);
/* The next buffered line, without reading. *line points into r's buffer and stays
 * valid until the next call on r; *len is its length. At end of input a final line
 * without '\n' is returned before LR_EOF. */
enum lr_status lr_next(struct line_reader *r, char **line, size_t *len);
/* lr_next(), calling lr_fill() until there is an answer: blocks on a blocking fd. */
enum lr_status lr_read_line(struct line_reader *r, char **line, size_t *len);

/* ---- writing ------------------------------------------------------------------ */

/* Writes all len bytes, retrying partial writes and EINTR. 0, or -1 with errno. */
int write_all(int fd, const void *buf, size_t len);
/* Writes s (len bytes, no '\n' inside) followed by '\n' in one write_all(). */
int write_line(int fd, const char *s, size_t len);

#endif
