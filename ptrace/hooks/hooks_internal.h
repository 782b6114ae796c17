/*
 * hooks_internal.h - the state the files of the hooks share: hooks, their threads
 * and processes, scratch areas, and the helpers they call across files. Nothing
 * outside ptrace/hooks/ includes it; the interface is hooks.h.
 *
 * The files call one way, each only the ones listed below it (the one loop is
 * hooks_arm.c and fast_output.c: arming the fast path arms libc's output hooks):
 *
 *   hooks.c                      the interface: life cycle, threads, statistics
 *   hooks_trap.c                 the int3 traps and the recorder's stops
 *   hooks_unwind.c               real return addresses lent to unwinders; adoption
 *   hooks_arm.c, fast_output.c   arming; libc's output and renaming hooks
 *   fast_drain.c                 the fast path's records turned into events
 *   hooks_calls.c                a call's events and frames, however it was seen
 *   fast_learn.c                 capture programs, learned and written
 *   sampling.c                   hot functions, the overhead budget, exact counts
 *   fastpath.c                   the fast path's area, ring and recorder
 *   hooks_areas.c                scratch areas, slots, int3 writes
 *   hooks_state.c                processes, threads, frames, names
 *   fastcode.c, capprog.c        code generation, capture programs (pure)
 */
#ifndef STROBE_HOOKS_INTERNAL_H
#define STROBE_HOOKS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/strbuf.h"
#include "base/u64map.h"
#include "dwarf/value.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/patch/reloc.h"
#include "ptrace/vars/twatch.h"

#define SCRATCH_SIZE (1u << 20)
#define COUNTERS_SIZE (64u << 10)
#define INT3 0xCC
#define HOT_WINDOW_NS 100000000LL
#define BACKOFF_MIN_NS 200000000LL
#define BACKOFF_MAX_NS 5000000000LL
#define SAMPLE_CALLS 64              /* recorded calls of a sample window */
#define SAMPLE_WINDOW_NS 20000000LL  /* ... or this long, whichever ends first */
#define JUMP_RETRY_MS 5              /* a thread was in the way of the jump */
#define MAX_FUNCTION_BYTES 65536     /* larger functions are not checked for a jump */
#define OVERHEAD_WINDOWS 10          /* the last second, in HOT_WINDOW_NS windows */
#define MAX_FRAMES 4096

/* A scratch area and, mapped with it (so every process has both or neither), a
 * writable block for the counting jumps' counters (0: none could be mapped). */
struct scratch {
    uint64_t base, used;
    uint64_t counters, counters_used;
};

struct hook {
    uint64_t addr;
    const struct dw_function *fn;
    const char *name;        /* hook_target.name */
    struct reloc rel;
    uint64_t slot;
    bool armed;              /* int3 in place */
    bool wanted;             /* not disarmed by the user */
    enum hook_role role;
    bool needs_fp;           /* float arguments or return: read the SSE registers */
    bool hidden_ret;         /* returns a struct in memory through rdi */
    int64_t window_start, window_hits;
    int64_t backoff_ns, rearm_at;   /* rearm_at != 0 while throttled */
    bool sampled;            /* has been throttled: events are a sample */
    struct twatch_cache wcache; /* which trace watches apply to it */
    /* Exact counts (hooks.h, "Hot functions"). */
    uint64_t calls;          /* hits of the entry int3, recorded or not */
    uint64_t recorded;       /* enter events recorded */
    uint64_t folded;         /* counting-jump calls of processes that ended */
    bool quiet;              /* between samples: calls are counted, not recorded */
    int64_t sampled_since;   /* CLOCK_MONOTONIC when it first went quiet */
    int sample_left;         /* recorded calls left in the current sample window */
    int64_t sample_until;
    int64_t window_cost;     /* tracer ns spent on it in the overhead window */
    /* The counting jump: planned once (cj.why when refused), the trampoline
     * written at tramp; jumped while the jmp replaces the int3. */
    struct countjump cj;
    uint64_t tramp, counter;
    bool cj_planned, cj_ok, jumped, jump_blocked;
    char lost[96];           /* "" or where calls went uncounted */
    /* The fast path (fastpath.c): planned (cj_planned, cj.why when refused) instead
     * of the counting jump, its jump placed like one (jumped); counter is its
     * fast_fn's calls. */
    bool fast;
    bool fast_learned, fast_learned_exit; /* a call decoded from live memory (its
                                first stop, or a call at its int3) taught the enter
                                or exit side of its capture program (capprog.h) */
    uint32_t fast_id;        /* its fast_fn in the area */
    uint16_t fast_resume;    /* offset in tramp of its copy of the displaced code */
    uint32_t fast_flags;     /* its fast_fn.flags as last written */
    uint64_t ring_full_folded; /* fast_fn.lost of processes that ended */
    uint64_t fast_calls_seen;  /* its main process's fast_fn.calls at the last hot check */
};

