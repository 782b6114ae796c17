/*
 * install_block.h - a delimited block of lines that `strobe install` owns inside a
 * user's text file: the strobe table of Codex's config.toml and the strobe
 * instructions in AGENTS.md or GEMINI.md. The block starts with a line `begin` and
 * ends with a line `end`; nothing outside it is touched.
 */
#ifndef STROBE_INSTALL_BLOCK_H
#define STROBE_INSTALL_BLOCK_H

#include "cli/install/install_edit.h"

/*
 * Puts `body` (whole lines) between the markers: replaces the block's text when it
 * differs, else appends the block after the text, separated by a newline (a blank
 * line when the text ends with one). EDIT_ERROR when a begin marker has no end.
 */
enum edit_result block_set(const char *text, size_t len, const char *begin, const char *end,
                           const char *body, struct splice *sp, char *err, size_t errlen);

/* Removes the block and the newline block_set put before it. EDIT_NONE when absent. */
enum edit_result block_remove(const char *text, size_t len, const char *begin,
                              const char *end, struct splice *sp, char *err, size_t errlen);

/* The 1-based line of the first line of text that equals `line`, or 0. */
int block_find_line(const char *text, size_t len, const char *line);

#endif
