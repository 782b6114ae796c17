/*
 * encode.h - a value given by a client (core/collector.h's struct collector_value: a
 * number, a string or a boolean) turned into the bytes of a variable of DWARF type
 * t, for debug_memory writes: the inverse of dwarf/value.h. Pure: no process, no
 * DWARF file, so every rule is testable on hand-built types.
 *
 * Rules (ranges are exact: a value the type cannot hold is refused, never wrapped):
 * - Integers (1, 2, 4, 8 bytes, signed or unsigned): a number or a string holding
 *   one, decimal or hex ("0x1f", "-0x10"); a fraction or an exponent is refused.
 * - bool: true/false, or the numbers 0 and 1.
 * - float, double, long double (x87, 10 of 16 bytes): a number, or "NaN",
 *   "Infinity", "-Infinity"; a finite value beyond the type's largest is refused.
 * - char (DWT_CHAR: plain char, which is signed; the DWARF index makes signed char,
 *   unsigned char, int8_t and uint8_t integers): a one-character string, or the
 *   character's number in the type's range.
 * - enum: an enumerator's name, or a number in the range of its underlying type.
 * - pointers: a number, or a string in hex ("0x7ffd...") or decimal; 0 is NULL.
 * - arrays of plain char: a string that fits with its terminating NUL; the rest of the
 *   array is zeroed.
 * - structs, unions, other arrays, references, functions and unknown types are
 *   refused with a sentence that says what to write instead (a member, an element).
 */
#ifndef STROBE_ENCODE_H
#define STROBE_ENCODE_H

#include <stddef.h>

#include "base/error.h"
#include "core/collector.h"
#include "dwarf/dwarf.h"

/* Writes t->size bytes of v as a t into out (cap bytes); 0, or -1 with
 * VALUE_OUT_OF_RANGE (the value does not fit or does not suit the type; the sentence
 * gives the type's range or its accepted values) or VALIDATION_ERROR (a type that is
 * not written whole, or larger than cap). label names the target in sentences. */
int encode_value(const struct dw_type *t, const char *label, const struct collector_value *v,
                 unsigned char *out, size_t cap, struct strobe_error *e);

#endif
