/*
 * tool_ctx.h - what every tool handler is handed: the connection it answers (the
 * daemon's store, the connection's timeline reader, who asks). Below the handlers
 * and the catalog (mcp/tools.h) alike, so a handler's helpers never call up into
 * the dispatcher.
 */
#ifndef STROBE_TOOL_CTX_H
#define STROBE_TOOL_CTX_H

#include "base/error.h"
#include "core/debug.h"

struct store; /* the daemon's database: opaque here, handed to the engine */

struct tool_ctx {
    struct store *store;
    struct timeline_reader *reader; /* this connection's, opened on first use */
    struct debug_conn conn;         /* who asks (core/debug.h: pauses it controls) */
};

/* The timeline reader of ctx (core/timeline.h), opened on first use; NULL with e
 * set on failure. */
struct timeline_reader *tool_reader(struct tool_ctx *ctx, struct strobe_error *e);

#endif
