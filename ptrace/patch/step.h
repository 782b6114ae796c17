/*
 * step.h - the one single-step of ptrace/: a stopped thread runs one instruction,
 * either waited for here (step_insn: a displaced instruction, an injected system
 * call, a thread stepped out of a trampoline) or left to the tracer's loop, which
 * gets its trap like any other stop (step_resume: the debugger's steps). Every
 * PTRACE_SINGLESTEP of the daemon is in step.c.
 */
#ifndef STROBE_STEP_H
#define STROBE_STEP_H

#include <signal.h>
#include <sys/types.h>

/* Signals that arrived while an instruction was being stepped: not delivered then,
 * kept in order for the caller to send again (step_signals_resend). */
#define STEP_MAX_SIGNALS 8
struct step_signals {
    siginfo_t info[STEP_MAX_SIGNALS];
    int n;
};

/* The one single-step of ptrace/: runs the instruction at tid's pc (tid stopped).
 * Returns the wait status of the stop that ended it, or -1 if ptrace or waitpid
 * failed (tid is gone). The stop is a SIGTRAP stop when the instruction ran; a
 * fault signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) the instruction itself caused,
 * which is then the program's to handle; an event or the thread's end; or, when
 * signals kept arriving first, the last of them, undelivered. Signals sent to tid
 * before the instruction ran are not delivered: they are left in *kept. An
 * interrupt stop (PTRACE_INTERRUPT of a thread that was stopped already) means
 * nothing ran yet: the step is retried. */
int step_insn(pid_t tid, struct step_signals *kept);
/* Sends the signals step_insn kept to tid again, in the order they came, with the
 * siginfo they had where the kernel lets a tracer forge it (a queued signal's: the
 * fast path's recorder stop stays recognisable), else as a tgkill; each is
 * delivered, as any signal, once tid runs. */
void step_signals_resend(pid_t tid, const struct step_signals *kept);
/* Resumes stopped tid for one instruction, delivering sig (0: none), without
 * waiting: the stop that ends it is the caller's loop's to read. 0, or -1 when
 * tid is gone. */
int step_resume(pid_t tid, int sig);

#endif
