/*
 * frame.c - the variables of one frame (frame.h): their values as JSON, where one
 * variable lives, and which one holds or points to an address. The files come from
 * the cache of open files (openfiles.c), the scopes at an address from scopes.c, the
 * source sites from sites.c; evaluating where each variable lives is location.c's
 * business.
 *
 * The inlined copy of a function lists its parameters and variables as concrete DIEs
 * pointing at the abstract ones (DW_AT_abstract_origin), not always in declaration
 * order (gcc writes a callee's parameters in the order it evaluated them): the
 * variables of a scope are sorted by the offset of their abstract DIE.
 */
#include "dwarf/frame.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_internal.h"
#include "dwarf/varpath.h"

enum { MAX_VARS = 64 }; /* entries of one JSON array before "(N more)" */

/* One string kept in a file's arena, handed out once per distinct text. */
struct interned {
    struct interned *next;
    const char *text;
};

/* One call's state: where variables are read from (location.c) and what they are
 * rendered with. */
struct eval {
    struct dw_file *f;
    struct dw_frame_ctx loc;
    const struct value_opts *o;
    struct member {
        Dwarf_Die die;
        Dwarf_Off key;          /* offset of the abstract DIE: declaration order */
        bool param;
    } *members;                 /* scratch: the variables of one scope */
    size_t cap_members;
    /* The line of pc when no inlined call holds it (0: unknown), and its file: a
     * variable of the function declared below it is not in scope yet. */
    int pc_line;
    char *pc_file;
};

/* An evaluation of the variables of scopes c at link-time address pc of f. */
static struct eval eval_at(struct dw_file *f, struct dw_scopes *c, uint64_t pc, uint64_t bias,
                           const struct dw_regs *regs, mem_read_fn rd, void *ctx)
{
    return (struct eval){
        .f = f,
        .loc = {.cfi = {f->eh_cfi, dwarf_getcfi(f->dw)}, .pc = pc, .bias = bias,
                .regs = regs, .rd = rd, .ctx = ctx, .fn = &c->dies[c->fn]},
    };
}

/* The value of variable die of type t as JSON. Registers and computed values are
 * rendered from their low t->size bytes (x86-64 is little-endian). */
