/*
 * tool_memory.c - debug_memory: the action dispatcher. Each action's validation
 * and answer live in their own file: read and write (mcp/tool_memory_rw.c), poll
 * (a read with `poll`, mcp/tool_poll.c), watch and unwatch (mcp/tool_watch.c).
 */
#include <string.h>

#include "mcp/args.h"
#include "mcp/tools.h"

static const char *const fields[] = {"action", "sessionId", "pid", "targets", "depth",
                                     "poll", "variable", "address", "size", "type",
                                     "access", "watchId", "threadId", "frame", NULL};

cJSON *tool_debug_memory(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    (void)ctx;
    const char *action = NULL, *id = NULL;
    if (args_only(args, "debug_memory", fields, e) != 0 ||
        args_string(args, "action", false, &action, e) != 0 ||
        args_string(args, "sessionId", true, &id, e) != 0)
        return NULL;
    if (!action)
        action = "read";
    if (strcmp(action, "read") == 0)
        return cJSON_HasObjectItem(args, "poll") ? tool_memory_poll(args, id, e)
                                                 : tool_memory_read(args, id, e);
    if (strcmp(action, "write") == 0)
        return tool_memory_write(args, id, e);
    if (strcmp(action, "watch") == 0)
        return tool_memory_watch(args, id, e);
    if (strcmp(action, "unwatch") == 0)
        return tool_memory_unwatch(args, id, e);
    err_set(e, ERR_VALIDATION, "'action' must be read, write, watch or unwatch; not '%s'.",
            action);
    return NULL;
}
