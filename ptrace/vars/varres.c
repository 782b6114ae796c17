/*
 * varres.c - C-like variable expressions resolved in a live process (varres.h): the
 * parser, the search of the root variable in the executable and then in each library
 * it loaded (dwarf/globals.h, at the module's load bias), and the walk of members,
 * elements and pointers, with pointers read through /proc/PID/mem as the program
 * runs (never stopped: a pointer the program changes meanwhile is read either before
 * or after the change).
 */
#include "ptrace/vars/varres.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf/globals.h"
#include "dwarf/value.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/proc/symbolize.h"

/* The types of address targets, by hint (varres_hint_type). */
static const struct dw_type hint_types[] = {
    [MEMH_I8] = {.kind = DWT_SIGNED, .name = "i8", .size = 1},
    [MEMH_U8] = {.kind = DWT_UNSIGNED, .name = "u8", .size = 1},
    [MEMH_I16] = {.kind = DWT_SIGNED, .name = "i16", .size = 2},
    [MEMH_U16] = {.kind = DWT_UNSIGNED, .name = "u16", .size = 2},
    [MEMH_I32] = {.kind = DWT_SIGNED, .name = "i32", .size = 4},
    [MEMH_U32] = {.kind = DWT_UNSIGNED, .name = "u32", .size = 4},
    [MEMH_I64] = {.kind = DWT_SIGNED, .name = "i64", .size = 8},
    [MEMH_U64] = {.kind = DWT_UNSIGNED, .name = "u64", .size = 8},
    [MEMH_F32] = {.kind = DWT_FLOAT, .name = "f32", .size = 4},
    [MEMH_F64] = {.kind = DWT_FLOAT, .name = "f64", .size = 8},
    [MEMH_POINTER] = {.kind = DWT_POINTER, .name = "pointer", .size = 8},
    [MEMH_BYTES] = {.kind = DWT_VOID, .name = "bytes"},
};

const struct dw_type *varres_hint_type(enum memory_hint h)
{
    return h > MEMH_NONE && h <= MEMH_BYTES ? &hint_types[h] : NULL;
}

enum { MEMBER_NEST_MAX = 8 }; /* anonymous members and base classes looked into */

/* ---- parsing ---- */

struct parser {
    const char *s;
    size_t at;
    struct strobe_error *e;
};

static void skip_spaces(struct parser *p)
{
    while (p->s[p->at] == ' ' || p->s[p->at] == '\t')
        p->at++;
}

static bool ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_' || c == '$';
}

static bool ident_char(char c)
{
    return ident_start(c) || isdigit((unsigned char)c);
}

static int syntax(struct parser *p, const char *expected)
{
    return err_set(p->e, ERR_BAD_EXPRESSION,
                   "'%s': expected %s at column %zu (expressions are C names with ::, "
                   ".member, ->member, [index] and a leading *).",
                   p->s, expected, p->at + 1);
}

/* An identifier at p->at; its length, 0 when there is none. */
static size_t ident(struct parser *p)
{
    size_t n = 0;
    if (ident_start(p->s[p->at]))
        while (ident_char(p->s[p->at + n]))
            n++;
    return n;
}

