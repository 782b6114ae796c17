/*
 * fast_learn.c - the fast path's capture programs on the daemon's side
 * (capprog.h): a function's first call is decoded from live memory and the reads
 * teach its program, which is written into every process's area; a record's
 * decoding reads the copies its DATA records carry, and learns what they lacked.
 */
#include <stddef.h>
#include <string.h>

#include "base/u64map.h"
#include "dwarf/abi.h"
#include "ptrace/hooks/capprog.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/fastpath_internal.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

static uint64_t prog_addr(const struct fastpath *fp, uint32_t id)
{
    return fp->area + FAST_PROGS_OFF + (uint64_t)id * sizeof(struct fast_prog);
}

struct prog_write {
    uint64_t items, count; /* where in the area */
    const struct capprog *cp;
};

/* The items first, then their count: a thread reading the count sees items written. */
static void write_prog_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct prog_write *pw = arg;
    if (p->fast_ok &&
        procmem_write(p->memfd, pw->items, pw->cp->item, pw->cp->n * sizeof *pw->cp->item))
        procmem_write(p->memfd, pw->count, &pw->cp->n, sizeof pw->cp->n);
}

void fast_learn_write_prog(struct hooks *h, const struct hook *k, bool exit)
{
    uint64_t at = prog_addr(h->fast, k->fast_id);
    struct prog_write pw = {
        at + (exit ? offsetof(struct fast_prog, exit) : offsetof(struct fast_prog, enter)),
        at + (exit ? offsetof(struct fast_prog, n_exit) : offsetof(struct fast_prog, n_enter)),
        &h->fast->progs[k->fast_id][exit]};
    u64map_each(&h->procs, write_prog_in, &pw);
}

/* Reads memory for the decoding of one call (capprog.h): from its copies first,
 * the rest live, learned. */
static bool read_call(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct call_reader *r = ctx;
    long n = capprog_copied(r->cc, addr, buf, len);
    if (n < 0)
        return false; /* unreadable at the call */
    if ((size_t)n == len)
        return true;
    bool ok = procmem_read(r->memfd, addr + (uint64_t)n, (char *)buf + n, len - (size_t)n);
    capprog_learn(r->cc, addr + (uint64_t)n, len - (size_t)n, ok ? (char *)buf + n : NULL);
    return ok;
}

/* The registers a side's FAST_SRC_REG items name. */
static uint32_t side_regs(const struct abi_regs *a, bool exit, uint64_t *regs)
{
    if (exit) {
        regs[0] = a->rax;
        regs[1] = a->rdx;
        return 2;
    }
    const uint64_t in[6] = {a->rdi, a->rsi, a->rdx, a->rcx, a->r8, a->r9};
    memcpy(regs, in, sizeof in);
    return 6;
}

void fast_learn_begin(struct hooks *h, struct hook *k, bool exit, const struct abi_regs *a,
                      uint64_t stack, int memfd, struct hk_mem *mem)
{
    struct fastpath *fp = h->fast;
    uint64_t regs[6];
    uint32_t n = side_regs(a, exit, regs);
    capprog_begin(fp->cc, &fp->progs[k->fast_id][exit], regs, n, stack);
    capprog_run(fp->cc, procmem_read_ctx, &memfd);
    fp->reader = (struct call_reader){fp->cc, memfd};
    *mem = (struct hk_mem){read_call, &fp->reader, k};
}

void fast_learn_end(struct hooks *h, struct hook *k, bool exit)
{
    if (h->fast->cc->changed)
        fast_learn_write_prog(h, k, exit);
    if (exit)
        k->fast_learned_exit = true;
    else
        k->fast_learned = true;
    fastpath_update_flags(h, k); /* its first call's stop is over */
}

struct hk_mem fast_learn_record_reader(struct hooks *h, struct process *p, struct hook *k,
                                       bool exit, const struct abi_regs *a, uint64_t stack,
                                       const struct fast_record *more, int n_more)
{
    struct fastpath *fp = h->fast;
    uint64_t regs[6];
    uint32_t n = side_regs(a, exit, regs);
    capprog_begin(fp->cc, &fp->progs[k->fast_id][exit], regs, n, stack);
    for (int i = 0; i < n_more; i++) {
        const struct fast_data_record *d = (const struct fast_data_record *)&more[i];
        if (d->kind == FAST_REC_DATA)
            capprog_add_copy(fp->cc, d->item, d->addr, d->data,
                             d->len < FAST_DATA_BYTES ? d->len : FAST_DATA_BYTES, d->want);
    }
    fp->reader = (struct call_reader){fp->cc, p->memfd};
    return (struct hk_mem){read_call, &fp->reader, k};
}
