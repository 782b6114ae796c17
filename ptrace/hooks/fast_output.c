/*
 * fast_output.c - output and thread names in true order under the fast path
 * (hooks.h, HOOK_OUTPUT and HOOK_DRAIN), and records kept across an exec.
 *
 * The int3 path keeps a program's output in order with its calls because the
 * tracer reads the output pipes at every trap (output.orderAtTraps): a line is
 * stamped before the call that traps after it. The fast path records calls without
 * a trap, stamped with the time of the call, so when it records and output is
 * ordered, libc's write and writev take the fast path too (no event) and the
 * writes to the captured output's pipes are followed by their records
 * (FAST_FN_OUTPUT: the pipe and the first bytes at the enter, the count and the
 * time at the exit): fast_drain.c tells the output capture of each write returned
 * (hook_output.wrote) and the capture gives the write's bytes its time (core/output.h,
 * "Followed writes"). No write stops; a write to a socket, a file or a pipe of the
 * program is not even followed (one compare, or one fstat for an fd that held an
 * output pipe when the area was made). Before issue 30 every write stopped at its
 * return for the tracer to read the pipe, which is still what happens when no one
 * is told of the writes (hook_output.wrote NULL), and one traced cold function
 * halved a server's throughput. A write whose jump cannot be placed keeps an int3.
 *
 * Thread names have the same problem: an event's thread name is read when the
 * event is made, so a call drained after its thread renamed itself would carry the
 * new name. And a forked child's records sit in its own copy of the ring, which an
 * exec throws away with the rest of its memory. So pthread_setname_np, prctl,
 * execve, execveat and fexecve stop at their entries (HOOK_DRAIN): every record
 * written until then is drained (with the names as they still are, from memory
 * still there), and the threads' names are read again at their next events.
 * libc's other exec functions, system and posix_spawn all end in execve.
 *
 * These hooks stay for the image's life, whatever is traced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

/* libc's names for the functions hooked (DWARF names with debug info, the symbol
 * table's otherwise), with their roles. */
static const struct {
    const char *name;
    enum hook_role role;
} hooked[] = {
    {"__libc_write", HOOK_OUTPUT},  {"__write", HOOK_OUTPUT},   {"write", HOOK_OUTPUT},
    {"__libc_writev", HOOK_OUTPUT}, {"__writev", HOOK_OUTPUT},  {"writev", HOOK_OUTPUT},
    {"pthread_setname_np", HOOK_DRAIN}, {"__pthread_setname_np", HOOK_DRAIN},
    {"__prctl", HOOK_DRAIN},       {"prctl", HOOK_DRAIN},
    {"__execve", HOOK_DRAIN},      {"execve", HOOK_DRAIN},      {"execveat", HOOK_DRAIN},
    {"fexecve", HOOK_DRAIN},
};
#define MAX_HOOKED 12 /* functions, aliases at one address counted once */

/* f's role; HOOK_TRACE when it is not one of them. */
static enum hook_role role_of(const struct dw_function *f)
{
    for (size_t i = 0; i < sizeof hooked / sizeof *hooked; i++)
        if ((f->name && strcmp(f->name, hooked[i].name) == 0) ||
            (f->linkage_name && strcmp(f->linkage_name, hooked[i].name) == 0))
            return hooked[i].role;
    return HOOK_TRACE;
}

static bool is_libc(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "libc.so", 7) == 0;
}

void fast_output_hook_libc(struct hooks *h, pid_t stopped_tid)
{
    if (h->libc_hooked)
        return;
    h->libc_hooked = true;
    struct module *mods = NULL;
    size_t n_mods = 0;
    if (procmem_modules(h->cfg.pid, &mods, &n_mods) != 0)
        return;
    struct hook_target t[MAX_HOOKED];
    size_t n = 0;
    for (size_t i = 0; i < n_mods; i++) {
        const struct dw_index *ix = is_libc(mods[i].path)
                                        ? dw_index_get(mods[i].path, NULL) : NULL;
        for (size_t k = 0; ix && k < ix->n_functions && n < MAX_HOOKED; k++) {
            enum hook_role role = role_of(&ix->functions[k]);
            if (role == HOOK_DRAIN || (role == HOOK_OUTPUT && h->cfg.tuning.order_output))
                t[n++] = (struct hook_target){ix->functions[k].entry + mods[i].bias,
                                              &ix->functions[k], mods[i].start, mods[i].end,
                                              role, NULL};
        }
    }
    free(mods);
    struct hooks_report rep;
    hooks_arm(h, stopped_tid, t, n, &rep);
    bool output = false;
    for (size_t i = 0; i < n; i++)
        output |= t[i].role == HOOK_OUTPUT;
    if (output && h->cfg.output.follow)
        h->cfg.output.follow(h->cfg.output.arg); /* every thread is stopped */
}
