/*
 * test_crash.c - crash capture (ptrace/tracer/crash.c) on real failing programs.
 *
 * Through the tracer: each crash fixture (tests/fixtures/crash_*.c, abort.c, the C++
 * and Rust ones) runs under a real tracer (tests/unit/traced.h), and the one crash
 * event it leaves in the session's ring is read back and its data JSON parsed: the
 * signal, its code and fault address, the headline, the frames with function names,
 * files and lines, the arguments of the program's frames, the locals of the crashing
 * frame, the registers, and the language-level kind (assertion, uncaught C++
 * exception, Rust panic, sanitizer death); the program then dies as it would have
 * (or its own handler runs). The facts asserted are those each fixture's top comment
 * records (checked there against gdb), lines from its "CRASH HERE" marker; the same
 * facts tests/e2e/test_crash.py asserts through MCP.
 *
 * Directly: crash.h on a process this test traces itself (crash_null, PTRACE_TRACEME
 * and exec): a fault repeated at the same place is recorded once, signals that are
 * not crashes are ignored, a process records at most CRASH_MAX_PER_PROCESS crashes,
 * and a process's end forgets its count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace/tracer/crash.h"
#include "fixtures.h"
#include "traced.h"

/* ---- reading a crash event ----------------------------------------------------------- */

struct crash_run {
    struct traced tr;
    int status;             /* how the program ended */
    const struct tev *ev;   /* its one crash event */
    cJSON *d;               /* the event's data */
    char first_line[256];   /* the first line it printed on stdout */
};

static void free_json(void *d)
{
    cJSON_Delete(d);
}

/* Runs fixture name to its end and parses its one crash event. */
static void run_crash(struct crash_run *r, const char *name)
{
    traced_start(&r->tr, name, NULL, NULL);
    r->first_line[0] = '\0';
    if (fgets(r->first_line, sizeof r->first_line, r->tr.out))
        r->first_line[strcspn(r->first_line, "\n")] = '\0';
    r->status = traced_wait_exit(&r->tr);
    traced_drain(&r->tr);
    assert_int_equal(traced_count(&r->tr, EV_CRASH), 1);
    r->ev = traced_event(&r->tr, EV_CRASH, 0);
    r->d = cJSON_Parse(r->ev->data);
    if (!r->d)
        fail_msg("the crash data is not JSON: %s", r->ev->data);
    r->tr.on_end = free_json;
    r->tr.on_end_arg = r->d;
}

static void crash_done(struct crash_run *r)
{
    traced_end(&r->tr);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v))
        fail_msg("no string %s in %s", key, cJSON_PrintUnformatted(o));
    return v->valuestring;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("no number %s", key);
    return v->valuedouble;
}

static bool has(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key) != NULL;
}

/* Shown frame number `index` (omitted-frame markers have none). */
static const cJSON *frame(const cJSON *d, int index)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(d, "frames"))
        if (has(f, "index") && (int)num(f, "index") == index)
            return f;
    fail_msg("no frame %d", index);
    return NULL;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void assert_frame(const cJSON *f, const char *fn, const char *file, int line)
{
    assert_string_equal(str(f, "function"), fn);
    assert_string_equal(base_name(str(f, "file")), file);
    assert_int_equal((int)num(f, "line"), line);
}

/* The entry named name of a frame's "arguments" (or of the crash's "locals"). */
static const cJSON *var(const cJSON *list, const char *name)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, list)
        if (!strcmp(str(v, "name"), name))
            return cJSON_GetObjectItemCaseSensitive(v, "value");
    fail_msg("no variable %s", name);
    return NULL;
}

static const cJSON *arg(const cJSON *f, const char *name)
{
    return var(cJSON_GetObjectItemCaseSensitive(f, "arguments"), name);
}

static int arg_count(const cJSON *f)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "arguments"));
}

/* The position of the first frame named fn, -1 when none. */
static int frame_named(const cJSON *d, const char *fn)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(d, "frames"))
        if (has(f, "function") && cJSON_IsString(cJSON_GetObjectItem(f, "function")) &&
            !strcmp(str(f, "function"), fn))
            return (int)num(f, "index");
    return -1;
}

