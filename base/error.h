/*
 * error.h - the error vocabulary the engine reports to its callers. Each code is
 * shown to the agent as "CODE: sentence": the engine's sentence says what happened,
 * and the front end appends what to do next in its own terms (mcp/hints.h).
 */
#ifndef STROBE_ERROR_H
#define STROBE_ERROR_H

#include <stddef.h>

enum err_code {
    ERR_NONE = 0,
    ERR_VALIDATION,          /* VALIDATION_ERROR */
    ERR_COMMAND_NOT_FOUND,
    ERR_COMMAND_NOT_EXECUTABLE,
    ERR_SESSION_NOT_FOUND,
    ERR_SESSION_EXISTS,
    ERR_ATTACH_FAILED,
    ERR_PROCESS_EXITED,
    ERR_INVALID_PATTERN,
    ERR_NO_DEBUG_SYMBOLS,
    ERR_NOT_IMPLEMENTED,
    ERR_INTERNAL,
    /* memory and watches */
    ERR_VARIABLE_NOT_FOUND,   /* no global/static of that name (near names suggested) */
    ERR_VARIABLE_UNAVAILABLE, /* optimized out, register-only, thread-local, constant */
    ERR_BAD_EXPRESSION,       /* syntax; no such member; not a pointer/array; derefs */
    ERR_MEMORY_UNREADABLE,
    ERR_MEMORY_UNWRITABLE,
    ERR_VALUE_OUT_OF_RANGE,   /* a write the target's type cannot hold */
    ERR_LIMIT_EXCEEDED,       /* too many targets, watches, ... */
    ERR_WATCH_SLOTS_FULL,
    ERR_WATCH_TOO_LARGE,      /* a data watch over more than 8 bytes */
    ERR_WATCH_FAILED,         /* the debug registers refused it */
    ERR_WATCH_UNSUPPORTED,    /* this machine never raises debug-register traps */
    ERR_FILE_NOT_FOUND,       /* a breakpoint's file is not in the debug info */
    ERR_LINE_NOT_FOUND,       /* the file has no code at or after that line */
    ERR_FUNCTION_NOT_FOUND,   /* a breakpoint's pattern matches no function */
    ERR_BREAKPOINT_NOT_FOUND, /* no breakpoint with that id */
    ERR_NOT_PAUSED,           /* continue or step with no thread paused */
    ERR_THREAD_NOT_PAUSED,    /* a step of a thread that is not paused */
    ERR_TEST_RUN_NOT_FOUND,   /* debug_test status of an unknown testRunId */
    ERR_STORE_FULL,           /* the database cannot grow: its disk is full */
};

struct strobe_error {
    enum err_code code;
    char msg[512];
};

/* "VALIDATION_ERROR", "SESSION_NOT_FOUND", ... */
const char *err_code_name(enum err_code code);
/* The code named name (err_code_name's inverse); ERR_NONE for NULL or an unknown name
 * (an in-target helper's reply names its error's code this way). */
enum err_code err_code_parse(const char *name);

/* Sets e (when not NULL) and returns -1, so callers can `return err_set(...)`. */
int err_set(struct strobe_error *e, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