static void write_value(struct eval *e, struct strbuf *out, Dwarf_Die *die,
                        const struct dw_type *t)
{
    struct dw_loc l = {0};
    uint64_t v;
    dw_locate(&e->loc, die, &l);
    switch (l.kind) {
    case DW_LOC_NONE:
        sb_json_string(out, "<optimized out>");
        return;
    case DW_LOC_MEM:
        value_json_at(out, t, l.v, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_BYTES:
        if (t && t->size > l.len) {
            snprintf(l.why, sizeof l.why, "%zu bytes for a %" PRIu64 "-byte type", l.len,
                     t->size);
            break;
        }
        value_json(out, t, l.bytes, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_REG:
    case DW_LOC_VALUE:
        if (!dw_loc_word(&e->loc, &l, &v))
            break;
        if (t && t->size > sizeof v) {
            snprintf(l.why, sizeof l.why, "%" PRIu64 "-byte value in 8 bytes", t->size);
            break;
        }
        value_json(out, t, &v, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_FAIL:
        break;
    }
    char text[DW_LOC_WHY_MAX + 32];
    snprintf(text, sizeof text, "<unavailable: %s>", l.why);
    sb_json_string(out, text);
}

static const char *type_label(const struct dw_type *t)
{
    if (!t)
        return "void";
    if (t->name)
        return t->name;
    switch (t->kind) {
    case DWT_STRUCT:
        return "(anonymous struct)";
    case DWT_UNION:
        return "(anonymous union)";
    case DWT_ENUM:
        return "(anonymous enum)";
    default:
        return "?";
    }
}

/* ---- the variables ---- */

/* One JSON array being written. */
struct vlist {
    struct strbuf *out;
    size_t start;   /* out->len after "[" */
    size_t budget;  /* bytes of entries before the rest are only counted */
    size_t n, more;
};

/* The line of a variable of the function declared below pc's line in the same file,
 * not static (a static has its value from the start), or 0: C gives it no value
 * there yet, and what its stack slot holds is an earlier call's leftover. */
static int declared_below(struct eval *e, Dwarf_Die *die)
{
    Dwarf_Word line = 0;
    Dwarf_Attribute at;
    Dwarf_Op *ops;
    size_t n_ops;
    if (!e->pc_line || dwarf_tag(die) != DW_TAG_variable ||
        dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_line, &at), &line) != 0 ||
        (int)line <= e->pc_line)
        return 0;
    if (dwarf_getlocation(dwarf_attr_integrate(die, DW_AT_location, &at), &ops, &n_ops) == 0 &&
        n_ops > 0 && (ops[0].atom == DW_OP_addr || ops[0].atom == DW_OP_addrx))
        return 0;
    const char *file = dwarf_decl_file(die);
    const char *a = file ? strrchr(file, '/') : NULL, *b = strrchr(e->pc_file, '/');
    if (!file || strcmp(a ? a + 1 : file, b ? b + 1 : e->pc_file) != 0)
        return 0;
    return (int)line;
}

static void write_var(struct eval *e, struct vlist *vl, Dwarf_Die *die)
{
    if (vl->n == MAX_VARS || vl->out->len - vl->start >= vl->budget) {
        vl->more++;
        return;
    }
    const struct dw_type *t = type_conv_of(e->f->tc, die);
    sb_puts(vl->out, vl->n++ ? ",{\"name\":" : "{\"name\":");
    sb_json_string(vl->out, dw_attr_string(die, DW_AT_name));
    sb_puts(vl->out, ",\"type\":");
    sb_json_string(vl->out, type_label(t));
    sb_puts(vl->out, ",\"value\":");
    int below = declared_below(e, die);
    if (below)
        sb_printf(vl->out, "\"<not declared yet: line %d, below this one>\"", below);
    else
        write_value(e, vl->out, die, t);
    sb_puts(vl->out, "}");
}

static int cmp_member(const void *x, const void *y)
{
    const struct member *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* The parameters and variables declared directly in scope, in declaration order, into
 * e->members; returns how many. */
static size_t scope_members(struct eval *e, Dwarf_Die *scope)
{
    size_t n = 0;
    Dwarf_Die c;
    if (dwarf_child(scope, &c) == 0)
        do {
            int tag = dwarf_tag(&c);
            Dwarf_Attribute at;
            bool artificial = false;
            if ((tag != DW_TAG_formal_parameter && tag != DW_TAG_variable) ||
                !dw_attr_string(&c, DW_AT_name) || dwarf_hasattr_integrate(&c, DW_AT_declaration))
                continue;
            dwarf_formflag(dwarf_attr_integrate(&c, DW_AT_artificial, &at), &artificial);
            if (artificial && tag == DW_TAG_variable)
                continue;
            if (n == e->cap_members) {
                e->cap_members = e->cap_members ? 2 * e->cap_members : 32;
                e->members = realloc(e->members, e->cap_members * sizeof *e->members);
                if (!e->members)
                    abort();
            }
            Dwarf_Die origin = dw_die_origin(&c, false);
            e->members[n++] = (struct member){c, dwarf_dieoffset(&origin),
                                              tag == DW_TAG_formal_parameter};
        } while (dwarf_siblingof(&c, &c) == 0);
    if (n > 1)
        qsort(e->members, n, sizeof *e->members, cmp_member);
    return n;
}

static void scope_vars(struct eval *e, Dwarf_Die *scope, struct vlist *params,
                       struct vlist *locals)
{
    size_t n = scope_members(e, scope);
    for (size_t i = 0; i < n; i++)
        write_var(e, e->members[i].param ? params : locals, &e->members[i].die);
}

static void vlist_end(struct vlist *vl)
{
    if (vl->more)
        sb_printf(vl->out, "%s{\"name\":\"...\",\"value\":\"(%zu more)\"}", vl->n ? "," : "",
                  vl->more);
    sb_puts(vl->out, "]");
}

int dw_frame_vars_json(struct strbuf *params, struct strbuf *locals, const char *path,
                       uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                       mem_read_fn rd, void *ctx, const struct value_opts *o)
{
    size_t budget = 4 * (o && o->max_output ? o->max_output : VALUE_DEFAULT_MAX_OUTPUT);
    sb_puts(params, "[");
    sb_puts(locals, "[");
    struct vlist pl = {params, params->len, budget, 0, 0};
    struct vlist ll = {locals, locals->len, budget, 0, 0};
    int rc = -1;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        e.o = o;
        struct dw_site here = {0};
        bool inlined = false;
        for (size_t i = 0; i < c.fn; i++)
            inlined |= dwarf_tag(&c.dies[i]) == DW_TAG_inlined_subroutine;
        if (!inlined)
            dw_site_of_pc(&c.cu, pc, &here);
        e.pc_line = here.file ? here.line : 0;
        e.pc_file = here.file;
        for (size_t i = 0; i <= c.fn; i++)
            scope_vars(&e, &c.dies[i], &pl, &ll);
        free(here.file);
        free(e.members);
        free(c.dies);
        rc = 0;
    }
    dw_files_unlock();
    vlist_end(&pl);
    vlist_end(&ll);
    return rc;
}

/* ---- one variable's place ---- */

/* The copy of text kept in f's arena (one per distinct text, so repeated lookups do
 * not grow it). */
static const char *intern(struct dw_file *f, const char *text)
{
    for (struct interned *i = f->strings; i; i = i->next)
        if (strcmp(i->text, text) == 0)
            return i->text;
    struct interned *i = arena_alloc(&f->arena, sizeof *i);
    i->text = arena_strdup(&f->arena, text);
    i->next = f->strings;
    f->strings = i;
    return i->text;
}

/* The declaration file of die, absolute when DWARF gives a path. */
static const char *decl_file_of(struct dw_file *f, Dwarf_Die *die)
{
    const char *name = dwarf_decl_file(die);
    Dwarf_Die cu;
    if (!name || !dwarf_diecu(die, &cu, NULL, NULL))
        return NULL;
    char *abs = dw_cu_absolute_path(&cu, name);
    const char *kept = intern(f, abs ? abs : name);
    free(abs);
    return kept;
}

/* Reports where variable die is; 0, or -1 with the reason in err. */
static int place_of(struct eval *e, Dwarf_Die *die, struct dw_var_where *out, char *err,
                    size_t errlen)
{
    struct dw_loc l = {0};
    dw_locate(&e->loc, die, &l);
    switch (l.kind) {
    case DW_LOC_NONE:
        snprintf(err, errlen, "optimized out at this point");
        return -1;
    case DW_LOC_MEM:
        out->kind = DWV_MEMORY;
        out->address = l.v;
        return 0;
    case DW_LOC_REG:
        out->kind = DWV_REGISTER;
        out->regno = (int)l.v;
        return 0;
    case DW_LOC_VALUE:
        if (out->type->size > sizeof l.v) {
            snprintf(err, errlen, "%" PRIu64 "-byte value in 8 bytes", out->type->size);
            return -1;
        }
        out->kind = DWV_VALUE;
        out->n_bytes = out->type->size ? out->type->size : sizeof l.v;
        for (size_t i = 0; i < sizeof l.v; i++)
            out->bytes[i] = (unsigned char)(l.v >> (8 * i));
        return 0;
    case DW_LOC_BYTES:
        if (l.len > sizeof out->bytes) {
            snprintf(err, errlen, "a %zu-byte constant (at most %zu bytes are reported)", l.len,
                     sizeof out->bytes);
            return -1;
        }
        out->kind = DWV_VALUE;
        out->n_bytes = l.len;
        memcpy(out->bytes, l.bytes, l.len);
        return 0;
    case DW_LOC_FAIL:
        break;
    }
    snprintf(err, errlen, "%s", l.why);
    return -1;
}

enum { MAX_LISTED = 16 }; /* names listed when a variable is not in scope */

/* Adds name to the list in sb unless listed already; counts it in *n. */
static void list_name(struct strbuf *sb, const char **listed, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n && i < MAX_LISTED; i++)
        if (strcmp(listed[i], name) == 0)
            return;
    if (*n < MAX_LISTED) {
        sb_puts(sb, *n ? ", " : "in scope here: ");
        sb_puts(sb, name);
        listed[*n] = name;
    } else if (*n == MAX_LISTED) {
        sb_puts(sb, ", ...");
    }
    (*n)++;
}

