/*
 * crash_report.h - one crash event of debug_query (eventType "crash", verbose; the
 * fields are listed in man/strobectl.1 under `crash`) rendered as a terminal crash
 * report for `strobectl crash`: the summary line, the language-level detail
 * (assertion, abort message, C++ exception, Rust panic, sanitizer report), the stack
 * as gdb's backtrace prints it, the crashing frame's locals and, on request, the
 * registers. It writes only to the FILE it is given, so any client can print
 * it (strobectl, a REPL) and a hand-written event can unit-test it.
 */
#ifndef STROBE_CRASH_REPORT_H
#define STROBE_CRASH_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* Source files and modules as stored (absolute), not their basenames. */
#define CRASH_REPORT_FULL_PATHS 1u
/* Add the registers of the crashing thread. */
#define CRASH_REPORT_REGISTERS 2u

/* Longest argument value shown in a frame line, in bytes of its compact JSON;
 * longer ones are cut and end with "...". Locals are never cut. */
#define CRASH_REPORT_ARG_MAX 64

/* Writes the report of crash event e, of session sid, to out. Any field of e may be
 * missing: what is missing is left out (the summary is then composed from the
 * signal, kind and location). flags: CRASH_REPORT_*. */
void crash_report_print(FILE *out, const cJSON *e, const char *sid, unsigned flags);

/* The reports of every crash event in the array events, a blank line between two;
 * none says "no crash recorded in session SID" (" for pid PID" when pid is not 0,
 * the process the query was limited to). */
void crash_report_print_all(FILE *out, const cJSON *events, const char *sid, long long pid,
                            unsigned flags);

#endif
