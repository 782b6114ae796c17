/*
 * agent.c - the Python agent's files, written where a target loads them from.
 *
 * The daemon carries the agent (python/agent/_strobe_agent, embedded by
 * agent_blob.S) and writes it under STATE/python/agent/_strobe_agent/ before each
 * adoption: directories 0700, files 0600, each written to a new name and renamed
 * over the old one, so a Python starting meanwhile reads a whole file. Nothing is
 * followed that the daemon did not make: a symlink or a directory owned by another
 * user where one of ours should be is an error.
 */
#include "python/python_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char py_agent_init[], py_agent_breaks[], py_agent_channel[], py_agent_crash[], py_agent_hooks[],
    py_agent_names[], py_agent_preview[], py_agent_recorder[], py_agent_stacks[];

static const struct {
    const char *name;
    const char *text;
} files[] = {
    {"__init__.py", py_agent_init},
    {"breaks.py", py_agent_breaks},
    {"channel.py", py_agent_channel},
    {"crash.py", py_agent_crash},
    {"hooks.py", py_agent_hooks},
    {"names.py", py_agent_names},
    {"preview.py", py_agent_preview},
    {"recorder.py", py_agent_recorder},
    {"stacks.py", py_agent_stacks},
};

/* A directory of ours at path: made 0700 when missing; refused when it is a
 * symlink or another user's. */
static int own_dir(const char *path, struct strobe_error *e)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return err_set(e, ERR_INTERNAL, "cannot create %s: %s", path, strerror(errno));
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return err_set(e, ERR_INTERNAL, "%s is not a directory of this user (a symlink?): "
                       "remove it and try again", path);
    if ((st.st_mode & 0777) != 0700)
        chmod(path, 0700);
    return 0;
}

static int write_file(const char *dir, const char *name, const char *text,
                      struct strobe_error *e)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid()) >= (int)sizeof tmp)
        return err_set(e, ERR_INTERNAL, "the state directory's path %s is too long", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(e, ERR_INTERNAL, "cannot write %s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return err_set(e, ERR_INTERNAL, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static int install(const char *state_dir, char *dir, size_t cap, struct strobe_error *e)
{
    char pkg[PATH_MAX];
    if (snprintf(pkg, sizeof pkg, "%s/python/agent/_strobe_agent", state_dir) >= (int)sizeof pkg)
        return err_set(e, ERR_INTERNAL, "the state directory's path %s is too long", state_dir);
    snprintf(dir, cap, "%s/python", state_dir);
    if (own_dir(dir, e) != 0)
        return -1;
    snprintf(dir, cap, "%s/python/agent", state_dir);
    if (own_dir(dir, e) != 0 || own_dir(pkg, e) != 0)
        return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (write_file(pkg, files[i].name, files[i].text, e) != 0)
            return -1;
    return 0;
}

int python_agent_install(const char *state_dir, char *dir, size_t cap, struct strobe_error *e)
{
    pthread_mutex_lock(&install_lock); /* two adoptions at once write one set */
    int rc = install(state_dir, dir, cap, e);
    pthread_mutex_unlock(&install_lock);
    return rc;
}
