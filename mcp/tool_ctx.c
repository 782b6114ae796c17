/*
 * tool_ctx.c - the per-connection context of the tool handlers. See tool_ctx.h.
 */
#include "mcp/tool_ctx.h"

#include "core/timeline.h"

struct timeline_reader *tool_reader(struct tool_ctx *ctx, struct strobe_error *e)
{
    if (!ctx->reader)
        ctx->reader = timeline_reader_open(ctx->store, e);
    return ctx->reader;
}
