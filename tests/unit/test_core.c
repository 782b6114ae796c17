/*
 * test_core.c - unit tests of the engine's pure pieces: output line splitting and
 * UTF-8 escaping, session ids, the settings layers, time bounds, pattern syntax.
 */
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

#include "base/linesplit.h"
#include "core/patterns.h"
#include "base/session_id.h"
#include "core/settings.h"
#include "base/timearg.h"

/* ---- linesplit ---- */

struct lines {
    int n;
    char text[16][256];
    size_t len[16];
};

static void collect(void *arg, const char *line, size_t len)
{
    struct lines *l = arg;
    assert_true(l->n < 16);
    snprintf(l->text[l->n], sizeof l->text[0], "%.*s", (int)(len < 255 ? len : 255), line);
    l->len[l->n++] = len;
}

static void test_lines_split_and_partial(void **state)
{
    (void)state;
    static struct linesplit ls;
    struct lines l = {0};
    linesplit_feed(&ls, "hel", 3, collect, &l);
    assert_int_equal(l.n, 0);
    linesplit_feed(&ls, "lo\nwor", 6, collect, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.text[0], "hello");
    linesplit_feed(&ls, "ld\r\n\n", 5, collect, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.text[1], "world");
    assert_string_equal(l.text[2], "");
    linesplit_feed(&ls, "tail", 4, collect, &l);
    assert_true(linesplit_flush(&ls, collect, &l));
    assert_string_equal(l.text[3], "tail");
    assert_false(linesplit_flush(&ls, collect, &l));
}

static void test_lines_long_line_is_cut(void **state)
{
    (void)state;
    static struct linesplit ls;
    struct lines l = {0};
    size_t n = LINESPLIT_MAX + 10;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = '\n';
    linesplit_feed(&ls, big, n + 1, collect, &l);
    free(big);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.len[0], LINESPLIT_MAX);
    assert_int_equal(l.len[1], 10);
}

static void test_utf8_sanitize(void **state)
{
    (void)state;
    char out[64];
    /* valid 2-, 3- and 4-byte sequences pass through */
    const char *ok = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
    assert_int_equal(utf8_sanitize(ok, strlen(ok), out), strlen(ok));
    assert_string_equal(out, ok);
    /* invalid byte, NUL, truncated sequence, overlong, surrogate */
    const char bad[] = {'a', (char)0xFF, 0, 'b', (char)0xC3};
    utf8_sanitize(bad, sizeof bad, out);
    assert_string_equal(out, "a\\xFF\\x00b\\xC3");
    utf8_sanitize("\xC0\xAF", 2, out);
    assert_string_equal(out, "\\xC0\\xAF");
    utf8_sanitize("\xED\xA0\x80", 3, out);
    assert_string_equal(out, "\\xED\\xA0\\x80");
}

