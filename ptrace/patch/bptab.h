/*
 * bptab.h - the breakpoint table of one address space: every int3 the tracer puts
 * in a program, whoever wants it there.
 *
 * Several parts of the tracer stop a program at an address: trace hooks, the entry
 * point, the Rust panic hook, and later user breakpoints, steps and watches. They
 * share an address through this table: an owner inserts and removes its reference;
 * the first reference writes 0xCC and remembers the byte that was there, the last
 * one puts that byte back. So the saved byte is always the program's own, never
 * another owner's int3, and a trap at an address can be handed to every owner that
 * holds it. No other code in ptrace/ writes 0xCC.
 *
 * One table covers one address space: a program image and the processes forked
 * from it (their memory is a copy, int3s included, and every later insert or
 * remove is written into each of them, but for memory mapped after they were
 * forked: bptab_insert_only). A process that execs gets a table of its own. Code
 * bytes read through the table (bptab_read, bptab_mask) show the program's bytes,
 * not ours.
 *
 * Writing code while threads run is the caller's business (see tracer_hold.c: every
 * insert or remove happens with every thread of the image stopped); the table only
 * writes the bytes.
 */
#ifndef STROBE_BPTAB_H
#define STROBE_BPTAB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace/patch/step.h"

/* Who holds a breakpoint. The order is the order in which the tracer asks the
 * owners of a trap (traps.c): the owners that may stop a thread come before the
 * trace hooks, which always resume it; a thread resumed from a pause on an address
 * the hooks hold too is handed to them then (tracer_resume_thread), so a traced
 * function with a breakpoint on it records its call all the same. */
enum bp_owner {
    BP_ENTRY,            /* the program's entry point, once (tracer.c) */
    BP_PANIC,            /* Rust's rust_panic (crash.c) */
    BP_ADOPT,            /* a runtime's redirected entry, once (adopt.c) */
    BP_STEP,             /* a step's temporary breakpoints (stepper.c) */
    BP_USER_BREAKPOINT,  /* breakpoints and logpoints an agent sets (bpset.c) */
    BP_TRACE_HOOK,       /* function entries and return trampolines (hooks.h) */
    BP_N_OWNERS
};

#define BP_OWNER_BIT(o) (1u << (o))

/* What a stop handler did with a trap (tracer.h, tracer_add_stop_handler). */
enum bp_verdict {
    BP_PASS,       /* not mine, or only observed: ask the next owner */
    BP_RESUMED,    /* handled; the handler resumed the thread */
    BP_STEP_OVER,  /* handled; the handler set the pc to the breakpoint's address:
                      the tracer runs the original instruction there (step_over),
                      puts the int3 back and continues the thread */
    BP_PARK,       /* handled; the thread stays in its stop until
                      tracer_resume_thread() */
};

struct bptab;

struct bptab *bptab_new(void);
void bptab_free(struct bptab *b);

/* The processes of the address space. The first one added is the image's own
 * process: its bytes are the ones remembered, and an insert or remove succeeds
 * when it was written there. */
bool bptab_add_process(struct bptab *b, pid_t tgid);
void bptab_drop_process(struct bptab *b, pid_t tgid);
bool bptab_has_process(const struct bptab *b, pid_t tgid);

/* Takes a reference of owner on addr. The first reference reads the byte there
 * and writes 0xCC into every process; false (nothing changed) if that fails or
 * the byte already is 0xCC (the program's own int3: a trap there is not ours). */
bool bptab_insert(struct bptab *b, uint64_t addr, enum bp_owner owner);
/* bptab_insert at an address only tgid, the image's own process, has memory at
 * (mapped after the other processes were forked; processes forked later have a
 * copy): the int3 and the original byte are never written into the others. False
 * if the table has had an entry at addr. */
bool bptab_insert_only(struct bptab *b, uint64_t addr, enum bp_owner owner, pid_t tgid);
/* Drops a reference of owner on addr; the last reference of all owners writes the
 * original byte back into every process. False if owner held none. */
bool bptab_remove(struct bptab *b, uint64_t addr, enum bp_owner owner);
/* The owners holding addr, as BP_OWNER_BIT()s; 0 when none. */
unsigned bptab_lookup(const struct bptab *b, uint64_t addr);
/* A trap at addr, which no owner holds now: true if the table had an int3 there
 * once (the trap was in flight when it was removed, or process tgid kept a copy of
 * it across a fork); the program's byte is then back in tgid, so the thread can be
 * rewound onto its instruction. False: the int3 is the program's own. */
bool bptab_rewind(struct bptab *b, pid_t tgid, uint64_t addr);

/* Code patches: one owner replaces a few bytes (up to BPTAB_PATCH_MAX) in every
 * process of the address space (hooks.h's counting jump). The table remembers the
 * program's bytes (bptab_mask shows them) and refuses a patch over an int3 it holds
 * or over another patch. An int3 later wanted inside a patch calls the patch's
 * evict(arg, addr) first, which must take the patch out (bptab_unpatch) and may
 * insert int3s of its own: an int3 never lands inside a patch. */
#define BPTAB_PATCH_MAX 16
typedef void (*bptab_evict_fn)(void *arg, uint64_t addr);
bool bptab_patch(struct bptab *b, uint64_t addr, const uint8_t *bytes, size_t len,
                 bptab_evict_fn evict, void *arg);
/* Puts the program's bytes back under the patch at addr; false if there is none. */
bool bptab_unpatch(struct bptab *b, uint64_t addr);

/* Replaces the int3s and patches the table holds in buf (len bytes read at addr)
 * by the program's bytes. */
void bptab_mask(const struct bptab *b, uint64_t addr, void *buf, size_t len);
/* procmem_read through the table: the program's bytes, not ours. */
bool bptab_read(const struct bptab *b, int memfd, uint64_t addr, void *buf, size_t len);

/* Runs the program's instruction under the breakpoint at addr, where tid's pc is:
 * the original byte goes back in tid's process alone, step_insn runs it, and the
 * int3 returns if anyone still holds addr. The caller has stopped every other
 * thread of the address space (no thread may run past addr meanwhile). Returns
 * what step_insn returned. */
int bptab_step_over(struct bptab *b, pid_t tid, uint64_t addr, struct step_signals *kept);

#endif
