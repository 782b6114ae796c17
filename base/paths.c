/*
 * paths.c - the state directory and its files. See paths.h.
 */
#include "base/paths.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const file_names[] = {
    [STROBE_SOCK] = "strobe.sock",
    [STROBE_PID] = "strobe.pid",
    [STROBE_LOCK] = "strobe.lock",
    [STROBE_DB] = "strobe.db",
    [STROBE_LOG] = "daemon.log",
    [STROBE_SETTINGS] = "settings.json",
};

static int fail(char *err, size_t errlen, const char *fmt, const char *path, int e)
{
    snprintf(err, errlen, fmt, path, strerror(e));
    return -1;
}

int strobe_home(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *env = getenv("STROBE_HOME");
    int n;
    if (env && *env) {
        n = snprintf(out, outlen, "%s", env);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home) {
            snprintf(err, errlen, "cannot find the home directory; set STROBE_HOME");
            return -1;
        }
        n = snprintf(out, outlen, "%s/.strobe", home);
    }
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "state directory path is too long; set a shorter STROBE_HOME");
        return -1;
    }
    if (out[0] != '/') {
        snprintf(err, errlen, "STROBE_HOME must be an absolute path, not '%s'", out);
        return -1;
    }
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return fail(err, errlen, "cannot create state directory %s: %s", out, errno);
    struct stat st;
    if (lstat(out, &st) != 0)
        return fail(err, errlen, "cannot stat state directory %s: %s", out, errno);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen,
                 "state directory %s is not a directory (a symlink is refused too); "
                 "remove it or set STROBE_HOME", out);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "state directory %s belongs to uid %u, not to you (uid %u); "
                 "set STROBE_HOME to a directory of your own", out,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if ((st.st_mode & 07777) != 0700 && chmod(out, 0700) != 0)
        return fail(err, errlen, "cannot make %s private (chmod 0700): %s", out, errno);
    return 0;
}

int strobe_private_dir(const char *parent, const char *name, char *out, size_t outlen,
                       char *err, size_t errlen)
{
    char home[PATH_MAX];
    if (!parent) {
        if (strobe_home(home, sizeof home, err, errlen) != 0)
            return -1;
        parent = home;
    }
    int n = snprintf(out, outlen, "%s/%s", parent, name);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "path of %s/%s is too long; set a shorter STROBE_HOME",
                 parent, name);
        return -1;
    }
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return fail(err, errlen, "cannot create %s: %s", out, errno);
    struct stat st;
    if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s is not a directory of this user's (a symlink is refused "
                 "too); remove it", out);
        return -1;
    }
    if ((st.st_mode & 07777) != 0700 && chmod(out, 0700) != 0)
        return fail(err, errlen, "cannot make %s private (chmod 0700): %s", out, errno);
    return 0;
}

int strobe_path(enum strobe_file f, char *out, size_t outlen, char *err, size_t errlen)
{
    char home[PATH_MAX];
    if (strobe_home(home, sizeof home, err, errlen) != 0)
        return -1;
    int n = snprintf(out, outlen, "%s/%s", home, file_names[f]);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "path of %s is too long; set a shorter STROBE_HOME",
                 file_names[f]);
        return -1;
    }
    return 0;
}

void strobe_sibling_binary(const char *name, char *out, size_t outlen)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, outlen, "%s/%s", self, name);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, outlen, "%s", name);
}
