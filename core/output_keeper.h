/*
 * output_keeper.h - a program's output outlives the daemon.
 *
 * A launched program writes its stdout and stderr into pipes the daemon reads. If
 * the daemon dies, the pipes' last reader is gone and the program's next write kills
 * it with SIGPIPE, although under the fast path it was meant to run on to its end
 * (docs/FASTPATH.md, "Daemon death"). So each launch starts a keeper: a small process
 * of its own (not the daemon's child, so it outlives it) that holds a copy of both read
 * ends and does nothing while the daemon lives. When the daemon dies (a pipe whose
 * write end only the daemon holds reaches its end), the keeper drains both pipes into
 * $STROBE_HOME/orphaned/SESSION.stdout and .stderr (0600) until the program closes
 * them, so the program runs on and its output is kept. When the program ends first,
 * the keeper ends with it.
 */
#ifndef STROBE_OUTPUT_KEEPER_H
#define STROBE_OUTPUT_KEEPER_H

/* Starts the keeper of the read ends out_fd and err_fd of session session_id's
 * output pipes (the caller keeps its own). 0, or -1 when it could not start (the
 * program then dies with the daemon, as before: logged, not an error of the launch). */
int output_keeper_start(int out_fd, int err_fd, const char *session_id);

/* `strobe output-keeper DIR STDOUT_PATH STDERR_PATH` (argv[0] is "output-keeper"),
 * which output_keeper_start runs with the pipes on fds 3 and 4 and the life pipe on
 * 5: forks the keeper and returns 0 (its exit status). */
int output_keeper_main(int argc, char **argv);

#endif
