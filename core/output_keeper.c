/*
 * output_keeper.c - the keeper of a program's output pipes after the daemon dies.
 * See output_keeper.h.
 *
 * The keeper is `strobe output-keeper DIR STDOUT_PATH STDERR_PATH` with the program's
 * output on fds 3 and 4 and the life pipe on 5: an exec, so a daemon under valgrind or
 * ASan does not carry its tools into it, and between the fork and the exec the daemon
 * (multi-threaded) calls only async-signal-safe functions. That process forks the
 * keeper and exits (reaped by the launching thread's waitpid), so the keeper belongs
 * to no thread of the daemon and is adopted by init (or the nearest subreaper).
 */
#include "core/output_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/paths.h"

/* The life pipe: its write end lives in the daemon only (close-on-exec, and every
 * keeper closes its copy), so its read end reaches its end when the daemon dies. */
static struct {
    pthread_once_t once;
    int fds[2];
} life = {PTHREAD_ONCE_INIT, {-1, -1}};

static void life_open(void)
{
    if (pipe2(life.fds, O_CLOEXEC) != 0)
        life.fds[0] = life.fds[1] = -1;
}

/* Drains fd into path (opened on the first byte): until the program closes its end. */
static void drain(int fd, const char *path, char *buf, size_t cap)
{
    int out = -1;
    for (;;) {
        ssize_t n = read(fd, buf, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, -1);
            continue;
        }
        if (n <= 0)
            break;
        if (out < 0)
            out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        for (ssize_t done = 0; out >= 0 && done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break; /* a full disk: go on reading, so the program runs on */
            done += w;
        }
    }
    if (out >= 0)
        close(out);
}

int output_keeper_main(int argc, char **argv)
{
    if (argc != 4)
        return 64;
    const char *dir = argv[1], *out_path = argv[2], *err_path = argv[3];
    /* Not the daemon's child: its parent (this process, started by the daemon) exits
     * at once and is reaped there; the keeper is adopted by init. */
    pid_t keeper = fork();
    if (keeper != 0)
        return keeper < 0 ? 1 : 0;
    setsid(); /* no signal to the daemon's group or terminal reaches it */
    static char buf[65536];
    struct pollfd p[3] = {{.fd = 3}, {.fd = 4}, {.fd = 5, .events = POLLIN}};
    for (;;) {
        /* events 0 on the output: only its end (POLLHUP) wakes us, never its bytes,
         * which are the daemon's to read while it lives */
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[0].revents & (POLLHUP | POLLERR))
            p[0].fd = -1; /* one closed: wait for the other */
        if (p[1].revents & (POLLHUP | POLLERR))
            p[1].fd = -1;
        if (p[0].fd < 0 && p[1].fd < 0)
            return 0; /* the program closed its output: it ended */
        if (p[2].revents)
            break; /* the daemon died */
    }
    mkdir(dir, 0700);
    drain(4, err_path, buf, sizeof buf); /* stderr first: the smaller, and the crash */
    drain(3, out_path, buf, sizeof buf);
    return 0;
}

int output_keeper_start(int out_fd, int err_fd, const char *session_id)
{
    pthread_once(&life.once, life_open);
    char home[4096], dir[4200], out_path[4400], err_path[4400], bin[4096];
    if (life.fds[0] < 0 || strobe_home(home, sizeof home, NULL) != 0)
        return -1;
    snprintf(dir, sizeof dir, "%s/orphaned", home);
    snprintf(out_path, sizeof out_path, "%s/%s.stdout", dir, session_id);
    snprintf(err_path, sizeof err_path, "%s/%s.stderr", dir, session_id);
    strobe_sibling_binary("strobe", bin, sizeof bin);
    char *argv[] = {bin, "output-keeper", dir, out_path, err_path, NULL};
    pid_t child = fork();
    if (child < 0) {
        log_warn("session %s: cannot start the output keeper: %m", session_id);
        return -1;
    }
    if (child == 0) {
        /* 3, 4, 5 as output_keeper_main wants them, from wherever they are (above 5
         * first), without close-on-exec; the rest (the life pipe's write end among
         * them) closed at the exec */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int a = fcntl(out_fd, F_DUPFD_CLOEXEC, 10), b = fcntl(err_fd, F_DUPFD_CLOEXEC, 10),
            c = fcntl(life.fds[0], F_DUPFD_CLOEXEC, 10);
        if (null < 0 || a < 0 || b < 0 || c < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
            dup2(null, 2) < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 || dup2(c, 5) < 0)
            _exit(1);
        syscall(SYS_close_range, 6, ~0u, 0);
        execv(bin, argv);
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        log_warn("session %s: the output keeper (%s) did not start (status %d)", session_id,
                 bin, status);
        return -1;
    }
    return 0;
}
