/*
 * value_short.h - a function event's arguments and return value in one short line,
 * for summary answers (argsShort, retShort): the stored JSON values (arguments as
 * [{name, value}], a value as abi_*_json() writes it) rendered C-like, cut at
 * VALUE_SHORT_MAX bytes with "...".
 *
 *   [{"name":"p","value":{"@ptr":"0x7ffc10","x":0,"y":0}},{"name":"dx","value":1}]
 *       -> p=0x7ffc10->{x: 0, y: 0}, dx=1
 *   "blue" -> "blue" (quoted), 1.5 -> 1.5, [1,2,3] -> [1, 2, 3]
 */
#ifndef STROBE_VALUE_SHORT_H
#define STROBE_VALUE_SHORT_H

#include <stdbool.h>
#include <stddef.h>

#define VALUE_SHORT_MAX 80

/* json, a stored value (or with is_args, an argument list), rendered into out
 * (VALUE_SHORT_MAX + 1 bytes at least). false when json is NULL, does not parse, or
 * is an empty argument list: nothing to show. */
bool value_short(const char *json, bool is_args, char *out, size_t cap);

#endif
