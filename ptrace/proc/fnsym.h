/*
 * fnsym.h - names the code a function pointer points to, for dwarf/value.h's
 * symbolize callback: the module holding the address (/proc/PID/maps), then that
 * module's function index (dwarf.h, which covers libraries without debug info through
 * their symbol tables). "symbol" at a function's entry, "symbol+0xoff" inside it.
 *
 * A struct fnsym caches the modules of the process it was last pointed at: pointing it
 * at another process reloads them, and so does an address in no known module (a
 * library loaded since), at most every 100 ms.
 */
#ifndef STROBE_FNSYM_H
#define STROBE_FNSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace/proc/symbolize.h"

struct fnsym;

struct fnsym *fnsym_new(void);
void fnsym_free(struct fnsym *f);
/* The process whose addresses the next fnsym_name calls name. */
void fnsym_use(struct fnsym *f, pid_t tgid);
/* value_symbol_fn over a struct fnsym (ctx). */
bool fnsym_name(void *ctx, uint64_t addr, char *out, size_t cap);
/* value_symbol_fn over a fixed struct modules (ctx), as the crash capture has them. */
bool fnsym_name_in_modules(void *ctx, uint64_t addr, char *out, size_t cap);

#endif
