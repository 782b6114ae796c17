/*
 * ctl_verbs.c - the verb table strung together from the tables of each concern and
 * the verbs of strobectl itself (repl, tools, call, help: help looks its VERB up
 * here), lookup by name and by nearness ("did you mean"), and the help texts printed
 * from the rows. See ctl_verbs.h.
 */
#include "cli/ctl/verbs/ctl_verbs.h"

#include <string.h>

#include "base/strdist.h"

/* ---- the verbs of strobectl itself: repl, tools, call, help -------------------- */

static int parse_tools(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    cJSON_Delete(out->args);
    out->args = NULL;
    return ctl_parse_none(w, "tools");
}

/* call TOOL [JSON]: out->tool is TOOL, out->args the object (default {}). */
static int parse_call(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct ctl_opt no_opts[] = { { 0 } };
    const char *pos[2] = { 0 };
    int n = ctl_collect(w, no_opts, NULL, NULL, pos, 2);
    if (n < 0)
        return -1;
    if (n == 0)
        return ctl_usage_error(w->err, w->errlen, "call needs a TOOL name");
    out->tool = pos[0];
    if (pos[1]) {
        cJSON *a = cJSON_Parse(pos[1]);
        if (!cJSON_IsObject(a)) {
            cJSON_Delete(a);
            return ctl_usage_error(w->err, w->errlen,
                               "the arguments of call must be a JSON object, not '%s'",
                               pos[1]);
        }
        cJSON_Delete(out->args);
        out->args = a;
    }
    return 0;
}

/* help [VERB]: out->verb is VERB's row (NULL: the overview). */
static int parse_help(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool dd = false;
    const char *name, *value;
    int k = ctl_walk(w, no_opts, &dd, &name, &value);
    if (k < 0)
        return -1;
    cJSON_Delete(out->args);
    out->args = NULL;
    out->verb = NULL;
    if (k == 0)
        return 0;
    if (!(out->verb = ctl_verb_find(value))) {
        const struct ctl_verb *near = ctl_verb_suggest(value);
        if (near)
            return ctl_usage_error(w->err, w->errlen, "there is no verb '%s'; did you mean "
                                   "'%s'? (strobectl --help lists them)", value, near->name);
        return ctl_usage_error(w->err, w->errlen, "there is no verb '%s'; strobectl --help "
                               "lists them", value);
    }
    return ctl_parse_none(w, "help VERB");
}

/* repl [options] [PROGRAM [ARGS...]]: the REPL reads its own gdb-style options. */
static int parse_repl(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    (void)cwd;
    cJSON_Delete(out->args);
    out->args = NULL;
    out->repl_argi = w->i - 1;
    w->i = w->argc;
    return 0;
}

static const struct ctl_verb meta_verbs[] = {
    { "repl", CTL_REPL, NULL,
      "strobectl repl [-batch] [-x FILE]... [-ex CMD]... [--args] [PROGRAM [ARGS...]]",
      "debug interactively with gdb's commands (break, run, bt, print, next...)",
      "Starts the gdb-style REPL (strobe-repl(1)): gdb's commands and abbreviations\n"
      "over the strobe daemon, with line editing, history, TAB completion of\n"
      "commands, functions, files, variables and sessions, and Ctrl-C to pause the\n"
      "running program. -x FILE and -ex CMD run commands first; -batch exits after\n"
      "them (status 1 when the last one failed). `strobe` alone on a terminal starts\n"
      "it too.\n",
      "  -batch          exit after the -x and -ex commands\n"
      "  -x FILE         run FILE's commands (# comments, blank lines skipped)\n"
      "  -ex CMD         run CMD\n"
      "  --args          the rest is PROGRAM and its arguments\n",
      "strobectl repl ./calc 4\n"
      "strobectl repl -batch -ex 'break calc.c:42 if n > 3' -ex run -ex bt ./calc\n",
      0, NULL, parse_repl },
    { "tools", CTL_TOOLS, NULL, "strobectl tools", "list the daemon's MCP tools",
      "Lists the daemon's MCP tools (tools/list), one name a line; --json prints\n"
      "the catalog with the tools' descriptions and input schemas.\n",
      "  --json          print tools/list's result as JSON\n", "strobectl tools\n", 0,
      NULL, parse_tools },
    { "call", CTL_CALL, NULL, "strobectl call TOOL [JSON-ARGUMENTS]",
      "call any MCP tool with raw JSON arguments; prints the result JSON",
      "Calls TOOL with the JSON object JSON-ARGUMENTS (default {}) and prints the\n"
      "whole tools/call result as JSON: every field and action of every tool, as\n"
      "strobe-tools(7) documents them.\n",
      NULL, "strobectl call debug_session '{\"action\":\"list\"}'\n", 0, NULL, parse_call },
    { "help", CTL_HELP, NULL, "strobectl help [VERB]",
      "this overview, or a verb's options, examples, exit statuses",
      "Prints the overview of the verbs, or VERB's help (same as strobectl VERB\n"
      "--help).\n",
      NULL, "strobectl help break\n", 0, NULL, parse_help },
    { 0 },
};

/* ---- the table ------------------------------------------------------------------ */

/* --help's order: a session's life, then what it did, its memory, stopping it,
 * tests, the daemon itself. */
static const struct ctl_verb *const tables[] = {
    ctl_session_verbs, ctl_trace_verbs, ctl_memory_verbs, ctl_break_verbs,
    ctl_test_verbs, meta_verbs,
};

const char *ctl_exit_text(int status)
{
    switch (status) {
    case CTL_EXIT_OK: return "success";
    case CTL_EXIT_TOOL_ERROR: return "the tool or the daemon reported an error "
                                     "(printed as CODE: sentence)";
    case CTL_EXIT_UNREACHABLE: return "the daemon could not be started or reached, or did not answer";
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