/* A process's view of a counting jump's counter: its value when the process was
 * forked (a copy of the parent's), and the last value read. */
struct pcount {
    uint64_t hook_addr;
    uint64_t baseline, last;
    bool read;
};

struct overhead_window {
    int64_t busy_ns, run_ns;
};

struct frame {
    uint64_t ret;            /* the real return address */
    uint64_t rsp;            /* rsp at entry: where the return address lives */
    uint64_t hidden_ret;     /* rdi at entry for memory-returned structs */
    int64_t seq;             /* the enter event's seq */
    int64_t t_enter;
    struct hook *hook;
    bool tail_caller;        /* jumped to a traced callee that shares this slot */
    bool detached;           /* real return address restored (exception): no trampoline
                                will report its exit; pruned as unwound once the stack
                                is below it */
    bool lent;               /* detached only for an unwind of a thread that runs on
                                (hooks_unwind_begin): its trampoline comes back */
    bool in_progress;        /* adopted while running (hooks_adopt_frames): no enter
                                event, t_enter is the arm time */
    bool fast;               /* entered through the fast path (fastpath.c): its
                                trampoline is the recorder's return trampoline */
    bool silent;             /* recorded by the fast path while its function was
                                sampled: no events, kept to match its return */
};

struct thread {
    pid_t tid, tgid;
    int memfd;               /* the process's /proc/PID/mem */
    struct frame *frames;
    int depth, cap;
    char name[16];
    int64_t name_read_ns;    /* read at an event when older than 50 ms (procmem.h): a
                                clone's name is set later, and threads rename */
    int64_t resumed_at;         /* when the tracer last resumed it from a hook trap */
    bool gone;               /* known only from fast-path records drained after its
                                exit: forgotten once its frames are (fast_drain.c) */
    /* A write to the output the fast path follows: its enter drained, its return
     * not yet (fast_drain.c), with the pipe and the first bytes its enter had. */
    bool writing;
    uint8_t write_stream, write_plen;
    uint64_t write_rsp;
    char write_prefix[24];
};

struct process {
    pid_t tgid;
    int memfd;
    /* Scratch areas mapped in this process: areas[0..n_areas). A forked child has
     * those of its parent at the fork; areas mapped later exist in the main
     * process only (see hooks_on_trap). The main process's count is h->n_areas. */
    size_t n_areas;
    bool forked;
    struct pcount *counts;   /* the counting jumps' counters in this process */
    size_t n_counts;
    bool execd;              /* its memory went with an exec: counters unreadable */
    bool fast_ok;            /* has the fast path's area (fastpath.c), its own */
    uint64_t fast_tail;      /* the next record of its ring to read */
    uint64_t fast_head;      /* its ring's head as last read */
    int64_t fast_floor;      /* every record not drained yet is stamped at or after
                                this (CLOCK_MONOTONIC ns; fast_drain.c) */
    uint64_t fast_mark_head; /* a later floor, fast_mark_ns (0: none), once the */
    int64_t fast_mark_ns;    /* drains have read up to fast_mark_head */
    uint64_t *fast_lost;     /* its fast_fn.lost as read at its last thread exit */
    uint32_t n_fast_lost;
    struct callsites *sites; /* call sites of traced calls (callsite.h) */
};

/* What events are rendered with: the value options, the buffers an event's
 * arguments, return value, data and call site are written into (reused from one
 * event to the next), and the names of function pointers (hooks_calls.c). */
struct hk_render {
    struct value_opts vopts;
    struct strbuf args, ret, data, site;
    struct strbuf brief, brief_obj; /* argsShort/retShort: as members, as an object */
    struct strbuf brief_text;       /* ... and the short rendering they are made of */
    struct fnsym *fnsym;            /* names function pointers in arguments */
};

/* The traced threads' time stopped at traps (busy: wake-up to resume plus the round
 * trip) and running between them (run): the session's totals, the current window's
 * (HOT_WINDOW_NS of wall time), and the last second's windows (sampling.c). */
struct hk_overhead {
    int64_t stops;           /* traps and recorder stops handled, exact */
    int64_t busy_total, run_total, win_start, win_busy, win_run;
    /* The kernel's share of a trap: the shortest time seen from resuming a thread
     * to waking up for its next trap (a trap, a wake-up, a resume with almost no
     * program code between), added to each trap's handling time. */
    int64_t round_trip;
    struct overhead_window recent[OVERHEAD_WINDOWS];
    int n_recent, recent_next;
};

