/*
 * unwind.h - the call stack of a thread in a ptrace stop, unwound from its CFI
 * (.eh_frame, .debug_frame) by libdw, with libunwind-ptrace as the fallback (see
 * unwind.c for why that order). Symbolizing frames is the caller's business.
 */
#ifndef STROBE_UNWIND_H
#define STROBE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Registers by DWARF number (x86-64 psABI: 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp
 * 7 rsp 8-15 r8-r15 16 rip), with a mask of those that are meaningful: every
 * register for the innermost frame, the callee-saved ones plus rsp/rip for callers. */
#define UNWIND_NREGS 17
struct unwind_frame {
    uint64_t pc;        /* for callers, the return address */
    uint64_t sp;
    uint64_t cfa;       /* canonical frame address (the caller's sp), 0 = unknown */
    uint64_t regs[UNWIND_NREGS];
    uint32_t known;     /* bit i: regs[i] is valid */
};

struct unwind_result {
    struct unwind_frame *frames; /* head frames, then tail frames (malloc'd) */
    size_t n;                    /* frames kept */
    size_t head;                 /* frames[0..head) are the innermost ones */
    size_t total;                /* frames walked (>= n); omitted = total - n */
    bool truncated;              /* stopped at max_steps: total is a lower bound */
};

/* Unwinds thread tid (stopped) of the process whose /proc/PID/mem is memfd. Keeps
 * the innermost keep_head frames and the outermost keep_tail ones (the bottom of a
 * runaway recursion is where it started), walking at most max_steps. 0 (free out
 * with unwind_result_free), or -1 when not even the first frame could be read (out
 * then holds nothing to free). */
int unwind_thread(pid_t tid, int memfd, size_t keep_head, size_t keep_tail,
                  size_t max_steps, struct unwind_result *out);
void unwind_result_free(struct unwind_result *r);

/* For repeated unwinds of one process's threads (data watchpoint hits): its modules
 * and their CFI are read once, not at every unwind, and read again when a pc falls
 * outside all of them (a library loaded since). Free it when the process execs or
 * ends. unwind_thread_cached keeps the innermost keep_head frames. */
struct unwind_cache;
struct unwind_cache *unwind_cache_new(pid_t tgid);
void unwind_cache_free(struct unwind_cache *uc);
int unwind_thread_cached(struct unwind_cache *uc, pid_t tid, int memfd, size_t keep_head,
                         size_t max_steps, struct unwind_result *out);

/* Whether the code at pc (a runtime address in process tgid) has call frame
 * information (.eh_frame or .debug_frame): where an unwinder finds the caller of a
 * frame there from it, not by guessing through the frame pointer. */
bool unwind_has_cfi(pid_t tgid, uint64_t pc);

#endif
