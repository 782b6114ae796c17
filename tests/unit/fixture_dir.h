/*
 * fixture_dir.h - where the unit tests that read fixture binaries find them:
 * $STROBE_FIXTURES, else BUILD/fixtures next to the test's own BUILD/tests/.
 */
#ifndef STROBE_TEST_FIXTURE_DIR_H
#define STROBE_TEST_FIXTURE_DIR_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void find_fixture_dir(char *out, size_t cap)
{
    const char *env = getenv("STROBE_FIXTURES");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(out, cap, "%s/../fixtures", dirname(exe));
}

#endif
