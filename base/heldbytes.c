/*
 * heldbytes.c - bytes read and not yet given a time. See heldbytes.h.
 */
#include "base/heldbytes.h"

#include <stdlib.h>
#include <string.h>

bool held_append(struct heldbytes *h, const char *data, size_t n, int64_t read_ns)
{
    if (n == 0)
        return true;
    if (h->len + n > h->cap) {
        size_t cap = h->cap ? h->cap : 4096;
        while (cap < h->len + n)
            cap *= 2;
        char *b = realloc(h->buf, cap);
        if (!b)
            return false;
        h->buf = b;
        h->cap = cap;
    }
    if (h->n_reads == h->cap_reads) {
        size_t cap = h->cap_reads ? 2 * h->cap_reads : 16;
        struct held_read *r = realloc(h->reads, cap * sizeof *r);
        if (!r)
            return false;
        h->reads = r;
        h->cap_reads = cap;
    }
    memcpy(h->buf + h->len, data, n);
    h->len += n;
    h->reads[h->n_reads++] = (struct held_read){h->len, read_ns};
    return true;
}

long held_find(const struct heldbytes *h, const char *prefix, size_t plen)
{
    if (plen == 0 || plen > h->len)
        return -1;
    for (size_t at = 0; at + plen <= h->len; at++) {
        const char *p = memchr(h->buf + at, (unsigned char)prefix[0], h->len - plen + 1 - at);
        if (!p)
            return -1;
        at = (size_t)(p - h->buf);
        if (memcmp(p, prefix, plen) == 0)
            return (long)at;
    }
    return -1;
}

void held_take(struct heldbytes *h, size_t n, int64_t ts_ns, held_fn fn, void *arg)
{
    if (n > h->len)
        n = h->len;
    if (n == 0)
        return; /* also: nothing held yet, buf and reads NULL */
    size_t done = 0, r = 0;
    while (done < n) {
        size_t end = h->reads[r].end < n ? h->reads[r].end : n;
        if (end > done)
            fn(arg, h->buf + done, end - done,
               ts_ns == INT64_MIN ? h->reads[r].read_ns : ts_ns);
        done = end;
        if (h->reads[r].end <= n)
            r++;
    }
    /* The reads that left whole go; the first left keeps its time. */
    memmove(h->reads, h->reads + r, (h->n_reads - r) * sizeof *h->reads);
    h->n_reads -= r;
    for (size_t i = 0; i < h->n_reads; i++)
        h->reads[i].end -= n;
    memmove(h->buf, h->buf + n, h->len - n);
    h->len -= n;
}

void held_take_older(struct heldbytes *h, int64_t until, held_fn fn, void *arg)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n_reads && h->reads[i].read_ns < until; i++)
        n = h->reads[i].end;
    held_take(h, n, INT64_MIN, fn, arg);
}

int64_t held_oldest(const struct heldbytes *h)
{
    return h->n_reads ? h->reads[0].read_ns : INT64_MAX;
}

void held_free(struct heldbytes *h)
{
    free(h->buf);
    free(h->reads);
    memset(h, 0, sizeof *h);
}
