/*
 * daemon_start.h - what a starting daemon tells whoever started it, on the pipe it
 * was handed (`strobe daemon --ready-fd N`): still at work, listening, another daemon
 * has it, or why it cannot start. The protocol is in daemon_start.c; the reader is
 * cli/client_start.c. Without a pipe (a daemon run by hand) the log and stderr say it
 * all the same.
 */
#ifndef STROBE_DAEMON_START_H
#define STROBE_DAEMON_START_H

/* The pipe's write end (from --ready-fd; -1: none). Made close-on-exec, so no
 * program the daemon launches holds it. */
void daemon_start_attach(int fd);
/* "wait WHAT": a step that may take a while begins (and is still going: the
 * database's check says so every second). */
void daemon_start_wait(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "ready": the socket accepts; the pipe is closed. */
void daemon_start_ready(void);
/* "other WHY": another daemon holds the lock (it may still be starting): said on
 * stderr too, not logged; the pipe is closed. */
void daemon_start_other(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "error SENTENCE": the daemon cannot start. The sentence is logged as an error
 * (daemon.log, or stderr while no log is open) and said on stderr, so the starter,
 * the log and a terminal read the same line; the pipe is closed. */
void daemon_start_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
