/*
 * regex.h - regular expressions from people we do not trust (an agent's query
 * filter), with bounded cost. Built on PCRE2 (Perl-compatible syntax), which was
 * made for this: the pattern is at most REGEX_MAX_PATTERN bytes, nesting and the
 * compiled program are capped (a counted-repetition bomb such as
 * "(((a{1,255}){1,255}){1,255}){1,255}" fails to compile in microseconds instead of
 * exhausting memory, as glibc's regcomp does), and each match has a step, depth and
 * heap budget, so catastrophic backtracking ("(a+)+$" on "aaaa...b") ends with an
 * error instead of a hang. Patterns and subjects are UTF-8; a subject with invalid
 * UTF-8 simply matches or not.
 *
 * Every user-supplied pattern in Strobe goes through this module.
 */
#ifndef STROBE_REGEX_H
#define STROBE_REGEX_H

#include <stddef.h>

#include "base/error.h"

#define REGEX_MAX_PATTERN 1024

struct regex;

/* Compiles pattern; NULL with e (NULL: not told) set when it is invalid or too
 * costly: VALIDATION and a sentence saying which part is wrong or which limit it
 * exceeds (INTERNAL when memory ran out). */
struct regex *regex_compile(const char *pattern, struct strobe_error *e);

/* 1 when subject (len bytes) contains a match, 0 when not, -1 with e (NULL: not
 * told) set to VALIDATION and a sentence when matching exceeded the budget (the
 * pattern is too costly for this subject). */
int regex_match(const struct regex *re, const char *subject, size_t len,
                struct strobe_error *e);

void regex_free(struct regex *re);

#endif
