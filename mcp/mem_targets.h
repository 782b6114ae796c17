/*
 * mem_targets.h - the `targets` of debug_memory read, poll and write: validation
 * into the collector's request shape (core/collector.h), the one parser of them. One
 * target is {variable} (a C expression, at most MEMORY_EXPR_MAX characters) or
 * {address: "0x...", type, size?} (size required for type "bytes", implied by the
 * others); a write target also has a value (its caller reads it). Too many targets
 * is LIMIT_EXCEEDED; everything else VALIDATION_ERROR naming the target.
 */
#ifndef STROBE_MEM_TARGETS_H
#define STROBE_MEM_TARGETS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "base/error.h"
#include "core/collector.h"

enum mem_targets_mode {
    MEM_TARGETS_READ,   /* any type, bytes with a size */
    MEM_TARGETS_POLL,   /* no bytes: a poll samples values, not buffers */
    MEM_TARGETS_WRITE,  /* no bytes, no size; a 'value' field is allowed */
};

/* Fills out[0..*n) from args.targets (strings point into args). 0 or -1 with e. */
int mem_targets_parse(const cJSON *args, enum mem_targets_mode mode,
                      struct collector_mem_target out[MEMORY_MAX_TARGETS], int *n,
                      struct strobe_error *e);

/* An address: hex after "0x", else decimal (never octal: "010" is ten); false when it
 * is neither (blanks, signs, trailing text) or is 0. */
bool mem_parse_address(const char *s, uint64_t *out);

#endif
