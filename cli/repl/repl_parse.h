/*
 * repl_parse.h - the REPL's argument grammar, with no I/O (unit-tested): gdb's
 * x/FMT, `break LOCATION [if COND]`, `set var NAME = VALUE` and the value typed
 * there.
 */
#ifndef STROBE_REPL_PARSE_H
#define STROBE_REPL_PARSE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* gdb's /FMT of x: count, format letter, unit size letter. */
struct repl_xfmt {
    int count;   /* 1 when not given */
    char format; /* x d u o t c a f s i (default x) */
    int size;    /* bytes of a unit: 1 b, 2 h, 4 w, 8 g (default 4; 1 for c, s; 8 for a) */
};

/* Parses "4xw", "s", "2g", "" into *out, starting from prev (gdb keeps the last
 * format and size). 0, or -1 with a sentence in err. */
int repl_parse_xfmt(const char *fmt, const struct repl_xfmt *prev, struct repl_xfmt *out,
                    char *err, size_t errlen);

/* A breakpoint location and its condition: "calc.c:42 if n > 3". */
struct repl_location {
    char *file;      /* "calc.c", NULL for a function */
    int line;
    char *function;  /* NULL for a file:line */
    char *condition; /* NULL without `if` */
};

/* Parses "FILE:LINE", "LINE" (in default_file), "FUNCTION", each optionally followed
 * by "if COND". 0, or -1 with a sentence in err. Free with repl_location_free. */
int repl_parse_location(const char *s, const char *default_file, struct repl_location *out,
                        char *err, size_t errlen);
void repl_location_free(struct repl_location *l);

/* The debug_breakpoint spec of l (file+line or function, condition), a new object. */
cJSON *repl_location_spec(const struct repl_location *l);

/* "var X = V" / "variable X = V" / "X = V" into *name and *value (both malloc'd).
 * 0, or -1 with a sentence in err. */
int repl_parse_assign(const char *s, char **name, char **value, char *err, size_t errlen);

/* The JSON a debug_memory write takes for what was typed: integers as numbers (as
 * decimal strings beyond 2^53, hex as "0x..."), floats as numbers, "..." as the
 * string, 'c' as the one-character string, true/false, anything else (an enumerator,
 * NULL) as a string. */
cJSON *repl_parse_value(const char *text);

#endif
