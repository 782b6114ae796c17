/*
 * lineio.c - the line reader and the write loops. See lineio.h.
 */
#include "base/lineio.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- line reader ------------------------------------------------------------ */

/* Smallest free space worth a read(). */
#define LR_MIN_READ 65536

void lr_init(struct line_reader *r, int fd, size_t max)
{
    *r = (struct line_reader){ .fd = fd, .max = max };
}

void lr_free(struct line_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = r->start = r->len = r->scanned = 0;
}

ssize_t lr_fill(struct line_reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->start = 0;
    }
    /* Keep one byte for the NUL that lr_next() puts after a line. */
    if (r->cap - r->len < LR_MIN_READ + 1) {
        size_t cap = r->cap ? r->cap * 2 : 2 * LR_MIN_READ;
        while (cap - r->len < LR_MIN_READ + 1)
            cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (!nb) {
            errno = ENOMEM;
            return -1;
        }
        r->buf = nb;
        r->cap = cap;
    }
    ssize_t n;
    do
        n = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        r->eof = true;
    if (n > 0)
        r->len += (size_t)n;
    return n;
}

enum lr_status lr_next(struct line_reader *r, char **line, size_t *len)
{
    if (r->skipping) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start)
                                     : NULL;
        if (!nl) {
            r->start = r->len = r->scanned = 0;
            return r->eof ? LR_EOF : LR_AGAIN;
        }
        r->start = (size_t)(nl - r->buf) + 1;
        r->skipping = false;
    }
    size_t avail = r->len - r->start;
    char *nl = avail > r->scanned
                   ? memchr(r->buf + r->start + r->scanned, '\n', avail - r->scanned)
                   : NULL;
    if (nl) {
        char *s = r->buf + r->start;
        size_t n = (size_t)(nl - s);
        r->start += n + 1;
        r->scanned = 0;
        if (n > r->max)
            return LR_TOO_LONG;
        *nl = '\0';
        *line = s;
        *len = n;
        return LR_LINE;
    }
    r->scanned = avail;
    if (avail > r->max) {
        /* Drop what we have and the rest of the line as it arrives. */
        r->skipping = !r->eof;
        r->start = r->len = r->scanned = 0;
        return LR_TOO_LONG;
    }
    if (!r->eof)
        return LR_AGAIN;
    if (avail == 0)
        return LR_EOF;
    /* Last line without a newline: lr_fill() left room for the NUL. */
    *line = r->buf + r->start;
    *len = avail;
    r->buf[r->len] = '\0';
    r->start = r->len;
    r->scanned = 0;
    return LR_LINE;
}

enum lr_status lr_read_line(struct line_reader *r, char **line, size_t *len)
{
    for (;;) {
        enum lr_status st = lr_next(r, line, len);
        if (st != LR_AGAIN)
            return st;
        if (lr_fill(r) < 0)
            return LR_ERROR;
    }
}

/* ---- writing ------------------------------------------------------------------ */

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                poll(&pfd, 1, -1);
                continue;
            }
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int write_line(int fd, const char *s, size_t len)
{
    char *b = malloc(len + 1);
    if (!b) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(b, s, len);
    b[len] = '\n';
    int rc = write_all(fd, b, len + 1);
    int e = errno;
    free(b);
    errno = e;
    return rc;
}