/* The line of `text` in fn's source (a call site, for the frames above the crash). */
static int line_of(struct crash_run *r, const char *fn, const char *text)
{
    return source_line(r->tr.path, fn, text, false);
}

static int crash_here(struct crash_run *r, const char *fn)
{
    return marked_line(r->tr.path, fn, "CRASH HERE");
}

/* ---- signals ------------------------------------------------------------------------- */

static void test_null_dereference_three_calls_deep(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_null");
    assert_string_equal(r.first_line, "processing order 42");
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSEGV); /* delivered after the capture */
    int line = crash_here(&r, "read_field");

    assert_int_equal(r.ev->pid, r.tr.pid);
    assert_int_equal(r.ev->tid, r.tr.pid);
    assert_string_equal(r.ev->function, "read_field");
    assert_int_equal(r.ev->line, line);
    assert_string_equal(base_name(r.ev->file), "crash_null.c");
    char text[128];
    snprintf(text, sizeof text, "SIGSEGV (SEGV_MAPERR) at address 0x0 in read_field "
             "(crash_null.c:%d)", line);
    assert_string_equal(r.ev->text, text);

    assert_string_equal(str(r.d, "kind"), "signal");
    assert_string_equal(str(r.d, "signal"), "SIGSEGV");
    assert_int_equal((int)num(r.d, "signalNumber"), SIGSEGV);
    assert_string_equal(str(r.d, "signalCode"), "SEGV_MAPERR");
    assert_string_equal(str(r.d, "faultAddress"), "0x0");
    assert_false(has(r.d, "stackOverflow"));
    assert_false(has(r.d, "handlerInstalled"));
    assert_int_equal((int)num(r.d, "crashFrame"), 0);

    const cJSON *f0 = frame(r.d, 0), *f1 = frame(r.d, 1), *f2 = frame(r.d, 2);
    assert_frame(f0, "read_field", "crash_null.c", line);
    assert_frame(f1, "validate", "crash_null.c", line_of(&r, "validate", "return read_field("));
    assert_frame(f2, "process_order", "crash_null.c",
                 line_of(&r, "process_order", "return validate("));
    assert_frame(frame(r.d, 3), "main", "crash_null.c",
                 line_of(&r, "main", "return process_order("));
    assert_true(str(f0, "module")[0] == '/');
    assert_true(cJSON_IsNull(arg(f0, "n")));
    assert_int_equal((int)arg(f0, "depth")->valuedouble, 2);
    const cJSON *o = arg(f1, "o");
    assert_int_equal((int)num(o, "id"), 42);
    assert_string_equal(str(o, "customer"), "bob");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "items")));
    assert_int_equal((int)arg(f1, "strict")->valuedouble, 1);
    assert_int_equal((int)arg(f2, "id")->valuedouble, 42);

    /* The crashing frame's locals, in declaration order, with their types (qualifiers
     * are left out of type names: owner is a const char *). */
    const cJSON *locals = cJSON_GetObjectItemCaseSensitive(r.d, "locals");
    static const char *const names[] = {"count", "ratio", "label", "owner", "origin",
                                        "cursor", "state"};
    static const char *const types[] = {"int", "double", "char[16]", "char *",
                                        "struct point", "struct node *", "enum order_state"};
    assert_int_equal(cJSON_GetArraySize(locals), 7);
    for (int i = 0; i < 7; i++) {
        const cJSON *v = cJSON_GetArrayItem(locals, i);
        assert_string_equal(str(v, "name"), names[i]);
        assert_string_equal(str(v, "type"), types[i]);
    }
    assert_int_equal((int)var(locals, "count")->valuedouble, 3);
    assert_true(var(locals, "ratio")->valuedouble == 0.75);
    assert_string_equal(var(locals, "label")->valuestring, "widget");
    assert_string_equal(var(locals, "owner")->valuestring, "alice");
    assert_int_equal((int)num(var(locals, "origin"), "x"), 4);
    assert_int_equal((int)num(var(locals, "origin"), "y"), -2);
    assert_true(cJSON_IsNull(var(locals, "cursor")));
    assert_string_equal(var(locals, "state")->valuestring, "STATE_PAID");

    /* The registers as the thread stopped: the first frame's pc is rip. */
    const cJSON *regs = cJSON_GetObjectItemCaseSensitive(r.d, "registers");
    assert_string_equal(str(regs, "rip"), str(f0, "pc"));
    assert_true(has(regs, "rsp") && has(regs, "rbp") && has(regs, "fs_base"));
    crash_done(&r);
}

