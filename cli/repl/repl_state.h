/*
 * repl_state.h - the REPL's state and the helpers every command file uses on it.
 * One struct repl lives for the whole REPL (repl_main): the connection to the daemon,
 * the program, its session, the selected thread and frame, the last stop, and what
 * the commands remember between them (values, displays, watchpoints, breakpoints).
 * The helpers are tool calls, errors, the session and the selected frame;
 * repl_state.c owns them, and calls no other file of the REPL.
 */
#ifndef STROBE_REPL_STATE_H
#define STROBE_REPL_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "cli/client.h"

/* What a command waits for (struct repl's waiting). */
enum { REPL_WAIT_NONE, REPL_WAIT_PROGRAM, REPL_WAIT_TEST };

/* Most watchpoints the REPL remembers (the debug registers hold four). */
#define REPL_MAX_WATCHES 8

/* A data watchpoint set with watch/rwatch/awatch: gdb's number for it, the daemon's
 * watchId, what is watched. */
struct repl_watch {
    int num;
    char *watch_id;
    char *label;
    const char *kind; /* "Hardware watchpoint", "Hardware access (read/write) watchpoint" */
};

struct repl {
    struct rpc_client rpc;
    char cwd[4096];
    char *program;        /* absolute path of the program (`file`, the command line) */
    cJSON *prog_args;     /* array of strings: the arguments of `run` */
    char *sid;            /* the session the REPL is attached to, or NULL */
    bool own_session;     /* started by run: quit and the next run stop it */
    long long pid;        /* main process of the session */
    cJSON *stop;          /* the last debug_continue answer with state "paused" */
    long long thread;     /* selected thread (0: the last pause's) */
    int frame;            /* selected frame of the last stop */
    int values;           /* $N: values printed so far */
    cJSON *history;       /* their {value, type, size}, $1 first (print $N) */
    cJSON *displays;      /* display: [{num, expr}] printed after every stop */
    int next_display;
    int next_bp_num;      /* gdb number of the next watchpoint (shares bp numbers) */
    struct repl_watch watches[REPL_MAX_WATCHES];
    int n_watches;
    bool exit_shown;      /* the end of the session's program was reported */
    long long watch_from; /* timestampNs just after the last watch_hit shown */
    char *output_after;   /* id of the last output event shown */
    cJSON *bps_known;     /* the session's breakpoints as last listed: what `info
                             breakpoints` and the next run use once the program has
                             ended (the daemon drops them with its process) */
    int staged[64];       /* ids of breakpoints staged for the next run */
    int n_staged;
    int temporary[64];    /* ids of tbreak breakpoints (reported as temporary) */
    int n_temporary;
    int advance_id;       /* the breakpoint of advance / until LOCATION (not reported) */
    char *list_file;      /* `list`: the file and the next line to show */
    int list_line;
    bool batch;
    bool quit;            /* quit was typed: the scripts and the loop stop */
    bool tty;             /* commands come from a terminal with line editing */
    volatile sig_atomic_t waiting; /* a command waits: REPL_WAIT_PROGRAM (Ctrl-C pauses
                                      the program) or REPL_WAIT_TEST (Ctrl-C ends it) */
    volatile sig_atomic_t interrupted; /* Ctrl-C arrived during the wait */
};

/* tools/call tool(args), args consumed: the structured answer (caller deletes), or
 * NULL after printing the daemon's "CODE: sentence" on stderr. */
cJSON *repl_tool(struct repl *r, const char *tool, cJSON *args);

/* Like repl_tool, but a failure leaves its "CODE: sentence" in err (not printed). */
cJSON *repl_tool_quiet(struct repl *r, const char *tool, cJSON *args, char *err,
                       size_t errlen);

/* Prints "msg" on stderr and returns 1 (commands end with `return repl_fail(...)`). */
int repl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The session id, or NULL after saying "The program is not being run." */
const char *repl_need_session(struct repl *r);

/* Replaces the last stop (NULL: the program runs or ended) and resets the frame. */
void repl_set_stop(struct repl *r, const cJSON *stop);

/* Forgets the watchpoints (the session changed). */
void repl_forget_watches(struct repl *r);

/* Adds sessionId, and threadId + frame when a thread is paused, to args. */
void repl_frame_args(struct repl *r, cJSON *args);

#endif