static void test_utf8_describe_invalid(void **state)
{
    (void)state;
    char out[256];
    const char *ok = "{\"command\":\"caf\xC3\xA9\"}";
    assert_int_equal(utf8_first_invalid(ok, strlen(ok)), strlen(ok));
    assert_false(utf8_describe_invalid(ok, strlen(ok), out, sizeof out));
    /* the bad byte, its offset, the JSON string around it */
    const char *bad = "{\"command\":\"/tmp/t\xFF\",\"args\":[]}";
    assert_int_equal(utf8_first_invalid(bad, strlen(bad)), 18);
    assert_true(utf8_describe_invalid(bad, strlen(bad), out, sizeof out));
    assert_string_equal(out, "byte 0xFF at offset 18, in \"/tmp/t\\xFF\"");
    /* a long string is cut around the byte, the cuts marked */
    char longer[256];
    snprintf(longer, sizeof longer, "[\"%s\xFE%s\"]", "0123456789012345678901234567890123456789"
             "0123456789012345678901234567890123456789", "abcdefghijklmnopqrstuvwxyzabcdefghijklm"
             "nopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
    assert_true(utf8_describe_invalid(longer, strlen(longer), out, sizeof out));
    assert_string_equal(out, "byte 0xFE at offset 82, in \"...0123456789012345678901234567890"
                        "123456789\\xFEabcdefghijklmnopqrst...\"");
}

static void test_multibyte_across_reads(void **state)
{
    (void)state;
    static struct linesplit ls;
    struct lines l = {0};
    linesplit_feed(&ls, "\xC3", 1, collect, &l);
    linesplit_feed(&ls, "\xA9\n", 2, collect, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.text[0], "\xC3\xA9");
}

/* ---- session ids ---- */

static int taken_count;
static int taken_first_n(void *arg, const char *id)
{
    (void)id;
    return taken_count++ < *(int *)arg;
}

static void test_session_id_format_and_collisions(void **state)
{
    (void)state;
    struct tm tm = {.tm_year = 126, .tm_mon = 1, .tm_mday = 5, .tm_hour = 14, .tm_min = 32,
                    .tm_isdst = -1};
    time_t when = mktime(&tm);
    char id[SESSION_ID_MAX];
    int busy = 0;
    taken_count = 0;
    assert_int_equal(session_id_make("/home/u/proj/myapp", when, taken_first_n, &busy, id), 0);
    assert_string_equal(id, "myapp-2026-02-05-14h32");
    busy = 2;
    taken_count = 0;
    assert_int_equal(session_id_make("/x/my app!", when, taken_first_n, &busy, id), 0);
    assert_string_equal(id, "my-app--2026-02-05-14h32-3");
}

/* ---- settings ---- */

static char tmpdir[PATH_MAX];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_settings_layers(void **state)
{
    (void)state;
    char global[PATH_MAX + 32], project_dir[PATH_MAX + 32], project[PATH_MAX + 64];
    snprintf(global, sizeof global, "%s/settings.json", tmpdir);
    snprintf(project_dir, sizeof project_dir, "%s/.strobe", tmpdir);
    snprintf(project, sizeof project, "%s/settings.json", project_dir);
    mkdir(project_dir, 0700);

    struct settings s;
    settings_load(&s, NULL, NULL);
    assert_int_equal(s.events_max_per_session, 200000);
    assert_int_equal(s.test_status_retry_ms, 5000);
    assert_int_equal(s.output_order_at_traps, 1);
    assert_int_equal(s.hot_calls_per_second, 100000); /* spec 002's rate */
    assert_int_equal(s.sample_after, 5000);
    assert_int_equal(s.overhead_budget_percent, 50);
    assert_int_equal(s.trace_mode, TRACE_MODE_FAST);
    assert_int_equal(s.n_warnings, 0);

    write_file(global, "{\"events.maxPerSession\": 500000, \"test.statusRetryMs\": 1000}");
    write_file(project, "{\"events.maxPerSession\": 1000}");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.events_max_per_session, 1000);  /* project wins */
    assert_int_equal(s.test_status_retry_ms, 1000);    /* global kept */
    assert_int_equal(s.n_warnings, 0);

    write_file(project, "{\"events.maxPerSession\": 0, \"test.statusRetryMs\": \"x\", "
                        "\"bogus\": 1, \"output.maxBytesPerSession\": 2048.5}");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.events_max_per_session, 500000); /* bad value: lower layer kept */
    assert_int_equal(s.test_status_retry_ms, 1000);
    assert_int_equal(s.output_max_bytes, 50 * 1024 * 1024);
    assert_int_equal(s.n_warnings, 4);
    assert_non_null(strstr(s.warnings[0], "events.maxPerSession"));
    assert_non_null(strstr(s.warnings[2], "unknown setting 'bogus'"));

    write_file(project, "{\"trace.overheadBudgetPercent\": 0, \"trace.sampleAfter\": 0}");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.overhead_budget_percent, 50); /* 1..100: 100 is "no budget" */
    assert_int_equal(s.sample_after, 0);             /* sample from the first call */
    assert_int_equal(s.n_warnings, 1);
    assert_non_null(strstr(s.warnings[0], "trace.overheadBudgetPercent"));

    write_file(project, "{\"trace.mode\": \"int3\"}");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.trace_mode, TRACE_MODE_INT3);
    assert_int_equal(s.n_warnings, 0);
    write_file(global, "{\"trace.mode\": \"int3\"}");
    write_file(project, "{\"trace.mode\": \"turbo\", \"trace.pinCpu\": \"fast\"}");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.trace_mode, TRACE_MODE_INT3); /* a word it does not know: the
                                                        lower layer's value stays */
    assert_int_equal(s.n_warnings, 2);
    assert_non_null(strstr(s.warnings[0], "'trace.mode' must be one of \"int3\", \"fast\""));
    assert_non_null(strstr(s.warnings[1], "trace.pinCpu"));

    write_file(project, "{not json");
    settings_load(&s, global, tmpdir);
    assert_int_equal(s.n_warnings, 1);
    assert_non_null(strstr(s.warnings[0], "not a JSON object"));
    unlink(project);
    unlink(global);
    rmdir(project_dir);
}

