/*
 * reloc.h - moving the instruction an int3 displaces so it can run somewhere else
 * (and, for stepping, telling calls and returns from other instructions).
 *
 * An entry breakpoint overwrites the first byte of a function. To resume the
 * function without taking the breakpoint out (which would race with other threads
 * and cost a single-step), the displaced instruction runs out of line: a copy in a
 * slot of the scratch area, followed by a jump back to the next original
 * instruction. Copies of position-dependent instructions are fixed up: a
 * RIP-relative memory operand gets a new displacement. Relative jumps and calls are
 * not copied but emulated by the tracer (a register update, no extra stop).
 * Anything else position-dependent, or that capstone cannot decode, falls back to
 * the classic remove / single-step / reinsert, and is counted.
 */
#ifndef STROBE_RELOC_H
#define STROBE_RELOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELOC_SLOT_SIZE 32 /* bytes of scratch one hook's slot takes */
#define RELOC_MAX_INSN 15

enum reloc_kind {
    RELOC_OUT_OF_LINE, /* run slot[]: set RIP to the slot address */
    RELOC_EMULATE_JMP, /* jmp rel: set RIP to target */
    RELOC_EMULATE_CALL,/* call rel: push next, set RIP to target */
    RELOC_SINGLE_STEP, /* cannot relocate: step over the original */
};

struct reloc {
    enum reloc_kind kind;
    uint8_t insn_len;                 /* length of the displaced instruction */
    uint8_t slot[RELOC_SLOT_SIZE];    /* for RELOC_OUT_OF_LINE */
    uint8_t slot_len;
    uint64_t target;                  /* for the emulated kinds */
    char why[96];                     /* for RELOC_SINGLE_STEP: the reason */
};

/* Plans how to run the instruction at code[0..len) (len >= 1, up to 15 bytes read
 * from the target), which sits at address `at`, from a slot at address `slot_at`.
 * Never fails: the worst plan is RELOC_SINGLE_STEP. */
void reloc_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t slot_at,
                struct reloc *out);

/* What the instruction at code[0..len) (at address at) does to the flow of control,
 * for stepping: a call, a return, anything else; its length in *insn_len. */
enum insn_flow { INSN_UNKNOWN, INSN_CALL, INSN_RET, INSN_OTHER };
enum insn_flow reloc_insn_flow(const uint8_t *code, size_t len, uint64_t at, size_t *insn_len);

/* The counting jump (hooks.h): a sampled function's first bytes become a `jmp rel32`
 * to a trampoline in scratch memory that counts the call (`lock incq` of an 8-byte
 * counter in writable memory; flags are dead at a function's entry), runs the whole
 * instructions the jump displaced (RIP-relative operands fixed up) and jumps back
 * to the first byte it left alone. */
#define COUNTJUMP_LEN 5           /* bytes of the jmp at the function's entry */
#define COUNTJUMP_SLOT_SIZE 64    /* bytes of scratch one trampoline takes */
#define COUNTJUMP_COUNT_LEN 8     /* the lock incq; the displaced instructions follow */

struct countjump {
    uint8_t patch[COUNTJUMP_LEN];       /* the jmp written at the function's entry */
    uint8_t displaced;                  /* bytes of the instructions it covers, >= 5 */
    uint8_t tramp[COUNTJUMP_SLOT_SIZE]; /* the trampoline */
    uint8_t tramp_len;
    char why[96];                       /* refused: the reason */
};

/* Plans the counting jump of the function whose whole code (its DWARF or symbol
 * range) is code[0..len), at address at, to a trampoline at tramp_at that counts
 * in the 8 bytes at counter_at (within rel32 reach of it). False (and
 * why) when the function cannot take it: a branch, call or return among the
 * displaced instructions, a direct branch anywhere in it to bytes 1..4 of the jump,
 * code capstone cannot decode, targets out of rel32 reach. */
bool reloc_countjump_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                          uint64_t counter_at, struct countjump *out);

/* What every entry jump shares (the counting jump above, the fast path's in
 * ptrace/hooks/fastcode.h): a trampoline whose own code is tramp[0..off), written by the
 * caller, followed by the whole instructions the jump at the function's entry
 * displaces and the jump back to the first byte it left alone. */
struct entryjump {
    uint8_t *tramp;                 /* in: the trampoline's bytes, cap of them */
    size_t off, cap;                /* in: where the displaced instructions go */
    uint8_t patch[COUNTJUMP_LEN];   /* out: the jmp written at the function's entry */
    size_t displaced;               /* out: bytes of the instructions it covers, >= 5 */
    size_t tramp_len;               /* out: the trampoline's length */
};

/* Fills tramp[off..] and the rest of ej for the function whose whole code is
 * code[0..len) at address at, its trampoline at tramp_at. NULL, or why the function
 * cannot take the jump (the refusals of reloc_countjump_plan). */
const char *reloc_entry_jump(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                             struct entryjump *ej);

#endif
