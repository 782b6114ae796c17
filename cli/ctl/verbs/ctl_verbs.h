/*
 * ctl_verbs.h - strobectl's verbs (git's builtins, Redis's command table): one row
 * per verb with its synopsis, help and parser. The rows live next to their parsers,
 * one table per concern (ctl_session.c: sessions, launch, query; ctl_trace.c:
 * trace, crash, stacks; ctl_memory.c: memory and data watchpoints; ctl_break.c:
 * breakpoints and stepping; ctl_test.c: test), and ctl_verbs.c strings the tables
 * together in the order --help lists them, with the verbs of strobectl itself (repl,
 * tools, call, and help, which looks verbs up in the table). ctl_parse()
 * (ctl_args.h) calls down into the table, the table into the parsers' files: no
 * parser calls back up.
 *
 * To add a verb, do these 6 things:
 *   1. add its enum ctl_kind to ctl_args.h;
 *   2. write its parser (argv to the tool's arguments, no I/O) in the file of its
 *      concern, and its row in that file's table: name, kind, tool, synopsis,
 *      summary, description, options, examples, exit statuses, progress text;
 *   3. print its answer in print_result() of cli/ctl/strobectl.c (a renderer of
 *      cli/render/; render_fields() when nothing better fits);
 *   4. give it a section in man/strobectl.1 (".SS name") and, when it has an exit
 *      status of its own, a row in "EXIT STATUS" (ctl_exit.h);
 *   5. test its parsing in tests/unit/test_ctl_*.c and its --json shape and exit
 *      status in tests/e2e/test_strobectl_verbs.py;
 *   6. test_ctl_verbs.c then checks that --help and the man page name it.
 */
#ifndef STROBE_CTL_VERBS_H
#define STROBE_CTL_VERBS_H

#include <stdio.h>

#include "cli/ctl/verbs/ctl_args.h"
#include "cli/ctl/verbs/ctl_exit.h"
#include "cli/ctl/verbs/ctl_walk.h"

struct ctl_verb {
    const char *name;
    enum ctl_kind kind;
    const char *tool;        /* the tools/call name, NULL for tools and help */
    const char *synopsis;    /* "strobectl NAME ..."; alternative forms on lines of
                                their own; the first line is the usage of errors */
    const char *summary;     /* one line for strobectl --help */
    const char *description; /* what it does and prints, lines of at most 78 columns */
    const char *options;     /* "  --opt V   what it does\n" lines, or NULL */
    const char *examples;    /* command lines, one a line */
    unsigned exits;          /* CTL_EXIT_BIT()s of the statuses of its own (0 1 2 64
                                apply to every verb) */
    const char *progress;    /* what it waits for, shown on a terminal when the
                                daemon is slow (cli/render/progress.h), or NULL */
    /* argv after the verb to out->args (already an empty object, out->tool set);
     * 0, or -1 with a usage error in w->err. */
    int (*parse)(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out);
};

/* The tables of each concern, each ended by a row with a NULL name. */
extern const struct ctl_verb ctl_session_verbs[];
extern const struct ctl_verb ctl_trace_verbs[];
extern const struct ctl_verb ctl_memory_verbs[];
extern const struct ctl_verb ctl_break_verbs[];
extern const struct ctl_verb ctl_test_verbs[];

/* The i-th verb in --help's order, or NULL past the last one. */
const struct ctl_verb *ctl_verb_at(size_t i);

/* The verb called name, or NULL. */
const struct ctl_verb *ctl_verb_find(const char *name);

/* The verb whose name is closest to name (edit distance at most 2, or name is a
 * prefix of it), for "did you mean"; NULL when none is close. */
const struct ctl_verb *ctl_verb_suggest(const char *name);

/* strobectl --help: usage, the verbs one line each, global options, exit statuses,
 * and a pointer to `strobectl help VERB`. */
void ctl_print_overview(FILE *out);

/* strobectl help VERB: synopsis, description, options, examples, exit statuses. */
void ctl_print_verb_help(FILE *out, const struct ctl_verb *v);

#endif
