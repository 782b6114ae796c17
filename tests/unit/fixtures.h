/*
 * fixtures.h - how the unit tests that read fixture binaries find and load them:
 * the directory is $STROBE_FIXTURES, else BUILD/fixtures next to the test's own
 * BUILD/tests/. Include after <cmocka.h> (load_index fails the test through it).
 */
#ifndef STROBE_TEST_FIXTURES_H
#define STROBE_TEST_FIXTURES_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dwarf/dwarf.h"

static char fixture_dir[PATH_MAX];

/* Sets fixture_dir; call first in main(). */
static inline void find_fixture_dir(void)
{
    const char *env = getenv("STROBE_FIXTURES");
    if (env && *env) {
        snprintf(fixture_dir, sizeof fixture_dir, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(fixture_dir, sizeof fixture_dir, "%s/../fixtures", dirname(exe));
}

/* The path of fixture binary name (a static buffer). */
static inline const char *fixture(const char *name)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    return path;
}

/* The function index of fixture name; fails the test when it cannot be read. */
static inline const struct dw_index *load(const char *name)
{
    struct strobe_error err = {0};
    const struct dw_index *ix = dw_index_get(fixture(name), &err);
    if (!ix)
        fail_msg("%s: %s (run `make fixtures`)", fixture(name), err.msg);
    return ix;
}

#endif