int varres_parse(const char *expr, struct varres_expr *out, struct strobe_error *e)
{
    *out = (struct varres_expr){0};
    struct parser p = {expr, 0, e};
    size_t len = strlen(expr);
    if (len == 0)
        return err_set(e, ERR_BAD_EXPRESSION, "The variable expression is empty.");
    if (len > MEMORY_EXPR_MAX)
        return err_set(e, ERR_BAD_EXPRESSION,
                       "The variable expression is %zu characters long; the limit is %d.",
                       len, MEMORY_EXPR_MAX);
    skip_spaces(&p);
    while (expr[p.at] == '*') {
        out->stars++;
        p.at++;
        skip_spaces(&p);
    }
    size_t root_len = 0;
    out->root_start = p.at;
    for (;;) {
        size_t n = ident(&p);
        if (!n)
            return syntax(&p, "a variable name");
        memcpy(out->root + root_len, expr + p.at, n);
        root_len += n;
        p.at += n;
        if (expr[p.at] != ':' || expr[p.at + 1] != ':')
            break;
        memcpy(out->root + root_len, "::", 2);
        root_len += 2;
        p.at += 2;
    }
    out->root[root_len] = '\0';
    out->root_end = p.at;
    int derefs = out->stars;
    for (skip_spaces(&p); expr[p.at]; skip_spaces(&p)) {
        if (out->n_steps == VARRES_MAX_STEPS)
            return err_set(e, ERR_BAD_EXPRESSION, "'%s' has more than %d steps.", expr,
                           VARRES_MAX_STEPS);
        struct varres_step *st = &out->steps[out->n_steps];
        char c = expr[p.at];
        if (c == '.' || (c == '-' && expr[p.at + 1] == '>')) {
            st->kind = c == '.' ? VS_MEMBER : VS_ARROW;
            derefs += st->kind == VS_ARROW;
            p.at += c == '.' ? 1 : 2;
            skip_spaces(&p);
            if (!(st->name_len = ident(&p)))
                return syntax(&p, "a member name");
            st->name = expr + p.at;
            p.at += st->name_len;
        } else if (c == '[') {
            p.at++;
            skip_spaces(&p);
            st->kind = VS_INDEX;
            st->name = NULL;
            if ((ident_start(expr[p.at]) && expr[p.at] != '$') || expr[p.at] == '*') {
                /* An index named by a variable or a path of its own ("a[i]",
                 * "q->items[q->head]"): resolved, as an expression, when this one
                 * is. Its text runs to the matching ']'. */
                size_t start = p.at;
                int open = 0;
                for (; expr[p.at] && (open > 0 || expr[p.at] != ']'); p.at++)
                    open += expr[p.at] == '[' ? 1 : expr[p.at] == ']' ? -1 : 0;
                size_t end = p.at;
                while (end > start && isspace((unsigned char)expr[end - 1]))
                    end--;
                st->name = expr + start;
                st->name_len = end - start;
            } else if (isdigit((unsigned char)expr[p.at])) {
                char *end;
                st->index = strtoull(expr + p.at, &end, 0);
                p.at = (size_t)(end - expr);
            } else {
                return syntax(&p, "a non-negative index or a variable");
            }
            skip_spaces(&p);
            if (expr[p.at] != ']')
                return syntax(&p, "']'");
            p.at++;
        } else {
            return syntax(&p, "'.', '->' or '['");
        }
        st->end = p.at;
        out->n_steps++;
    }
    if (derefs > MEMORY_MAX_DEREFS)
        return err_set(e, ERR_BAD_EXPRESSION,
                       "'%s' dereferences %d pointers; the limit is %d. Read an inner "
                       "pointer first and use its address.", expr, derefs, MEMORY_MAX_DEREFS);
    return 0;
}

/* ---- the root variable ---- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The loaded modules of p's process, the executable first, read on first use; -1
 * with PROCESS_EXITED when the maps cannot be read. */
static int modules(struct varres_process *p, struct strobe_error *e)
{
    if (p->mods)
        return 0;
    if (procmem_modules(p->pid, &p->mods, &p->n_mods) != 0) {
        p->mods = NULL;
        return err_set(e, ERR_PROCESS_EXITED, "Process %d has exited.", (int)p->pid);
    }
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)p->pid);
    ssize_t len = readlink(link, exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    for (size_t i = 1; i < p->n_mods; i++)
        if (strcmp(p->mods[i].path, exe) == 0) {
            struct module m = p->mods[i];
            memmove(p->mods + 1, p->mods, i * sizeof *p->mods);
            p->mods[0] = m;
            break;
        }
    return 0;
}

void varres_process_open(struct varres_process *p, pid_t pid, int memfd)
{
    *p = (struct varres_process){.pid = pid, .memfd = memfd};
}

void varres_process_close(struct varres_process *p)
{
    free(p->mods);
    p->mods = NULL;
}

/* A hint type for an object of size bytes read raw. */
static const char *raw_type(uint64_t size)
{
    return size == 1 ? "u8" : size == 2 ? "u16" : size == 4 ? "u32" : size == 8 ? "u64"
                                                                                 : "bytes";
}

