/*
 * daemon.h - the per-user daemon: single instance, private socket, idle shutdown.
 *
 * Start-up: resolve $STROBE_HOME (0700), take strobe.lock with flock (a second
 * daemon exits at once: the lock, not the pid file, is the truth, so files left by
 * a kill -9 are simply replaced), open the log and the database, mark sessions of a
 * dead predecessor as stopped, bind strobe.sock (0600) and write strobe.pid.
 * Each accepted connection whose peer uid (SO_PEERCRED) is ours gets a thread that
 * runs the protocol handler. The daemon exits on SIGTERM/SIGINT, or after
 * idle_timeout_s with no connection and no running session.
 */
#ifndef STROBE_DAEMON_H
#define STROBE_DAEMON_H

#include "store/store.h"

/* The protocol, kept out of core/: serves one connection until it closes, closes
 * fd, calls on_activity after each message. */
typedef void (*connection_fn)(int fd, struct store *store, void (*on_activity)(void));

/* Runs the daemon in the foreground; returns its exit status. */
int daemon_run(int idle_timeout_s, connection_fn serve);

/* Default idle timeout: $STROBE_IDLE_TIMEOUT seconds if set and valid, else 1800. */
int daemon_default_idle_timeout(void);

#endif
