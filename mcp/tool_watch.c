/* tool_watch.c - debug_memory watch and unwatch (placeholder until built). */
#include "mcp/tools.h"

cJSON *tool_memory_watch(const cJSON *args, const char *id, struct strobe_error *e)
{
    (void)args, (void)id;
    err_set(e, ERR_NOT_IMPLEMENTED, "debug_memory watch is being built.");
    return NULL;
}

cJSON *tool_memory_unwatch(const cJSON *args, const char *id, struct strobe_error *e)
{
    (void)args, (void)id;
    err_set(e, ERR_NOT_IMPLEMENTED, "debug_memory unwatch is being built.");
    return NULL;
}
