/*
 * repl_wait.h - the REPL waiting for the program and telling what happened: the
 * waits of debug_continue, the reports of stops, exits, crashes and watchpoint hits
 * in gdb's words, and the program's stdout and stderr printed before them. The
 * commands that run the program (repl_run.c, repl_own.c) call them.
 */
#ifndef STROBE_REPL_WAIT_H
#define STROBE_REPL_WAIT_H

#include <cjson/cJSON.h>

struct repl;

/* Prints a debug_continue answer as gdb does (the stop, the exit, a watch hit) and
 * the program's output that came before it; updates the last stop. before is the
 * stop the command started from (a step prints the frame line when it changes
 * function). Returns 1 when it is an error to report in -batch (none so far). */
int repl_report(struct repl *r, const cJSON *answer, const char *before_fn);

/* Waits in debug_continue with args (consumed) until a stop, an exit or Ctrl-C, asking again
 * while the program runs on; prints the outcome. r->waiting is set meanwhile (a
 * Ctrl-C already noted in r->interrupted pauses the program first). 0, or 1. */
int repl_wait(struct repl *r, cJSON *args);

/* Appends to the array out every event of the session of type (NULL: all) after
 * event id after (NULL: from the start), following debug_query's pages. 0, or -1
 * with the "CODE: sentence" in err (1024 bytes; NULL: not kept). */
int repl_query_all(struct repl *r, const char *type, const char *after, cJSON *out,
                   char *err);

/* Prints the session's stdout and stderr lines not shown yet (only those before
 * event id before, when not NULL). */
void repl_show_output(struct repl *r, const char *before);

#endif
