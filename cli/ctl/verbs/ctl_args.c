/*
 * ctl_args.c - strobectl's command line: the global options (--json, --help,
 * --version), the verb (ctl_verbs.h) and its --help; the rest of argv goes to the
 * verb's parser. See ctl_args.h.
 */
#include "cli/ctl/verbs/ctl_args.h"

#include <string.h>

#include "cli/ctl/verbs/ctl_verbs.h"

#define U_ANY "strobectl [--json] VERB [ARGS...]; see strobectl --help"

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
