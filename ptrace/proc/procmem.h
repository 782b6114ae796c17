/*
 * procmem.h - a stopped or running target's memory and address space, read from
 * /proc: bytes through /proc/PID/mem (pread/pwrite: about 1 us each, and pwrite can
 * patch read-only code pages, which process_vm_writev cannot), and the loaded ELF
 * modules and free gaps from /proc/PID/maps.
 */
#ifndef STROBE_PROCMEM_H
#define STROBE_PROCMEM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An fd on /proc/PID/mem opened read-write, or -1. */
int procmem_open(pid_t pid);
bool procmem_read(int fd, uint64_t addr, void *buf, size_t len);
bool procmem_write(int fd, uint64_t addr, const void *buf, size_t len);
/* procmem_read as a mem_read_fn (dwarf/value.h) whose ctx points at the fd. */
bool procmem_read_ctx(void *ctx, uint64_t addr, void *buf, size_t len);

struct module {
    char path[PATH_MAX];
    uint64_t start, end;   /* extent of all its mappings */
    uint64_t bias;         /* runtime address = link-time address + bias */
    bool has_code;         /* one of its mappings is executable */
};

/* The ELF files mapped with an executable segment (the program, the dynamic loader,
 * shared libraries), in address order. *mods is malloc'd. 0, or -1 with errno. */
int procmem_modules(pid_t pid, struct module **mods, size_t *n);

/* The extent of process pid's vDSO mapping ("[vdso]" in /proc/PID/maps); false,
 * with both 0, when it has none or the maps cannot be read. */
bool procmem_vdso(pid_t pid, uint64_t *start, uint64_t *end);

/* Whether path is in a system library directory (/lib, /usr/lib, ...): patterns
 * with wildcards do not reach into such modules (libc is not "the program"). */
bool procmem_system_path(const char *path);

/* A page-aligned address where `size` bytes are free in the target, within 1 GiB of
 * [lo, hi) so rel32 jumps and RIP-relative operands reach; 0 if none. */
uint64_t procmem_free_near(pid_t pid, uint64_t lo, uint64_t hi, uint64_t size);

/* The process (thread group) a thread belongs to, from /proc/TID/status; tid itself
 * when it cannot be read. */
pid_t procmem_tgid(pid_t tid);

/* The parent of process tgid (field 4 of /proc/PID/stat); 0 when unknown. */
pid_t procmem_parent(pid_t tgid);

/* The current name of thread tid (/proc/TID/comm, as prctl or pthread_setname_np
 * set it) into out; "" when it cannot be read. */
void procmem_thread_name(pid_t tid, char *out, size_t cap);

/* How old a cached thread name may be at an event before it is read again. */
#define THREAD_NAME_MAX_AGE_NS (50 * 1000000LL)

/* A cached name of tid, read again when older than THREAD_NAME_MAX_AGE_NS at now
 * (CLOCK_MONOTONIC; *read_ns: when it was read, 0 for never): a thread renamed
 * with pthread_setname_np shows its new name from then on, for at most one /proc
 * read per thread per 50 ms. */
void procmem_thread_name_cached(pid_t tid, char *name, size_t cap, int64_t *read_ns,
                                int64_t now);

/* Entry type (AT_ENTRY: the program's entry point) of /proc/PID/auxv; 0 when
 * unknown. */
uint64_t procmem_auxv(pid_t pid, uint64_t type);

#endif
