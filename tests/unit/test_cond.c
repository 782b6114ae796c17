/*
 * test_cond.c - unit tests of the breakpoint condition language (base/cond.h):
 * parsing with error positions, C precedence, short-circuit, comparisons across
 * signedness and types, strings, the limits, and the codes of the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/cond.h"

/* A fake program: a few named values, and a count of resolutions. */
struct fake {
    int resolved;
};

static int resolve(void *ctx, const char *path, struct cond_value *out,
                   struct strobe_error *e)
{
    struct fake *f = ctx;
    f->resolved++;
    static const char bob[] = {'b', 'o', 'b'};
    if (strcmp(path, "x") == 0)
        *out = (struct cond_value){.kind = COND_INT, .i = 5};
    else if (strcmp(path, "neg") == 0)
        *out = (struct cond_value){.kind = COND_INT, .i = -1};
    else if (strcmp(path, "big") == 0)
        *out = (struct cond_value){.kind = COND_UINT, .u = UINT64_MAX};
    else if (strcmp(path, "ratio") == 0)
        *out = (struct cond_value){.kind = COND_FLOAT, .f = 0.25};
    else if (strcmp(path, "p->name") == 0 || strcmp(path, "cfg.name") == 0)
        *out = (struct cond_value){.kind = COND_STRING, .s = bob, .len = 3};
    else if (strcmp(path, "nullstr") == 0)
        *out = (struct cond_value){.kind = COND_STRING, .s = NULL};
    else if (strcmp(path, "ns::g_state->count") == 0 || strcmp(path, "*p") == 0 ||
             strcmp(path, "arr[2].max") == 0)
        *out = (struct cond_value){.kind = COND_INT, .i = 7};
    else
        return err_set(e, ERR_VARIABLE_NOT_FOUND, "no variable '%s'", path);
    return 0;
}

/* Parses and evaluates text; the result, or -1 when evaluation failed. */
static int eval(const char *text, struct fake *f)
{
    struct strobe_error e = {0};
    struct cond *c = cond_parse(text, &e);
    if (!c)
        fail_msg("'%s' does not parse: %s", text, e.msg);
    bool r;
    int rc = cond_eval(c, resolve, f, &r, NULL);
    cond_free(c);
    return rc == 0 ? r : -1;
}

static void test_comparisons_and_logic(void **state)
{
    (void)state;
    struct fake f = {0};
    assert_int_equal(eval("x > 3", &f), 1);
    assert_int_equal(eval("x >= 5 && x <= 5", &f), 1);
    assert_int_equal(eval("x < 5 || x != 5", &f), 0);
    assert_int_equal(eval("!(x == 5)", &f), 0);
    assert_int_equal(eval("!x == 0", &f), 1); /* (!x) == 0, as in C */
    assert_int_equal(eval("x == 2 || x == 5 && ratio < 0.5", &f), 1); /* && binds tighter */
    assert_int_equal(eval("-x < 0", &f), 1);
    assert_int_equal(eval("x == 0x5 && x == 05 && x == 5u", &f), 1);
    assert_int_equal(eval("x", &f), 1);
    assert_int_equal(eval("true && !false", &f), 1);
}

/* Parses and evaluates text expecting an evaluation error of code with a sentence
 * containing what. */
static void eval_fails_as(const char *text, enum err_code code, const char *what)
{
    struct strobe_error e = {0};
    struct cond *c = cond_parse(text, &e);
    if (!c)
        fail_msg("'%s' does not parse: %s", text, e.msg);
    struct fake f = {0};
    bool r;
    assert_int_equal(cond_eval(c, resolve, &f, &r, &e), -1);
    cond_free(c);
    if (!strstr(e.msg, what))
        fail_msg("'%s': '%s' does not say '%s'", text, e.msg, what);
    if (e.code != code)
        fail_msg("'%s': %s, not %s", text, err_code_name(e.code), err_code_name(code));
}

/* The evaluator's own failures are VALIDATION. */
static void eval_fails(const char *text, const char *what)
{
    eval_fails_as(text, ERR_VALIDATION, what);
}

static void test_arithmetic(void **state)
{
    (void)state;
    struct fake f = {0};
    assert_int_equal(eval("x % 2 == 1", &f), 1);
    assert_int_equal(eval("x * 2 + 1 == 11", &f), 1);      /* * binds tighter than + */
    assert_int_equal(eval("x - 7 < 0", &f), 1);
    assert_int_equal(eval("(x + 1) / 2 == 3", &f), 1);
    assert_int_equal(eval("x / 2 == 2", &f), 1);           /* integer division */
    assert_int_equal(eval("ratio * 2 == 0.5", &f), 1);     /* a float makes it double */
    assert_int_equal(eval("x & 4 && x | 2 == 7", &f), 1);  /* == binds tighter than | */
    assert_int_equal(eval("(x & 1) == 1", &f), 1);
    assert_int_equal(eval("0xffffffffffffffff - 1 == 18446744073709551614", &f), 1);
    assert_int_equal(eval("-1 - 0x7fffffffffffffff < 0", &f), 1); /* INT64_MIN, exactly */
    eval_fails("x / 0 == 1", "by zero");
    eval_fails("x % (x - 5) == 1", "by zero");
    eval_fails("0xffffffffffffffff * 2 == 1", "overflows");
    /* beyond 128 bits too (found by fuzz/fuzz_cond.c) */
    eval_fails("0xffffffffffffffff * 0xffffffffffffffff == 1", "overflows");
    eval_fails("-0x7fffffffffffffff * 0xffffffffffffffff == 1", "overflows");
    eval_fails("ratio % 2 == 1", "integers");
    eval_fails("p->name + 1 == 2", "strings");
}

