/*
 * regex.c - bounded regular expressions on PCRE2. See regex.h.
 *
 * The budgets: 50 nested parentheses; the compiled program within PCRE2's own size
 * limit (64 KiB of code with the default link size), which counted repetitions
 * count against; per match, 1,000,000 backtracking steps, a depth of 1,000 and
 * 16 MiB of heap. A name of the timeline (a function, a file) is short, so a
 * reasonable pattern never comes near them.
 */
#include "base/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    PARENS_NEST_LIMIT = 50,
    MATCH_LIMIT = 1000000,
    DEPTH_LIMIT = 1000,
    HEAP_LIMIT_KIB = 16 * 1024,
};

struct regex {
    pcre2_code *code;
    pcre2_match_context *mctx;
    pcre2_match_data *md;
};

struct regex *regex_compile(const char *pattern, struct strobe_error *e)
{
    size_t len = strlen(pattern);
    if (len > REGEX_MAX_PATTERN) {
        err_set(e, ERR_VALIDATION, "the pattern is %zu bytes long; the limit is %d", len,
                REGEX_MAX_PATTERN);
        return NULL;
    }
    struct regex *re = calloc(1, sizeof *re);
    pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
    if (!re || !cctx) {
        free(re);
        pcre2_compile_context_free(cctx);
        err_set(e, ERR_INTERNAL, "out of memory compiling the pattern");
        return NULL;
    }
    pcre2_set_max_pattern_length(cctx, REGEX_MAX_PATTERN);
    pcre2_set_parens_nest_limit(cctx, PARENS_NEST_LIMIT);
    int code;
    PCRE2_SIZE offset;
    re->code = pcre2_compile((PCRE2_SPTR)pattern, len,
                             PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C,
                             &code, &offset, cctx);
    pcre2_compile_context_free(cctx);
    if (!re->code) {
        PCRE2_UCHAR why[160];
        pcre2_get_error_message(code, why, sizeof why);
        err_set(e, ERR_VALIDATION, "%s (at byte %zu of the pattern)", (const char *)why,
                (size_t)offset);
        free(re);
        return NULL;
    }
    re->mctx = pcre2_match_context_create(NULL);
    re->md = pcre2_match_data_create(1, NULL);
    if (!re->mctx || !re->md) {
        regex_free(re);
        err_set(e, ERR_INTERNAL, "out of memory compiling the pattern");
        return NULL;
    }
    pcre2_set_match_limit(re->mctx, MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(re->mctx, HEAP_LIMIT_KIB);
    return re;
}

int regex_match(const struct regex *re, const char *subject, size_t len,
                struct strobe_error *e)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)subject, len, 0, 0, re->md, re->mctx);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    PCRE2_UCHAR why[160];
    pcre2_get_error_message(rc, why, sizeof why);
    err_set(e, ERR_VALIDATION, "matching stopped: %s", (const char *)why);
    return -1;
}

void regex_free(struct regex *re)
{
    if (!re)
        return;
    pcre2_match_data_free(re->md);
    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
    free(re);
}
