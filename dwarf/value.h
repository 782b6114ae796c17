/*
 * value.h - a typed value of the traced program (a function argument, a return
 * value) written as JSON text, following the rules of docs/PROTOCOL.md "Function
 * events". This module only interprets bytes through a struct dw_type; reading the
 * target's memory is the caller's callback, so the module is pure and testable with
 * fake memory.
 *
 * Rules, in the order a reader meets them:
 * - Integers (any size 1..8, and 16) are JSON numbers; a value whose magnitude is
 *   above 2^53 is a decimal string ("18446744073709551615"). bool is true/false
 *   (any non-zero byte is true).
 * - float and double are numbers in their shortest round-trip form; NaN and the
 *   infinities are the strings "NaN", "Infinity", "-Infinity". long double (x87 80-bit
 *   in 16 bytes) and _Float128 (a 16-byte float whose name contains "128") are
 *   converted to the nearest double. Other float sizes are raw bytes (below).
 * - A char (DWT_CHAR: plain char; signed char, unsigned char, int8_t and uint8_t are
 *   integers) is a one-character string when it is a printable code point (ASCII
 *   0x20..0x7E for 1-byte chars), else its number ("unsigned" in the type name makes it
 *   unsigned; plain char is signed as on x86-64).
 * - An enum is its enumerator's name; a value with no enumerator is the number.
 *   Signedness comes from the underlying type (target), signed when unknown.
 * - A pointer with value 0 is null (any pointer kind). A pointer to a 1-byte char
 *   (DWT_CHAR) is a string read through the callback, up to max_string bytes, stopping at NUL;
 *   when longer (or when memory ends before a NUL) "...(truncated)" is appended to
 *   the text. Reads never cross a 4 KiB boundary, so a string that ends just before
 *   an unmapped page still reads. Bytes that are not valid UTF-8 are written as
 *   "\xNN" (utf8_sanitize of base/linesplit.h).
 * - A pointer to a complete struct/union is followed while the depth allows:
 *   {"@ptr":"0x...", members...}; beyond the depth "<struct NAME at 0x...>"; to an
 *   address already being expanded on the current path "<cycle 0x...>"; unreadable
 *   memory "<unreadable 0x...>". Other pointers (void *, to scalars, to pointers, to
 *   incomplete structs) are "0x..." hex strings.
 * - A reference (C++ & and &&) is always followed: null when 0, the referred value
 *   for scalars, and the pointer form above for structs (same "@ptr" key).
 * - A struct/union is an object of its members in declaration order. An anonymous
 *   struct/union member (and a base class, if the index models it so) has its
 *   members inlined; other anonymous members (unnamed bit-field padding) are left
 *   out. Bit fields are extracted (little-endian bit order) and rendered with their
 *   type. Unless the depth was asked for (depth_asked), a union of several members is
 *   shown once: "@bytes" (its first 16 bytes in hex, "..." after them) and its first
 *   member only; an anonymous union member inlines its first member only. With
 *   depth_asked or unions_whole every member is rendered from the same bytes.
 * - Structs of system headers (declared under /usr/include, dw_type.system_header)
 *   that are unions or larger than 64 bytes (pthread_mutex_t, pthread_cond_t, FILE,
 *   struct stat, sigset_t) are opaque unless the depth was asked for (depth_asked):
 *   "<NAME 0x...>" (no address for a copy), or, for the types whose state a reader
 *   wants, {"@opaque":"<NAME 0x...>", field: value...}: a mutex's owner (tid), locked
 *   and count, a rwlock's writer and readers, a FILE's fileno, a struct stat's size and
 *   mode.
 * - A pointer to a function is "symbol" or "symbol+0xoff" when the caller's
 *   symbolize callback names the address, else "0x...".
 * - Depth: every struct/union object opened (by value, or through a pointer or a
 *   reference) is one level; inlined anonymous members are not. With max_depth N the
 *   N-th nested object still shows its members; deeper, a by-value struct is
 *   "<struct NAME>" and a pointed-to one "<struct NAME at 0x...>". NAME is the type's
 *   name without a leading "struct "/"union "/"class ", "(anonymous)" when none; the
 *   keyword is "union" for unions.
 * - Large structs (over 256 bytes or 16 members): unless the depth was asked for, a
 *   value that is one (or points to one) is written with max_depth 1 (its members, and
 *   each nested object as a marker), and one met deeper inside another value is a
 *   marker, so decoding a big argument costs one read and its members.
 * - References across calls (refs): a struct reached through a pointer that an earlier
 *   call with the same refs already expanded is {"@ptr":"0x...","@see":WHERE}, WHERE
 *   being refs->where at that earlier call (a crash prints each struct once).
 * - Arrays are JSON arrays of their first max_array elements, then a final
 *   "...(N more)" string; arrays of 1-byte DWT_CHAR are strings (up to the first NUL,
 *   truncated as above); arrays of unknown length are [] (char: read as a string
 *   when the address is known). Arrays do not count as depth.
 * - void, unknown types and unsupported sizes: null when size is 0, else the string
 *   "<bytes 0a0b0c0d>" (memory order, at most 16 bytes shown, "..." after them).
 * - Output budget: once the text written by one call exceeds max_output bytes, the
 *   remaining array elements collapse into "...(N more)" and the remaining members
 *   of each open struct into one "...":"(N more)" entry, so the JSON stays valid and
 *   bounded whatever the type.
 * - Absurd types (size 0, huge counts, offsets beyond the object, type graphs that
 *   loop) never crash: sizes are bounds-checked, a nesting guard of 64 levels stops
 *   type loops with the string "<too deep>", and bytes that cannot be had are
 *   "<unreadable 0x...>" (or null when the value has no address).
 */
