/*
 * framevars.h - program data named in a stopped thread's frame: the frame's
 * arguments and locals, its registers ("$rax", "$rip"), then the process's globals.
 * Breakpoint conditions and logpoint messages are evaluated here at every hit, and
 * debug_memory reads and writes a paused thread's frame through the same lookup
 * (varres.h does the rest of an expression: members, elements, dereferences).
 *
 * Frames do not touch the thread: registers come in (frame 0: as the thread stopped;
 * an outer frame: as the unwinder recovered them) and memory is read through
 * /proc/PID/mem, so any thread may evaluate a frame the tracer thread described.
 */
#ifndef STROBE_FRAMEVARS_H
#define STROBE_FRAMEVARS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "base/cond.h"
#include "base/strbuf.h"
#include "dwarf/frame.h"
#include "ptrace/vars/varres.h"

struct frame_ctx {
    pid_t tid, pid;
    int memfd;                   /* set by framevars_open */
    char module[PATH_MAX];       /* the ELF file holding pc; "" when none */
    uint64_t bias;
    uint64_t pc;                 /* runtime */
    bool outer;                  /* a caller's frame: pc is a return address, looked up
                                    at pc - 1 */
    struct dw_regs regs;         /* by DWARF number; frame 0 knows all of them */
    bool has_raw;                /* frame 0: raw holds every register ($rax ...) */
    struct user_regs_struct raw;
};

/* Describes frame 0 of a thread stopped with regs, in process pid: its module is
 * looked up among mods (procmem_modules) when given, else read from /proc. */
void framevars_frame0(struct frame_ctx *f, pid_t tid, pid_t pid,
                      const struct user_regs_struct *regs, const struct module *mods,
                      size_t n_mods);

/* Opens p on f's process with f's names before the globals (varres.h; close with
 * varres_process_close). f must outlive p. */
void framevars_open(struct varres_process *p, struct frame_ctx *f, int memfd);

/* cond_resolve_fn (base/cond.h), ctx the struct varres_process a condition is
 * evaluated over (opened by framevars_open, or by varres_process_open: globals only):
 * integers, bools, chars and enums as numbers, pointers as unsigned numbers, except
 * char pointers and char arrays, which are strings (read up to COND_STRING_READ bytes,
 * into buffers that live until the eighth string after them: a comparison uses two at
 * once). A path that does not resolve sets e as varres_resolve_in does
 * (VARIABLE_NOT_FOUND, MEMORY_UNREADABLE, ...); one that resolves to what a condition
 * cannot compare (a struct, unreadable bytes) sets BAD_EXPRESSION. */
#define COND_STRING_READ 256
int framevars_cond_resolve(void *ctx, const char *path, struct cond_value *out,
                           struct strobe_error *e);

/* Appends the value of expression expr in p, for a logpoint message: strings without
 * their quotes, pointers (but to chars) as their address "0x...", everything else as
 * debug_memory shows it (struct depth 1); an expression that cannot be read appends
 * "<error: why>". */
void framevars_render(struct varres_process *p, const char *expr, struct strbuf *out);

/* Writes the register a value of frame 0 lives in (v->regno, a DWARF number) into
 * raw; false when the register is not one frame 0 can write. */
bool framevars_set_register(struct user_regs_struct *raw, int regno, uint64_t value);

#endif
