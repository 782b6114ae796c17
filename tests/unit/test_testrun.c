/*
 * test_testrun.c - the parts of debug_test's runner that need no framework: command
 * lines (tcmd.c), reports and locations (report.c), the stuck detector's decisions
 * (stuck.c) on made-up snapshots, the process tree of a run (proc.c) with real
 * processes, and the duration history in a real store (store/tests.c).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testrun/adapter.h"
#include "testrun/proc.h"
#include "testrun/stuck.h"
#include "testrun/tsuggest.h"
#include "store/store.h"
#include "tests/unit/tmpdir.h"

#define S 1000000000LL

/* ---- tcmd ------------------------------------------------------------------------ */

static void test_split_words_and_quotes(void **state)
{
    (void)state;
    struct test_command c = {0};
    assert_int_equal(tcmd_split(&c, "  ./run 'a b' \"c \\\"d\\\"\" e\\ f  "), 0);
    assert_int_equal(c.argc, 4);
    assert_string_equal(c.argv[0], "./run");
    assert_string_equal(c.argv[1], "a b");
    assert_string_equal(c.argv[2], "c \"d\"");
    assert_string_equal(c.argv[3], "e f");
    assert_null(c.argv[4]);
    tcmd_free(&c);
    assert_int_equal(tcmd_split(&c, "run 'open"), -1);
    tcmd_free(&c);
}

static void test_shell_line_quotes_what_needs_it(void **state)
{
    (void)state;
    struct test_command c = {0};
    tcmd_env(&c, "RUSTC_BOOTSTRAP=%d", 1);
    tcmd_env(&c, "NAME=two words");
    tcmd_arg(&c, "cargo");
    tcmd_arg(&c, "test");
    tcmd_arg(&c, "it's");
    struct strbuf sb = {0};
    tcmd_shell(&c, "/p q", &sb);
    assert_string_equal(sb.buf, "cd '/p q' && RUSTC_BOOTSTRAP=1 NAME='two words' cargo test "
                                "'it'\\''s'");
    sb_free(&sb);
    tcmd_free(&c);
}

static void test_too_many_arguments_is_flagged(void **state)
{
    (void)state;
    struct test_command c = {0};
    for (int i = 0; i < TEST_ARGV_MAX + 3; i++)
        tcmd_arg(&c, "a%d", i);
    assert_int_equal(c.argc, TEST_ARGV_MAX);
    assert_true(c.too_long);
    tcmd_free(&c);
}

/* ---- report ---------------------------------------------------------------------- */

static void test_location_in_messages(void **state)
{
    (void)state;
    static const char *const rs[] = {".rs", NULL};
    static const char *const c_[] = {".c", ".h", NULL};
    char *file = NULL;
    int line = 0;
    assert_true(test_find_location("thread 't' panicked at src/lib.rs:10:5:\nboom", rs, &file,
                                   &line));
    assert_string_equal(file, "src/lib.rs");
    assert_int_equal(line, 10);
    free(file);
    file = NULL;
    assert_false(test_find_location("at 12:30 in lib.rs: nothing", rs, &file, &line));
    assert_false(test_find_location("calc.c:0: zero is no line", c_, &file, &line));
    assert_true(test_find_location("see (\"calc.h:7\")", c_, &file, &line));
    assert_string_equal(file, "calc.h");
    assert_int_equal(line, 7);
    free(file);
}

/* Touches dir/name. */
static void touch(const char *dir, const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    fclose(fopen(path, "w"));
}

/* The source under test as a file that exists beside the test file: a class written
 * in a header (lru.hpp for lru_test.cpp); none when nothing there fits; the first
 * guess when the test file cannot be found (file_found NULL: built elsewhere). */
static void test_file_under_test_is_one_that_exists(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-tsuggest-XXXXXX", path[PATH_MAX], test[PATH_MAX];
    assert_non_null(mkdtemp(dir));
    touch(dir, "lru.hpp", path, sizeof path);
    touch(dir, "lru_test.cpp", test, sizeof test);
    struct test_report r;
    test_report_init(&r);
    struct test_case *c = test_report_add(&r, "Lru.Evicts", TEST_FAILED);
    test_set_str(&c->file, "lru_test.cpp", -1);
    c->file_found = test;
    char *out[4];
    assert_int_equal(tsuggest_file(c, out, 0, 4), 1);
    assert_string_equal(out[0], "@file:lru.hpp");
    free(out[0]);
    touch(dir, "cache_test.cpp", test, sizeof test);
    test_set_str(&c->file, "cache_test.cpp", -1);
    assert_int_equal(tsuggest_file(c, out, 0, 4), 0);
    c->file_found = NULL;
    assert_int_equal(tsuggest_file(c, out, 0, 4), 1);
    assert_string_equal(out[0], "@file:cache.cpp");
    free(out[0]);
    test_report_free(&r);
    rm_dir(dir);
}

