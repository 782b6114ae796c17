/*
 * fuzz_cond.c - libFuzzer target of the breakpoint condition language (base/cond.h):
 * each input is a condition's text, parsed and, when it parses, evaluated with a
 * resolver that gives every path a value chosen by its name (integers at both ends
 * of their ranges, floats including NaN and infinities, strings, the null string),
 * so arithmetic overflow, division by zero and mixed comparisons are all reached.
 *
 * The checks: the sanitizers', plus what cond.h promises: a failed parse or
 * evaluation says why in its struct strobe_error (a code and a sentence), and the
 * paths a condition names are not empty.
 *
 * Run: `make fuzz` (FUZZ_SECONDS per target); seeds in fuzz/corpus/cond/.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cond.h"

static const struct cond_value values[] = {
    {.kind = COND_INT, .i = 0},
    {.kind = COND_INT, .i = -1},
    {.kind = COND_INT, .i = INT64_MIN},
    {.kind = COND_INT, .i = INT64_MAX},
    {.kind = COND_UINT, .u = UINT64_MAX},
    {.kind = COND_UINT, .u = 3},
    {.kind = COND_FLOAT, .f = 0.5},
    {.kind = COND_FLOAT, .f = NAN},
    {.kind = COND_FLOAT, .f = -INFINITY},
    {.kind = COND_STRING, .s = "bob", .len = 3},
    {.kind = COND_STRING, .s = "a\0b", .len = 3},
    {.kind = COND_STRING, .s = NULL, .len = 0},
};

/* A value per path (by a hash of its name), or an error for names starting "bad". */
static int resolve(void *ctx, const char *path, struct cond_value *out,
                   struct strobe_error *e)
{
    (void)ctx;
    if (strncmp(path, "bad", 3) == 0)
        return err_set(e, ERR_VARIABLE_NOT_FOUND, "no variable named '%s'", path);
    uint32_t h = 2166136261u;
    for (const char *p = path; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    *out = values[h % (sizeof values / sizeof *values)];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > COND_MAX_TEXT + 16)
        return -1;
    char text[COND_MAX_TEXT + 17];
    memcpy(text, data, size);
    text[size] = '\0';
    struct strobe_error e = {0};
    struct cond *c = cond_parse(text, &e);
    if (!c) {
        if ((e.code != ERR_VALIDATION && e.code != ERR_INTERNAL) || !e.msg[0])
            abort(); /* a refusal must say why */
        return 0;
    }
    const char *const *paths;
    size_t n = cond_paths(c, &paths);
    for (size_t i = 0; i < n; i++)
        if (!paths[i][0])
            abort();
    bool result;
    e = (struct strobe_error){0};
    if (cond_eval(c, resolve, NULL, &result, &e) != 0 &&
        (e.code == ERR_NONE || !e.msg[0]))
        abort(); /* a failed evaluation must say why */
    cond_free(c);
    return 0;
}
