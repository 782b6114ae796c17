/*
 * test_stepper.c - the stepper's decisions (ptrace/debugger/stepper.c) on a real
 * program: bp_steps (work(k) calls square(k), the recursive fact(4) and libc's strlen
 * every ~2 ms; tests/fixtures/bp_steps.c) and bp_quick run under a real tracer with the
 * debugger on it (tests/unit/debugged.h); a thread paused at a breakpoint is stepped
 * with debugger_resume, and where each step ends is read from the pause it leaves
 * (function, line, pc, return value) and from the paused frame's variables.
 *
 * Covered: step-over runs a call at full speed and stops on the next line of the same
 * frame (the callee's result already stored), also over libc; step-into stops in a
 * callee with line info after its prologue, and goes over one without (strlen);
 * step-out stops at the return address with the value the function returned; a
 * recursive call does not end a step-over or a step-out early (the same return
 * address is reached first by the inner frames); a breakpoint met inside a call that
 * is stepped over supersedes the step; stepping out of main lets the program run to
 * its exit. Lines come from the fixtures' marker comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "dwarf/lines.h"
#include "fixtures.h"
#include "debugged.h"

static const char *const forever[] = {NULL};

static int mark(struct debugged *g, const char *fn, const char *m)
{
    return marked_line(g->tr.path, fn, m);
}

/* A one-shot breakpoint on line `m` of fn (condition cond, may be NULL); the pause
 * it makes. */
static struct collector_pause pause_on(struct debugged *g, int id, const char *fn,
                                       const char *m, const char *cond)
{
    struct collector_breakpoint bp = {.id = id, .file = "bp_steps.c", .line = mark(g, fn, m),
                                      .condition = cond, .one_shot = true};
    struct collector_bp_info info;
    dbg_set(g, &bp, &info);
    struct collector_pause p = dbg_next_pause(g);
    assert_int_equal(p.reason, PAUSE_BREAKPOINT);
    assert_int_equal(p.breakpoint_id, id);
    assert_string_equal(p.function, fn);
    return p;
}

static void assert_stopped_at(const struct collector_pause *p, const char *fn, int line)
{
    if (strcmp(p->function, fn) != 0 || p->line != line)
        fail_msg("the step stopped in %s at line %d, not in %s at line %d (%s)", p->function,
                 p->line, fn, line, p->note);
}

/* ---- step-over ------------------------------------------------------------------------ */

static void test_step_over_runs_calls_to_the_next_line(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "work", "CALL_SQUARE", NULL);
    long k = dbg_long(&g, p.tid, 0, "k");

    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OVER);
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_stopped_at(&p, "work", mark(&g, "work", "CALL_FACT"));
    assert_int_equal(dbg_long(&g, p.tid, 0, "a"), k * k); /* square ran, whole */
    assert_int_equal(dbg_long(&g, p.tid, 0, "k"), k);     /* in the same round */

    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OVER); /* fact(4), recursive */
    assert_stopped_at(&p, "work", mark(&g, "work", "CALL_STRLEN"));
    assert_int_equal(dbg_long(&g, p.tid, 0, "b"), 24);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OVER); /* strlen, in libc */
    assert_stopped_at(&p, "work", mark(&g, "work", "STRLEN_NEXT"));
    assert_int_equal(dbg_long(&g, p.tid, 0, "len"), 6);
    assert_string_equal(p.return_value, "");
    dbg_end(&g);
}

/* fact(4) pauses on its recursive call; stepping over it runs fact(3), fact(2) and
 * fact(1), whose returns into fact(3) and fact(2) pass the same return address first:
 * the step ends in fact(4)'s own frame. */
static void test_recursion_does_not_end_a_step_over_early(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "fact", "FACT_CALL", "n == 4");
    assert_int_equal(dbg_long(&g, p.tid, 0, "n"), 4);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OVER);
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_stopped_at(&p, "fact", mark(&g, "fact", "FACT_RET"));
    assert_int_equal(dbg_long(&g, p.tid, 0, "n"), 4);
    assert_int_equal(dbg_long(&g, p.tid, 0, "sub"), 6); /* fact(3) */
    assert_string_equal(p.return_value, "");
    /* The caller is work (k is its argument), not another fact. */
    (void)dbg_long(&g, p.tid, 1, "k");
    dbg_end(&g);
}

/* ---- step-into ------------------------------------------------------------------------ */

static void test_step_into_enters_the_callee(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "work", "CALL_SQUARE", NULL);
    long k = dbg_long(&g, p.tid, 0, "k");
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_INTO);
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_stopped_at(&p, "square", mark(&g, "square", "SQ_BODY"));
    /* After the prologue: the argument is in its place already. */
    const struct dw_function *sq = fixture_function(g.tr.path, "square");
    uint64_t bias = traced_bias(&g.tr);
    assert_int_equal(p.pc, dw_after_prologue(g.tr.path, sq->entry) + bias);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), k);
    assert_int_equal(dbg_long(&g, p.tid, 1, "k"), k);
    dbg_end(&g);
}

