/*
 * ctl_args.c - strobectl's command line: the global options (--json, --help,
 * --version), the verb (ctl_verbs.h) and its --help, and the verbs of the
 * daemon itself (tools, call) and of help. See ctl_args.h.
 */
#include "cli/ctl/verbs/ctl_args.h"

#include <stdio.h>
#include <string.h>

#include "cli/ctl/verbs/ctl_verbs.h"

#define U_ANY "strobectl [--json] VERB [ARGS...]; see strobectl --help"

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

const struct ctl_verb ctl_meta_verbs[] = {
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

/* Whether the arguments after the verb ask for its help: --help or -h before a
 * "--"; for launch and repl only right after the verb, since PROGRAM's own arguments
 * follow it. */
static bool wants_help(int argc, char **argv, int i, enum ctl_kind kind)
{
    for (int j = i; j < argc && strcmp(argv[j], "--") != 0; j++) {
        if (strcmp(argv[j], "--help") == 0 || strcmp(argv[j], "-h") == 0)
            return true;
        if (kind == CTL_LAUNCH || kind == CTL_REPL)
            break;
    }
    return false;
}

int ctl_parse(int argc, char **argv, const char *cwd, struct ctl_cmd *out, char *err,
              size_t errlen)
{
    *out = (struct ctl_cmd){ .kind = CTL_HELP, .usage = U_ANY };
    int i = 1;
    /* Global options before the verb. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            out->json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            out->kind = CTL_VERSION;
            return 0;
        } else {
            return ctl_usage_error(err, errlen, "unknown option %s", argv[i]);
        }
    }
    if (i == argc)
        return ctl_usage_error(err, errlen, "no verb given; strobectl --help lists them");
    const char *name = argv[i++];
    const struct ctl_verb *v = ctl_verb_find(name);
    if (!v) {
        const struct ctl_verb *near = ctl_verb_suggest(name);
        if (near)
            return ctl_usage_error(err, errlen, "unknown verb '%s'; did you mean '%s'? "
                                   "(strobectl --help lists them)", name, near->name);
        return ctl_usage_error(err, errlen, "unknown verb '%s'; strobectl --help lists "
                               "them", name);
    }
    out->verb = v;
    out->usage = v->synopsis;
    if (wants_help(argc, argv, i, v->kind)) {
        out->kind = CTL_HELP;
        return 0;
    }
    out->kind = v->kind;
    out->tool = v->tool;
    out->args = cJSON_CreateObject();
    struct ctl_walker w = { argc, argv, i, &out->json, err, errlen };
    err[0] = '\0';
    int rc = v->parse(&w, cwd, out);
    if (rc != 0) {
        cJSON_Delete(out->args);
        out->args = NULL;
        out->tool = NULL;
    }
    return rc;
}

void ctl_cmd_free(struct ctl_cmd *c)
{
    cJSON_Delete(c->args);
    c->args = NULL;
}
