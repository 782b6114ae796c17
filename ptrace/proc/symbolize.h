/*
 * symbolize.h - names the frames of an unwound stack (ptrace/proc/unwind.h): each pc is
 * mapped to its module (/proc/PID/maps), named with the module's function index
 * (dwarf.h, which covers libraries without debug info through their symbol
 * tables), and expanded into the inlined calls it sits in (dwarf/frame.h). Shared
 * by the crash capture (crash.c) and the all-thread stacks snapshot (stacks.c).
 */
#ifndef STROBE_SYMBOLIZE_H
#define STROBE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/frame.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/proc/unwind.h"

/* The modules of a process (procmem_modules), for symbolize_module_of; and its vDSO's mapping
 * (procmem_vdso; 0 when not read), whose frames symbolize() names "[vdso]": it is no
 * file, and a thread that reads the clock in a loop is there most of the time. */
struct modules {
    struct module *m;
    size_t n;
    uint64_t vdso_start, vdso_end;
};

/* One printed frame: a physical frame, or an inlined call inside one. */
struct shown_frame {
    size_t phys;                 /* index into the unwind result */
    const struct module *mod;
    uint64_t lookup_pc;          /* link-time pc used for lookups */
    const char *function;        /* points into sites or the index */
    const char *file;
    int line;
    bool inlined;
    bool outermost_site;         /* the out-of-line function of its physical frame */
};

struct symbolized {
    struct shown_frame *frames;
    size_t n;
    struct dw_site *sites;       /* all sites, owned */
    size_t n_sites;
};

/* Loads what symbolize() will need for the code modules of process pid (their
 * function indexes and debug info) without touching the process, so that a
 * snapshot taken right after holds the program for the unwinding alone. */
void symbolize_preload(pid_t pid);

/* The module holding pc, or NULL. */
const struct module *symbolize_module_of(const struct modules *ms, uint64_t pc);
/* The variable at a runtime data address as C names it ("g_report.requests",
 * "g_table.slots[3].key"): a global or static of the module mapped nearest below addr
 * (a .bss runs past the file's mappings) with its member path; malloc'd, or NULL
 * when none holds it. */
char *symbolize_module_global_at(const struct modules *ms, uint64_t addr);
/* Names every frame of uw; out->n stays 0 when memory runs out. */
void symbolize(const struct unwind_result *uw, const struct modules *ms,
               struct symbolized *out);
void symbolize_free(struct symbolized *s);
/* The public name of f's function when f->function is an internal symbol of it
 * (leading underscores) with a plainer alias at the same address (match.h,
 * match_public_name); else f->function. */
const char *symbolize_public_name(const struct shown_frame *f);
/* Frames of language runtimes and system libraries, never "the program's frame". */
bool symbolize_is_runtime_frame(const struct shown_frame *f);
/* The innermost frame of the program's own code with a source line; else the
 * innermost with one; else 0. */
size_t symbolize_own_frame(const struct symbolized *s);
/* Whether a frame's function starts with one of the n names. */
bool symbolize_any_frame_named(const struct symbolized *s, const char *const *names, size_t n);
/* The registers of an unwound frame, as dwarf/frame.h reads variables with them. */
void symbolize_frame_regs(const struct unwind_frame *f, struct dw_regs *r);

#endif
