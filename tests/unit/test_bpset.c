/*
 * test_bpset.c - the breakpoint set (ptrace/debugger/bpset.c) on a real program: the
 * fixture bp_steps (work(i) calls square(i) every ~2 ms, tests/fixtures/bp_steps.c)
 * runs under a real tracer with the debugger on it (tests/unit/debugged.h, wired as
 * ptrace/native.c wires it), and breakpoints are set, hit and cleared through the
 * collector's slots (debugger.h), which are bpset's one caller.
 *
 * Covered: a breakpoint by function and by file:line (the same address after the
 * prologue, an int3 in the program's memory while armed, its own byte back once
 * cleared), a wildcard binding each function it matches, the line of an inlined
 * function binding each inlined copy, a line without code moved to the next, the
 * refusals (unknown function, file, line; a condition or message that does not
 * parse; a name neither in the frame nor global) with their codes and sentences;
 * conditions that hold (the pause is where they hold, read back from the paused
 * frame), never hold (counted nowhere while another breakpoint at the same place
 * pauses), and fail to evaluate (a pause with the error kept); hit counts (the Nth
 * passing hit pauses, and each one after it); one-shot breakpoints and logpoints
 * (gone after their first hit, which nothing else hits after); logpoints (messages
 * rendered from the frame, no pause); staged breakpoints bound at the entry point of
 * a program that lives a few milliseconds (bp_quick), and one that binds nowhere;
 * breakpoints bound again when the main process execs (config_overwrite on SIGHUP).
 * Around the set, in the debugger, with bp_threads (three workers): an all-stop
 * breakpoint pausing every thread in one batch, a pause request, conditions over
 * globals (debugger_evaluate), a paused thread's register written and read back.
 * Values are checked against the frame itself (v, the argument of square, is the
 * round number i), never against time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fixtures.h"
#include "debugged.h"

static const char *const forever[] = {NULL}; /* bp_steps' default: a million rounds */

static int sq_body(struct debugged *g)
{
    return marked_line(g->tr.path, "square", "SQ_BODY");
}

static struct collector_breakpoint on_function(int id, const char *fn)
{
    return (struct collector_breakpoint){.id = id, .function = fn};
}

static struct collector_breakpoint on_line(int id, const char *file, int line)
{
    return (struct collector_breakpoint){.id = id, .file = file, .line = line};
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* How many lines the source file of f has. */
static int source_lines(const struct dw_function *f)
{
    FILE *fp = fopen(f->decl_file, "r");
    assert_non_null(fp);
    int n = 0, c;
    while ((c = fgetc(fp)) != EOF)
        n += c == '\n';
    fclose(fp);
    return n;
}

/* Refused with code and exactly the sentence want. */
static void refused(struct debugged *g, const struct collector_breakpoint *bp,
                    enum err_code code, const char *want)
{
    struct collector_bp_info info;
    struct strobe_error e = {0};
    assert_int_equal(debugger_breakpoint_set(g->d, g->tr.t, bp, &info, &e), -1);
    if (e.code != code)
        fail_msg("breakpoint %d: %s (%s), not %s", bp->id, err_code_name(e.code), e.msg,
                 err_code_name(code));
    assert_string_equal(e.msg, want);
}

/* ---- binding ----------------------------------------------------------------------- */

static void test_function_and_line_bind_after_the_prologue(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    int line = sq_body(&g);
    const struct dw_function *sq = fixture_function(g.tr.path, "square");
    uint64_t entry = sq->entry + traced_bias(&g.tr);
    uint8_t first = dbg_byte(&g, entry);

    struct collector_breakpoint by_fn = on_function(1, "square");
    struct collector_breakpoint by_line = on_line(2, "bp_steps.c", line);
    struct collector_bp_info a, b;
    dbg_set(&g, &by_fn, &a);
    dbg_set(&g, &by_line, &b);
    assert_int_equal(a.n_locations, 1);
    assert_int_equal(b.n_locations, 1);
    assert_false(a.logpoint);
    assert_string_equal(a.function, "square");
    assert_string_equal(a.locations[0].function, "square");
    assert_string_equal(base_name(a.locations[0].file), "bp_steps.c");
    assert_int_equal(a.locations[0].line, line);
    /* After the prologue: past the entry, at the first line of the body. */
    uint64_t at = a.locations[0].address;
    assert_true(at > entry && at < sq->end + traced_bias(&g.tr));
    assert_int_equal(b.locations[0].address, at);
    assert_int_equal(b.line_asked, line);
    assert_int_equal(b.line, line);
    assert_string_equal(b.note, "");
    assert_int_equal(dbg_byte(&g, at), 0xCC);
    assert_int_equal(dbg_byte(&g, entry), first);

    /* Both hold the address: the pause names the lowest id, at the breakpoint. */
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.reason, PAUSE_BREAKPOINT);
    assert_int_equal(p.breakpoint_id, 1);
    assert_int_equal(p.tid, g.tr.pid);
    assert_int_equal(p.pid, g.tr.pid);
    assert_int_equal(p.pc, at);
    assert_string_equal(p.function, "square");
    assert_int_equal(p.line, line);
    assert_int_equal(dbg_info(&g, 1).hits, 1);
    /* (Breakpoint 2 counts the hit only when it was armed before it came.) */
    assert_true(dbg_info(&g, 2).hits <= 1);
    /* The pause is an event of the timeline too. */
    traced_drain(&g.tr);
    const struct tev *ev = traced_event(&g.tr, EV_PAUSE, 0);
    assert_non_null(ev);
    assert_int_equal(ev->tid, p.tid);
    assert_string_equal(ev->function, "square");
    assert_int_equal(ev->line, line);
    assert_non_null(strstr(ev->data, "\"reason\":\"breakpoint\",\"breakpointId\":1"));
    char text[128];
    snprintf(text, sizeof text, "bp_steps.c:%d in square (breakpoint 1)", line);
    assert_non_null(strstr(ev->text, text));

