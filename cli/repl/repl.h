/*
 * repl.h - the gdb-style REPL (`strobectl repl`, `strobe` on a terminal). Every
 * command is a tool call over one connection to the daemon kept for the whole REPL:
 * nothing reads text meant for people. The commands are documented in
 * man/strobe-repl.1.
 *
 * Calls run one way, from the top down:
 *   repl.c          the loop: command line (-batch, -x, -ex), line editing and
 *                   history, scripts; TAB completion (repl_complete.h) under it;
 *   repl_cmds.c     the command table (repl_cmds.h): lookup, help, quit;
 *   the commands    repl_run.c (file, run, continue, step...), repl_own.c (strobe's
 *                   own: trace, events, crash, output, test, session) and
 *                   repl_info.c (info, list) over repl_break.c (break, delete,
 *                   watch) and repl_inspect.c (bt, frame, print, set var, x,
 *                   display);
 *   repl_wait.c     the waits for the program and the reports of its stops
 *                   (repl_wait.h): run and own wait, a report lists the
 *                   breakpoints (repl_break.c) and the displays (repl_inspect.c);
 *   below them all  the state and its helpers (repl_state.h), gdb's text forms
 *                   (repl_fmt.h), the argument grammar (repl_parse.h), Ctrl-C
 *                   (repl_intr.h).
 */
#ifndef STROBE_REPL_H
#define STROBE_REPL_H

/* `strobectl repl ...` (argv[0] is "repl") and `strobe` alone on a terminal (argc 0).
 * Returns the exit status: 0, 1 when the last command of -batch failed, 2 when the
 * daemon cannot be reached, 64 on a usage error. */
int repl_main(int argc, char **argv);

#endif
