/*
 * client_start.h - starting the daemon for a client that found none (client.c's
 * client_connect), and hearing how its start went: the daemon's word on the pipe it
 * is handed (core/daemon_start.c writes it; the protocol is described there).
 */
#ifndef STROBE_CLIENT_START_H
#define STROBE_CLIENT_START_H

#include <stddef.h>

/* How a daemon's start went. */
enum client_start {
    CLIENT_START_READY,  /* it listens */
    CLIENT_START_OTHER,  /* another daemon has the state directory: connect to that one */
    CLIENT_START_FAILED, /* it cannot start: err says why */
};

/* Starts `bin daemon --ready-fd N` detached (its own session, standard streams on
 * /dev/null, working directory /) and waits for its word, as long as it keeps
 * talking and at most CLIENT_START_TIMEOUT_MS of silence. On CLIENT_START_FAILED,
 * err (errlen bytes) holds the daemon's own sentence (the line daemon.log has), or,
 * when it died without one, the last line of home/daemon.log. */
enum client_start client_start_daemon(const char *bin, const char *home, char *err,
                                      size_t errlen);

#endif
