/*
 * test_ctl_test.c - unit tests of strobectl's test command: its argument parsing
 * (cli/ctl/verbs/ctl_test.c through ctl_parse: every option, paths made absolute, --status,
 * usage errors as sentences) and its renderers (cli/render/render_test.c) from
 * hand-written debug_test status answers shaped as mcp/tool_test.c shapes them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/ctl/verbs/ctl_args.h"
#include "cli/render/render_test.h"
#include "tests/unit/ctl_parse.h"

/* Asserts that c parsed into debug_test with these arguments (compact JSON), then
 * frees c. */
static void assert_test_args(struct ctl_cmd *c, const char *json)
{
    assert_int_equal(c->kind, CTL_TEST);
    assert_string_equal(c->tool, "debug_test");
    char *s = cJSON_PrintUnformatted(c->args);
    assert_string_equal(s, json);
    free(s);
    ctl_cmd_free(c);
}

static void test_parse_run(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    /* The project root defaults to the current directory. */
    assert_int_equal(parse(&c, err, "test", NULL), 0);
    assert_false(c.json);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/home/u/proj\"}");
    assert_int_equal(parse(&c, err, "test", ".", NULL), 0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/home/u/proj\"}");
    assert_int_equal(parse(&c, err, "test", "../other", NULL), 0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/home/u/proj/../other\"}");
    /* Every option, in any order, emitted in the protocol's order. */
    assert_int_equal(parse(&c, err, "test", "--env", "RUST_LOG=debug", "--trace", "parser::*",
                           "/src/app", "--level", "unit", "--json", "--test",
                           "parser::tests::empty", "--framework=cargo", "--trace",
                           "@file:lexer.rs", "--env", "A=1=2", "--env", "RUST_LOG=trace",
                           "--command", "cargo test -p app", NULL), 0);
    assert_true(c.json);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/src/app\",\"framework\":"
                         "\"cargo\",\"level\":\"unit\",\"test\":\"parser::tests::empty\","
                         "\"command\":\"cargo test -p app\",\"tracePatterns\":[\"parser::*\","
                         "\"@file:lexer.rs\"],\"env\":{\"A\":\"1=2\",\"RUST_LOG\":\"trace\"}}");
    assert_int_equal(parse(&c, err, "test", "--level", "e2e", "--level", "integration", NULL),
                     0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/home/u/proj\",\"level\":"
                         "\"integration\"}");
}

static void test_parse_command_paths(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    /* A relative program is made absolute against the current directory, its
     * arguments kept as written. */
    assert_int_equal(parse(&c, err, "test", "/p", "--command", "./run.sh --fast 'a b'", NULL),
                     0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/p\",\"command\":"
                         "\"/home/u/proj/run.sh --fast 'a b'\"}");
    assert_int_equal(parse(&c, err, "test", "/p", "--command", "  build/t", NULL), 0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/p\",\"command\":"
                         "\"/home/u/proj/build/t\"}");
    /* A bare name, an absolute path and a quoted program stay as written. */
    static const char *const kept[] = { "make check", "/usr/bin/ctest -j4", "'my dir/t' -v",
                                        "go test ./..." };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        assert_int_equal(parse(&c, err, "test", "/p", "--command", kept[i], NULL), 0);
        char want[256];
        snprintf(want, sizeof want, "{\"action\":\"run\",\"projectRoot\":\"/p\",\"command\":"
                 "\"%s\"}", kept[i]);
        assert_test_args(&c, want);
    }
    /* A current directory with a space: the program becomes one quoted word. */
    char *argv[] = { "strobectl", "test", "--command", "bin/t x", NULL };
    assert_int_equal(ctl_parse(4, argv, "/home/u/my proj", &c, err, sizeof err), 0);
    assert_test_args(&c, "{\"action\":\"run\",\"projectRoot\":\"/home/u/my proj\","
                         "\"command\":\"'/home/u/my proj/bin/t' x\"}");
}

