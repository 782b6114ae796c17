/*
 * fnsym.c - function pointers named by symbol. See fnsym.h.
 */
#include "ptrace/fnsym.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "dwarf/dwarf.h"

#define RELOAD_MIN_NS 100000000LL

struct fnsym {
    pid_t tgid;
    struct modules ms;
    int64_t loaded_at;
};

struct fnsym *fnsym_new(void)
{
    return calloc(1, sizeof(struct fnsym));
}

void fnsym_free(struct fnsym *f)
{
    if (!f)
        return;
    free(f->ms.m);
    free(f);
}

static void reload(struct fnsym *f)
{
    free(f->ms.m);
    f->ms = (struct modules){0};
    if (procmem_modules(f->tgid, &f->ms.m, &f->ms.n) != 0)
        f->ms = (struct modules){0};
    f->loaded_at = mono_ns();
}

void fnsym_use(struct fnsym *f, pid_t tgid)
{
    if (f && f->tgid != tgid) {
        f->tgid = tgid;
        free(f->ms.m);
        f->ms = (struct modules){0};
        f->loaded_at = 0;
    }
}

bool fnsym_name_in_modules(void *ctx, uint64_t addr, char *out, size_t cap)
{
    const struct module *m = module_of(ctx, addr);
    if (!m || addr < m->bias)
        return false;
    char err[256];
    const struct dw_index *ix = dw_index_get(m->path, err, sizeof err);
    const struct dw_function *fn = ix ? dw_function_at(ix, addr - m->bias) : NULL;
    if (!fn || !fn->name)
        return false;
    uint64_t off = addr - m->bias - fn->entry;
    if (off)
        snprintf(out, cap, "%s+0x%" PRIx64, fn->name, off);
    else
        snprintf(out, cap, "%s", fn->name);
    return true;
}

bool fnsym_name(void *ctx, uint64_t addr, char *out, size_t cap)
{
    struct fnsym *f = ctx;
    if (!f->tgid)
        return false;
    if (!f->loaded_at || (!module_of(&f->ms, addr) && mono_ns() - f->loaded_at > RELOAD_MIN_NS))
        reload(f);
    return fnsym_name_in_modules(&f->ms, addr, out, cap);
}
