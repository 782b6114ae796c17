/*
 * tsuggest.c - tsuggest.h: the file under test from a test file's name, and the
 * functions called in the first line of a failure message (where Catch2 and
 * assert() print the failed expression).
 */
#include "testrun/tsuggest.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_MAX_LEN 200

/* "test_stack.cpp", "stack_test.cpp", "stack_tests.cpp", "tests_stack.cpp",
 * "stack.test.cpp" -> "stack.cpp"; false when base does not look like a test
 * file's name. */
static bool source_under_test(const char *base, char *out, size_t outlen)
{
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return false;
    size_t stem = (size_t)(dot - base);
    static const char *const prefixes[] = {"tests_", "test_", NULL};
    static const char *const suffixes[] = {"_unittest", "_tests", "_test", ".test", "Tests",
                                           "Test", NULL};
    for (const char *const *p = prefixes; *p; p++) {
        size_t k = strlen(*p);
        if (stem > k && strncmp(base, *p, k) == 0) {
            snprintf(out, outlen, "%.*s%s", (int)(stem - k), base + k, dot);
            return true;
        }
    }
    for (const char *const *s = suffixes; *s; s++) {
        size_t k = strlen(*s);
        if (stem > k && strncmp(base + stem - k, *s, k) == 0) {
            snprintf(out, outlen, "%.*s%s", (int)(stem - k), base, dot);
            return true;
        }
    }
    return false;
}

/* The source under test of the test file at path, as a file that exists: the name
 * the test file's suggests (stack_test.cpp -> stack.cpp) with the extensions C and
 * C++ code is kept in (a class written in a header: lru.hpp), beside the test file,
 * one directory up, or in that one's src/ or include/. found is where the test file
 * is (NULL: it cannot be found, so the first guess is taken). */
static bool file_under_test(const char *path, const char *found, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char guess[NAME_MAX_LEN];
    if (strlen(base) >= NAME_MAX_LEN || !source_under_test(base, guess, sizeof guess))
        return false;
    if (!found || !(slash = strrchr(found, '/'))) {
        snprintf(out, outlen, "%s", guess);
        return true;
    }
    path = found;
    base = slash + 1;
    const char *dot = strrchr(guess, '.');
    int stem = (int)(dot - guess);
    static const char *const dirs[] = {"", "/..", "/../src", "/../include", NULL};
    static const char *const exts[] = {"", ".cpp", ".cc", ".cxx", ".c", ".hpp", ".hh", ".h",
                                       NULL};
    for (int d = 0; dirs[d]; d++)
        for (int x = 0; exts[x]; x++) {
            char candidate[PATH_MAX];
            snprintf(candidate, sizeof candidate, "%.*s%s/%.*s%s", (int)(base - path - 1),
                     path, dirs[d], stem, guess, exts[x][0] ? exts[x] : dot);
            if (access(candidate, R_OK) == 0) {
                snprintf(out, outlen, "%.*s%s", stem, guess, exts[x][0] ? exts[x] : dot);
                return true;
            }
        }
    return false;
}

int tsuggest_file(const struct test_case *c, char **out, int n, int max)
{
    char src[NAME_MAX_LEN], pattern[NAME_MAX_LEN + 8];
    if (c->file && file_under_test(c->file, c->file_found, src, sizeof src)) {
        snprintf(pattern, sizeof pattern, "@file:%s", src);
        test_suggest_add(out, &n, max, pattern);
    }
    return n;
}

/* Names the checking machinery calls, not the code under test. */
static bool is_check_word(const char *w, size_t n)
{
    static const char *const words[] = {"assert", "static_assert", "sizeof", "decltype",
                                        "if", "while", "for", "return", NULL};
    bool upper = true;
    for (size_t i = 0; i < n && upper; i++)
        upper = !islower((unsigned char)w[i]);
    if (upper) /* CHECK, REQUIRE_THROWS_AS, EXPECT_EQ: macros */
        return true;
    for (const char *const *p = words; *p; p++)
        if (strlen(*p) == n && strncmp(w, *p, n) == 0)
            return true;
    return false;
}

int tsuggest_calls(const char *message, char **out, int n, int max)
{
    const char *end = strchr(message, '\n');
    if (!end)
        end = message + strlen(message);
    for (const char *p = message; p < end;) {
        if (!isalpha((unsigned char)*p) && *p != '_') {
            p++;
            continue;
        }
        const char *w = p;
        while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        size_t len = (size_t)(p - w);
        const char *q = p;
        while (q < end && *q == ' ')
            q++;
        if (q < end && *q == '(' && len < NAME_MAX_LEN && !is_check_word(w, len)) {
            char pattern[NAME_MAX_LEN + 8];
            snprintf(pattern, sizeof pattern, "**::%.*s", (int)len, w);
            test_suggest_add(out, &n, max, pattern);
        }
    }
    return n;
}

int tsuggest_native(const struct test_case *c, char **out, int max)
{
    int n = tsuggest_file(c, out, 0, max);
    if (c->message)
        n = tsuggest_calls(c->message, out, n, max);
    if (n == 0)
        n = test_suggest_default(c, out, max);
    return n;
}
