/*
 * scopes.c - the scopes that physically contain an address (dwarf_internal.h,
 * dw_scopes_at), and the DIE helpers the frame inspector's files share: the CU of an
 * address, the origin of a DIE, a string attribute.
 *
 * The scopes at an address are the DIEs that physically contain it, found by walking
 * the DIE tree of its CU: innermost first, lexical blocks and inlined subroutines, up
 * to the first DW_TAG_subprogram, the out-of-line function whose frame this is.
 * libdw's dwarf_getscopes does not serve: from an inlined subroutine it goes on into
 * the abstract origin's scopes (skipping the caller), and (0.188) it does not look
 * inside namespaces, so it finds no Rust function and no C++ lambda.
 */
#include <dwarf.h>
#include <stdlib.h>

#include "dwarf/dwarf_internal.h"

/* The address ranges of every function DIE with code in one CU, sorted by start:
 * a lookup then walks one function's subtree instead of the whole CU (Rust's std is
 * a few CUs of tens of thousands of DIEs: 3 ms a walk, 24 frames a panic). */
struct fn_range {
    uint64_t lo, hi;
    Dwarf_Off die;
};

struct cu_functions {
    Dwarf_Off cu;
    struct fn_range *r;
    size_t n, cap;
    struct cu_functions *next;
};

/* Some producers write no .debug_aranges: then each CU is asked. */
bool dw_cu_at(Dwarf *dw, uint64_t pc, Dwarf_Die *cu)
{
    if (dwarf_addrdie(dw, pc, cu))
        return true;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        if (dwarf_offdie(dw, off + hsize, cu) && dwarf_haspc(cu, pc) > 0)
            return true;
        off = next;
    }
    return false;
}

static void push_die(struct dw_scopes *c, Dwarf_Die *d)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->dies = realloc(c->dies, c->cap * sizeof *c->dies);
        if (!c->dies)
            abort();
    }
    c->dies[c->n++] = *d;
}

/* Searches the children of parent for the innermost DIE of code holding pc, and on
 * the way back appends it and the scopes of code around it to c (innermost first).
 * Besides the scopes holding pc it descends into namespaces, modules, classes and,
 * for the local classes they hold (a lambda's operator() is defined in a class in the
 * function that writes it), into functions and blocks that do not hold pc. */
static bool find_pc(Dwarf_Die *parent, uint64_t pc, struct dw_scopes *c, int depth)
{
    Dwarf_Die d;
    if (depth > DW_DIE_DEPTH_MAX || dwarf_child(parent, &d) != 0)
        return false;
    do {
        switch (dwarf_tag(&d)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&d, pc) > 0) {
                find_pc(&d, pc, c, depth + 1);
                push_die(c, &d);
                return true;
            }
            /* fall through */
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            if (find_pc(&d, pc, c, depth + 1))
                return true;
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&d, &d) == 0);
    return false;
}

static void add_ranges(struct cu_functions *t, Dwarf_Die *fn)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(fn, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 64;
            t->r = realloc(t->r, t->cap * sizeof *t->r);
            if (!t->r)
                abort();
        }
        t->r[t->n++] = (struct fn_range){lo, hi, dwarf_dieoffset(fn)};
    }
}

/* Every function with code under parent, where find_pc would look for one. */
static void collect_functions(struct cu_functions *t, Dwarf_Die *parent, int depth)
{
    Dwarf_Die d;
    if (depth > DW_DIE_DEPTH_MAX || dwarf_child(parent, &d) != 0)
        return;
    do {
        switch (dwarf_tag(&d)) {
        case DW_TAG_subprogram:
            /* Local classes of a function hold functions of their own. */
            add_ranges(t, &d);
            /* fall through */
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            collect_functions(t, &d, depth + 1);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&d, &d) == 0);
}

static int range_cmp(const void *a, const void *b)
{
    const struct fn_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct cu_functions *cu_functions(struct dw_file *f, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (struct cu_functions *t = f->cus; t; t = t->next)
        if (t->cu == off)
            return t;
    struct cu_functions *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->cu = off;
    collect_functions(t, cu, 0);
    if (t->n > 1)
        qsort(t->r, t->n, sizeof *t->r, range_cmp);
    t->next = f->cus;
    f->cus = t;
    return t;
}

/* The smallest function range holding pc (ranges nest when a function's DIE holds
 * another's, never otherwise). */
static const struct fn_range *function_at(const struct cu_functions *t, uint64_t pc)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* first range starting after pc */
        size_t mid = (lo + hi) / 2;
        if (t->r[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct fn_range *best = NULL;
    for (size_t i = lo; i-- > 0;)
        if (pc < t->r[i].hi && (!best || t->r[i].hi - t->r[i].lo < best->hi - best->lo))
            best = &t->r[i];
    return best;
}

bool dw_scopes_at(struct dw_file *f, uint64_t pc, struct dw_scopes *c)
{
    *c = (struct dw_scopes){0};
    if (!f->dw || !dw_cu_at(f->dw, pc, &c->cu))
        return false;
    const struct fn_range *r = function_at(cu_functions(f, &c->cu), pc);
    Dwarf_Die fn;
    if (!r || !dwarf_offdie(f->dw, r->die, &fn))
        return false;
    find_pc(&fn, pc, c, 1);
    push_die(c, &fn);
    c->fn = c->n - 1;
    return true;
}

void dw_cu_functions_free(struct cu_functions *t)
{
    while (t) {
        struct cu_functions *next = t->next;
        free(t->r);
        free(t);
        t = next;
    }
}

const char *dw_attr_string(Dwarf_Die *die, int name)
{
    Dwarf_Attribute at;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &at));
}

Dwarf_Die dw_die_origin(Dwarf_Die *die, bool with_spec)
{
    Dwarf_Die d = *die;
    Dwarf_Attribute at;
    for (int hops = 0; hops < 8; hops++)
        if (!(dwarf_attr(&d, DW_AT_abstract_origin, &at) ||
              (with_spec && dwarf_attr(&d, DW_AT_specification, &at))) ||
            !dwarf_formref_die(&at, &d))
            break;
    return d;
}
