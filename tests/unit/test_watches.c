/*
 * test_watches.c - the pure parts of memory polls and trace watches: a poll's
 * sample count and snapshot shape (core/poll.h), watch labels and checks
 * (core/collector.h, core/trace_watches.h), `on` scoping and hint formatting
 * (ptrace/vars/twatch.h), debug_memory's address parsing (mcp/mem_targets.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/poll.h"
#include "core/trace_watches.h"
#include "mcp/mem_targets.h"
#include "dwarf/value.h"
#include "ptrace/vars/twatch.h"
#include "ptrace/vars/varres.h"

static void test_expected_samples(void **state)
{
    (void)state;
    assert_int_equal(poll_expected_samples(100, 2000), 20);
    assert_int_equal(poll_expected_samples(100, 1050), 11);
    assert_int_equal(poll_expected_samples(5000, 100), 1);
    assert_int_equal(poll_expected_samples(50, 30000), 600);
}

static void test_snapshot_format(void **state)
{
    (void)state;
    struct collector_mem_result r[3] = {
        {.target = "gTempo", .value = "120.5"},
        {.target = "cfg.max_retries", .value = "3"},
        {.target = "p->x", .error = ERR_MEMORY_UNREADABLE,
         .error_message = "pointer p is NULL"},
    };
    struct strbuf data = {0}, text = {0};
    poll_snapshot_format(r, 3, &data, &text);
    assert_string_equal(data.buf, "{\"values\":{\"gTempo\":120.5,\"cfg.max_retries\":3},"
                                  "\"errors\":{\"p->x\":\"MEMORY_UNREADABLE: pointer p "
                                  "is NULL\"}}");
    assert_string_equal(text.buf, "gTempo=120.5 cfg.max_retries=3 p->x=<MEMORY_UNREADABLE>");
    sb_free(&data);
    sb_free(&text);

    /* no errors: no "errors" member */
    poll_snapshot_format(r, 1, &data, &text);
    assert_string_equal(data.buf, "{\"values\":{\"gTempo\":120.5}}");
    sb_free(&data);
    sb_free(&text);
}

static void test_snapshot_bounds(void **state)
{
    (void)state;
    static char big[POLL_VALUE_JSON_MAX + 10];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct collector_mem_result r[MEMORY_MAX_TARGETS];
    char names[MEMORY_MAX_TARGETS][16];
    for (int i = 0; i < MEMORY_MAX_TARGETS; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        r[i] = (struct collector_mem_result){.target = names[i], .value = big};
    }
    struct strbuf data = {0}, text = {0};
    poll_snapshot_format(r, MEMORY_MAX_TARGETS, &data, &text);
    assert_null(strstr(data.buf, big));           /* replaced by a note */
    assert_non_null(strstr(data.buf, "characters of JSON"));
    assert_true(text.len <= POLL_TEXT_MAX + 3);
    assert_true(data.len < 8192);
    sb_free(&data);
    sb_free(&text);
}

static void test_default_labels(void **state)
{
    (void)state;
    char label[MEMORY_EXPR_MAX + 1];
    struct trace_watch_spec v = {.variable = "gClock->counter"};
    trace_watch_default_label(&v, label);
    assert_string_equal(label, "gClock->counter");
    struct trace_watch_spec a = {.address = 0x4010a0, .hint = MEMH_U32};
    trace_watch_default_label(&a, label);
    assert_string_equal(label, "0x4010a0");
}