static void test_division_by_zero(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_divzero");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGFPE);
    assert_string_equal(str(r.d, "signal"), "SIGFPE");
    assert_string_equal(str(r.d, "signalCode"), "FPE_INTDIV");
    /* SIGFPE's address is the faulting instruction's. */
    const cJSON *regs = cJSON_GetObjectItemCaseSensitive(r.d, "registers");
    assert_string_equal(str(r.d, "faultAddress"), str(regs, "rip"));
    const cJSON *f0 = frame(r.d, 0);
    assert_frame(f0, "average", "crash_divzero.c", crash_here(&r, "average"));
    assert_frame(frame(r.d, 1), "main", "crash_divzero.c", line_of(&r, "main", "return average("));
    assert_int_equal((int)arg(f0, "total")->valuedouble, 30);
    assert_int_equal((int)arg(f0, "n")->valuedouble, 0);
    assert_int_equal(arg_count(f0), 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.d, "locals")), 0);
    crash_done(&r);
}

static void test_stack_overflow(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_stack_overflow");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.d, "stackOverflow")));
    int body = crash_here(&r, "recurse");
    int call = line_of(&r, "recurse", "return recurse(");
    assert_frame(frame(r.d, 0), "recurse", "crash_stack_overflow.c", body);
    assert_frame(frame(r.d, 1), "recurse", "crash_stack_overflow.c", call);
    /* Cut in the middle: its start, main, stays visible, with the true numbering. */
    int total = (int)num(r.d, "framesTotal");
    assert_true(total > 100);
    bool omitted = false;
    const cJSON *f, *last = NULL;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(r.d, "frames")) {
        omitted |= has(f, "omittedFrames");
        last = f;
    }
    assert_true(omitted);
    assert_int_equal((int)num(last, "index"), total - 1);
    assert_true(frame_named(r.d, "main") > 100);
    crash_done(&r);
}

static void test_own_handler_still_runs(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_handler");
    /* The handler ran (exit 42); the fault was still recorded, once. */
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 42);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.d, "handlerInstalled")));
    assert_string_equal(str(r.d, "faultAddress"), "0x0");
    const cJSON *f0 = frame(r.d, 0);
    assert_frame(f0, "faulty", "crash_handler.c", crash_here(&r, "faulty"));
    assert_true(cJSON_IsNull(arg(f0, "p")));
    crash_done(&r);
}

static void test_crash_in_a_second_thread(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_thread");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV);
    assert_int_equal(r.ev->pid, r.tr.pid);
    assert_int_not_equal(r.ev->tid, r.tr.pid);
    assert_string_equal(r.ev->thread_name, "worker");
    assert_string_equal(str(r.d, "faultAddress"), "0x8"); /* offsetof(struct job, size) */
    const cJSON *f0 = frame(r.d, 0);
    assert_frame(f0, "parse_job", "crash_thread.c", crash_here(&r, "parse_job"));
    assert_frame(frame(r.d, 1), "worker_main", "crash_thread.c",
                 line_of(&r, "worker_main", "return (void *)parse_job("));
    assert_true(cJSON_IsNull(arg(f0, "job")));
    assert_int_equal((int)arg(f0, "retries")->valuedouble, 7);
    assert_int_equal((int)var(cJSON_GetObjectItem(r.d, "locals"), "attempt")->valuedouble, 2);
    crash_done(&r);
}

/* abort() with no message of glibc's: a plain signal, sent by the process itself. */
static void test_abort_is_a_signal_sent_by_itself(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "abort");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
    assert_string_equal(str(r.d, "kind"), "signal");
    assert_string_equal(str(r.d, "signal"), "SIGABRT");
    assert_string_equal(str(r.d, "signalCode"), "SI_TKILL");
    assert_false(has(r.d, "faultAddress"));
    assert_false(has(r.d, "abortMessage"));
    const cJSON *sender = cJSON_GetObjectItem(r.d, "sender");
    assert_int_equal((int)num(sender, "pid"), r.tr.pid);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sender, "self")));
    /* The crashing frame is the program's own: main, under libc's abort. */
    int main_at = (int)num(r.d, "crashFrame");
    assert_string_equal(str(frame(r.d, main_at), "function"), "main");
    assert_true(frame_named(r.d, "abort") >= 0 && frame_named(r.d, "abort") < main_at);
    assert_string_equal(r.ev->function, "main");
    assert_int_equal(strncmp(r.ev->text, "SIGABRT (SI_TKILL) in main (abort.c:", 36), 0);
    crash_done(&r);
}

