/*
 * event.c - names of event types, the single place the wire names live.
 */
#include "core/event.h"

#include <string.h>

static const char *const names[] = {
    [EV_STDOUT] = "stdout",
    [EV_STDERR] = "stderr",
    [EV_FUNCTION_ENTER] = "function_enter",
    [EV_FUNCTION_EXIT] = "function_exit",
    [EV_CRASH] = "crash",
    [EV_PROCESS_EXIT] = "process_exit",
    [EV_VARIABLE_SNAPSHOT] = "variable_snapshot",
};

const char *event_type_name(int type)
{
    if (type < EV_TYPE_MIN || type > EV_TYPE_MAX)
        return NULL;
    return names[type];
}

int event_type_parse(const char *name)
{
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        if (strcmp(names[t], name) == 0)
            return t;
    return 0;
}
