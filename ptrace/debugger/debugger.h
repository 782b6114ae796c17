/*
 * debugger.h - stop-and-step for one target: the breakpoints (bpset.h), the steps
 * (stepper.h) and the paused threads (pauses.h) joined behind the collector's
 * breakpoint, pause and resume slots (core/collector.h). Requests arrive on the
 * daemon's threads; what touches the program runs on the tracer thread through
 * tracer_call. Every pause is also an EV_PAUSE event in the timeline.
 */
#ifndef STROBE_DEBUGGER_H
#define STROBE_DEBUGGER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/ring.h"
#include "core/collector.h"
#include "ptrace/vars/framevars.h"
#include "ptrace/tracer/tracer.h"

struct debugger;

struct debugger_config {
    struct event_sink sink;      /* logpoint and pause events */
    const char *project_root;
    void (*paused)(void *arg);   /* collector_events.paused */
    void *arg;
};

struct debugger *debugger_new(const struct debugger_config *cfg);
void debugger_free(struct debugger *d);

/* Before the launch: breakpoints to bind at the entry point (copied). Returns how
 * many were staged. */
int debugger_stage(struct debugger *d, const struct collector_breakpoint *bps, int n);

/* Tracer callbacks (tracer_spec): on_start registers the stop handlers; on_entry
 * binds the staged breakpoints (and, after the main process exec'd, binds every
 * breakpoint again); main_exec forgets the old image's addresses. The target died
 * before its entry: entry_passed. */
void debugger_on_start(struct debugger *d, struct tracer *t);
void debugger_on_entry(struct debugger *d, struct tracer *t);
void debugger_main_exec(struct debugger *d);
void debugger_entry_passed(struct debugger *d);

/* The collector slots (core/collector.h documents them). */
int debugger_breakpoint_set(struct debugger *d, struct tracer *t,
                            const struct collector_breakpoint *bp,
                            struct collector_bp_info *out, struct strobe_error *e);
int debugger_breakpoint_clear(struct debugger *d, struct tracer *t, int id,
                              struct strobe_error *e);
int debugger_breakpoint_list(struct debugger *d, struct collector_bp_info *out, int max);
int debugger_breakpoints_staged(struct debugger *d, struct collector_bp_info *out, int max);
int debugger_pauses(struct debugger *d, struct collector_pause *out, int max);
int debugger_pause(struct debugger *d, struct tracer *t, pid_t pid, struct strobe_error *e);
int debugger_resume(struct debugger *d, struct tracer *t, pid_t tid, enum collector_resume how,
                    struct strobe_error *e);
/* collector_methods.resume_many: continues the paused threads among tids in one
 * tracer command, stopping when one of them set off an all-stop meanwhile. */
int debugger_resume_many(struct debugger *d, struct tracer *t, const pid_t *tids, int n,
                         struct strobe_error *e);
int debugger_evaluate(struct tracer *t, pid_t pid, const char *condition, bool *result,
                      char *values, size_t cap, struct strobe_error *e);

/* Frame `frame` of paused thread tid, for debug_memory: 0 with f filled (its memfd
 * is not open yet), -1 with THREAD_NOT_PAUSED or VALIDATION_ERROR (no such frame). */
int debugger_frame(struct debugger *d, struct tracer *t, pid_t tid, int frame,
                   struct frame_ctx *f, struct strobe_error *e);
/* Writes register regno (DWARF number) of paused thread tid's frame 0. */
int debugger_set_register(struct debugger *d, struct tracer *t, pid_t tid, int regno,
                          uint64_t value, struct strobe_error *e);

#endif
