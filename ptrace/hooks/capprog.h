/*
 * capprog.h - capture programs learned from the decoder's own reads (the fast path:
 * fast_abi.h, "Capture programs").
 *
 * The fast path decodes a call's arguments, return value and trace watches when
 * it drains the call's records, up to milliseconds later: memory read then is not
 * what it was at the call. So the recorder copies, at the call, the memory the
 * decoder will read, and the decoder reads those copies. What to copy is not
 * derived from the DWARF types a second time (the decoder's rules for strings,
 * unions, C++ containers and depth would have to be written twice): it is learned
 * from the reads the decoder makes. Each read not served by a copy becomes an item
 * whose address is expressed through what the call had: a register, the stack, a
 * pointer inside an earlier item's copy, or a fixed address (a global).
 *
 * Learning happens on both paths:
 *   - a fast-path function's first call and return stop in the recorder
 *     (FAST_FN_TRAP_ENTER/_EXIT) and are decoded from live memory through a
 *     capcall (their reads give the first program), as is any call that reaches
 *     the function's int3;
 *   - every drained record is decoded through a capcall over its copies: a read the
 *     copies miss (a longer list, a longer string, a union's other member) is read
 *     live and extends the program for the calls after it.
 *
 * Everything here is plain data: no ptrace, no I/O (tests/unit/test_capprog.c).
 */
#ifndef STROBE_CAPPROG_H
#define STROBE_CAPPROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/value.h"
#include "ptrace/hooks/fast_abi.h"

/* One side (enter or exit) of a function's program, as the daemon keeps it. */
struct capprog {
    uint32_t n, max;     /* items in use; FAST_ENTER_ITEMS or FAST_EXIT_ITEMS */
    uint32_t records;    /* the DATA records the items fill */
    struct fast_cap item[FAST_ENTER_ITEMS];
};

/* One call being decoded: the values its program's sources had, and what each
 * item copied (from the records, or, while learning, as read live). */
struct capcall {
    struct capprog *prog;
    uint64_t regs[6];    /* FAST_SRC_REG's registers (enter: 6, exit: rax, rdx) */
    uint32_t n_regs;
    uint64_t stack;      /* FAST_SRC_STACK's address: the return address's slot */
    bool changed;        /* the program grew */
    struct capcopy {
        bool have;       /* the item ran for this call */
        uint64_t addr;
        uint32_t want;   /* bytes the item asked for at this call */
        uint32_t len;    /* bytes copied; fewer than want: the rest was unreadable at
                            the call */
        uint8_t bytes[FAST_ITEM_MAX];
    } copy[FAST_ENTER_ITEMS];
};

/* Starts decoding a call of prog's side with these source values. */
void capprog_begin(struct capcall *cc, struct capprog *prog, const uint64_t *regs,
                   uint32_t n_regs, uint64_t stack);

/* The record copy of item i, which asked for want bytes: len bytes copied at addr (a
 * long item's records come one after the other, each at the address after the
 * previous one's). */
void capprog_add_copy(struct capcall *cc, uint32_t item, uint64_t addr, const void *bytes,
                      uint32_t len, uint32_t want);

/* Runs the program against live memory, as the recorder would at this call (a
 * call decoded from live memory: its program may have items already). */
void capprog_run(struct capcall *cc, mem_read_fn rd, void *ctx);

/* Serves a read of len bytes at addr from the copies: the bytes served from the
 * start of the read (0: none covers it), or -1 when the read falls where an item
 * found the memory unreadable at the call. */
long capprog_copied(const struct capcall *cc, uint64_t addr, void *buf, size_t len);

/* Learns a read the copies did not serve: len bytes at addr, read live (bytes; NULL
 * when unreadable). Extends an item whose copy it continues, or adds one (while
 * the program has room: items and FAST_CALL_DATA_RECORDS). */
void capprog_learn(struct capcall *cc, uint64_t addr, size_t len, const void *bytes);

#endif