static void test_watch_checks(void **state)
{
    (void)state;
    struct strobe_error e = {0};
    const char *on_ok[] = {"audio::*", "juce::**"};
    struct trace_watch_spec ok = {.variable = "gTempo", .on = on_ok, .n_on = 2};
    assert_int_equal(trace_watch_check(&ok, &e), 0);
    const char *on_bad[] = {"a:::b"};
    struct trace_watch_spec bad = {.variable = "gTempo", .on = on_bad, .n_on = 1};
    assert_int_equal(trace_watch_check(&bad, &e), -1);
    assert_int_equal(e.code, ERR_INVALID_PATTERN);
    char long_expr[MEMORY_EXPR_MAX + 2];
    memset(long_expr, 'a', sizeof long_expr - 1);
    long_expr[sizeof long_expr - 1] = '\0';
    struct trace_watch_spec too_long = {.variable = long_expr};
    assert_int_equal(trace_watch_check(&too_long, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    struct trace_watch_spec empty_label = {.variable = "x", .label = ""};
    assert_int_equal(trace_watch_check(&empty_label, &e), -1);
    struct trace_watch_spec nothing = {0};
    assert_int_equal(trace_watch_check(&nothing, &e), -1);
}

static void test_on_scoping(void **state)
{
    (void)state;
    struct dw_function process = {.name = "audio::process", .decl_file = "/p/src/audio.c"};
    struct dw_function midi = {.name = "midi::in::read", .decl_file = "/usr/include/x.h"};
    assert_true(twatch_applies(NULL, 0, &process, "/p"));
    const char *one[] = {"audio::process"};
    assert_true(twatch_applies(one, 1, &process, "/p"));
    assert_false(twatch_applies(one, 1, &midi, "/p"));
    const char *star[] = {"midi::*"};
    assert_false(twatch_applies(star, 1, &midi, "/p")); /* one level only */
    const char *deep[] = {"nope", "midi::**"};
    assert_true(twatch_applies(deep, 2, &midi, "/p"));
    const char *user[] = {"@usercode"};
    assert_true(twatch_applies(user, 1, &process, "/p"));
    assert_false(twatch_applies(user, 1, &midi, "/p"));
    const char *file[] = {"@file:audio.c"};
    assert_true(twatch_applies(file, 1, &process, "/p"));
}

static void test_hint_format(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    int32_t i = -5;
    value_json(&sb, varres_hint_type(MEMH_I32), &i, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "-5");
    sb.len = 0;
    uint32_t u = 4000000000u;
    value_json(&sb, varres_hint_type(MEMH_U32), &u, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "4000000000");
    sb.len = 0;
    double d = 120.0;
    value_json(&sb, varres_hint_type(MEMH_F64), &d, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "120");
    sb.len = 0;
    float f = 0.1f;
    value_json(&sb, varres_hint_type(MEMH_F32), &f, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "0.1");
    sb.len = 0;
    uint64_t p = 0x7ffd1234;
    value_json(&sb, varres_hint_type(MEMH_POINTER), &p, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "\"0x7ffd1234\"");
    sb.len = 0;
    uint8_t b = 200;
    value_json(&sb, varres_hint_type(MEMH_I8), &b, NULL, NULL, NULL);
    assert_string_equal(sb.buf, "-56");
    sb_free(&sb);
    assert_int_equal(varres_hint_type(MEMH_U16)->size, 2);
    assert_int_equal(varres_hint_type(MEMH_BYTES)->size, 0);
    assert_null(varres_hint_type(MEMH_NONE));
}

static void test_addresses(void **state)
{
    (void)state;
    uint64_t a;
    assert_true(mem_parse_address("0x4010a0", &a));
    assert_int_equal(a, 0x4010a0);
    assert_true(mem_parse_address("4096", &a));
    assert_int_equal(a, 4096);
    assert_false(mem_parse_address("0x", &a));
    assert_false(mem_parse_address("0", &a));
    assert_false(mem_parse_address("-1", &a));
    assert_false(mem_parse_address("0x12zz", &a));
    assert_false(mem_parse_address("", &a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expected_samples),
        cmocka_unit_test(test_snapshot_format),
        cmocka_unit_test(test_snapshot_bounds),
        cmocka_unit_test(test_default_labels),
        cmocka_unit_test(test_watch_checks),
        cmocka_unit_test(test_on_scoping),
        cmocka_unit_test(test_hint_format),
        cmocka_unit_test(test_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