static int not_found(const char *name, const struct module *mods, size_t n,
                     struct strobe_error *e)
{
    uint64_t addr, size;
    for (size_t i = 0; i < n; i++)
        if (dw_symbol_find(mods[i].path, name, false, &addr, &size))
            return err_set(e, ERR_VARIABLE_UNAVAILABLE,
                           "'%s' is a symbol of %s, which has no debug info for it: %" PRIu64
                           " bytes at 0x%" PRIx64 " of unknown type. Read it raw as {address: "
                           "\"0x%" PRIx64 "\", type: \"%s\"%s}, or install the file's debug "
                           "info.", name, base_name(mods[i].path), size, addr + mods[i].bias,
                           addr + mods[i].bias, raw_type(size),
                           strcmp(raw_type(size), "bytes") == 0 ? ", size: N" : "");
    struct dw_near near = {0};
    for (size_t i = 0; i < n; i++)
        dw_global_near(mods[i].path, name, &near);
    if (near.n == 0)
        return err_set(e, ERR_VARIABLE_NOT_FOUND,
                       "No global or static variable '%s' in the program or its libraries "
                       "(locals of functions are not globals).", name);
    char list[3 * 140] = "";
    size_t len = 0;
    for (int i = 0; i < near.n; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'",
                                i == 0 ? "" : i + 1 == near.n ? " or " : ", ", near.name[i]);
    return err_set(e, ERR_VARIABLE_NOT_FOUND,
                   "No global or static variable '%s' in the program or its libraries; did "
                   "you mean %s?", name, list);
}

static int unavailable(const struct dw_global *g, const char *module, const char *why,
                       struct strobe_error *e)
{
    return err_set(e, ERR_VARIABLE_UNAVAILABLE, "'%s' (%s%s%s) %s.", g->name, module,
                   g->decl_file ? ", " : "", g->decl_file ? base_name(g->decl_file) : "", why);
}

static const char *type_label(const struct dw_type *t)
{
    if (t->name)
        return t->name;
    switch (t->kind) {
    case DWT_STRUCT: return "(anonymous struct)";
    case DWT_UNION: return "(anonymous union)";
    case DWT_ENUM: return "(anonymous enum)";
    case DWT_VOID: return "void";
    default: return "?";
    }
}

static int find_root(struct varres_process *p, const char *name, struct varres *out,
                     struct strobe_error *e)
{
    if (modules(p, e) != 0)
        return -1;
    const struct module *mods = p->mods;
    size_t n = p->n_mods;
    struct dw_global g;
    enum dw_global_match m = DWG_NONE;
    size_t i;
    for (i = 0; i < n && m == DWG_NONE; i++)
        m = dw_global_find(mods[i].path, name, &g);
    int rc = 0;
    if (m == DWG_NONE) {
        rc = not_found(name, mods, n, e);
    } else if (m == DWG_AMBIGUOUS) {
        struct dw_near near = {0};
        dw_global_near(mods[i - 1].path, name, &near);
        rc = err_set(e, ERR_VARIABLE_NOT_FOUND,
                     "'%s' names several variables of %s: '%s', '%s'%s; give the qualified "
                     "name.", name, base_name(mods[i - 1].path), near.name[0],
                     near.n > 1 ? near.name[1] : "?", near.n > 2 ? ", ..." : "");
    } else {
        const struct module *mod = &mods[i - 1];
        *out = (struct varres){.type = g.type, .size = g.type->size, .decl_file = g.decl_file,
                               .decl_line = g.decl_line, .regno = -1};
        snprintf(out->module, sizeof out->module, "%s", mod->path);
        snprintf(out->type_name, sizeof out->type_name, "%s", type_label(g.type));
        const char *where = base_name(mod->path);
        uint64_t copy, size;
        switch (g.where) {
        case DWG_MEMORY:
            out->address = g.addr + mod->bias;
            out->has_address = true;
            if (mod != mods && g.symbol &&
                dw_symbol_find(mods[0].path, g.symbol, true, &copy, &size))
                out->address = copy + mods[0].bias; /* the executable's copy is the live one */
            break;
        case DWG_CONSTANT:
            if (g.len > sizeof out->bytes || g.len < g.type->size)
                rc = unavailable(&g, where, "is a constant of a size this reader does not "
                                 "decode", e);
            memcpy(out->bytes, g.bytes, g.len < sizeof out->bytes ? g.len : sizeof out->bytes);
            break;
        case DWG_THREAD_LOCAL:
            rc = unavailable(&g, where, "is thread-local: each thread has its own copy, at "
                             "no single address; reading thread-locals is not supported", e);
            break;
        case DWG_OPTIMIZED_OUT:
            rc = unavailable(&g, where, "was optimized out: the debug info gives it no "
                             "location (rebuild with -O0, or read a variable it is stored in)",
                             e);
            break;
        case DWG_UNSUPPORTED:
            rc = unavailable(&g, where, "has a location that is not a fixed address", e);
            break;
        }
    }
    return rc;
}