/* ---- time bounds ---- */

static void test_timearg(void **state)
{
    (void)state;
    int64_t ns;
    bool rel;
    assert_int_equal(timearg_parse("-5s", &ns, &rel), 0);
    assert_true(rel);
    assert_int_equal(ns, -5000000000LL);
    assert_int_equal(timearg_parse("-500ms", &ns, &rel), 0);
    assert_int_equal(ns, -500000000LL);
    assert_int_equal(timearg_parse("-1m", &ns, &rel), 0);
    assert_int_equal(ns, -60000000000LL);
    assert_int_equal(timearg_parse("1500", &ns, &rel), 0);
    assert_false(rel);
    assert_int_equal(ns, 1500);
    assert_int_equal(timearg_parse("2s", &ns, &rel), 0);
    assert_false(rel);
    assert_int_equal(ns, 2000000000LL);
    assert_int_equal(timearg_parse("-5", &ns, &rel), -1);
    assert_int_equal(timearg_parse("soon", &ns, &rel), -1);
    assert_int_equal(timearg_parse("-5parsecs", &ns, &rel), -1);
    assert_int_equal(timearg_parse("", &ns, &rel), -1);
    assert_int_equal(timearg_parse("-1.5s", &ns, &rel), 0);
    assert_int_equal(ns, -1500000000LL);
    /* Strict: no blanks, no NaN/inf, exponents, hex, signs or fractions of a ns, and
     * nothing at or beyond 2^63 ns. */
    static const char *const bad[] = {" 5", "5 ", "NaN", "nan", "inf", "-infs", "1e3",
                                      "0x10", "+5", "1.5", "1.s", ".5s", "--5s",
                                      "9223372036854775808", "3000000h", "5 s"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (timearg_parse(bad[i], &ns, &rel) != -1)
            fail_msg("'%s' was accepted", bad[i]);
    assert_int_equal(timearg_parse("9223372036854775807", &ns, &rel), 0);
    assert_int_equal(ns, INT64_MAX);
}

/* ---- patterns ---- */

static void test_pattern_syntax(void **state)
{
    (void)state;
    struct strobe_error e;
    const char *good[] = {"foo::bar", "foo::*", "foo::**", "*::validate", "auth::**::validate",
                          "@usercode", "@file:foo.cpp", "std::vector<a::b>::push_back", "main"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(pattern_check(good[i], &e), 0);
    const char *bad[] = {"", "@user", "@file:", "a::***", "a b", "vec<int", "a>", "ns::",
                         "a:::b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(pattern_check(bad[i], &e), -1);
        assert_int_equal(e.code, ERR_INVALID_PATTERN);
        assert_non_null(strstr(e.msg, "Invalid trace pattern"));
    }
}

static void test_pending_patterns(void **state)
{
    (void)state;
    struct strobe_error e;
    char list[4][PATTERN_MAX_LEN];
    assert_int_equal(patterns_pending_add("a::*", &e), 0);
    assert_int_equal(patterns_pending_add("a::*", &e), 0);
    assert_int_equal(patterns_pending_add("b", &e), 0);
    assert_int_equal(patterns_pending_list(list, 4), 2);
    patterns_pending_remove("a::*");
    patterns_pending_remove("absent");
    assert_int_equal(patterns_pending_list(list, 4), 1);
    assert_string_equal(list[0], "b");
    assert_int_equal(patterns_pending_add("@nope", &e), -1);
    patterns_pending_remove("b");
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/strobe-unit-XXXXXX", base);
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_split_and_partial),
        cmocka_unit_test(test_lines_long_line_is_cut),
        cmocka_unit_test(test_utf8_sanitize),
        cmocka_unit_test(test_utf8_describe_invalid),
        cmocka_unit_test(test_multibyte_across_reads),
        cmocka_unit_test(test_session_id_format_and_collisions),
        cmocka_unit_test(test_settings_layers),
        cmocka_unit_test(test_timearg),
        cmocka_unit_test(test_pattern_syntax),
        cmocka_unit_test(test_pending_patterns),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmpdir);
    return failed;
}
