/*
 * u64map.c - open addressing with linear probing; deletions leave tombstones that
 * the next growth clears. See u64map.h.
 */
#include "base/u64map.h"

#include <stdlib.h>

#define DELETED UINT64_MAX

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->values[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static int grow(struct u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    while (m->live * 2 >= cap)
        cap *= 2;
    uint64_t *keys = calloc(cap, sizeof *keys);
    void **values = calloc(cap, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (m->keys[j] == 0 || m->keys[j] == DELETED)
            continue;
        size_t i = slot_of(m->keys[j], cap);
        while (keys[i])
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        values[i] = m->values[j];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    m->used = m->live;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *value)
{
    if ((m->used + 1) * 4 >= m->cap * 3 && grow(m) != 0)
        return -1;
    size_t tomb = SIZE_MAX;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            m->values[i] = value;
            return 0;
        }
        if (m->keys[i] == DELETED && tomb == SIZE_MAX)
            tomb = i;
        if (m->keys[i] == 0) {
            if (tomb != SIZE_MAX)
                i = tomb;
            else
                m->used++;
            m->keys[i] = key;
            m->values[i] = value;
            m->live++;
            return 0;
        }
    }
}

void *u64map_del(struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            void *v = m->values[i];
            m->keys[i] = DELETED;
            m->values[i] = NULL;
            m->live--;
            return v;
        }
        if (m->keys[i] == 0)
            return NULL;
    }
}

void u64map_each(const struct u64map *m, void (*fn)(uint64_t key, void *value, void *arg),
                 void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != 0 && m->keys[i] != DELETED)
            fn(m->keys[i], m->values[i], arg);
}

void u64map_free(struct u64map *m)
{
    free(m->keys);
    free(m->values);
    m->keys = NULL;
    m->values = NULL;
    m->cap = m->used = m->live = 0;
}
