/*
 * hash.h - the one string hash of the project: 64-bit FNV-1a. The DWARF cache's
 * file names and checksums are made with it, so it must never change (a change
 * would orphan every cache file); the hash maps mix it further for their slots.
 */
#ifndef STROBE_HASH_H
#define STROBE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
