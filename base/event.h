/*
 * event.h - the event model shared by every producer (output capture, the tracer)
 * and the store.
 *
 * An event is one row of the unified timeline. Producers fill a struct event whose
 * string fields point at memory they own; ring_push() copies everything it needs, so
 * a producer may reuse its buffers as soon as the push returns. Strings are UTF-8
 * and NUL-terminated; NULL means "absent" (stored as SQL NULL). JSON-valued fields
 * (arguments, return_value, data) hold serialized JSON text, never a parsed tree, so
 * the engine never depends on a JSON library.
 */
#ifndef STROBE_EVENT_H
#define STROBE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum event_type {
    EV_STDOUT = 1,
    EV_STDERR = 2,
    EV_FUNCTION_ENTER = 3,
    EV_FUNCTION_EXIT = 4,
    EV_CRASH = 5,
    EV_PROCESS_EXIT = 6,
    EV_VARIABLE_SNAPSHOT = 7,
    EV_WATCH_HIT = 8,         /* a data watchpoint fired: data has old/new value, stack */
    EV_LOGPOINT = 9,          /* a logpoint's message (text); data has its breakpoint id,
                                 file, line */
    EV_PAUSE = 10,            /* a thread stopped: at a breakpoint, at the end of a step,
                                 on request (pause); text says where, data why */
};
#define EV_TYPE_MIN EV_STDOUT
#define EV_TYPE_MAX EV_PAUSE

/* True for the event types the per-session FIFO limit may evict (the high-volume
 * ones: calls, snapshots, watch hits, logpoint messages). Output, crash, exit and
 * pause events are the black box of a session and are never evicted. */
static inline bool event_type_evictable(int type)
{
    return type == EV_FUNCTION_ENTER || type == EV_FUNCTION_EXIT ||
           type == EV_VARIABLE_SNAPSHOT || type == EV_WATCH_HIT || type == EV_LOGPOINT;
}

/* "stdout", "function_enter", ... as in spec 003; NULL for an unknown value. */
const char *event_type_name(int type);
/* Inverse of event_type_name(); 0 when the name is unknown. */
int event_type_parse(const char *name);

/* The text ("process 12 exited with code 3", "process 12 killed by SIGSEGV") and
 * data JSON ({"exitCode":3} or {"signal":"SIGSEGV","signalNumber":11}) of the
 * process_exit event of pid for wait(2) status ws; stopped says the session was
 * stopped (kill on request). Returns true when the process exited normally. */
bool event_describe_exit(int pid, int ws, bool stopped, char *text, size_t text_cap,
                         char *data, size_t data_cap);

struct event {
    int64_t session_key;     /* store_session_create()'s key */
    int type;                /* enum event_type */
    int64_t ts_ns;           /* ns since the session started, CLOCK_MONOTONIC */
    int32_t pid;
    int32_t tid;
    const char *thread_name;
    /* Call hierarchy: the producer numbers events of a session; the store maps
     * parent_seq to the parent's event id. 0 = none. */
    int64_t seq;
    int64_t parent_seq;
    /* Location (function events, crash top frame). */
    const char *function;     /* demangled */
    const char *function_raw; /* linkage name */
    const char *source_file;
    int32_t line;
    /* Payloads. */
    const char *arguments;    /* JSON */
    const char *return_value; /* JSON */
    int64_t duration_ns;      /* -1 = absent */
    const char *text;         /* output line, exit description */
    const char *data;         /* JSON object: type-specific extras (exit code, crash) */
    bool sampled;
};

/* The string fields of an event, for the code that copies one (base/ring.c, the
 * store's held events in store/order.c): field i, 0 <= i < EVENT_STRINGS. A new
 * string field of struct event goes there too. */
enum { EVENT_STRINGS = 8 };
const char **event_string(struct event *e, int i);

/* A zeroed event with the "absent" markers set. */
static inline struct event event_init(int64_t session_key, int type, int64_t ts_ns)
{
    struct event e = {0};
    e.session_key = session_key;
    e.type = type;
    e.ts_ns = ts_ns;
    e.duration_ns = -1;
    return e;
}

#endif
