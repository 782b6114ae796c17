/*
 * repl_complete.h - TAB completion in the REPL (libedit), hooked in by repl.c on a
 * terminal: command names, info's subcommands, session ids, functions, files and
 * FILE:LINE of the program, the last stop's variables.
 */
#ifndef STROBE_REPL_COMPLETE_H
#define STROBE_REPL_COMPLETE_H

struct repl;

/* Hooks TAB completion into libedit for r. */
void repl_complete_init(struct repl *r);
/* Frees the candidates of the last completion (the REPL ends). Each completion
 * computes its own, so a new program needs no reset. */
void repl_complete_reset(void);

#endif
