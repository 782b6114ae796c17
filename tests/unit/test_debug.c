/*
 * test_debug.c - the parts of stop-and-step that need no program: the pause
 * registry (ptrace/debugger/pauses.h), staged breakpoints and their ids, limits and errors
 * (core/debug.h), and the breakpoint info a collector starts from
 * (collector_bp_info_init).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/debug.h"
#include "ptrace/debugger/pauses.h"

static int changes;

static void count_change(void *arg)
{
    (void)arg;
    changes++;
}

static struct collector_pause pause_of(pid_t tid, enum collector_pause_reason why)
{
    return (struct collector_pause){.tid = tid, .pid = 100, .reason = why};
}

static void test_pauses_order_and_replace(void **state)
{
    (void)state;
    changes = 0;
    struct pauses *ps = pauses_new(count_change, NULL);
    struct user_regs_struct regs = {.rip = 0x1000};
    struct collector_pause a = pause_of(1, PAUSE_BREAKPOINT), b = pause_of(2, PAUSE_STEP);
    pauses_add(ps, &a, &regs);
    regs.rip = 0x2000;
    pauses_add(ps, &b, &regs);
    assert_int_equal(a.seq, 1);
    assert_int_equal(b.seq, 2);
    struct collector_pause out[4];
    assert_int_equal(pauses_list(ps, out, 4), 2);
    assert_int_equal(out[0].tid, 1);
    assert_int_equal(out[1].tid, 2);
    /* Thread 1 pauses again: its pause is the newest now, with the new registers. */
    struct collector_pause again = pause_of(1, PAUSE_STEP);
    regs.rip = 0x3000;
    pauses_add(ps, &again, &regs);
    assert_int_equal(pauses_list(ps, out, 4), 2);
    assert_int_equal(out[0].tid, 2);
    assert_int_equal(out[1].tid, 1);
    assert_int_equal(out[1].seq, 3);
    assert_int_equal(out[1].reason, PAUSE_STEP);
    struct user_regs_struct got;
    assert_true(pauses_get(ps, 1, NULL, &got));
    assert_int_equal(got.rip, 0x3000);
    regs.rip = 0x4000;
    pauses_set_regs(ps, 1, &regs);
    assert_true(pauses_get(ps, 1, NULL, &got));
    assert_int_equal(got.rip, 0x4000);
    assert_int_equal(changes, 3);
    pauses_free(ps);
}

static void test_pauses_remove(void **state)
{
    (void)state;
    changes = 0;
    struct pauses *ps = pauses_new(count_change, NULL);
    struct user_regs_struct regs = {0};
    for (pid_t t = 10; t < 13; t++) {
        struct collector_pause p = pause_of(t, PAUSE_REQUEST);
        pauses_add(ps, &p, &regs);
    }
    assert_true(pauses_remove(ps, 11));
    assert_false(pauses_remove(ps, 11));
    assert_false(pauses_get(ps, 11, NULL, NULL));
    pid_t tids[1];
    /* The count is the whole set even when the array is shorter. */
    assert_int_equal(pauses_tids(ps, tids, 1), 2);
    assert_int_equal(tids[0], 10);
    assert_int_equal(changes, 4); /* three adds, one removal; a failed removal is none */
    pauses_free(ps);
}

static void clear_staged(void)
{
    int removed[DEBUG_LIST_MAX], n;
    assert_int_equal(debug_breakpoints_remove(NULL, NULL, 0, true, removed, &n, NULL), 0);
}

