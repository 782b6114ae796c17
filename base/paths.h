/*
 * paths.h - where Strobe keeps its state, and the checks that keep it private.
 *
 * The state directory is $STROBE_HOME, else ~/.strobe. It must be a real directory
 * (not a symlink) owned by the current user; it is created 0700 and tightened to
 * 0700 if it is more open. Every file Strobe creates lives in it.
 */
#ifndef STROBE_PATHS_H
#define STROBE_PATHS_H

#include <stddef.h>

#include "base/error.h"

enum strobe_file {
    STROBE_SOCK,     /* strobe.sock, the daemon's unix socket (0600) */
    STROBE_PID,      /* strobe.pid */
    STROBE_LOCK,     /* strobe.lock, flock()ed by the running daemon */
    STROBE_DB,       /* strobe.db */
    STROBE_LOG,      /* daemon.log */
    STROBE_SETTINGS, /* settings.json, the user's global settings */
};

/* Resolves and secures the state directory, creating it if needed, its path into out.
 * Returns 0, or -1 with e (NULL: not told) set to INTERNAL and a sentence saying what
 * is wrong and what to do. */
int strobe_home(char *out, size_t outlen, struct strobe_error *e);

/* Path of one of the files above. Returns 0, or -1 with e set as strobe_home() does. */
int strobe_path(enum strobe_file f, char *out, size_t outlen, struct strobe_error *e);

/* Creates (0700) or checks the directory name below parent (NULL: the state
 * directory): a real directory of this user's, private. Its path into out. 0, or -1
 * with e set as strobe_home() does. */
int strobe_private_dir(const char *parent, const char *name, char *out, size_t outlen,
                       struct strobe_error *e);

/* The strobe binary that sits next to the running executable (strobectl starts the
 * daemon with it), else "strobe" to be found on PATH. */
void strobe_sibling_binary(const char *name, char *out, size_t outlen);

#endif
