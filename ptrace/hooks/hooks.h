/*
 * hooks.h - function entry/exit hooks made of int3 breakpoints, run on the tracer
 * thread.
 *
 * Entry: an int3 replaces the first byte of the function. On a hit the tracer
 * records a function_enter event (arguments decoded by DWARF type), swaps the
 * return address on the stack for a trampoline (an int3 in the scratch area) and
 * continues at the relocated copy of the displaced instruction (reloc.h): one stop,
 * no single-step, no window where another thread could miss the breakpoint.
 * Exit: the trampoline's int3; the tracer pops the thread's shadow stack, records
 * function_exit with the return value and duration, and jumps to the real return
 * address. A trampoline hit below the top of the shadow stack means frames were
 * skipped (longjmp): they get exit events marked unwound. A C++ throw restores the
 * real return addresses of the throwing thread first (the unwinder reads them); the
 * catch handler then reports the frames it left as unwound and puts the trampolines
 * of the live ones back. A tail call (the callee's return address is a trampoline)
 * stacks the callee's frame on the caller's slot; the callee's return reports both
 * exits with the same return value.
 *
 * Forked children share the image: their memory is a copy, int3s and scratch areas
 * included, and every later arm or disarm patches them as well as the main process
 * (through the image's breakpoint table, bptab.h). A child without the scratch area
 * of a hook (mapped after its fork) runs the displaced instruction by the tracer's
 * single-step instead, as does an instruction reloc.h cannot move.
 *
 * Hot functions: exact counts, honest samples. A function's calls are recorded
 * whole until it has recorded trace.sampleAfter events (an ordinary burst is never
 * sampled; on the fast path its recorder enforces that quota and the rate below
 * itself, call by call: fast_budget.c). After that it is sampled when it is hot (more than
 * trace.hotCallsPerSecond calls in a 100 ms window), or when the tracer's share of
 * the traced threads' time in a 100 ms window exceeds trace.overheadBudgetPercent:
 * then the function that cost the most tracer time in that window is sampled. A
 * trap keeps its thread stopped from the tracer's wake-up to the resume plus the
 * kernel's round trip of a stop (the shortest resume-to-next-wake-up seen); the
 * rest of the time between two traps of a thread is its own.
 *
 * A sampled function goes quiet: its calls are counted, not recorded. At the next
 * hooks_tick its int3 is replaced by a counting jump (reloc.h: a 5-byte jmp to a
 * trampoline that does `lock incq` of a counter in a writable block mapped beside
 * the scratch area, runs the displaced instructions and jumps back; once planned,
 * the int3 also resumes through it, past the count), written through
 * the breakpoint table's code patches (bptab_patch) into every process of the
 * image, only while no thread's pc lies inside the patched bytes or in the int3's
 * relocated instruction (else retried a few ms later). A function that cannot take
 * the jump (a branch in its first 5 bytes, a branch into them, unknown size, a
 * process without the trampoline's scratch area) stays on its int3, counting only:
 * exact, slower. Each back-off (200 ms, doubling up to 5 s) ends with a sample
 * window: the int3 is back for 64 recorded calls or 20 ms; a window that fills in
 * time goes quiet again, one that does not means the function cooled down and is
 * recorded whole again. An int3 another owner wants inside a jump takes the jump
 * out first (back to counting on the int3). A function's calls are the int3 hits
 * plus, over the processes, its trampoline counter minus the counter's value at
 * the process's fork; a process's counters are read when it exits
 * (hooks_on_exit_event) and folded into the totals when it is reaped. Events
 * recorded after sampling started carry sampled.
 *
 * Fast path (trace.mode "fast", the default; fastpath.c, the contract
 * fast_abi.h): once its int3 is in, a traced function's first bytes become a
 * 5-byte jmp to a trampoline that calls a recorder injected into the process; it
 * writes the call's registers into a ring in the process's memory and swaps the
 * return address for its own return trampoline, which records the return. No stop
 * (but at a function's first call and return, for the daemon to learn its capture
 * program: capprog.h): the tracer drains the
 * rings every few ms (hooks_fast_drain) and before it handles any trap, unwinds a
 * thread or lets a thread exit, and makes the same events as the int3 path, with
 * the call's own time. A function the jump cannot take (a branch in its first 5
 * bytes, a branch into them, no scratch in reach, a process forked before the
 * recorder was mapped) stays on its int3 (hooks_counts: mode and why). A sampled
 * function's recorder only counts (its flags); records drained after it went
 * quiet are dropped. The memory an event shows (what pointer arguments point to,
 * trace watch values, a struct returned in memory) is copied at the call by the
 * capture program and decoded from the copies; output and thread names stay in
 * order with the calls through HOOK_OUTPUT and HOOK_DRAIN (docs/FASTPATH.md,
 * "What an event shows").
 *
 * Code is patched only while every thread of the image is stopped: the caller of
 * hooks_arm, hooks_disarm and hooks_tick stops them (tracer_hold.c).
 */
