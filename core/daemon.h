/*
 * daemon.h - the per-user daemon: single instance, private socket, idle shutdown.
 *
 * Start-up: resolve $STROBE_HOME (0700), take strobe.lock with flock (a second
 * daemon exits at once: the lock, not the pid file, is the truth, so files left by
 * a kill -9 are simply replaced), open the log and the database, mark sessions of a
 * dead predecessor as stopped, bind strobe.sock (0600) and write strobe.pid.
 * Each accepted connection whose peer uid (SO_PEERCRED) is ours gets a thread that
 * runs the protocol handler, up to DAEMON_MAX_CLIENTS at once. At the descriptor
 * limit the daemon stops accepting for a moment and logs it (no busy loop). The
 * daemon exits on SIGTERM/SIGINT, or after idle_timeout_s with no connection and no
 * running session.
 */
#ifndef STROBE_DAEMON_H
#define STROBE_DAEMON_H

#include "store/store.h"

/* The protocol, kept out of core/. serve: serves one connection until it closes,
 * closes fd, calls on_activity after each message. refuse: tells the peer of a
 * connection the daemon will not serve why (one message), then closes fd. */
struct daemon_protocol {
    void (*serve)(int fd, struct store *store, void (*on_activity)(void));
    void (*refuse)(int fd, const char *why);
};

/* Connections served at once (a thread each); the next one is refused. */
#define DAEMON_MAX_CLIENTS 128

/* Runs the daemon in the foreground; returns its exit status. */
int daemon_run(int idle_timeout_s, const struct daemon_protocol *protocol);

/* Default idle timeout: $STROBE_IDLE_TIMEOUT seconds if set and valid, else 1800. */
int daemon_default_idle_timeout(void);

#endif
