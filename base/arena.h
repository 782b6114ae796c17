/*
 * arena.h - a bump allocator made of malloc'd chunks: everything allocated from one
 * arena is freed with one call. A DWARF index lives in one (dwarf/), so dropping an
 * index is one arena_free however many functions and types it holds.
 */
#ifndef STROBE_ARENA_H
#define STROBE_ARENA_H

#include <stddef.h>

struct arena_chunk;

/* Zero-initialise to start. */
struct arena {
    struct arena_chunk *head;
};

/* Zeroed, 16-byte aligned memory that lives until arena_free; aborts on ENOMEM. */
void *arena_alloc(struct arena *a, size_t n);
/* Copies of s (NULL stays NULL) and of the first n bytes of s, NUL-terminated. */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* printf into the arena. */
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Moves every chunk of from into a (a worker thread's arena into the result's);
 * from is empty afterwards. */
void arena_splice(struct arena *a, struct arena *from);
void arena_free(struct arena *a);

#endif