#ifndef STROBE_HOOKS_H
#define STROBE_HOOKS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/ring.h"
#include "ptrace/patch/bptab.h"
#include "dwarf/dwarf.h"

struct hooks;
struct twatch_set;
struct unwind_result;

/* Per-session knobs from the settings. */
struct hook_tuning {
    int64_t hot_calls_per_second;  /* trace.hotCallsPerSecond */
    bool capture_exits;            /* trace.captureExits: false = enter events only,
                                      one stop per call instead of two */
    bool pin_cpu;                  /* trace.pinCpu: run the tracer thread and the
                                      target's main thread on one CPU */
    int64_t sample_after;          /* trace.sampleAfter: events recorded before sampling */
    int64_t overhead_budget_percent; /* trace.overheadBudgetPercent: 100 = no budget */
    bool fast;                     /* trace.mode "fast": record through the in-process
                                      recorder where the entry jump fits ("Fast path") */
    bool order_output;             /* output.orderAtTraps: the tracer reads the output
                                      at every trap (HOOK_OUTPUT then keeps it in
                                      order with the fast path's calls) */
};

/* The pipes the session's output is read from, known by fstat's st_dev and st_ino
 * (dev 0: none, or not pipes). Only libc's writes to them stop for the tracer to
 * read the output (HOOK_OUTPUT): a socket, a file or a pipe of the program never
 * stops. */
struct hook_output {
    uint64_t dev;
    uint64_t ino[2];            /* stdout's, stderr's */
    /* NULL follow: the writes to these pipes stop at their returns for the tracer
     * to read them (drain_output). Else they do not stop: follow is called once the
     * fast path follows them, and wrote for each one returned (stream 1 or 2, its
     * count n, its first plen bytes, its return's time), in their time order, at
     * the end of each drain (ptrace/hooks/fast_drain.c). */
    void (*follow)(void *arg);
    void (*wrote)(void *arg, int stream, const char *prefix, size_t plen, size_t n,
                  int64_t ts_ns);
    void *arg;
};

struct hooks_config {
    pid_t pid;                  /* the session's main process */
    struct event_sink sink;     /* the tracer's (this thread produces) */
    struct hook_tuning tuning;
    /* The session's event sequence, shared by the hooks of every image the session
     * runs (parent links are per session); NULL: this hooks counts on its own. */
    int64_t *seq;
    struct bptab *bp;           /* the image's breakpoint table (the tracer's) */
    /* Trace watches read into this image's function events (twatch.h); NULL: none. */
    struct twatch_set *watches;
    struct hook_output output;
};

struct hooks *hooks_new(const struct hooks_config *cfg);
void hooks_free(struct hooks *h);

/* Engine hooks that record nothing. HOOK_THROW and HOOK_CATCH keep return
 * trampolines correct across C++ exceptions: the unwinder's entry (the real return
 * addresses go back on the stack before it reads them) and the start of a catch
 * handler (frames the exception left are reported unwound; the ones still live get
 * their trampolines back). While the fast path records (ptrace/hooks/fast_output.c),
 * HOOK_OUTPUT follows libc's write and writev to the output (output stays in order
 * with the calls: struct hook_output) and HOOK_DRAIN stops pthread_setname_np, prctl and the execs at
 * their entries (calls recorded before a rename keep the thread's old name; a
 * child's records are read before its exec replaces the memory holding them). */
enum hook_role { HOOK_TRACE, HOOK_THROW, HOOK_CATCH, HOOK_OUTPUT, HOOK_DRAIN };

/* What to hook: a function of a loaded module, at its runtime address. */
struct hook_target {
    uint64_t addr;
    const struct dw_function *fn;
    uint64_t module_lo, module_hi; /* the module's mapped extent: scratch goes near */
    enum hook_role role;
    /* The function's name in its events (match_public_name: the alias the pattern
     * used); NULL: fn->name. fn's own name is then the event's functionRaw. */
    const char *name;
};

struct hooks_report {
    size_t armed;                  /* newly armed */
    size_t failed;                 /* could not be armed (unreadable code, no scratch) */
    size_t single_step;            /* armed with the single-step fallback */
    char first_failure[160];
};

/* Arms targets not armed yet. stopped_tid is a thread of the main process in a
 * ptrace stop, used to map scratch memory when more is needed. */
void hooks_arm(struct hooks *h, pid_t stopped_tid, const struct hook_target *t, size_t n,
               struct hooks_report *rep);
/* Disarms the functions at these runtime addresses. A thread that trapped on one
 * just before is rewound by the tracer (bptab_rewind). */