static void test_report_cases_and_suggestions(void **state)
{
    (void)state;
    struct test_report r;
    test_report_init(&r);
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        assert_non_null(test_report_add(&r, name, i % 3 == 0 ? TEST_FAILED : TEST_PASSED));
    }
    assert_int_equal(r.n_cases, 40);
    assert_ptr_equal(test_report_find(&r, "t39"), &r.cases[39]);
    assert_null(test_report_find(&r, "t40"));
    struct test_case *c = test_report_add(&r, "parser::tests::empty_input", TEST_FAILED);
    test_set_str(&c->file, "src/parser.rs", -1);
    char *out[4];
    int n = test_suggest_default(c, out, 4);
    assert_int_equal(n, 2);
    assert_string_equal(out[0], "parser::**");
    assert_string_equal(out[1], "@file:parser.rs");
    for (int i = 0; i < n; i++)
        free(out[i]);
    c = test_report_add(&r, "tests::only_tests", TEST_FAILED);
    assert_int_equal(test_suggest_default(c, out, 4), 0);
    assert_non_null(test_report_diag(&r, "src/a.rs", 3, 5, "mismatched types"));
    assert_int_equal(r.diags[0].column, 5);
    test_report_free(&r);
    assert_int_equal(r.n_cases, 0);
}

/* ---- stuck ----------------------------------------------------------------------- */

static struct collector_frame frames_a[] = {{.function = "futex_wait"},
                                            {.function = "take_second"}};
static struct collector_frame frames_b[] = {{.function = "spin"}, {.function = "main"}};

enum blocked { RUNS, BLOCKED, BLOCKED_WITH_DEADLINE };

/* One thread (and, for a harness, a second one waiting with a deadline). */
static struct collector_stacks snapshot(struct collector_frame *f, size_t n, enum blocked b)
{
    static struct collector_thread th[2];
    th[0] = (struct collector_thread){.tid = 7, .frames = f, .n_frames = n,
                                      .syscall_nr = b == RUNS ? -1 : 202,
                                      .wait_timed = b == BLOCKED_WITH_DEADLINE};
    th[1] = (struct collector_thread){.tid = 8, .frames = f, .n_frames = 1,
                                      .syscall_nr = 202, .wait_timed = true};
    return (struct collector_stacks){.threads = th, .n_threads = b == RUNS ? 1 : 2};
}

/* Samples CPU every 2 s from t0 with pct of one core, taking a snapshot each time the
 * detector wants one, until a verdict or until `until` s; returns the verdict and
 * the second it came at. */
static enum stuck_verdict drive(struct stuck *d, int64_t t0, int pct, struct collector_stacks *st,
                                int until, int *at)
{
    char diag[256];
    int64_t cpu = 0;
    for (int sec = 2; sec <= until; sec += 2) {
        int64_t now = t0 + sec * S;
        cpu += 2 * S * pct / 100;
        stuck_cpu(d, now, cpu);
        if (!stuck_wants_stacks(d, now))
            continue;
        enum stuck_verdict v = stuck_stacks(d, now, st, diag, sizeof diag);
        if (v != STUCK_NONE) {
            *at = sec;
            return v;
        }
    }
    return STUCK_NONE;
}

/* A thread blocked for good beside a harness thread that waits with a deadline
 * (libtest's main thread, Go's sysmon): still a deadlock, found in 8 s. */
static void test_deadlock_after_two_idle_samples(void **state)
{
    (void)state;
    struct stuck d;
    stuck_init(&d, 0);
    struct collector_stacks st = snapshot(frames_a, 2, BLOCKED);
    int at = 0;
    assert_int_equal(drive(&d, 0, 0, &st, 30, &at), STUCK_DEADLOCK);
    assert_int_equal(at, 8);
    stuck_free(&d);
}

