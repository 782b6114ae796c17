/*
 * error.c - error codes and their names. See error.h.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *err_code_name(enum err_code code)
{
    switch (code) {
    case ERR_NONE: return "OK";
    case ERR_VALIDATION: return "VALIDATION_ERROR";
    case ERR_COMMAND_NOT_FOUND: return "COMMAND_NOT_FOUND";
    case ERR_COMMAND_NOT_EXECUTABLE: return "COMMAND_NOT_EXECUTABLE";
    case ERR_SESSION_NOT_FOUND: return "SESSION_NOT_FOUND";
    case ERR_SESSION_EXISTS: return "SESSION_EXISTS";
    case ERR_ATTACH_FAILED: return "ATTACH_FAILED";
    case ERR_PROCESS_EXITED: return "PROCESS_EXITED";
    case ERR_INVALID_PATTERN: return "INVALID_PATTERN";
    case ERR_NO_DEBUG_SYMBOLS: return "NO_DEBUG_SYMBOLS";
    case ERR_NOT_IMPLEMENTED: return "NOT_IMPLEMENTED";
    case ERR_INTERNAL: return "INTERNAL_ERROR";
    case ERR_VARIABLE_NOT_FOUND: return "VARIABLE_NOT_FOUND";
    case ERR_VARIABLE_UNAVAILABLE: return "VARIABLE_UNAVAILABLE";
    case ERR_BAD_EXPRESSION: return "BAD_EXPRESSION";
    case ERR_MEMORY_UNREADABLE: return "MEMORY_UNREADABLE";
    case ERR_MEMORY_UNWRITABLE: return "MEMORY_UNWRITABLE";
    case ERR_VALUE_OUT_OF_RANGE: return "VALUE_OUT_OF_RANGE";
    case ERR_LIMIT_EXCEEDED: return "LIMIT_EXCEEDED";
    case ERR_WATCH_SLOTS_FULL: return "WATCH_SLOTS_FULL";
    case ERR_WATCH_TOO_LARGE: return "WATCH_TOO_LARGE";
    case ERR_WATCH_FAILED: return "WATCH_FAILED";
    case ERR_WATCH_UNSUPPORTED: return "WATCH_UNSUPPORTED";
    case ERR_FILE_NOT_FOUND: return "FILE_NOT_FOUND";
    case ERR_LINE_NOT_FOUND: return "LINE_NOT_FOUND";
    case ERR_FUNCTION_NOT_FOUND: return "FUNCTION_NOT_FOUND";
    case ERR_BREAKPOINT_NOT_FOUND: return "BREAKPOINT_NOT_FOUND";
    case ERR_NOT_PAUSED: return "NOT_PAUSED";
    case ERR_THREAD_NOT_PAUSED: return "THREAD_NOT_PAUSED";
    case ERR_TEST_RUN_NOT_FOUND: return "TEST_RUN_NOT_FOUND";
    case ERR_STORE_FULL: return "STORE_FULL";
    }
    return "INTERNAL_ERROR";
}

enum err_code err_code_parse(const char *name)
{
    for (int c = ERR_NONE + 1; name && c <= ERR_STORE_FULL; c++)
        if (strcmp(err_code_name((enum err_code)c), name) == 0)
            return (enum err_code)c;
    return ERR_NONE;
}

int err_set(struct strobe_error *e, enum err_code code, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}
