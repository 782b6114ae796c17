/*
 * match.h - whether a trace pattern selects a function of a native program: the
 * adapter between the name rules of base/pattern_match.h and what DWARF says about
 * a function (its names, its aliases, the file that declares it).
 */
#ifndef STROBE_MATCH_H
#define STROBE_MATCH_H

#include <stdbool.h>

#include "dwarf/dwarf.h"

/* Whether pattern (well formed per pattern_check) selects f:
 * - "@usercode": f->decl_file is below project_root (textual path prefix on a
 *   '/' boundary; trailing slashes of project_root ignored; no ".." resolution).
 *   False when either is NULL or project_root is empty.
 * - "@file:NAME": f->decl_file contains NAME.
 * - otherwise pattern_match_name on f->name or on one of f->aliases, or the pattern
 *   equals f->linkage_name. */
bool match_function(const char *pattern, const struct dw_function *f,
                    const char *project_root);

/* The name a hit of pattern on f is reported by: of f's name and its aliases, those
 * the pattern matches (every one for NULL, "@..." patterns and a linkage name), the
 * one with the fewest leading underscores, f->name on a tie: `pthread_mutex_lock`
 * rather than glibc's `___pthread_mutex_lock` at the same address. */
const char *match_public_name(const char *pattern, const struct dw_function *f);

#endif