static void test_loop_needs_three_busy_samples(void **state)
{
    (void)state;
    struct stuck d;
    stuck_init(&d, 0);
    struct collector_stacks st = snapshot(frames_b, 2, RUNS);
    int at = 0;
    assert_int_equal(drive(&d, 0, 100, &st, 30, &at), STUCK_LOOP);
    assert_int_equal(at, 10);
    stuck_free(&d);
}

/* A loop in code without names (a JIT's): what the unwinder finds past it changes
 * from one snapshot to the next, and does not count. */
static void test_loop_in_unnamed_code_ignores_the_frames_past_it(void **state)
{
    (void)state;
    static struct collector_frame jit_a[] = {{.function = NULL}, {.function = NULL},
                                             {.function = "junk_a"}};
    static struct collector_frame jit_b[] = {{.function = NULL}, {.function = NULL},
                                             {.function = "junk_b"}};
    struct stuck d;
    stuck_init(&d, 0);
    char diag[256];
    int64_t cpu = 0;
    enum stuck_verdict v = STUCK_NONE;
    int sec = 2;
    for (; sec <= 30 && v == STUCK_NONE; sec += 2) {
        cpu += 2 * S;
        stuck_cpu(&d, sec * S, cpu);
        struct collector_stacks st = snapshot(sec % 4 ? jit_a : jit_b, 3, RUNS);
        if (stuck_wants_stacks(&d, sec * S))
            v = stuck_stacks(&d, sec * S, &st, diag, sizeof diag);
    }
    assert_int_equal(v, STUCK_LOOP);
    assert_int_equal(sec - 2, 10);
    stuck_free(&d);
    /* one unnamed frame (the vDSO) is followed by a stack that counts */
    static struct collector_frame vdso_a[] = {{.function = NULL}, {.function = "descend"}};
    static struct collector_frame vdso_b[] = {{.function = NULL}, {.function = "main"}};
    stuck_init(&d, 0);
    cpu = 0;
    for (sec = 2; sec <= 30; sec += 2) {
        cpu += 2 * S;
        stuck_cpu(&d, sec * S, cpu);
        struct collector_stacks st = snapshot(sec % 4 ? vdso_a : vdso_b, 2, RUNS);
        if (stuck_wants_stacks(&d, sec * S))
            assert_int_equal(stuck_stacks(&d, sec * S, &st, diag, sizeof diag), STUCK_NONE);
    }
    stuck_free(&d);
}

static void test_half_busy_or_changing_is_not_stuck(void **state)
{
    (void)state;
    struct stuck d;
    stuck_init(&d, 0);
    struct collector_stacks st = snapshot(frames_b, 2, RUNS);
    int at = 0;
    assert_int_equal(drive(&d, 0, 30, &st, 40, &at), STUCK_NONE);
    stuck_free(&d);
    /* stacks that change at every snapshot */
    stuck_init(&d, 0);
    char diag[256];
    int64_t cpu = 0;
    for (int sec = 2; sec <= 40; sec += 2) {
        cpu += 2 * S;
        stuck_cpu(&d, sec * S, cpu);
        struct collector_stacks s2 = snapshot(sec % 4 ? frames_a : frames_b, 2, RUNS);
        if (stuck_wants_stacks(&d, sec * S))
            assert_int_equal(stuck_stacks(&d, sec * S, &s2, diag, sizeof diag), STUCK_NONE);
    }
    assert_string_equal(d.warning, "no output for 40 s, 100% CPU, stacks changing");
    stuck_free(&d);
}

