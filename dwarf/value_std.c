/*
 * value_std.c - libstdc++ values as a C++ programmer reads them, the way gdb's
 * pretty printers show them: std::string as its text, std::vector as its size and
 * first elements, the node containers (list, map, set and their unordered and multi
 * kinds) as their size. Raw, they are allocator and hash-policy internals an agent
 * cannot use. Types are matched by name and read by member path, so a layout that does
 * not fit (another library, a debug-mode container) falls back to the plain struct.
 *
 * To add a type: a row in node_sizes (a size member is all it needs), or a function
 * like emit_string and a branch in value_emit_std.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "dwarf/value_walk.h"

enum {
    ELEMENTS_SHOWN = 16,         /* of a vector, at most (and at most max_array) */
    STRING_SANE = 1u << 30,      /* a longer "length" is a torn or garbage object */
};

/* Whether t's name, past "std::" and "std::__cxx11::" when there, starts with one
 * of prefixes. DWARF names class templates without their namespace ("list<...>"), so
 * the type must come from a system header too: a program's own list<T> is its own. */
static bool std_named(const struct dw_type *t, const char *const *prefixes)
{
    const char *name = t->name;
    if (strncmp(name, "std::", 5) == 0)
        name += 5;
    if (strncmp(name, "__cxx11::", 9) == 0)
        name += 9;
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* The u64 at a member path of t in s (at off); false when there is none. */
static bool read_u64(const struct walk *w, const struct dw_type *t, const struct span *s,
                     uint64_t off, const char *path, uint64_t *out)
{
    uint64_t moff;
    const struct dw_member *m = value_member_path(t, path, &moff);
    return m && m->type && m->type->size == 8 && value_fetch(w, s, off + moff, out, 8);
}

/* std::string: "_M_dataplus._M_p" points at _M_string_length chars. */
static bool emit_string(struct walk *w, const struct dw_type *t, const struct span *s,
                        uint64_t off)
{
    uint64_t data, len;
    if (!read_u64(w, t, s, off, "_M_dataplus._M_p", &data) ||
        !read_u64(w, t, s, off, "_M_string_length", &len) || len > STRING_SANE)
        return false;
    size_t n = len < w->max_string ? (size_t)len : w->max_string;
    char local[1024];
    char *buf = n <= sizeof local ? local : malloc(n);
    if (!buf || (n && !w->rd(w->ctx, data, buf, n))) {
        if (buf != local)
            free(buf);
        return false;
    }
    value_put_text(w, buf, n, n < len);
    if (buf != local)
        free(buf);
    return true;
}

/* std::vector<T>: {"@size": N, "@elements": [the first ones]}. */
static bool emit_vector(struct walk *w, const struct dw_type *t, const struct span *s,
                        uint64_t off, int depth)
{
    uint64_t moff, start, finish;
    const struct dw_member *m = value_member_path(t, "_M_impl._M_start", &moff);
    const struct dw_type *elem = m && m->type && m->type->kind == DWT_POINTER
                                     ? m->type->target : NULL;
    if (!elem || !elem->size || !read_u64(w, t, s, off, "_M_impl._M_start", &start) ||
        !read_u64(w, t, s, off, "_M_impl._M_finish", &finish) || finish < start ||
        (finish - start) % elem->size)
        return false;
    uint64_t n = (finish - start) / elem->size;
    size_t shown = w->max_array < ELEMENTS_SHOWN ? w->max_array : ELEMENTS_SHOWN;
    sb_printf(w->out, "{\"@size\":%" PRIu64 ",\"@elements\":[", n);
    for (uint64_t i = 0; i < n && i < shown; i++) {
        struct span at = {.addr = start + i * elem->size, .has_addr = true};
        sb_puts(w->out, i ? "," : "");
        value_emit(w, elem, &at, 0, depth + 1);
    }
    sb_puts(w->out, n > shown ? ",\"...\"]}" : "]}");
    return true;
}

/* The node containers: where each keeps its element count. */
static const struct node_size {
    const char *const prefixes[5];
    const char *size_path;
} node_sizes[] = {
    {{"list<", NULL}, "_M_impl._M_node._M_size"},
    {{"map<", "set<", "multimap<", "multiset<", NULL}, "_M_t._M_impl._M_node_count"},
    {{"unordered_map<", "unordered_set<", "unordered_multimap<", "unordered_multiset<",
      NULL}, "_M_h._M_element_count"},
};

bool value_emit_std(struct walk *w, const struct dw_type *t, const struct span *s,
                    uint64_t off, int depth)
{
    static const char *const strings[] = {"basic_string<char,", "basic_string<char>",
                                          "string", NULL};
    static const char *const vectors[] = {"vector<", NULL};
    if (t->kind != DWT_STRUCT || !t->name || !t->system_header)
        return false;
    if (std_named(t, strings))
        return emit_string(w, t, s, off);
    if (std_named(t, vectors))
        return emit_vector(w, t, s, off, depth);
    for (size_t i = 0; i < sizeof node_sizes / sizeof *node_sizes; i++) {
        uint64_t n;
        if (std_named(t, node_sizes[i].prefixes) &&
            read_u64(w, t, s, off, node_sizes[i].size_path, &n)) {
            sb_printf(w->out, "{\"@size\":%" PRIu64 "}", n);
            return true;
        }
    }
    return false;
}
