/*
 * crash.h - black-box recording of how a traced process failed: one `crash` event
 * per fatal signal, assertion, uncaught C++ exception, Rust panic or sanitizer
 * death, captured on the tracer thread while the thread is still stopped, before
 * anything of the failure has been delivered.
 *
 * What a crash event holds (the data JSON, docs/PROTOCOL.md "Crash events"): the
 * signal with its code and fault address (PTRACE_GETSIGINFO), the registers, the
 * stack unwound with libunwind (ptrace/proc/unwind.h) and symbolized with libdw (inlined
 * calls become frames of their own), the arguments of every frame with debug info,
 * the locals of the crashing frame (the innermost frame of the program's own code)
 * and the language-level facts the runtime left in memory (glibc's abort message,
 * from which assertions are parsed). Facts that only exist as text on stderr (the
 * C++ what(), a Rust panic message, a sanitizer report) are joined at query time;
 * the crash records when it happened relative to that output, because the output
 * capture is asked to settle before the event is stamped.
 *
 * Which stops are crashes:
 * - signal-delivery stops of SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS and a
 *   SIGTRAP no hook claimed; the signal is delivered afterwards as it would have
 *   been, so a program's own handler still runs;
 * - Rust panics, on an int3 at the runtime's rust_panic (a BP_PANIC reference in the
 *   image's breakpoint table, taken at every exec): a panic unwinds and exits with
 *   101, so no signal would ever tell;
 * - PTRACE_EVENT_EXIT of a process exiting non-zero from inside a sanitizer runtime
 *   (AddressSanitizer reports and calls _exit(1)).
 * A thread that faults again at the same place with the same signal (a handler that
 * returns without fixing anything) is recorded once, and a process records at most
 * CRASH_MAX_PER_PROCESS crashes.
 */
#ifndef STROBE_CRASH_H
#define STROBE_CRASH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/ring.h"
#include "ptrace/patch/bptab.h"

#define CRASH_MAX_PER_PROCESS 16

struct crash;

struct crash_config {
    struct event_sink sink;     /* the tracer thread's */
    /* Called before a crash is stamped, so that what the program wrote before it
     * failed gets earlier timestamps than the crash. May be NULL. */
    void (*settle_output)(void *arg);
    void *arg;
    /* Called before thread tid is unwound, with the pc it stopped at: makes the
     * stack readable to an unwinder (trampolines replaced by the real return
     * addresses) and may move *pc out of relocated code (hooks_prepare_unwind).
     * May be NULL. */
    void (*prepare_unwind)(void *arg, pid_t tid, uint64_t *pc);
    void *prepare_arg;
};

struct crash *crash_new(const struct crash_config *cfg);
void crash_free(struct crash *c);

/* Process bookkeeping from the tracer's ptrace events. pid is a process (tgid).
 * crash_on_exec puts the Rust panic breakpoint in b, the table of pid's new image
 * (its forks share it). */
void crash_on_exec(struct crash *c, pid_t pid, struct bptab *b);
void crash_on_process_exit(struct crash *c, pid_t pid);

/* A trap of thread tid on the BP_PANIC int3 (regs: its registers, rip past the
 * int3; owners: every owner of the address). Records the panic, then either
 * BP_STEP_OVER (rip back on the instruction: the tracer steps it) or, when another
 * owner holds the address too, BP_PASS for that owner to resume the thread. */
enum bp_verdict crash_on_trap(struct crash *c, pid_t tid, struct user_regs_struct *regs,
                              unsigned owners);

/* A signal-delivery stop of tid for sig: records a crash when sig is one. The
 * caller delivers the signal afterwards either way. */
void crash_on_signal(struct crash *c, pid_t tid, int sig);

/* The PTRACE_EVENT_EXIT stop of tid: records a sanitizer death. */
void crash_on_exit_event(struct crash *c, pid_t tid);

/* Crash events recorded so far, all processes. */
int crash_count(const struct crash *c);

#endif
