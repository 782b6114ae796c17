/*
 * trace_watches.h - debug_trace's watches (spec 003): variables read at every call
 * of the traced functions they apply to, shown as watchValues on function_enter and
 * function_exit events. Runtime mode goes to the session's collector (the
 * trace_watches slot of core/collector.h). Pending mode (no session) stages them
 * like pending patterns: the next launch adds them to its program once it runs (a
 * watch whose variable cannot be resolved then is left out, with a warning).
 */
#ifndef STROBE_TRACE_WATCHES_H
#define STROBE_TRACE_WATCHES_H

#include <stddef.h>

#include "base/error.h"
#include "core/collector.h"

/* Runtime mode: changes the watches of session id (see the slot); out lists those
 * in force. PROCESS_EXITED once the program is gone, NOT_IMPLEMENTED when its
 * collector has no watches. */
int session_trace_watches(const char *id, const struct trace_watch_spec *add, int n_add,
                          const char *const *remove, int n_remove,
                          struct trace_watch_result *out, struct strobe_error *e);

/* Pending mode: the same rules (labels unique, at most TRACE_WATCHES_MAX, unknown
 * label to remove: VALIDATION_ERROR), nothing resolved yet (address 0, type ""). */
int trace_watches_pending_update(const struct trace_watch_spec *add, int n_add,
                                 const char *const *remove, int n_remove,
                                 struct trace_watch_result *out, struct strobe_error *e);
void trace_watches_pending_list(struct trace_watch_result *out);

/* At launch: a copy of the pending watches as specs (*specs, *n) for
 * collector_launch, valid until trace_watches_staged_free. NULL when none. */
struct trace_watches_staged;
struct trace_watches_staged *trace_watches_pending_take(const struct trace_watch_spec **specs,
                                                        int *n);
void trace_watches_staged_free(struct trace_watches_staged *s);

/* Checks a watch spec the way both modes do (label and expression lengths, `on`
 * count and syntax): 0 or -1 with VALIDATION_ERROR / INVALID_PATTERN. */
int trace_watch_check(const struct trace_watch_spec *w, struct strobe_error *e);

#endif
