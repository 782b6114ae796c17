/*
 * test_ctl_break.c - unit tests of strobectl's breakpoint and execution commands:
 * their argument parsing (cli/ctl/verbs/ctl_break.c through ctl_parse: FILE:LINE against
 * function patterns, --hit, unknown options, until's one condition, delete of
 * breakpoints against delete of a session) and their renderers (cli/render/render_break.c)
 * from hand-written debug_breakpoint and debug_continue answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/ctl/verbs/ctl_args.h"
#include "tests/unit/ctl_parse.h"
#include "cli/render/render_break.h"


/* Asserts that c parsed into tool and these arguments (compact JSON), then frees c. */
static void assert_call(struct ctl_cmd *c, enum ctl_kind kind, const char *tool,
                        const char *json)
{
    assert_int_equal(c->kind, kind);
    assert_string_equal(c->tool, tool);
    char *s = cJSON_PrintUnformatted(c->args);
    assert_string_equal(s, json);
    free(s);
    ctl_cmd_free(c);
}

static void test_break_locations(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "break", "s1", "calc.c:42", NULL), 0);
    assert_call(&c, CTL_BREAK, "debug_breakpoint",
                "{\"sessionId\":\"s1\",\"add\":[{\"file\":\"calc.c\",\"line\":42}]}");
    assert_int_equal(parse(&c, err, "break", "s1", "src/lib/calc.c:7", NULL), 0);
    assert_call(&c, CTL_BREAK, "debug_breakpoint",
                "{\"sessionId\":\"s1\",\"add\":[{\"file\":\"src/lib/calc.c\",\"line\":7}]}");
    /* Function patterns: no trailing :digits. */
    static const char *const functions[] = { "parse_config", "ns::Parser::*",
                                             "@file:calc.c", "ns::f", "x:", "v2" };
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
        assert_int_equal(parse(&c, err, "break", "s1", functions[i], NULL), 0);
        char want[128];
        snprintf(want, sizeof want, "{\"sessionId\":\"s1\",\"add\":[{\"function\":\"%s\"}]}",
                 functions[i]);
        assert_call(&c, CTL_BREAK, "debug_breakpoint", want);
    }
    /* Without SESSION: staged for the next launch. */
    assert_int_equal(parse(&c, err, "break", "main", NULL), 0);
    assert_call(&c, CTL_BREAK, "debug_breakpoint", "{\"add\":[{\"function\":\"main\"}]}");
    assert_int_equal(parse(&c, err, "break", "calc.c:0", NULL), -1);
    assert_string_equal(err, "the LINE of 'calc.c:0' must be between 1 and 2147483647");
    assert_int_equal(parse(&c, err, "break", NULL), -1);
    assert_string_equal(err, "break needs a FUNCTION or FILE:LINE");
    assert_non_null(strstr(c.usage, "strobectl break"));
    assert_null(c.args);
    assert_int_equal(parse(&c, err, "break", "s1", "f", "g", NULL), -1);
    assert_string_equal(err, "unexpected argument 'g'");
}

static void test_break_options(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "break", "--if", "n > 3 && p != NULL", "s1", "calc.c:9",
                           "--hit", "5", "--once", "--all-stop", "--json", NULL), 0);
    assert_true(c.json);
    assert_call(&c, CTL_BREAK, "debug_breakpoint",
                "{\"sessionId\":\"s1\",\"add\":[{\"file\":\"calc.c\",\"line\":9,"
                "\"condition\":\"n > 3 && p != NULL\",\"hitCount\":5,\"oneShot\":true,"
                "\"allStop\":true}]}");
    assert_int_equal(parse(&c, err, "break", "s1", "tick", "--log=n={n}", "--hit=2", NULL),
                     0);
    assert_call(&c, CTL_BREAK, "debug_breakpoint",
                "{\"sessionId\":\"s1\",\"add\":[{\"function\":\"tick\",\"message\":\"n={n}\","
                "\"hitCount\":2}]}");

    /* --hit: a whole number, 1 or more. */
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--hit", "0", NULL), -1);
    assert_string_equal(err, "--hit must be between 1 and 2147483647, not 0");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--hit", "-2", NULL), -1);
    assert_string_equal(err, "--hit must be between 1 and 2147483647, not -2");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--hit", "1.5", NULL), -1);
    assert_string_equal(err, "--hit needs a whole number, not '1.5'");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--hit", NULL), -1);
    assert_string_equal(err, "--hit needs a value");

    assert_int_equal(parse(&c, err, "break", "s1", "f", "--condition", "x", NULL), -1);
    assert_string_equal(err, "unknown option --condition");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--once=yes", NULL), -1);
    assert_string_equal(err, "--once takes no value");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--if", "", NULL), -1);
    assert_string_equal(err, "--if needs a condition");
    assert_int_equal(parse(&c, err, "break", "s1", "f", "--log", "m", "--all-stop", NULL), -1);
    assert_non_null(strstr(err, "never pauses"));
}

