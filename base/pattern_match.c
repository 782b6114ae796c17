/*
 * pattern_match.c - trace pattern matching and near-miss suggestions. See
 * pattern_match.h for the rules.
 *
 * Matching is a dynamic program over name positions, one pattern token at a time
 * (O(pattern x name), no backtracking blow-up whatever the number of stars), with the
 * name's top-level separators marked beforehand so that "*" can refuse them.
 */
#include "base/pattern_match.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { LEVENSHTEIN_MAX = 256 };

static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Length of the operator symbol after "operator" at s, 0 when s is no operator. */
static size_t operator_symbol_len(const char *s)
{
    if (strncmp(s, "()", 2) == 0 || strncmp(s, "[]", 2) == 0)
        return 2;
    return strspn(s, "<>=!-+*/%^&|~,");
}

/* Marks in sep[] (when not NULL) the characters of name that belong to a top-level
 * "::". Returns the index where the last segment starts. */
static size_t scan_separators(const char *name, size_t len, bool *sep)
{
    size_t last_segment = 0;
    int depth = 0;
    if (sep)
        memset(sep, 0, len);
    for (size_t i = 0; i < len;) {
        if (strncmp(name + i, "operator", 8) == 0 && (i == 0 || !is_ident_char(name[i - 1])) &&
            !is_ident_char(name[i + 8])) {
            i += 8 + operator_symbol_len(name + i + 8);
            continue;
        }
        char c = name[i];
        if (strchr("<([{", c))
            depth++;
        else if (strchr(">)]}", c) && depth > 0)
            depth--;
        if (depth == 0 && c == ':' && name[i + 1] == ':') {
            if (sep)
                sep[i] = sep[i + 1] = true;
            i += 2;
            last_segment = i;
            continue;
        }
        i++;
    }
    return last_segment;
}

enum token { TOKEN_LITERAL, TOKEN_STAR, TOKEN_DOUBLE_STAR, TOKEN_SEGMENTS };

/* The token at pattern[*i], advancing *i past it. TOKEN_SEGMENTS is a whole "**"
 * segment with its following "::" ("a::**::b", "**::f"). */
static enum token next_token(const char *pattern, size_t *i)
{
    const char *p = pattern + *i;
    if (p[0] != '*') {
        (*i)++;
        return TOKEN_LITERAL;
    }
    if (p[1] != '*') {
        (*i)++;
        return TOKEN_STAR;
    }
    bool segment_start = *i == 0 || (*i >= 2 && strncmp(p - 2, "::", 2) == 0);
    if (segment_start && strncmp(p + 2, "::", 2) == 0) {
        *i += 4;
        return TOKEN_SEGMENTS;
    }
    *i += 2;
    return TOKEN_DOUBLE_STAR;
}

bool pattern_match_name(const char *pattern, const char *qualified_name)
{
    if (!pattern || !qualified_name)
        return false;
    size_t n = strlen(qualified_name);
    /* cur[j]: the pattern so far matches the first j characters of the name. */
    bool *rows = malloc(3 * (n + 1));
    if (!rows)
        return false;
    bool *cur = rows, *next = rows + n + 1, *sep = rows + 2 * (n + 1);
    scan_separators(qualified_name, n, sep);
    memset(cur, 0, n + 1);
    cur[0] = true;
    bool alive = true;
    for (size_t i = 0; pattern[i] && alive;) {
        char literal = pattern[i];
        enum token tok = next_token(pattern, &i);
        bool seen = false; /* some cur[k] with k <= j - 2, for TOKEN_SEGMENTS */
        alive = false;
        for (size_t j = 0; j <= n; j++) {
            switch (tok) {
            case TOKEN_LITERAL:
                next[j] = j > 0 && cur[j - 1] && qualified_name[j - 1] == literal;
                break;
            case TOKEN_STAR:
                next[j] = cur[j] || (j > 0 && next[j - 1] && !sep[j - 1]);
                break;
            case TOKEN_DOUBLE_STAR:
                next[j] = cur[j] || (j > 0 && next[j - 1]);
                break;
            case TOKEN_SEGMENTS:
                if (j >= 2)
                    seen = seen || cur[j - 2];
                next[j] = cur[j] || (seen && strncmp(qualified_name + j - 2, "::", 2) == 0);
                break;
            }
            alive = alive || next[j];
        }
        bool *swap = cur;
        cur = next;
        next = swap;
    }
    bool match = alive && cur[n];
    free(rows);
    return match;
}

/* Case-insensitive edit distance over the first LEVENSHTEIN_MAX characters. */
static size_t levenshtein(const char *a, const char *b)
{
    size_t la = strnlen(a, LEVENSHTEIN_MAX), lb = strnlen(b, LEVENSHTEIN_MAX);
    size_t prev[LEVENSHTEIN_MAX + 1], row[LEVENSHTEIN_MAX + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + cost;
            best = prev[j] + 1 < best ? prev[j] + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
        }
        memcpy(prev, row, (lb + 1) * sizeof *row);
    }
    return prev[lb];
}

struct candidate {
    size_t score, whole;
    const char *name;
};

static bool ranks_before(const struct candidate *a, const struct candidate *b)
{
    if (a->score != b->score)
        return a->score < b->score;
    if (a->whole != b->whole)
        return a->whole < b->whole;
    return strcmp(a->name, b->name) < 0;
}

size_t pattern_suggest(const char *pattern, const char *const *names, size_t n,
                       const char **out, size_t max_out)
{
    size_t plen = strlen(pattern);
    char *bare = malloc(plen + 1);
    struct candidate *best = malloc((max_out ? max_out : 1) * sizeof *best);
    size_t found = 0;
    if (!bare || !best || max_out == 0)
        goto done;
    size_t blen = 0;
    for (size_t i = 0; i < plen; i++)
        if (pattern[i] != '*')
            bare[blen++] = pattern[i];
    bare[blen] = '\0';
    size_t bare_last = scan_separators(bare, blen, NULL);
    size_t qualified_penalty = bare_last > 0;
    size_t limit = (blen - bare_last) / 3 > 2 ? (blen - bare_last) / 3 : 2;

    for (size_t k = 0; k < n; k++) {
        const char *name = names[k];
        if (!name)
            continue;
        struct candidate c = {.whole = levenshtein(bare, name), .name = name};
        size_t name_last = scan_separators(name, strlen(name), NULL);
        size_t last = levenshtein(bare + bare_last, name + name_last);
        c.score = last + qualified_penalty < c.whole ? last + qualified_penalty : c.whole;
        if (c.score > limit)
            continue;
        bool duplicate = false;
        for (size_t i = 0; i < found && !duplicate; i++)
            duplicate = strcmp(best[i].name, name) == 0;
        if (duplicate || (found == max_out && !ranks_before(&c, &best[found - 1])))
            continue;
        size_t pos = found < max_out ? found++ : found - 1;
        while (pos > 0 && ranks_before(&c, &best[pos - 1])) {
            best[pos] = best[pos - 1];
            pos--;
        }
        best[pos] = c;
    }
    for (size_t i = 0; i < found; i++)
        out[i] = best[i].name;
done:
    free(bare);
    free(best);
    return found;
}