struct hooks {
    struct hooks_config cfg;
    /* What is hooked, and where (hooks_state.c, hooks_areas.c). */
    struct u64map by_addr;   /* runtime address -> struct hook */
    struct u64map threads;   /* tid -> struct thread */
    struct u64map procs;     /* tgid -> struct process */
    struct scratch *areas;
    size_t n_areas;
    /* The fast path (fastpath.c, fast_output.c). */
    struct fastpath *fast;   /* the fast path's area and recorder (NULL: none yet) */
    char fast_why[96];       /* why the image has no fast path ("": none tried yet) */
    bool libc_hooked;        /* HOOK_OUTPUT and HOOK_DRAIN armed (fast_output.c) */
    /* Events (hooks_calls.c). */
    int64_t own_seq;
    int64_t *seq;            /* cfg.seq, or own_seq */
    struct hk_render render;
    /* Hits, sampling and the overhead budget (hooks_trap.c, sampling.c). A hot
     * function was throttled and still has its int3 (hooks_tick removes it);
     * next_rearm: the earliest back-off end, 0 if none is throttled. */
    uint64_t hits, single_step_hits;
    bool disarm_pending;
    int64_t next_rearm;
    struct hk_overhead overhead;
};

/* ---- hooks_state.c ---- */

/* The process tgid's record, made (its memory opened) on first use; NULL on error. */
struct process *hooks_state_process(struct hooks *h, pid_t tgid);
/* Thread tid of process tgid's new record; NULL on error. */
struct thread *hooks_state_thread_new(struct hooks *h, pid_t tid, pid_t tgid);
/* Frees t's record (its map entry is the caller's). */
void hooks_state_thread_free(struct thread *t);
/* Thread tid's record, made (with its process's) on first use; NULL on error. */
struct thread *hooks_state_thread(struct hooks *h, pid_t tid);
/* Thread tid of process tgid, known or not, alive or not (a fast-path record of a
 * thread that has exited); NULL on ENOMEM. */
struct thread *hooks_state_thread_in(struct hooks *h, pid_t tid, pid_t tgid);
/* Forgets thread t (a gone thread's record: its process stays). */
void hooks_state_thread_forget(struct hooks *h, struct thread *t);
/* A new frame on top of t's shadow stack (t->depth counts it), NULL when the stack
 * is MAX_FRAMES deep or memory ran out. */
struct frame *hooks_state_frame_push(struct thread *t);
/* k's function as events name it: the name its pattern used (the public alias), and
 * the symbol or linkage name behind it when that differs (NULL: none). */
const char *hooks_state_function_name(const struct hook *k);
const char *hooks_state_function_raw(const struct hook *k);

/* ---- hooks_areas.c ---- */

/* How many scratch areas process p has (the main process has them all). */
size_t hooks_areas_in(const struct hooks *h, const struct process *p);
/* Whether addr lies in one of the first n scratch areas. */
bool hooks_areas_contain(const struct hooks *h, size_t n, uint64_t addr);
/* How many scratch areas the process of thread t has. */
size_t hooks_areas_of_thread(const struct hooks *h, const struct thread *t);
/* The return trampoline for a hook at addr in a process with the first n areas:
 * the area near addr, else any (a return address reaches anywhere); 0 if none. */
uint64_t hooks_areas_trampoline_for(const struct hooks *h, size_t n, uint64_t addr);
/* A free slot of size bytes (a multiple of RELOC_SLOT_SIZE) near [lo, hi), mapping
 * a new area through stopped_tid if needed (0: only in the areas there are). */
uint64_t hooks_areas_slot_near(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t lo,
                               uint64_t hi, uint64_t size);
/* A counter (8 bytes, zero) for a counting jump whose trampoline is at tramp, in the
 * writable block of its scratch area; 0 if none is left. */
uint64_t hooks_areas_counter_near(struct hooks *h, uint64_t tramp);
/* Writes bytes into scratch memory at addr in the main process (memfd) and in the
 * forked children that have its area. */
bool hooks_areas_write_scratch(struct hooks *h, int memfd, uint64_t addr, const uint8_t *bytes,
                               size_t len);
/* Puts hook k's int3 in (k->armed) or takes it out, through the breakpoint table. */
bool hooks_areas_write_int3(struct hooks *h, struct hook *k);
void hooks_areas_restore_orig(struct hooks *h, struct hook *k);