/* ---- steps ---- */

struct walk {
    const char *expr;
    struct varres_process *p;    /* where an index named by a variable is read */
    int memfd;
    struct varres *v;
    size_t text_start, text_end; /* the expression evaluated so far, for messages */
    struct strobe_error *e;
};

#define SO_FAR(w) (int)((w)->text_end - (w)->text_start), (w)->expr + (w)->text_start

static int bad(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct walk *w, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(w->e, ERR_BAD_EXPRESSION, "'%.*s' %s", SO_FAR(w), what);
}

void varres_set_type(struct varres *v, const struct dw_type *t)
{
    v->type = t;
    v->size = t->size;
    snprintf(v->type_name, sizeof v->type_name, "%s", type_label(t));
}

/* Follows the pointer (or reference) that is the current value. */
static int deref(struct walk *w, int *derefs)
{
    struct varres *v = w->v;
    uint64_t p = 0;
    if (++*derefs > MEMORY_MAX_DEREFS)
        return bad(w, "dereferences more than %d pointers.", MEMORY_MAX_DEREFS);
    if (!v->has_address) {
        /* A pointer kept in a register (or computed): its value is at hand. */
        if (v->size != sizeof p)
            return bad(w, "is a constant with no address.");
        memcpy(&p, v->bytes, sizeof p);
        v->has_address = true;
        v->regno = -1;
    } else if (v->size != sizeof p || !procmem_read(w->memfd, v->address, &p, sizeof p)) {
        return err_set(w->e, ERR_MEMORY_UNREADABLE, "'%.*s' at 0x%" PRIx64 " is unreadable.",
                       SO_FAR(w), v->address);
    }
    if (!p)
        return err_set(w->e, ERR_MEMORY_UNREADABLE, "'%.*s' is NULL.", SO_FAR(w));
    if (!v->type->target || v->type->target->kind == DWT_VOID)
        return bad(w, "is %s: what it points to has no type.", v->type_name);
    v->address = p;
    varres_set_type(v, v->type->target);
    return 0;
}

/* The member called name of struct/union t, looking into anonymous members and
 * base classes; its offset from the start of t in *off. */
static const struct dw_member *member_of(const struct dw_type *t, const char *name,
                                         size_t len, uint64_t *off, int nest)
{
    for (size_t i = 0; nest < MEMBER_NEST_MAX && i < t->n_members; i++) {
        const struct dw_member *m = &t->members[i];
        if (m->name && strlen(m->name) == len && memcmp(m->name, name, len) == 0) {
            *off = m->offset;
            return m;
        }
        if (!m->name && m->type &&
            (m->type->kind == DWT_STRUCT || m->type->kind == DWT_UNION)) {
            const struct dw_member *in = member_of(m->type, name, len, off, nest + 1);
            if (in) {
                *off += m->offset;
                return in;
            }
        }
    }
    return NULL;
}

bool varres_has_member(const struct dw_type *t, const char *name)
{
    uint64_t off;
    return t && (t->kind == DWT_STRUCT || t->kind == DWT_UNION) &&
           member_of(t, name, strlen(name), &off, 0);
}

