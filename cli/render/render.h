/*
 * render.h - the text forms of the daemon's answers: each renderer takes a tool's
 * structured result (the JSON of structuredContent) and writes what a person reads
 * to out. They know nothing of argv, sockets or exit codes, so strobectl and any
 * other client (a REPL, a test) print the same text; crash events have their own
 * renderer, crash_report.h. Absent or wrongly typed fields are left out or
 * shown as "?" (cli/json_view.h), never a crash.
 */
#ifndef STROBE_RENDER_H
#define STROBE_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* v as indented JSON and a newline (--json). */
void render_json(FILE *out, const cJSON *v);

/* Every member of o as an aligned "key: value" line: numbers ending in "At" as
 * local times, booleans as yes/no, arrays and objects on one line; the daemon's
 * "hint" and "nextSteps" and sentences naming MCP tools are left out
 * (render_hint.h). Used for debug_session status and debug_trace. */
void render_fields(FILE *out, const cJSON *o);

/* debug_launch: "session ID pid N", then warnings and the next steps as strobectl
 * commands (the daemon's nextSteps name MCP calls). */
void render_launch(FILE *out, const cJSON *r);

/* One event of debug_query on one line: "[  12.345 ms] stderr  text"; function
 * events with their location, duration, arguments and return value; verbose shows
 * full source paths and the process and thread. */
void render_event(FILE *out, const cJSON *e, bool verbose);

/* A debug_query answer: its events, then "N of TOTAL events" with how to get more,
 * the truncation note and the session's pids. args are the query's arguments
 * (verbose, afterEventId, offset); the continuation is told with after_flag or
 * offset_flag ("--after", "--offset" in strobectl). */
void render_query(FILE *out, const cJSON *r, const cJSON *args, const char *after_flag,
                  const char *offset_flag);

/* debug_session list: a table of sessions, or "no sessions". */
void render_sessions(FILE *out, const cJSON *r);

/* What any answer says about the daemon's database (storeFull while its disk is
 * full, storeSetAside after a damaged one was set aside), one "strobectl: note:"
 * line each, for stderr beside the answer's own rendering; nothing when it says
 * neither. */
void render_store_notes(FILE *out, const cJSON *r);

/* debug_session stop and delete. */
void render_stopped(FILE *out, const cJSON *r);
void render_deleted(FILE *out, const cJSON *r);

/* tools/list: one tool name a line. */
void render_tools(FILE *out, const cJSON *r);
/* debug_session stacks, like gdb's `thread apply all bt`: the diagnosis first, then a block
 * per thread ("Thread TID (name) sleeping in futex, waiting for mutex g_table.lock (0x…)
 * held by TID") with its frames "#N fn (file:line)". Also a stuck test's threads
 * (render_test.h), whose waits have no address. */
void render_stacks(FILE *out, const cJSON *r);

/* debug_memory read and write, a line per target: "g_config.retries = 3 (int at
 * 0x…)", "g_int: -42 -> 7 (int at 0x…)", "buf: 64 bytes at 0x… saved to FILE" with
 * the preview, or "name: CODE: sentence". */
void render_memory(FILE *out, const cJSON *r);
/* debug_memory poll: what is sampled and how to read it; the targets left out with
 * their errors. Returns how many targets failed. */
int render_poll(FILE *out, const cJSON *r, const char *session_id);

#endif
