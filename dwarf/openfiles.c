/*
 * openfiles.c - the cache of open ELF/DWARF files that the frame inspector (frame.c,
 * sites.c, scopes.c) and the line tables (lines.c) share through dwarf_internal.h:
 * each file opened once, with the types converted from it (so a type is converted
 * once) and the function tables of the CUs looked into, and opened again when its
 * size, inode or mtime changed; dw_frame_cache_clear (frame.h) closes them all.
 *
 * One mutex guards the cache and is held for a whole call of frame.h or lines.h,
 * values read included: libdw handles and the type converter are not meant for
 * concurrent use, and calls are rare (one per frame of a crash, one per breakpoint
 * set). At most MAX_FILES files stay open, the most recently used.
 */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf_internal.h"

enum { MAX_FILES = 16 }; /* open files kept */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dw_file *files; /* most recently used first */

/* DWARF from the build-id debug file under /usr/lib/debug, for a file without any (as
 * the function index does). Its CFI stays the one of the file itself. */
static void open_debug_file(struct dw_file *f)
{
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(f->elf, &bits);
    if (n < 2 || n > 64)
        return;
    const unsigned char *id = bits;
    char path[200];
    int len = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
    for (ssize_t i = 1; i < n; i++)
        len += snprintf(path + len, sizeof path - (size_t)len, "%02x", id[i]);
    snprintf(path + len, sizeof path - (size_t)len, ".debug");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
    if (!dw) {
        elf_end(elf);
        close(fd);
        return;
    }
    f->dfd = fd;
    f->delf = elf;
    f->dw = dw;
}

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

static struct dw_file *file_open(const char *path, const struct stat *st)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, elf_init);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        elf_end(elf);
        close(fd);
        return NULL;
    }
    struct dw_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path)))
        abort();
    f->st = *st;
    f->fd = fd;
    f->dfd = -1;
    f->elf = elf;
    f->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    if (!f->dw)
        open_debug_file(f);
    f->eh_cfi = dwarf_getcfi_elf(elf);
    f->tc = type_conv_new(&f->arena);
    return f;
}

static void file_close(struct dw_file *f)
{
    dw_cu_functions_free(f->cus);
    type_conv_free(f->tc);
    arena_free(&f->arena);
    if (f->eh_cfi)
        dwarf_cfi_end(f->eh_cfi);
    if (f->dw)
        dwarf_end(f->dw);
    if (f->delf) {
        elf_end(f->delf);
        close(f->dfd);
    }
    elf_end(f->elf);
    close(f->fd);
    free(f->path);
    free(f);
}

void dw_files_lock(void)
{
    pthread_mutex_lock(&lock);
}

void dw_files_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

Dwarf *dw_file_dwarf(const struct dw_file *f)
{
    return f->dw;
}

/* Reopened when it changed on disk; the most recently used MAX_FILES stay open. */
struct dw_file *dw_file_get(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    struct dw_file **pp, *f = NULL;
    for (pp = &files; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->path, path) == 0) {
            f = *pp;
            *pp = f->next;
            break;
        }
    if (f && (f->st.st_dev != st.st_dev || f->st.st_ino != st.st_ino ||
              f->st.st_size != st.st_size || f->st.st_mtim.tv_sec != st.st_mtim.tv_sec ||
              f->st.st_mtim.tv_nsec != st.st_mtim.tv_nsec)) {
        file_close(f);
        f = NULL;
    }
    if (!f && !(f = file_open(path, &st)))
        return NULL;
    f->next = files;
    files = f;
    size_t kept = 0;
    for (pp = &files; *pp && ++kept <= MAX_FILES; pp = &(*pp)->next)
        ;
    while (*pp) {
        struct dw_file *old = *pp;
        *pp = old->next;
        file_close(old);
    }
    return f;
}

void dw_frame_cache_clear(void)
{
    dw_globals_cache_clear();
    pthread_mutex_lock(&lock);
    struct dw_file *f = files;
    files = NULL;
    pthread_mutex_unlock(&lock);
    while (f) {
        struct dw_file *next = f->next;
        file_close(f);
        f = next;
    }
}
