/*
 * daemon.h - the per-user daemon: single instance, private socket, idle shutdown.
 *
 * Start-up: resolve $STROBE_HOME (0700), open the log, take strobe.lock with flock (a
 * second daemon exits at once: the lock, not the pid file, is the truth, so files left
 * by a kill -9 are simply replaced), check and open the database (a damaged one is set
 * aside: store/check.c), mark sessions of a dead predecessor as stopped, bind
 * strobe.sock (0600) and write strobe.pid. Each step that may take long, the end
 * (listening), and any reason not to start are told to whoever started the daemon
 * (core/daemon_start.h) as well as logged.
 * Each accepted connection whose peer uid (SO_PEERCRED) is ours gets a thread that
 * runs the protocol handler, up to DAEMON_MAX_CLIENTS at once. At the descriptor
 * limit the daemon stops accepting for a moment and logs it (no busy loop). The
 * daemon exits on SIGTERM/SIGINT, or after idle_timeout_s with no connection, no
 * running session and no service at work.
 *
 * The daemon knows its clients only through two tables the composition root
 * (strobe.c) hands it: the protocol it serves on the socket (mcp/) and the services
 * that live beside the sessions (testrun/: debug_test's runs), so core/ includes
 * none of them.
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

/* A client of the engine that lives as long as the daemon. init: after the
 * sessions, with the store and $STROBE_HOME (NULL when it could not be resolved);
 * busy: how much work it still does (the daemon does not idle out while any is
 * busy); shutdown: ends that work and waits for it, before the sessions end. */
struct daemon_service {
    const char *name;
    void (*init)(struct store *store, const char *home);
    int (*busy)(void);
    void (*shutdown)(void);
};

/* Connections served at once (a thread each); the next one is refused. */
#define DAEMON_MAX_CLIENTS 128

/* Runs the daemon in the foreground with the services services[0..n) (started in
 * that order, shut down in the reverse one); returns its exit status. */
int daemon_run(int idle_timeout_s, const struct daemon_protocol *protocol,
               const struct daemon_service *const *services, int n_services);

/* Default idle timeout: $STROBE_IDLE_TIMEOUT seconds if set and valid, else 1800. */
int daemon_default_idle_timeout(void);

#endif
