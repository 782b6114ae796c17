/*
 * tools.h - the MCP tool catalog (names, descriptions, input schemas) and the
 * handlers behind it. A handler validates its arguments, calls the engine (core/)
 * and formats the answer; it returns the result object, or NULL with e set.
 */
#ifndef STROBE_TOOLS_H
#define STROBE_TOOLS_H

#include <cjson/cJSON.h>

#include "base/error.h"
#include "store/store.h"

struct tool_ctx {
    struct store *store;
    struct store_reader *reader; /* this connection's, opened on first use */
};

typedef cJSON *(*tool_fn)(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);

struct tool_def {
    const char *name;
    const char *description;
    const char *input_schema; /* JSON text */
    tool_fn fn;
};

/* NULL when no tool has that name. */
const struct tool_def *tools_find(const char *name);
/* The tools/list result: {"tools": [...]}. */
cJSON *tools_list(void);
/* "debug_launch, debug_trace, ..." for error messages. */
const char *tools_names(void);

/* The reader of ctx, opened on first use; NULL with e set on failure. */
struct store_reader *tool_reader(struct tool_ctx *ctx, struct strobe_error *e);

cJSON *tool_debug_launch(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_session(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_query(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);
cJSON *tool_debug_trace(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e);

#endif
