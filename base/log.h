/*
 * log.h - the daemon's log ($STROBE_HOME/daemon.log), one line per message with a
 * timestamp and level. Thread-safe; before log_open() messages go to stderr.
 */
#ifndef STROBE_LOG_H
#define STROBE_LOG_H

#include <stdbool.h>

int log_open(const char *path);
void log_close(void);
/* Whether messages go to the log file (log_open succeeded), not to stderr. */
bool log_opened(void);
void log_msg(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) log_msg("info", __VA_ARGS__)
#define log_warn(...) log_msg("warn", __VA_ARGS__)
#define log_error(...) log_msg("error", __VA_ARGS__)

#endif
