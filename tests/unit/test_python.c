/*
 * test_python.c - the Python collector's pieces that need no interpreter: the
 * loader text (python/loader.c), the agent's files written out (python/agent.c) and
 * the breakpoints it starts with (python/stops.c).
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
    struct python_start st = {.agent_dir = "/home/o'neil/agent", .sock = "/s/a\\b.sock",
                              .token = "0123abcd", .project_root = "/proj\nx",
                              .patterns = patterns, .n_patterns = 2, .depth = 4,
                              .sample_after = 5000, .hot_calls_per_second = 10000,
                              .bps_file = "/s/a.bps.json"};
    assert_int_equal(python_loader(buf, sizeof buf, &st), 0);
    assert_true(strncmp(buf, "exec('", 6) == 0);
    assert_string_equal(buf + strlen(buf) - 6, "', {})");
    /* the agent directory's quote, escaped twice (inner literal, then outer) */
    assert_non_null(strstr(buf, "o\\\\\\'neil"));
    /* the newline of the root: \x0a inside, its backslash escaped outside */
    assert_non_null(strstr(buf, "proj\\\\x0ax"));
    assert_non_null(strstr(buf, "5000, 10000, \\'/s/a.bps.json\\')"));
    assert_null(strchr(buf, '\n')); /* one line: the body's newlines are escaped */
}

static void test_loader_that_does_not_fit_is_refused(void **state)
{
    (void)state;
    char buf[64];
    struct python_start st = {.agent_dir = "/a", .sock = "/s", .token = "t",
                              .project_root = "/p", .depth = 3};
    assert_int_equal(python_loader(buf, sizeof buf, &st), -1);
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

/* The breakpoints a process starts with: a 0600 JSON file beside its socket, none
 * when there are none, and never written through a name that is already there. */
static void test_start_breakpoints_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-test-python-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sock[PATH_MAX], path[PATH_MAX], want[PATH_MAX + 16];
    snprintf(sock, sizeof sock, "%s/42-ab.sock", dir);
    struct strobe_error e;
    assert_int_equal(python_start_bps(sock, NULL, 0, path, sizeof path, &e), 0);
    assert_string_equal(path, "");
    struct collector_breakpoint bps[] = {
        {.id = 7, .file = "shop/pricing.py", .line = 12, .condition = "total > 100"},
        {.id = 8, .function = "shop.cart.Cart.add", .message = "x=\"{x}\"", .hit_limit = 2},
    };
    assert_int_equal(python_start_bps(sock, bps, 2, path, sizeof path, &e), 0);
    snprintf(want, sizeof want, "%s/42-ab.bps.json", dir);
    assert_string_equal(path, want);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char text[1024] = {0};
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(text, "\"id\":7,\"file\":\"shop/pricing.py\",\"line\":12,"
                                 "\"condition\":\"total > 100\""));
    assert_non_null(strstr(text, "\"function\":\"shop.cart.Cart.add\",\"message\":"
                                 "\"x=\\\"{x}\\\"\""));
    assert_non_null(strstr(text, "\"hitLimit\":2}]"));
    /* a file already there (or a symlink planted there) is not written through */
    assert_int_equal(python_start_bps(sock, bps, 1, path, sizeof path, &e), -1);
    assert_string_equal(path, "");
    assert_non_null(strstr(e.msg, "cannot write the breakpoints"));
    unlink(want);
    assert_int_equal(symlink("/tmp/strobe-nowhere", want), 0);
    assert_int_equal(python_start_bps(sock, bps, 1, path, sizeof path, &e), -1);
    assert_int_equal(lstat("/tmp/strobe-nowhere", &st), -1);
    unlink(want);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader_quotes_what_it_is_given),
        cmocka_unit_test(test_loader_that_does_not_fit_is_refused),
        cmocka_unit_test(test_agent_files_are_private),
        cmocka_unit_test(test_start_breakpoints_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
