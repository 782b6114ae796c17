/*
 * callsite.h - where a traced call came from: the caller's file:line and function,
 * from the return address at entry (minus one: the call instruction) through the
 * DWARF line table of the module that holds it. Resolved at record time once per
 * distinct return address of a process and cached: a call site is one hash lookup
 * after its first call (measured in BENCHMARKS.md, "Call sites").
 */
#ifndef STROBE_CALLSITE_H
#define STROBE_CALLSITE_H

#include <stdint.h>
#include <sys/types.h>

struct callsites;

/* The call site of return address ret in process tgid as JSON object members
 * without braces ("callSite":"/src/a.c:42","caller":"main"), or NULL when the
 * module has no line for it. *cs is created on first use; the text lives as long
 * as *cs. */
const char *callsite_members(struct callsites **cs, pid_t tgid, uint64_t ret);
/* NULL is fine. */
void callsite_free_all(struct callsites *cs);

#endif
