/*
 * hwwatch_probe.c - whether this machine delivers debug-register traps at all (see
 * hwwatch_traps_work in hwwatch.h). Part of the debug registers' one owner: the
 * probe's child is the only other tracee whose DR0/DR7 this daemon writes.
 *
 * Why a probe: a hypervisor can accept DR0-DR7 (PTRACE_POKEUSER succeeds and reads
 * back) and never raise the debug exception. Seen on an AMD EPYC guest here: gdb's
 * `watch` stays silent there too. A watch armed on such a machine would wait
 * forever for hits that cannot come, so the answer is an error instead.
 *
 * How: a forked child stops itself (PTRACE_TRACEME, then SIGSTOP), the calling
 * thread (its tracer: a forked child's real parent is the forking thread) arms DR0
 * on a word of the child's copy of this file's memory and resumes it; the child
 * writes the word and exits. A SIGTRAP stop before the exit says the traps work.
 * About a millisecond, once per daemon. The child's wait is this thread's own
 * (__WNOTHREAD: a tracer thread's waitpid(-1) takes only its own tracees).
 */
#include "ptrace/watch/hwwatch.h"

#include <pthread.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"

#define DR7_L0 1ul                /* DR0 enabled (local) */
#define DR7_RW0_WRITE (1ul << 16) /* DR0 fires on writes */
#define DR7_LEN0_4 (3ul << 18)    /* DR0 covers 4 bytes */

static volatile int probe_word;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool traps_work;

static bool dr_poke(pid_t pid, int i, unsigned long v)
{
    size_t off = offsetof(struct user, u_debugreg) + (size_t)i * sizeof(long);
    return ptrace(PTRACE_POKEUSER, pid, (void *)off, (void *)v) == 0;
}

static int wait_child(pid_t pid)
{
    int status = 0;
    pid_t w;
    do
        w = waitpid(pid, &status, __WALL | __WNOTHREAD);
    while (w < 0 && errno == EINTR);
    return w == pid ? status : -1;
}

static void probe(void)
{
    const char *forced = getenv("STROBE_NO_DEBUG_TRAPS");
    if (forced && *forced && *forced != '0') {
        log_info("debug-register traps: taken as missing (STROBE_NO_DEBUG_TRAPS)");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        log_error("debug-register probe: fork failed; watches are refused");
        return;
    }
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0 && raise(SIGSTOP) == 0)
            probe_word = 1;
        _exit(0);
    }
    int status = wait_child(pid);
    if (status != -1 && WIFSTOPPED(status) && dr_poke(pid, 0, (unsigned long)&probe_word) &&
        dr_poke(pid, 7, DR7_L0 | DR7_RW0_WRITE | DR7_LEN0_4) &&
        ptrace(PTRACE_CONT, pid, 0, 0) == 0) {
        status = wait_child(pid);
        traps_work = status != -1 && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP;
    }
    if (status != -1 && !WIFEXITED(status) && !WIFSIGNALED(status)) {
        kill(pid, SIGKILL);
        while (status != -1 && !WIFEXITED(status) && !WIFSIGNALED(status))
            status = wait_child(pid);
    }
    log_info("debug-register traps: %s", traps_work ? "delivered" : "never delivered here");
}

bool hwwatch_traps_work(void)
{
    pthread_once(&probe_once, probe);
    return traps_work;
}
