/*
 * event.c - names of event types, the single place the wire names live; the string
 * fields of an event, the single list of them.
 */
#include "base/event.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static const char *const names[] = {
    [EV_STDOUT] = "stdout",
    [EV_STDERR] = "stderr",
    [EV_FUNCTION_ENTER] = "function_enter",
    [EV_FUNCTION_EXIT] = "function_exit",
    [EV_CRASH] = "crash",
    [EV_PROCESS_EXIT] = "process_exit",
    [EV_VARIABLE_SNAPSHOT] = "variable_snapshot",
    [EV_WATCH_HIT] = "watch_hit",
    [EV_LOGPOINT] = "logpoint",
    [EV_PAUSE] = "pause",
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

bool event_describe_exit(int pid, int ws, bool stopped, char *text, size_t text_cap,
                         char *data, size_t data_cap)
{
    if (WIFEXITED(ws)) {
        snprintf(text, text_cap, "process %d exited with code %d", pid, WEXITSTATUS(ws));
        snprintf(data, data_cap, "{\"exitCode\":%d}", WEXITSTATUS(ws));
        return true;
    }
    int sig = WTERMSIG(ws);
    const char *abbrev = sigabbrev_np(sig);
    snprintf(text, text_cap, "process %d killed by SIG%s%s", pid, abbrev ? abbrev : "UNKNOWN",
             stopped ? " (session stopped)" : "");
    snprintf(data, data_cap, "{\"signal\":\"SIG%s\",\"signalNumber\":%d}",
             abbrev ? abbrev : "UNKNOWN", sig);
    return false;
}

const char **event_string(struct event *e, int i)
{
    switch (i) {
    case 0: return &e->thread_name;
    case 1: return &e->function;
    case 2: return &e->function_raw;
    case 3: return &e->source_file;
    case 4: return &e->arguments;
    case 5: return &e->return_value;
    case 6: return &e->text;
    default: return &e->data;
    }
}
