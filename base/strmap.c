/*
 * strmap.c - the string-keyed hash map. See strmap.h.
 */
#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

struct strmap_ent {
    char *key; /* NULL = empty slot */
    size_t len;
    uint64_t hash;
    int64_t val;
};

uint64_t strmap_hash(const char *s, size_t len)
{
    uint64_t h = fnv1a(s, len);
    return h ^ (h >> 29); /* FNV's low bits are weak: they pick the slot */
}

int64_t *strmap_ref(const struct strmap *m, const char *key, size_t len, uint64_t h)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct strmap_ent *e = &m->ents[i];
        if (!e->key)
            return NULL;
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
            return &e->val;
    }
}

int64_t strmap_get(const struct strmap *m, const char *key, size_t len, uint64_t h)
{
    const int64_t *v = strmap_ref(m, key, len, h);
    return v ? *v : -1;
}

static void strmap_insert_ent(struct strmap_ent *ents, size_t cap, struct strmap_ent e)
{
    size_t mask = cap - 1;
    size_t i = e.hash & mask;
    while (ents[i].key)
        i = (i + 1) & mask;
    ents[i] = e;
}

int strmap_put(struct strmap *m, const char *key, size_t len, uint64_t h, int64_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        struct strmap_ent *n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->ents[i].key)
                strmap_insert_ent(n, ncap, m->ents[i]);
        free(m->ents);
        m->ents = n;
        m->cap = ncap;
    }
    char *k = malloc(len + 1);
    if (!k)
        return -1;
    memcpy(k, key, len);
    k[len] = 0;
    strmap_insert_ent(m->ents, m->cap, (struct strmap_ent){k, len, h, val});
    m->n++;
    return 0;
}

void strmap_clear(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->ents[i].key);
    free(m->ents);
    m->ents = NULL;
    m->cap = m->n = 0;
}