static void test_sleeper_gets_thirty_seconds_and_output_resets(void **state)
{
    (void)state;
    struct stuck d;
    stuck_init(&d, 0);
    struct collector_stacks st = snapshot(frames_a, 2, BLOCKED_WITH_DEADLINE);
    int at = 0;
    assert_int_equal(drive(&d, 0, 0, &st, 60, &at), STUCK_DEADLOCK);
    assert_int_equal(at, 30);
    stuck_free(&d);

    stuck_init(&d, 0);
    st = snapshot(frames_a, 2, BLOCKED);
    char diag[256];
    stuck_cpu(&d, 2 * S, 0);
    stuck_cpu(&d, 6 * S, 0);
    assert_true(stuck_wants_stacks(&d, 6 * S));
    assert_int_equal(stuck_stacks(&d, 6 * S, &st, diag, sizeof diag), STUCK_NONE);
    stuck_output(&d, 7 * S);
    assert_false(stuck_wants_stacks(&d, 8 * S));
    stuck_cpu(&d, 14 * S, 0);
    assert_int_equal(stuck_stacks(&d, 14 * S, &st, diag, sizeof diag), STUCK_NONE);
    assert_int_equal(stuck_stacks(&d, 16 * S, &st, diag, sizeof diag), STUCK_DEADLOCK);
    assert_non_null(strstr(diag, "Deadlock: 0% CPU, identical stacks across 2 samples"));
    stuck_free(&d);
}

/* ---- proc ------------------------------------------------------------------------ */

static void test_spawn_list_and_kill_a_tree(void **state)
{
    (void)state;
    struct test_command c = {0};
    /* sh starts a child that leaves the process group; both wait forever. */
    tcmd_arg(&c, "sh");
    tcmd_arg(&c, "-c");
    tcmd_arg(&c, "setsid sleep 1000 & echo started; exec sleep 1000");
    char marker[64];
    snprintf(marker, sizeof marker, "STROBE_TEST_RUN=unit-%d", (int)getpid());
    pid_t pid;
    int out, err;
    struct strobe_error e;
    assert_int_equal(tproc_spawn(&c, "/", NULL, 0, marker, &pid, &out, &err, &e), 0);
    char buf[64];
    ssize_t n;
    do
        n = read(out, buf, sizeof buf);
    while (n < 0);
    pid_t pids[TPROC_MAX];
    int k = 0;
    for (int tries = 0; tries < 500 && k < 2; tries++) {
        k = tproc_list(pid, marker, pids, TPROC_MAX);
        usleep(10000);
    }
    assert_int_equal(k, 2);
    assert_int_equal(pids[0], pid);
    assert_int_equal(tproc_kill_all(pid, marker), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(tproc_list(pid, marker, pids, TPROC_MAX), 0);
    close(out);
    close(err);
    tcmd_free(&c);

    tcmd_arg(&c, "/nonexistent/runner");
    assert_int_equal(tproc_spawn(&c, "/", NULL, 0, marker, &pid, &out, &err, &e), -1);
    assert_int_equal(e.code, ERR_COMMAND_NOT_FOUND);
    tcmd_free(&c);
}

/* ---- durations ------------------------------------------------------------------- */

static void test_baseline_is_the_mean_of_the_last_ten(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-unit-XXXXXX", path[PATH_MAX];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/strobe.db", dir);
    struct store *s = store_open(path, NULL);
    assert_non_null(s);
    assert_int_equal(store_test_baseline(s, "/p", "t"), -1);
    const char *names[] = {"t", "u"};
    for (int i = 1; i <= 12; i++) {
        int64_t ms[] = {i * 10, 5};
        assert_int_equal(store_test_durations_add(s, "/p", names, ms, 2, i), 0);
    }
    /* 30, 40 ... 120: the last ten */
    assert_int_equal(store_test_baseline(s, "/p", "t"), 75);
    assert_int_equal(store_test_baseline(s, "/p", "u"), 5);
    assert_int_equal(store_test_baseline(s, "/other", "t"), -1);
    store_close(s);
    rm_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_words_and_quotes),
        cmocka_unit_test(test_shell_line_quotes_what_needs_it),
        cmocka_unit_test(test_too_many_arguments_is_flagged),
        cmocka_unit_test(test_location_in_messages),
        cmocka_unit_test(test_report_cases_and_suggestions),
        cmocka_unit_test(test_file_under_test_is_one_that_exists),
        cmocka_unit_test(test_loop_in_unnamed_code_ignores_the_frames_past_it),
        cmocka_unit_test(test_deadlock_after_two_idle_samples),
        cmocka_unit_test(test_loop_needs_three_busy_samples),
        cmocka_unit_test(test_half_busy_or_changing_is_not_stuck),
        cmocka_unit_test(test_sleeper_gets_thirty_seconds_and_output_resets),
        cmocka_unit_test(test_spawn_list_and_kill_a_tree),
        cmocka_unit_test(test_baseline_is_the_mean_of_the_last_ten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
