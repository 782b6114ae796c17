/*
 * heldbytes.h - bytes read from a pipe and not yet given a time: each read keeps
 * the time it was read at, a write is found by its first bytes, and bytes leave
 * from the front, in the order they were read, with their read's time or the one
 * the caller gives (core/output.c: a line written by a thread whose calls the fast
 * path records takes the time of its write, docs/FASTPATH.md "Output order").
 */
#ifndef STROBE_HELDBYTES_H
#define STROBE_HELDBYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct held_read {
    size_t end;          /* the bytes of this read end here (an offset in buf) */
    int64_t read_ns;
};

struct heldbytes {
    char *buf;
    size_t len, cap;
    struct held_read *reads;
    size_t n_reads, cap_reads;
};

/* Called for each run of bytes leaving, with the time they are given. */
typedef void (*held_fn)(void *arg, const char *data, size_t n, int64_t ts_ns);

/* Appends n bytes read at read_ns. False when out of memory (nothing appended). */
bool held_append(struct heldbytes *h, const char *data, size_t n, int64_t read_ns);

/* Where the first place at or after from holding prefix (plen bytes, plen > 0) is;
 * -1 when there is none (the search stops at the end: a prefix cut by the end of
 * what was read does not match). */
long held_find(const struct heldbytes *h, const char *prefix, size_t plen);

/* The first n bytes (at most what is held) leave: given ts_ns, or each its read's
 * time when ts_ns is INT64_MIN. */
void held_take(struct heldbytes *h, size_t n, int64_t ts_ns, held_fn fn, void *arg);

/* The bytes read before until leave with their reads' times. */
void held_take_older(struct heldbytes *h, int64_t until, held_fn fn, void *arg);

/* The time the oldest byte held was read at; INT64_MAX when none is. */
int64_t held_oldest(const struct heldbytes *h);

void held_free(struct heldbytes *h);

#endif