/* ---- language-level failures -------------------------------------------------------- */

static void test_assertion_failure(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_assert");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
    int line = crash_here(&r, "check_count");
    assert_string_equal(str(r.d, "kind"), "assertion");
    assert_string_equal(str(r.d, "signal"), "SIGABRT");
    const cJSON *a = cJSON_GetObjectItem(r.d, "assertion");
    assert_string_equal(str(a, "expression"), "count > 0");
    assert_string_equal(base_name(str(a, "file")), "crash_assert.c");
    assert_int_equal((int)num(a, "line"), line);
    assert_string_equal(str(a, "function"), "check_count");
    char msg[128];
    snprintf(msg, sizeof msg, "crash_assert.c:%d: check_count: Assertion `count > 0' failed.",
             line);
    const char *abort_msg = str(r.d, "abortMessage");
    assert_true(strlen(abort_msg) > strlen(msg));
    assert_string_equal(abort_msg + strlen(abort_msg) - strlen(msg), msg);
    snprintf(msg, sizeof msg, "assertion `count > 0' failed in check_count (crash_assert.c:%d)",
             line);
    assert_string_equal(r.ev->text, msg);
    /* The crashing frame is the program's, below libc's. */
    int ci = (int)num(r.d, "crashFrame");
    const cJSON *f = frame(r.d, ci);
    assert_frame(f, "check_count", "crash_assert.c", line);
    assert_int_equal((int)arg(f, "count")->valuedouble, 0);
    int fail_at = frame_named(r.d, "__assert_fail");
    assert_true(frame_named(r.d, "abort") >= 0);
    assert_true(fail_at >= 0 && fail_at < ci && ci < frame_named(r.d, "main"));
    crash_done(&r);
}

static void test_uncaught_cpp_exception(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_uncaught");
    assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
    assert_string_equal(str(r.d, "kind"), "uncaught_exception");
    int line = crash_here(&r, "load_config");
    char text[128];
    snprintf(text, sizeof text, "uncaught C++ exception in load_config (crash_uncaught.cpp:%d)",
             line);
    assert_string_equal(r.ev->text, text);
    int ci = (int)num(r.d, "crashFrame");
    assert_frame(frame(r.d, ci), "load_config", "crash_uncaught.cpp", line);
    int terminate = frame_named(r.d, "std::terminate"), thrown = frame_named(r.d, "__cxa_throw");
    assert_true(terminate >= 0 && terminate < thrown && thrown < ci);
    crash_done(&r);
}

/* A panic unwinds and exits 101: no signal ever comes; the panic's breakpoint
 * records it. */
static void test_rust_panic(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_panic");
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 101);
    assert_string_equal(str(r.d, "kind"), "panic");
    assert_false(has(r.d, "signal"));
    int line = crash_here(&r, "crash_panic::parse_input");
    assert_string_equal(r.ev->function, "crash_panic::parse_input");
    assert_int_equal(r.ev->line, line);
    int ci = (int)num(r.d, "crashFrame");
    const cJSON *f = frame(r.d, ci);
    assert_frame(f, "crash_panic::parse_input", "crash_panic.rs", line);
    assert_int_equal((int)arg(f, "x")->valuedouble, 7);
    assert_frame(frame(r.d, ci + 1), "crash_panic::main", "crash_panic.rs",
                 line_of(&r, "crash_panic::main", "let parsed = parse_input("));
    crash_done(&r);
}

/* AddressSanitizer reports and calls _exit(1) from its runtime: recorded at the exit. */
static void test_sanitizer_death(void **state)
{
    (void)state;
    static struct crash_run r;
    run_crash(&r, "crash_asan");
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 1);
    assert_string_equal(str(r.d, "kind"), "sanitizer");
    assert_false(has(r.d, "signal"));
    assert_string_equal(r.ev->function, "fill");
    assert_int_equal(r.ev->line, crash_here(&r, "fill"));
    const cJSON *f = frame(r.d, (int)num(r.d, "crashFrame"));
    assert_int_equal((int)arg(f, "n")->valuedouble, 8);
    crash_done(&r);
}

