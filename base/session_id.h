/*
 * session_id.h - human-readable session ids of spec 000: "{binary}-{YYYY-MM-DD}-{HHhMM}",
 * then "-2", "-3", ... on collision. The binary name is the command's basename with
 * anything outside [A-Za-z0-9._-] replaced by '-' and cut at 64 characters.
 */
#ifndef STROBE_SESSION_ID_H
#define STROBE_SESSION_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define SESSION_ID_MAX 96

/* Writes the id for binary_path at local time `when` into out (SESSION_ID_MAX bytes),
 * the first candidate for which taken(arg, candidate) is false. Returns 0, or -1 if
 * taken() kept answering true (10,000 tries) or failed (returns -1). */
int session_id_make(const char *binary_path, time_t when,
                    int (*taken)(void *arg, const char *id), void *arg, char *out);

#endif