static void test_parse_status(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "test", "--status", "tr-0123", NULL), 0);
    assert_test_args(&c, "{\"action\":\"status\",\"testRunId\":\"tr-0123\"}");
    assert_int_equal(parse(&c, err, "--json", "test", "--status=tr-9", NULL), 0);
    assert_true(c.json);
    assert_test_args(&c, "{\"action\":\"status\",\"testRunId\":\"tr-9\"}");
    assert_int_equal(parse(&c, err, "test", "--status", "tr-1", "/src", NULL), -1);
    assert_string_equal(err, "--status takes only the TESTRUNID of a run; leave out "
                             "PROJECT_ROOT and the run's options");
    assert_string_equal(c.usage, "strobectl test --status TESTRUNID");
    assert_null(c.args);
    assert_int_equal(parse(&c, err, "test", "--trace", "f", "--status", "tr-1", NULL), -1);
    assert_string_equal(err, "--status takes only the TESTRUNID of a run; leave out "
                             "PROJECT_ROOT and the run's options");
    assert_int_equal(parse(&c, err, "test", "--status", NULL), -1);
    assert_string_equal(err, "--status needs a value");
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    static const struct { const char *args[4]; const char *err; } cases[] = {
        { { "--level", "smoke" }, "--level is unit, integration or e2e (leave it out for "
                                  "every test), not 'smoke'" },
        { { "--env", "NOVALUE" }, "--env needs KEY=VALUE, not 'NOVALUE'" },
        { { "--env", "=x" }, "--env needs KEY=VALUE, not '=x'" },
        { { "--test", "" }, "--test needs a test NAME" },
        { { "--command", "  " }, "--command needs a command line" },
        { { "--trace", "" }, "--trace needs a PATTERN" },
        { { "--framework", "" }, "--framework needs a framework name" },
        { { "--status", "" }, "--status needs a TESTRUNID" },
        { { "/a", "/b" }, "test takes one PROJECT_ROOT; unexpected argument '/b'" },
        { { "--verbose" }, "unknown option --verbose" },
        { { "--test" }, "--test needs a value" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(parse(&c, err, "test", cases[i].args[0], cases[i].args[1],
                               cases[i].args[2], NULL), -1);
        assert_string_equal(err, cases[i].err);
        assert_null(c.args);
        assert_null(c.tool);
        assert_non_null(strstr(c.usage, "strobectl test"));
    }
    assert_int_equal(parse(&c, err, "test", "--level", "x", NULL), -1);
    assert_string_equal(c.usage, "strobectl test [PROJECT_ROOT] [--framework F] "
                                 "[--level unit|integration|e2e] [--test NAME] "
                                 "[--command CMD] [--trace PATTERN]... [--env KEY=VALUE]...");
}

/* ---- rendering ---------------------------------------------------------------------- */

/* What render_test_result prints for the answer json (or render_test_progress with
 * width when progress); *failed gets render_test_failed's verdict. The caller
 * frees. */
static char *rendered(const char *json, bool progress, int width, bool *failed)
{
    cJSON *r = cJSON_Parse(json);
    assert_non_null(r);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    if (progress)
        render_test_progress(f, r, width);
    else
        render_test_result(f, r);
    fclose(f);
    *failed = render_test_failed(r);
    cJSON_Delete(r);
    return text;
}

static void test_render_failures(void **state)
{
    (void)state;
    bool failed;
    char *t = rendered(
        "{\"testRunId\":\"tr-1\",\"status\":\"completed\",\"sessionId\":\"app-1\",\"result\":{"
        "\"framework\":\"cargo\",\"summary\":{\"passed\":3,\"failed\":2,\"skipped\":1,"
        "\"stuck\":0,\"durationMs\":2345},\"exitCode\":101,"
        "\"failures\":[{\"name\":\"parser::tests::empty\",\"file\":\"src/parser.rs\",\"line\":"
        "42,\"message\":\"assertion `left == right` failed\\n  left: 1\\n right: 2\","
        "\"rerun\":\"cd /src/app && cargo test -- parser::tests::empty --exact\","
        "\"suggestedTraces\":[\"parser::**\",\"@file:parser.rs\"]},"
        "{\"name\":\"lexer::eof\",\"message\":\"panicked\",\"messageTruncated\":true,"
        "\"suggestedTraces\":[]}],\"stuck\":[],\"failuresOmitted\":3,\"truncated\":\"3 more "
        "failure(s) did not fit the 16 KB answer.\",\"details\":\"/h/tests/tr-1.json\"}}",
        false, 0, &failed);
    assert_string_equal(t,
        "cargo: 3 passed, 2 failed, 1 skipped, 0 stuck in 2.3 s\n"
        "\n"
        "FAILED parser::tests::empty (src/parser.rs:42)\n"
        "    assertion `left == right` failed\n"
        "      left: 1\n"
        "     right: 2\n"
        "  rerun: cd /src/app && cargo test -- parser::tests::empty --exact\n"
        "  suggested traces: parser::**, @file:parser.rs\n"
        "\n"
        "FAILED lexer::eof\n"
        "    panicked\n"
        "    ... (cut here: the whole message is in the details file)\n"
        "\n"
        "3 more failure(s) did not fit the 16 KB answer.\n"
        "\n"
        "session app-1: strobectl query app-1\n"
        "details: /h/tests/tr-1.json\n");
    assert_true(failed);
    free(t);

    /* Everything passed. */
    t = rendered("{\"status\":\"completed\",\"result\":{\"framework\":\"generic\",\"summary\":"
                 "{\"passed\":1,\"failed\":0,\"skipped\":0,\"stuck\":0,\"durationMs\":40},"
                 "\"exitCode\":0,\"note\":\"no framework recognized\",\"failures\":[],"
                 "\"stuck\":[],\"details\":\"/h/d.json\"}}", false, 0, &failed);
    assert_string_equal(t, "generic: 1 passed, 0 failed, 0 skipped, 0 stuck in 0.0 s\n"
                           "note: no framework recognized\n"
                           "\n"
                           "details: /h/d.json\n");
    assert_false(failed);
    free(t);
}

