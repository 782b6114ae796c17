/*
 * session_orphan.c - a session's program left running by a daemon that died.
 *
 * A program traced through the fast path runs on to its end when its daemon dies
 * (docs/FASTPATH.md). The next daemon marks such a session stopped (nothing records
 * it any more), but its process may still run: status says so, and stop kills it, so
 * that stop never answers success for a process still running. The process is the
 * session's only if its start time is the session's (a pid reused since is left
 * alone).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/procstat.h"
#include "core/session_internal.h"

/* How far a session's recorded start and its process's start may be apart: the
 * process is started during the launch that records the session. */
#define START_SLACK_MS 5000
/* How long stop waits for a killed process to go. */
#define KILL_WAIT_MS 5000

/* The boot time (unix seconds), from /proc/stat's btime; 0 if unknown. */
static long long boot_time(void)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return 0;
    char line[256];
    long long btime = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1)
            break;
    fclose(f);
    return btime;
}

/* pid's start (unix ms); -1 when it does not run (or is a zombie). */
static long long process_start_ms(pid_t pid)
{
    char buf[1024];
    const char *p = procstat_fields(pid, 0, buf, sizeof buf);
    char state;
    unsigned long long start;
    /* after the comm: state (3), then fields 4..21, then starttime (22) */
    if (!p || sscanf(p, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                            "%*d %*d %*d %*d %llu", &state, &start) != 2 || state == 'Z')
        return -1;
    long long btime = boot_time();
    long hz = sysconf(_SC_CLK_TCK);
    return btime && hz > 0 ? btime * 1000 + (long long)(start * 1000 / (unsigned long long)hz)
                           : -1;
}

pid_t session_orphan_pid(const struct session_row *row)
{
    if (row->pid <= 0 || row->pid == getpid())
        return 0;
    long long start = process_start_ms(row->pid);
    if (start < 0 || llabs(start - row->started_at_ms) > START_SLACK_MS)
        return 0;
    return row->pid;
}

pid_t session_left_running(const char *id)
{
    pthread_mutex_lock(&sessions.lock);
    bool live = session_find_live(id) != NULL;
    pthread_mutex_unlock(&sessions.lock);
    struct session_row row;
    if (live || store_session_get(sessions.store, id, &row) != 0)
        return 0;
    pid_t pid = session_orphan_pid(&row);
    session_row_free(&row);
    return pid;
}

int session_orphan_kill(const char *id, pid_t pid, struct strobe_error *e)
{
    if (kill(pid, SIGKILL) != 0 && errno != ESRCH)
        return err_set(e, ERR_INTERNAL, "Session '%s': its process %d, left running by a "
                       "daemon that died, cannot be killed (%s): end it yourself, then "
                       "stop the session again.", id, (int)pid, strerror(errno));
    for (int waited = 0; waited < KILL_WAIT_MS; waited += 10) {
        if (process_start_ms(pid) < 0) {
            log_info("session %s: killed process %d, left running by an earlier daemon",
                     id, (int)pid);
            return 0;
        }
        struct timespec ten_ms = {0, 10000000};
        nanosleep(&ten_ms, NULL);
    }
    return err_set(e, ERR_INTERNAL, "Session '%s': its process %d, left running by a daemon "
                   "that died, was sent SIGKILL but still runs after %d s: end it yourself, "
                   "then stop the session again.", id, (int)pid, KILL_WAIT_MS / 1000);
}
