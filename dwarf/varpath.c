/*
 * varpath.c - member paths by type (varpath.h). One walk down the type: at each
 * aggregate, the member (or element) whose bytes hold the offset, until the offset
 * is the start of an object that is named whole.
 */
#include "dwarf/varpath.h"

enum { MAX_DEPTH = 32 };

/* Whether the object of type t is named whole, not by its parts. */
static bool named_whole(const struct dw_type *t)
{
    if (t->kind == DWT_ARRAY)
        return false;
    return (t->kind != DWT_STRUCT && t->kind != DWT_UNION) || t->system_header;
}

/* The member of struct or union t whose bytes hold off; NULL when none. Of members
 * sharing the offset (a union, an empty member), the first that holds it. */
static const struct dw_member *member_at(const struct dw_type *t, uint64_t off)
{
    for (size_t i = 0; i < t->n_members; i++) {
        const struct dw_member *m = &t->members[i];
        uint64_t size = m->type ? m->type->size : 0;
        if (m->bit_size == 0 && off >= m->offset && off - m->offset < size)
            return m;
    }
    return NULL;
}

bool dw_member_path(const struct dw_type *t, uint64_t off, struct strbuf *out)
{
    size_t start = out->len;
    for (int depth = 0; t && depth < MAX_DEPTH; depth++) {
        if (off == 0 && named_whole(t))
            return true;
        if (t->size == 0 || off >= t->size) {
            if (off == 0) /* an incomplete type: named whole */
                return true;
            break;
        }
        if (t->kind == DWT_ARRAY) {
            const struct dw_type *el = t->target;
            if (!el || el->size == 0)
                break;
            sb_printf(out, "[%llu]", (unsigned long long)(off / el->size));
            off %= el->size;
            t = el;
            continue;
        }
        if (t->kind != DWT_STRUCT && t->kind != DWT_UNION)
            break;
        const struct dw_member *m = member_at(t, off);
        if (!m || (m->name && m->name[0] == '_' && m->name[1] == '_')) {
            if (off == 0) /* the object starts here and has no better name inside */
                return true;
            break;
        }
        if (m->name) /* an anonymous struct or union's members are the parent's */
            sb_printf(out, ".%s", m->name);
        off -= m->offset;
        t = m->type;
    }
    out->len = start;
    if (out->buf)
        out->buf[start] = '\0';
    return false;
}