static void test_render_stuck(void **state)
{
    (void)state;
    bool failed;
    char *t = rendered(
        "{\"testRunId\":\"tr-2\",\"status\":\"completed\",\"result\":{\"framework\":"
        "\"generic\",\"summary\":{\"passed\":0,\"failed\":1,\"skipped\":0,\"stuck\":1,"
        "\"durationMs\":8185},\"exitCode\":-1,\"failures\":[],\"stuck\":[{\"name\":\"\","
        "\"elapsedMs\":8179,\"diagnosis\":\"Deadlock: 0% CPU; deadlock: tid 11 (worker-a) "
        "holds M1\",\"waitCycles\":\"deadlock: tid 11 (worker-a) holds M1\",\"threads\":["
        "{\"name\":\"app\",\"tid\":10,\"state\":\"sleeping\",\"syscall\":\"futex\","
        "\"waitsForTid\":11,\"stack\":[\"__pthread_clockjoin_ex\",\"main (app.c:59)\"]},"
        "{\"name\":\"worker-a\",\"tid\":11,\"state\":\"sleeping\",\"syscall\":\"futex\","
        "\"lockOwnerTid\":12,\"stack\":[\"___pthread_mutex_lock\",\"take_second (app.c:25)\","
        "\"worker_a (app.c:37)\"],\"omittedFrames\":2},"
        "{\"name\":\"spin\",\"tid\":13,\"state\":\"running\",\"stack\":[\"spin (app.c:9)\"]}],"
        "\"omittedThreads\":4,\"runtimeStacks\":\"goroutine 1 [chan receive]:\\nmain.main()\","
        "\"runtimeStacksTruncated\":true,\"suggestedTraces\":[\"main\",\"take_second\"]}],"
        "\"details\":\"/h/tr-2.json\"}}", false, 0, &failed);
    assert_string_equal(t,
        "generic: 0 passed, 1 failed, 0 skipped, 1 stuck in 8.2 s\n"
        "\n"
        "STUCK after 8.2 s: Deadlock: 0% CPU; deadlock: tid 11 (worker-a) holds M1\n"
        "\n"
        "Thread 10 (app) sleeping in futex, waiting for thread 11 to end (pthread_join):\n"
        "#0 __pthread_clockjoin_ex\n"
        "#1 main (app.c:59)\n"
        "\n"
        "Thread 11 (worker-a) sleeping in futex, waiting for mutex held by 12:\n"
        "#0 ___pthread_mutex_lock\n"
        "#1 take_second (app.c:25)\n"
        "#2 worker_a (app.c:37)\n"
        "... 2 more frames\n"
        "\n"
        "Thread 13 (spin) running:\n"
        "#0 spin (app.c:9)\n"
        "... 4 more threads (in the details file)\n"
        "the runtime's own stacks:\n"
        "    goroutine 1 [chan receive]:\n"
        "    main.main()\n"
        "    ... (cut here: the rest is in the details file)\n"
        "\n"
        "  suggested traces: main, take_second\n"
        "\n"
        "details: /h/tr-2.json\n");
    assert_true(failed);
    free(t);

    /* A named stuck test, without threads (the stacks could not be taken). */
    t = rendered("{\"status\":\"completed\",\"result\":{\"framework\":\"go\",\"summary\":{"
                 "\"stuck\":1},\"exitCode\":-1,\"timedOut\":\"The run was killed at the "
                 "level's hard timeout of 30 s.\",\"stuck\":[{\"name\":\"TestSpin\","
                 "\"elapsedMs\":30000,\"diagnosis\":\"Infinite loop: 100% CPU\","
                 "\"threads\":[],\"suggestedTraces\":[]}]}}", false, 0, &failed);
    assert_string_equal(t, "go: 0 passed, 0 failed, 0 skipped, 1 stuck in 0.0 s\n"
                           "timed out: The run was killed at the level's hard timeout of "
                           "30 s.\n"
                           "\n"
                           "STUCK TestSpin after 30.0 s: Infinite loop: 100% CPU\n");
    assert_true(failed);
    free(t);
}

