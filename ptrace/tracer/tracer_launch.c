/*
 * tracer_launch.c - the target's start, on the tracer thread: fork, the child's
 * setup (process group, stdio, default signal dispositions, cwd), PTRACE_SEIZE
 * while it stops itself before execve, and the wait for PTRACE_EVENT_EXEC. An
 * execve failure comes back through a close-on-exec pipe as an errno and becomes
 * the tracer_start error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "ptrace/tracer/tracer_internal.h"

/* In the child between fork and exec: async-signal-safe calls only. */
static void child_exec(const struct tracer_spec *s, int errfd)
{
    setpgid(0, 0);
    if (dup2(s->stdin_fd, 0) < 0 || dup2(s->stdout_fd, 1) < 0 || dup2(s->stderr_fd, 2) < 0)
        goto fail;
    /* Dispositions the daemon set (SIGPIPE ignored) and its blocked signals would
     * survive execve: give the target the defaults a shell would. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (chdir(s->cwd) != 0)
        goto fail;
    kill(getpid(), SIGSTOP);
    execve(s->path, s->argv, s->envp);
fail:;
    int err = errno;
    if (write(errfd, &err, sizeof err) < 0)
        _exit(126);
    _exit(127);
}

static int fail_start(struct tracer *t, enum err_code code, const char *what, int err)
{
    if (err == E2BIG)
        err_set(&t->start_error, ERR_VALIDATION,
                "cannot run '%s': its arguments and environment are larger than the kernel "
                "accepts (E2BIG: one argument or variable at most 128 KiB, all of them at "
                "most a quarter of the stack limit); pass large inputs in a file",
                t->spec.path);
    else if (code == ERR_ATTACH_FAILED)
        err_set(&t->start_error, code,
                "cannot start '%s' under ptrace: %s failed (%s). Check that ptrace is "
                "allowed here (kernel.yama.ptrace_scope, seccomp, containers).",
                t->spec.path, what, strerror(err));
    else
        err_set(&t->start_error, code, "cannot run '%s': %s failed (%s)", t->spec.path,
                what, strerror(err));
    t->start_failed = 1;
    return -1;
}

static int exec_errno(int errfd)
{
    int err = 0;
    ssize_t n;
    do
        n = read(errfd, &err, sizeof err);
    while (n < 0 && errno == EINTR);
    return n == sizeof err ? err : 0;
}

/* Forks, seizes and runs the target up to its exec. Returns 0 with the target
 * stopped at PTRACE_EVENT_EXEC, or -1 with t->start_error set. */
int tracer_launch(struct tracer *t)
{
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0)
        return fail_start(t, ERR_ATTACH_FAILED, "pipe", errno);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(errpipe[0]);
        close(errpipe[1]);
        return fail_start(t, ERR_ATTACH_FAILED, "fork", err);
    }
    if (pid == 0)
        child_exec(&t->spec, errpipe[1]);
    close(errpipe[1]);
    t->main_pid = pid;
    tracer_tracees_procs_add(t, pid);

    int status;
    if (waitpid(pid, &status, WUNTRACED | __WALL) != pid || !WIFSTOPPED(status)) {
        int err = WIFEXITED(status) ? exec_errno(errpipe[0]) : EIO;
        close(errpipe[0]);
        waitpid(pid, &status, __WALL | WNOHANG);
        return fail_start(t, ERR_ATTACH_FAILED, "setting up the child", err ? err : EIO);
    }
    /* The program dies with the daemon when its calls stop at int3s: detached, the
     * next one would kill it with SIGTRAP. The fast path's jumps need no daemon
     * (hooks.h, "Fast path"): such a program runs on to its own end. */
    long opts = (t->spec.tuning.fast ? 0 : PTRACE_O_EXITKILL) | PTRACE_O_TRACECLONE |
                PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE |
                PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
    if (ptrace(PTRACE_SEIZE, pid, 0, opts) != 0) {
        int err = errno;
        kill(pid, SIGKILL);
        waitpid(pid, &status, __WALL);
        close(errpipe[0]);
        return fail_start(t, ERR_ATTACH_FAILED, "PTRACE_SEIZE", err);
    }
    kill(pid, SIGCONT);
    for (;;) {
        if (waitpid(pid, &status, __WALL) != pid) {
            if (errno == EINTR)
                continue;
            close(errpipe[0]);
            return fail_start(t, ERR_ATTACH_FAILED, "waitpid", errno);
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            int err = exec_errno(errpipe[0]);
            close(errpipe[0]);
            tracer_tracees_procs_remove(t, pid);
            if (err == ENOENT)
                return fail_start(t, ERR_COMMAND_NOT_FOUND, "execve", err);
            if (err == EACCES || err == ENOEXEC || err == EPERM)
                return fail_start(t, ERR_COMMAND_NOT_EXECUTABLE, "execve", err);
            return fail_start(t, ERR_ATTACH_FAILED, "execve", err ? err : ECHILD);
        }
        if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            close(errpipe[0]);
            return 0;
        }
        /* The SIGSTOP we raised, the SIGCONT we sent, the seize's group-stop: all
         * are ours; the target resumes without them. */
        ptrace(PTRACE_CONT, pid, 0, 0);
    }
}
