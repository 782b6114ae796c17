/*
 * tcmd.c - building test commands for adapters (adapter.h): arguments and
 * environment entries added one at a time, a `command` field split into words, and
 * the command written back as a shell line for the agent to rerun.
 */
#include "testrun/adapter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the formatted string to slots[0..*n) (max of them); too_long when it
 * does not fit or memory runs out. */
static void append(char **slots, int *n, int max, bool *too_long, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (*n == max || vasprintf(&s, fmt, ap) < 0) {
        *too_long = true;
        return;
    }
    slots[(*n)++] = s;
}

void tcmd_arg(struct test_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append(c->argv, &c->argc, TEST_ARGV_MAX, &c->too_long, fmt, ap);
    va_end(ap);
    c->argv[c->argc] = NULL;
}

void tcmd_env(struct test_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append(c->env, &c->n_env, TEST_ENV_MAX, &c->too_long, fmt, ap);
    va_end(ap);
}

int tcmd_split(struct test_command *c, const char *line)
{
    size_t cap = strlen(line) + 1;
    char *word = malloc(cap);
    if (!word)
        return -1;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t n = 0;
        char quote = 0;
        for (; *p; p++) {
            if (quote == '\'') {
                if (*p == '\'')
                    quote = 0;
                else
                    word[n++] = *p;
            } else if (quote == '"') {
                if (*p == '"')
                    quote = 0;
                else if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                    word[n++] = *++p;
                else
                    word[n++] = *p;
            } else if (*p == '\'' || *p == '"') {
                quote = *p;
            } else if (*p == '\\' && p[1]) {
                word[n++] = *++p;
            } else if (*p == ' ' || *p == '\t' || *p == '\n') {
                break;
            } else {
                word[n++] = *p;
            }
        }
        if (quote) {
            free(word);
            return -1;
        }
        word[n] = '\0';
        tcmd_arg(c, "%s", word);
    }
    free(word);
    return 0;
}

void tcmd_free(struct test_command *c)
{
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
    for (int i = 0; i < c->n_env; i++)
        free(c->env[i]);
    free(c->cwd);
    free(c->report_path);
    *c = (struct test_command){0};
}

/* s as one shell word: bare when it has only safe characters, else single-quoted. */
static void shell_word(struct strbuf *out, const char *s)
{
    bool plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_-./:=@%+,", *p) != NULL;
    if (plain) {
        sb_puts(out, s);
        return;
    }
    sb_puts(out, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            sb_puts(out, "'\\''");
        else
            sb_append(out, p, 1);
    }
    sb_puts(out, "'");
}

void tcmd_shell(const struct test_command *c, const char *project_root, struct strbuf *out)
{
    const char *dir = c->cwd ? c->cwd : project_root;
    if (dir) {
        sb_puts(out, "cd ");
        shell_word(out, dir);
        sb_puts(out, " && ");
    }
    for (int i = 0; i < c->n_env; i++) {
        const char *eq = strchr(c->env[i], '=');
        if (!eq)
            continue;
        sb_append(out, c->env[i], (size_t)(eq - c->env[i]) + 1);
        shell_word(out, eq + 1);
        sb_puts(out, " ");
    }
    for (int i = 0; i < c->argc; i++) {
        if (i)
            sb_puts(out, " ");
        shell_word(out, c->argv[i]);
    }
}
