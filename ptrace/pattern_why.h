/*
 * pattern_why.h - why a trace pattern matches nothing, in one sentence naming it, for
 * debug_trace's per-pattern warnings (resolve.c): near names (a typo), inlined into
 * every caller, a glibc IFUNC and its CPU variants, no debug info and no symbol, a
 * wildcard that would only match in system libraries, a library not loaded yet.
 */
#ifndef STROBE_PATTERN_WHY_H
#define STROBE_PATTERN_WHY_H

#include <stdbool.h>
#include <stddef.h>

#include "dwarf/dwarf.h"

/* What a pattern was resolved against: the program's index (NULL: unreadable) and
 * the libraries' that were indexed (system ones only for an exact name). */
struct pattern_scope {
    const struct dw_index *exe;
    bool exe_has_dwarf;
    const struct dw_index *const *libs;
    size_t n_libs;
};

/* The sentence for pat, which matched nothing in s, into out (n bytes). */
void pattern_why_none(const struct pattern_scope *s, const char *pat, char *out, size_t n);

/* An exact name of a library function chosen by IFUNC (memcpy, strlen): calls run a
 * CPU variant it does not hook (it matches at most a compat or ld.so copy). True with
 * the sentence in out when pat names one, even though it matched. */
bool pattern_why_ifunc(const struct pattern_scope *s, const char *pat, char *out, size_t n);

#endif
