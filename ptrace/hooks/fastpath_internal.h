/*
 * fastpath_internal.h - the daemon's fast-path state, shared by its three files and
 * by nothing else (the rest of ptrace/ knows the fast path through
 * hooks_internal.h):
 *
 *   fastpath.c    the area and the recorder mapped into the image, a function's
 *                 entry jump and recording flags, forks, thread exits, ring-full
 *                 counts, the ring's records read
 *   fast_learn.c  the capture programs, learned at a live decoding (an int3, the
 *                 recorder's stops) and extended by the drain
 *   fast_drain.c  the drain: records to events
 *   fast_budget.c the budgets of the recorder, and the daemon's looks at them
 */
#ifndef STROBE_FASTPATH_INTERNAL_H
#define STROBE_FASTPATH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptrace/hooks/capprog.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/hooks_internal.h"

#define DRAIN_BATCH 512              /* records read per pread */

/* The reader of the call being decoded (read_call). */
struct call_reader {
    struct capcall *cc;
    int memfd;
};

struct fastpath {
    uint64_t area;           /* the area's address (the same in every process) */
    uint64_t code;           /* the recorder's code */
    uint64_t enter, ret_tramp;
    struct hook **fns;       /* fn id -> hook */
    struct capprog (*progs)[2]; /* fn id -> its capture program: enter, exit */
    uint32_t n_fns;
    struct capcall *cc;      /* the call being decoded (one at a time) */
    struct call_reader reader;
    int64_t hot_checked;     /* when the calls counters were last read */
    /* rdtsc -> CLOCK_MONOTONIC: through (tsc0, ns0) and (tsc1, ns1). */
    uint64_t tsc0, tsc1;
    int64_t ns0, ns1;
    struct fast_record *buf; /* DRAIN_BATCH records */
    struct fast_wrote *wrote; /* the followed writes a drain found returned */
    size_t n_wrote, cap_wrote;
};

/* A followed write to the output returned (hook_output.wrote's arguments). */
struct fast_wrote {
    int64_t ts_ns;
    size_t n;
    int stream;
    uint8_t plen;
    char prefix[24];
};

/* rdtsc and CLOCK_MONOTONIC read as close together as they can be. */
void fastpath_clock_pair(uint64_t *tsc, int64_t *ns);
/* A record's rdtsc as CLOCK_MONOTONIC, on the line through the area's creation and
 * the latest drain. */
int64_t fastpath_tsc_to_ns(const struct fastpath *fp, uint64_t tsc);
/* Writes len bytes of value at byte field of k's fast_fn, in every process of the
 * image that has the area (and tells each the daemon is live). */
void fastpath_write_fn(struct hooks *h, const struct hook *k, size_t field, const void *value,
                       size_t len);
/* Tells p's recorder the daemon is live (fast_area.live). */
void fastpath_write_live(const struct fastpath *fp, const struct process *p);
/* The address of function id's struct fast_fn in the area. */
uint64_t fastpath_fn_addr(const struct fastpath *fp, uint32_t id);
/* Reads n records of p's ring from index idx on into buf, in one or two pieces
 * (across the ring's end). */
bool fastpath_read_records(const struct fastpath *fp, const struct process *p, uint64_t idx,
                           size_t n, struct fast_record *buf);

/* (fast_learn.c) Writes side exit (or enter) of k's capture program into every
 * process of the image. */
void fast_learn_write_prog(struct hooks *h, const struct hook *k, bool exit);
/* (fast_learn.c) The reader of a record of k's call in p (its side exit or enter,
 * registers a, the return address's slot stack) whose reservation's DATA records
 * more[0..n_more) carry its copies: the rest is read live, and learned. */
struct hk_mem fast_learn_record_reader(struct hooks *h, struct process *p, struct hook *k,
                                       bool exit, const struct abi_regs *a, uint64_t stack,
                                       const struct fast_record *more, int n_more);

/* (fast_budget.c) From each drain, at now: every HOT_WINDOW_NS, the functions that
 * spent their credit, or ran hot, go quiet; the others get their credit back. */
void fast_budget_look(struct hooks *h, int64_t now);
/* (fast_budget.c) A process's fast_fn table (n of them) read at its end: a function
 * whose credit it spent is a sample from then on, said so. */
void fast_budget_at_end(struct hooks *h, const struct fast_fn *table, uint32_t n);

#endif
