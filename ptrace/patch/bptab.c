/*
 * bptab.c - the breakpoint table. See bptab.h.
 *
 * Entries are kept after their last reference goes (total == 0): a thread that
 * trapped on an int3 just before it was removed reports the trap afterwards, and
 * the tracer needs the byte to tell that trap from the program's own int3 and to
 * rewind the thread (bptab_rewind).
 */
#include "ptrace/patch/bptab.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/u64map.h"
#include "ptrace/proc/procmem.h"

#define INT3 0xCC

struct bp {
    uint8_t orig;
    unsigned refs[BP_N_OWNERS];
    unsigned total;
    pid_t *absent;      /* processes without this memory (bptab_insert_only) */
    size_t n_absent;
};

struct proc {
    pid_t tgid;
    int memfd;
};

/* A code patch (bptab_patch): the program's bytes under it, and who to tell when an
 * int3 is wanted inside it. */
struct patch {
    uint64_t addr;
    uint8_t len;
    uint8_t orig[BPTAB_PATCH_MAX];
    bptab_evict_fn evict;
    void *arg;
};

struct bptab {
    struct u64map bps;       /* addr -> struct bp */
    struct proc *procs;
    size_t n_procs, cap_procs;
    struct patch *patches;
    size_t n_patches;
};

struct bptab *bptab_new(void)
{
    return calloc(1, sizeof(struct bptab));
}

static void free_bp(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    struct bp *e = value;
    free(e->absent);
    free(e);
}

void bptab_free(struct bptab *b)
{
    if (!b)
        return;
    u64map_each(&b->bps, free_bp, NULL);
    u64map_free(&b->bps);
    for (size_t i = 0; i < b->n_procs; i++)
        close(b->procs[i].memfd);
    free(b->procs);
    free(b->patches);
    free(b);
}

static struct proc *proc_of(const struct bptab *b, pid_t tgid)
{
    for (size_t i = 0; i < b->n_procs; i++)
        if (b->procs[i].tgid == tgid)
            return &b->procs[i];
    return NULL;
}

bool bptab_add_process(struct bptab *b, pid_t tgid)
{
    if (proc_of(b, tgid))
        return true;
    if (b->n_procs == b->cap_procs) {
        size_t cap = b->cap_procs ? 2 * b->cap_procs : 4;
        struct proc *p = realloc(b->procs, cap * sizeof *p);
        if (!p)
            return false;
        b->procs = p;
        b->cap_procs = cap;
    }
    int fd = procmem_open(tgid);
    if (fd < 0)
        return false;
    b->procs[b->n_procs++] = (struct proc){tgid, fd};
    return true;
}

/* A process that goes is no longer absent anywhere: its pid may come back. */
static void forget_absent(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct bp *e = value;
    pid_t tgid = *(const pid_t *)arg;
    for (size_t i = 0; i < e->n_absent; i++)
        if (e->absent[i] == tgid) {
            e->absent[i] = e->absent[--e->n_absent];
            return;
        }
}

void bptab_drop_process(struct bptab *b, pid_t tgid)
{
    struct proc *p = proc_of(b, tgid);
    if (!p)
        return;
    u64map_each(&b->bps, forget_absent, &tgid);
    close(p->memfd);
    /* Keep the order: procs[0] stays the image's own process while it lives. */
    size_t i = (size_t)(p - b->procs);
    memmove(&b->procs[i], &b->procs[i + 1], (b->n_procs - i - 1) * sizeof *p);
    b->n_procs--;
}

bool bptab_has_process(const struct bptab *b, pid_t tgid)
{
    return proc_of(b, tgid) != NULL;
}

static bool is_absent(const struct bp *e, pid_t tgid)
{
    for (size_t i = 0; i < e->n_absent; i++)
        if (e->absent[i] == tgid)
            return true;
    return false;
}

/* Writes byte at addr into every process that has e's memory; whether the first
 * one took it. */
static bool write_all(struct bptab *b, const struct bp *e, uint64_t addr, uint8_t byte)
{
    bool ok = false;
    for (size_t i = 0; i < b->n_procs; i++) {
        if (is_absent(e, b->procs[i].tgid))
            continue;
        bool w = procmem_write(b->procs[i].memfd, addr, &byte, 1);
        if (i == 0)
            ok = w;
    }
    return ok;
}

static struct patch *patch_over(const struct bptab *b, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < b->n_patches; i++)
        if (b->patches[i].addr < hi && lo < b->patches[i].addr + b->patches[i].len)
            return &b->patches[i];
    return NULL;
}

bool bptab_insert(struct bptab *b, uint64_t addr, enum bp_owner owner)
{
    /* An int3 inside a patch would corrupt it: its owner takes it out first. */
    struct patch *pt = patch_over(b, addr, addr + 1);
    if (pt)
        pt->evict(pt->arg, pt->addr);
    if (patch_over(b, addr, addr + 1))
        return false;
    struct bp *e = u64map_get(&b->bps, addr);
    if (e && e->total) {
        e->refs[owner]++;
        e->total++;
        return true;
    }
    uint8_t orig;
    if (!b->n_procs || !procmem_read(b->procs[0].memfd, addr, &orig, 1) || orig == INT3)
        return false;
    bool fresh = !e;
    if (fresh && !(e = calloc(1, sizeof *e)))
        return false;
    if (fresh && u64map_put(&b->bps, addr, e) != 0) {
        free(e);
        return false;
    }
    e->orig = orig;
    if (!write_all(b, e, addr, INT3))
        return false;
    e->refs[owner] = 1;
    e->total = 1;
    return true;
}

