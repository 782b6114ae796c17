/*
 * capprog.c - capture programs learned from the decoder's reads. See capprog.h.
 */
#include "ptrace/hooks/capprog.h"

#include <string.h>

/* How far past a source's address a read may start and still be counted as reached
 * through it (a member of the struct a register points to, a stack argument). */
#define NEAR 4096u

static uint32_t records_of(uint32_t len)
{
    return (len + FAST_DATA_BYTES - 1) / FAST_DATA_BYTES;
}

void capprog_begin(struct capcall *cc, struct capprog *prog, const uint64_t *regs,
                   uint32_t n_regs, uint64_t stack)
{
    cc->prog = prog;
    cc->n_regs = n_regs < 6 ? n_regs : 6;
    memcpy(cc->regs, regs, cc->n_regs * sizeof *regs);
    cc->stack = stack;
    cc->changed = false;
    for (uint32_t i = 0; i < FAST_ENTER_ITEMS; i++)
        cc->copy[i].have = false;
}

void capprog_add_copy(struct capcall *cc, uint32_t item, uint64_t addr, const void *bytes,
                      uint32_t len, uint32_t want)
{
    if (item >= cc->prog->n)
        return;
    struct capcopy *c = &cc->copy[item];
    if (!c->have) {
        c->have = true;
        c->addr = addr;
        c->want = want < FAST_ITEM_MAX ? want : FAST_ITEM_MAX;
        c->len = 0;
    }
    /* A record after one that came short (unreadable memory) adds nothing: the
     * copy is what could be read from its start. */
    if (addr != c->addr + c->len || c->len + len > FAST_ITEM_MAX)
        return;
    memcpy(c->bytes + c->len, bytes, len);
    c->len += len;
}

long capprog_copied(const struct capcall *cc, uint64_t addr, void *buf, size_t len)
{
    for (uint32_t i = 0; i < cc->prog->n; i++) {
        const struct capcopy *c = &cc->copy[i];
        if (!c->have || !c->addr || addr < c->addr)
            continue; /* not run, or its address was unknown (a NULL pointer) */
        uint64_t at = addr - c->addr;
        if (at < c->len) {
            size_t n = c->len - at < len ? (size_t)(c->len - at) : len;
            memcpy(buf, c->bytes + at, n);
            return (long)n;
        }
        if (at < c->want)
            return -1; /* the item asked for it: unreadable at the call */
    }
    return 0;
}

/* The item of this call whose copy the read at addr continues (it starts within the
 * copy or right after it); -1 if none. */
static int continued(const struct capcall *cc, uint64_t addr)
{
    for (uint32_t i = cc->prog->n; i-- > 0;) {
        const struct capcopy *c = &cc->copy[i];
        if (c->have && addr >= c->addr && addr <= c->addr + c->len && c->len == c->want)
            return (int)i;
    }
    return -1;
}

/* Sets item i's length to at least len bytes, within the budget: 1 when it grew, 0
 * when it was that long already, -1 when the budget refuses. */
static int grow(struct capprog *p, uint32_t i, uint32_t len)
{
    uint32_t old = p->item[i].len;
    if (len <= old)
        return 0;
    if (len > FAST_ITEM_MAX ||
        p->records - records_of(old) + records_of(len) > FAST_CALL_DATA_RECORDS)
        return -1;
    p->records = p->records - records_of(old) + records_of(len);
    p->item[i].len = (uint16_t)len;
    return 1;
}

/* Keeps bytes (len of them, at addr; NULL: unreadable) as item i's copy. */
static void keep(struct capcall *cc, uint32_t i, uint64_t addr, size_t len, const void *bytes)
{
    struct capcopy *c = &cc->copy[i];
    c->have = true;
    c->addr = addr;
    c->want = (uint32_t)len;
    c->len = bytes ? (uint32_t)len : 0;
    if (bytes)
        memcpy(c->bytes, bytes, len);
}

/* How the call reached addr: the source nearest below it (an exact pointer first:
 * a register, then a pointer an item copied, the latest first; then the stack). */