int dw_frame_var_find(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                      mem_read_fn rd, void *ctx, const char *name, struct dw_var_where *out,
                      struct strobe_error *err)
{
    *out = (struct dw_var_where){0};
    if (err)
        *err = (struct strobe_error){0};
    char why[DW_LOC_WHY_MAX] = "";
    int rc = 1;
    struct strbuf names = {0};
    const char *listed[MAX_LISTED];
    size_t n_listed = 0;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        for (size_t i = 0; i <= c.fn && rc == 1; i++) {
            size_t n = scope_members(&e, &c.dies[i]);
            for (size_t k = 0; k < n && rc == 1; k++) {
                Dwarf_Die *die = &e.members[k].die;
                const char *var = dw_attr_string(die, DW_AT_name);
                if (strcmp(var, name) != 0) {
                    list_name(&names, listed, &n_listed, var);
                    continue;
                }
                const struct dw_type *t = type_conv_of(f->tc, die);
                out->type = t ? t : type_conv_unknown(f->tc);
                out->is_param = e.members[k].param;
                out->decl_file = decl_file_of(f, die);
                dwarf_decl_line(die, &out->decl_line);
                rc = place_of(&e, die, out, why, sizeof why);
            }
        }
        free(e.members);
        free(c.dies);
    }
    dw_files_unlock();
    if (rc == 1)
        err_set(err, ERR_VARIABLE_NOT_FOUND, "%s",
                n_listed && !names.oom ? names.buf : "nothing is in scope here");
    else if (rc < 0)
        err_set(err, ERR_VARIABLE_UNAVAILABLE, "%s", why);
    sb_free(&names);
    return rc;
}