    /* Cleared: the program's byte is back; clearing again is refused. */
    struct strobe_error e = {0};
    assert_int_equal(debugger_breakpoint_clear(g.d, g.tr.t, 1, &e), 0);
    assert_int_equal(dbg_byte(&g, at), 0xCC); /* breakpoint 2 still holds it */
    assert_int_equal(debugger_breakpoint_clear(g.d, g.tr.t, 2, &e), 0);
    assert_int_not_equal(dbg_byte(&g, at), 0xCC);
    assert_int_equal(debugger_breakpoint_clear(g.d, g.tr.t, 2, &e), -1);
    assert_int_equal(e.code, ERR_BREAKPOINT_NOT_FOUND);
    assert_string_equal(e.msg, "There is no breakpoint 2.");
    struct collector_bp_info none[2];
    assert_int_equal(debugger_breakpoint_list(g.d, none, 2), 0);
    /* The paused thread still stands there; continuing runs its instruction. */
    assert_int_equal(dbg_paused(&g), 1);
    dbg_resume(&g, 0, RESUME_CONTINUE);
    assert_int_equal(dbg_paused(&g), 0);
    dbg_end(&g);
}

static void test_wildcard_binds_every_match(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint bp = on_function(1, "helper_*");
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_int_equal(info.n_locations, 2);
    const char *f0 = info.locations[0].function, *f1 = info.locations[1].function;
    assert_true((!strcmp(f0, "helper_alpha") && !strcmp(f1, "helper_beta")) ||
                (!strcmp(f0, "helper_beta") && !strcmp(f1, "helper_alpha")));
    /* Both are called in every round: the first pause is in one of them. */
    struct collector_pause p = dbg_next_pause(&g);
    assert_true(p.pc == info.locations[0].address || p.pc == info.locations[1].address);
    assert_non_null(strstr(p.function, "helper_"));
    dbg_end(&g);
}