/* ---- crash.h without the tracer: counting ------------------------------------------- */

/* Starts fixture name traced by this thread, stopped at its exec. */
static pid_t spawn_traced(const char *name)
{
    const char *path = fixture(name);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        char *argv[] = {(char *)path, NULL}, *envp[] = {NULL};
        execve(path, argv, envp);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);
    return pid;
}

/* Continues pid with signal sig (0: none) until its next stop; the signal it stops
 * for. */
static int next_stop(pid_t pid, int sig)
{
    int status;
    assert_int_equal(ptrace(PTRACE_CONT, pid, 0, sig), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSTOPPED(status));
    return WSTOPSIG(status);
}

static void test_counting_repeats_and_the_limit(void **state)
{
    (void)state;
    struct traced tr; /* its ring only */
    traced_init(&tr);
    struct crash_config cfg = {.sink = traced_sink(&tr)};
    struct crash *c = crash_new(&cfg);
    assert_non_null(c);
    pid_t pid = spawn_traced("crash_null");
    assert_int_equal(next_stop(pid, 0), SIGSEGV);
    crash_on_signal(c, pid, SIGSEGV);
    assert_int_equal(crash_count(c), 1);

    /* The signal withheld, the instruction faults again: the same fault, not recorded. */
    assert_int_equal(next_stop(pid, 0), SIGSEGV);
    crash_on_signal(c, pid, SIGSEGV);
    assert_int_equal(crash_count(c), 1);
    /* Not a crash signal. */
    syscall(SYS_tgkill, pid, pid, SIGUSR1);
    assert_int_equal(next_stop(pid, 0), SIGUSR1);
    crash_on_signal(c, pid, SIGUSR1);
    assert_int_equal(crash_count(c), 1);

    /* A SIGBUS sent in between makes the next fault a new one; a process records at
     * most CRASH_MAX_PER_PROCESS. */
    for (int i = 0; i < CRASH_MAX_PER_PROCESS + 4; i++) {
        syscall(SYS_tgkill, pid, pid, SIGBUS);
        assert_int_equal(next_stop(pid, 0), SIGBUS);
        crash_on_signal(c, pid, SIGBUS);
        assert_int_equal(next_stop(pid, 0), SIGSEGV);
        crash_on_signal(c, pid, SIGSEGV);
    }
    assert_int_equal(crash_count(c), CRASH_MAX_PER_PROCESS);
    traced_drain(&tr);
    assert_int_equal(traced_count(&tr, EV_CRASH), CRASH_MAX_PER_PROCESS);
    const struct tev *bus = traced_event(&tr, EV_CRASH, 1);
    char want[96];
    snprintf(want, sizeof want, "SIGBUS (SI_TKILL) sent by pid %d in read_field (crash_null.c:",
             (int)getpid());
    assert_int_equal(strncmp(bus->text, want, strlen(want)), 0);
    snprintf(want, sizeof want, "\"sender\":{\"pid\":%d,\"uid\":%u}", (int)getpid(),
             (unsigned)getuid());
    assert_non_null(strstr(bus->data, want));
    assert_string_equal(bus->function, "read_field");

    /* A process's end forgets it: a pid seen again starts from nothing. */
    crash_on_process_exit(c, pid);
    crash_on_signal(c, pid, SIGSEGV);
    assert_int_equal(crash_count(c), CRASH_MAX_PER_PROCESS + 1);

    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    crash_free(c);
    traced_release(&tr);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        traced_test(test_null_dereference_three_calls_deep),
        traced_test(test_division_by_zero),
        traced_test(test_stack_overflow),
        traced_test(test_own_handler_still_runs),
        traced_test(test_crash_in_a_second_thread),
        traced_test(test_abort_is_a_signal_sent_by_itself),
        traced_test(test_assertion_failure),
        traced_test(test_uncaught_cpp_exception),
        traced_test(test_rust_panic),
        traced_test(test_sanitizer_death),
        traced_test(test_counting_repeats_and_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