static void test_step_into_a_recursive_call(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "fact", "FACT_CALL", "n == 4");
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_INTO);
    const struct dw_function *fact = fixture_function(g.tr.path, "fact");
    assert_string_equal(p.function, "fact");
    assert_int_equal(p.pc, dw_after_prologue(g.tr.path, fact->entry) + traced_bias(&g.tr));
    assert_int_equal(dbg_long(&g, p.tid, 0, "n"), 3);
    assert_int_equal(dbg_long(&g, p.tid, 1, "n"), 4);
    dbg_end(&g);
}

static void test_step_into_goes_over_code_without_line_info(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "work", "CALL_STRLEN", NULL);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_INTO); /* strlen: libc, a system library */
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_stopped_at(&p, "work", mark(&g, "work", "STRLEN_NEXT"));
    assert_int_equal(dbg_long(&g, p.tid, 0, "len"), 6);
    dbg_end(&g);
}

/* ---- step-out ------------------------------------------------------------------------- */

static void test_step_out_stops_at_the_return_address_with_the_value(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "square", "SQ_BODY", NULL);
    long v = dbg_long(&g, p.tid, 0, "v");
    struct frame_ctx caller;
    struct strobe_error e = {0};
    assert_int_equal(debugger_frame(g.d, g.tr.t, p.tid, 1, &caller, &e), 0);

    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OUT);
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_int_equal(p.pc, caller.pc); /* the return address itself */
    assert_stopped_at(&p, "work", mark(&g, "work", "CALL_SQUARE"));
    char want[32];
    snprintf(want, sizeof want, "%ld", v * v);
    assert_string_equal(p.return_value, want);
    assert_int_equal(dbg_long(&g, p.tid, 0, "k"), v);
    /* The pause event carries the value too. */
    traced_drain(&g.tr);
    const struct tev *ev = traced_event(&g.tr, EV_PAUSE, 1);
    assert_non_null(ev);
    char data[64];
    snprintf(data, sizeof data, "\"returnValue\":%ld}", v * v);
    assert_non_null(strstr(ev->data, data));
    assert_non_null(strstr(ev->data, "\"reason\":\"step\""));
    dbg_end(&g);
}

/* fact(2) steps out: fact(1) returns into fact(2) at the very address fact(2) returns
 * to in fact(3); only fact(2)'s own return ends the step. */
static void test_recursion_does_not_end_a_step_out_early(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint bp = {.id = 1, .function = "fact", .condition = "n == 2",
                                      .one_shot = true};
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(dbg_long(&g, p.tid, 0, "n"), 2);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OUT);
    assert_int_equal(p.reason, PAUSE_STEP);
    assert_stopped_at(&p, "fact", mark(&g, "fact", "FACT_CALL"));
    assert_string_equal(p.return_value, "2");
    assert_int_equal(dbg_long(&g, p.tid, 0, "n"), 3);
    dbg_end(&g);
}

/* ---- steps and breakpoints ------------------------------------------------------------ */

static void test_breakpoint_inside_a_call_supersedes_the_step(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_pause p = pause_on(&g, 1, "work", "CALL_SQUARE", NULL);
    long k = dbg_long(&g, p.tid, 0, "k");
    struct collector_breakpoint in_square = {.id = 2, .function = "square"};
    struct collector_bp_info info;
    dbg_set(&g, &in_square, &info);

    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OVER);
    assert_int_equal(p.reason, PAUSE_BREAKPOINT);
    assert_int_equal(p.breakpoint_id, 2);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), k);
    /* The step is over: continuing meets square again in the next round, with no
     * step ending in work on the way. */
    p = dbg_resume_to_pause(&g, p.tid, RESUME_CONTINUE);
    assert_int_equal(p.reason, PAUSE_BREAKPOINT);
    assert_int_equal(p.breakpoint_id, 2);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), k + 1);
    dbg_end(&g);
}

/* main's caller is libc (no line info): stepping out of main lets the program run on
 * to its exit, with no pause. */
static void test_step_out_of_main_runs_to_the_exit(void **state)
{
    (void)state;
    struct collector_breakpoint staged = {.id = 1, .function = "quick", .one_shot = true};
    static struct debugged g;
    dbg_start(&g, "bp_quick", NULL, &staged, 1);
    struct collector_pause p = dbg_next_pause(&g);
    assert_string_equal(p.function, "quick");
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), 1);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_STEP_OUT);
    assert_string_equal(p.function, "main");
    assert_string_equal(p.return_value, "2");

    dbg_resume(&g, p.tid, RESUME_STEP_OUT);
    int status = traced_wait_exit(&g.tr);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
    assert_int_equal(dbg_paused(&g), 0);
    traced_drain(&g.tr);
    assert_int_equal(traced_count(&g.tr, EV_PAUSE), 2); /* the breakpoint, the first step */
    dbg_end(&g);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        traced_test(test_step_over_runs_calls_to_the_next_line),
        traced_test(test_recursion_does_not_end_a_step_over_early),
        traced_test(test_step_into_enters_the_callee),
        traced_test(test_step_into_a_recursive_call),
        traced_test(test_step_into_goes_over_code_without_line_info),
        traced_test(test_step_out_stops_at_the_return_address_with_the_value),
        traced_test(test_recursion_does_not_end_a_step_out_early),
        traced_test(test_breakpoint_inside_a_call_supersedes_the_step),
        traced_test(test_step_out_of_main_runs_to_the_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
