/*
 * install_file.h - how `strobe install` reads and writes a user's configuration
 * files: never through a symbolic link, only files the user owns, a backup copy
 * before the first change, and a write that is a rename of a complete temporary
 * file in the same directory (keeping the file's mode), so a crash leaves either
 * the old or the new file.
 */
#ifndef STROBE_INSTALL_FILE_H
#define STROBE_INSTALL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cfg_file {
    bool exists;
    char *text; /* malloc'd, NUL-terminated ("" when the file does not exist) */
    size_t len;
    mode_t mode; /* permission bits of the existing file */
};

/*
 * Reads path. A missing file is exists=false. Returns -1 with a sentence in err for
 * a symbolic link, a file of another user, a directory, or a read error.
 */
int cfg_read(const char *path, struct cfg_file *f, char *err, size_t errlen);
void cfg_free(struct cfg_file *f);

/*
 * Writes text as path's new content: first copies an existing file to
 * path.strobe-backup (0600; an existing backup is kept), then writes a temporary
 * file next to it with `mode` and renames it over path, creating missing parent
 * directories (0755). Returns -1 with a sentence in err.
 */
int cfg_write(const char *path, const struct cfg_file *old, const char *text, size_t len,
              mode_t mode, char *err, size_t errlen);

/* Removes path (a file install created). Returns -1 with a sentence in err. */
int cfg_unlink(const char *path, char *err, size_t errlen);

/* Whether path.strobe-backup exists (then path existed before install changed it). */
bool cfg_has_backup(const char *path);

#endif
