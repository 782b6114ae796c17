/*
 * report.c - test reports as adapters fill them (adapter.h): cases and compiler
 * diagnostics, where a failure happened, and the trace patterns a failure suggests
 * when its adapter knows nothing better.
 */
#include "testrun/adapter.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void test_report_init(struct test_report *r)
{
    *r = (struct test_report){0};
}

void test_report_free(struct test_report *r)
{
    for (size_t i = 0; i < r->n_cases; i++) {
        struct test_case *c = &r->cases[i];
        free(c->name);
        free(c->file);
        free(c->message);
        free(c->output);
    }
    for (size_t i = 0; i < r->n_diags; i++) {
        free(r->diags[i].file);
        free(r->diags[i].message);
    }
    free(r->cases);
    free(r->diags);
    test_report_init(r);
}

struct test_case *test_report_add(struct test_report *r, const char *name, enum test_status st)
{
    if (r->n_cases == r->cap_cases) {
        size_t cap = r->cap_cases ? 2 * r->cap_cases : 16;
        struct test_case *p = realloc(r->cases, cap * sizeof *p);
        if (!p)
            return NULL;
        r->cases = p;
        r->cap_cases = cap;
    }
    char *copy = strdup(name ? name : "");
    if (!copy)
        return NULL;
    struct test_case *c = &r->cases[r->n_cases++];
    *c = (struct test_case){.name = copy, .status = st, .duration_ms = -1};
    return c;
}

struct test_case *test_report_find(struct test_report *r, const char *name)
{
    for (size_t i = r->n_cases; i-- > 0;)
        if (strcmp(r->cases[i].name, name) == 0)
            return &r->cases[i];
    return NULL;
}

struct test_diagnostic *test_report_diag(struct test_report *r, const char *file, int line,
                                         int column, const char *message)
{
    if (r->n_diags == r->cap_diags) {
        size_t cap = r->cap_diags ? 2 * r->cap_diags : 8;
        struct test_diagnostic *p = realloc(r->diags, cap * sizeof *p);
        if (!p)
            return NULL;
        r->diags = p;
        r->cap_diags = cap;
    }
    struct test_diagnostic *d = &r->diags[r->n_diags++];
    *d = (struct test_diagnostic){.line = line, .column = column};
    test_set_str(&d->file, file, -1);
    test_set_str(&d->message, message, -1);
    return d;
}

void test_set_str(char **field, const char *s, long n)
{
    free(*field);
    *field = NULL;
    if (!s)
        return;
    size_t len = n < 0 ? strlen(s) : strnlen(s, (size_t)n);
    *field = strndup(s, len);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Characters that may appear in a path written in a message. */
static bool path_char(char c)
{
    return c && !isspace((unsigned char)c) && !strchr("'\"()[]{}<>,;`", c) && c != ':';
}

bool test_find_location(const char *text, const char *const *suffixes, char **file, int *line)
{
    for (const char *p = text ? strchr(text, ':') : NULL; p; p = strchr(p + 1, ':')) {
        if (!isdigit((unsigned char)p[1]))
            continue;
        const char *start = p;
        while (start > text && path_char(start[-1]))
            start--;
        size_t n = (size_t)(p - start);
        if (n == 0)
            continue;
        for (const char *const *s = suffixes; *s; s++) {
            if (!ends_with(start, n, *s))
                continue;
            long v = strtol(p + 1, NULL, 10);
            if (v <= 0 || v > INT_MAX)
                break;
            *file = strndup(start, n);
            *line = (int)v;
            return *file != NULL;
        }
    }
    return false;
}

void test_suggest_add(char **out, int *n, int max, const char *pattern)
{
    if (*n >= max || !*pattern)
        return;
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i], pattern) == 0)
            return;
    char *copy = strdup(pattern);
    if (copy)
        out[(*n)++] = copy;
}

int test_suggest_default(const struct test_case *c, char **out, int max)
{
    int n = 0;
    char buf[512];
    /* "parser::tests::empty_input": everything below the first namespace that is
     * not a test module. */
    const char *sep = c->name ? strstr(c->name, "::") : NULL;
    if (sep && sep > c->name && (size_t)(sep - c->name) < sizeof buf - 8) {
        int len = (int)(sep - c->name);
        if (strncmp(c->name, "tests", (size_t)len) != 0 || len != 5) {
            snprintf(buf, sizeof buf, "%.*s::**", len, c->name);
            test_suggest_add(out, &n, max, buf);
        }
    }
    if (c->file) {
        const char *base = strrchr(c->file, '/');
        base = base ? base + 1 : c->file;
        if (*base && strlen(base) < sizeof buf - 8) {
            snprintf(buf, sizeof buf, "@file:%s", base);
            test_suggest_add(out, &n, max, buf);
        }
    }
    return n;
}

bool test_has_file(const char *project_root, const char *path)
{
    char full[PATH_MAX];
    if (snprintf(full, sizeof full, "%s/%s", project_root, path) >= (int)sizeof full)
        return false;
    struct stat st;
    return stat(full, &st) == 0;
}

bool test_next_line(const char **p, const char *end, const char **line, size_t *len)
{
    if (*p >= end)
        return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    *line = *p;
    *len = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
    *p = nl ? nl + 1 : end;
    return true;
}

bool test_starts_with(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}
