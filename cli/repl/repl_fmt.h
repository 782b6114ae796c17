/*
 * repl_fmt.h - gdb's text forms for the REPL, from the daemon's JSON answers (no
 * other I/O than the FILE given and, for source lines, the source file on disk), so
 * that hand-written answers unit-test them: values (`17`, `0x11`, `"walk"`,
 * `{next = 0x0, value = 3}`), frame lines (`#0  compute (n=4) at calc.c:42`), stops
 * (`Breakpoint 1, compute (n=4) at calc.c:42` then `42\t<source line>`), exits
 * (`[Inferior 1 (process N) exited with code 3]`) and signals.
 */
#ifndef STROBE_REPL_FMT_H
#define STROBE_REPL_FMT_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* A value of an answer (arguments, locals, debug_memory read) as gdb prints it. type
 * is its C type (may be NULL); fmt is 0, or 'x' 'd' 'u' 'o' 't' 'c' of print/FMT;
 * size is its size in bytes (0: unknown, 8 assumed for /x of a negative). */
void repl_fmt_value(FILE *out, const cJSON *v, const char *type, char fmt, int size);

/* "compute (n=4, p=0x1234) at calc.c:42": function, the {name, type, value} array args
 * (NULL: "()"), the base name of file, line. */
void repl_fmt_where(FILE *out, const char *function, const cJSON *args, const char *file,
                    long long line);

/* "#N  function (args) at file:line\n" for frame object f ({function, file, line}). */
void repl_fmt_frame(FILE *out, int level, const cJSON *f, const cJSON *args);

/* "LINE\t<the line of path>\n", or "LINE\tin PATH\n" when it cannot be read. */
void repl_fmt_source(FILE *out, const char *path, long long line);

/* A paused debug_continue answer as gdb reports a stop: a breakpoint hit ("\nLABEL N, "
 * with label "Breakpoint" or "Temporary breakpoint", and the where line; only the
 * where line when label is NULL, as gdb reports advance and until LOCATION),
 * a step (the where line only when the function differs from before_fn), an
 * interrupt ("Program received signal SIGINT, Interrupt."), then the source line,
 * and for a finish "Value returned is $N = V" (*values is incremented). */
void repl_fmt_stop(FILE *out, const cJSON *a, const char *before_fn, const char *label,
                   int *values);

/* An exited answer: "[Inferior 1 (process PID) exited normally]", "... exited with
 * code N]", or "Program terminated with signal SIGSEGV, Segmentation fault." */
void repl_fmt_exit(FILE *out, const cJSON *a, long long pid);

/* The crash event e (debug_query eventType crash) as gdb reports the signal:
 * "\nProgram received signal SIGSEGV, Segmentation fault.\n", the crashing frame's
 * where line and its source line. */
void repl_fmt_crash(FILE *out, const cJSON *e);

/* A watch_hit event: "\nHardware watchpoint N: LABEL\n\nOld value = 1\nNew value = 2\n"
 * then the writer's where line and source line, and a line saying the program ran
 * on. kind is "Hardware watchpoint" or another of gdb's names. */
void repl_fmt_watch_hit(FILE *out, const cJSON *e, int num, const char *kind);

/* path's base name ("?" for NULL). */
const char *repl_base_name(const char *path);

#endif