static struct fast_cap derive(const struct capcall *cc, uint64_t addr)
{
    struct fast_cap best = {.src = FAST_SRC_ABS, .off = (int64_t)addr};
    uint64_t best_delta = NEAR;
    for (uint32_t r = 0; r < cc->n_regs; r++) {
        uint64_t v = cc->regs[r];
        if (v && v <= addr && addr - v < best_delta) {
            best_delta = addr - v;
            best = (struct fast_cap){.src = FAST_SRC_REG, .idx = (uint8_t)r,
                                     .off = (int64_t)best_delta};
        }
    }
    for (uint32_t i = cc->prog->n; i-- > 0;) {
        const struct capcopy *c = &cc->copy[i];
        if (!c->have)
            continue;
        for (uint32_t at = (uint32_t)(-c->addr & 7); at + 8 <= c->len; at += 8) {
            uint64_t v;
            memcpy(&v, c->bytes + at, sizeof v);
            if (v && v <= addr && addr - v < best_delta) {
                best_delta = addr - v;
                best = (struct fast_cap){.src = FAST_SRC_ITEM, .idx = (uint8_t)i,
                                         .at = (uint16_t)at, .off = (int64_t)best_delta};
            }
        }
    }
    if (cc->stack && cc->stack <= addr && addr - cc->stack < best_delta)
        best = (struct fast_cap){.src = FAST_SRC_STACK, .off = (int64_t)(addr - cc->stack)};
    return best;
}

/* The 8 bytes at byte at of item i's copy; 0 when it has none there. */
static uint64_t copy_word(const struct capcall *cc, uint32_t i, uint32_t at)
{
    const struct capcopy *c = &cc->copy[i];
    uint64_t v = 0;
    if (c->have && at + 8u <= c->len)
        memcpy(&v, c->bytes + at, sizeof v);
    return v;
}

void capprog_run(struct capcall *cc, mem_read_fn rd, void *ctx)
{
    const struct capprog *p = cc->prog;
    for (uint32_t i = 0; i < p->n; i++) {
        const struct fast_cap *it = &p->item[i];
        uint64_t base = it->src == FAST_SRC_REG ? (it->idx < cc->n_regs ? cc->regs[it->idx] : 0)
                      : it->src == FAST_SRC_STACK ? cc->stack
                      : it->src == FAST_SRC_ITEM && it->idx < i ? copy_word(cc, it->idx, it->at)
                      : 0;
        struct capcopy *c = &cc->copy[i];
        c->have = true;
        c->addr = base || it->src == FAST_SRC_ABS ? base + (uint64_t)it->off : 0;
        c->want = it->len;
        c->len = 0;
        if (!c->addr)
            continue;
        /* As the recorder copies: what can be read up to the first unmapped page. */
        uint32_t first = 4096 - (uint32_t)(c->addr & 4095);
        first = first < it->len ? first : it->len;
        if (rd(ctx, c->addr, c->bytes, it->len))
            c->len = it->len;
        else if (first < it->len && rd(ctx, c->addr, c->bytes, first))
            c->len = first;
    }
}

static bool same_source(const struct fast_cap *a, const struct fast_cap *b)
{
    return a->src == b->src && a->idx == b->idx && a->at == b->at && a->off == b->off;
}

void capprog_learn(struct capcall *cc, uint64_t addr, size_t len, const void *bytes)
{
    struct capprog *p = cc->prog;
    if (!len || len > FAST_ITEM_MAX)
        return;
    int i = continued(cc, addr);
    if (i >= 0) {
        struct capcopy *c = &cc->copy[i];
        uint32_t end = (uint32_t)(addr - c->addr + len);
        if (grow(p, (uint32_t)i, end) < 0)
            return;
        cc->changed = true;
        if (bytes) { /* the copy goes on, as if the item had been this long */
            memcpy(c->bytes + (addr - c->addr), bytes, len);
            c->len = c->want = end;
        }
        return;
    }
    struct fast_cap want = derive(cc, addr);
    want.len = (uint16_t)len;
    for (uint32_t k = 0; k < p->n; k++) {
        /* Already an item (the call's records were written before it was added):
         * this call's copy is the memory read now. */
        if (same_source(&p->item[k], &want)) {
            if (grow(p, k, (uint32_t)len) > 0)
                cc->changed = true;
            keep(cc, k, addr, len, bytes);
            return;
        }
    }
    if (p->n >= p->max || p->records + records_of((uint32_t)len) > FAST_CALL_DATA_RECORDS)
        return;
    p->item[p->n] = want;
    p->records += records_of((uint32_t)len);
    keep(cc, p->n, addr, len, bytes);
    p->n++;
    cc->changed = true;
}
