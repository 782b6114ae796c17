/*
 * render_hint.h - the daemon's advice rephrased for a shell. The daemon's answers
 * and error messages end with next steps written for an MCP client ("list sessions
 * with debug_session({action: \"list\"})"); a person at a shell is told the
 * strobectl verb instead, or nothing.
 */
#ifndef STROBE_RENDER_HINT_H
#define STROBE_RENDER_HINT_H

#include <stddef.h>
#include <stdio.h>

/* How many leading bytes of s to keep: s up to the sentence that first names an MCP
 * tool ("debug_..."), without the blank before it; strlen(s) when none does. */
size_t render_advice_cut(const char *s);

/* Cuts the error text err ("CODE: sentence...") before the MCP advice in it, in
 * place, but never to nothing: a first sentence that names a tool stays. */
void render_error_cut(char *err);

/* The next step for error code CODE as strobectl verbs, or NULL when the message
 * needs none. */
const char *render_error_hint(const char *code);

/* A tool error as "strobectl: CODE: sentence" and the strobectl hint, on out. */
void render_tool_error(FILE *out, const char *code, const char *message);

#endif
