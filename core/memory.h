/*
 * memory.h - debug_memory's engine side: one read or write request run against a
 * live session through its collector's `memory` slot, with the raw bytes of `bytes`
 * targets saved to private files under $STROBE_HOME/memory/ (directory 0700, files
 * 0600), so they never travel through the agent's context.
 */
#ifndef STROBE_CORE_MEMORY_H
#define STROBE_CORE_MEMORY_H

#include "base/error.h"
#include "core/collector.h"

/* Runs req against session id's target, filling out[0..req->n_targets) (free with
 * collector_mem_results_free). Without req->tid, a paused thread's frame comes first when
 * there is one: the newest pause's (of req->pid's process when given), so the locals of
 * where the program stopped read by name, as in gdb. Each bytes result gets its file (its
 * bytes stay in r->bytes for a preview). 0 even when targets failed (each says why), or -1
 * with SESSION_NOT_FOUND, PROCESS_EXITED, NOT_IMPLEMENTED (the collector cannot access
 * memory), VALIDATION_ERROR (pid not of the session; a frame with nothing paused). */
int session_memory(const char *id, const struct collector_mem_request *req,
                   struct collector_mem_result *out, struct strobe_error *e);

#endif