/* Whether addr is the int3 of a scratch area's return trampoline (the int3 path's
 * function exits). */
bool hooks_areas_is_return_trampoline(const struct hooks *h, uint64_t addr);

/* ---- hooks_calls.c ---- */

/* How the memory of one call is read while its event is made: live (the int3 path),
 * live and learned (a fast-path function at its int3: fast_drain.c), or from the
 * copies its records carry (a fast-path record). k: the function whose call it
 * is (an exit's frames of other functions read live). */
struct hk_mem {
    mem_read_fn rd;
    void *ctx;
    const struct hook *k;
};

/* A call of a traced function, as the int3 trap or a fast-path record saw it. */
struct hk_call {
    const struct abi_regs *regs; /* at entry (rsp: the return address's slot) */
    uint64_t ret;                /* the real return address, 0: unknown */
    bool tail;                   /* a tail call: it shares the top frame's slot */
    bool push;                   /* push a frame: its exit will be reported */
    bool fast;                   /* through the fast path (frame.fast) */
    bool silent;                 /* not recorded (no room): only its frame is kept */
    struct hk_mem mem;           /* reads the memory its arguments point to */
    int64_t now;                 /* when it was entered (CLOCK_MONOTONIC ns) */
};
/* Decodes call a of k by t (its entry, or its exit when exit) as its event would,
 * from live memory, recording nothing: the reads teach k's capture program
 * (fast_learn_begin). */
void hooks_calls_learn(struct hooks *h, struct thread *t, struct hook *k, const struct abi_regs *a,
                       bool exit);
/* Records the function_enter event of call c of k by t and, when c->push, pushes its
 * frame; returns the frame (NULL: none pushed). The caller swaps the return address
 * (the int3 path) or the recorder did (the fast path). */
struct frame *hooks_calls_entered(struct hooks *h, struct thread *t, struct hook *k,
                                  const struct hk_call *c);
/* The frame of t whose return address lived at entry_rsp returned at time now with
 * the return registers a: reports its exit (and the frames above it as unwound, the
 * tail callers sharing its slot as returned) and pops them; returns the real return
 * address, 0 when no frame of t matches. mem: how its memory is read (NULL: live,
 * learned for a fast-path function). */
uint64_t hooks_calls_returned(struct hooks *h, struct thread *t, uint64_t entry_rsp,
                              const struct abi_regs *a, int64_t now, const struct hk_mem *mem);
/* The return trampoline frame f of t returns through. */
uint64_t hooks_calls_frame_trampoline(const struct hooks *h, const struct thread *t,
                                      const struct frame *f);
/* Frames of t whose return-address slot is at or below rsp, entered by now, are
 * gone from the real stack (a longjmp, an exception): their exits are reported as
 * unwound and they are popped. */
void hooks_calls_unwind_to(struct hooks *h, struct thread *t, uint64_t rsp, int64_t now);
/* Whether the events of k made from live memory teach its capture program (a
 * fast-path function's calls at its int3, before its jump or after a sample). */
bool hooks_calls_learns(const struct hooks *h, const struct hook *k);

/* ---- hooks_unwind.c ---- */

/* Puts the real return addresses of t's frames back on its stack for good (a C++
 * throw, a crash report): those frames will not report a normal exit. */
void hooks_unwind_detach_frames(struct hooks *h, struct thread *t);
/* Writes to into frame f's return-address slot when it holds from (false: it does
 * not, or the write failed). Every write of a return address by the daemon goes
 * through it: a frame the daemon still keeps may have ended (its exit not read
 * yet), and its slot then belongs to another call. */
bool hooks_unwind_swap_slot(const struct thread *t, const struct frame *f, uint64_t from,
                            uint64_t to);

/* ---- sampling.c ---- */

/* After a recorded call of k at now: ends a full sample window, or starts sampling
 * when k has used its recording budget and is hot. */
void sampling_throttle_if_hot(struct hooks *h, struct hook *k, int64_t now);
/* Sampling of k starts (or a sample window ends) at now: its calls are counted, not
 * recorded, until its back-off ends with the next sample window. */
void sampling_go_quiet(struct hooks *h, struct hook *k, int64_t now);
/* A trap that kept its thread stopped busy ns after it ran run ns of its own,
 * charged to k (NULL: none); enforces the overhead budget at each window's end. */
