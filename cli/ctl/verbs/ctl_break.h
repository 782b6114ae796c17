/*
 * ctl_break.h - strobectl's breakpoint and execution commands: break, breakpoints,
 * delete SESSION ID...|all (debug_breakpoint) and continue, next, step, finish,
 * pause, until (debug_continue), from argv to the tool's arguments as
 * docs/PROTOCOL.md describes them ("debug_breakpoint", "debug_continue"). No I/O;
 * its verbs are rows of ctl_break_verbs (ctl_verbs.h), man/strobectl.1
 * documents them.
 */
#ifndef STROBE_CTL_BREAK_H
#define STROBE_CTL_BREAK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "cli/ctl/verbs/ctl_args.h"
#include "cli/ctl/verbs/ctl_walk.h"

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

/* Whether `delete` with the arguments argv[i..argc) removes breakpoints (a SESSION
 * and at least one ID or 'all') rather than deleting the session (a SESSION alone). */
bool ctl_delete_is_breakpoints(int argc, char **argv, int i);

/* Parses the arguments of command kind (CTL_BREAK through CTL_UNTIL; see ctl_args.h)
 * from the walker into args, the tool's arguments object. 0, or -1 with a usage
 * error in w->err (args then holds a partial object the caller deletes). */
int ctl_parse_break(struct ctl_walker *w, enum ctl_kind kind, cJSON *args);

#endif
