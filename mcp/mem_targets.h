/*
 * mem_targets.h - the `targets` of debug_memory read (and poll): validation into
 * the collector's request shape (core/collector.h). One target is {variable} (a C
 * expression, at most MEMORY_EXPR_MAX characters) or {address: "0x...", type, size?}
 * (size required for type "bytes", implied by the others). Too many targets is
 * LIMIT_EXCEEDED; everything else VALIDATION_ERROR naming the target.
 */
#ifndef STROBE_MEM_TARGETS_H
#define STROBE_MEM_TARGETS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "base/error.h"
#include "core/collector.h"

/* Fills out[0..*n) from args.targets (strings point into args). allow_bytes: whether
 * type "bytes" is accepted. 0 or -1 with e. */
int mem_targets_parse(const cJSON *args, bool allow_bytes,
                      struct collector_mem_target out[MEMORY_MAX_TARGETS], int *n,
                      struct strobe_error *e);

/* A hex address "0x1f" or decimal; false when it is neither or is 0. */
bool mem_parse_address(const char *s, uint64_t *out);

#endif
