/*
 * strmap.h - an open-addressing hash map from strings (with a length: they need no
 * NUL) to int64 values; keys are copied. The store's interning caches and the DWARF
 * cache writer's string table use it; base/u64map.h is its twin for integer and
 * pointer keys.
 */
#ifndef STROBE_STRMAP_H
#define STROBE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap_ent;

/* Zero-initialise to start. */
struct strmap {
    struct strmap_ent *ents;
    size_t cap, n;
};

/* The hash get and put take: computed once per key by the caller. */
uint64_t strmap_hash(const char *s, size_t len);
/* The value of key, in place (to update it), or NULL when absent. */
int64_t *strmap_ref(const struct strmap *m, const char *key, size_t len, uint64_t h);
/* The value of key, -1 when absent. */
int64_t strmap_get(const struct strmap *m, const char *key, size_t len, uint64_t h);
/* Adds key (not present yet) with val. 0, or -1 on ENOMEM. */
int strmap_put(struct strmap *m, const char *key, size_t len, uint64_t h, int64_t val);
void strmap_clear(struct strmap *m);

#endif