static int no_member(struct walk *w, const struct dw_type *t, const struct varres_step *st)
{
    char list[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < t->n_members && len < sizeof list - 8; i++)
        if (t->members[i].name)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                    t->members[i].name);
    if (len >= sizeof list - 8)
        snprintf(list + sizeof list - 8, 8, ", ...");
    return bad(w, "has no member '%.*s'; %s has %s%s.", (int)st->name_len, st->name,
               type_label(t), len ? "members " : "no named members", list);
}

static int member(struct walk *w, const struct varres_step *st, int *derefs)
{
    struct varres *v = w->v;
    if (v->type->kind == DWT_REFERENCE && deref(w, derefs) != 0)
        return -1;
    bool is_pointer = v->type->kind == DWT_POINTER;
    const struct dw_type *target = is_pointer ? v->type->target : NULL;
    bool to_record = target && (target->kind == DWT_STRUCT || target->kind == DWT_UNION);
    if (st->kind == VS_MEMBER && is_pointer)
        return bad(w, "is a pointer (%s): use '%.*s->%.*s'.", v->type_name, SO_FAR(w),
                   (int)st->name_len, st->name);
    if (st->kind == VS_ARROW) {
        if (!is_pointer)
            return bad(w, "is not a pointer (%s)%s", v->type_name,
                       v->type->kind == DWT_STRUCT || v->type->kind == DWT_UNION
                           ? ": use '.' for its members." : ".");
        if (!to_record)
            return bad(w, "points to %s, which has no members.",
                       target ? type_label(target) : "void");
        if (deref(w, derefs) != 0)
            return -1;
    }
    const struct dw_type *t = v->type;
    if (t->kind != DWT_STRUCT && t->kind != DWT_UNION)
        return bad(w, "is %s, which has no members.", v->type_name);
    uint64_t off;
    const struct dw_member *m = member_of(t, st->name, st->name_len, &off, 0);
    if (!m)
        return no_member(w, t, st);
    if (m->bit_size)
        return bad(w, "has '%.*s' as a bit field, which has no address of its own: read "
                   "'%.*s' whole.", (int)st->name_len, st->name, SO_FAR(w));
    v->address += off;
    varres_set_type(v, m->type);
    return 0;
}

/* The value of the variable or path an index names ("scores[i]", "q->items[q->head]"):
 * a non-negative integer. */
static int index_value(struct walk *w, const struct varres_step *st, uint64_t *out)
{
    char name[MEMORY_EXPR_MAX + 1];
    snprintf(name, sizeof name, "%.*s", (int)st->name_len, st->name);
    struct varres iv;
    if (varres_resolve_in(w->p, name, &iv, w->e) != 0)
        return -1;
    const struct dw_type *t = iv.type;
    bool integer = t->kind == DWT_SIGNED || t->kind == DWT_UNSIGNED || t->kind == DWT_CHAR ||
                   t->kind == DWT_BOOL || t->kind == DWT_ENUM;
    uint64_t u = 0;
    if (!integer || iv.size == 0 || iv.size > sizeof u)
        return bad(w, "is indexed by '%s', which is %s, not an integer.", name, iv.type_name);
    if (iv.has_address ? !procmem_read(w->memfd, iv.address, &u, iv.size)
                       : (memcpy(&u, iv.bytes, iv.size), false))
        return err_set(w->e, ERR_MEMORY_UNREADABLE, "the index '%s' is unreadable.", name);
    if (value_int_signed(t) && iv.size < 8 && (u >> (8 * iv.size - 1)) & 1)
        return bad(w, "is indexed by '%s', which is negative.", name);
    if (value_int_signed(t) && iv.size == 8 && (int64_t)u < 0)
        return bad(w, "is indexed by '%s', which is negative.", name);
    *out = u;
    return 0;
}

/* A std::vector indexed as C++ indexes it (operator[]): v becomes the first element
 * of its buffer (_M_impl._M_start), which the caller offsets by index; an index past
 * its size (_M_finish) is read anyway, with a note. 1 when v is no std::vector. */
