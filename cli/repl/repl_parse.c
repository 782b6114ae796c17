/*
 * repl_parse.c - the REPL's argument grammar: x/FMT, breakpoint locations with
 * `if`, assignments and typed values. See repl_parse.h.
 */
#include "cli/repl/repl_parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

int repl_parse_xfmt(const char *fmt, const struct repl_xfmt *prev, struct repl_xfmt *out,
                    char *err, size_t errlen)
{
    *out = *prev;
    out->count = 1;
    const char *p = fmt;
    if (isdigit((unsigned char)*p)) {
        char *end;
        long n = strtol(p, &end, 10);
        if (n < 1 || n > 4096) {
            snprintf(err, errlen, "The count in /%s must be between 1 and 4096.", fmt);
            return -1;
        }
        out->count = (int)n;
        p = end;
    }
    bool sized = false;
    for (; *p; p++) {
        switch (*p) {
        case 'b': out->size = 1; sized = true; break;
        case 'h': out->size = 2; sized = true; break;
        case 'w': out->size = 4; sized = true; break;
        case 'g': out->size = 8; sized = true; break;
        case 'x': case 'd': case 'u': case 'o': case 't': case 'c': case 'a': case 'f':
        case 's': case 'i':
            out->format = *p;
            break;
        default:
            snprintf(err, errlen, "Invalid format letter '%c' in /%s: use a count, one of "
                     "x d u o t c a f s and one of b h w g.", *p, fmt);
            return -1;
        }
    }
    if (!sized) {
        if (out->format == 'c' || out->format == 's')
            out->size = 1;
        else if (out->format == 'a')
            out->size = 8;
        else if (out->format == 'f' && out->size < 4)
            out->size = 8;
    }
    if (out->format == 'f' && out->size < 4) {
        snprintf(err, errlen, "Floats are 4 (w) or 8 (g) bytes wide, not %d.", out->size);
        return -1;
    }
    return 0;
}

/* The " if " that starts the condition (or a leading "if "), else NULL. */
static const char *find_if(const char *s)
{
    if (strncmp(s, "if ", 3) == 0 || strcmp(s, "if") == 0)
        return s;
    for (const char *p = s; (p = strstr(p, "if")); p++)
        if (p > s && isspace((unsigned char)p[-1]) &&
            (p[2] == '\0' || isspace((unsigned char)p[2])))
            return p;
    return NULL;
}

int repl_parse_location(const char *s, const char *default_file, struct repl_location *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    while (isspace((unsigned char)*s))
        s++;
    const char *cond = find_if(s);
    char *loc = str_trimmed_dup(s, cond ? (size_t)(cond - s) : strlen(s));
    if (cond) {
        out->condition = str_trimmed_dup(cond + 2, strlen(cond + 2));
        if (!out->condition[0]) {
            snprintf(err, errlen, "The condition after \"if\" is empty: write "
                     "`break LOCATION if EXPR`.");
            goto fail;
        }
    }
    if (!loc[0]) {
        snprintf(err, errlen, "No location given: write `break FILE:LINE` or "
                 "`break FUNCTION`.");
        goto fail;
    }
    char *colon = strrchr(loc, ':');
    const char *digits = colon ? colon + 1 : loc;
    bool numeric = *digits && strspn(digits, "0123456789") == strlen(digits);
    if (numeric && (colon ? colon > loc : true)) {
        long line = strtol(digits, NULL, 10);
        if (line < 1 || line > INT_MAX) {
            snprintf(err, errlen, "Line %s is not a line number.", digits);
            goto fail;
        }
        out->line = (int)line;
        if (colon) {
            out->file = strndup(loc, (size_t)(colon - loc));
        } else if (default_file) {
            out->file = strdup(default_file);
        } else {
            snprintf(err, errlen, "No default source file for line %ld: write "
                     "`break FILE:%ld`.", line, line);
            goto fail;
        }
        free(loc);
    } else {
        out->function = loc;
    }
    return 0;
fail:
    free(loc);
    repl_location_free(out);
    return -1;
}

void repl_location_free(struct repl_location *l)
{
    free(l->file);
    free(l->function);
    free(l->condition);
    memset(l, 0, sizeof *l);
}

cJSON *repl_location_spec(const struct repl_location *l)
{
    cJSON *o = cJSON_CreateObject();
    if (l->function) {
        cJSON_AddStringToObject(o, "function", l->function);
    } else {
        cJSON_AddStringToObject(o, "file", l->file);
        cJSON_AddNumberToObject(o, "line", l->line);
    }
    if (l->condition)
        cJSON_AddStringToObject(o, "condition", l->condition);
    return o;
}

int repl_parse_assign(const char *s, char **name, char **value, char *err, size_t errlen)
{
    *name = *value = NULL;
    while (isspace((unsigned char)*s))
        s++;
    static const char *const lead[] = {"variable ", "var "};
    for (size_t i = 0; i < 2; i++)
        if (strncmp(s, lead[i], strlen(lead[i])) == 0) {
            s += strlen(lead[i]);
            break;
        }
    const char *eq = strchr(s, '=');
    /* "==" is a comparison, not an assignment */
    while (eq && (eq[1] == '=' || (eq > s && strchr("!<>=", eq[-1]))))
        eq = strchr(eq + 2, '=');
    if (!eq) {
        snprintf(err, errlen, "Write `set var NAME = VALUE`.");
        return -1;
    }
    *name = str_trimmed_dup(s, (size_t)(eq - s));
    *value = str_trimmed_dup(eq + 1, strlen(eq + 1));
    if (!**name || !**value) {
        free(*name);
        free(*value);
        *name = *value = NULL;
        snprintf(err, errlen, "Write `set var NAME = VALUE`: the %s is missing.",
                 eq == s ? "name" : "value");
        return -1;
    }
    return 0;
}

cJSON *repl_parse_value(const char *t)
{
    size_t n = strlen(t);
    if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
        char *s = strndup(t + 1, n - 2);
        cJSON *v = cJSON_CreateString(s);
        free(s);
        return v;
    }
    if (n == 3 && t[0] == '\'' && t[2] == '\'') {
        char c[2] = {t[1], 0};
        return cJSON_CreateString(c);
    }
    if (strcmp(t, "true") == 0 || strcmp(t, "false") == 0)
        return cJSON_CreateBool(t[0] == 't');
    if ((t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) ||
        (t[0] == '-' && t[1] == '0' && (t[2] == 'x' || t[2] == 'X')))
        return cJSON_CreateString(t);
    char *end;
    errno = 0;
    long long i = strtoll(t, &end, 10);
    if (*t && !*end) {
        if (errno == ERANGE || i > (1LL << 53) || i < -(1LL << 53))
            return cJSON_CreateString(t);
        return cJSON_CreateNumber((double)i);
    }
    double d = strtod(t, &end);
    if (*t && !*end)
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(t);
}