static void test_staged_ids_and_list(void **state)
{
    (void)state;
    clear_staged();
    struct collector_breakpoint specs[2] = {
        {.file = "calc.c", .line = 42, .condition = "n > 3 && p->x == 'a'", .hit_count = 2},
        {.function = "parse_*", .message = "x={x}", .one_shot = true},
    };
    struct collector_bp_info info[2];
    struct debug_conn conn = {1, false};
    assert_int_equal(debug_breakpoints_add(NULL, &conn, specs, 2, info, NULL), 0);
    assert_true(info[0].id > 0);
    assert_int_equal(info[1].id, info[0].id + 1);
    assert_string_equal(info[0].file, "calc.c");
    assert_int_equal(info[0].line_asked, 42);
    assert_int_equal(info[0].hit_count, 2);
    assert_false(info[0].logpoint);
    assert_true(info[1].logpoint);
    assert_true(info[1].one_shot);
    assert_string_equal(info[1].message, "x={x}");

    struct collector_bp_info listed[4];
    int n = 0;
    assert_int_equal(debug_breakpoints_list(NULL, listed, 4, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(listed[1].function, "parse_*");

    /* A launch takes copies: the staged set stays for the next launch too. */
    const struct collector_breakpoint *taken;
    int n_taken;
    struct debug_staged *st = debug_staged_take(&taken, &n_taken);
    assert_int_equal(n_taken, 2);
    assert_string_equal(taken[0].condition, "n > 3 && p->x == 'a'");
    debug_staged_free(st);
    assert_int_equal(debug_breakpoints_list(NULL, listed, 4, &n, NULL), 0);
    assert_int_equal(n, 2);

    int removed[DEBUG_LIST_MAX], n_removed;
    struct strobe_error e = {0};
    int unknown[] = {info[0].id, 999999};
    assert_int_equal(debug_breakpoints_remove(NULL, unknown, 2, false, removed, &n_removed, &e),
                     -1);
    assert_int_equal(e.code, ERR_BREAKPOINT_NOT_FOUND);
    assert_non_null(strstr(e.msg, "999999"));
    assert_int_equal(n_removed, 0); /* all or nothing */
    assert_int_equal(debug_breakpoints_remove(NULL, &info[0].id, 1, false, removed, &n_removed,
                                              &e), 0);
    assert_int_equal(n_removed, 1);
    assert_int_equal(removed[0], info[0].id);
    assert_int_equal(debug_breakpoints_list(NULL, listed, 4, &n, NULL), 0);
    assert_int_equal(n, 1);
    clear_staged();
}

static void test_staged_bad_condition(void **state)
{
    (void)state;
    clear_staged();
    struct collector_breakpoint spec = {.file = "a.c", .line = 3, .condition = "n > && 2"};
    struct collector_bp_info info;
    struct strobe_error e = {0};
    assert_int_equal(debug_breakpoints_add(NULL, NULL, &spec, 1, &info, &e), -1);
    assert_int_equal(e.code, ERR_BAD_EXPRESSION);
    assert_non_null(strstr(e.msg, "column 5"));
    int n = -1;
    struct collector_bp_info listed[1];
    assert_int_equal(debug_breakpoints_list(NULL, listed, 1, &n, NULL), 0);
    assert_int_equal(n, 0);
}

static void test_staged_limits(void **state)
{
    (void)state;
    clear_staged();
    struct collector_breakpoint spec = {.function = "f"};
    struct collector_bp_info info;
    for (int i = 0; i < BREAKPOINTS_MAX; i++)
        assert_int_equal(debug_breakpoints_add(NULL, NULL, &spec, 1, &info, NULL), 0);
    struct strobe_error e = {0};
    assert_int_equal(debug_breakpoints_add(NULL, NULL, &spec, 1, &info, &e), -1);
    assert_int_equal(e.code, ERR_LIMIT_EXCEEDED);
    /* Logpoints have their own limit. */
    struct collector_breakpoint lp = {.function = "f", .message = "hit"};
    assert_int_equal(debug_breakpoints_add(NULL, NULL, &lp, 1, &info, NULL), 0);
    clear_staged();
}

static void test_bp_info_init(void **state)
{
    (void)state;
    struct collector_breakpoint b = {.id = 7, .file = "x.cpp", .line = 12, .all_stop = true};
    struct collector_bp_info info;
    collector_bp_info_init(&info, &b);
    assert_int_equal(info.id, 7);
    assert_string_equal(info.file, "x.cpp");
    assert_string_equal(info.function, "");
    assert_string_equal(info.condition, "");
    assert_int_equal(info.line, 12);
    assert_true(info.all_stop);
    assert_int_equal(info.n_locations, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pauses_order_and_replace),
        cmocka_unit_test(test_pauses_remove),
        cmocka_unit_test(test_staged_ids_and_list),
        cmocka_unit_test(test_staged_bad_condition),
        cmocka_unit_test(test_staged_limits),
        cmocka_unit_test(test_bp_info_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
