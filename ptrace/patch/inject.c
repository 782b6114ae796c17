/*
 * inject.c - system call injection. See inject.h.
 *
 * orig_rax is set to -1 while the injected call runs so the kernel never mistakes
 * our state for an interrupted system call to restart; the saved registers, with
 * their own orig_rax, are restored afterwards, so a call the thread was blocked in
 * restarts as it would have.
 */
#include "ptrace/patch/inject.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "ptrace/patch/bptab.h"
#include "ptrace/proc/procmem.h"

long inject_syscall(pid_t tid, int memfd, long nr, const long args[6],
                    struct step_signals *kept)
{
    kept->n = 0;
    struct user_regs_struct saved, regs;
    if (ptrace(PTRACE_GETREGS, tid, 0, &saved) != 0)
        return -EIO;
    uint8_t code[2], syscall_insn[2] = {0x0F, 0x05};
    if (!procmem_read(memfd, saved.rip, code, 2) ||
        !procmem_write(memfd, saved.rip, syscall_insn, 2))
        return -EIO;
    regs = saved;
    regs.rax = (uint64_t)nr;
    regs.orig_rax = (uint64_t)-1;
    regs.rdi = (uint64_t)args[0];
    regs.rsi = (uint64_t)args[1];
    regs.rdx = (uint64_t)args[2];
    regs.r10 = (uint64_t)args[3];
    regs.r8 = (uint64_t)args[4];
    regs.r9 = (uint64_t)args[5];
    long result = -EIO;
    if (ptrace(PTRACE_SETREGS, tid, 0, &regs) == 0) {
        int status = step_insn(tid, kept);
        if (status != -1 && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP &&
            (status >> 16) == 0 && ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0)
            result = (long)regs.rax;
    }
    procmem_write(memfd, saved.rip, code, 2);
    ptrace(PTRACE_SETREGS, tid, 0, &saved);
    return result;
}

uint64_t inject_mmap_exec(pid_t tid, int memfd, uint64_t addr, uint64_t size,
                          struct step_signals *kept)
{
    long args[6] = {(long)addr, (long)size, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0};
    long r = inject_syscall(tid, memfd, SYS_mmap, args, kept);
    if (r < 0 && r > -4096)
        return 0;
    return (uint64_t)r;
}
