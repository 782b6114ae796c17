/*
 * adopt.c - the runtimes' entries redirected (tracer.h, struct tracer_runtime).
 *
 * At a program's entry point every library it links is mapped: the modules whose
 * file name holds a runtime's hint are searched for its symbols, and the entry
 * function of the first runtime found gets an int3 (BP_ADOPT). At its first call
 * the int3 goes and the thread is sent through call(string) and back into the
 * entry's first instruction, without the tracer waiting for the call:
 *   - a page is mapped in the target (an injected mmap) holding a `ret` and the
 *     string the session's adopt callback wrote;
 *   - two return addresses go below the stack pointer: the `ret`, then the entry;
 *     rdi is the string, rip the call.
 * At call's first instruction the stack is aligned as at any call; its return runs
 * the `ret`, which enters the entry with the very stack it had. The entry takes no
 * arguments, so the registers call clobbers carry nothing (docs/PYTHON.md, where
 * this was measured on python3.11 first).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include "base/log.h"
#include "dwarf/elfinfo.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/patch/inject.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/tracer/tracer_internal.h"

#define ADOPT_STRING_MAX 4096

static bool named(const char *name, void *arg)
{
    return strcmp(name, arg) == 0;
}

/* The runtime address of symbol name in module m, or 0. */
static uint64_t symbol_in(const struct module *m, const char *name)
{
    uint64_t v = elf_symbol_find(m->path, named, (void *)name);
    return v ? v + m->bias : 0;
}

/* Whether m exports every symbol runtime r needs, with its entry and call. */
static bool module_runs(const struct module *m, const struct tracer_runtime *r,
                        uint64_t *entry, uint64_t *call)
{
    const char *base = strrchr(m->path, '/');
    if (!m->has_code || !strstr(base ? base + 1 : m->path, r->module_hint))
        return false;
    for (int i = 0; i < TRACER_RUNTIME_NEEDS && r->needs[i]; i++)
        if (!symbol_in(m, r->needs[i]))
            return false;
    *entry = symbol_in(m, r->entry);
    *call = symbol_in(m, r->call);
    return *entry && *call;
}

void adopt_at_entry(struct tracer *t, struct space *sp, pid_t pid)
{
    if (!t->spec.n_runtimes || sp->adopt_at)
        return;
    struct module *mods;
    size_t n;
    if (procmem_modules(pid, &mods, &n) != 0)
        return;
    for (int r = 0; r < t->spec.n_runtimes && !sp->adopt_at; r++)
        for (size_t i = 0; i < n && !sp->adopt_at; i++) {
            uint64_t entry, call;
            if (module_runs(&mods[i], &t->spec.runtimes[r], &entry, &call) &&
                bptab_insert(sp->bp, entry, BP_ADOPT)) {
                sp->adopt_at = entry;
                sp->adopt_call = call;
                sp->adopt_runtime = r;
            }
        }
    free(mods);
}

/* Sends tid (its registers r, pc on the entry) through call(s) first; false when
 * it cannot (the registers are then left as they were). */
static bool redirect(pid_t tid, struct user_regs_struct *r, uint64_t call, const char *s)
{
    int fd = procmem_open(tid);
    if (fd < 0)
        return false;
    size_t len = strlen(s) + 1;
    size_t size = (16 + len + 4095) & ~(size_t)4095;
    long args[6] = {0, (long)size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0};
    struct step_signals kept;
    bool ok = false;
    if (ptrace(PTRACE_SETREGS, tid, 0, r) == 0) {
        long page = inject_syscall(tid, fd, SYS_mmap, args, &kept);
        step_signals_resend(tid, &kept);
        uint8_t ret = 0xC3;
        uint64_t entry = r->rip, back[2] = {(uint64_t)page, entry};
        ok = !(page < 0 && page > -4096) &&
             procmem_write(fd, (uint64_t)page, &ret, 1) &&
             procmem_write(fd, (uint64_t)page + 16, s, len) &&
             procmem_write(fd, r->rsp - 16, back, sizeof back);
        if (ok) {
            r->rsp -= 16;
            r->rdi = (uint64_t)page + 16;
            r->rip = call;
        }
    }
    close(fd);
    return ok;
}

struct unarm {
    struct space *sp;
};

static void unarm(void *arg)
{
    struct space *sp = ((struct unarm *)arg)->sp;
    bptab_remove(sp->bp, sp->adopt_at, BP_ADOPT);
    sp->adopt_at = 0;
}

enum bp_verdict adopt_stop(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg)
{
    (void)arg;
    struct space *sp = tracer_tracees_space_of(t, tid);
    if (!sp || !sp->adopt_at || sp->adopt_at != st->addr)
        return BP_PASS;
    struct unarm u = {sp};
    tracer_with_space_held(t, tid, unarm, &u);
    struct user_regs_struct r = *st->regs;
    r.rip = st->addr;
    char *s = malloc(ADOPT_STRING_MAX);
    pid_t tgid = tracer_tgid(t, tid);
    if (s && t->spec.adopt && t->spec.adopt(t->spec.arg, sp->adopt_runtime, tgid, s,
                                            ADOPT_STRING_MAX)) {
        struct user_regs_struct at = r;
        if (!redirect(tid, &r, sp->adopt_call, s)) {
            r = at;
            log_warn("pid %d: cannot run the runtime's loader; it runs untraced", tgid);
        }
    }
    free(s);
    ptrace(PTRACE_SETREGS, tid, 0, &r);
    ptrace(PTRACE_CONT, tid, 0, 0);
    return BP_RESUMED;
}
