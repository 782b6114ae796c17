/*
 * value_walk.h - what the files of the value writer share (value.c writes every kind
 * of value; value_compact.c the compact renderings: opaque system structs, unions
 * shown once, references across calls, function pointers by symbol). Private to
 * dwarf/value*.c: the rules are in value.h.
 */
#ifndef STROBE_VALUE_WALK_H
#define STROBE_VALUE_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "dwarf/value.h"

enum {
    PATH_MAX_LEN = 16,  /* > 1 + the largest max_depth */
    BYTES_SHOWN = 16,   /* of raw bytes and of a union's "@bytes" */
};

/* Bytes of the target: a local copy, and their address when they came from memory. */
struct span {
    const uint8_t *bytes;
    uint64_t len;     /* bytes held locally */
    uint64_t addr;    /* target address of bytes[0] when has_addr */
    bool has_addr;
};

/* One call of value_json/value_json_at: its options and where it is. */
struct walk {
    struct strbuf *out;
    mem_read_fn rd;
    void *ctx;
    int max_depth;
    size_t max_string, max_array, max_output;
    bool depth_asked;
    bool unions_whole;  /* every member of a union (value_opts.unions_whole) */
    value_symbol_fn symbolize;
    void *symbolize_ctx;
    struct value_refs *refs;
    size_t start_len;                /* out->len when the call began */
    uint64_t path[PATH_MAX_LEN];     /* objects being expanded through pointers */
    int n_path;
    int nesting;
};

/* value.c */
/* Writes the value of type t at offset off of span s, depth objects deep. */
void value_emit(struct walk *w, const struct dw_type *t, const struct span *s, uint64_t off,
                int depth);
/* Copies n bytes at offset off of s: locally when held, else from the target. */
bool value_fetch(const struct walk *w, const struct span *s, uint64_t off, void *buf,
                 uint64_t n);
/* "PREFIX0x...SUFFIX" as a JSON string. */
void value_put_hex(struct walk *w, const char *prefix, uint64_t addr, const char *suffix);
/* n bytes of a string as a JSON string: invalid UTF-8 escaped, "...(truncated)"
 * appended when truncated. */
void value_put_text(struct walk *w, const char *bytes, size_t n, bool truncated);

/* value_compact.c */
/* Whether t is shown opaque (a system header's union, or struct over 64 bytes, with no
 * depth asked), and how: "<NAME 0x...>" or {"@opaque", useful fields}. addr NULL for
 * a copy. */
bool value_is_opaque(const struct walk *w, const struct dw_type *t);
void value_emit_opaque(struct walk *w, const struct dw_type *t, const struct span *s,
                       uint64_t off, const uint64_t *addr);
/* The union's first bytes as the "@bytes" member (a comma first unless *first). */
void value_put_union_bytes(struct walk *w, const struct dw_type *t, const struct span *s,
                           uint64_t off, bool *first);
/* The earlier expansion of the struct at addr in w->refs, or NULL; records one. */
const struct value_ref *value_ref_find(const struct walk *w, uint64_t addr);
void value_ref_add(struct walk *w, uint64_t addr);
/* A function pointer by w->symbolize, else hex. */
void value_emit_symbol(struct walk *w, uint64_t addr);
/* The member of t at a dotted path ("__data.__owner") and its offset in t, or NULL
 * (no such member, or a bit field on the way). */
const struct dw_member *value_member_path(const struct dw_type *t, const char *path,
                                          uint64_t *off);

/* value_std.c */
/* Writes a libstdc++ value at off as C++ reads it (std::string as text, containers by
 * size); false, writing nothing, when t is none or its layout does not fit. */
bool value_emit_std(struct walk *w, const struct dw_type *t, const struct span *s,
                    uint64_t off, int depth);

#endif
