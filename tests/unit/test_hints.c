/*
 * test_hints.c - mcp/hints.c: the advice after debug_trace depends on the program
 * (a short run is told to stage patterns before launch; a long one to add them while
 * it runs), and the pending-mode status says how long staged patterns live.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/hints.h"

static void short_run_is_told_to_stage_first(void **state)
{
    (void)state;
    const char *h = hint_trace_exited(5);
    assert_non_null(strstr(h, "without sessionId"));
    assert_non_null(strstr(h, "then debug_launch"));
    assert_null(strstr(hint_trace_exited(999), "while it runs: debug_launch"));
}

static void long_or_unknown_run_is_told_to_add_while_running(void **state)
{
    (void)state;
    assert_non_null(strstr(hint_trace_exited(1000), "debug_trace({sessionId"));
    assert_non_null(strstr(hint_trace_exited(-1), "debug_trace({sessionId"));
    assert_null(strstr(hint_trace_exited(60000), "without sessionId"));
}

static void pending_status_says_patterns_persist(void **state)
{
    (void)state;
    char buf[512];
    hint_trace_pending(2, buf, sizeof buf);
    assert_non_null(strstr(buf, "2 pattern(s) staged"));
    assert_non_null(strstr(buf, "the next debug_launch, and every later one until they "
                           "are removed"));
    assert_non_null(strstr(buf, "launched clean"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(short_run_is_told_to_stage_first),
        cmocka_unit_test(long_or_unknown_run_is_told_to_add_while_running),
        cmocka_unit_test(pending_status_says_patterns_persist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
