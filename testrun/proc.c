/*
 * proc.c - the processes of a test run. See proc.h.
 *
 * Why a marker: a framework may start helpers that outlive it or leave its process
 * group (a server started by a test, a daemonized child): reparented to init, they
 * are no longer descendants, but they still carry the environment the run gave
 * them. Reading /proc/PID/environ of the user's processes finds them.
 */
#include "testrun/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/procstat.h"

extern char **environ;

static void child_exec(const struct test_command *cmd, const char *dir, char **envp, int null_fd,
                       int out_w, int err_w, int report_w)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);  /* the daemon blocks its shutdown signals */
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    if (dup2(null_fd, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        _exit(127);
    int errnum = 0;
    if (dir && chdir(dir) != 0)
        errnum = errno;
    if (!errnum) {
        environ = envp;
        execvp(cmd->argv[0], cmd->argv);
        errnum = errno;
    }
    if (write(report_w, &errnum, sizeof errnum) < 0)
        _exit(126);
    _exit(127);
}

/* Whether entry ("KEY=VALUE") sets one of the names in adds[0..n). */
static bool overridden(const char *entry, char *const *adds, size_t n)
{
    const char *eq = strchr(entry, '=');
    size_t klen = eq ? (size_t)(eq - entry) : strlen(entry);
    for (size_t i = 0; i < n; i++)
        if (strncmp(adds[i], entry, klen) == 0 && adds[i][klen] == '=')
            return true;
    return false;
}

/* The environment of the child: the additions, then ours without the names they
 * set (runtimes disagree on which of two entries of one name wins). */
static char **build_env(const struct test_command *cmd, const char *const *extra, int n_extra,
                        const char *marker)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + (size_t)cmd->n_env + (size_t)n_extra + 2, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    envp[k++] = (char *)marker;
    for (int i = 0; i < n_extra; i++)
        if (!overridden(extra[i], envp, k))
            envp[k++] = (char *)extra[i];
    for (int i = 0; i < cmd->n_env; i++)
        if (!overridden(cmd->env[i], envp, k))
            envp[k++] = cmd->env[i];
    size_t n_adds = k;
    for (size_t i = 0; i < n; i++)
        if (!overridden(environ[i], envp, n_adds))
            envp[k++] = environ[i];
    return envp;
}

int tproc_spawn(const struct test_command *cmd, const char *dir, const char *const *extra,
                int n_extra, const char *marker, pid_t *pid, int *out_fd, int *err_fd,
                struct strobe_error *e)
{
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1};
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char **envp = build_env(cmd, extra, n_extra, marker);
    int rc = -1;
    if (null_fd < 0 || !envp || pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
        pipe2(rep, O_CLOEXEC) != 0) {
        err_set(e, ERR_INTERNAL, "cannot start the test command: %s", strerror(errno));
        goto out;
    }
    pid_t child = fork();
    if (child < 0) {
        err_set(e, ERR_INTERNAL, "cannot start the test command: fork: %s", strerror(errno));
        goto out;
    }
    if (child == 0)
        child_exec(cmd, dir, envp, null_fd, outp[1], errp[1], rep[1]);
    setpgid(child, child); /* also here: no race with a kill of the group */
    close(rep[1]);
    rep[1] = -1;
    int errnum = 0;
    ssize_t got;
    do
        got = read(rep[0], &errnum, sizeof errnum);
    while (got < 0 && errno == EINTR);
    if (got == (ssize_t)sizeof errnum) {
        /* The exec failed: the child is gone or going. */
        kill(child, SIGKILL);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
        if (errnum == ENOENT)
            err_set(e, ERR_COMMAND_NOT_FOUND, "'%s' was not found (in %s or on PATH).",
                    cmd->argv[0], dir ? dir : ".");
        else
            err_set(e, ERR_COMMAND_NOT_EXECUTABLE, "cannot run '%s': %s.", cmd->argv[0],
                    strerror(errnum));
        goto out;
    }
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    *pid = child;
    *out_fd = outp[0];
    *err_fd = errp[0];
    outp[0] = errp[0] = -1;
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
        if (rep[i] >= 0)
            close(rep[i]);
    }
    if (null_fd >= 0)
        close(null_fd);
    free(envp);
    return rc;
}

