/*
 * ifunc.c - the implementation an IFUNC runs in a process. See ifunc.h.
 *
 * Records made for variants the index does not know live in one list for the
 * daemon's life (hooks point at them, as at the index's own records): one per
 * (index, variant address), found again by the next session.
 */
#include "ptrace/proc/ifunc.h"

#include <pthread.h>
#include <stdlib.h>

#include "ptrace/proc/procmem.h"

struct made {
    struct dw_function fn;
    const struct dw_index *ix;
    struct made *next;
};

static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;
static struct made *made_list;

/* The record for the variant at link-time address entry of ix, named after f. */
static const struct dw_function *made_record(const struct dw_index *ix,
                                             const struct dw_function *f, uint64_t entry)
{
    pthread_mutex_lock(&made_lock);
    struct made *m = made_list;
    while (m && !(m->ix == ix && m->fn.entry == entry))
        m = m->next;
    if (!m && (m = calloc(1, sizeof *m))) {
        /* no size: nothing may assume where its code ends (no counting jump) */
        m->fn = (struct dw_function){.entry = entry, .end = entry, .name = f->name,
                                     .demangled = f->demangled};
        m->ix = ix;
        m->next = made_list;
        made_list = m;
    }
    pthread_mutex_unlock(&made_lock);
    return m ? &m->fn : NULL;
}

const struct dw_function *ifunc_impl(const struct dw_index *ix, const struct dw_function *f,
                                     uint64_t bias, uint64_t lo, uint64_t hi, int memfd,
                                     uint64_t *addr)
{
    uint64_t impl = 0;
    if (!f->ifunc_slot || !procmem_read(memfd, f->ifunc_slot + bias, &impl, sizeof impl) ||
        impl < lo || impl >= hi)
        return NULL;
    *addr = impl;
    const struct dw_function *known = dw_function_at(ix, impl - bias);
    if (known && known->entry == impl - bias && !known->ifunc_slot)
        return known;
    return made_record(ix, f, impl - bias);
}

void ifunc_forget_all(void)
{
    pthread_mutex_lock(&made_lock);
    while (made_list) {
        struct made *m = made_list;
        made_list = m->next;
        free(m);
    }
    pthread_mutex_unlock(&made_lock);
}
