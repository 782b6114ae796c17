/*
 * watchset.h - the native collector's watch slots (core/collector.h watch_set,
 * watch_clear, watch_list): a request is checked (variable resolved through
 * varres.h, size and alignment, readable address), then armed by hwwatch.h on the
 * tracer thread with every thread of the program stopped (tracer_call), in every
 * thread of the process and of the processes it forked.
 */
#ifndef STROBE_WATCHSET_H
#define STROBE_WATCHSET_H

#include "base/error.h"
#include "core/collector.h"
#include "ptrace/tracer/tracer.h"

int watchset_set(struct tracer *t, const struct collector_watch_request *req,
                 struct collector_watch_info *out, struct strobe_error *e);
int watchset_clear(struct tracer *t, int id, struct strobe_error *e);
int watchset_list(struct tracer *t, struct collector_watch_info *out, int max);

#endif
