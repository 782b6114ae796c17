/*
 * value_compact.c - the renderings that keep values short (value.h has the rules):
 * large structs, opaque structs of system headers with the fields worth reading,
 * unions shown once, structs already written by an earlier call (references), and
 * function pointers named by symbol.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/value_walk.h"

bool value_is_large(const struct dw_type *t)
{
    if (t && (t->kind == DWT_POINTER || t->kind == DWT_REFERENCE))
        t = t->target;
    return t && (t->kind == DWT_STRUCT || t->kind == DWT_UNION) &&
           (t->size > 256 || t->n_members > 16);
}

/* ---- opaque structs of system headers ------------------------------------------- */

/* The fields worth showing of glibc's opaque types: label, then the member path. */
static const struct opaque_fields {
    const char *type;
    const char *fields[3][2];
} opaque_fields[] = {
    {"pthread_mutex_t", {{"owner", "__data.__owner"}, {"locked", "__data.__lock"},
                         {"count", "__data.__count"}}},
    {"pthread_rwlock_t", {{"writer", "__data.__cur_writer"}, {"readers", "__data.__readers"}}},
    {"FILE", {{"fileno", "_fileno"}}},
    {"struct _IO_FILE", {{"fileno", "_fileno"}}},
    {"struct stat", {{"size", "st_size"}, {"mode", "st_mode"}}},
};

bool value_is_opaque(const struct walk *w, const struct dw_type *t)
{
    return t->system_header && !w->depth_asked && (t->kind == DWT_UNION || t->size > 64);
}

/* The member named name[0..len) of t, or of a base class or anonymous member inside
 * it (C++ puts std::vector's _M_impl in its base _Vector_base), adding its offset to
 * *off. */
static const struct dw_member *member_named(const struct dw_type *t, const char *name,
                                           size_t len, uint64_t *off, int nest)
{
    for (size_t i = 0; t && nest < 4 && i < t->n_members; i++) {
        const struct dw_member *m = &t->members[i];
        if (m->name && strlen(m->name) == len && strncmp(m->name, name, len) == 0) {
            *off += m->offset;
            return m;
        }
    }
    for (size_t i = 0; t && nest < 4 && i < t->n_members; i++) {
        const struct dw_member *m = &t->members[i];
        uint64_t inner = *off + m->offset;
        const struct dw_member *in = !m->name && m->type && m->type->kind == DWT_STRUCT
                                         ? member_named(m->type, name, len, &inner, nest + 1)
                                         : NULL;
        if (in) {
            *off = inner;
            return in;
        }
    }
    return NULL;
}

const struct dw_member *value_member_path(const struct dw_type *t, const char *path,
                                          uint64_t *off)
{
    *off = 0;
    const struct dw_member *found = NULL;
    while (t && *path) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        found = member_named(t, path, len, off, 0);
        if (!found || found->bit_size)
            return NULL;
        t = found->type;
        path += len + (dot ? 1 : 0);
    }
    return found;
}

/* "<NAME 0x...>", or an object with it as "@opaque" and the type's useful fields. */
void value_emit_opaque(struct walk *w, const struct dw_type *t, const struct span *s,
                        uint64_t off, const uint64_t *addr)
{
    char text[320];
    const char *name = t->name ? t->name : "(anonymous)";
    if (addr)
        snprintf(text, sizeof text, "<%.256s 0x%" PRIx64 ">", name, *addr);
    else
        snprintf(text, sizeof text, "<%.256s>", name);
    const struct opaque_fields *of = NULL;
    for (size_t i = 0; i < sizeof opaque_fields / sizeof *opaque_fields && !of; i++)
        if (t->name && strcmp(t->name, opaque_fields[i].type) == 0)
            of = &opaque_fields[i];
    if (!of) {
        sb_json_string(w->out, text);
        return;
    }
    sb_puts(w->out, "{\"@opaque\":");
    sb_json_string(w->out, text);
    for (size_t i = 0; i < 3 && of->fields[i][0]; i++) {
        uint64_t moff;
        const struct dw_member *m = value_member_path(t, of->fields[i][1], &moff);
        if (!m)
            continue;
        sb_printf(w->out, ",\"%s\":", of->fields[i][0]);
        value_emit(w, m->type, s, off + moff, w->max_depth);
    }
    sb_puts(w->out, "}");
}

/* ---- references across calls ---------------------------------------------------- */

void value_refs_free(struct value_refs *r)
{
    free(r->items);
    r->items = NULL;
    r->n = 0;
}

const struct value_ref *value_ref_find(const struct walk *w, uint64_t addr)
{
    for (size_t i = 0; w->refs && i < w->refs->n; i++)
        if (w->refs->items[i].addr == addr)
            return &w->refs->items[i];
    return NULL;
}

void value_ref_add(struct walk *w, uint64_t addr)
{
    struct value_refs *r = w->refs;
    if (!r || !r->where || r->n >= VALUE_REFS_MAX)
        return;
    if (!r->items && !(r->items = malloc(VALUE_REFS_MAX * sizeof *r->items)))
        return;
    r->items[r->n].addr = addr;
    snprintf(r->items[r->n].where, sizeof r->items[r->n].where, "%s", r->where);
    r->n++;
}

/* The first bytes of a union, hex, as the "@bytes" member. */
void value_put_union_bytes(struct walk *w, const struct dw_type *t, const struct span *s,
                            uint64_t off, bool *first)
{
    uint8_t b[BYTES_SHOWN];
    size_t n = t->size < BYTES_SHOWN ? (size_t)t->size : BYTES_SHOWN;
    if (!value_fetch(w, s, off, b, n))
        return;
    sb_puts(w->out, *first ? "\"@bytes\":\"" : ",\"@bytes\":\"");
    for (size_t i = 0; i < n; i++)
        sb_printf(w->out, "%02x", b[i]);
    sb_puts(w->out, t->size > BYTES_SHOWN ? "...\"" : "\"");
    *first = false;
}

void value_emit_symbol(struct walk *w, uint64_t addr)
{
    char name[256];
    if (w->symbolize(w->symbolize_ctx, addr, name, sizeof name))
        sb_json_string(w->out, name);
    else
        value_put_hex(w, "", addr, "");
}
