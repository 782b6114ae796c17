/*
 * demangle.c - symbol demangling for the index and for callers of dwarf.h, with libiberty's
 * cplus_demangle. DMGL_PARAMS | DMGL_ANSI without DMGL_RUST lets it detect the scheme
 * itself: C++ (_Z...), Rust legacy (_ZN...17h<hash>E, the hash is stripped because
 * DMGL_VERBOSE is off) and Rust v0 (_R...). With DMGL_RUST set, C++ would come back NULL.
 * Plain C++ symbols go straight to cplus_demangle_v3, which is what cplus_demangle calls
 * first anyway. cplus_demangle keeps no global state, so any thread may call it.
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

bool dw_demangle_both(const char *sym, char **plain, char **full)
{
    /* Two calls of the public API. Parsing once through cplus_demangle_v3_components
     * saved a few percent of an index build but makes libiberty read uninitialised
     * component memory (valgrind), so it is not worth it. */
    *plain = dw_demangle(sym, false);
    *full = *plain ? dw_demangle(sym, true) : NULL;
    return *plain != NULL;
}
