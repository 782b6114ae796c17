/*
 * arena.c - the bump allocator. See arena.h.
 */
#include "base/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

#define ARENA_CHUNK (256 * 1024)

void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        struct arena_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            abort();
        nc->used = 0;
        nc->cap = cap;
        if (c && cap != ARENA_CHUNK) { /* a big block: keep bumping in the current chunk */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = arena_alloc(a, n > 0 ? (size_t)n + 1 : 1);
    va_start(ap, fmt);
    vsnprintf(d, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    return d;
}

void arena_splice(struct arena *a, struct arena *from)
{
    struct arena_chunk *tail = from->head;
    if (!tail)
        return;
    while (tail->next)
        tail = tail->next;
    if (a->head) { /* behind a's head, which stays the chunk being bumped */
        tail->next = a->head->next;
        a->head->next = from->head;
    } else {
        a->head = from->head;
    }
    from->head = NULL;
}

void arena_free(struct arena *a)
{
    for (struct arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
}