/* twice() is always inlined, twice into work: its line binds in each copy. */
static void test_line_of_an_inlined_function_binds_each_copy(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    int line = marked_line(g.tr.path, "work", "INL_BODY");
    struct collector_breakpoint bp = on_line(1, "bp_steps.c", line);
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_int_equal(info.n_locations, 2);
    assert_int_not_equal(info.locations[0].address, info.locations[1].address);
    for (int i = 0; i < 2; i++) {
        assert_true(info.locations[i].inlined);
        assert_string_equal(info.locations[i].function, "twice");
        assert_int_equal(info.locations[i].line, line);
    }
    /* The first copy computes twice(k), the second twice(k + 1). */
    struct collector_pause p = dbg_next_pause(&g);
    assert_string_equal(p.function, "twice");
    assert_int_equal(p.line, line);
    long x = dbg_long(&g, p.tid, 0, "x");
    assert_int_equal(x, dbg_long(&g, p.tid, 0, "k"));
    p = dbg_resume_to_pause(&g, p.tid, RESUME_CONTINUE);
    assert_int_equal(dbg_long(&g, p.tid, 0, "x"), x + 1);
    dbg_end(&g);
}

static void test_line_without_code_moves_to_the_next(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    int comment = marked_line(g.tr.path, "work", "NO_CODE");
    int next = marked_line(g.tr.path, "work", "NO_CODE_NEXT");
    struct collector_breakpoint bp = on_line(1, "bp_steps.c", comment);
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_int_equal(info.line_asked, comment);
    assert_int_equal(info.line, next);
    assert_true(info.note[0] != '\0');
    assert_int_equal(info.locations[0].line, next);
    struct collector_pause p = dbg_next_pause(&g);
    assert_string_equal(p.function, "work");
    assert_int_equal(p.line, next);
    dbg_end(&g);
}

static void test_refusals_say_why(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    int line = sq_body(&g);
    struct collector_breakpoint bp = on_function(1, "no_such_function");
    refused(&g, &bp, ERR_FUNCTION_NOT_FOUND,
            "No function of the program matches 'no_such_function'.");
    bp = on_function(2, "no_such_*");
    refused(&g, &bp, ERR_FUNCTION_NOT_FOUND,
            "No function of the program matches 'no_such_*' (patterns with wildcards "
            "search the program and its own libraries, not system ones).");
    char want[PATH_MAX + 256];
    bp = on_line(3, "no_such_file.c", 10);
    snprintf(want, sizeof want, "no file matching 'no_such_file.c' in the debug info of %s; "
             "its source files include: bp_steps.c", g.tr.path);
    refused(&g, &bp, ERR_FILE_NOT_FOUND, want);
    bp = on_line(4, "bp_steps.c", 100000);
    /* The last line with code is main's closing brace, the file's last line. */
    snprintf(want, sizeof want, "bp_steps.c has no code at or after line 100000; its last "
             "line with code is %d", source_lines(fixture_function(g.tr.path, "main")));
    refused(&g, &bp, ERR_LINE_NOT_FOUND, want);

    bp = on_function(5, "square");
    bp.condition = "v >";
    refused(&g, &bp, ERR_BAD_EXPRESSION, "condition column 4: expected an operand (a "
            "variable, a number, a string), found the end");
    static const char unknown[] =
        "'no_such_var' is neither a variable of the frame there (in scope here: v, s) nor a "
        "global (No global or static variable 'no_such_var' in the program or its "
        "libraries (locals of functions are not globals).)";
    bp.condition = "no_such_var > 1";
    refused(&g, &bp, ERR_VARIABLE_NOT_FOUND, unknown);
    bp.condition = NULL;
    bp.message = "v={v";
    refused(&g, &bp, ERR_BAD_EXPRESSION,
            "message column 3: '{' without '}' (write '{{' for a brace).");
    bp.message = "v=}";
    refused(&g, &bp, ERR_BAD_EXPRESSION,
            "message column 3: '}' without '{' (write '}}' for a brace).");
    bp.message = "{no_such_var}";
    refused(&g, &bp, ERR_VARIABLE_NOT_FOUND, unknown);

    /* Nothing of them stays, and the line itself still binds. */
    struct collector_bp_info all[2], info;
    assert_int_equal(debugger_breakpoint_list(g.d, all, 2), 0);
    bp = on_line(6, "bp_steps.c", line);
    dbg_set(&g, &bp, &info);
    assert_int_equal(info.n_locations, 1);
    dbg_end(&g);
}

/* ---- conditions and counts ---------------------------------------------------------- */

