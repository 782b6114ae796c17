/*
 * client_start.c - starting the daemon and hearing how it went. See client_start.h.
 *
 * The daemon is started with the write end of a pipe (--ready-fd) and answers on it
 * with one line per word (core/daemon_start.c): "wait WHAT" while a long step runs,
 * then "ready", "other WHY" or "error SENTENCE". So a daemon that cannot start is
 * reported the moment it gives up, in its own words, instead of after a 10 s wait
 * for a socket that never comes; a daemon that checks a large database is waited
 * for as long as it says it is at work.
 */
#include "cli/client_start.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The grandchild: the daemon itself, with efd as its --ready-fd. */
__attribute__((noreturn)) static void exec_daemon(const char *bin, int efd)
{
    if (efd <= STDERR_FILENO) /* our stdio was closed; move out of the way */
        efd = fcntl(efd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (efd < 0)
        _exit(127);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    /* Whatever else the caller had open must not leak into the daemon. */
    if (efd > STDERR_FILENO + 1)
        close_range(STDERR_FILENO + 1, (unsigned)efd - 1, 0);
    close_range((unsigned)efd + 1, ~0U, 0);
    /* A daemon must not pin the caller's directory; requests carry paths. */
    char fd_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", efd);
    if (chdir("/") == 0 && fcntl(efd, F_SETFD, 0) == 0) /* efd crosses the exec */
        execlp(bin, bin, "daemon", "--ready-fd", fd_text, (char *)NULL);
    dprintf(efd, "error cannot run '%s daemon': %s\n", bin, strerror(errno));
    _exit(127);
}

/* Forks the daemon detached (double fork, setsid); the read end of its pipe, or -1
 * with err set. */
static int spawn(const char *bin, char *err, size_t errlen)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start the strobe daemon: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t child = fork();
    if (child < 0) {
        snprintf(err, errlen, "cannot start the strobe daemon: fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (child == 0) {
        close(pfd[0]);
        setsid();
        pid_t grandchild = fork();
        if (grandchild != 0)
            _exit(grandchild < 0 ? 1 : 0);
        exec_daemon(bin, pfd[1]);
    }
    close(pfd[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "cannot start the strobe daemon: fork failed");
        close(pfd[0]);
        return -1;
    }
    return pfd[0];
}

/* The last line of home/daemon.log into out ("" when there is none). */
static void last_log_line(const char *home, char *out, size_t cap)
{
    out[0] = '\0';
    char path[4200];
    snprintf(path, sizeof path, "%s/daemon.log", home);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    char buf[2048];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0)
        return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    const char *line = strrchr(buf, '\n');
    snprintf(out, cap, "%s", line ? line + 1 : buf);
}

/* One line of the daemon's; sets *done with the outcome when it is the last. */
static void heard(const char *line, const char *home, bool *done, enum client_start *out,
                  char *last_wait, size_t wait_cap, char *err, size_t errlen)
{
    if (strcmp(line, "ready") == 0) {
        *done = true;
        *out = CLIENT_START_READY;
    } else if (strncmp(line, "other ", 6) == 0) {
        *done = true;
        *out = CLIENT_START_OTHER;
    } else if (strncmp(line, "error ", 6) == 0) {
        *done = true;
        *out = CLIENT_START_FAILED;
        char log[4200];
        snprintf(log, sizeof log, "%s/daemon.log", home);
        if (access(log, F_OK) == 0) /* not when the directory could not take it */
            snprintf(err, errlen, "the strobe daemon could not start: %s (log: %s)",
                     line + 6, log);
        else
            snprintf(err, errlen, "the strobe daemon could not start: %s", line + 6);
    } else if (strncmp(line, "wait ", 5) == 0) {
        snprintf(last_wait, wait_cap, "%s", line + 5);
    }
}

enum client_start client_start_daemon(const char *bin, const char *home, char *err,
                                      size_t errlen)
{
    int fd = spawn(bin, err, errlen);
    if (fd < 0)
        return CLIENT_START_FAILED;
    char buf[4096], last_wait[sizeof buf] = "";
    size_t len = 0;
    bool done = false;
    enum client_start out = CLIENT_START_FAILED;
    int64_t deadline = now_ms() + CLIENT_START_TIMEOUT_MS;
    while (!done) {
        int64_t left = deadline - now_ms();
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = left > 0 ? poll(&pfd, 1, (int)left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "started '%s daemon' but it did not say it was ready "
                     "within %d s%s%s%s; look at %s/daemon.log", bin,
                     CLIENT_START_TIMEOUT_MS / 1000, last_wait[0] ? " (its last word: " : "",
                     last_wait, last_wait[0] ? ")" : "", home);
            break;
        }
        ssize_t got = read(fd, buf + len, sizeof buf - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            char line[2048];
            last_log_line(home, line, sizeof line);
            snprintf(err, errlen, "the strobe daemon exited while starting, without saying "
                     "why; the last line of %s/daemon.log: %s", home,
                     line[0] ? line : "(none)");
            break;
        }
        deadline = now_ms() + CLIENT_START_TIMEOUT_MS; /* it talks: it is at work */
        len += (size_t)got;
        buf[len] = '\0';
        char *nl;
        while (!done && (nl = strchr(buf, '\n'))) {
            *nl = '\0';
            heard(buf, home, &done, &out, last_wait, sizeof last_wait, err, errlen);
            len -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len + 1);
        }
        if (len == sizeof buf - 1)
            len = 0; /* a line longer than any the daemon writes: not a word of its */
    }
    close(fd);
    return out;
}
