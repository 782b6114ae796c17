/*
 * demangle.c - symbol demangling for the index and for callers of dwarf.h, with
 * libiberty's cplus_demangle. DMGL_PARAMS | DMGL_ANSI without DMGL_RUST lets it detect
 * the scheme itself: C++ (_Z...), Rust legacy (_ZN...17h<hash>E, the hash is stripped
 * because DMGL_VERBOSE is off) and Rust v0 (_R...). With DMGL_RUST set, C++ would
 * come back NULL. cplus_demangle keeps no global state, so any thread may call it.
 */
#include <libiberty/demangle.h>

#include "dwarf/dwarf.h"

char *dw_demangle(const char *sym, bool params)
{
    if (!sym || sym[0] != '_' || (sym[1] != 'Z' && sym[1] != 'R'))
        return NULL;
    return cplus_demangle(sym, DMGL_ANSI | (params ? DMGL_PARAMS : 0));
}