static void test_render_no_tests_and_build(void **state)
{
    (void)state;
    bool failed;
    char *t = rendered(
        "{\"status\":\"completed\",\"result\":{\"framework\":\"cargo\",\"summary\":{\"passed\":"
        "0,\"failed\":0,\"skipped\":0,\"stuck\":0,\"durationMs\":900},\"exitCode\":0,"
        "\"failures\":[],\"stuck\":[],\"details\":\"/h/n.json\",\"noTests\":true,\"project\":"
        "{\"language\":\"rust\",\"buildSystem\":\"cargo\"},\"hint\":\"Write a #[test] fn in "
        "src/lib.rs.\"}}", false, 0, &failed);
    assert_string_equal(t, "cargo: 0 passed, 0 failed, 0 skipped, 0 stuck in 0.9 s\n"
                           "\n"
                           "no tests ran (language: rust, build system: cargo)\n"
                           "hint: Write a #[test] fn in src/lib.rs.\n"
                           "\n"
                           "details: /h/n.json\n");
    assert_false(failed);
    free(t);

    t = rendered(
        "{\"status\":\"completed\",\"result\":{\"framework\":\"cargo\",\"summary\":{\"passed\":"
        "0,\"failed\":0,\"skipped\":0,\"stuck\":0,\"durationMs\":1500},\"exitCode\":101,"
        "\"buildErrors\":[{\"file\":\"src/lib.rs\",\"line\":12,\"column\":5,\"message\":"
        "\"mismatched types\\nexpected `u32`, found `&str`\"},{\"message\":\"could not "
        "compile `app`\"}],\"failures\":[],\"stuck\":[],\"outputTail\":\"error: aborting\\n"
        "\"}}", false, 0, &failed);
    assert_string_equal(t, "cargo: 0 passed, 0 failed, 0 skipped, 0 stuck in 1.5 s\n"
                           "\n"
                           "build failed:\n"
                           "  src/lib.rs:12:5: mismatched types\n"
                           "      expected `u32`, found `&str`\n"
                           "  could not compile `app`\n"
                           "\n"
                           "the end of the output:\n"
                           "    error: aborting\n");
    assert_true(failed);
    free(t);

    /* A command that failed with no result parsed fails too; a running answer does
     * not. */
    t = rendered("{\"status\":\"completed\",\"result\":{\"summary\":{},\"exitCode\":2}}", false,
                 0, &failed);
    assert_true(failed);
    free(t);
    t = rendered("{\"status\":\"running\",\"progress\":{}}", true, 0, &failed);
    assert_false(failed);
    free(t);
}

static void test_render_progress(void **state)
{
    (void)state;
    bool failed;
    const char *answer =
        "{\"testRunId\":\"tr-3\",\"status\":\"running\",\"progress\":{\"elapsedMs\":12345,"
        "\"passed\":3,\"failed\":1,\"skipped\":0,\"phase\":\"suites_finished\",\"currentTest\":"
        "\"tests::slow\\tone\",\"currentTestElapsedMs\":4100,\"currentTestBaselineMs\":200,"
        "\"warnings\":[{\"testName\":\"tests::other\",\"idleMs\":6000,\"diagnosis\":\"no "
        "output, 0% CPU\"}]}}";
    char *t = rendered(answer, true, 0, &failed);
    assert_string_equal(t, "[12.3 s] suites finished: 3 passed, 1 failed, 0 skipped; "
                           "tests::slow one 4.1 s (usually 0.2 s); may be stuck: tests::other "
                           "(silent 6.0 s): no output, 0% CPU");
    free(t);
    /* Cut to the terminal's width, counting UTF-8 characters. */
    t = rendered("{\"progress\":{\"elapsedMs\":500,\"phase\":\"compiling\",\"currentTest\":"
                 "\"\xc3\xa9t\xc3\xa9\"}}", true, 61, &failed);
    assert_string_equal(t, "[0.5 s] compiling: 0 passed, 0 failed, 0 skipped; \xc3\xa9t\xc3\xa9"
                           " 0.0 s");
    free(t);
    t = rendered("{\"progress\":{\"elapsedMs\":500,\"phase\":\"compiling\",\"currentTest\":"
                 "\"\xc3\xa9t\xc3\xa9\"}}", true, 52, &failed);
    assert_string_equal(t, "[0.5 s] compiling: 0 passed, 0 failed, 0 skipped; \xc3\xa9t");
    free(t);
    t = rendered("{\"progress\":{\"elapsedMs\":500,\"currentTest\":\"t\",\"warnings\":[{"
                 "\"testName\":\"t\",\"idleMs\":7000}]}}", true, 0, &failed);
    assert_string_equal(t, "[0.5 s] running: 0 passed, 0 failed, 0 skipped; t 0.0 s; may be "
                           "stuck (silent 7.0 s)");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_run),
        cmocka_unit_test(test_parse_command_paths),
        cmocka_unit_test(test_parse_status),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_render_failures),
        cmocka_unit_test(test_render_stuck),
        cmocka_unit_test(test_render_no_tests_and_build),
        cmocka_unit_test(test_render_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