/* ppid of pid from /proc/PID/stat, -1 when gone. */
static pid_t parent_of(pid_t pid)
{
    char buf[512];
    const char *p = procstat_fields(pid, 0, buf, sizeof buf);
    int ppid;
    char state;
    if (!p || sscanf(p, " %c %d", &state, &ppid) != 2 || state == 'Z')
        return -1;
    return ppid;
}

/* Whether pid (one of ours) has marker in its environment. */
static bool has_marker(pid_t pid, const char *marker)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t mlen = strlen(marker);
    char buf[16384];
    size_t have = 0;
    bool found = false;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        for (size_t i = 0; i + mlen <= have && !found; i++)
            found = (i == 0 || buf[i - 1] == '\0') && memcmp(buf + i, marker, mlen) == 0 &&
                    (i + mlen == have || buf[i + mlen] == '\0');
        if (found)
            break;
        /* keep the tail: an entry may straddle two reads */
        size_t keep = have > mlen + 1 ? mlen + 1 : have;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    close(fd);
    return found;
}

static bool listed(const pid_t *pids, int n, pid_t pid)
{
    for (int i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

int tproc_list(pid_t root, const char *marker, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t all[4096], parents[4096];
    int n_all = 0;
    struct dirent *de;
    uid_t me = geteuid();
    while ((de = readdir(d)) && n_all < 4096) {
        pid_t pid = atoi(de->d_name);
        if (pid <= 0)
            continue;
        struct stat st;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d", (int)pid);
        if (stat(path, &st) != 0 || st.st_uid != me)
            continue;
        pid_t ppid = parent_of(pid);
        if (ppid < 0)
            continue;
        all[n_all] = pid;
        parents[n_all++] = ppid;
    }
    closedir(d);
    int n = 0;
    if (parent_of(root) >= 0 && n < max)
        out[n++] = root;
    /* Descendants: breadth first over the parent links. */
    for (int head = 0; head < n; head++)
        for (int i = 0; i < n_all && n < max; i++)
            if (parents[i] == out[head] && !listed(out, n, all[i]))
                out[n++] = all[i];
    for (int i = 0; i < n_all && n < max; i++)
        if (all[i] != getpid() && !listed(out, n, all[i]) && has_marker(all[i], marker))
            out[n++] = all[i];
    return n;
}

/* Process pid's CPU time from /proc/PID/stat (user + system), in ns; 0 if gone. */
static int64_t stat_cpu_ns(pid_t pid)
{
    char buf[1024];
    const char *p = procstat_fields(pid, 0, buf, sizeof buf);
    unsigned long long utime, stime;
    /* fields 3..15 after the comm: state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime */
    if (!p || sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                     &utime, &stime) != 2)
        return 0;
    return (int64_t)((utime + stime) * 1000000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* The CPU time pid's threads ran and waited on a run queue, from each
 * /proc/PID/task/TID/schedstat ("run_ns wait_ns slices"); -1 when unreadable. */
static int64_t schedstat_demand_ns(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int64_t total = 0;
    bool read_any = false;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        char file[400], buf[128];
        snprintf(file, sizeof file, "%s/%s/schedstat", path, de->d_name);
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        unsigned long long run, wait;
        if (got <= 0)
            continue;
        buf[got] = '\0';
        if (sscanf(buf, "%llu %llu", &run, &wait) == 2) {
            total += (int64_t)(run + wait);
            read_any = true;
        }
    }
    closedir(d);
    return read_any ? total : -1;
}

int64_t tproc_cpu_demand_ns(const pid_t *pids, int n)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t demand = schedstat_demand_ns(pids[i]);
        total += demand >= 0 ? demand : stat_cpu_ns(pids[i]);
    }
    return total;
}

int tproc_kill_all(pid_t root, const char *marker)
{
    kill(-root, SIGKILL);
    pid_t pids[TPROC_MAX];
    int n = 0;
    for (int round = 0; round < 40; round++) {
        n = tproc_list(root, marker, pids, TPROC_MAX);
        /* root itself stays a zombie until its parent (the runner) reaps it. */
        int alive = 0;
        for (int i = 0; i < n; i++) {
            if (pids[i] == root && parent_of(root) < 0)
                continue;
            kill(pids[i], SIGKILL);
            alive++;
        }
        if (alive == 0)
            return 0;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return n;
}
