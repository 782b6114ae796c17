/*
 * ctl_args.h - strobectl's command line: turns argv into the MCP call to make (a
 * tool name and its arguments as JSON), with no I/O, so that it can be unit-tested.
 * The verbs, their help and their parsers are rows of ctl_verbs.h; ctl_parse()
 * takes the global options, finds the verb and hands it the rest. The verbs are
 * documented in man/strobectl.1 and by `strobectl help VERB`.
 */
#ifndef STROBE_CTL_ARGS_H
#define STROBE_CTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

enum ctl_kind {
    CTL_HELP,     /* --help, help [VERB], VERB --help: print the help of cmd.verb
                     (ctl_print_verb_help) or, with no verb, ctl_print_overview */
    CTL_VERSION,  /* --version */
    CTL_TOOLS,    /* tools/list */
    CTL_CALL,     /* raw tools/call */
    CTL_LAUNCH,   /* debug_launch */
    CTL_QUERY,    /* debug_query */
    CTL_SESSIONS, /* debug_session list */
    CTL_STATUS,   /* debug_session status */
    CTL_STOP,     /* debug_session stop */
    CTL_DELETE,   /* debug_session delete */
    CTL_TRACE,    /* debug_trace */
    CTL_CRASH,    /* debug_query of the crash events, rendered as crash reports */
    CTL_STACKS,   /* debug_session stacks, rendered like gdb's thread apply all bt */
    CTL_MEM_READ, /* debug_memory read */
    CTL_MEM_WRITE,/* debug_memory write */
    CTL_MEM_POLL, /* debug_memory read with poll */
    CTL_WATCH,    /* debug_memory watch (a hardware data watchpoint) */
    CTL_UNWATCH,  /* debug_memory unwatch */
    CTL_MEMORY,   /* debug_memory read or write, one line per target */
    /* ctl_break.h parses these; CTL_BREAK through CTL_UNTIL stay in this order */
    CTL_BREAK,    /* debug_breakpoint add */
    CTL_BREAKPOINTS, /* debug_breakpoint list */
    CTL_BP_DELETE,/* debug_breakpoint remove (delete SESSION ID...|all) */
    CTL_CONTINUE, /* debug_continue continue */
    CTL_NEXT,     /* debug_continue step-over */
    CTL_STEP,     /* debug_continue step-into */
    CTL_FINISH,   /* debug_continue step-out */
    CTL_PAUSE,    /* debug_continue pause */
    CTL_UNTIL,    /* debug_continue until */
    CTL_TEST,     /* debug_test run, polled to the end (ctl_test.h), or status */
    CTL_REPL,     /* the gdb-style REPL (cli/repl/repl.h) on argv from repl_argi on */
};

struct ctl_verb;

struct ctl_cmd {
    enum ctl_kind kind;
    const struct ctl_verb *verb; /* the verb parsed (for CTL_HELP: the one to
                                    describe, NULL for the overview) */
    bool json;        /* --json: print the structured result instead of text */
    const char *tool; /* the tools/call name (points into argv or a literal); NULL
                         for help, version and tools */
    cJSON *args;      /* the tools/call arguments (an object), owned; NULL when
                         there is no tools/call */
    int repl_argi;    /* CTL_REPL: the index in argv of "repl", whose arguments
                         repl_main() parses itself */
    const char *usage; /* one-line synopsis of the command, for usage errors */
    bool full_paths;  /* crash --full-paths: source files and modules as stored */
    bool registers;   /* crash --registers: print the registers too */
};

/* Parses argv (argv[0] is the program name). cwd is the directory relative paths
 * (launch's PROGRAM with a '/', --cwd, --project-root, test's PROJECT_ROOT and the
 * program of its --command) are made absolute against; it is also the default
 * project root of launch and test. Returns 0 with *out filled (free it
 * with ctl_cmd_free), or -1 on a usage error with a sentence in err and
 * out->usage set; out then owns nothing. An unknown verb's sentence suggests the
 * closest one. */
int ctl_parse(int argc, char **argv, const char *cwd, struct ctl_cmd *out, char *err,
              size_t errlen);

void ctl_cmd_free(struct ctl_cmd *c);

#endif