static int vector_element(struct walk *w, uint64_t index, int *derefs)
{
    struct varres *v = w->v;
    const struct dw_type *t = v->type;
    const char *name = t->name ? t->name : "";
    if (strncmp(name, "std::", 5) == 0)
        name += 5;
    if (t->kind != DWT_STRUCT || !t->system_header || strncmp(name, "vector<", 7) != 0 ||
        !v->has_address)
        return 1;
    uint64_t impl_off, start_off, finish_off;
    const struct dw_member *impl = member_of(t, "_M_impl", 7, &impl_off, 0);
    const struct dw_member *start = impl && impl->type
                                        ? member_of(impl->type, "_M_start", 8, &start_off, 0)
                                        : NULL;
    const struct dw_member *finish = impl && impl->type
                                         ? member_of(impl->type, "_M_finish", 9, &finish_off, 0)
                                         : NULL;
    if (!start || !finish || !start->type || start->type->kind != DWT_POINTER ||
        !start->type->target || !start->type->target->size)
        return 1;
    if (++*derefs > MEMORY_MAX_DEREFS)
        return bad(w, "dereferences more than %d pointers.", MEMORY_MAX_DEREFS);
    uint64_t first = 0, end = 0, at = v->address + impl_off;
    if (!procmem_read(w->memfd, at + start_off, &first, 8) ||
        !procmem_read(w->memfd, at + finish_off, &end, 8))
        return err_set(w->e, ERR_MEMORY_UNREADABLE, "'%.*s' at 0x%" PRIx64 " is unreadable.",
                       SO_FAR(w), v->address);
    uint64_t size = end > first ? (end - first) / start->type->target->size : 0;
    if (index >= size && !v->note[0])
        snprintf(v->note, sizeof v->note, "'%.*s' holds %" PRIu64 " elements: index %" PRIu64
                 " is past its size, read anyway as operator[] would", SO_FAR(w), size,
                 index);
    v->address = first;
    varres_set_type(v, start->type->target);
    return 0;
}

static int element(struct walk *w, const struct varres_step *st, int *derefs)
{
    struct varres *v = w->v;
    uint64_t index = st->index;
    if (st->name && index_value(w, st, &index) != 0)
        return -1;
    if (v->type->kind == DWT_REFERENCE && deref(w, derefs) != 0) /* values[3] of a & */
        return -1;
    if (v->type->kind == DWT_POINTER) {
        if (deref(w, derefs) != 0)
            return -1;
    } else if (v->type->kind == DWT_ARRAY) {
        const struct dw_type *elem = v->type->target;
        /* Past the end is read as C reads it (what an overflow bug wrote), with a note;
         * the bytes' owner is named once the address is final (name_past_end). */
        if (v->type->count && index >= v->type->count && !v->note[0])
            snprintf(v->note, sizeof v->note, "'%.*s' has %" PRIu64 " elements (%s): index "
                     "%" PRIu64 " is past its end, read anyway as C would", SO_FAR(w),
                     v->type->count, v->type_name, index);
        varres_set_type(v, elem);
    } else {
        int rc = vector_element(w, index, derefs);
        if (rc < 0)
            return -1;
        if (rc > 0)
            return bad(w, "is %s: only arrays, pointers and std::vector can be indexed.",
                       v->type_name);
    }
    if (!v->size)
        return bad(w, "has elements of unknown size (%s).", v->type_name);
    if (index > UINT64_MAX / v->size)
        return bad(w, "cannot be indexed by %" PRIu64 ".", index);
    v->address += index * v->size;
    return 0;
}

/* Ends v's past-the-end note with the variable whose bytes v reads, when a global
 * or static holds them ("... : those bytes are g_report.requests"). */
static void name_past_end(struct varres_process *p, struct varres *v)
{
    struct strobe_error e;
    if (!v->note[0] || !v->has_address || modules(p, &e) != 0)
        return;
    struct modules ms = {.m = p->mods, .n = p->n_mods};
    char *owner = symbolize_module_global_at(&ms, v->address);
    size_t len = strlen(v->note);
    if (owner)
        snprintf(v->note + len, sizeof v->note - len, ": those bytes are %s.", owner);
    else
        snprintf(v->note + len, sizeof v->note - len, " (no variable is known there).");
    free(owner);
}

int varres_resolve(pid_t pid, int memfd, const char *expr, struct varres *out,
                   struct strobe_error *e)
{
    struct varres_process p;
    varres_process_open(&p, pid, memfd);
    int rc = varres_resolve_in(&p, expr, out, e);
    varres_process_close(&p);
    return rc;
}