/* ---- the variable that holds or points to an address ---- */

/* The word variable die of pointer type holds, at place w; false when unreadable. */
static bool pointer_value(const struct eval *e, const struct dw_var_where *w, uint64_t *p)
{
    switch (w->kind) {
    case DWV_MEMORY:
        return e->loc.rd(e->loc.ctx, w->address, p, sizeof *p);
    case DWV_REGISTER:
        if (!e->loc.regs || w->regno < 0 || w->regno > 16 ||
            !(e->loc.regs->known & (1u << w->regno)))
            return false;
        *p = e->loc.regs->val[w->regno];
        return true;
    case DWV_VALUE:
        *p = 0;
        memcpy(p, w->bytes, w->n_bytes < sizeof *p ? w->n_bytes : sizeof *p);
        return true;
    }
    return false;
}

/* Appends to out the name of addr inside variable die (at w) when it holds addr or
 * points to an object that does. */
static bool names_address(const struct eval *e, Dwarf_Die *die, const struct dw_var_where *w,
                          uint64_t addr, struct strbuf *out)
{
    const struct dw_type *t = w->type;
    const char *name = dw_attr_string(die, DW_AT_name);
    size_t start = out->len;
    uint64_t p;
    if (w->kind == DWV_MEMORY && addr >= w->address && addr - w->address < t->size) {
        sb_puts(out, name);
        if (dw_member_path(t, addr - w->address, out))
            return true;
    } else if (t->kind == DWT_POINTER && t->target && t->target->size &&
               pointer_value(e, w, &p) && addr >= p && addr - p < t->target->size) {
        struct strbuf path = {0};
        if (dw_member_path(t->target, addr - p, &path)) {
            if (!path.len)
                sb_printf(out, "*%s", name);
            else if (path.buf[0] == '.')
                sb_printf(out, "%s->%s", name, path.buf + 1);
            else
                sb_printf(out, "(*%s)%s", name, path.buf);
            sb_free(&path);
            return true;
        }
        sb_free(&path);
    }
    out->len = start;
    if (out->buf)
        out->buf[start] = '\0';
    return false;
}

bool dw_frame_var_at(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                     mem_read_fn rd, void *ctx, uint64_t addr, struct strbuf *out)
{
    bool found = false;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        for (size_t i = 0; i <= c.fn && !found; i++) {
            size_t n = scope_members(&e, &c.dies[i]);
            for (size_t k = 0; k < n && !found; k++) {
                Dwarf_Die *die = &e.members[k].die;
                const struct dw_type *t = type_conv_of(f->tc, die);
                struct dw_var_where w = {.type = t ? t : type_conv_unknown(f->tc)};
                char err[DW_LOC_WHY_MAX];
                found = place_of(&e, die, &w, err, sizeof err) == 0 &&
                        names_address(&e, die, &w, addr, out);
            }
        }
        free(e.members);
        free(c.dies);
    }
    dw_files_unlock();
    return found;
}
