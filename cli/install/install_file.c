/*
 * install_file.c - safe reads and writes of the files `strobe install` edits.
 * See install_file.h.
 */
#include "cli/install/install_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CONFIG (64u << 20) /* a configuration file larger than this is not one */

int cfg_read(const char *path, struct cfg_file *f, char *err, size_t errlen)
{
    *f = (struct cfg_file){0};
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        f->text = strdup("");
        return 0;
    }
    if (fd < 0 && errno == ELOOP) {
        snprintf(err, errlen, "%s is a symbolic link, which strobe install does not follow; "
                 "edit the file it points to by hand (see strobe(1), INSTALL)", path);
        return -1;
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file; move it away and run strobe install "
                 "again", path);
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s belongs to another user; run strobe install as its owner",
                 path);
        close(fd);
        return -1;
    }
    if ((size_t)st.st_size > MAX_CONFIG) {
        snprintf(err, errlen, "%s is larger than 64 MiB; it is not a configuration file "
                 "strobe install can edit", path);
        close(fd);
        return -1;
    }
    f->text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (f->text && got < (size_t)st.st_size) {
        ssize_t r = read(fd, f->text + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!f->text || got != (size_t)st.st_size) {
        snprintf(err, errlen, "cannot read %s (it changed while being read?)", path);
        cfg_free(f);
        return -1;
    }
    f->text[got] = '\0';
    f->len = got;
    f->exists = true;
    f->mode = st.st_mode & 07777;
    return 0;
}

void cfg_free(struct cfg_file *f)
{
    free(f->text);
    f->text = NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* mkdir -p of path's parent directory. */
static int make_parents(const char *path)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return -1;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

bool cfg_has_backup(const char *path)
{
    char bak[PATH_MAX];
    struct stat st;
    snprintf(bak, sizeof bak, "%s.strobe-backup", path);
    return lstat(bak, &st) == 0;
}

static int backup(const char *path, const struct cfg_file *old, char *err, size_t errlen)
{
    char bak[PATH_MAX];
    snprintf(bak, sizeof bak, "%s.strobe-backup", path);
    int fd = open(bak, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        return 0; /* the first backup is the one worth keeping */
    if (fd < 0 || write_all(fd, old->text, old->len) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "cannot write the backup %s: %s; nothing was changed", bak,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(bak);
        }
        return -1;
    }
    close(fd);
    return 0;
}

int cfg_write(const char *path, const struct cfg_file *old, const char *text, size_t len,
              mode_t mode, char *err, size_t errlen)
{
    if (old->exists && backup(path, old, err, errlen) != 0)
        return -1;
    if (!old->exists && make_parents(path) != 0) {
        snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(errno));
        return -1;
    }
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    snprintf(tmp, sizeof tmp, "%.*s.%s.strobe-XXXXXX", dirlen, path, slash ? slash + 1 : path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    bool ok = fchmod(fd, mode) == 0 && write_all(fd, text, len) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot write %s: %s; it was left as it was", path,
                 strerror(saved));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot replace %s: %s; it was left as it was", path,
                 strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int cfg_unlink(const char *path, char *err, size_t errlen)
{
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
