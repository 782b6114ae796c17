/*
 * patterns.h - trace patterns (spec 003's table): syntax checks and the daemon's
 * set of pending patterns, staged by debug_trace without a sessionId and applied
 * by the next launch.
 */
#ifndef STROBE_PATTERNS_H
#define STROBE_PATTERNS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define PATTERN_MAX_LEN 512
#define PATTERNS_MAX 256

/* 0 if p is a well-formed pattern, else -1 with INVALID_PATTERN and the reason. */
int pattern_check(const char *p, struct strobe_error *e);

/* Pending set. add/remove ignore duplicates and absent entries. */
int patterns_pending_add(const char *p, struct strobe_error *e);
void patterns_pending_remove(const char *p);
/* Copies the pending patterns into out (up to max); returns how many there are. */
int patterns_pending_list(char out[][PATTERN_MAX_LEN], int max);
/* Pending patterns persist until removed (spec 003) and apply to every launch that
 * does not bring its own. A launch that took them records itself here, so the
 * pending set can be shown with the program each pattern was last armed in. */
void patterns_pending_applied(const char *session_id, const char *program);
/* Of pending pattern p: the session and program of the last launch that took it;
 * false when none has yet (or p is not pending). */
bool patterns_pending_last_launch(const char *p, char *session_id, size_t id_cap,
                                  char *program, size_t program_cap);
/* The serialization depth staged with them (3 until set; 1-10). */
void patterns_pending_set_depth(int depth);
int patterns_pending_depth(void);
/* Whether that depth was set (then large and system structs are expanded to it too). */
bool patterns_pending_depth_asked(void);

#endif
