/*
 * bpset.h - the breakpoints and logpoints an agent sets in one target: the one
 * owner of BP_USER_BREAKPOINT int3s.
 *
 * A breakpoint is resolved to addresses outside the tracer thread (bpset_resolve
 * reads DWARF, which takes milliseconds to seconds on a first use) and then armed on
 * it (bpset_arm, with the image's threads held). On a hit, bpset_on_trap evaluates
 * each breakpoint at the address in the hitting frame (base/cond.h through
 * ptrace/vars/framevars.h): a logpoint pushes its message as an EV_LOGPOINT event, a
 * breakpoint whose condition and hit count say so asks the debugger to pause the
 * thread (bpset_config.pause). One-shot breakpoints are disarmed after that hit.
 *
 * Locking: arming, disarming and hits happen on the tracer thread; bpset_list may
 * run on any thread, under the set's lock.
 */
#ifndef STROBE_BPSET_H
#define STROBE_BPSET_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/ring.h"
#include "core/collector.h"
#include "ptrace/tracer/tracer.h"

struct bpset;
struct bp_resolved;

struct bpset_config {
    struct event_sink sink;      /* logpoint events */
    const char *project_root;    /* scopes wildcard function patterns */
    /* A breakpoint (bp_id) decided that thread tid of process tgid pauses, with regs
     * as it stopped (rip at the breakpoint's address); all_stop: every thread of the
     * process stops. The thread is parked on return. */
    void (*pause)(void *arg, struct tracer *t, pid_t tid, pid_t tgid, int bp_id,
                  const struct user_regs_struct *regs, bool all_stop);
    void *arg;
};

struct bpset *bpset_new(const struct bpset_config *cfg);
void bpset_free(struct bpset *s);

/* Any thread: checks req (condition and message syntax, limits against the set) and
 * finds its addresses in process pid as it is now. NULL with e: BAD_EXPRESSION,
 * FILE_NOT_FOUND, LINE_NOT_FOUND, FUNCTION_NOT_FOUND, VARIABLE_NOT_FOUND,
 * LIMIT_EXCEEDED. */
struct bp_resolved *bpset_resolve(struct bpset *s, pid_t pid,
                                  const struct collector_breakpoint *req, struct strobe_error *e);
void bpset_resolved_free(struct bp_resolved *r);

/* Tracer thread, every thread of the image held: arms r (taking it over) and fills
 * info. -1 with e when none of its addresses could take an int3. */
int bpset_arm(struct bpset *s, struct tracer *t, struct bp_resolved *r,
              struct collector_bp_info *info, struct strobe_error *e);
/* Tracer thread, threads held: disarms breakpoint id; -1 with BREAKPOINT_NOT_FOUND.
 * t NULL (the program is gone): the set forgets it, any thread. */
int bpset_disarm(struct bpset *s, struct tracer *t, int id, struct strobe_error *e);
/* Tracer thread: forgets every address (the main process exec'd another program);
 * the breakpoints stay listed, bound nowhere, until bpset_rebind. */
void bpset_forget_addresses(struct bpset *s);
/* Tracer thread, at the entry point of the program the main process exec'd:
 * resolves and arms every breakpoint again. */
void bpset_rebind(struct bpset *s, struct tracer *t);

/* Any thread: the breakpoints, up to max, by id; returns how many. */
int bpset_list(struct bpset *s, struct collector_bp_info *out, int max);
/* Any thread: how many breakpoints and logpoints the set has. */
void bpset_counts(struct bpset *s, int *breakpoints, int *logpoints);

/* Tracer thread: a step of tid ended at regs->rip, where breakpoints may be: they
 * are hit as if the thread had trapped there (its int3 never runs: the thread stands
 * on it), logpoints log; returns the id of the breakpoint the thread is paused at
 * (0: none). */
int bpset_step_landed(struct bpset *s, struct tracer *t, pid_t tid,
                      const struct user_regs_struct *regs);

/* The stop handler of BP_USER_BREAKPOINT (tracer_add_stop_handler, arg = the set). */
enum bp_verdict bpset_on_trap(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg);

#endif
