/*
 * proc.h - the processes of a test run, seen from the outside through /proc: start
 * the command in a process group of its own, find every process it started (its
 * descendants, and any that left the tree but still carry the run's marker in their
 * environment), sum their CPU time, and kill them all.
 */
#ifndef STROBE_TESTRUN_PROC_H
#define STROBE_TESTRUN_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "testrun/adapter.h"

#define TPROC_MAX 256            /* processes of one run that are followed */

/* Starts cmd (argv[0] looked up in PATH) in dir with the daemon's environment plus
 * cmd->env, extra[0..n_extra) and marker ("KEY=VALUE"), stdin on /dev/null, stdout
 * and stderr on new pipes whose read ends (non-blocking) go to *out_fd, *err_fd.
 * -1 with COMMAND_NOT_FOUND / COMMAND_NOT_EXECUTABLE when the exec fails. */
int tproc_spawn(const struct test_command *cmd, const char *dir, const char *const *extra,
                int n_extra, const char *marker, pid_t *pid, int *out_fd, int *err_fd,
                struct strobe_error *e);

/* The run's live processes: root and its descendants, then the processes of this
 * user whose environment holds marker. Up to max; returns how many. */
int tproc_list(pid_t root, const char *marker, pid_t *out, int max);

/* The CPU time they wanted, in ns: the time their threads ran plus the time they
 * waited on a run queue for a CPU (schedstat; user + system time where the kernel has
 * no schedstat). A loop on a machine whose CPUs are taken by others still wants all of
 * one: the stuck detector's "busy" must not depend on the machine's load. */
int64_t tproc_cpu_demand_ns(const pid_t *pids, int n);

/* SIGKILLs root's process group and every process tproc_list finds, until none is
 * left (at most about two seconds). Returns how many were still alive at the end. */
int tproc_kill_all(pid_t root, const char *marker);

#endif