static void test_breakpoints_and_delete(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "breakpoints", "s1", NULL), 0);
    assert_call(&c, CTL_BREAKPOINTS, "debug_breakpoint", "{\"sessionId\":\"s1\"}");
    assert_int_equal(parse(&c, err, "breakpoints", NULL), 0);
    assert_call(&c, CTL_BREAKPOINTS, "debug_breakpoint", "{}");
    assert_int_equal(parse(&c, err, "breakpoints", "s1", "--all", NULL), -1);
    assert_string_equal(err, "unknown option --all");

    assert_int_equal(parse(&c, err, "delete", "s1", "3", "1", NULL), 0);
    assert_call(&c, CTL_BP_DELETE, "debug_breakpoint",
                "{\"sessionId\":\"s1\",\"remove\":[3,1]}");
    assert_int_equal(parse(&c, err, "delete", "s1", "all", "--json", NULL), 0);
    assert_call(&c, CTL_BP_DELETE, "debug_breakpoint", "{\"sessionId\":\"s1\",\"remove\":\"*\"}");
    /* A SESSION alone still deletes the session. */
    assert_int_equal(parse(&c, err, "delete", "s1", "--json", NULL), 0);
    assert_call(&c, CTL_DELETE, "debug_session", "{\"action\":\"delete\",\"sessionId\":\"s1\"}");
    assert_int_equal(parse(&c, err, "delete", "s1", "x", NULL), -1);
    assert_string_equal(err, "delete needs breakpoint IDs (numbers) or 'all', not 'x'");
    assert_non_null(strstr(c.usage, "ID...|all"));
    assert_int_equal(parse(&c, err, "delete", "s1", "0", NULL), -1);
    assert_int_equal(parse(&c, err, "delete", "s1", "+2", NULL), -1);
    assert_int_equal(parse(&c, err, "delete", "s1", "2", "all", NULL), -1);
    assert_string_equal(err, "delete takes breakpoint IDs or 'all', not both");
}

static void test_run_commands(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "continue", "s1", NULL), 0);
    assert_call(&c, CTL_CONTINUE, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"continue\"}");
    assert_int_equal(parse(&c, err, "continue", "--timeout", "500", "s1", "--thread=77", NULL),
                     0);
    assert_call(&c, CTL_CONTINUE, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"continue\",\"threadId\":77,"
                "\"timeoutMs\":500}");
    static const struct { const char *cmd, *action; enum ctl_kind kind; } steps[] = {
        { "next", "step-over", CTL_NEXT }, { "step", "step-into", CTL_STEP },
        { "finish", "step-out", CTL_FINISH },
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(parse(&c, err, steps[i].cmd, "s1", "--thread", "9", NULL), 0);
        char want[128];
        snprintf(want, sizeof want, "{\"sessionId\":\"s1\",\"action\":\"%s\",\"threadId\":9}",
                 steps[i].action);
        assert_call(&c, steps[i].kind, "debug_continue", want);
        assert_int_equal(parse(&c, err, steps[i].cmd, NULL), -1);
        snprintf(want, sizeof want, "%s needs a SESSION id", steps[i].cmd);
        assert_string_equal(err, want);
    }
    assert_int_equal(parse(&c, err, "pause", "s1", NULL), 0);
    assert_call(&c, CTL_PAUSE, "debug_continue", "{\"sessionId\":\"s1\",\"action\":\"pause\"}");
    assert_int_equal(parse(&c, err, "pause", "s1", "--timeout", "5", NULL), -1);
    assert_string_equal(err, "unknown option --timeout");
    assert_int_equal(parse(&c, err, "continue", "s1", "--timeout", "0", NULL), -1);
    assert_string_equal(err, "--timeout must be between 1 and 60000, not 0");
    assert_int_equal(parse(&c, err, "continue", "s1", "--timeout", "60001", NULL), -1);
    assert_int_equal(parse(&c, err, "next", "s1", "--thread", "t1", NULL), -1);
    assert_string_equal(err, "--thread needs a whole number, not 't1'");
    assert_int_equal(parse(&c, err, "continue", "s1", "s2", NULL), -1);
    assert_string_equal(err, "unexpected argument 's2'");
    assert_int_equal(parse(&c, err, "step", "s1", "--breakpoint", "1", NULL), -1);
    assert_string_equal(err, "unknown option --breakpoint");
}