#ifndef STROBE_VALUE_H
#define STROBE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "dwarf/dwarf.h"

/* Reads len bytes of the target at addr into buf; false when any of them is
 * unreadable (nothing may be assumed about buf then). */
typedef bool (*mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

#define VALUE_DEFAULT_DEPTH 3
#define VALUE_DEFAULT_MAX_STRING 1024
#define VALUE_DEFAULT_MAX_ARRAY 100
#define VALUE_DEFAULT_MAX_OUTPUT 16384

/* Names the code at addr for a function pointer: "symbol" or "symbol+0xoff" into out
 * (cap bytes); false when no symbol covers addr. */
typedef bool (*value_symbol_fn)(void *ctx, uint64_t addr, char *out, size_t cap);

/* Structs already expanded by earlier calls sharing this table (zero it first, free it
 * with value_refs_free). where labels what the next call writes ("frame 2"). */
#define VALUE_REFS_MAX 256
#define VALUE_REF_WHERE_MAX 32
struct value_refs {
    const char *where;
    size_t n;
    struct value_ref {
        uint64_t addr;
        char where[VALUE_REF_WHERE_MAX];
    } *items; /* up to VALUE_REFS_MAX; allocated on first use */
};
void value_refs_free(struct value_refs *r);

/* Limits. A zero field takes its default; max_depth is clamped to 1..10. */
struct value_opts {
    int max_depth;      /* struct levels expanded (serializationDepth) */
    size_t max_string;  /* bytes of a string */
    size_t max_array;   /* elements of an array */
    size_t max_output;  /* bytes of JSON written by one call before collapsing */
    bool depth_asked;   /* max_depth was asked for: large and system structs expanded */
    bool unions_whole;  /* every member of a union, as gdb prints one (a variable read
                           by name); implied by depth_asked */
    value_symbol_fn symbolize; /* names function pointers; NULL: they stay hex */
    void *symbolize_ctx;
    struct value_refs *refs;   /* NULL: every struct is written where it is met */
};

/* Whether a struct/union (or what a pointer/reference points to) counts as large:
 * over 256 bytes or over 16 members. */
bool value_is_large(const struct dw_type *t);

/* Writes the value of type t held in bytes (t->size bytes, a copy of the value: a
 * register or a by-value argument; it has no address in the target). rd/ctx read
 * the target's memory for pointers. t NULL is null. o NULL means all defaults. */
void value_json(struct strbuf *out, const struct dw_type *t, const void *bytes,
                mem_read_fn rd, void *ctx, const struct value_opts *o);

/* Same for the value of type t stored at addr in the target: its bytes are read
 * first ("<unreadable 0x...>" when they cannot be). A struct at addr is on the
 * path, so a pointer back to it is a cycle. */
void value_json_at(struct strbuf *out, const struct dw_type *t, uint64_t addr,
                   mem_read_fn rd, void *ctx, const struct value_opts *o);

/* Whether integer-like t (integer, char, enum) holds signed values, by the rules
 * above (plain char is signed; an enum follows its underlying type). */
bool value_int_signed(const struct dw_type *t);

#endif