/* A name the frame does not have, as a member of the frame's object, as C++ looks
 * names up (locals, then members, then globals): expr resolved as this->expr. 0 when
 * it is one, 1 when not (no `this`, or no such member), -1 when it is one that fails
 * (e set: unreadable, say). */
static int member_of_this(struct varres_process *p, const char *expr,
                          const struct varres_expr *x, struct varres *out,
                          struct strobe_error *e)
{
    struct varres self;
    struct strobe_error ignored = {0};
    if (strcmp(x->root, "this") == 0 ||
        p->frame(p->frame_ctx, "this", &self, &ignored) != 0 ||
        self.type->kind != DWT_POINTER || !varres_has_member(self.type->target, x->root))
        return 1;
    char rewritten[MEMORY_EXPR_MAX + 16];
    snprintf(rewritten, sizeof rewritten, "%.*sthis->%s", (int)x->root_start, expr,
             expr + x->root_start);
    return varres_resolve_in(p, rewritten, out, e) == 0 ? 0 : -1;
}

int varres_resolve_in(struct varres_process *p, const char *expr, struct varres *out,
                      struct strobe_error *e)
{
    struct varres_expr x;
    int memfd = p->memfd;
    if (varres_parse(expr, &x, e) != 0)
        return -1;
    *out = (struct varres){.regno = -1};
    int local = p->frame ? p->frame(p->frame_ctx, x.root, out, e) : 1;
    if (local > 0 && p->frame) {
        int member = member_of_this(p, expr, &x, out, e);
        if (member <= 0)
            return member;
        *out = (struct varres){.regno = -1};
    }
    if (local < 0 || (local > 0 && find_root(p, x.root, out, e) != 0))
        return -1;
    struct walk w = {expr, p, memfd, out, x.root_start, x.root_end, e};
    bool pointer_value = !out->has_address && out->size == 8 &&
                         out->type->kind == DWT_POINTER;
    if (x.n_steps && !out->has_address && !(pointer_value && x.steps[0].kind != VS_MEMBER))
        return bad(&w, "is a constant with no address: read it whole.");
    int derefs = 0;
    for (int i = 0; i < x.n_steps; i++) {
        const struct varres_step *st = &x.steps[i];
        if ((st->kind == VS_INDEX ? element(&w, st, &derefs) : member(&w, st, &derefs)) != 0)
            return -1;
        w.text_end = st->end;
    }
    for (int i = 0; i < x.stars; i++) {
        if (out->type->kind == DWT_ARRAY) {
            varres_set_type(out, out->type->target);
        } else if (out->type->kind != DWT_POINTER && out->type->kind != DWT_REFERENCE) {
            return bad(&w, "dereferences %s, which is not a pointer.", out->type_name);
        } else if (deref(&w, &derefs) != 0) {
            return -1;
        }
    }
    name_past_end(p, out);
    unsigned char probe;
    if (out->has_address && out->size && !procmem_read(memfd, out->address, &probe, 1))
        return err_set(e, ERR_MEMORY_UNREADABLE, "'%s' at 0x%" PRIx64 " is unreadable%s%s",
                       expr, out->address, out->note[0] ? ": " : ".", out->note);
    return 0;
}

bool varres_render(mem_read_fn rd, void *rd_ctx, const struct varres *v, int depth,
                   bool depth_asked, struct strbuf *json)
{
    /* A variable read by name: a union whole, as gdb prints it; system structs
     * opaque unless the depth was asked for. */
    struct value_opts o = {.max_depth = depth, .depth_asked = depth_asked,
                           .unions_whole = true};
    if (!v->has_address) {
        value_json(json, v->type, v->bytes, rd, rd_ctx, &o);
        return true;
    }
    unsigned char probe;
    if (v->size && !rd(rd_ctx, v->address, &probe, 1)) {
        sb_printf(json, "\"<unreadable 0x%" PRIx64 ">\"", v->address);
        return false;
    }
    value_json_at(json, v->type, v->address, rd, rd_ctx, &o);
    return true;
}
