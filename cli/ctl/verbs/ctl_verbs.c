/*
 * ctl_verbs.c - the verb table strung together from the tables of each concern,
 * lookup by name and by nearness ("did you mean"), and the help texts printed from
 * the rows. See ctl_verbs.h.
 */
#include "cli/ctl/verbs/ctl_verbs.h"

#include <string.h>

#include "base/strdist.h"

/* --help's order: a session's life, then what it did, its memory, stopping it,
 * tests, the daemon itself. */
static const struct ctl_verb *const tables[] = {
    ctl_session_verbs, ctl_trace_verbs, ctl_memory_verbs, ctl_break_verbs,
    ctl_test_verbs, ctl_meta_verbs,
};

const char *ctl_exit_text(int status)
{
    switch (status) {
    case CTL_EXIT_OK: return "success";
    case CTL_EXIT_TOOL_ERROR: return "the tool or the daemon reported an error "
                                     "(printed as CODE: sentence)";
    case CTL_EXIT_UNREACHABLE: return "the daemon could not be started or reached";
    case CTL_EXIT_NO_CRASH: return "no crash recorded (crash)";
    case CTL_EXIT_TARGETS: return "some targets failed, the others are printed (memory)";
    case CTL_EXIT_STILL_RUNNING: return "timed out, the program still running (continue, "
                                        "until, ...)";
    case CTL_EXIT_TESTS_FAILED: return "tests failed, were stuck or did not build (test)";
    case CTL_EXIT_USAGE: return "usage error: the command line is wrong";
    default: return NULL;
    }
}

const struct ctl_verb *ctl_verb_at(size_t i)
{
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        for (const struct ctl_verb *v = tables[t]; v->name; v++)
            if (i-- == 0)
                return v;
    }
    return NULL;
}

const struct ctl_verb *ctl_verb_find(const char *name)
{
    const struct ctl_verb *v;
    for (size_t i = 0; (v = ctl_verb_at(i)); i++)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

const struct ctl_verb *ctl_verb_suggest(const char *name)
{
    const struct ctl_verb *v, *best = NULL;
    size_t best_score = 2 * 3; /* farther than 2 edits suggests nothing */
    for (size_t i = 0; (v = ctl_verb_at(i)); i++) {
        size_t d = *name && strncmp(v->name, name, strlen(name)) == 0
                       ? 1 : (size_t)str_distance(name, v->name, 3);
        /* A tie goes to the verb that starts with the same letter ("brake": break,
         * not trace). */
        size_t score = 2 * d + (v->name[0] != name[0]);
        if (score < best_score) {
            best_score = score;
            best = v;
        }
    }
    return best;
}

/* The exit statuses that apply to v: 0 1 2, its own, 64. */
static void print_exits(FILE *out, const struct ctl_verb *v)
{
    for (int s = 0; s <= CTL_EXIT_USAGE; s++) {
        bool common = s <= CTL_EXIT_UNREACHABLE || s == CTL_EXIT_USAGE;
        if (ctl_exit_text(s) && (common || (s < 32 && (v->exits & CTL_EXIT_BIT(s)))))
            fprintf(out, "  %-3d %s\n", s, ctl_exit_text(s));
    }
}

/* text with each line indented by prefix. */
static void indented(FILE *out, const char *prefix, const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");
        fprintf(out, "%s%.*s\n", prefix, (int)n, text);
        text += n + (text[n] == '\n');
    }
}

void ctl_print_verb_help(FILE *out, const struct ctl_verb *v)
{
    fputs("usage:\n", out);
    indented(out, "  ", v->synopsis);
    fputc('\n', out);
    fputs(v->description, out);
    if (v->options) {
        fputs("\noptions:\n", out);
        fputs(v->options, out);
    }
    fputs("\nexamples:\n", out);
    indented(out, "  ", v->examples);
    fputs("\nexit status:\n", out);
    print_exits(out, v);
}

void ctl_print_overview(FILE *out)
{
    fputs("usage: strobectl [--json] VERB [ARGS...]\n"
          "       strobectl help VERB    (or strobectl VERB --help)\n"
          "\n"
          "Talks to the strobe daemon (started if needed) over $STROBE_HOME/strobe.sock.\n"
          "\n"
          "verbs:\n", out);
    const struct ctl_verb *v;
    for (size_t i = 0; (v = ctl_verb_at(i)); i++)
        fprintf(out, "  %-12s %s\n", v->name, v->summary);
    fputs("\n"
          "options:\n"
          "  --json       print the tool's structured result as JSON (any verb)\n"
          "  --help, -h   this text; after a verb, that verb's help\n"
          "  --version    print the version\n"
          "\n"
          "exit status:\n", out);
    for (int s = 0; s <= CTL_EXIT_USAGE; s++)
        if (ctl_exit_text(s))
            fprintf(out, "  %-3d %s\n", s, ctl_exit_text(s));
    fputs("\nstrobectl help VERB prints a verb's options, examples and exit statuses;\n"
          "man strobectl has them all.\n", out);
}
