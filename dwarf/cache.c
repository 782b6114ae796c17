/*
 * cache.c - the in-memory cache behind dw_index_get(): one index per (path, build-id,
 * mtime), built on first use and kept until dw_cache_clear(), so every session and
 * every pattern of a program shares one index per file.
 *
 * A mutex guards the list only: a build runs outside it, so two threads can index two
 * files at once. When two threads build the same file, the first one to finish is
 * kept and the other's copy freed. A file whose mtime or build-id changed gets a new
 * entry; the old one stays valid (callers may hold pointers into it) until the clear.
 * A miss tries the on-disk cache (diskcache.c) before building, and stores what it
 * built there.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>

#include "dwarf/dwarf_internal.h"

struct entry {
    struct entry *next;
    char *path;
    char build_id[41];
    struct timespec mtime;
    struct dw_index *ix;
    struct arena disk; /* owns ix when it was loaded from disk; empty when built */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;

static struct entry *find(const char *path, const char *build_id, struct timespec mtime)
{
    for (struct entry *e = entries; e; e = e->next)
        if (strcmp(e->path, path) == 0 && strcmp(e->build_id, build_id) == 0 &&
            e->mtime.tv_sec == mtime.tv_sec && e->mtime.tv_nsec == mtime.tv_nsec)
            return e;
    return NULL;
}

static void free_index(struct dw_index *ix, struct arena *disk)
{
    if (disk->head)
        arena_free(disk);
    else
        dw_index_free(ix);
}

const struct dw_index *dw_index_get(const char *path, struct strobe_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        err_set(err, ERR_NO_DEBUG_SYMBOLS, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char build_id[41];
    if (dw_elf_build_id(path, build_id, err) != 0)
        return NULL;
    pthread_mutex_lock(&lock);
    struct entry *e = find(path, build_id, st.st_mtim);
    pthread_mutex_unlock(&lock);
    if (e)
        return e->ix;

    struct arena disk = {0};
    struct dw_index *ix = dw_disk_load(path, build_id, &st, &disk);
    if (!ix) {
        if (!(ix = dw_index_build(path, err)))
            return NULL;
        dw_disk_store(path, &st, ix);
    }
    pthread_mutex_lock(&lock);
    e = find(path, build_id, st.st_mtim);
    if (e) {
        free_index(ix, &disk);
    } else if ((e = calloc(1, sizeof *e)) && (e->path = strdup(path))) {
        memcpy(e->build_id, build_id, sizeof build_id);
        e->mtime = st.st_mtim;
        e->ix = ix;
        e->disk = disk;
        e->next = entries;
        entries = e;
    } else {
        abort();
    }
    pthread_mutex_unlock(&lock);
    return e->ix;
}

void dw_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    struct entry *e = entries;
    entries = NULL;
    pthread_mutex_unlock(&lock);
    while (e) {
        struct entry *next = e->next;
        free_index(e->ix, &e->disk);
        free(e->path);
        free(e);
        e = next;
    }
}