static void test_condition_pauses_where_it_holds(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint bp = on_function(1, "square");
    bp.condition = "v % 10 == 3 && g_x == v && g_name == \"strobe\"";
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_string_equal(info.condition, bp.condition);
    struct collector_pause p = dbg_next_pause(&g);
    long v = dbg_long(&g, p.tid, 0, "v");
    assert_int_equal(v % 10, 3);
    assert_int_equal(dbg_long(&g, p.tid, 0, "g_x"), v);
    /* The caller's frame agrees: work(k) called square(k). */
    assert_int_equal(dbg_long(&g, p.tid, 1, "k"), v);
    info = dbg_info(&g, 1);
    assert_int_equal(info.hits, 1);
    assert_int_equal(info.condition_errors, 0);

    /* The next pause is ten rounds on. */
    p = dbg_resume_to_pause(&g, p.tid, RESUME_CONTINUE);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), v + 10);
    assert_int_equal(dbg_info(&g, 1).hits, 2);
    dbg_end(&g);
}

static void test_condition_that_never_holds_never_pauses(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint never = on_function(1, "square");
    never.condition = "v < 0";
    struct collector_breakpoint third = on_function(2, "square");
    third.hit_count = 3;
    struct collector_bp_info info;
    dbg_set(&g, &never, &info);
    dbg_set(&g, &third, &info);
    /* Breakpoint 2 pauses at its third hit; breakpoint 1 saw each of them too. */
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.breakpoint_id, 2);
    assert_int_equal(dbg_info(&g, 2).hits, 3);
    assert_int_equal(dbg_info(&g, 1).hits, 0);
    assert_int_equal(dbg_info(&g, 1).condition_errors, 0);
    dbg_end(&g);
}

static void test_condition_error_pauses_with_the_reason(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint bp = on_function(1, "square");
    bp.condition = "*g_null == 3"; /* g_null stays NULL */
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.breakpoint_id, 1);
    info = dbg_info(&g, 1);
    assert_int_equal(info.condition_errors, 1);
    /* A condition that cannot be evaluated counts as holding (bpset.c), so the hit is
     * counted too. */
    assert_int_equal(info.hits, 1);
    assert_non_null(strstr(info.last_condition_error, "g_null"));
    dbg_end(&g);
}

static void test_hit_count_pauses_at_the_nth_passing_hit(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint bp = on_function(1, "square");
    bp.condition = "v % 2 == 0";
    bp.hit_count = 3;
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_int_equal(info.hit_count, 3);
    struct collector_pause p = dbg_next_pause(&g);
    long v = dbg_long(&g, p.tid, 0, "v");
    assert_int_equal(v % 2, 0);
    assert_int_equal(dbg_info(&g, 1).hits, 3);
    /* From the Nth on, every passing hit pauses: the next even round. */
    p = dbg_resume_to_pause(&g, p.tid, RESUME_CONTINUE);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), v + 2);
    assert_int_equal(dbg_info(&g, 1).hits, 4);
    dbg_end(&g);
}

/* ---- one-shots and logpoints ---------------------------------------------------------- */

static void test_one_shot_pauses_once(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    struct collector_breakpoint once = on_function(1, "square");
    once.one_shot = true;
    struct collector_bp_info info;
    dbg_set(&g, &once, &info);
    uint64_t at = info.locations[0].address;
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.breakpoint_id, 1);
    long v = dbg_long(&g, p.tid, 0, "v");
    traced_sync(&g.tr); /* the one-shot goes right after its pause is recorded */
    struct collector_bp_info all[2];
    assert_int_equal(debugger_breakpoint_list(g.d, all, 2), 0);
    assert_int_not_equal(dbg_byte(&g, at), 0xCC);

    /* Nothing pauses at v + 1: the next pause is the second hit of breakpoint 2. */
    struct collector_breakpoint second = on_function(2, "square");
    second.hit_count = 2;
    dbg_set(&g, &second, &info);
    p = dbg_resume_to_pause(&g, p.tid, RESUME_CONTINUE);
    assert_int_equal(p.breakpoint_id, 2);
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), v + 2);
    dbg_end(&g);
}