void sampling_account(struct hooks *h, struct hook *k, int64_t now, int64_t busy, int64_t run);
/* Takes k's counting jump out (its int3 back if it is still traced). */
void sampling_unjump(struct hooks *h, struct hook *k);
/* A forked child p: its counters start as copies of its parent's. */
void sampling_count_baselines(struct hooks *h, struct process *p);
/* Thread of p stops to exit: p's counters are read while they are there. */
void sampling_count_read_last(struct hooks *h, struct process *p);
/* Frees process p, its counters' calls folded into the hooks' totals first. */
void sampling_process_free(struct hooks *h, struct process *p);
/* Whether thread tid, at a + 1, is stopped by the trap of the int3 at a (a kernel
 * SIGTRAP, not yet handled: the tracer rewinds it onto a if the int3 has gone);
 * otherwise it came back from a relocated instruction. */
bool sampling_int3_trap_pending(pid_t tid, uint64_t a);
/* Puts k's planned jump (counting or fast) in place of its int3; false when a
 * thread is in the way (retry soon). */
bool sampling_try_jump(struct hooks *h, struct hook *k);

/* ---- fastpath.c, fast_learn.c and fast_drain.c (fastpath_internal.h) ---- */

/* Plans k's fast-path entry (mapping the area and the recorder into the main
 * process through stopped_tid the first time): its id, fast_fn and trampoline;
 * false (k->cj.why) when it cannot take one. */
bool fastpath_plan(struct hooks *h, struct hook *k, pid_t stopped_tid, int memfd);
/* The decoding of an event of fast-path function k from live memory, at an int3 or
 * a recorder stop (its entry: a the registers at entry, stack the return address's
 * slot; or its exit: a the return registers, stack the frame's slot): *mem reads
 * live and learns k's capture program; fast_learn_end writes what was learned
 * to the areas and clears k's stop at that side. */
void fast_learn_begin(struct hooks *h, struct hook *k, bool exit, const struct abi_regs *a,
                      uint64_t stack, int memfd, struct hk_mem *mem);
void fast_learn_end(struct hooks *h, struct hook *k, bool exit);
/* The function whose call stopped thread regs r for the recorder's
 * FAST_STOP_SIGNAL (fast_abi.h: r12 its id, r8 the side, r9 the saved registers,
 * r13 the stack); NULL for a late stop, which has nothing left to do. */
struct hook *fastpath_stop_hook(const struct hooks *h, const struct user_regs_struct *r);
/* Writes k's recording flags (quiet: count only) into every process's area. */
void fastpath_update_flags(struct hooks *h, struct hook *k);
/* (fast_budget.c) The credit a traced function gets at each look of the daemon
 * (fast_abi.h, FAST_FN_BUDGET); k's credit set to credit in every process's area (a
 * sample window's: SAMPLE_CALLS). */
int64_t fast_budget_credit(const struct hooks *h);
void fast_budget_set_credit(struct hooks *h, struct hook *k, int64_t credit);
/* Turns every record written since the last drain into events, in every process
 * (a complete drain: fast_drain.c's drain_process). */
void fast_drain_complete(struct hooks *h);
/* Whether pc is in the recorder or its return trampoline. */
bool fastpath_in_code(const struct hooks *h, uint64_t pc);
/* The recorder's return trampoline, 0 when there is no fast path. */
uint64_t fastpath_ret_tramp(const struct hooks *h);
/* A forked child's copy of the area becomes its own (parent_tid: the forking
 * thread, stopped). */
void fastpath_on_fork(struct hooks *h, struct process *parent, struct process *child,
                      pid_t parent_tid, pid_t child_pid);
/* Calls of k the fast path could not record for want of room in a ring, over the
 * processes (live and ended). */
uint64_t fastpath_ring_full(struct hooks *h, struct hook *k);
/* Thread t stops to exit, its records drained: its process's ring-full counts are
 * kept (fastpath_process_free folds them) and its slot forgets it. */
void fastpath_process_free(struct hooks *h, struct process *p);
void fastpath_on_thread_exit(struct hooks *h, struct thread *t);
void fastpath_free(struct hooks *h);
/* Whether fd of process pid is one of the captured output's pipes
 * (hooks_config.output; read from the fd's /proc link, which is not followed). */
bool fastpath_output_fd(const struct hooks *h, pid_t pid, int fd);

/* ---- fast_output.c ---- */

/* Once per image, when the fast path starts recording: HOOK_DRAIN on libc's
 * pthread_setname_np, prctl and execs and, with the output ordered, HOOK_OUTPUT on
 * its write and writev (main process stopped through stopped_tid). */
void fast_output_hook_libc(struct hooks *h, pid_t stopped_tid);
/* A thread is about to be renamed, or a process to exec (HOOK_DRAIN): the records
 * written so far are drained while their memory is there, and every thread's name
 * is read again at its next event. */
void fast_drain_point(struct hooks *h);

#endif
