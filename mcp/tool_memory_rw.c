/* tool_memory_rw.c - debug_memory read and write (placeholder until built). */
#include "mcp/tools.h"

cJSON *tool_memory_read(const cJSON *args, const char *id, struct strobe_error *e)
{
    (void)args, (void)id;
    err_set(e, ERR_NOT_IMPLEMENTED, "debug_memory read is being built.");
    return NULL;
}

cJSON *tool_memory_write(const cJSON *args, const char *id, struct strobe_error *e)
{
    (void)args, (void)id;
    err_set(e, ERR_NOT_IMPLEMENTED, "debug_memory write is being built.");
    return NULL;
}
