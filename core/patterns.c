/*
 * patterns.c - pattern syntax and the pending set. See patterns.h.
 */
#include "core/patterns.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char pending[PATTERNS_MAX][PATTERN_MAX_LEN];
static int n_pending;
/* The last launch that took pending[i] ("": none yet). */
static struct last_launch {
    char session_id[64];
    char program[256];
} applied[PATTERNS_MAX];
static int pending_depth = 3;
static bool pending_depth_asked;

static int invalid(struct strobe_error *e, const char *p, const char *reason)
{
    return err_set(e, ERR_INVALID_PATTERN, "Invalid trace pattern '%.200s': %s", p, reason);
}

int pattern_check(const char *p, struct strobe_error *e)
{
    size_t len = strlen(p);
    if (len == 0)
        return invalid(e, p, "it is empty. Use a function name, 'ns::*', 'ns::**', "
                       "'@usercode' or '@file:NAME'.");
    if (len >= PATTERN_MAX_LEN)
        return invalid(e, p, "it is longer than 511 characters.");
    if (p[0] == '@') {
        if (strcmp(p, "@usercode") == 0)
            return 0;
        if (strncmp(p, "@file:", 6) == 0)
            return p[6] ? 0 : invalid(e, p, "'@file:' needs part of a file name, e.g. "
                                      "'@file:parser.c'.");
        return invalid(e, p, "unknown special pattern; the special patterns are "
                       "'@usercode' and '@file:NAME'.");
    }
    int depth = 0;
    for (const char *c = p; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == ' ')
            return invalid(e, p, "it contains whitespace or a control character.");
        if (c[0] == '*' && c[1] == '*' && c[2] == '*')
            return invalid(e, p, "'***' means nothing; use '*' (one level) or '**' (any "
                           "depth).");
        if (*c == '<')
            depth++;
        if (*c == '>' && --depth < 0)
            return invalid(e, p, "a '>' closes no '<'.");
        if (c[0] == ':' && c[1] == ':' && c[2] == ':')
            return invalid(e, p, "':::' is not a separator; use '::'.");
    }
    if (depth != 0)
        return invalid(e, p, "a '<' is never closed.");
    if (len >= 2 && strcmp(p + len - 2, "::") == 0)
        return invalid(e, p, "it ends with '::'; add a name or '*' after it.");
    return 0;
}

int patterns_pending_add(const char *p, struct strobe_error *e)
{
    if (pattern_check(p, e) != 0)
        return -1;
    pthread_mutex_lock(&lock);
    int rc = 0;
    bool present = false;
    for (int i = 0; i < n_pending && !present; i++)
        present = strcmp(pending[i], p) == 0;
    if (!present) {
        if (n_pending == PATTERNS_MAX)
            rc = err_set(e, ERR_VALIDATION, "at most %d pending patterns; remove some first.",
                         PATTERNS_MAX);
        else {
            applied[n_pending] = (struct last_launch){{0}, {0}};
            snprintf(pending[n_pending++], PATTERN_MAX_LEN, "%s", p);
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void patterns_pending_remove(const char *p)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_pending; i++)
        if (strcmp(pending[i], p) == 0) {
            memmove(pending[i], pending[i + 1], (size_t)(n_pending - i - 1) * PATTERN_MAX_LEN);
            memmove(&applied[i], &applied[i + 1], (size_t)(n_pending - i - 1) * sizeof *applied);
            n_pending--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

void patterns_pending_set_depth(int depth)
{
    pthread_mutex_lock(&lock);
    pending_depth = depth;
    pending_depth_asked = true;
    pthread_mutex_unlock(&lock);
}

bool patterns_pending_depth_asked(void)
{
    pthread_mutex_lock(&lock);
    bool asked = pending_depth_asked;
    pthread_mutex_unlock(&lock);
    return asked;
}

int patterns_pending_depth(void)
{
    pthread_mutex_lock(&lock);
    int depth = pending_depth;
    pthread_mutex_unlock(&lock);
    return depth;
}

int patterns_pending_list(char out[][PATTERN_MAX_LEN], int max)
{
    pthread_mutex_lock(&lock);
    int n = n_pending;
    for (int i = 0; i < n && i < max; i++)
        memcpy(out[i], pending[i], PATTERN_MAX_LEN);
    pthread_mutex_unlock(&lock);
    return n;
}

void patterns_pending_applied(const char *session_id, const char *program)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_pending; i++) {
        snprintf(applied[i].session_id, sizeof applied[i].session_id, "%s", session_id);
        snprintf(applied[i].program, sizeof applied[i].program, "%s", program);
    }
    pthread_mutex_unlock(&lock);
}

bool patterns_pending_last_launch(const char *p, char *session_id, size_t id_cap,
                                  char *program, size_t program_cap)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_pending && !found; i++)
        if (strcmp(pending[i], p) == 0 && applied[i].session_id[0]) {
            snprintf(session_id, id_cap, "%s", applied[i].session_id);
            snprintf(program, program_cap, "%s", applied[i].program);
            found = true;
        }
    pthread_mutex_unlock(&lock);
    return found;
}
