/*
 * procstat.c - /proc stat lines (procstat.h).
 */
#include "base/procstat.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *procstat_fields(pid_t pid, pid_t tid, char *buf, size_t cap)
{
    char path[64];
    if (tid > 0)
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    else
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || cap == 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p ? p + 1 : NULL;
}
