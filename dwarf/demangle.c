/*
 * demangle.c - symbol demangling for the index and for callers of dwarf.h, with
 * libiberty's cplus_demangle. DMGL_PARAMS | DMGL_ANSI without DMGL_RUST lets it detect
 * the scheme itself: C++ (_Z...), Rust legacy (_ZN...17h<hash>E, the hash is stripped
 * because DMGL_VERBOSE is off) and Rust v0 (_R...). With DMGL_RUST set, C++ would
 * come back NULL. Plain C++ symbols go straight to cplus_demangle_v3, which is what
 * cplus_demangle calls first anyway. cplus_demangle keeps no global state, so any thread may call it.
 *
 * The index wants both forms of every C++ name (with and without parameters):
 * dw_demangle_both parses the symbol once and prints the tree twice, since parsing is
 * half the cost of a demangling and an index build demangles every function.
 */
#include <ctype.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_internal.h"

/* Whether a _Z symbol has the Rust legacy hash suffix "17h" + 16 hex digits + "E". */
static bool rust_legacy_hash(const char *sym)
{
    size_t n = strlen(sym);
    if (n < 24 || sym[n - 1] != 'E' || memcmp(sym + n - 20, "17h", 3) != 0)
        return false;
    for (size_t i = n - 17; i < n - 1; i++)
        if (!isxdigit((unsigned char)sym[i]))
            return false;
    return true;
}

char *dw_demangle(const char *sym, bool params)
{
    if (!sym || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
        return NULL;
    int opts = DMGL_ANSI | (params ? DMGL_PARAMS : 0);
    /* cplus_demangle runs the Rust checker on every C++ result; skipping it for
     * plain C++ symbols saves a tenth of an index build */
    if (sym[1] == 'Z' && !rust_legacy_hash(sym))
        return cplus_demangle_v3(sym, opts);
    return cplus_demangle(sym, opts);
}

static bool is_fnqual(enum demangle_component_type t)
{
    return t == DEMANGLE_COMPONENT_RESTRICT_THIS || t == DEMANGLE_COMPONENT_VOLATILE_THIS ||
           t == DEMANGLE_COMPONENT_CONST_THIS || t == DEMANGLE_COMPONENT_REFERENCE_THIS ||
           t == DEMANGLE_COMPONENT_RVALUE_REFERENCE_THIS ||
           t == DEMANGLE_COMPONENT_TRANSACTION_SAFE || t == DEMANGLE_COMPONENT_NOEXCEPT ||
           t == DEMANGLE_COMPONENT_THROW_SPEC;
}

static struct demangle_component *strip_fnquals(struct demangle_component *c)
{
    while (c && is_fnqual(c->type))
        c = c->u.s_binary.left;
    return c;
}

bool dw_demangle_both(const char *sym, char **plain, char **full)
{
    *plain = *full = NULL;
    if (!sym || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
        return false;
    void *mem = NULL;
    struct demangle_component *dc =
        sym[1] == 'Z' && !rust_legacy_hash(sym)
            ? cplus_demangle_v3_components(sym, DMGL_PARAMS | DMGL_ANSI, &mem)
            : NULL;
    if (!dc) { /* Rust, or what only the parameterless demangling accepts */
        free(mem);
        *plain = dw_demangle(sym, false);
        *full = *plain ? dw_demangle(sym, true) : NULL;
        return *plain != NULL;
    }
    size_t size;
    *full = cplus_demangle_print(DMGL_PARAMS | DMGL_ANSI, dc, 64, &size);
    /* What the parser returns without DMGL_PARAMS (cp-demangle.c, d_encoding): the
     * name of the typed name, without the qualifiers of `this`, also on the last
     * component of a local name. */
    struct demangle_component *name =
        strip_fnquals(dc->type == DEMANGLE_COMPONENT_TYPED_NAME ? dc->u.s_binary.left : dc);
    struct demangle_component local;
    if (name && name->type == DEMANGLE_COMPONENT_LOCAL_NAME) {
        local = *name;
        local.u.s_binary.right = strip_fnquals(name->u.s_binary.right);
        name = &local;
    }
    *plain = name ? cplus_demangle_print(DMGL_ANSI, name, 64, &size) : NULL;
    free(mem);
    if (!*plain) {
        free(*full);
        *full = NULL;
    }
    return *plain != NULL;
}
