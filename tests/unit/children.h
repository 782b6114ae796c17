/*
 * children.h - forked children of a unit test, for the tests that drive ptrace/
 * against real processes without a tracer thread: a child runs code of the test
 * binary itself, blocked reading a pipe (each byte written to it is handed to the
 * child's `each` function, if any; closing the pipe ends it), and the test seizes it
 * with ptrace and stops it with an interrupt. For tests/unit/test_bptab.c and
 * test_watchset.c. Include after <cmocka.h>.
 */
#ifndef STROBE_TEST_CHILDREN_H
#define STROBE_TEST_CHILDREN_H

#include <signal.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace/proc/procmem.h"

struct child {
    pid_t pid;
    int fd;      /* write end of its pipe: closing it ends the child */
    int memfd;   /* /proc/PID/mem, to look at its bytes */
};

/* A child that runs each(c) for every byte c written to its pipe (each may be NULL)
 * and exits 0 at the pipe's end. */
static inline struct child child_start_with(void (*each)(char c))
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Only its own read end: a pipe of another child open here would keep that
         * one from seeing the end. */
        for (int fd = 3; fd < 1024; fd++)
            if (fd != p[0])
                close(fd);
        char c;
        while (read(p[0], &c, 1) > 0)
            if (each)
                each(c);
        _exit(0);
    }
    close(p[0]);
    struct child c = {pid, p[1], procmem_open(pid)};
    assert_true(c.memfd >= 0);
    return c;
}

static inline struct child child_start(void)
{
    return child_start_with(NULL);
}

/* Ends a child that is not traced (or was detached) and reaps it. */
static inline void child_end(struct child *c)
{
    close(c->fd);
    close(c->memfd);
    int status;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
}

/* Seizes c's process (blocked in read) and stops it with an interrupt. */
static inline void seize_stopped(const struct child *c)
{
    int status;
    assert_int_equal(ptrace(PTRACE_SEIZE, c->pid, 0, 0), 0);
    assert_int_equal(ptrace(PTRACE_INTERRUPT, c->pid, 0, 0), 0);
    assert_int_equal(waitpid(c->pid, &status, __WALL), c->pid);
    assert_int_equal(status >> 16, PTRACE_EVENT_STOP);
}

/* Kills a child, traced or not, and reaps it. */
static inline void child_kill(struct child *c)
{
    close(c->fd);
    close(c->memfd);
    kill(c->pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(c->pid, &status, __WALL), c->pid);
}

#endif