/* The logpoint events of breakpoint id so far, and the v each one says (n at most). */
static size_t logged(struct traced *tr, int id, long *vs, size_t n)
{
    char key[32];
    snprintf(key, sizeof key, "\"breakpointId\":%d,", id);
    size_t k = 0;
    for (size_t i = 0; i < tr->n_evs; i++) {
        const struct tev *e = &tr->evs[i];
        if (e->type != EV_LOGPOINT || !strstr(e->data, key))
            continue;
        if (k < n && vs)
            assert_int_equal(sscanf(e->text, "square(%ld)", &vs[k]), 1);
        k++;
    }
    return k;
}

struct logged_want {
    struct traced *tr;
    int id;
    size_t n;
};

static bool has_logged(void *arg)
{
    struct logged_want *w = arg;
    return logged(w->tr, w->id, NULL, 0) >= w->n;
}

static void wait_logged(struct traced *tr, int id, size_t n)
{
    struct logged_want w = {tr, id, n};
    traced_wait(tr, has_logged, &w, "logpoint messages");
}

static void test_logpoint_logs_without_pausing(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "bp_steps", forever, NULL, 0);
    int line = sq_body(&g);
    struct collector_breakpoint lp = on_line(1, "bp_steps.c", line);
    lp.message = "square({v}) of {g_name} {{x}}";
    struct collector_bp_info info;
    dbg_set(&g, &lp, &info);
    assert_true(info.logpoint);
    assert_string_equal(info.message, lp.message);
    wait_logged(&g.tr, 1, 5);
    assert_int_equal(dbg_paused(&g), 0);
    long v[5];
    assert_true(logged(&g.tr, 1, v, 5) >= 5);
    for (int i = 1; i < 5; i++)
        assert_int_equal(v[i], v[i - 1] + 1); /* every call, in order */
    const struct tev *ev = traced_event(&g.tr, EV_LOGPOINT, 0);
    char want[64];
    snprintf(want, sizeof want, "square(%ld) of strobe {x}", v[0]);
    assert_string_equal(ev->text, want);
    assert_string_equal(ev->function, "square");
    assert_int_equal(ev->line, line);
    assert_int_equal(ev->pid, g.tr.pid);
    assert_non_null(strstr(ev->data, "\"function\":\"square\""));
    assert_true(dbg_info(&g, 1).hits >= 5);

    /* A one-shot logpoint logs once and goes; the other one keeps logging. */
    struct collector_breakpoint once = lp;
    once.id = 2;
    once.message = "once {v}";
    once.one_shot = true;
    dbg_set(&g, &once, &info);
    wait_logged(&g.tr, 2, 1);
    size_t before = logged(&g.tr, 1, NULL, 0);
    wait_logged(&g.tr, 1, before + 3);
    assert_int_equal(logged(&g.tr, 2, NULL, 0), 1);
    struct collector_bp_info all[4];
    assert_int_equal(debugger_breakpoint_list(g.d, all, 4), 1);
    assert_int_equal(all[0].id, 1);
    assert_int_equal(dbg_paused(&g), 0);
    dbg_end(&g);
}

/* ---- staged breakpoints ---------------------------------------------------------------- */

static void test_staged_breakpoints_bind_at_the_entry_point(void **state)
{
    (void)state;
    struct collector_breakpoint staged[2] = {on_function(1, "quick"),
                                             on_function(2, "no_such_function")};
    staged[0].condition = "v == 2";
    static struct debugged g;
    dbg_start(&g, "bp_quick", NULL, staged, 2);
    /* quick(1), quick(2), quick(3): the one where v is 2 pauses. */
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.breakpoint_id, 1);
    assert_string_equal(p.function, "quick");
    assert_int_equal(dbg_long(&g, p.tid, 0, "v"), 2);
    assert_string_equal(p.file, fixture_function(g.tr.path, "quick")->decl_file);
    assert_int_equal(p.line, marked_line(g.tr.path, "quick", "QUICK_BODY"));

    struct collector_bp_info bound[4];
    assert_int_equal(debugger_breakpoints_staged(g.d, bound, 4), 2);
    assert_int_equal(bound[0].id, 1);
    assert_int_equal(bound[0].n_locations, 1);
    assert_int_equal(bound[1].id, 2);
    assert_int_equal(bound[1].n_locations, 0);
    assert_string_equal(bound[1].note, "FUNCTION_NOT_FOUND: No function of the program "
                        "matches 'no_such_function'.");
    /* The one that bound nowhere is listed with its reason, and can be cleared. */
    struct collector_bp_info all[4];
    assert_int_equal(debugger_breakpoint_list(g.d, all, 4), 2);
    struct strobe_error e = {0};
    assert_int_equal(debugger_breakpoint_clear(g.d, g.tr.t, 2, &e), 0);
    assert_int_equal(debugger_breakpoint_list(g.d, all, 4), 1);

    dbg_resume(&g, 0, RESUME_CONTINUE);
    int status = traced_wait_exit(&g.tr);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
    char line[64];
    traced_line(&g.tr, line, sizeof line);
    assert_string_equal(line, "sum 12");
    dbg_end(&g);
}

