/*
 * step.c - single-steps of stopped threads (step.h).
 */
#include "ptrace/patch/step.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace/proc/procmem.h"
#include "ptrace/watch/hwwatch.h"

#define STEP_TRIES 8

/* Whether the signal tid stopped with was raised by the instruction it ran (a
 * step's trap or a fault: si_code > 0 on a synchronous signal), not sent to it. */
static bool caused_by_insn(pid_t tid, int sig)
{
    if (sig != SIGTRAP && sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL)
        return false;
    siginfo_t si;
    return ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code > 0;
}

int step_insn(pid_t tid, struct step_signals *kept)
{
    kept->n = 0;
    int status = -1;
    for (int tries = 0; tries < STEP_TRIES; tries++) {
        if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) != 0)
            return -1;
        pid_t w;
        do
            w = waitpid(tid, &status, __WALL);
        while (w < 0 && errno == EINTR);
        if (w != tid)
            return -1;
        if (!WIFSTOPPED(status))
            return status;
        int event = status >> 16, sig = WSTOPSIG(status);
        /* Our own interrupt, queued while tid was stopped already: reported before
         * the instruction runs (or, if it ran, before the step's own trap, which
         * is then reported at once). */
        if (event == PTRACE_EVENT_STOP && sig == SIGTRAP)
            continue;
        /* A data watchpoint's SIGTRAP queued before the step (hwwatch.h): nothing
         * ran; its hit was recorded when the thread was held. */
        if (event == 0 && sig == SIGTRAP && hwwatch_queued_trap(tid))
            continue;
        if (event != 0 || caused_by_insn(tid, sig))
            return status;
        /* A signal got in before the instruction ran: kept for later. The last
         * try's signal is the returned stop itself. */
        if (tries + 1 < STEP_TRIES && kept->n < STEP_MAX_SIGNALS) {
            siginfo_t *si = &kept->info[kept->n++];
            if (ptrace(PTRACE_GETSIGINFO, tid, 0, si) != 0) {
                memset(si, 0, sizeof *si);
                si->si_signo = sig;
                si->si_code = SI_TKILL;
            }
        }
    }
    return status;
}

void step_signals_resend(pid_t tid, const struct step_signals *kept)
{
    pid_t tgid = procmem_tgid(tid);
    for (int i = 0; i < kept->n; i++) {
        const siginfo_t *si = &kept->info[i];
        siginfo_t copy = *si;
        if (si->si_code >= 0 || si->si_code == SI_TKILL ||
            syscall(SYS_rt_tgsigqueueinfo, tgid, tid, si->si_signo, &copy) != 0)
            syscall(SYS_tgkill, tgid, tid, si->si_signo);
    }
}

int step_resume(pid_t tid, int sig)
{
    return ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(uintptr_t)sig) == 0 ? 0 : -1;
}