void hooks_disarm(struct hooks *h, const uint64_t *addrs, size_t n);
/* The addresses of the functions traced now (armed or throttled, not engine
 * hooks), up to max; returns how many there are. */
size_t hooks_traced(const struct hooks *h, uint64_t *addrs, size_t max);
/* trace.mode at runtime: fast or not from now on. Functions traced now move to it
 * (their fast-path jumps go back to int3s, or int3s give way to jumps as at
 * hooks_arm); stopped_tid: a stopped thread of the image's process, to map the
 * recorder the first time. Patches code: every thread must be stopped. */
void hooks_set_fast(struct hooks *h, pid_t stopped_tid, bool fast);
/* Changes the serialization depth of arguments and return values (1-10); asked: it
 * was asked for, so large and system structs are expanded to it too (dwarf/value.h). */
void hooks_set_depth(struct hooks *h, int depth, bool asked);

/* The signal the fast path's recorder stops with (fast_abi.h, FAST_STOP_SIGNAL). */
#define HOOKS_RECORDER_SIGNAL SIGURG
/* A HOOKS_RECORDER_SIGNAL of tid (si its siginfo, regs its registers): true when the
 * recorder sent it, and it was handled: the caller resumes the thread where it
 * stopped, without the signal. False for anyone else's SIGURG. Counted in
 * hooks_overhead's stops (its time is not: the overhead budget weighs traced
 * functions, and a write to the output is none of theirs). */
bool hooks_on_recorder_stop(struct hooks *h, pid_t tid, const siginfo_t *si,
                            const struct user_regs_struct *regs);

/* A trap of thread tid on a BP_TRACE_HOOK int3; regs are its registers (rip just
 * past the int3), and may be changed. woke_ns: when the tracer woke up for it
 * (CLOCK_MONOTONIC), the start of the tracer time it costs (overhead budget).
 * BP_RESUMED: the event is recorded and the thread resumed; BP_STEP_OVER: recorded,
 * the tracer must step the original instruction (rip is back on it); BP_PASS: not
 * one of ours. */
enum bp_verdict hooks_on_trap(struct hooks *h, pid_t tid, struct user_regs_struct *regs,
                              int64_t woke_ns);

/* Thread tid (stopped), caught inside code the hooks put in the program (the fast
 * path's recorder, an entry or counting-jump trampoline, a relocated instruction),
 * where no unwinder finds its frames and a pc mapped back to the function's entry
 * would be wrong once part of the displaced code ran, is stepped out of it (a few
 * hundred instructions at most) before its registers are read for an unwind; a
 * thread elsewhere is left as it is. h NULL: nothing. */
void hooks_leave_trampolines(struct hooks *h, pid_t tid);

/* Before a crash report or a stacks snapshot (stacks.h) unwinds thread tid: puts the
 * real return addresses back on its stack in place of the trampolines (the unwinder
 * reads them; the frames' exits are then reported as unwound if the thread ever
 * returns there), and maps
 * *pc from a relocated instruction in scratch memory back to the function's own
 * address, where the instruction came from. */
void hooks_prepare_unwind(struct hooks *h, pid_t tid, uint64_t *pc);
/* The same for a thread that runs on after the unwind (a watchpoint hit): the
 * frames hooks_unwind_begin detaches get their trampolines back at
 * hooks_unwind_end, so their exits are still reported. */
void hooks_unwind_begin(struct hooks *h, pid_t tid, uint64_t *pc);
void hooks_unwind_end(struct hooks *h, pid_t tid);
/* Unwinds thread tid (stopped; regs: its registers as read), which runs on after
 * it, as unwind_thread does (unwind.h: the innermost keep_head frames, at most
 * max_steps walked), between hooks_unwind_begin and hooks_unwind_end, its rip
 * showing the mapped pc meanwhile (regs are put back after). h NULL: a thread no
 * hooks trace, unwound as it is. 0, or -1 with out empty (nothing to free). */
int hooks_unwind_thread(struct hooks *h, pid_t tid, int memfd,
                        const struct user_regs_struct *regs, size_t keep_head,
                        size_t max_steps, struct unwind_result *out);

/* Calls already running when their function is hooked: after hooks_arm, for
 * thread tid (stopped) of the main process, unwinds the stack and, for each frame of
 * a function armed now (addrs, n), swaps its return address for the trampoline and
 * pushes a shadow frame in stack order, so its return is reported: a function_exit
 * with inProgress (no enter event; duration counted from now). A frame whose return
 * address slot cannot be found and checked (no CFA, or the word below it is not the
 * caller's pc) is skipped and counted in lost. */
