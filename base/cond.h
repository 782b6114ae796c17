/*
 * cond.h - breakpoint conditions: a small C expression language, parsed once when a
 * breakpoint is set and evaluated on every hit.
 *
 *   count > 3 && cfg.mode == 2        p != NULL && p->name == "bob"
 *   !(flags[1] >= 0x10) || ratio < 0.5       kind == 'x'      i % 100 == 0
 *
 * Operators, by C precedence from loosest: ||, &&, |, &, == !=, < <= > >=, + -, * / %,
 * unary ! and -; parentheses. Arithmetic is exact on integers of either signedness (a
 * result beyond 64 bits, or a division by zero, is an error), in double when a float is
 * involved; % & | take integers. Literals: integers (decimal, 0x hex, 0 octal, u/l suffixes
 * ignored), floats, 'c' characters and "strings" (escapes \n \t \r \0 \\ \' \"), true,
 * false, NULL, nullptr. Operands that name program data are paths: an identifier (with ::
 * scopes), then any of .member, ->member, [N] (N an integer literal or a variable's name:
 * "scores[i]"), with an optional leading * ("*p", "cfg.limits[2].max",
 * "ns::g_state->count"); a name may start with $ ("$rax": a register of the paused frame).
 * The language knows nothing of programs: the caller resolves each path, on each
 * evaluation, through a callback (ptrace/ reads the paused frame's locals, arguments and
 * globals).
 *
 * Semantics: && and || short-circuit, so "p != 0 && p->x > 1" never reads p->x
 * through a null p. Numbers compare by value across signedness (-1 < 4294967295u);
 * a float on either side compares as double. A string (a char pointer or char array)
 * compares with a string by contents (ordering is byte order), and with the integer 0
 * or NULL by whether the pointer is null; a string and any other number do not
 * compare (an error, not false). A bare operand is true when non-zero (strings: when
 * the pointer is not null).
 *
 * Limits: 1024 characters, 256 nodes, 32 levels of nesting, strings of 255 bytes.
 */
#ifndef STROBE_COND_H
#define STROBE_COND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define COND_MAX_TEXT 1024

enum cond_kind {
    COND_INT,      /* i */
    COND_UINT,     /* u */
    COND_FLOAT,    /* f */
    COND_STRING,   /* s, len bytes (NULL: a null char pointer) */
};

struct cond_value {
    enum cond_kind kind;
    int64_t i;
    uint64_t u;
    double f;
    const char *s; /* the resolver's memory, valid until the evaluation returns */
    size_t len;
};

/* Resolves one path ("cfg.max_retries", as written, blanks removed) to its value
 * now. 0, or -1 with e (NULL: not told) set to the resolver's own code and sentence
 * (unknown variable, unreadable memory...): cond_eval passes them on as they are. */
typedef int (*cond_resolve_fn)(void *ctx, const char *path, struct cond_value *out,
                               struct strobe_error *e);

struct cond;

/* Parses text. NULL with e (NULL: not told) set to VALIDATION and "column N: what
 * was expected" when it does not parse, or is beyond the limits (INTERNAL when out
 * of memory). */
struct cond *cond_parse(const char *text, struct strobe_error *e);

/* Evaluates c, resolving its paths through resolve. 0 with *result set, or -1 with
 * e (NULL: not told) set: by resolve when a path did not resolve (its code and
 * sentence), else VALIDATION and a sentence (a string compared with a number, a
 * division by zero, an overflow). */
int cond_eval(const struct cond *c, cond_resolve_fn resolve, void *ctx, bool *result,
              struct strobe_error *e);

/* The distinct paths c names, in order of appearance (for checking them when the
 * breakpoint is set). Valid while c lives. */
size_t cond_paths(const struct cond *c, const char *const **paths);

void cond_free(struct cond *c);

#endif
