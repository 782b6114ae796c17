/*
 * ctl_walk.c - the argument cursor, whole numbers, absolute paths and usage errors
 * shared by strobectl's command parsers. See ctl_walk.h.
 */
#include "cli/ctl/verbs/ctl_walk.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ctl_usage_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

char *ctl_absolute(const char *cwd, const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    if (strcmp(path, ".") == 0 || !*path)
        return strdup(cwd);
    char *out;
    if (asprintf(&out, "%s%s%s", cwd, cwd[strlen(cwd) - 1] == '/' ? "" : "/", path) < 0)
        return NULL;
    return out;
}

int ctl_add_absolute(cJSON *obj, const char *key, const char *cwd, const char *path,
                     char *err, size_t errlen)
{
    char *abs = ctl_absolute(cwd, path);
    if (!abs)
        return ctl_usage_error(err, errlen, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddStringToObject(obj, key, abs);
    free(abs);
    return 0;
}

int ctl_parse_none(struct ctl_walker *w, const char *verb)
{
    static const struct ctl_opt no_opts[] = { { 0 } };
    bool dd = false;
    const char *name, *value;
    int k = ctl_walk(w, no_opts, &dd, &name, &value);
    if (k == 2)
        return ctl_usage_error(w->err, w->errlen, "%s takes no arguments, not '%s'", verb,
                               value);
    return k < 0 ? -1 : 0;
}

int ctl_parse_int(const char *opt, const char *s, long long min, long long max,
                  long long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno == ERANGE)
        return ctl_usage_error(err, errlen, "%s needs a whole number, not '%s'", opt, s);
    if (v < min || v > max)
        return ctl_usage_error(err, errlen, "%s must be between %lld and %lld, not %s",
                               opt, min, max, s);
    *out = v;
    return 0;
}

int ctl_walk(struct ctl_walker *w, const struct ctl_opt *opts, bool *after_dashdash,
             const char **name, const char **value)
{
    while (w->i < w->argc) {
        const char *a = w->argv[w->i++];
        if (*after_dashdash || a[0] != '-' || a[1] == '\0') {
            *value = a;
            return 2;
        }
        if (strcmp(a, "--") == 0) {
            *after_dashdash = true;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            *w->json = true;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        const struct ctl_opt *d = opts;
        while (d->name && (strlen(d->name) != n || strncmp(d->name, a, n) != 0))
            d++;
        if (!d->name)
            return ctl_usage_error(w->err, w->errlen, "unknown option %.*s", (int)n, a);
        *name = d->name;
        if (d->kind == OPT_FLAG) {
            if (eq)
                return ctl_usage_error(w->err, w->errlen, "%s takes no value", d->name);
            *value = NULL;
        } else if (eq) {
            *value = eq + 1;
        } else if (w->i < w->argc) {
            *value = w->argv[w->i++];
        } else {
            return ctl_usage_error(w->err, w->errlen, "%s needs a value", d->name);
        }
        return 1;
    }
    return 0;
}

int ctl_collect(struct ctl_walker *w, const struct ctl_opt *opts, ctl_opt_fn on_opt,
                void *ctx, const char **pos, int max)
{
    bool dd = false;
    const char *name, *value;
    int n = 0, k;
    while ((k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            return -1;
        if (k == 1) {
            if (on_opt(w, name, value, ctx) != 0)
                return -1;
            continue;
        }
        if (n == max)
            return ctl_usage_error(w->err, w->errlen, "unexpected argument '%s'", value);
        pos[n++] = value;
    }
    return n;
}

int ctl_set_int(struct ctl_walker *w, cJSON *args, const char *key, const char *opt,
                const char *value, long long min, long long max)
{
    long long n;
    if (ctl_parse_int(opt, value, min, max, &n, w->err, w->errlen) != 0)
        return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(args, key);
    cJSON_AddNumberToObject(args, key, (double)n);
    return 0;
}

int ctl_set_session(struct ctl_walker *w, cJSON *args, const char *sid, const char *verb)
{
    if (!sid)
        return ctl_usage_error(w->err, w->errlen, "%s needs a SESSION id", verb);
    cJSON_AddStringToObject(args, "sessionId", sid);
    return 0;
}