struct hooks_adopt_report {
    size_t adopted;
    size_t lost;
};
void hooks_adopt_frames(struct hooks *h, pid_t tid, const uint64_t *addrs, size_t n,
                        struct hooks_adopt_report *rep);

/* Thread and process bookkeeping from the tracer's ptrace events. */
/* A new thread or process (new_process; shares_memory: a vfork child, which runs in
 * its parent's memory until it execs or exits). */
void hooks_on_clone(struct hooks *h, pid_t parent_tid, pid_t child_tid, bool new_process,
                    bool shares_memory);
void hooks_on_exit(struct hooks *h, pid_t tid);

/* Several images: a process that exec'd another program gets a hooks of its own.
 * hooks_owns_thread says whether tid is one of this hooks' threads;
 * hooks_forget_process drops a process and its threads (it exec'd: it belongs to
 * another hooks now); hooks_adopt takes the freshly exec'd process pid. */
bool hooks_owns_thread(const struct hooks *h, pid_t tid);
void hooks_forget_process(struct hooks *h, pid_t tgid);
void hooks_adopt(struct hooks *h, pid_t pid);

/* Takes the int3s of functions throttled since the last call out, and re-arms
 * throttled functions whose back-off has passed. Returns ms until the next one is
 * due, or -1 when none is throttled. Patches code: every thread of the image must
 * be stopped. */
int hooks_tick(struct hooks *h);
/* Whether hooks_tick has code to patch at time now (CLOCK_MONOTONIC ns): a
 * function was throttled, or a back-off has passed (now INT64_MAX: whether
 * anything is throttled at all). Cheap: asked after traps. */
bool hooks_patch_due(const struct hooks *h, int64_t now);

/* Whether the fast path records functions of this image: the tracer then drains
 * it every few ms with hooks_fast_drain (any thread state: nothing is stopped). */
bool hooks_fast_active(const struct hooks *h);
void hooks_fast_drain(struct hooks *h);
/* The time (CLOCK_MONOTONIC ns) at or after which every call the fast path recorded
 * and the drains have not turned into events yet was made, INT64_MAX when the
 * fast path records nothing: the floor the tracer gives the store for its ring
 * (base/ring.h, "Time order"). */
int64_t hooks_fast_floor(const struct hooks *h);
/* Whether a thread is inside a write to the output the fast path follows (its enter
 * drained, its return not): hook_output.wrote has not been told of it yet. */
bool hooks_fast_writing(const struct hooks *h);

/* A thread of the image stops to exit (PTRACE_EVENT_EXIT): the counters of its
 * process are read while its memory is still there. */
void hooks_on_exit_event(struct hooks *h, pid_t tid);

/* A traced function's calls (hooks.h's comment at the top: exact counts). */
struct hooks_count {
    const char *function;         /* as events name it; function_raw as well (or NULL) */
    const char *function_raw;
    uint64_t calls;               /* every call, recorded or not */
    uint64_t recorded;            /* enter events recorded */
    bool sampled;                 /* sampling started at sampled_since: ns since the
                                     session started, like event timestamps */
    int64_t sampled_since;
    const char *lost;             /* NULL: calls is exact; else where calls went uncounted */
    const char *mode;             /* "recorded", "count-only" (int3), "jump" */
    const char *no_jump;          /* why it cannot take the counting jump, or NULL */
    uint64_t ring_full;           /* fast path: calls not recorded because the ring was
                                     full (counted in calls; sampled is then true) */
};
/* The functions with calls, most called first, up to max; reads the counters of
 * the counting jumps in the live processes. Returns how many rows were filled. */
size_t hooks_counts(struct hooks *h, struct hooks_count *rows, size_t max);

/* The traced threads' time stopped at this image's traps (busy) and running their
 * own code between traps (run), since the first trap and over about the last
 * second (hooks.h's comment at the top). */
struct hooks_overhead {
    int64_t stops;                /* the traced threads' stops at this image's traps
                                     and the recorder's (exact) */
    int64_t busy_ns, run_ns;
    int64_t last_second_busy_ns, last_second_run_ns;
};
void hooks_overhead(const struct hooks *h, struct hooks_overhead *out);

struct hooks_stats {
    size_t armed;                 /* functions armed now (including throttled) */
    uint64_t hits;                /* entry hits */
    uint64_t single_step_hits;    /* hits that took the single-step fallback */
    size_t fast;                  /* functions taking the fast path (their jump in, or
                                     due at the next tick: a thread was in the way) */
    size_t fast_fallback;         /* trace.mode "fast": functions left on their int3 */
    char fast_why[200];           /* the first of those: "name: why" */
};
void hooks_stats(const struct hooks *h, struct hooks_stats *out);
/* Names of functions under sampling, for debug_trace's report (up to max). */
size_t hooks_sampled_names(const struct hooks *h, const char **names, size_t max);

#endif
