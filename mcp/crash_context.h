/*
 * crash_context.h - what a crash event gains when it is queried: the events that led
 * to it (lastEventIds, and lastEvents: type, function or text cut at 120 characters,
 * so one query tells the story), and what the language runtimes wrote on stderr just
 * before it (the C++ exception's type and what(), a Rust panic's message and
 * location, a sanitizer report and the ids of its lines), parsed by
 * base/failure_text.h. These are joined at query time because the crash is
 * recorded on the tracer thread while the lines are still on their way through the
 * output capture; by the time anyone queries, both are in the store.
 *
 * Summary mode also slims the event: registers and per-frame pc/module are
 * verbose-only, as the other events' raw fields are.
 */
#ifndef STROBE_CRASH_CONTEXT_H
#define STROBE_CRASH_CONTEXT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "store/store.h"

#define CRASH_CONTEXT_LAST_EVENTS 10
#define CRASH_CONTEXT_STDERR_LINES 200
#define CRASH_CONTEXT_BRIEF_TEXT 120

/* Adds lastEventIds and the runtime's own account to ev, the JSON of crash event
 * row of session session_key. */
void crash_context_add(cJSON *ev, struct store_reader *rd, int64_t session_key,
                       const struct store_event_row *row, bool verbose);

#endif