/* config_overwrite execs itself on SIGHUP: the breakpoint is bound again in the new
 * program, at its own addresses. */
static void test_breakpoints_follow_an_exec_of_the_main_process(void **state)
{
    (void)state;
    static struct debugged g;
    dbg_start(&g, "config_overwrite", NULL, NULL, 0);
    char line[128];
    traced_line_starting(&g.tr, "ready ", line, sizeof line);
    struct collector_breakpoint bp = on_function(1, "read_retries");
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_int_equal(kill(g.tr.pid, SIGUSR2), 0);
    struct collector_pause p = dbg_next_pause(&g);
    assert_int_equal(p.pc, info.locations[0].address);
    dbg_resume(&g, p.tid, RESUME_CONTINUE);
    traced_line_starting(&g.tr, "read 1 ", line, sizeof line);

    assert_int_equal(kill(g.tr.pid, SIGHUP), 0);
    traced_line_starting(&g.tr, "ready ", line, sizeof line); /* the new program */
    traced_sync(&g.tr);
    struct collector_bp_info again = dbg_info(&g, 1);
    assert_int_equal(again.n_locations, 1);
    assert_string_equal(again.note, "");
    uint64_t at = again.locations[0].address;
    const struct dw_function *f = fixture_function(g.tr.path, "read_retries");
    assert_true(at > f->entry + traced_bias(&g.tr) && at < f->end + traced_bias(&g.tr));
    assert_int_equal(dbg_byte(&g, at), 0xCC);
    assert_int_equal(kill(g.tr.pid, SIGUSR2), 0);
    p = dbg_next_pause(&g);
    assert_int_equal(p.breakpoint_id, 1);
    assert_int_equal(p.pc, at);
    assert_string_equal(p.function, "read_retries");
    assert_int_equal(p.line, marked_line(g.tr.path, "read_retries", "READ"));
    assert_int_equal(dbg_info(&g, 1).hits, 2);
    dbg_end(&g);
}

/* ---- the debugger around the set ------------------------------------------------------- */

/* bp_threads: three workers call worker_step(id, n) every ~2 ms; main joins them. */
static void start_threads(struct debugged *g)
{
    dbg_start(g, "bp_threads", NULL, NULL, 0);
    char line[64];
    traced_line(&g->tr, line, sizeof line);
    assert_string_equal(line, "started"); /* the three workers exist */
}

static void test_all_stop_stops_every_thread(void **state)
{
    (void)state;
    static struct debugged g;
    start_threads(&g);
    struct collector_breakpoint bp = on_function(1, "worker_step");
    bp.all_stop = true;
    bp.one_shot = true;
    struct collector_bp_info info;
    dbg_set(&g, &bp, &info);
    assert_true(info.all_stop);
    /* One pause for the thread that hit it, the others' in the same batch (whose end
     * the tracer thread is done with once it takes a command). */
    struct collector_pause hit = dbg_next_pause(&g);
    traced_sync(&g.tr);
    struct collector_pause ps[8];
    int n = debugger_pauses(g.d, ps, 8);
    assert_int_equal(n, 4);
    int breakpoint = 0, all_stop = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(ps[i].pid, g.tr.pid);
        breakpoint += ps[i].reason == PAUSE_BREAKPOINT;
        all_stop += ps[i].reason == PAUSE_ALL_STOP;
        if (ps[i].reason == PAUSE_BREAKPOINT)
            assert_int_equal(ps[i].tid, hit.tid);
    }
    assert_int_equal(breakpoint, 1);
    assert_int_equal(all_stop, 3);
    assert_int_not_equal(hit.tid, g.tr.pid); /* a worker */
    char name[32];
    procmem_thread_name(hit.tid, name, sizeof name);
    char want[32];
    snprintf(want, sizeof want, "worker-%ld", dbg_long(&g, hit.tid, 0, "id"));
    assert_string_equal(name, want);
    /* A resume of one thread leaves the others paused; a continue ends them all. */
    dbg_resume(&g, ps[0].tid == hit.tid ? ps[1].tid : ps[0].tid, RESUME_CONTINUE);
    assert_int_equal(dbg_paused(&g), 3);
    dbg_resume(&g, 0, RESUME_CONTINUE);
    assert_int_equal(dbg_paused(&g), 0);
    dbg_end(&g);
}

