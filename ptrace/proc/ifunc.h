/*
 * ifunc.h - the implementation an IFUNC runs in a process. glibc's strlen, memcpy,
 * strcmp ... are IFUNCs (STT_GNU_IFUNC): the symbol is a resolver the dynamic linker
 * calls once, storing the CPU variant it picks (__strlen_avx2) in a GOT slot
 * (R_X86_64_IRELATIVE, dwarf.h's dw_function.ifunc_slot). A pattern naming the IFUNC
 * hooks that variant: every call of the program runs it.
 */
#ifndef STROBE_IFUNC_H
#define STROBE_IFUNC_H

#include <stdint.h>

#include "dwarf/dwarf.h"

/* The variant the IFUNC f of index ix (loaded at bias) runs in the process whose
 * /proc/PID/mem is memfd: its runtime address into *addr and its function record:
 * the index's own when it knows a function there (a debug symbol such as
 * __strlen_avx2), else a record named after f with no size or DWARF, which lives
 * until ifunc_forget_all. NULL when f is no IFUNC or its slot does not hold an
 * address inside [lo, hi) (the module's extent) yet. */
const struct dw_function *ifunc_impl(const struct dw_index *ix, const struct dw_function *f,
                                     uint64_t bias, uint64_t lo, uint64_t hi, int memfd,
                                     uint64_t *addr);

/* Frees the records ifunc_impl made (with the DWARF caches, at shutdown). */
void ifunc_forget_all(void);

#endif
