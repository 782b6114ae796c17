/*
 * u64map.h - an open-addressing hash map from nonzero 64-bit keys (addresses, thread
 * ids) to pointers. The tracer's hot path looks up a breakpoint and a thread on
 * every stop; this does it without allocating.
 */
#ifndef STROBE_U64MAP_H
#define STROBE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
    uint64_t *keys;   /* 0 = empty slot, UINT64_MAX = deleted */
    void **values;
    size_t cap, used, live;
};

void *u64map_get(const struct u64map *m, uint64_t key);
/* Inserts or replaces. Returns 0, or -1 when out of memory. */
int u64map_put(struct u64map *m, uint64_t key, void *value);
/* Removes key; returns its value or NULL. */
void *u64map_del(struct u64map *m, uint64_t key);
/* Calls fn for every entry (the map must not change meanwhile). */
void u64map_each(const struct u64map *m, void (*fn)(uint64_t key, void *value, void *arg),
                 void *arg);
void u64map_free(struct u64map *m);

#endif
