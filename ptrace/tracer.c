/*
 * tracer.c - the per-session tracer thread. See tracer.h.
 *
 * The loop waits with __WALL | __WNOTHREAD, so a tracer only ever reaps its own
 * tracees even though several sessions run tracer threads in the same daemon.
 * Stops it does not own a reason for are resumed as ptrace(2) prescribes:
 * event stops and our own seize stops resume with no signal, signal-delivery stops
 * deliver the signal, group-stops are kept with PTRACE_LISTEN so job control works.
 */
#include "ptrace/tracer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"

#define MAX_PROCS 256

struct tracer {
    struct tracer_spec spec;
    pthread_t thread;
    sem_t started;
    pid_t main_pid;
    struct strobe_error start_error;
    int start_failed;
    pthread_mutex_t lock; /* guards procs, read by tracer_kill() from other threads */
    pid_t procs[MAX_PROCS];
    int n_procs;
};

static void procs_add(struct tracer *t, pid_t pid)
{
    pthread_mutex_lock(&t->lock);
    if (t->n_procs < MAX_PROCS)
        t->procs[t->n_procs++] = pid;
    pthread_mutex_unlock(&t->lock);
}

static void procs_remove(struct tracer *t, pid_t pid)
{
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs; i++)
        if (t->procs[i] == pid) {
            t->procs[i] = t->procs[--t->n_procs];
            break;
        }
    pthread_mutex_unlock(&t->lock);
}

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
    if (code == ERR_ATTACH_FAILED)
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
static int launch(struct tracer *t)
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
    procs_add(t, pid);

    int status;
    if (waitpid(pid, &status, WUNTRACED | __WALL) != pid || !WIFSTOPPED(status)) {
        int err = WIFEXITED(status) ? exec_errno(errpipe[0]) : EIO;
        close(errpipe[0]);
        waitpid(pid, &status, __WALL | WNOHANG);
        return fail_start(t, ERR_ATTACH_FAILED, "setting up the child", err ? err : EIO);
    }
    long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
                PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC;
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
            procs_remove(t, pid);
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

static bool is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void handle_stop(struct tracer *t, pid_t pid, int status)
{
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (event == PTRACE_EVENT_STOP) {
        /* A group-stop keeps the process stopped (job control); the initial stop of
         * an auto-attached thread or child just resumes. */
        if (is_stop_signal(sig))
            ptrace(PTRACE_LISTEN, pid, 0, 0);
        else
            ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        unsigned long child = 0;
        if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &child) == 0)
            procs_add(t, (pid_t)child);
    }
    if (event != 0) {
        ptrace(PTRACE_CONT, pid, 0, 0);
        return;
    }
    ptrace(PTRACE_CONT, pid, 0, sig);
}

static void *tracer_main(void *arg)
{
    struct tracer *t = arg;
    int rc = launch(t);
    sem_post(&t->started);
    if (rc != 0)
        return NULL;
    ptrace(PTRACE_CONT, t->main_pid, 0, 0);

    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, __WALL | __WNOTHREAD);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            if (errno != ECHILD)
                log_error("tracer of pid %d: waitpid: %s", t->main_pid, strerror(errno));
            break;
        }
        if (WIFSTOPPED(status)) {
            handle_stop(t, pid, status);
            continue;
        }
        /* Exit of a thread or a process. Threads other than a group leader are
         * not in procs; removing an absent pid is a no-op. */
        procs_remove(t, pid);
        if (pid == t->main_pid && t->spec.on_main_exit)
            t->spec.on_main_exit(t->spec.arg, status);
    }
    return NULL;
}

int tracer_start(const struct tracer_spec *spec, struct tracer **out, pid_t *pid,
                 struct strobe_error *e)
{
    struct tracer *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_INTERNAL, "out of memory starting a tracer");
    t->spec = *spec;
    sem_init(&t->started, 0, 0);
    pthread_mutex_init(&t->lock, NULL);
    if (pthread_create(&t->thread, NULL, tracer_main, t) != 0) {
        sem_destroy(&t->started);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return err_set(e, ERR_INTERNAL, "cannot create the tracer thread");
    }
    while (sem_wait(&t->started) != 0 && errno == EINTR)
        ;
    if (t->start_failed) {
        if (e)
            *e = t->start_error;
        tracer_join(t);
        return -1;
    }
    *pid = t->main_pid;
    *out = t;
    return 0;
}

void tracer_kill(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs; i++)
        kill(t->procs[i], SIGKILL);
    pthread_mutex_unlock(&t->lock);
}

void tracer_join(struct tracer *t)
{
    if (!t)
        return;
    pthread_join(t->thread, NULL);
    sem_destroy(&t->started);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
