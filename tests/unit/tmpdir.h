/*
 * tmpdir.h - the scratch directories of unit tests that need real files (a store,
 * a state directory): removing one with the files in it at teardown.
 */
#ifndef STROBE_TEST_TMPDIR_H
#define STROBE_TEST_TMPDIR_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Removes dir and the files directly in it (the tests make no subdirectories). */
static inline void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char p[PATH_MAX + 256];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

#endif
