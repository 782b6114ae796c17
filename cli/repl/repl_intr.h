/*
 * repl_intr.h - Ctrl-C in the REPL: during a wait it pauses the program (or ends the
 * wait for a test run), at the prompt it abandons the line. repl.c starts and stops
 * it and reads the terminal through it.
 */
#ifndef STROBE_REPL_INTR_H
#define STROBE_REPL_INTR_H

#include <stdbool.h>
#include <stdio.h>

struct repl;

/* Installs the SIGINT handler and starts the thread that pauses the program through
 * a second connection when Ctrl-C comes during a wait. 0 or -1. */
int repl_intr_start(struct repl *r);
void repl_intr_stop(void);
/* Whether Ctrl-C came at the prompt since the last call (clears it). */
bool repl_intr_at_prompt(void);
/* libedit's character reader (rl_getc_function): a character of in, or '\n' when
 * Ctrl-C came at the prompt (the line ends; repl_intr_at_prompt() says to drop it). */
int repl_intr_getc(FILE *in);

#endif