static void test_pause_request_evaluate_and_registers(void **state)
{
    (void)state;
    static struct debugged g;
    start_threads(&g);
    struct strobe_error e = {0};
    assert_int_equal(debugger_pause(g.d, g.tr.t, 0, &e), 4);
    struct collector_pause ps[8];
    assert_int_equal(debugger_pauses(g.d, ps, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ps[i].reason, PAUSE_REQUEST);
    assert_int_equal(debugger_pause(g.d, g.tr.t, 1, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    assert_string_equal(e.msg, "pid 1 is not a live process of this session.");

    /* Conditions over globals, with the values they read. */
    bool result = false;
    char values[128];
    assert_int_equal(debugger_evaluate(g.tr.t, 0, "g_total >= 0", &result, values,
                                       sizeof values, &e), 0);
    assert_true(result);
    long total;
    assert_int_equal(sscanf(values, "g_total=%ld", &total), 1);
    assert_int_equal(debugger_evaluate(g.tr.t, 0, "g_total < 0", &result, NULL, 0, &e), 0);
    assert_false(result);
    assert_int_equal(debugger_evaluate(g.tr.t, 0, "g_total >", &result, NULL, 0, &e), -1);
    assert_int_equal(e.code, ERR_BAD_EXPRESSION);
    assert_int_equal(debugger_evaluate(g.tr.t, 0, "no_such_var == 1", &result, NULL, 0, &e),
                     -1);
    assert_int_equal(e.code, ERR_VARIABLE_NOT_FOUND);

    /* A paused thread's register, written and read back. */
    pid_t tid = ps[0].tid;
    assert_int_equal(debugger_set_register(g.d, g.tr.t, tid, 0, 12345, &e), 0); /* rax */
    assert_int_equal(dbg_long(&g, tid, 0, "$rax"), 12345);

    dbg_resume(&g, 0, RESUME_CONTINUE);
    assert_int_equal(dbg_paused(&g), 0);
    assert_int_equal(debugger_resume(g.d, g.tr.t, 0, RESUME_CONTINUE, &e), -1);
    assert_int_equal(e.code, ERR_NOT_PAUSED);
    assert_string_equal(e.msg, "No thread is paused.");
    assert_int_equal(debugger_set_register(g.d, g.tr.t, tid, 0, 1, &e), -1);
    assert_int_equal(e.code, ERR_THREAD_NOT_PAUSED);
    dbg_end(&g);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        traced_test(test_function_and_line_bind_after_the_prologue),
        traced_test(test_wildcard_binds_every_match),
        traced_test(test_line_of_an_inlined_function_binds_each_copy),
        traced_test(test_line_without_code_moves_to_the_next),
        traced_test(test_refusals_say_why),
        traced_test(test_condition_pauses_where_it_holds),
        traced_test(test_condition_that_never_holds_never_pauses),
        traced_test(test_condition_error_pauses_with_the_reason),
        traced_test(test_hit_count_pauses_at_the_nth_passing_hit),
        traced_test(test_one_shot_pauses_once),
        traced_test(test_logpoint_logs_without_pausing),
        traced_test(test_staged_breakpoints_bind_at_the_entry_point),
        traced_test(test_breakpoints_follow_an_exec_of_the_main_process),
        traced_test(test_all_stop_stops_every_thread),
        traced_test(test_pause_request_evaluate_and_registers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
