/*
 * stepper.h - source-level steps of paused threads: the one owner of single-stepping
 * decisions and of BP_STEP int3s.
 *
 *   step-over  runs to the next line of the same frame: instructions are
 *              single-stepped (tracer_step), and a call is run at full speed to a
 *              temporary breakpoint on its return address that only counts with the
 *              stack pointer the call left (so a recursive call returning there does
 *              not end the step);
 *   step-into  the same, but a call enters the callee: one with line info is run to
 *              the end of its prologue (where gdb's `step` stops); one without (a PLT
 *              stub, libc) is run to its return and stepping goes on;
 *   step-out   runs to the return address of the frame (its real one when the
 *              function is traced), counting only when the stack pointer is back at
 *              the frame's CFA; the value the function returns is read from rax or
 *              xmm0 by its DWARF return type.
 *
 * A step ends at the first instruction of a different line (is_stmt rows of the
 * line table), or in the caller after a return; returning into code without line
 * info (main returning into libc) ends the step with the thread running on. System
 * libraries (procmem_system_path) count as without line info even when their debug
 * info is installed: a step goes over them. Other
 * threads run all along; a step that meets a breakpoint first is superseded by that
 * pause (stepper_cancel). Everything here runs on the tracer thread.
 */
#ifndef STROBE_STEPPER_H
#define STROBE_STEPPER_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/error.h"
#include "core/collector.h"
#include "ptrace/tracer/tracer.h"

struct stepper;

struct stepper_config {
    /* The step of tid ended there: the thread stays stopped (it is parked on
     * return). return_value: JSON text or "" (step-out); note: "" or a sentence. */
    void (*ended)(void *arg, struct tracer *t, pid_t tid, const struct user_regs_struct *regs,
                  const char *return_value, const char *note);
    /* The step of tid ended with the thread running on (it returned into code
     * without line info): why, in a sentence. */
    void (*released)(void *arg, pid_t tid, const char *note);
    void *arg;
};

struct stepper *stepper_new(const struct stepper_config *cfg);
void stepper_free(struct stepper *s);

/* Starts a step of tid, parked (its pause already ended by the caller). -1 with e
 * when tid cannot be stepped (gone). */
int stepper_start(struct stepper *s, struct tracer *t, pid_t tid, enum collector_resume how,
                  struct strobe_error *e);
/* Ends the step of tid, if any, without a stop (a breakpoint paused it, continue):
 * its temporary breakpoint goes (tid stopped; the image's other threads are held
 * here) and a single-step in flight is swallowed. */
void stepper_cancel(struct stepper *s, struct tracer *t, pid_t tid);
/* Cancels every step under way (the threads run on); returns how many there were. */
int stepper_cancel_all(struct stepper *s, struct tracer *t);
/* Whether tid has a step under way. */
bool stepper_active(const struct stepper *s, pid_t tid);

/* tracer_debugger.stepped and thread_gone, and the stop handler of BP_STEP
 * (arg = the stepper). */
void stepper_stepped(struct stepper *s, struct tracer *t, pid_t tid,
                     struct user_regs_struct *regs);
void stepper_thread_gone(struct stepper *s, pid_t tid);
enum bp_verdict stepper_on_trap(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg);

#endif
