/*
 * hwwatch.h - hardware data watchpoints: the one owner of the x86-64 debug
 * registers DR0-DR3, DR6 and DR7 of every tracee (PTRACE_POKEUSER / PEEKUSER at
 * offsetof(struct user, u_debugreg[i])): hwwatch.c, and hwwatch_probe.c for the
 * probe of whether the machine delivers their traps. No other code in ptrace/
 * touches them.
 *
 * A watch is one debug register: an address, a length (1, 2, 4 or 8, naturally
 * aligned), writes or reads and writes. It applies to a set of processes (the one it
 * was armed in and the processes it forks later) and to every thread of them.
 * Linux gives a new thread and a forked child no ptrace debug registers, and an exec
 * clears them, so the registers each thread should have are a function of its
 * process's watches: the tracer calls hwwatch_on_stop() whenever a thread is in a
 * ptrace stop (a new thread's first stop comes before its first instruction), and
 * a thread whose registers are older than the last change gets them written then.
 *
 * A hit is a SIGTRAP with si_code TRAP_HWBKPT and DR6 B0-B3 saying which register
 * fired. The trap is trap-like: the write has happened and rip is past the writing
 * instruction. Each hit reads the new value, unwinds the thread, pushes a watch_hit
 * event and lets the thread run on. A hit inside the tracer's own single-step
 * (step_insn over a breakpoint) comes back as the step's one SIGTRAP (TRAP_TRACE,
 * DR6.BS and Bn both set): the tracer asks hwwatch_after_step() for those.
 *
 * Everything here runs on the tracer thread.
 */
#ifndef STROBE_HWWATCH_H
#define STROBE_HWWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/ring.h"
#include "dwarf/dwarf.h"

#define HWWATCH_SLOTS 4
#define HWWATCH_LABEL_MAX 256
#define HWWATCH_MAX_FRAMES 16
#define HWWATCH_ENDED_KEPT 8

struct hwwatch_config {
    struct event_sink sink;
    /* Before an unwind (end false): moves a pc in relocated code back to its
     * function and puts real return addresses in place of trampolines; after it
     * (end true): the trampolines go back, since the thread runs on. */
    void (*unwind)(void *arg, pid_t tid, uint64_t *pc, bool end);
    void *unwind_arg;
};

struct hwwatch;

/* Whether this machine raises the debug exception a debug register asks for: some
 * hypervisors accept the registers and never do. Probed once per daemon with a
 * forked child (hwwatch_probe.c), from the calling thread; STROBE_NO_DEBUG_TRAPS=1
 * in the daemon's environment answers false without probing (for tests). */
bool hwwatch_traps_work(void);

struct hwwatch *hwwatch_new(const struct hwwatch_config *cfg);
void hwwatch_free(struct hwwatch *w);

/* A watch as armed, and as listed. */
struct hwwatch_spec {
    char label[HWWATCH_LABEL_MAX + 1];  /* the expression, or "0x..." */
    pid_t pid;                          /* the process it was armed in */
    uint64_t address;
    size_t size;                        /* 1, 2, 4 or 8, address aligned to it */
    bool readwrite;
    const struct dw_type *type;         /* how values are shown; never NULL */
    char type_name[128];
};

struct hwwatch_info {
    int id;
    struct hwwatch_spec spec;
    int64_t hits;
    int64_t set_ns;                     /* CLOCK_MONOTONIC when armed */
    int64_t work_ns;                    /* time spent recording its hits */
    bool active;
    char ended[160];                    /* why it ended ("" while active) */
};

/* Arms spec in the processes of pids (n of them: the process and its existing
 * forks); the caller then makes every stopped thread current (hwwatch_on_stop).
 * Returns the new id, or -1 with WATCH_SLOTS_FULL (the sentence names the active
 * watches). The value at the address is read now as the first "old" value. */
int hwwatch_arm(struct hwwatch *w, const struct hwwatch_spec *spec, const pid_t *pids,
                int n, struct strobe_error *e);
/* Disarms watch id (active or ended); false if there is none. */
bool hwwatch_disarm(struct hwwatch *w, int id, struct hwwatch_info *removed);
/* The watches, active first, then those that ended; returns how many there are. */
int hwwatch_list(const struct hwwatch *w, struct hwwatch_info *out, int max);
/* The current value of watch id in process pid as JSON (value.h), into out. */
bool hwwatch_value(const struct hwwatch *w, int id, pid_t pid, char *out, size_t cap);
/* The debugger wrote bytes (len of them) at addr in process tgid, through its memory
 * file, which the debug registers do not see: the watches that overlap take the
 * written bytes as their last value, so that the program's next write is reported
 * with the value it replaced, not the one before the debugger's write. */
void hwwatch_note_write(struct hwwatch *w, pid_t tgid, uint64_t addr, const void *bytes,
                        size_t len);

/* Tracer hooks. Thread tid of process tgid is in a ptrace stop: its debug
 * registers are brought up to date (cheap when they are). Writes the debug
 * registers of a stopped thread; a failure is returned as the errno (0: fine). */
int hwwatch_on_stop(struct hwwatch *w, pid_t tid, pid_t tgid);
/* Process child was forked (or vforked) by a thread of process parent: it gets
 * the parent's watches (its memory is a copy). */
void hwwatch_on_fork(struct hwwatch *w, pid_t parent, pid_t child);
/* Process tgid exec'd: its debug registers are gone, and so are its watches
 * (recorded as the reason a watch with no process left ended). */
void hwwatch_on_exec(struct hwwatch *w, pid_t tgid);
/* Thread tid is gone; process says it was a process (its watches end there). */
void hwwatch_on_exit(struct hwwatch *w, pid_t tid, bool process);
/* A SIGTRAP stop of tid: true when it is a data watchpoint's (hits recorded, DR6
 * cleared; the caller resumes the thread with no signal). */
bool hwwatch_on_trap(struct hwwatch *w, pid_t tid, pid_t tgid);
/* tid just single-stepped one instruction (step_insn): records the hits that
 * instruction caused and clears DR6. */
void hwwatch_after_step(struct hwwatch *w, pid_t tid, pid_t tgid);
/* tid was stopped by hold() (an interrupt, or another stop): a hit whose SIGTRAP is
 * still queued behind that stop (a ptrace interrupt is reported before pending
 * signals) is recorded now, from DR6, which is then cleared: the thread may run
 * injected code or be stepped before it is released, and the next debug exception
 * would reset DR6. The queued SIGTRAP is swallowed when it comes (hwwatch_on_trap). */
void hwwatch_collect(struct hwwatch *w, pid_t tid, pid_t tgid);
/* For step_insn: whether the SIGTRAP stop tid reports is a data watchpoint's trap
 * queued before the step (si_code TRAP_HWBKPT without DR6.BS), not the step's own:
 * the instruction has not run, and the step is to be retried without the signal. */
bool hwwatch_queued_trap(pid_t tid);

#endif
