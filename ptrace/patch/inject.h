/*
 * inject.h - running a system call inside a stopped tracee, the way a debugger
 * allocates memory in its target: save the registers and two bytes at RIP, write a
 * `syscall` instruction there, load the call's number and arguments, single-step,
 * read the result, put everything back. Used to mmap the scratch area that holds
 * relocated instructions and return trampolines.
 *
 * The `syscall` is written over code every thread of the process may run: the
 * caller has stopped every thread of the address space first (the tracer holds the
 * image around tracer_call commands and entry callbacks: tracer_hold.c), so none can
 * execute it.
 */
#ifndef STROBE_INJECT_H
#define STROBE_INJECT_H

#include <stdint.h>
#include <sys/types.h>

#include "ptrace/patch/bptab.h"

/* Runs syscall nr(args...) in thread tid, which must be in a ptrace stop. Returns
 * the system call's result (a negative errno when it failed), or -EIO if the
 * injection itself failed. Signals that arrived for tid meanwhile are left in
 * *kept (step_insn); the caller sends them again (step_signals_resend). */
long inject_syscall(pid_t tid, int memfd, long nr, const long args[6],
                    struct step_signals *kept);

/* mmap(addr, size, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE)
 * in the target: the scratch area. Returns its address, or 0. Writes go through
 * /proc/PID/mem, which ignores the protection. */
uint64_t inject_mmap_exec(pid_t tid, int memfd, uint64_t addr, uint64_t size,
                          struct step_signals *kept);

#endif
