/*
 * repl_cmds.h - the REPL's commands. The table (repl_cmds.c): gdb's verbs and
 * strobe's own, their abbreviations, and the lookup that resolves what was typed (an
 * exact name, an alias such as `c` or `bt`, or a unique prefix such as `cont`, `fin`)
 * without any I/O, so that it can be unit-tested. Below it, as git's builtin.h
 * declares its builtins, the commands of each file, and what those files offer each
 * other: a command file never calls the table or the loop above it.
 */
#ifndef STROBE_REPL_CMDS_H
#define STROBE_REPL_CMDS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct repl;

struct repl_cmd {
    const char *name;
    const char *aliases;  /* space-separated abbreviations that win over prefixes */
    int (*run)(struct repl *r, const char *args); /* 0, or 1 when it failed */
    bool repeats;         /* an empty line runs it again (next, step, continue) */
    const char *usage;    /* "break LOCATION [if COND]" */
    const char *help;     /* one sentence */
};

/* The table, ended by a NULL name. */
extern const struct repl_cmd repl_cmds[];

/* The command word is typed; *ambiguous is set when it is the prefix of several
 * commands (NULL returned). */
const struct repl_cmd *repl_cmd_find(const char *word, size_t len, bool *ambiguous);

/* Splits line into the command word (*word, *wlen: up to a blank or a '/', so that
 * `p/x` and `x/4xw` work) and its arguments (returned, blanks skipped). */
const char *repl_cmd_split(const char *line, const char **word, size_t *wlen);

/* The commands of each file. */
int repl_cmd_file(struct repl *r, const char *a);
int repl_cmd_run(struct repl *r, const char *a);
int repl_cmd_start(struct repl *r, const char *a);
int repl_cmd_attach(struct repl *r, const char *a);
int repl_cmd_kill(struct repl *r, const char *a);
int repl_cmd_break(struct repl *r, const char *a);
int repl_cmd_tbreak(struct repl *r, const char *a);
int repl_cmd_delete(struct repl *r, const char *a);
int repl_cmd_enable(struct repl *r, const char *a);
int repl_cmd_continue(struct repl *r, const char *a);
int repl_cmd_next(struct repl *r, const char *a);
int repl_cmd_step(struct repl *r, const char *a);
int repl_cmd_finish(struct repl *r, const char *a);
int repl_cmd_until(struct repl *r, const char *a);
int repl_cmd_advance(struct repl *r, const char *a);
int repl_cmd_watch(struct repl *r, const char *a);
int repl_cmd_rwatch(struct repl *r, const char *a);
int repl_cmd_awatch(struct repl *r, const char *a);
int repl_cmd_bt(struct repl *r, const char *a);
int repl_cmd_thread(struct repl *r, const char *a);
int repl_cmd_frame(struct repl *r, const char *a);
int repl_cmd_up(struct repl *r, const char *a);
int repl_cmd_down(struct repl *r, const char *a);
int repl_cmd_print(struct repl *r, const char *a);
int repl_cmd_set(struct repl *r, const char *a);
int repl_cmd_display(struct repl *r, const char *a);
int repl_cmd_undisplay(struct repl *r, const char *a);
int repl_cmd_x(struct repl *r, const char *a);
int repl_cmd_info(struct repl *r, const char *a);
int repl_cmd_list(struct repl *r, const char *a);
int repl_cmd_trace(struct repl *r, const char *a);
int repl_cmd_events(struct repl *r, const char *a);
int repl_cmd_crash(struct repl *r, const char *a);
int repl_cmd_output(struct repl *r, const char *a);
int repl_cmd_test(struct repl *r, const char *a);
int repl_cmd_sessions(struct repl *r, const char *a);
int repl_cmd_session(struct repl *r, const char *a);
int repl_cmd_help(struct repl *r, const char *a);
int repl_cmd_quit(struct repl *r, const char *a);

/* ---- what the command files offer each other -------------------------------- */

/* repl_break.c: how repl_set_break reports a breakpoint: kept, deleted after its
 * first stop (tbreak), or that and silent (advance and until LOCATION: the stop
 * shows the place only). */
enum repl_bp_kind { REPL_BP_KEEP, REPL_BP_TEMPORARY, REPL_BP_SILENT };

/* repl_break.c: sets a breakpoint from "LOCATION [if COND]": in the session, or
 * staged for the next run. 0, or 1 after printing the error. */
int repl_set_break(struct repl *r, const char *a, enum repl_bp_kind kind);

/* repl_break.c: debug_breakpoint list of the session (the staged breakpoints
 * without one), remembered in r->bps_known; once the program has ended, the list
 * as last known. The answer (the caller deletes it), or NULL with "CODE: sentence"
 * in err. */
cJSON *repl_breakpoint_list(struct repl *r, char *err, size_t errlen);

/* repl_break.c: prints the breakpoints and watchpoints (info breakpoints). */
int repl_info_breakpoints(struct repl *r);

/* repl_inspect.c: prints the display expressions ("1: qty = 2"), after a stop. */
void repl_show_displays(struct repl *r);

/* repl_run.c: leaves the session: stops it when the REPL started it (kill, a new
 * run, quit), and forgets its state. With keep_breakpoints (kill, run), the
 * session's breakpoints are staged for the next run, as gdb keeps them across
 * runs. */
void repl_end_session(struct repl *r, bool keep_breakpoints);

/* repl_info.c: the subcommands of `info`, for it and for completion, ended by
 * NULL. */
extern const char *const repl_info_subcmds[];

#endif
