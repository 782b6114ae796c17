/*
 * test_failure_text.c - unit tests of the runtimes' failure-message parsers
 * (base/failure_text.h): glibc assertions, libstdc++ terminate, Rust panics old and
 * new, sanitizer reports, and text that only looks like them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/failure_text.h"

static void test_assertion_full(void **state)
{
    (void)state;
    struct assertion_info a;
    assert_true(failure_parse_assertion(
        "crash_assert: tests/fixtures/crash_assert.c:22: check_count: Assertion `count > 0' "
        "failed.", &a));
    assert_string_equal(a.expression, "count > 0");
    assert_string_equal(a.file, "tests/fixtures/crash_assert.c");
    assert_int_equal(a.line, 22);
    assert_string_equal(a.function, "check_count");
}

static void test_assertion_without_program_or_function(void **state)
{
    (void)state;
    struct assertion_info a;
    assert_true(failure_parse_assertion("x.c:7: Assertion `p != NULL' failed.", &a));
    assert_string_equal(a.file, "x.c");
    assert_int_equal(a.line, 7);
    assert_string_equal(a.function, "");
    assert_string_equal(a.expression, "p != NULL");
    /* A C++ function name carries colons of its own. */
    assert_true(failure_parse_assertion(
        "app: /src/a.cpp:12: int ns::f(int): Assertion `x' failed.", &a));
    assert_string_equal(a.file, "/src/a.cpp");
    assert_string_equal(a.function, "int ns::f(int)");
}

static void test_not_an_assertion(void **state)
{
    (void)state;
    struct assertion_info a;
    assert_false(failure_parse_assertion("malloc(): corrupted top size", &a));
    assert_false(failure_parse_assertion("Assertion `x' failed.", &a)); /* no file:line */
}

static char *scan(const char *const *lines, size_t n)
{
    static char buf[4096];
    struct strbuf sb = {0};
    failure_scan_stderr(&sb, lines, n);
    snprintf(buf, sizeof buf, "%s", sb.len ? sb.buf : "");
    sb_free(&sb);
    return buf;
}

static void test_cpp_terminate(void **state)
{
    (void)state;
    const char *lines[] = {"loading config",
                           "terminate called after throwing an instance of 'std::runtime_error'",
                           "  what():  config file missing"};
    assert_string_equal(scan(lines, 3), ",\"exception\":{\"type\":\"std::runtime_error\","
                                        "\"what\":\"config file missing\"}");
    const char *bare[] = {"terminate called after throwing an instance of 'int'"};
    assert_string_equal(scan(bare, 1), ",\"exception\":{\"type\":\"int\",\"what\":null}");
}

static void test_rust_panic_formats(void **state)
{
    (void)state;
    const char *now[] = {"thread 'main' (4242) panicked at src/main.rs:23:9:", "bad input: 7",
                         "note: run with `RUST_BACKTRACE=1` environment variable"};
    assert_string_equal(scan(now, 3), ",\"panic\":{\"message\":\"bad input: 7\",\"file\":"
                                      "\"src/main.rs\",\"line\":23,\"column\":9,"
                                      "\"thread\":\"main\"}");
    const char *mid[] = {"thread 'worker' panicked at src/lib.rs:5:1:", "two", "lines"};
    assert_string_equal(scan(mid, 3), ",\"panic\":{\"message\":\"two\\nlines\",\"file\":"
                                      "\"src/lib.rs\",\"line\":5,\"column\":1,"
                                      "\"thread\":\"worker\"}");
    const char *old[] = {"thread '<unnamed>' panicked at 'oops', src/x.rs:3:5"};
    assert_string_equal(scan(old, 1), ",\"panic\":{\"message\":\"oops\",\"file\":"
                                      "\"src/x.rs\",\"line\":3,\"column\":5,"
                                      "\"thread\":\"<unnamed>\"}");
    const char *lookalike[] = {"thread 'main' is fine", "thread 'x' panicked at nowhere"};
    assert_string_equal(scan(lookalike, 2), "");
}

static void test_sanitizer_report(void **state)
{
    (void)state;
    const char *lines[] = {
        "filling 8",
        "=================================================================",
        "==123==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6030 at pc 0x1",
        "WRITE of size 4 at 0x6030 thread T0",
        "SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:28 in fill",
        "Shadow bytes around the buggy address:",
        "==123==ABORTING",
        "after"};
    size_t first, last;
    assert_true(failure_sanitizer_span(lines, 8, &first, &last));
    assert_int_equal(first, 2);
    assert_int_equal(last, 6);
    assert_string_equal(scan(lines, 8),
                        ",\"sanitizer\":{\"tool\":\"AddressSanitizer\",\"report\":"
                        "\"heap-buffer-overflow on address 0x6030 at pc 0x1\",\"summary\":"
                        "\"SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:28 in fill\"}");
    const char *ub[] = {"a.c:3:7: runtime error: signed integer overflow",
                        "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior a.c:3:7"};
    assert_true(failure_sanitizer_span(ub, 2, &first, &last));
    assert_int_equal(first, 0);
    assert_int_equal(last, 1);
    const char *none[] = {"==12==ERROR: nothing to see", "plain"};
    assert_false(failure_sanitizer_span(none, 2, &first, &last));
}

/* faulthandler's dump after a fatal signal: the current thread's frames, the other
 * threads counted; a second process's dump after it is not mixed in, and text that
 * is not a dump gives nothing. */
static void test_python_fatal_error_dump(void **state)
{
    (void)state;
    const char *lines[] = {
        "reading",
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f0c0cbff6c0 (most recent call first):",
        "  File \"/usr/lib/python3.11/threading.py\", line 327 in wait",
        "",
        "Current thread 0x00007f0c11c47040 (most recent call first):",
        "  File \"/p/a \\ b.py\", line 7 in read_record",
        "  File \"/p/native.py\", line 12 in main",
        "  File \"/p/native.py\", line 15 in <module>",
        "",
        "Extension modules: _ctypes (total: 1)",
        "Fatal Python error: Aborted",
        "Current thread 0x1 (most recent call first):",
        "  File \"/q/other.py\", line 1 in f",
    };
    struct strbuf sb = {0};
    failure_scan_python(&sb, lines, sizeof lines / sizeof *lines, 2);
    assert_string_equal(sb.buf, ",\"python\":{\"error\":\"Segmentation fault\",\"frames\":["
                                "{\"function\":\"read_record\",\"file\":\"/p/a \\\\ b.py\","
                                "\"line\":7},{\"function\":\"main\","
                                "\"file\":\"/p/native.py\",\"line\":12}],\"otherThreads\":1}");
    sb_free(&sb);
    const char *plain[] = {"Segmentation fault", "  File \"x.py\", line 1 in f"};
    failure_scan_python(&sb, plain, 2, 8);
    assert_null(sb.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assertion_full),
        cmocka_unit_test(test_assertion_without_program_or_function),
        cmocka_unit_test(test_not_an_assertion),
        cmocka_unit_test(test_cpp_terminate),
        cmocka_unit_test(test_rust_panic_formats),
        cmocka_unit_test(test_sanitizer_report),
        cmocka_unit_test(test_python_fatal_error_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
