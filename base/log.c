/*
 * log.c - daemon log. See log.h. A line is formatted in full and written with one
 * write(2) on an O_APPEND descriptor, so lines from threads never interleave.
 */
#include "base/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int log_fd = STDERR_FILENO;

int log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    log_fd = fd;
    return 0;
}

void log_close(void)
{
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = STDERR_FILENO;
}

bool log_opened(void)
{
    return log_fd != STDERR_FILENO;
}

void log_msg(const char *level, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %d %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid(), level);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    n += (m < 0) ? 0 : (m >= (int)(sizeof line - n - 1) ? (int)(sizeof line - n - 2) : m);
    line[n++] = '\n';
    if (write(log_fd, line, n) < 0) {
        /* Nowhere left to report a failing log. */
    }
}
