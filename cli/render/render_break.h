/*
 * render_break.h - the text forms of debug_breakpoint and debug_continue answers
 * (docs/PROTOCOL.md), as gdb prints them: a breakpoint table, where a thread paused
 * with its frames, arguments and locals, how the program ended, or what happened
 * while it ran on. Like render.h, they write only to out and tolerate missing
 * fields, so any client can print them and hand-written answers unit-test them.
 */
#ifndef STROBE_RENDER_BREAK_H
#define STROBE_RENDER_BREAK_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* A debug_breakpoint answer (add, list, remove): "deleted breakpoints 1, 2" when it
 * removed some, a table "ID KIND WHERE HITS CONDITION" (or "no breakpoints"),
 * "staged for the next launch", then a line per breakpoint that moved to another
 * line, has a note or failed to evaluate its condition. */
void render_breakpoints(FILE *out, const cJSON *r);

/* A debug_continue answer:
 *   paused:  "Thread 1234 paused at calc.c:42 in compute (breakpoint 1)", the
 *            return value of a finish, frames "#0 compute (calc.c:42)", then
 *            "arguments:" and "locals:" with "  name = value" lines;
 *   exited:  "program exited with code 3" or "program killed by SIGSEGV";
 *   running: "condition met: " and the event or values of an until, else
 *            "still running after 10000 ms: N events, last output: LINE".
 * Returns true for the last case: the wait ended without a stop or a condition
 * met (strobectl exits 5). */
bool render_stop(FILE *out, const cJSON *r);

#endif
