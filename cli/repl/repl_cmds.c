/*
 * repl_cmds.c - the REPL's command table, the lookup of what was typed (gdb's rules:
 * an exact name, then the aliases, then a unique prefix), and the commands about
 * the table and the REPL itself: `help` and `quit`. See repl_cmds.h.
 */
#include "cli/repl/repl_cmds.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/repl/repl_state.h"

const struct repl_cmd repl_cmds[] = {
    {"advance", NULL, repl_cmd_advance, false, "advance LOCATION",
     "Run until the program reaches LOCATION (a function or FILE:LINE)."},
    {"attach", NULL, repl_cmd_attach, false, "attach PID",
     "Strobe launches programs itself; explains what to do instead."},
    {"awatch", NULL, repl_cmd_awatch, false, "awatch EXPR",
     "Watch reads and writes of a global variable or an address."},
    {"backtrace", "bt where", repl_cmd_bt, false, "backtrace",
     "Print the frames of the selected thread."},
    {"break", "b br brea", repl_cmd_break, false, "break FILE:LINE|FUNCTION [if COND]",
     "Set a breakpoint, with an optional condition."},
    {"continue", "c cont fg", repl_cmd_continue, true, "continue",
     "Resume the program until the next stop or its end."},
    {"crash", NULL, repl_cmd_crash, false, "crash",
     "Print the crash report of the session: signal, stack, locals."},
    {"delete", "d", repl_cmd_delete, false, "delete [N...]",
     "Delete breakpoints and watchpoints (all of them without N)."},
    {"disable", "disa", repl_cmd_enable, false, "disable [N...]",
     "Not supported by strobe: delete the breakpoint instead."},
    {"display", NULL, repl_cmd_display, false, "display [EXPR]",
     "Print EXPR now and after every stop (the list without EXPR)."},
    {"down", "do", repl_cmd_down, false, "down [N]",
     "Select the frame N levels in (called by this one)."},
    {"enable", "en", repl_cmd_enable, false, "enable [N...]",
     "Not supported by strobe: set the breakpoint again instead."},
    {"events", NULL, repl_cmd_events, false, "events [strobectl query flags]",
     "Query the session's timeline (strobectl query's flags)."},
    {"file", NULL, repl_cmd_file, false, "file PROGRAM",
     "Use PROGRAM as the program to run."},
    {"finish", "fin", repl_cmd_finish, false, "finish",
     "Run until the innermost function returns; print its value."},
    {"frame", "f", repl_cmd_frame, false, "frame [N]",
     "Select and print frame N (the selected one without N)."},
    {"help", "h", repl_cmd_help, false, "help [COMMAND]",
     "List the commands, or describe one."},
    {"info", "i inf", repl_cmd_info, false,
     "info breakpoints|threads|frame|locals|args|sessions|registers",
     "Describe the program's state."},
    {"kill", "k", repl_cmd_kill, false, "kill", "Stop the program (its session ends)."},
    {"list", "l", repl_cmd_list, false, "list [LINE|FUNCTION|FILE:LINE]",
     "Print source lines around the current line, or around LOCATION."},
    {"next", "n", repl_cmd_next, true, "next",
     "Run to the next line of the selected function, over calls."},
    {"output", NULL, repl_cmd_output, false, "output [stdout|stderr]",
     "Print what the program wrote."},
    {"print", "p inspect", repl_cmd_print, false, "print[/x] EXPR",
     "Print the value of a variable, argument, register or global."},
    {"quit", "q exit", repl_cmd_quit, false, "quit",
     "Leave the REPL; the session it started stops."},
    {"run", "r", repl_cmd_run, false, "run [ARGS...]",
     "Launch the program under strobe and wait for a stop or its end."},
    {"rwatch", NULL, repl_cmd_rwatch, false, "rwatch EXPR",
     "Watch accesses of a global (x86 watches reads with writes)."},
    {"session", NULL, repl_cmd_session, false, "session SESSION_ID",
     "Attach the REPL to an existing session."},
    {"sessions", NULL, repl_cmd_sessions, false, "sessions",
     "List the daemon's sessions."},
    {"set", NULL, repl_cmd_set, false, "set var NAME = VALUE",
     "Write a variable of the paused frame or a global."},
    {"start", NULL, repl_cmd_start, false, "start [ARGS...]",
     "Set a temporary breakpoint at main, then run."},
    {"step", "s", repl_cmd_step, true, "step",
     "Run to the next line, into called functions with debug info."},
    {"test", NULL, repl_cmd_test, false, "test [strobectl test args]",
     "Run the project's tests and print the failures (strobectl test's flags)."},
    {"tbreak", "tb", repl_cmd_tbreak, false, "tbreak FILE:LINE|FUNCTION [if COND]",
     "Set a breakpoint that is deleted after its first stop."},
    {"thread", "t", repl_cmd_thread, false, "thread [TID] | thread apply all bt",
     "Select a paused thread; `thread apply all bt` prints every thread's stack."},
    {"trace", NULL, repl_cmd_trace, false, "trace add|remove PATTERN...",
     "Trace functions matching PATTERN (events record calls and returns)."},
    {"undisplay", NULL, repl_cmd_undisplay, false, "undisplay [N...]",
     "Stop displaying expressions (all of them without N)."},
    {"until", "u", repl_cmd_until, true, "until [LOCATION]",
     "Like next; with LOCATION, run until it is reached."},
    {"up", NULL, repl_cmd_up, false, "up [N]",
     "Select the frame N levels out (its caller)."},
    {"watch", NULL, repl_cmd_watch, false, "watch EXPR",
     "Watch writes of a global variable or an address (hardware watchpoint)."},
    {"x", NULL, repl_cmd_x, false, "x/FMT ADDRESS",
     "Examine memory: FMT is a count, a format (x d u o t c a f s) and a size (b h w g)."},
    {NULL, NULL, NULL, false, NULL, NULL},
};

