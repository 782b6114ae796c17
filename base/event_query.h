/*
 * event_query.h - which events of a session to read and which page of them: debug_query's
 * filter, in the one shape every layer fills or reads. mcp/query_filter.c parses it
 * from JSON, the engine's read API (core/timeline.h) resolves its relative time bounds
 * and compiles its patterns, and the store (store/query.c) plans it. Nothing copies it
 * field by field on the way: the engine passes a pointer, or a struct copy when it
 * changes the page (timeline_first_match()).
 *
 * Why base/: the layering is one way (base <- store <- core <- mcp). Declared in
 * store/, the MCP handlers would name a store type to fill it; declared in core/, the
 * store could not read it; base/ is below all three, and already owns the event model
 * (base/event.h) whose fields this filters. It is plain data: the strings are
 * borrowed from whoever filled it, for as long as it is used.
 *
 * Patterns: function_matches and text_matches are regular expressions (base/regex.h)
 * compiled once per request, into function_re and text_re, and those handles are what
 * the store matches with; the strings stay for the sentences that name a pattern. A
 * handle is compiled by the first reader that needs it (text_re by mcp/query_filter.c,
 * which rejects a bad text pattern in its own words; the rest by core/timeline.c) and
 * kept in the query for every later read with it: a wait that looks for its event after
 * every stop of the program compiles nothing again. The query owns its handles: free
 * them with event_query_free_compiled(), and before pointing a pattern string at
 * another pattern. A compiled query is used by one thread at a time (a match writes
 * into its regex's match data).
 */
#ifndef STROBE_EVENT_QUERY_H
#define STROBE_EVENT_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/regex.h"

/* A time bound: ns since the session started, or (relative) an offset <= 0 from the
 * session's latest event, as base/timearg.h parses "-5s". The store reads absolute
 * bounds only; core/timeline.c resolves relative ones. */
struct event_bound {
    bool set;
    bool relative;
    int64_t ns;
};

enum event_return_filter {
    EVENT_RETURN_ANY = 0,
    EVENT_RETURN_NULL,         /* function_exit events whose return value is absent or null */
    EVENT_RETURN_NOT_NULL,     /* function_exit events with a non-null return value */
};

/* A zeroed struct matches every event of the session (the engine reads its first page;
 * the store reads limit rows, none for 0). */
struct event_query {
    int event_type;                  /* 0 = any, else enum event_type */
    const char *function_equals;
    const char *function_contains;
    const char *function_matches;    /* a regular expression, matched through function_re */
    const char *file_equals, *file_contains;
    const char *return_equals;       /* JSON text; a number matches numerically (1.0 = 1) */
    enum event_return_filter return_null;
    const char *thread_name_contains;
    /* The event's text: output lines, logpoint messages, crash, pause and exit texts.
     * A case-sensitive substring, and a regular expression found anywhere in it
     * (through text_re); both may be set (AND). Events without text never match. */
    const char *text_contains;
    const char *text_matches;
    struct event_bound from, to;     /* inclusive */
    int64_t min_duration_ns;         /* 0 = no filter */
    int pid;                         /* 0 = any process */
    /* Only function_enter events whose function_exit is not stored (no exit names them
     * as parent): the calls entered and not yet returned, or never returned. */
    bool open_calls;
    int64_t after_id;                /* 0 = none; else only later ids, in id order */
    int limit;                       /* 0: core/timeline.h's default */
    int offset;
    struct regex *function_re;       /* function_matches compiled; NULL until then */
    struct regex *text_re;           /* text_matches compiled; NULL until then */
};

/* Frees the compiled patterns (the strings are not the query's). */
static inline void event_query_free_compiled(struct event_query *q)
{
    regex_free(q->function_re);
    regex_free(q->text_re);
    q->function_re = q->text_re = NULL;
}

#endif
