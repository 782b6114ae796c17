/*
 * match.c - trace patterns against DWARF functions. See match.h.
 */
#include "ptrace/proc/match.h"

#include <string.h>

#include "base/pattern_match.h"

static bool under_root(const char *file, const char *root)
{
    if (!file || !root || !*root)
        return false;
    size_t len = strlen(root);
    while (len > 0 && root[len - 1] == '/')
        len--;
    return strncmp(file, root, len) == 0 && file[len] == '/';
}

static size_t leading_underscores(const char *s)
{
    return strspn(s, "_");
}

const char *match_public_name(const char *pattern, const struct dw_function *f)
{
    bool by_name = pattern && pattern[0] != '@' &&
                   !(f->linkage_name && strcmp(pattern, f->linkage_name) == 0);
    const char *best = f->name;
    bool best_matches = !by_name || pattern_match_name(pattern, f->name);
    for (size_t i = 0; i < f->n_aliases; i++) {
        const char *a = f->aliases[i];
        if (by_name && !pattern_match_name(pattern, a))
            continue;
        if (!best_matches || leading_underscores(a) < leading_underscores(best)) {
            best = a;
            best_matches = true;
        }
    }
    return best;
}

bool match_function(const char *pattern, const struct dw_function *f,
                    const char *project_root)
{
    if (strcmp(pattern, "@usercode") == 0)
        return under_root(f->decl_file, project_root);
    if (strncmp(pattern, "@file:", 6) == 0)
        return f->decl_file && pattern[6] && strstr(f->decl_file, pattern + 6);
    if (pattern_match_name(pattern, f->name) ||
        (f->linkage_name && strcmp(pattern, f->linkage_name) == 0))
        return true;
    /* Other symbols at the same address: libc's DWARF calls puts _IO_puts. */
    for (size_t i = 0; i < f->n_aliases; i++)
        if (pattern_match_name(pattern, f->aliases[i]))
            return true;
    return false;
}
