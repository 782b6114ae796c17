/*
 * hooks_areas.c - the scratch areas of an image's hooks: where relocated
 * instructions, return trampolines, counting jumps' trampolines and counters live in
 * the target, the slots and counters handed out in them, and the writes of their
 * bytes and of the hooks' int3s (through the breakpoint table). Arming
 * (hooks_arm.c), sampling and the fast path place their code here.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "base/u64map.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/patch/inject.h"
#include "ptrace/patch/reloc.h"
#include "ptrace/proc/procmem.h"

static uint64_t map_counters(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t base);

static bool reaches(uint64_t a, uint64_t b)
{
    uint64_t d = a > b ? a - b : b - a;
    return d < (1ULL << 31) - SCRATCH_SIZE;
}

/* How many scratch areas process p has (the main process has them all). */
size_t hooks_areas_in(const struct hooks *h, const struct process *p)
{
    return p && p->forked ? p->n_areas : h->n_areas;
}

/* Whether addr lies in one of the first n scratch areas. */
bool hooks_areas_contain(const struct hooks *h, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n && i < h->n_areas; i++)
        if (addr >= h->areas[i].base && addr < h->areas[i].base + SCRATCH_SIZE)
            return true;
    return false;
}

/* The return trampoline for a hook at addr in a process with the first n areas:
 * the area near addr, else any (a return address reaches anywhere); 0 if none. */
uint64_t hooks_areas_trampoline_for(const struct hooks *h, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n && i < h->n_areas; i++)
        if (reaches(h->areas[i].base, addr))
            return h->areas[i].base;
    return n && h->n_areas ? h->areas[0].base : 0;
}

size_t hooks_areas_of_thread(const struct hooks *h, const struct thread *t)
{
    return hooks_areas_in(h, u64map_get(&h->procs, (uint64_t)t->tgid));
}

/* A free slot of size bytes (a multiple of RELOC_SLOT_SIZE) near [lo, hi), mapping
 * a new area through stopped_tid if needed (0: only in the areas there are). */
uint64_t hooks_areas_slot_near(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t lo,
                               uint64_t hi, uint64_t size)
{
    for (size_t i = 0; i < h->n_areas; i++) {
        struct scratch *s = &h->areas[i];
        if (reaches(s->base, lo) && reaches(s->base, hi) && s->used + size <= SCRATCH_SIZE) {
            uint64_t slot = s->base + s->used;
            s->used += size;
            return slot;
        }
    }
    if (!stopped_tid)
        return 0;
    uint64_t want = procmem_free_near(h->cfg.pid, lo, hi, SCRATCH_SIZE);
    struct step_signals kept = {0};
    uint64_t base = want ? inject_mmap_exec(stopped_tid, memfd, want, SCRATCH_SIZE, &kept)
                         : 0;
    step_signals_resend(stopped_tid, &kept); /* delivered again; nothing is lost */
    if (!base)
        return 0;
    struct scratch *areas = realloc(h->areas, (h->n_areas + 1) * sizeof *areas);
    if (!areas)
        return 0;
    h->areas = areas;
    /* The trampoline's int3: in this process alone, children forked before may
     * have their own data there. */
    if (!bptab_insert_only(h->cfg.bp, base, BP_TRACE_HOOK, h->cfg.pid))
        return 0;
    h->areas[h->n_areas++] = (struct scratch){base, 2 * RELOC_SLOT_SIZE,
                                              map_counters(h, stopped_tid, memfd, base), 0};
    return base + RELOC_SLOT_SIZE;
}

/* The counting jumps' counter block of a new scratch area at base, mapped beside
 * it in the same stop: 0 if it cannot be (those functions then count on their int3). */
static uint64_t map_counters(struct hooks *h, pid_t stopped_tid, int memfd, uint64_t base)
{
    uint64_t want = procmem_free_near(h->cfg.pid, base, base + SCRATCH_SIZE, COUNTERS_SIZE);
    long args[6] = {(long)want, COUNTERS_SIZE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0};
    struct step_signals kept = {0};
    long r = want ? inject_syscall(stopped_tid, memfd, SYS_mmap, args, &kept) : -1;
    step_signals_resend(stopped_tid, &kept);
    if (r < 0 && r > -4096)
        return 0;
    return reaches((uint64_t)r, base) ? (uint64_t)r : 0;
}

/* A counter for a counting jump whose trampoline is at tramp, 0 if none is left. */
uint64_t hooks_areas_counter_near(struct hooks *h, uint64_t tramp)
{
    for (size_t i = 0; i < h->n_areas; i++) {
        struct scratch *s = &h->areas[i];
        if (tramp >= s->base && tramp < s->base + SCRATCH_SIZE && s->counters &&
            s->counters_used + 8 <= COUNTERS_SIZE) {
            s->counters_used += 8;
            return s->counters + s->counters_used - 8;
        }
    }
    return 0;
}

/* Puts hook k's int3 (arm) or takes it out, through the image's breakpoint table,
 * which writes every process of the image: forked children's memory is a copy, so
 * patterns changed after the fork reach them only this way. */
static bool patch(struct hooks *h, struct hook *k, bool arm)
{
    return arm ? bptab_insert(h->cfg.bp, k->addr, BP_TRACE_HOOK)
               : bptab_remove(h->cfg.bp, k->addr, BP_TRACE_HOOK);
}

bool hooks_areas_write_int3(struct hooks *h, struct hook *k)
{
    k->armed = patch(h, k, true);
    return k->armed;
}

void hooks_areas_restore_orig(struct hooks *h, struct hook *k)
{
    if (k->armed && patch(h, k, false))
        k->armed = false;
}

struct scratch_copy {
    const struct hooks *h;
    uint64_t addr;
    const uint8_t *bytes;
    size_t len;
};

static void copy_scratch(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct scratch_copy *sc = arg;
    if (p->forked && hooks_areas_contain(sc->h, p->n_areas, sc->addr))
        procmem_write(p->memfd, sc->addr, sc->bytes, sc->len);
}

/* Writes bytes into scratch memory at addr in the main process (memfd) and in the
 * forked children that have its area: they jump there too. */
bool hooks_areas_write_scratch(struct hooks *h, int memfd, uint64_t addr, const uint8_t *bytes,
                               size_t len)
{
    if (!procmem_write(memfd, addr, bytes, len))
        return false;
    struct scratch_copy sc = {h, addr, bytes, len};
    u64map_each(&h->procs, copy_scratch, &sc);
    return true;
}

bool hooks_areas_is_return_trampoline(const struct hooks *h, uint64_t addr)
{
    for (size_t i = 0; i < h->n_areas; i++)
        if (h->areas[i].base == addr)
            return true;
    return false;
}

