/*
 * repl_intr.c - Ctrl-C in the REPL. The SIGINT handler only writes a byte to a
 * self-pipe (async-signal-safe) and notes whether a command was waiting for the
 * program; a thread woken by that byte sends debug_continue pause on a connection of
 * its own (the main one is blocked in the wait), so the wait ends with the stop,
 * which the REPL prints as gdb's "Program received signal SIGINT". At the prompt
 * Ctrl-C only abandons the line: the REPL never exits on it. There the handler writes
 * to a second self-pipe that libedit's character reader (repl_intr_getc) polls with
 * the terminal, so a Ctrl-C is never lost between two reads. The terminal is read
 * through a non-blocking descriptor of its own: a Ctrl-C flushes the typed-ahead
 * input after poll said it was there, and a blocking read would then wait (restarted
 * after the handler) for the next key with the Ctrl-C already spent.
 */
#include "cli/repl/repl_intr.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/repl/repl_state.h"

static struct repl *g_repl;
static int g_pipe[2] = {-1, -1};
static int g_prompt[2] = {-1, -1}; /* Ctrl-C at the prompt, for repl_intr_getc */
static pthread_t g_thread;
static bool g_started;
static volatile sig_atomic_t g_at_prompt;
static int g_tty = -1; /* the terminal, O_NONBLOCK, for repl_intr_getc */

static void on_sigint(int sig)
{
    (void)sig;
    int saved = errno;
    if (g_repl && g_repl->waiting) {
        g_repl->interrupted = 1;
        /* a test run is not paused: its wait ends at the next poll */
        if (g_repl->waiting == REPL_WAIT_PROGRAM && write(g_pipe[1], "i", 1) < 0) {
            /* a full pipe already holds a request */
        }
    } else {
        g_at_prompt = 1;
        if (write(g_prompt[1], "c", 1) < 0) {
            /* a full pipe already holds one */
        }
    }
    errno = saved;
}

bool repl_intr_at_prompt(void)
{
    bool v = g_at_prompt;
    g_at_prompt = 0;
    return v;
}

/* A non-blocking descriptor for the terminal on fd: a new open file description,
 * so the shell's stays blocking. fd itself when the terminal cannot be reopened. */
static int nonblocking_tty(int fd)
{
    if (g_tty < 0) {
        const char *name = ttyname(fd);
        g_tty = name ? open(name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
    }
    return g_tty >= 0 ? g_tty : fd;
}

int repl_intr_getc(FILE *in)
{
    struct pollfd fds[2] = {{.fd = nonblocking_tty(fileno(in)), .events = POLLIN},
                            {.fd = g_prompt[0], .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return EOF;
        }
        if (fds[1].revents) {
            char drain[16];
            if (read(g_prompt[0], drain, sizeof drain) < 0 && errno == EINTR)
                continue;
            return '\n'; /* ends the line, which the REPL then drops */
        }
        unsigned char c;
        ssize_t n = read(fds[0].fd, &c, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue; /* EAGAIN: a Ctrl-C flushed it; the pipe tells next */
        return n == 1 ? c : EOF;
    }
}

/* Sends debug_continue pause for the REPL's session on c (connected on first use). */
static void send_pause(struct rpc_client *c, bool *connected)
{
    char err[512];
    if (!*connected) {
        int fd = client_connect(false, err, sizeof err);
        if (fd < 0)
            return;
        rpc_init(c, fd);
        if (rpc_handshake(c, "strobe-repl-interrupt", err, sizeof err) != 0) {
            rpc_close(c);
            return;
        }
        *connected = true;
    }
    const char *sid = g_repl->sid;
    if (!sid)
        return;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "action", "pause");
    cJSON_AddNumberToObject(args, "timeoutMs", 2000);
    cJSON_Delete(rpc_call_tool(c, "debug_continue", args, err, sizeof err));
    if (c->failure == RPC_FAIL_CONNECTION) { /* the daemon restarted: connect anew */
        rpc_close(c);
        *connected = false;
    }
}

static void *interrupter(void *arg)
{
    (void)arg;
    struct rpc_client c;
    bool connected = false;
    char b;
    ssize_t n;
    while ((n = read(g_pipe[0], &b, 1)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || b == 'q')
            break;
        send_pause(&c, &connected);
    }
    if (connected)
        rpc_close(&c);
    return NULL;
}

int repl_intr_start(struct repl *r)
{
    g_repl = r;
    if (pipe2(g_pipe, O_CLOEXEC) != 0 || pipe2(g_prompt, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread never runs the handler */
    g_started = pthread_create(&g_thread, NULL, interrupter, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    return g_started ? 0 : -1;
}

void repl_intr_stop(void)
{
    signal(SIGINT, SIG_DFL);
    if (g_started) {
        if (write(g_pipe[1], "q", 1) == 1)
            pthread_join(g_thread, NULL);
        else
            pthread_detach(g_thread);
        g_started = false;
    }
    if (g_tty >= 0)
        close(g_tty);
    g_tty = -1;
    for (int i = 0; i < 2; i++) {
        if (g_pipe[i] >= 0)
            close(g_pipe[i]);
        if (g_prompt[i] >= 0)
            close(g_prompt[i]);
        g_pipe[i] = g_prompt[i] = -1;
    }
    g_repl = NULL;
}