/* Whether word (len bytes) is one of the space-separated names in list. */
static bool in_list(const char *list, const char *word, size_t len)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, " ");
        if (n == len && strncmp(p, word, len) == 0)
            return true;
        p += n;
        p += strspn(p, " ");
    }
    return false;
}

const struct repl_cmd *repl_cmd_find(const char *word, size_t len, bool *ambiguous)
{
    *ambiguous = false;
    if (len == 0)
        return NULL;
    for (const struct repl_cmd *c = repl_cmds; c->name; c++)
        if (strlen(c->name) == len && strncmp(c->name, word, len) == 0)
            return c;
    for (const struct repl_cmd *c = repl_cmds; c->name; c++)
        if (in_list(c->aliases, word, len))
            return c;
    const struct repl_cmd *found = NULL;
    for (const struct repl_cmd *c = repl_cmds; c->name; c++) {
        if (strncmp(c->name, word, len) != 0)
            continue;
        if (found) {
            *ambiguous = true;
            return NULL;
        }
        found = c;
    }
    return found;
}

const char *repl_cmd_split(const char *line, const char **word, size_t *wlen)
{
    while (isspace((unsigned char)*line))
        line++;
    *word = line;
    size_t n = 0;
    while (line[n] && !isspace((unsigned char)line[n]) && (line[n] != '/' || n == 0))
        n++;
    *wlen = n;
    line += n;
    while (isspace((unsigned char)*line))
        line++;
    return line;
}

int repl_cmd_help(struct repl *r, const char *a)
{
    (void)r;
    if (*a) {
        bool amb;
        const struct repl_cmd *c = repl_cmd_find(a, strcspn(a, " "), &amb);
        if (!c)
            return repl_fail(amb ? "Ambiguous command \"%s\": type \"help\" for the list."
                                 : "Undefined command: \"%s\".  Try \"help\".", a);
        printf("%s\n  %s\n", c->usage, c->help);
        if (c->aliases)
            printf("  Abbreviations: %s\n", c->aliases);
        return 0;
    }
    puts("Commands (gdb's verbs; unique prefixes work, e.g. `cont`, `fin`):");
    for (const struct repl_cmd *c = repl_cmds; c->name; c++)
        printf("  %-44s %s\n", c->usage, c->help);
    puts("An empty line repeats next, step, until and continue. See strobe-repl(1).");
    return 0;
}

int repl_cmd_quit(struct repl *r, const char *a)
{
    (void)a;
    r->quit = true;
    return 0;
}
