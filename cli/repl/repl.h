/*
 * repl.h - the gdb-style REPL (`strobectl repl`, `strobe` on a terminal): one
 * connection to the daemon kept for the whole REPL, the state the commands share
 * (the program, its session, the selected thread and frame, the last stop), and the
 * helpers every command file uses. The loop, line editing, history and scripts live
 * in repl.c; the waits for the program and the reports of its stops in repl_wait.c;
 * the command table in repl_cmds.c; the commands in repl_run.c (run, continue,
 * step), repl_break.c (break, delete, watch), repl_inspect.c (bt, frame, print, set
 * var, x, display), repl_info.c (info, list), repl_own.c (strobe's own: trace,
 * events, crash, output, test, sessions); gdb's text forms in repl_fmt.c; argument
 * parsing in repl_parse.c; TAB completion in repl_complete.c; Ctrl-C in
 * repl_intr.c. Every command is a tool call: nothing reads text meant for people.
 * The commands are documented in man/strobe-repl.1.
 */
#ifndef STROBE_REPL_H
#define STROBE_REPL_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

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
    bool tty;             /* commands come from a terminal with line editing */
    volatile sig_atomic_t waiting; /* a command waits: REPL_WAIT_PROGRAM (Ctrl-C pauses
                                      the program) or REPL_WAIT_TEST (Ctrl-C ends it) */
    volatile sig_atomic_t interrupted; /* Ctrl-C arrived during the wait */
};

/* `strobectl repl ...` (argv[0] is "repl") and `strobe` alone on a terminal (argc 0).
 * Returns the exit status: 0, 1 when the last command of -batch failed, 2 when the
 * daemon cannot be reached, 64 on a usage error. */
int repl_main(int argc, char **argv);

/* Runs one command line; 0, or 1 when it failed (the error is printed). */
int repl_execute(struct repl *r, const char *line);

/* ---- helpers shared by the command files --------------------------------------- */

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

/* Prints a debug_continue answer as gdb does (the stop, the exit, a watch hit) and
 * the program's output that came before it; updates the last stop. before is the
 * stop the command started from (a step prints the frame line when it changes
 * function). Returns 1 when it is an error to report in -batch (none so far). */
int repl_report(struct repl *r, const cJSON *answer, const char *before_fn);

/* Waits in debug_continue with args (consumed) until a stop, an exit or Ctrl-C, asking again
 * while the program runs on; prints the outcome. r->waiting is set meanwhile (a
 * Ctrl-C already noted in r->interrupted pauses the program first). 0, or 1. */
int repl_wait(struct repl *r, cJSON *args);

/* Appends to the array out every event of the session of type (NULL: all) after
 * event id after (NULL: from the start), following debug_query's pages. 0, or -1
 * with the "CODE: sentence" in err (1024 bytes; NULL: not kept). */
int repl_query_all(struct repl *r, const char *type, const char *after, cJSON *out,
                   char *err);

/* Prints the session's stdout and stderr lines not shown yet (only those before
 * event id before, when not NULL). */
void repl_show_output(struct repl *r, const char *before);

/* Prints the display expressions ("1: qty = 2"), after a stop. */
void repl_show_displays(struct repl *r);

/* How repl_set_break reports a breakpoint: kept, deleted after its first stop
 * (tbreak), or that and silent (advance and until LOCATION: the stop shows the place
 * only). */
enum repl_bp_kind { REPL_BP_KEEP, REPL_BP_TEMPORARY, REPL_BP_SILENT };

/* Sets a breakpoint from "LOCATION [if COND]": in the session, or staged for the
 * next run. 0, or 1 after printing the error. */
int repl_set_break(struct repl *r, const char *a, enum repl_bp_kind kind);

/* Leaves the session: stops it when the REPL started it (kill, a new run, quit),
 * and forgets its state. With keep_breakpoints (kill, run), the session's
 * breakpoints are staged for the next run, as gdb keeps them across runs. */
void repl_end_session(struct repl *r, bool keep_breakpoints);

/* debug_breakpoint list of the session (the staged breakpoints without one),
 * remembered in r->bps_known; once the program has ended, the list as last known.
 * The answer (the caller deletes it), or NULL with "CODE: sentence" in err. */
cJSON *repl_breakpoint_list(struct repl *r, char *err, size_t errlen);

/* Forgets the watchpoints (the session changed). */
void repl_forget_watches(struct repl *r);

/* Adds sessionId, and threadId + frame when a thread is paused, to args. */
void repl_frame_args(struct repl *r, cJSON *args);

/* ---- the interrupter (repl_intr.c) ---------------------------------------------- */

/* Installs the SIGINT handler and starts the thread that pauses the program through
 * a second connection when Ctrl-C comes during a wait. 0 or -1. */
int repl_intr_start(struct repl *r);
void repl_intr_stop(void);
/* Whether Ctrl-C came at the prompt since the last call (clears it). */
bool repl_intr_at_prompt(void);
/* libedit's character reader (rl_getc_function): a character of in, or '\n' when
 * Ctrl-C came at the prompt (the line ends; repl_intr_at_prompt() says to drop it). */
int repl_intr_getc(FILE *in);

/* ---- completion (repl_complete.c) ----------------------------------------------- */

/* Hooks TAB completion into libedit for r. */
void repl_complete_init(struct repl *r);
/* Drops the completion data (the program changed). */
void repl_complete_reset(void);

#endif
