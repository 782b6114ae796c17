/*
 * watch.h - data watchpoints of a live session (debug_memory watch / unwatch): the
 * engine's side of the collector's watch slots (core/collector.h), reached through
 * session_target_get so the session cannot end during a request.
 */
#ifndef STROBE_WATCH_H
#define STROBE_WATCH_H

#include "base/error.h"
#include "core/collector.h"

#define WATCH_LIST_MAX 16  /* active watches and the ended ones still listed */

/* Arms a watch; *out describes it (id, label, address, size, type, value now).
 * NOT_IMPLEMENTED when the session's collector has no watches. */
int session_watch_set(const char *id, const struct collector_watch_request *req,
                      struct collector_watch_info *out, struct strobe_error *e);
/* Removes watch watch_id, or every watch when watch_id is 0; removed[] gets what
 * went (up to max, *n_removed of them). VALIDATION_ERROR for an unknown id. */
int session_watch_clear(const char *id, int watch_id, struct collector_watch_info *removed,
                        int max, int *n_removed, struct strobe_error *e);
/* The watches (active, then ended), up to max; *n how many. */
int session_watch_list(const char *id, struct collector_watch_info *out, int max, int *n,
                       struct strobe_error *e);

#endif
