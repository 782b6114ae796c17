/* tool_poll.c - debug_memory read with poll (placeholder until built). */
#include "mcp/tools.h"

cJSON *tool_memory_poll(const cJSON *args, const char *id, struct strobe_error *e)
{
    (void)args, (void)id;
    err_set(e, ERR_NOT_IMPLEMENTED, "debug_memory poll is being built.");
    return NULL;
}
