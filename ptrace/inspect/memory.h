/*
 * memory.h - the native collector's memory slot (core/collector.h, `memory`): reads
 * and writes of variables (ptrace/vars/varres.h) and raw addresses of a running target,
 * through /proc/PID/mem, without stopping it.
 */
#ifndef STROBE_MEMORY_H
#define STROBE_MEMORY_H

#include "base/error.h"
#include "core/collector.h"
#include "ptrace/vars/framevars.h"
#include "ptrace/tracer/tracer.h"

/* A paused thread's frame whose names come before the globals (req->tid), and how
 * to write a variable its frame 0 keeps in a register. */
struct memory_frame {
    struct frame_ctx f;
    int (*set_register)(void *arg, pid_t tid, int regno, uint64_t value,
                        struct strobe_error *e);
    void *arg;
};

/* Fills out[0..req->n_targets) as the `memory` slot says: per-target errors, 0, or
 * -1 with VALIDATION_ERROR (req->pid is not a live process of t) or PROCESS_EXITED
 * (the process is gone) when no target could be tried. frame: NULL, or the frame
 * of req->tid (its process is the one read). */
int memory_access(struct tracer *t, const struct collector_mem_request *req,
                  struct memory_frame *frame, struct collector_mem_result *out,
                  struct strobe_error *e);

#endif
