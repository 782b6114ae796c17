/*
 * fast_harness.h - runs the fast path's real recorder blob and real trampolines in
 * the calling process, as the daemon would set them up in a target: an area
 * (MAP_SHARED, initialised as the daemon does), the blob and the return trampoline
 * in an executable mapping, and functions of the calling binary patched with entry
 * jumps to trampolines placed within rel32 reach of its text. For
 * tests/unit/test_fastrec.c and bench/bench_fastrec.c.
 */
#ifndef STROBE_TEST_FAST_HARNESS_H
#define STROBE_TEST_FAST_HARNESS_H

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/fastcode.h"
#include "ptrace/hooks/fastrec.h"

#define FH_CODE_SIZE (1u << 20)
#define FH_RET_OFF 0x4000u  /* the return trampoline, after the blob */
#define FH_SLOTS_OFF 0x5000u /* the entry trampolines */
_Static_assert(FH_RET_OFF + 0x1000u <= FH_SLOTS_OFF, "return trampoline room");

static struct fast_area *fh_area;
static uint8_t *fh_code;
static size_t fh_slots_used;

/* The calling thread's key in the recorder's thread table: its thread pointer, as
 * the recorder reads it (%fs:0). */
static inline uint64_t fh_fs_base(void)
{
    uint64_t v;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(v));
    return v;
}

static inline struct fast_fn *fh_fn(uint32_t id)
{
    return &((struct fast_fn *)((char *)fh_area + FAST_FNS_OFF))[id];
}

static inline struct fast_thread *fh_threads(void)
{
    return (struct fast_thread *)((char *)fh_area + FAST_THREADS_OFF);
}

/* The calling thread's shadow stack slot, NULL before its first traced call. */
static inline struct fast_thread *fh_my_slot(void)
{
    uint64_t key = fh_fs_base();
    for (unsigned i = 0; i < FAST_THREADS; i++)
        if (fh_threads()[i].key == key)
            return &fh_threads()[i];
    return NULL;
}

/* An empty area of ring_records records (a power of two), as the daemon fills it. */
static inline void fh_reset(uint32_t ring_records)
{
    memset(fh_area, 0, FAST_AREA_SIZE);
    fh_area->version = FAST_ABI_VERSION;
    fh_area->ring_records = ring_records;
    fh_area->pid = getpid();
    fh_area->ret_tramp = (uint64_t)(fh_code + FH_RET_OFF);
}

/* Maps the area and the code near `near` (an address in the text to patch). */
static inline bool fh_init(const void *near)
{
    fh_area = mmap(NULL, FAST_AREA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (fh_area == MAP_FAILED)
        return false;
    uintptr_t base = (uintptr_t)near & ~(uintptr_t)0xFFFFF;
    for (uintptr_t step = 1u << 24; step < 1u << 30; step += 1u << 24) {
        uintptr_t want[2] = {base - step, base + step};
        for (int i = 0; i < 2; i++) {
            void *p = mmap((void *)want[i], FH_CODE_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED)
                continue;
            fh_code = p;
            memcpy(fh_code, fastrec_blob, fastrec_blob_len);
            uint64_t ret = (uint64_t)(fh_code + FH_RET_OFF);
            if (!fastcode_return(fh_code + FH_RET_OFF, FH_SLOTS_OFF - FH_RET_OFF, ret,
                                 (uint64_t)fh_area,
                                 (uint64_t)(fh_code + fastrec_exit_offset)))
                return false;
            fh_reset(FAST_RING_RECORDS);
            return true;
        }
    }
    return false;
}

/* The size of the function called name in the calling binary's symbol table. */
static inline size_t fh_symbol_size(const char *name)
{
    size_t size = 0;
    elf_version(EV_CURRENT);
    int fd = open("/proc/self/exe", O_RDONLY);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    Elf_Scn *scn = NULL;
    while (elf && !size && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *s;
            if (gelf_getsym(data, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
                (s = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(s, name)) {
                size = sym.st_size;
                break;
            }
        }
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    return size;
}

/* Patches function fn (named name, for its size) as fast-path function id; false
 * (and why on stderr) when it cannot take the jump. */
static inline bool fh_patch(void *fn, const char *name, uint32_t id)
{
    size_t len = fh_symbol_size(name);
    uint64_t at = (uint64_t)fn;
    uint8_t *slot = fh_code + FH_SLOTS_OFF + fh_slots_used * FASTJUMP_SLOT_SIZE;
    struct fastjump j;
    if (!len || !fastcode_jump_plan(fn, len, at, (uint64_t)slot, (uint64_t)fh_area,
                                    (uint64_t)(fh_code + fastrec_enter_offset), id, &j)) {
        fprintf(stderr, "fast_harness: %s: %s\n", name, len ? j.why : "no symbol size");
        return false;
    }
    memcpy(slot, j.tramp, j.tramp_len);
    fh_slots_used++;
    uintptr_t page = at & ~(uintptr_t)4095;
    if (mprotect((void *)page, (at + FASTJUMP_LEN) - page > 4096 ? 8192 : 4096,
                 PROT_READ | PROT_WRITE | PROT_EXEC))
        return false;
    memcpy(fn, j.patch, FASTJUMP_LEN);
    __builtin___clear_cache((char *)fn, (char *)fn + FASTJUMP_LEN);
    return true;
}

/* Reads the published reservations from the area's tail, as the daemon drains:
 * each in order, up to the first not yet committed. Copies at most max records
 * (whole reservations) into out; their count. */
static inline size_t fh_drain(struct fast_record *out, size_t max)
{
    size_t n = 0;
    for (;;) {
        uint64_t tail = fh_area->tail;
        struct fast_record *ring = (struct fast_record *)((char *)fh_area + FAST_RING_OFF);
        struct fast_record *r = &ring[tail & (fh_area->ring_records - 1)];
        if (__atomic_load_n(&r->commit, __ATOMIC_ACQUIRE) != (uint32_t)(tail + 1))
            return n;
        uint32_t nrec = r->nrec;
        if (n + nrec > max)
            return n;
        for (uint32_t i = 0; i < nrec; i++)
            out[n++] = ring[(tail + i) & (fh_area->ring_records - 1)];
        __atomic_store_n(&fh_area->tail, tail + nrec, __ATOMIC_RELEASE);
    }
}

#endif
