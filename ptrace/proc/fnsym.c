/*
 * fnsym.c - function pointers named by symbol. See fnsym.h.
 *
 * dw_index_get reads the file's build-id on every call, so a struct fnsym keeps the
 * index of each module once looked up: a traced call with function pointers in its
 * arguments costs a binary search per pointer.
 */
#include "ptrace/proc/fnsym.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "dwarf/dwarf.h"

#define RELOAD_MIN_NS 100000000LL

struct fnsym {
    pid_t tgid;
    struct modules ms;
    const struct dw_index **ix; /* per module, once looked up */
    bool *looked_up;
    int64_t loaded_at;
};

struct fnsym *fnsym_new(void)
{
    return calloc(1, sizeof(struct fnsym));
}

static void forget(struct fnsym *f)
{
    free(f->ms.m);
    free(f->ix);
    free(f->looked_up);
    f->ms = (struct modules){0};
    f->ix = NULL;
    f->looked_up = NULL;
}

void fnsym_free(struct fnsym *f)
{
    if (!f)
        return;
    forget(f);
    free(f);
}

static void reload(struct fnsym *f)
{
    forget(f);
    f->loaded_at = mono_ns();
    if (procmem_modules(f->tgid, &f->ms.m, &f->ms.n) != 0) {
        f->ms = (struct modules){0};
        return;
    }
    f->ix = calloc(f->ms.n + 1, sizeof *f->ix);
    f->looked_up = calloc(f->ms.n + 1, sizeof *f->looked_up);
    if (!f->ix || !f->looked_up)
        forget(f);
}

void fnsym_use(struct fnsym *f, pid_t tgid)
{
    if (f && f->tgid != tgid) {
        forget(f);
        f->tgid = tgid;
        f->loaded_at = 0;
    }
}

/* The function of ix holding runtime address addr of module m, as text. */
static bool name_in(const struct module *m, const struct dw_index *ix, uint64_t addr,
                    char *out, size_t cap)
{
    const struct dw_function *fn = ix && addr >= m->bias ? dw_function_at(ix, addr - m->bias)
                                                         : NULL;
    if (!fn || !fn->name)
        return false;
    uint64_t off = addr - m->bias - fn->entry;
    if (off)
        snprintf(out, cap, "%s+0x%" PRIx64, fn->name, off);
    else
        snprintf(out, cap, "%s", fn->name);
    return true;
}

bool fnsym_name_in_modules(void *ctx, uint64_t addr, char *out, size_t cap)
{
    const struct module *m = symbolize_module_of(ctx, addr);
    return m && name_in(m, dw_index_get(m->path, NULL), addr, out, cap);
}

bool fnsym_name(void *ctx, uint64_t addr, char *out, size_t cap)
{
    struct fnsym *f = ctx;
    if (!f->tgid)
        return false;
    if (!f->loaded_at ||
        (!symbolize_module_of(&f->ms, addr) && mono_ns() - f->loaded_at > RELOAD_MIN_NS))
        reload(f);
    const struct module *m = symbolize_module_of(&f->ms, addr);
    if (!m)
        return false;
    size_t i = (size_t)(m - f->ms.m);
    if (!f->looked_up[i]) {
        f->ix[i] = dw_index_get(m->path, NULL);
        f->looked_up[i] = true;
    }
    return name_in(m, f->ix[i], addr, out, cap);
}