static void test_until(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "until", "s1", "--breakpoint", "2", NULL), 0);
    assert_call(&c, CTL_UNTIL, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"until\",\"condition\":{\"breakpoint\":2}}");
    assert_int_equal(parse(&c, err, "until", "s1", "--memory", "g_count >= 100",
                           "--timeout", "3000", NULL), 0);
    assert_call(&c, CTL_UNTIL, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"until\",\"condition\":{\"memory\":"
                "\"g_count >= 100\"},\"timeoutMs\":3000}");
    assert_int_equal(parse(&c, err, "until", "s1", "--text", "ready", "--stream", "stdout",
                           NULL), 0);
    assert_call(&c, CTL_UNTIL, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"until\",\"condition\":{\"event\":"
                "{\"text\":{\"contains\":\"ready\"},\"eventType\":\"stdout\"}}}");
    assert_int_equal(parse(&c, err, "until", "s1", "--matches", "^done [0-9]+$", NULL), 0);
    assert_call(&c, CTL_UNTIL, "debug_continue",
                "{\"sessionId\":\"s1\",\"action\":\"until\",\"condition\":{\"event\":"
                "{\"text\":{\"matches\":\"^done [0-9]+$\"}}}}");

    /* Exactly one condition. */
    assert_int_equal(parse(&c, err, "until", "s1", NULL), -1);
    assert_string_equal(err, "until needs a condition: --breakpoint ID, --memory EXPR, "
                             "--text STRING or --matches REGEX");
    assert_int_equal(parse(&c, err, "until", "s1", "--timeout", "10", NULL), -1);
    assert_non_null(strstr(err, "until needs a condition"));
    assert_int_equal(parse(&c, err, "until", "s1", "--breakpoint", "1", "--text", "x", NULL),
                     -1);
    assert_string_equal(err, "until waits for one condition; give only one of --breakpoint, "
                             "--memory, --text and --matches");
    assert_int_equal(parse(&c, err, "until", "s1", "--text", "x", "--matches", "y", NULL), -1);
    assert_int_equal(parse(&c, err, "until", "s1", "--memory", "a", "--breakpoint", "3", NULL),
                     -1);
    assert_int_equal(parse(&c, err, "until", "s1", "--memory", "a", "--stream", "stdout",
                           NULL), -1);
    assert_string_equal(err, "--stream goes with --text or --matches");
    assert_int_equal(parse(&c, err, "until", "s1", "--text", "a", "--stream", "log", NULL),
                     -1);
    assert_string_equal(err, "--stream is stdout or stderr, not 'log'");
    assert_int_equal(parse(&c, err, "until", "s1", "--breakpoint", "x", NULL), -1);
    assert_string_equal(err, "--breakpoint needs a whole number, not 'x'");
    assert_int_equal(parse(&c, err, "until", "s1", "--thread", "3", "--text", "a", NULL), -1);
    assert_string_equal(err, "unknown option --thread");
    assert_int_equal(parse(&c, err, "until", "--text", "a", NULL), -1);
    assert_string_equal(err, "until needs a SESSION id");
}

/* ---- renderers ----------------------------------------------------------------------- */

/* What render_stop (stop) or render_breakpoints prints for the answer json; *running
 * gets render_stop's result. The caller frees. */
static char *rendered(const char *json, bool stop, bool *running)
{
    cJSON *r = cJSON_Parse(json);
    assert_non_null(r);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    bool still = false;
    if (stop)
        still = render_stop(f, r);
    else
        render_breakpoints(f, r);
    fclose(f);
    cJSON_Delete(r);
    if (running)
        *running = still;
    return text;
}

static void test_render_breakpoints(void **state)
{
    (void)state;
    char *t = rendered(
        "{\"sessionId\":\"s1\",\"breakpoints\":["
        "{\"id\":1,\"kind\":\"breakpoint\",\"file\":\"calc.c\",\"line\":40,\"condition\":"
        "\"n > 3\",\"hitCount\":5,\"oneShot\":true,\"locations\":1,\"where\":[{\"address\":"
        "\"0x401136\",\"function\":\"compute\",\"file\":\"/src/calc.c\",\"line\":42}],"
        "\"movedFrom\":40,\"hits\":7},"
        "{\"id\":12,\"kind\":\"logpoint\",\"function\":\"parse_*\",\"message\":\"n={n}\","
        "\"locations\":3,\"where\":[{\"function\":\"parse_a\",\"file\":\"p.c\",\"line\":3}],"
        "\"hits\":0,\"conditionErrors\":2,\"lastConditionError\":\"p is NULL\"}],"
        "\"hint\":\"...\"}", false, NULL);
    assert_string_equal(t,
        "ID   KIND       WHERE                     HITS  CONDITION\n"
        "1    breakpoint calc.c:42 in compute         7  n > 3, from hit 5, once\n"
        "12   logpoint   p.c:3 in parse_a +2 more     0  log \"n={n}\"\n"
        "breakpoint 1: line 40 has no code; moved to line 42\n"
        "breakpoint 12: the condition failed to evaluate 2 time(s), last: p is NULL\n");
    free(t);
    t = rendered("{\"breakpoints\":[{\"id\":1,\"kind\":\"breakpoint\",\"function\":\"main\","
                 "\"allStop\":true,\"hits\":0}],\"staged\":true}", false, NULL);
    assert_string_equal(t, "ID   KIND       WHERE  HITS  CONDITION\n"
                           "1    breakpoint main      0  all-stop\n"
                           "staged for the next launch\n");
    free(t);
    t = rendered("{\"sessionId\":\"s1\",\"removed\":[1,2],\"breakpoints\":[]}", false, NULL);
    assert_string_equal(t, "deleted breakpoints 1, 2\nno breakpoints\n");
    free(t);
}

