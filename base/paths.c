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

int strobe_home(char *out, size_t outlen, struct strobe_error *e)
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
        if (!home)
            return err_set(e, ERR_INTERNAL, "cannot find the home directory; set STROBE_HOME");
        n = snprintf(out, outlen, "%s/.strobe", home);
    }
    if (n < 0 || (size_t)n >= outlen)
        return err_set(e, ERR_INTERNAL,
                       "state directory path is too long; set a shorter STROBE_HOME");
    if (out[0] != '/')
        return err_set(e, ERR_INTERNAL, "STROBE_HOME must be an absolute path, not '%s'", out);
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return err_set(e, ERR_INTERNAL, "cannot create state directory %s: %s", out,
                       strerror(errno));
    struct stat st;
    if (lstat(out, &st) != 0)
        return err_set(e, ERR_INTERNAL, "cannot stat state directory %s: %s", out,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_set(e, ERR_INTERNAL,
                       "state directory %s is not a directory (a symlink is refused too); "
                       "remove it or set STROBE_HOME", out);
    if (st.st_uid != geteuid())
        return err_set(e, ERR_INTERNAL,
                       "state directory %s belongs to uid %u, not to you (uid %u); "
                       "set STROBE_HOME to a directory of your own", out,
                       (unsigned)st.st_uid, (unsigned)geteuid());
    if ((st.st_mode & 07777) != 0700 && chmod(out, 0700) != 0)
        return err_set(e, ERR_INTERNAL, "cannot make %s private (chmod 0700): %s", out,
                       strerror(errno));
    return 0;
}

int strobe_private_dir(const char *parent, const char *name, char *out, size_t outlen,
                       struct strobe_error *e)
{
    char home[PATH_MAX];
    if (!parent) {
        if (strobe_home(home, sizeof home, e) != 0)
            return -1;
        parent = home;
    }
    int n = snprintf(out, outlen, "%s/%s", parent, name);
    if (n < 0 || (size_t)n >= outlen)
        return err_set(e, ERR_INTERNAL, "path of %s/%s is too long; set a shorter STROBE_HOME",
                       parent, name);
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return err_set(e, ERR_INTERNAL, "cannot create %s: %s", out, strerror(errno));
    struct stat st;
    if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return err_set(e, ERR_INTERNAL, "%s is not a directory of this user's (a symlink is "
                       "refused too); remove it", out);
    if ((st.st_mode & 07777) != 0700 && chmod(out, 0700) != 0)
        return err_set(e, ERR_INTERNAL, "cannot make %s private (chmod 0700): %s", out,
                       strerror(errno));
    return 0;
}

int strobe_path(enum strobe_file f, char *out, size_t outlen, struct strobe_error *e)
{
    char home[PATH_MAX];
    if (strobe_home(home, sizeof home, e) != 0)
        return -1;
    int n = snprintf(out, outlen, "%s/%s", home, file_names[f]);
    if (n < 0 || (size_t)n >= outlen)
        return err_set(e, ERR_INTERNAL, "path of %s is too long; set a shorter STROBE_HOME",
                       file_names[f]);
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
