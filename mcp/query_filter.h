/*
 * query_filter.h - debug_query's event filter as a JSON object, parsed once for every
 * tool that selects events with it: debug_query itself, and any tool that waits for
 * an event "like debug_query would find" (debug_continue's until.event).
 *
 * The filter fields are debug_query's minus paging and presentation: eventType,
 * function {equals, contains, matches}, sourceFile {equals, contains}, returnValue
 * {equals, isNull}, threadName {contains}, text {contains | matches}, timeFrom,
 * timeTo, minDurationNs, pid, openCalls (function_enter events with no exit yet). The
 * result holds a struct event_query (base/event_query.h, the shape the engine and the
 * store read as it is) ready for timeline_events() or timeline_first_match()
 * (core/timeline.h); the caller sets limit, offset and after_id on it when it pages.
 * text.matches is compiled here, to reject a bad pattern in the filter's own terms
 * before anything runs, and its handle is the one every read with the filter uses;
 * function.matches is compiled by the first read (its error comes from the engine,
 * completed by query_filter_explain()).
 *
 * Errors are VALIDATION_ERROR, each naming the field (relative to the object
 * parsed), what it must be and what to do instead.
 */
#ifndef STROBE_QUERY_FILTER_H
#define STROBE_QUERY_FILTER_H

#include <cjson/cJSON.h>

#include "base/error.h"
#include "base/event_query.h"

/* The longest text.contains / text.matches, in bytes (base/regex.h's limit). */
#define QUERY_FILTER_TEXT_MAX 1024

/* At most this many strings of a filter are copied (every string field at once). */
#define QUERY_FILTER_STRINGS 12

struct query_filter {
    struct event_query q;        /* its strings point into owned[] */
    char *owned[QUERY_FILTER_STRINGS];
    int n_owned;
};

/* Parses the filter fields of obj, a JSON object (args_object() gives one), into *out
 * (zeroed first; free it with query_filter_free() whatever the result). Fields of obj that
 * are neither filter fields nor listed in extra (NULL-terminated; NULL for none: the keys
 * the caller reads itself, such as debug_query's sessionId and limit) are rejected, where
 * naming obj in the message ("debug_query", "until.event"). Strings are copied: *out does
 * not depend on obj once this returns. 0, or -1 with e set. */
int query_filter_parse(const cJSON *obj, const char *where, const char *const *extra,
                       struct query_filter *out, struct strobe_error *e);

/* Completes e, a failure of timeline_events() or timeline_first_match() with f's
 * query, with the next step in the filter's terms (which pattern to fix, how). */
void query_filter_explain(const struct query_filter *f, struct strobe_error *e);

/* Frees the copied strings and the compiled patterns; NULL is fine. */
void query_filter_free(struct query_filter *f);

#endif
