/*
 * procmem.c - target memory and maps. See procmem.h.
 */
#include "ptrace/proc/procmem.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procstat.h"

int procmem_open(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    return open(path, O_RDWR | O_CLOEXEC);
}

bool procmem_read(int fd, uint64_t addr, void *buf, size_t len)
{
    return pread(fd, buf, len, (off_t)addr) == (ssize_t)len;
}

bool procmem_read_ctx(void *ctx, uint64_t addr, void *buf, size_t len)
{
    return procmem_read(*(int *)ctx, addr, buf, len);
}

bool procmem_write(int fd, uint64_t addr, const void *buf, size_t len)
{
    return pwrite(fd, buf, len, (off_t)addr) == (ssize_t)len;
}

/* Lowest PT_LOAD virtual address of the ELF file, page-aligned down. */
static bool min_load_vaddr(const char *path, uint64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    bool ok = pread(fd, &eh, sizeof eh, 0) == sizeof eh &&
              memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64;
    uint64_t lowest = UINT64_MAX;
    for (int i = 0; ok && i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
            sizeof ph) {
            ok = false;
            break;
        }
        if (ph.p_type == PT_LOAD && ph.p_vaddr < lowest)
            lowest = ph.p_vaddr;
    }
    close(fd);
    if (!ok || lowest == UINT64_MAX)
        return false;
    *out = lowest & ~(uint64_t)0xFFF;
    return true;
}

/* Appends run to mods when it is a loaded module: contiguous mappings of one file,
 * starting at its offset 0 and with code. Other mappings of a file (a symbolizer's
 * read-only view of it, as AddressSanitizer makes) are not the module. */
static int add_run(struct module **mods, size_t *n, size_t *cap, const struct module *run)
{
    if (!run->has_code || run->bias == UINT64_MAX)
        return 0;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        struct module *nm = realloc(*mods, *cap * sizeof *nm);
        if (!nm)
            return -1;
        *mods = nm;
    }
    (*mods)[(*n)++] = *run;
    return 0;
}

int procmem_modules(pid_t pid, struct module **mods, size_t *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    *mods = NULL;
    *n = 0;
    if (!f)
        return -1;
    size_t cap = 0;
    char line[PATH_MAX + 128];
    struct module run = {.bias = UINT64_MAX};
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        unsigned long long start, end, offset;
        char perms[8], file[PATH_MAX];
        file[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &start, &end, perms, &offset,
                   file) < 4)
            continue;
        bool continues = file[0] == '/' && run.path[0] && start == run.end &&
                         strcmp(run.path, file) == 0;
        if (!continues) {
            rc = add_run(mods, n, &cap, &run);
            memset(&run, 0, sizeof run);
            run.bias = UINT64_MAX;
            uint64_t lowest;
            if (file[0] != '/' || offset != 0 || !min_load_vaddr(file, &lowest))
                continue;
            snprintf(run.path, sizeof run.path, "%s", file);
            run.start = start;
            run.bias = start - lowest;
        }
        run.end = end;
        if (strchr(perms, 'x'))
            run.has_code = true;
    }
    if (rc == 0)
        rc = add_run(mods, n, &cap, &run);
    fclose(f);
    if (rc != 0) {
        free(*mods);
        *mods = NULL;
        *n = 0;
    }
    return rc;
}

uint64_t procmem_free_near(pid_t pid, uint64_t lo, uint64_t hi, uint64_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    const uint64_t reach = 1ULL << 30, page = 4096;
    uint64_t prev_end = 0x10000, best = 0;
    char line[PATH_MAX + 128];
    for (;;) {
        unsigned long long start = 0, end = 0;
        bool more = fgets(line, sizeof line, f) != NULL;
        if (more && sscanf(line, "%llx-%llx", &start, &end) != 2)
            continue;
        if (!more)
            start = 0x7ffffffff000ULL;
        /* The gap [prev_end, start): take the part closest to the module. */
        if (start > prev_end && start - prev_end >= size + 2 * page) {
            uint64_t cand_hi = (start - size - page) & ~(page - 1);
            uint64_t cand_lo = (prev_end + page + page - 1) & ~(page - 1);
            uint64_t cand = cand_lo >= hi ? cand_lo : cand_hi;
            bool near = cand + size <= lo + reach && cand + reach >= hi;
            if (near && (!best || (cand > hi ? cand - hi : lo - cand) <
                                      (best > hi ? best - hi : lo - best)))
                best = cand;
        }
        if (!more)
            break;
        if (end > prev_end)
            prev_end = end;
    }
    fclose(f);
    return best;
}

bool procmem_vdso(pid_t pid, uint64_t *start, uint64_t *end)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    *start = *end = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2) {
            *start = lo;
            *end = hi;
            break;
        }
    }
    fclose(f);
    return *end != 0;
}

uint64_t procmem_auxv(pid_t pid, uint64_t type)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t pair[2], value = 0;
    while (read(fd, pair, sizeof pair) == sizeof pair && pair[0] != AT_NULL)
        if (pair[0] == type)
            value = pair[1];
    close(fd);
    return value;
}

void procmem_thread_name(pid_t tid, char *out, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)tid);
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

void procmem_thread_name_cached(pid_t tid, char *name, size_t cap, int64_t *read_ns,
                                int64_t now)
{
    if (*read_ns != 0 && now - *read_ns < THREAD_NAME_MAX_AGE_NS)
        return;
    procmem_thread_name(tid, name, cap);
    *read_ns = now;
}

pid_t procmem_tgid(pid_t tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    FILE *f = fopen(path, "re");
    pid_t tgid = tid;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Tgid: %d", &tgid) == 1)
            break;
    if (f)
        fclose(f);
    return tgid;
}

pid_t procmem_parent(pid_t tgid)
{
    char buf[512];
    const char *p = procstat_fields(tgid, 0, buf, sizeof buf);
    int ppid = 0;
    if (p && sscanf(p, " %*c %d", &ppid) == 1)
        return (pid_t)ppid;
    return 0;
}

bool procmem_system_path(const char *path)
{
    static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/",
                                       "/usr/libexec/"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
            return true;
    return false;
}
