/*
 * daemon_start.c - the start-up report of the daemon to whoever started it. See
 * daemon_start.h.
 *
 * A client that found no daemon starts `strobe daemon --ready-fd N` detached, with N
 * the write end of a pipe it reads. A daemon that could not start used to say why in
 * daemon.log alone, while the client waited 10 s for a socket that never came (and
 * `strobe mcp` then closed without answering). Now the daemon writes one line per
 * word, each a single write(2) under PIPE_BUF, so it arrives whole:
 *
 *   wait WHAT      a step that may take long has begun (checking the database,
 *                  retention); repeated every second of the database's check. The
 *                  client's bound on silence starts again at each line.
 *   ready          the socket accepts connections.
 *   other WHY      another daemon holds strobe.lock: connect to that one.
 *   error SENTENCE the daemon cannot start, and why: the line it logs.
 *
 * End of file without ready, other or error: the daemon died without a word; the
 * client then quotes the end of daemon.log.
 */
#include "core/daemon_start.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static int ready_fd = -1;

void daemon_start_attach(int fd)
{
    if (fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        return;
    signal(SIGPIPE, SIG_IGN); /* a starter that went away costs a failed write */
    ready_fd = fd;
}

/* Writes "WORD TEXT\n" on the pipe, text on one line; closes it unless keep. */
static void say(const char *word, const char *text, int keep)
{
    if (ready_fd < 0)
        return;
    char line[3072];
    int n = snprintf(line, sizeof line - 1, "%s%s%s", word, *text ? " " : "", text);
    if (n < 0)
        n = 0;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    for (int i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    ssize_t w = write(ready_fd, line, (size_t)n); /* a starter gone has nobody to tell */
    (void)w;
    if (!keep) {
        close(ready_fd);
        ready_fd = -1;
    }
}

/* text, a char array, formatted from the variadic function's fmt and arguments. */
#define FORMAT(text, fmt)                                                               \
    do {                                                                                \
        va_list ap;                                                                     \
        va_start(ap, fmt);                                                              \
        vsnprintf(text, sizeof text, fmt, ap);                                          \
        va_end(ap);                                                                     \
    } while (0)

void daemon_start_wait(const char *fmt, ...)
{
    char text[1024];
    FORMAT(text, fmt);
    say("wait", text, 1);
}

void daemon_start_ready(void)
{
    say("ready", "", 0);
}

void daemon_start_other(const char *fmt, ...)
{
    char text[2048];
    FORMAT(text, fmt);
    fprintf(stderr, "strobe: %s\n", text);
    say("other", text, 0);
}

void daemon_start_failed(const char *fmt, ...)
{
    char text[2048];
    FORMAT(text, fmt);
    log_error("%s", text); /* daemon.log, or stderr while none is open */
    if (log_opened())
        fprintf(stderr, "strobe: %s\n", text);
    say("error", text, 0);
}
