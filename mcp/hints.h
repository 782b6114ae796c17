/*
 * hints.h - the next step after an engine answer, in MCP terms. The engine (core/,
 * the collectors) says what happened ("No session found with ID 'x'."); the tool
 * handlers add what an agent should do about it, naming MCP tools and fields, so
 * that the engine never depends on the protocol that fronts it.
 */
#ifndef STROBE_HINTS_H
#define STROBE_HINTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/collector.h"

/* The sentence to append to an error of this code raised while serving tool (its
 * MCP name, "debug_trace"), or NULL when the engine's sentence is all there is. */
const char *hint_for(const char *tool, enum err_code code);

/* Appends hint_for(tool, e->code), after a space, to e->msg (truncated to fit). */
void hints_apply(const char *tool, struct strobe_error *e);

/* The sentence debug_trace adds to a runtime answer's status (where the calls of
 * the hooked functions can be read), or NULL when nothing is hooked. */
const char *hint_trace_status(const struct trace_result *r);

/* What to do after debug_trace met a program that has ended, by how long it ran
 * (ms; -1 unknown): a short run (< 1 s) is told to stage the patterns before the
 * launch, since calls made by then are gone and a relaunch would be as quick. */
const char *hint_trace_exited(int64_t run_ms);

/* The status of debug_trace in pending mode, for n staged patterns, into buf. */
void hint_trace_pending(int n, char *buf, size_t cap);

#endif
