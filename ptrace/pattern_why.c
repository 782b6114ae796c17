/*
 * pattern_why.c - why a pattern matches nothing. See pattern_why.h.
 */
#include "ptrace/pattern_why.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pattern_match.h"
#include "core/collector.h" /* PATTERN_MAX_LEN */

/* A name without wildcards or '@': matched in every module (resolve.h, "Scope"). */
static bool is_exact(const char *p)
{
    return p[0] != '@' && !strchr(p, '*');
}

/* Up to 3 names of the program (and of the libraries, for an exact pattern) near pat,
 * joined by ", " into out; "" when none is near. */
static void near_names(const struct pattern_scope *p, const char *pat, char *out, size_t n)
{
    out[0] = '\0';
    size_t total = p->exe ? p->exe->n_functions : 0;
    bool libs = is_exact(pat);
    for (size_t l = 0; libs && l < p->n_libs; l++)
        total += p->libs[l]->n_functions;
    const char **names = malloc((total + 1) * sizeof *names);
    if (!names)
        return;
    size_t k = 0;
    for (size_t i = 0; p->exe && i < p->exe->n_functions; i++)
        names[k++] = p->exe->functions[i].name;
    for (size_t l = 0; libs && l < p->n_libs; l++)
        for (size_t i = 0; i < p->libs[l]->n_functions; i++)
            names[k++] = p->libs[l]->functions[i].name;
    const char *near[3];
    size_t found = pattern_suggest(pat, names, k, near, 3);
    size_t len = 0;
    for (size_t i = 0; i < found && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : "", near[i]);
    free(names);
}

/* The CPU-specific variants of an IFUNC (memcpy: __memcpy_avx_unaligned_erms, ...):
 * up to 3 of those the loaded libraries define as "__NAME_*" with an instruction set
 * in the rest of the name (sse, avx, evex, erms), joined into out; returns how many
 * there are in all. */
static size_t ifunc_variants(const struct pattern_scope *p, const char *pat, char *out, size_t n)
{
    char prefix[PATTERN_MAX_LEN + 4];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "__%s_", pat);
    size_t count = 0, len = 0;
    out[0] = '\0';
    static const char *const isa[] = {"sse", "avx", "evex", "erms", NULL};
    for (size_t l = 0; l < p->n_libs; l++)
        for (size_t i = 0; i < p->libs[l]->n_functions; i++) {
            const struct dw_function *f = &p->libs[l]->functions[i];
            for (size_t a = 0; a <= f->n_aliases; a++) {
                const char *name = a == 0 ? f->name : f->aliases[a - 1];
                if (strncmp(name, prefix, plen) != 0 || strstr(name, "_chk"))
                    continue;
                bool variant = false;
                for (int v = 0; isa[v] && !variant; v++)
                    variant = strstr(name + plen, isa[v]) != NULL;
                if (!variant)
                    continue;
                if (count++ < 3 && len < n)
                    len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "",
                                            name);
                break;
            }
        }
    return count;
}

bool pattern_why_ifunc(const struct pattern_scope *p, const char *pat, char *out, size_t n)
{
    char names[160];
    if (!is_exact(pat) || strstr(pat, "::"))
        return false;
    size_t variants = ifunc_variants(p, pat, names, sizeof names);
    if (variants)
        snprintf(out, n, "'%s' is an IFUNC: calls run one of %zu CPU variants, which it "
                 "does not hook; trace them by name (%s%s).", pat, variants, names,
                 variants > 3 ? ", ..." : "");
    return variants > 0;
}

void pattern_why_none(const struct pattern_scope *p, const char *pat, char *out, size_t n)
{
    char names[160];
    if (strcmp(pat, "@usercode") == 0) {
        snprintf(out, n, "'%s' matches nothing: no function of the program has its source "
                 "under the project root (check projectRoot).", pat);
        return;
    }
    if (pat[0] == '@') {
        snprintf(out, n, "'%s' matches nothing: no function of the program comes from a "
                 "source file whose path contains '%s'.", pat, pat + 6);
        return;
    }
    if (!p->exe) {
        snprintf(out, n, "'%s' matches nothing: the program could not be indexed.", pat);
        return;
    }
    bool inlined = p->exe && is_exact(pat) && dw_is_inlined_only(p->exe, pat);
    for (size_t l = 0; !inlined && is_exact(pat) && l < p->n_libs; l++)
        inlined = dw_is_inlined_only(p->libs[l], pat);
    if (inlined) {
        snprintf(out, n, "'%s' is inlined into every caller (no out-of-line copy to hook): "
                 "trace its callers, or rebuild with -fno-inline.", pat);
        return;
    }
    if (pattern_why_ifunc(p, pat, out, n))
        return;
    near_names(p, pat, names, sizeof names);
    if (!p->exe_has_dwarf)
        snprintf(out, n, "'%s' matches nothing: the program has no debug info and no such "
                 "symbol (stripped, or a static function): rebuild it with -g.%s%s%s", pat,
                 names[0] ? " Near names: " : "", names, names[0] ? "." : "");
    else if (names[0])
        snprintf(out, n, "'%s' matches no function; near names: %s.", pat, names);
    else if (!is_exact(pat))
        snprintf(out, n, "'%s' matches no function of the program or of its own libraries "
                 "(wildcards skip system libraries: name a library function exactly).", pat);
    else
        snprintf(out, n, "'%s' matches no function of the program or of the libraries "
                 "loaded now; one loaded later (dlopen) is not searched: add the pattern "
                 "again after it is loaded.", pat);
}
