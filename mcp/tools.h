/*
 * tools.h - the MCP tool catalog (names, descriptions, input schemas: the data in
 * mcp/tools.json) and the handlers behind it. A handler validates its arguments,
 * calls the engine (core/) and formats the answer; it returns the result object,
 * or NULL with e set.
 */
#ifndef STROBE_TOOLS_H
#define STROBE_TOOLS_H

#include <cjson/cJSON.h>

#include "base/error.h"
#include "core/collector.h"
#include "mcp/tool_ctx.h"

typedef cJSON *(*tool_fn)(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);

/* A row of the handler table: the catalog's tool name and its handler. */
struct tool_def {
    const char *name;
    tool_fn fn;
};

/* NULL when no tool has that name. */
const struct tool_def *tools_find(const char *name);
/* The tools/list result: {"tools": [...]}, the catalog as it is. */
cJSON *tools_list(void);
/* "debug_launch, debug_trace, ..." (the catalog's names, in its order) for error
 * messages. */
const char *tools_names(void);
/* NULL when the catalog built into the binary passes tools_catalog_parse, else why
 * not: a broken build (the daemon does not start with it). */
const char *tools_catalog_error(void);

/* mcp/tools.json as built into the binary (mcp/tools_json.S), NUL-terminated. */
extern const char tools_json[];
/* text parsed as a catalog: a JSON array of tools, each with a name and a
 * description (strings) and an inputSchema (an object), naming every handler of
 * the table in mcp/tools.c once and no other tool. NULL with why set when it is
 * not (exposed for tests). */
cJSON *tools_catalog_parse(const char *text, char *why, size_t cap);

cJSON *tool_debug_launch(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_session(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
/* debug_session action "stacks" (mcp/tool_stacks.c), for session id. */
cJSON *tool_session_stacks(const cJSON *args, const char *id, struct strobe_error *e);
/* A frame as one string: "fn (file.c:12)", or "fn" without line info. */
void tool_frame_text(const struct collector_frame *f, char *buf, size_t cap);
/* Where thread th is in the program's code and what it waits for, from a stacks
 * snapshot: "in dequeue (orders.c:52), inside futex_wait, waiting on mutex q.lock
 * (held by thread 31)"; "" when the snapshot knows neither. */
void tool_thread_where(const struct collector_thread *th, char *buf, size_t cap);
/* Its answer for a snapshot, cut to the budget (exposed for tests). NULL: no memory. */
cJSON *tool_stacks_json(const char *id, const struct collector_stacks *st, bool verbose);
cJSON *tool_debug_query(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_trace(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
/* patterns: [{pattern, matched, armed, warning?}] of r, added to out (tool_trace.c;
 * debug_launch answers with it too). */
void tool_pattern_results(cJSON *out, const struct trace_result *r);
/* debug_session status: the live session id's patterns as above, when it has any. */
void tool_add_pattern_status(cJSON *out, const char *id);
cJSON *tool_debug_memory(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
/* debug_memory's actions, for session id (args already checked against the tool's
 * fields): read and write (tool_memory_rw.c), read with poll (tool_poll.c), watch
 * and unwatch (tool_watch.c). */
cJSON *tool_memory_read(const cJSON *args, const char *id, struct strobe_error *e);
cJSON *tool_memory_write(const cJSON *args, const char *id, struct strobe_error *e);
cJSON *tool_memory_poll(const cJSON *args, const char *id, struct strobe_error *e);
cJSON *tool_memory_watch(const cJSON *args, const char *id, struct strobe_error *e);
cJSON *tool_memory_unwatch(const cJSON *args, const char *id, struct strobe_error *e);
/* One event as debug_query shows it (a crash without its joined context). */
struct timeline_event;
cJSON *tool_event_json(const struct timeline_event *r, bool verbose);
/* One breakpoint spec ({function} or {file, line}, with condition, hitCount, oneShot,
 * allStop, message) of list[i] (debug_breakpoint's add, debug_launch's breakpoints):
 * strings point into o. */
struct collector_breakpoint;
int tool_breakpoint_parse(const cJSON *o, const char *list, int i,
                          struct collector_breakpoint *b, struct strobe_error *e);
/* args' "breakpoints" (debug_launch's, debug_test's: up to DEBUG_ADD_MAX specs, none
 * when absent) into out, numbered for the launch that takes them; *n how many.
 * Strings point into args. */
int tool_breakpoints_given(const cJSON *args, struct collector_breakpoint *out, int *n,
                           struct strobe_error *e);
/* How often something set at set_ns (CLOCK_MONOTONIC) fired a second, n times so far
 * (0 for its first 100 ms: a rate over a few hits means nothing). tool_hot.c. */
double tool_hot_rate(int64_t n, int64_t set_ns);
/* Adds "hot" [{kind, id, where, perSecond, workUsPerHit?}] and "hotNote" (the rate,
 * the cost, what it does to the program's speed, what to do) when a breakpoint,
 * logpoint, condition or data watch of session id fires more than 1,000 times a
 * second: to status, debug_query and debug_continue answers (tool_hot.c). */
void tool_add_hot(cJSON *o, const char *id);
/* debug_breakpoint's shape of a breakpoint (also in debug_launch's answer). */
cJSON *tool_breakpoint_json(const struct collector_bp_info *b, bool staged);
/* Adds "breakpoints": N (logpoints included) and "logpoints": N (when any) of session
 * id to o. */
void tool_add_breakpoint_count(cJSON *o, const char *id);
cJSON *tool_debug_breakpoint(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_continue(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
/* debug_test (action run / status) and the spec's debug_test_status (tool_test.c). */
cJSON *tool_debug_test(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_test_status(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
/* Exact counts (tool_counts.c) of session id, while its target is held: status's
 * topFunctions (when top_functions; replacing the store's counts of recorded
 * events), "sampling" [{function, calls, recorded, since, callsExact}] for the
 * functions whose events are a sample, and "overhead" (the tracer's measured share
 * of the program's wall time). tool_add_sampling adds "sampling" alone; false when
 * no function is sampled. */
void tool_add_counts(cJSON *o, const char *id, bool top_functions);
bool tool_add_sampling(cJSON *o, const char *id);
/* What the session's event cap evicted (tool_evicted.c), added to o when any of it
 * concerns q (its event type and time range; every type when q is NULL):
 * "evictedEvents" (exact), "evictedByType" {type: events}, "oldestEventId" (the
 * oldest event kept of those types, by time), "evictedPastCursor" when events after
 * q's afterEventId went before it read them, and "evictedEventsNote" saying what to do. */
struct event_query;
void tool_add_evicted_events(cJSON *o, struct timeline_reader *rd, int64_t key,
                             const struct event_query *q);
/* Adds "paused" (the paused threads of session id as status shows them) to o;
 * false (nothing added) when none is paused. */
bool tool_add_paused(cJSON *o, const char *id);

/* The `watches` field of debug_trace and debug_test ({add: [targets], remove:
 * [labels]}), checked (tool_trace.c). Strings point into args; free remove. */
struct tool_watches {
    struct trace_watch_spec add[TRACE_WATCHES_MAX + 1];
    const char *on[TRACE_WATCHES_MAX + 1][TRACE_WATCH_ON_MAX];
    int n_add;
    const char **remove;
    int n_remove;
    bool present;
};
int tool_watches_parse(const cJSON *args, struct tool_watches *w, struct strobe_error *e);

/* debug_query's shape of a watch_hit event (ev from its generic form): the summary
 * keeps label, old -> new and where; verbose adds the frames (tool_watch.c). */
void tool_watch_hit_shape(cJSON *ev, int tid, bool verbose);

#endif
