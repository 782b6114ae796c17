/*
 * stacks.h - the all-thread stacks snapshot of the native collector (the stacks
 * slot of core/collector.h): every thread of the target stopped, unwound with the
 * crash path's unwinder and symbolizer (unwind.h, symbolize.h), its name, state,
 * blocking system call and what it waits for read, then resumed.
 */
#ifndef STROBE_STACKS_H
#define STROBE_STACKS_H

#include "base/error.h"
#include "core/collector.h"
#include "ptrace/tracer/tracer.h"

/* Fills out (collector_stacks_free frees it) from a tracer_call on t. -1 with
 * PROCESS_EXITED when the target is gone, INTERNAL when memory runs out. */
int stacks_snapshot(struct tracer *t, const struct collector_stacks_request *req,
                    struct collector_stacks *out, struct strobe_error *e);

/* The stacks_of slot: threads of processes no tracer of ours holds (pids[0..n)),
 * each attached with PTRACE_SEIZE, stopped with PTRACE_INTERRUPT, read as above and
 * detached again (a signal that arrived meanwhile is delivered at the detach). Runs
 * on the calling thread, which must not be a tracer thread. -1 with PROCESS_EXITED
 * when no process is left. */
int stacks_snapshot_pids(const pid_t *pids, int n_pids,
                         const struct collector_stacks_request *req,
                         struct collector_stacks *out, struct strobe_error *e);

#endif
