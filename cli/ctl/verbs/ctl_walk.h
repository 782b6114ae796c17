/*
 * ctl_walk.h - the pieces every strobectl verb parser shares (ctl_session.c,
 * ctl_trace.c, ctl_memory.c, ctl_break.c, ctl_test.c, ctl_args.c): a cursor over
 * one verb's arguments that tells options from positionals, whole-number options,
 * relative paths made absolute, and usage errors as sentences.
 */
#ifndef STROBE_CTL_WALK_H
#define STROBE_CTL_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* A cursor over one command's arguments; see ctl_walk(). */
struct ctl_walker {
    int argc;
    char **argv;
    int i;          /* next argument */
    bool *json;     /* set when --json is met */
    char *err;      /* the usage error's sentence */
    size_t errlen;
};

enum ctl_opt_kind { OPT_FLAG, OPT_VALUE };
/* One option a command takes; arrays of them end with a NULL name. */
struct ctl_opt {
    const char *name; /* "--name" */
    enum ctl_opt_kind kind;
};

/* Writes the printf-style sentence to err and returns -1. */
int ctl_usage_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* path made absolute against cwd ("./" prefixes dropped, "." is cwd itself), or
 * NULL when out of memory. The caller frees. */
char *ctl_absolute(const char *cwd, const char *path);

/* Sets obj.key to path made absolute against cwd. 0, or -1 with "out of memory"
 * in err. */
int ctl_add_absolute(cJSON *obj, const char *key, const char *cwd, const char *path,
                     char *err, size_t errlen);

/* The rest of a verb that takes no arguments (sessions, tools): 0, or -1 with
 * "VERB takes no arguments, not 'X'" or an unknown option in w->err. */
int ctl_parse_none(struct ctl_walker *w, const char *verb);

/* Parses s, the value of option opt, as a whole number in [min, max] into *out.
 * 0, or -1 with "OPT needs a whole number, not 'S'" or "OPT must be between MIN and
 * MAX, not S" in err. */
int ctl_parse_int(const char *opt, const char *s, long long min, long long max,
                  long long *out, char *err, size_t errlen);

/* Next item of the command line. Options are `--name VALUE`, `--name=VALUE` or a
 * flag, from opts (ended by a NULL name); --json is taken here wherever it is, and
 * `--` makes the rest positional (*after_dashdash, false at the start). Returns 1
 * with name and value set for an option (value NULL for a flag), 2 with value set
 * for a positional, 0 at the end, -1 on a usage error ("unknown option --x"). */
int ctl_walk(struct ctl_walker *w, const struct ctl_opt *opts, bool *after_dashdash,
             const char **name, const char **value);

/* An option's handler for ctl_collect(): 0, or -1 with a sentence in w->err. */
typedef int (*ctl_opt_fn)(struct ctl_walker *w, const char *name, const char *value,
                          void *ctx);

/* The rest of a verb: each option to on_opt(w, name, value, ctx) (on_opt may be NULL
 * when opts is empty), the positionals into pos, at most max of them ("unexpected
 * argument 'X'" past that). Returns how many positionals, or -1 on a usage error. */
int ctl_collect(struct ctl_walker *w, const struct ctl_opt *opts, ctl_opt_fn on_opt,
                void *ctx, const char **pos, int max);

/* Sets args.key to value, option opt's whole number in [min, max] (replacing an
 * earlier one). 0, or -1 with ctl_parse_int's sentence in w->err. */
int ctl_set_int(struct ctl_walker *w, cJSON *args, const char *key, const char *opt,
                const char *value, long long min, long long max);

/* Sets args.sessionId to sid; -1 with "VERB needs a SESSION id" when sid is NULL. */
int ctl_set_session(struct ctl_walker *w, cJSON *args, const char *sid, const char *verb);

#endif
