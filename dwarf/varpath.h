/*
 * varpath.h - the C expression that names a byte inside a variable: given the
 * variable's type and an offset into it, the member path down to the object at that
 * offset (".lock", "[3]", ".shards[2].mu"), by DWARF type alone. Pure: no file, no
 * process. The stacks snapshot (ptrace/inspect/stacks.c) names what a blocked thread waits
 * on with it, from a global (dw_global_at, globals.h) or a pointer in its frame.
 */
#ifndef STROBE_VARPATH_H
#define STROBE_VARPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "dwarf/dwarf.h"

/* Appends to out the member path from an object of type t to offset off inside it:
 * struct and union members by name, array elements by index, through typedefs (their
 * shape is their target's), descending while the object at off is an aggregate of the
 * program's own. It stops at an object that starts exactly at off and is a scalar, a
 * pointer, or a struct/union of a system header (pthread_mutex_t is named, not its
 * __data.__lock), or where it cannot descend further (a type of unknown size, a
 * member glibc reserves: a name starting with "__"). Appends nothing when off is 0
 * and t itself is such an object. false, with out unchanged, when off is not the
 * start of a named object of t (inside a scalar, padding, inside a reserved member,
 * past the end). */
bool dw_member_path(const struct dw_type *t, uint64_t off, struct strbuf *out);

#endif
