/*
 * ctl_break.h - strobectl's breakpoint and execution commands: break, breakpoints,
 * delete SESSION ID...|all (debug_breakpoint) and continue, next, step, finish,
 * pause, until (debug_continue), from argv to the tool's arguments as
 * docs/PROTOCOL.md describes them ("debug_breakpoint", "debug_continue"). No I/O;
 * ctl_args.c dispatches here, man/strobectl.1 documents the commands.
 */
#ifndef STROBE_CTL_BREAK_H
#define STROBE_CTL_BREAK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "cli/ctl_args.h"
#include "cli/ctl_walk.h"

#define U_BREAK "strobectl break [SESSION] FUNCTION|FILE:LINE [--if COND] [--hit N] " \
                "[--once] [--all-stop] [--log MESSAGE]"
#define U_BREAKPOINTS "strobectl breakpoints [SESSION]"
#define U_BPDELETE "strobectl delete SESSION ID...|all"
#define U_CONTINUE "strobectl continue SESSION [--thread TID] [--timeout MS]"
#define U_NEXT "strobectl next SESSION [--thread TID] [--timeout MS]"
#define U_STEP "strobectl step SESSION [--thread TID] [--timeout MS]"
#define U_FINISH "strobectl finish SESSION [--thread TID] [--timeout MS]"
#define U_PAUSE "strobectl pause SESSION"
#define U_UNTIL "strobectl until SESSION --breakpoint ID|--memory EXPR|--text STRING|" \
                "--matches REGEX [--stream stdout|stderr] [--timeout MS]"

/* The --help lines of these commands (part of ctl_help). */
#define CTL_BREAK_HELP \
    "  " U_BREAK "\n" \
    "      pause a thread when it reaches FUNCTION (a trace pattern) or FILE:LINE and\n" \
    "      --if COND holds (a C expression over its arguments, locals and globals),\n" \
    "      from the Nth hit on (--hit N), once (--once), stopping every thread\n" \
    "      (--all-stop); --log MESSAGE makes a logpoint that records MESSAGE ({expr}\n" \
    "      replaced by its value) as a logpoint event and never pauses; staged for the\n" \
    "      next launch without SESSION. e.g. strobectl break S calc.c:42 --if 'n > 3'\n" \
    "  " U_BREAKPOINTS "\n" \
    "      list the breakpoints: id, kind, where, hits, condition (the staged ones\n" \
    "      without SESSION), e.g. strobectl breakpoints S\n" \
    "  " U_BPDELETE "\n" \
    "      remove breakpoints (a SESSION alone deletes the session: see above),\n" \
    "      e.g. strobectl delete S 1 3, strobectl delete S all\n" \
    "  " U_CONTINUE "\n" \
    "      resume the paused threads (--thread: that one) and wait up to MS (default\n" \
    "      10000) for a thread to pause or the program to end; prints where it paused\n" \
    "      with the frames, arguments and locals, e.g. strobectl continue S\n" \
    "  " U_NEXT "\n" \
    "  " U_STEP "\n" \
    "  " U_FINISH "\n" \
    "      step the paused thread (--thread, default the latest pause) to the next\n" \
    "      line (over calls), into the called function, or out to the caller, e.g.\n" \
    "      strobectl next S, strobectl step S --thread 1235, strobectl finish S\n" \
    "  " U_PAUSE "\n" \
    "      interrupt every thread of the program now, e.g. strobectl pause S\n" \
    "  " U_UNTIL "\n" \
    "      resume and wait until breakpoint ID pauses a thread, the expression over\n" \
    "      globals holds, or a line of output contains STRING or matches REGEX, e.g.\n" \
    "      strobectl until S --text 'ready' --stream stdout\n"

/* Whether `delete` with the arguments argv[i..argc) removes breakpoints (a SESSION
 * and at least one ID or 'all') rather than deleting the session (a SESSION alone). */
bool ctl_delete_is_breakpoints(int argc, char **argv, int i);

/* Parses the arguments of command kind (CTL_BREAK through CTL_UNTIL; see ctl_args.h)
 * from the walker into args, the tool's arguments object. 0, or -1 with a usage
 * error in w->err (args then holds a partial object the caller deletes). */
int ctl_parse_break(struct ctl_walker *w, enum ctl_kind kind, cJSON *args);

#endif
