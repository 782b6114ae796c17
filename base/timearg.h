/*
 * timearg.h - the time bounds of debug_query (spec 003): an absolute number of ns
 * since the session started, or a negative duration relative to the session's
 * latest event: "-5s", "-500ms", "-1m", "-2h", "-250us", "-10ns". A bare number in a
 * string ("1500") is absolute too.
 */
#ifndef STROBE_TIMEARG_H
#define STROBE_TIMEARG_H

#include <stdbool.h>
#include <stdint.h>

/* Returns 0 with *ns and *relative set (for relative, *ns is the negative offset),
 * or -1 when s is not a time. */
int timearg_parse(const char *s, int64_t *ns, bool *relative);

#endif