bool bptab_remove(struct bptab *b, uint64_t addr, enum bp_owner owner)
{
    struct bp *e = u64map_get(&b->bps, addr);
    if (!e || !e->refs[owner])
        return false;
    e->refs[owner]--;
    if (--e->total == 0)
        write_all(b, e, addr, e->orig);
    return true;
}

bool bptab_insert_only(struct bptab *b, uint64_t addr, enum bp_owner owner, pid_t tgid)
{
    if (!b->n_procs || b->procs[0].tgid != tgid || u64map_get(&b->bps, addr))
        return false;
    struct bp *e = calloc(1, sizeof *e);
    pid_t *absent = b->n_procs > 1 ? malloc((b->n_procs - 1) * sizeof *absent) : NULL;
    if (!e || (b->n_procs > 1 && !absent) || u64map_put(&b->bps, addr, e) != 0) {
        free(e);
        free(absent);
        return false;
    }
    for (size_t i = 1; i < b->n_procs; i++)
        absent[e->n_absent++] = b->procs[i].tgid;
    e->absent = absent;
    return bptab_insert(b, addr, owner);
}

unsigned bptab_lookup(const struct bptab *b, uint64_t addr)
{
    const struct bp *e = u64map_get(&b->bps, addr);
    unsigned owners = 0;
    for (int o = 0; e && o < BP_N_OWNERS; o++)
        if (e->refs[o])
            owners |= BP_OWNER_BIT(o);
    return owners;
}

bool bptab_rewind(struct bptab *b, pid_t tgid, uint64_t addr)
{
    const struct bp *e = u64map_get(&b->bps, addr);
    const struct proc *p = proc_of(b, tgid);
    if (!e || e->total || !p)
        return false;
    uint8_t byte;
    if (procmem_read(p->memfd, addr, &byte, 1) && byte == INT3)
        procmem_write(p->memfd, addr, &e->orig, 1);
    return true;
}

/* Writes len bytes at addr into every process; whether the first one took them. */
static bool write_range(struct bptab *b, uint64_t addr, const uint8_t *bytes, size_t len)
{
    bool ok = false;
    for (size_t i = 0; i < b->n_procs; i++) {
        bool w = procmem_write(b->procs[i].memfd, addr, bytes, len);
        if (i == 0)
            ok = w;
    }
    return ok;
}

struct int3_scan {
    uint64_t lo, hi;
    bool found;
};

static void find_int3(uint64_t key, void *value, void *arg)
{
    struct int3_scan *s = arg;
    if (key >= s->lo && key < s->hi && ((const struct bp *)value)->total)
        s->found = true;
}

bool bptab_patch(struct bptab *b, uint64_t addr, const uint8_t *bytes, size_t len,
                 bptab_evict_fn evict, void *arg)
{
    struct int3_scan scan = {addr, addr + len, false};
    u64map_each(&b->bps, find_int3, &scan);
    if (len > BPTAB_PATCH_MAX || !b->n_procs || scan.found || patch_over(b, addr, addr + len))
        return false;
    struct patch pt = {.addr = addr, .len = (uint8_t)len, .evict = evict, .arg = arg};
    if (!procmem_read(b->procs[0].memfd, addr, pt.orig, len))
        return false;
    struct patch *grown = realloc(b->patches, (b->n_patches + 1) * sizeof *grown);
    if (!grown)
        return false;
    b->patches = grown;
    if (!write_range(b, addr, bytes, len)) {
        write_range(b, addr, pt.orig, len);
        return false;
    }
    b->patches[b->n_patches++] = pt;
    return true;
}

bool bptab_unpatch(struct bptab *b, uint64_t addr)
{
    struct patch *pt = patch_over(b, addr, addr + 1);
    if (!pt || pt->addr != addr)
        return false;
    write_range(b, addr, pt->orig, pt->len);
    *pt = b->patches[--b->n_patches];
    return true;
}

void bptab_mask(const struct bptab *b, uint64_t addr, void *buf, size_t len)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < b->n_patches; i++) {
        const struct patch *pt = &b->patches[i];
        for (size_t j = 0; j < pt->len; j++)
            if (pt->addr + j >= addr && pt->addr + j < addr + len)
                p[pt->addr + j - addr] = pt->orig[j];
    }
    for (size_t i = 0; i < len; i++) {
        const struct bp *e = p[i] == INT3 ? u64map_get(&b->bps, addr + i) : NULL;
        if (e && e->total)
            p[i] = e->orig;
    }
}

bool bptab_read(const struct bptab *b, int memfd, uint64_t addr, void *buf, size_t len)
{
    if (!procmem_read(memfd, addr, buf, len))
        return false;
    bptab_mask(b, addr, buf, len);
    return true;
}

int bptab_step_over(struct bptab *b, pid_t tid, uint64_t addr, struct step_signals *kept)
{
    kept->n = 0;
    struct bp *e = u64map_get(&b->bps, addr);
    struct proc *p = proc_of(b, procmem_tgid(tid));
    if (!e || !p)
        return -1;
    procmem_write(p->memfd, addr, &e->orig, 1);
    int status = step_insn(tid, kept);
    if (e->total) {
        uint8_t int3 = INT3;
        procmem_write(p->memfd, addr, &int3, 1);
    }
    return status;
}
