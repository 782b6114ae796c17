/*
 * memory.h - the native collector's memory slot (core/collector.h, `memory`): reads
 * and writes of variables (ptrace/varres.h) and raw addresses of a running target,
 * through /proc/PID/mem, without stopping it.
 */
#ifndef STROBE_MEMORY_H
#define STROBE_MEMORY_H

#include "base/error.h"
#include "core/collector.h"
#include "ptrace/tracer.h"

/* Fills out[0..req->n_targets) as the `memory` slot says: per-target errors, 0, or
 * -1 with VALIDATION_ERROR (req->pid is not a live process of t) or PROCESS_EXITED
 * (the process is gone) when no target could be tried. */
int memory_access(struct tracer *t, const struct collector_mem_request *req,
                  struct collector_mem_result *out, struct strobe_error *e);

#endif
