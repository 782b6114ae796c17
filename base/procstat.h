/*
 * procstat.h - a process's or thread's /proc stat line, read once: the fields after
 * its command name, which may hold spaces and parentheses (so the name ends at the
 * line's last ')'). Every reader of /proc/PID/stat goes through here.
 */
#ifndef STROBE_PROCSTAT_H
#define STROBE_PROCSTAT_H

#include <stddef.h>
#include <sys/types.h>

/* Reads /proc/PID/stat (tid > 0: /proc/PID/task/TID/stat) into buf (cap bytes) and
 * returns the text after the command name (" S 1 1 ...": field 3, the state, on),
 * or NULL when the process is gone or the line cannot be read. */
const char *procstat_fields(pid_t pid, pid_t tid, char *buf, size_t cap);

#endif