static void test_signedness_and_floats(void **state)
{
    (void)state;
    struct fake f = {0};
    assert_int_equal(eval("neg < big", &f), 1);  /* -1 < 2^64-1, not wrapped */
    assert_int_equal(eval("big == 18446744073709551615", &f), 1);
    assert_int_equal(eval("big > 9223372036854775807", &f), 1);
    assert_int_equal(eval("ratio == 0.25 && ratio > 0 && ratio < 1e0", &f), 1);
    assert_int_equal(eval("x > 4.5", &f), 1);
    assert_int_equal(eval("-9223372036854775808 < neg", &f), 1);
}

static void test_strings_and_chars(void **state)
{
    (void)state;
    struct fake f = {0};
    assert_int_equal(eval("p->name == \"bob\"", &f), 1);
    assert_int_equal(eval("p -> name != \"bo\"", &f), 1); /* blanks in a path */
    assert_int_equal(eval("cfg.name < \"bobby\" && cfg.name > \"bo\"", &f), 1);
    assert_int_equal(eval("nullstr == NULL && p->name != nullptr && !nullstr", &f), 1);
    assert_int_equal(eval("'a' == 97 && '\\n' == 10 && \"a\\\"b\" != \"\"", &f), 1);
    /* A string against a non-zero number is an error, not false. */
    assert_int_equal(eval("p->name == 3", &f), -1);
    assert_int_equal(eval("p->name > 0", &f), -1);
    eval_fails("p->name == 3", "not with a number");
}

static void test_short_circuit_and_paths(void **state)
{
    (void)state;
    struct fake f = {0};
    assert_int_equal(eval("x == 0 && missing > 1", &f), 0);
    assert_int_equal(eval("x == 5 || missing > 1", &f), 1);
    assert_int_equal(f.resolved, 2);
    assert_int_equal(eval("missing > 1", &f), -1);
    /* A path that does not resolve fails with the resolver's code and sentence. */
    eval_fails_as("x == 5 && missing > 1", ERR_VARIABLE_NOT_FOUND, "no variable 'missing'");
    assert_int_equal(eval("ns::g_state->count == 7 && *p == 7 && arr[2].max == 7", &f), 1);

    struct cond *c = cond_parse("x > 1 && x < 9 && p->name == \"a\"", NULL);
    assert_non_null(c);
    const char *const *paths;
    assert_int_equal(cond_paths(c, &paths), 2);
    assert_string_equal(paths[0], "x");
    assert_string_equal(paths[1], "p->name");
    cond_free(c);
    /* An index named by a variable stays in the path, for the resolver to read; the
     * index is listed too (its value shows beside the condition's). */
    c = cond_parse("scores[ i ] > 90", NULL);
    assert_non_null(c);
    assert_int_equal(cond_paths(c, &paths), 2);
    assert_string_equal(paths[0], "i");
    assert_string_equal(paths[1], "scores[i]");
    cond_free(c);
    /* So does an index that is a path of its own. */
    c = cond_parse("q->items[q->head].id == 7", NULL);
    assert_non_null(c);
    assert_int_equal(cond_paths(c, &paths), 2);
    assert_string_equal(paths[0], "q->head");
    assert_string_equal(paths[1], "q->items[q->head].id");
    cond_free(c);
}

/* Parse errors are VALIDATION and name the column and what was expected. */
static void expect_error(const char *text, const char *want)
{
    struct strobe_error e = {0};
    struct cond *c = cond_parse(text, &e);
    if (c)
        fail_msg("'%s' parsed", text);
    if (!strstr(e.msg, want))
        fail_msg("'%s': error '%s' lacks '%s'", text, e.msg, want);
    if (e.code != ERR_VALIDATION)
        fail_msg("'%s': %s, not VALIDATION_ERROR", text, err_code_name(e.code));
    assert_null(cond_parse(text, NULL)); /* NULL: not told */
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("x >", "column 4: expected an operand");
    expect_error("x = 3", "column 3: unexpected '='");
    expect_error("x == 3 &", "column 9: expected an operand");
    expect_error("x == 3 # 1", "after a complete expression");
    expect_error("(x == 3", "expected ')'");
    expect_error("\"abc", "unterminated string");
    expect_error("'ab'", "one character");
    expect_error("a[-1] == 1", "integer literal, a variable or a path");
    expect_error("a. == 1", "member name");
    expect_error("x == 12abc", "malformed number");
    expect_error("x == 99999999999999999999", "out of range");
    expect_error("x == '\\q'", "unknown escape");
    expect_error("", "found the end");
    expect_error("x == 1 2", "after a complete expression");
}

static void test_limits(void **state)
{
    (void)state;
    char text[COND_MAX_TEXT + 2];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    expect_error(text, "longer than");

    char deep[200] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "(");
    expect_error(deep, "nested more than");

    char bangs[200] = "";
    for (int i = 0; i < 40; i++)
        strcat(bangs, "!");
    strcat(bangs, "x");
    expect_error(bangs, "nested more than");

    char many[COND_MAX_TEXT] = "x";
    for (int i = 0; i < 130; i++)
        strcat(many, "||1");
    expect_error(many, "too long");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons_and_logic),
        cmocka_unit_test(test_arithmetic),
        cmocka_unit_test(test_signedness_and_floats),
        cmocka_unit_test(test_strings_and_chars),
        cmocka_unit_test(test_short_circuit_and_paths),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
