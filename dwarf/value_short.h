/*
 * value_short.h - a value's JSON text (as dwarf/value.h writes it) rendered in one
 * short line for summaries: `42`, `"abc…"`, `{x=1, y=2, …}`, `[1, 2, …]`,
 * `0x7ffd1000`, `<pthread_mutex_t 0x...>`. Pure text work: no memory is read again.
 *
 * Rules: numbers, true, false and null as written; strings quoted, their text cut at
 * 24 bytes with "…"; a string that is a marker ("<struct node at 0x...>") or an
 * address ("0x...") unquoted; objects as {key=value, ...} without the "@"-keys
 * ("@ptr", "@bytes", "@see"), an object a pointer led to prefixed with its address
 * ("@0x55e4c0a1b2a0 {host=\"metrics-sink\", ...}"), an opaque struct as its "@opaque"
 * text; arrays as
 * [a, b, ...]; objects and arrays nested more than two levels as {…} and […]. Once
 * the text reaches the limit the rest is "…", so the result is at most limit bytes
 * plus the 3 of that ellipsis, plus the addresses shown (which take no room from the
 * fields). Invalid JSON renders as far as it is valid.
 */
#ifndef STROBE_VALUE_SHORT_H
#define STROBE_VALUE_SHORT_H

#include <stddef.h>

#include "base/strbuf.h"

#define VALUE_SHORT_LIMIT 80

/* Appends the short form of the JSON value json to out, in at most about limit
 * bytes. */
void value_short(struct strbuf *out, const char *json, size_t limit);

/* Appends the short form of an argument array ([{"name":..,"value":..}, ...], as
 * dwarf/abi.h writes it) as "a=1, s=\"abc\", p={x=1, …}": each argument gets an
 * equal share of limit, what one leaves unused passes on to the next. */
void value_short_args(struct strbuf *out, const char *json, size_t limit);

#endif
