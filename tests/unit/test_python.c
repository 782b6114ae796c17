/*
 * test_python.c - the Python collector's pieces that need no interpreter: the
 * loader text (python/loader.c) and the agent's files written out (python/agent.c).
 * The interpreter runs them in tests/agent and tests/e2e/test_python.py.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "python/python_internal.h"

/* Paths and patterns with quotes, backslashes and a newline stay Python literals:
 * the body is one literal inside exec(...), and its own literals are escaped again. */
static void test_loader_quotes_what_it_is_given(void **state)
{
    (void)state;
    char buf[8192];
    const char *patterns[] = {"shop.pricing.*", "it's"};
    assert_int_equal(python_loader(buf, sizeof buf, "/home/o'neil/agent", "/s/a\\b.sock",
                                   "0123abcd", "/proj\nx", patterns, 2, 4, 5000, 10000), 0);
    assert_true(strncmp(buf, "exec('", 6) == 0);
    assert_string_equal(buf + strlen(buf) - 6, "', {})");
    /* the agent directory's quote, escaped twice (inner literal, then outer) */
    assert_non_null(strstr(buf, "o\\\\\\'neil"));
    /* the newline of the root: \x0a inside, its backslash escaped outside */
    assert_non_null(strstr(buf, "proj\\\\x0ax"));
    assert_non_null(strstr(buf, "5000, 10000"));
    assert_null(strchr(buf, '\n')); /* one line: the body's newlines are escaped */
}

static void test_loader_that_does_not_fit_is_refused(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(python_loader(buf, sizeof buf, "/a", "/s", "t", "/p", NULL, 0, 3, 1, 1),
                     -1);
}

/* The package goes under STATE/python/agent, directories 0700 and files 0600; a
 * symlink where a directory of ours should be is refused. */
static void test_agent_files_are_private(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-test-python-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[PATH_MAX], path[PATH_MAX + 64];
    struct strobe_error e;
    assert_int_equal(python_agent_install(dir, out, sizeof out, &e), 0);
    snprintf(path, sizeof path, "%s/python/agent", dir);
    assert_string_equal(out, path);
    struct stat st;
    snprintf(path, sizeof path, "%s/python", dir);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(path, sizeof path, "%s/python/agent/_strobe_agent/recorder.py", dir);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(st.st_size > 1000);
    /* Every file of the package in the source tree is installed (agent_blob.S and
     * agent.c's table list them by hand). The unit tests run from the repository. */
    DIR *src = opendir("python/agent/_strobe_agent");
    assert_non_null(src);
    struct dirent *d;
    int n_py = 0;
    while ((d = readdir(src))) {
        size_t len = strlen(d->d_name);
        if (len < 4 || strcmp(d->d_name + len - 3, ".py") != 0)
            continue;
        n_py++;
        snprintf(path, sizeof path, "%s/python/agent/_strobe_agent/%s", dir, d->d_name);
        if (lstat(path, &st) != 0)
            fail_msg("%s is not installed: add it to agent_blob.S and agent.c", d->d_name);
    }
    closedir(src);
    assert_true(n_py >= 9);

    char evil[] = "/tmp/strobe-test-python-XXXXXX";
    assert_non_null(mkdtemp(evil));
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/python", evil);
    assert_int_equal(symlink("/tmp", link), 0);
    assert_int_equal(python_agent_install(evil, out, sizeof out, &e), -1);
    assert_non_null(strstr(e.msg, "not a directory of this user"));
    unlink(link);
    rmdir(evil);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader_quotes_what_it_is_given),
        cmocka_unit_test(test_loader_that_does_not_fit_is_refused),
        cmocka_unit_test(test_agent_files_are_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