static void test_render_stop(void **state)
{
    (void)state;
    bool running;
    char *t = rendered(
        "{\"sessionId\":\"s1\",\"state\":\"paused\",\"reason\":\"breakpoint\",\"threadId\":"
        "1234,\"pid\":1234,\"breakpointId\":1,\"function\":\"compute\",\"file\":"
        "\"/src/calc.c\",\"line\":42,\"frames\":[{\"function\":\"compute\",\"file\":"
        "\"/src/calc.c\",\"line\":42},{\"function\":\"main\",\"file\":\"/src/calc.c\","
        "\"line\":60},{\"function\":\"__libc_start_main\"}],\"arguments\":[{\"name\":\"n\","
        "\"type\":\"int\",\"value\":5}],\"locals\":[{\"name\":\"who\",\"type\":\"char *\","
        "\"value\":\"bob\"},{\"name\":\"p\",\"type\":\"struct pt\",\"value\":{\"x\":1}}],"
        "\"pausedThreads\":2,\"hint\":\"...\"}", true, &running);
    assert_false(running);
    assert_string_equal(t,
        "Thread 1234 paused at calc.c:42 in compute (breakpoint 1)\n"
        "#0 compute (calc.c:42)\n"
        "#1 main (calc.c:60)\n"
        "#2 __libc_start_main\n"
        "arguments:\n"
        "  n = 5\n"
        "locals:\n"
        "  who = \"bob\"\n"
        "  p = {\"x\":1}\n"
        "2 threads paused\n");
    free(t);
    t = rendered("{\"state\":\"paused\",\"reason\":\"step\",\"threadId\":7,\"function\":\"main\","
                 "\"file\":\"calc.c\",\"line\":61,\"returnValue\":25,\"arguments\":[],"
                 "\"locals\":[],\"pausedThreads\":1}", true, &running);
    assert_string_equal(t, "Thread 7 paused at calc.c:61 in main (step)\nreturned 25\n");
    free(t);
    t = rendered("{\"state\":\"exited\",\"exitCode\":3}", true, &running);
    assert_false(running);
    assert_string_equal(t, "program exited with code 3\n");
    free(t);
    t = rendered("{\"state\":\"exited\",\"signal\":\"SIGSEGV\"}", true, &running);
    assert_string_equal(t, "program killed by SIGSEGV\n");
    free(t);
    t = rendered("{\"state\":\"running\",\"waitedMs\":10000,\"eventsMeanwhile\":12,"
                 "\"outputMeanwhile\":[\"tick 41\"]}", true, &running);
    assert_true(running);
    assert_string_equal(t, "still running after 10000 ms: 12 events, last output: tick 41\n");
    free(t);
    t = rendered("{\"state\":\"running\",\"conditionMet\":false,\"waitedMs\":50,"
                 "\"eventsMeanwhile\":0,\"outputMeanwhile\":[]}", true, &running);
    assert_true(running);
    assert_string_equal(t, "still running after 50 ms: 0 events\ncondition not met\n");
    free(t);
    t = rendered("{\"state\":\"running\",\"conditionMet\":true,\"event\":{\"eventType\":"
                 "\"stdout\",\"timestampNs\":1500000,\"text\":\"ready\"}}", true, &running);
    assert_false(running);
    assert_string_equal(t, "condition met: [     1.500 ms] stdout  ready\n");
    free(t);
    t = rendered("{\"state\":\"running\",\"conditionMet\":true,\"values\":\"g_count=100\"}",
                 true, &running);
    assert_false(running);
    assert_string_equal(t, "condition met: g_count=100\n");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_break_locations),
        cmocka_unit_test(test_break_options),
        cmocka_unit_test(test_breakpoints_and_delete),
        cmocka_unit_test(test_run_commands),
        cmocka_unit_test(test_until),
        cmocka_unit_test(test_render_breakpoints),
        cmocka_unit_test(test_render_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
