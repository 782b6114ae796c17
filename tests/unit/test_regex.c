/*
 * test_regex.c - unit tests of the bounded regular expressions (base/regex.h):
 * ordinary patterns match as expected, and every budget (pattern length, nesting,
 * compiled size, backtracking) fails with a sentence instead of costing the caller.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/regex.h"

static int match(const char *pattern, const char *subject)
{
    struct strobe_error err;
    struct regex *re = regex_compile(pattern, &err);
    if (!re)
        fail_msg("'%s' does not compile: %s", pattern, err.msg);
    int m = regex_match(re, subject, strlen(subject), &err);
    regex_free(re);
    return m;
}

static void test_ordinary_patterns(void **state)
{
    (void)state;
    assert_int_equal(match("^parse_", "parse_header"), 1);
    assert_int_equal(match("^parse_", "reparse_header"), 0);
    assert_int_equal(match("^(add|is)_", "is_prime"), 1);
    assert_int_equal(match("::validate$", "auth::User::validate"), 1);
    assert_int_equal(match("^fact.*l$", "factorial"), 1);
    assert_int_equal(match("[[:digit:]]+", "v2"), 1); /* POSIX classes still work */
    assert_int_equal(match("é", "café"), 1);         /* UTF-8 */
    assert_int_equal(match("x", "\xff\xfe x"), 1);    /* invalid UTF-8 subject: no error */
}

static void expect_refused(const char *pattern, const char *why)
{
    struct strobe_error err = {0};
    struct regex *re = regex_compile(pattern, &err);
    if (re)
        fail_msg("'%.40s...' compiled", pattern);
    if (err.code != ERR_VALIDATION || !strstr(err.msg, why))
        fail_msg("error %d '%s' lacks '%s'", err.code, err.msg, why);
}

static void test_compile_budgets(void **state)
{
    (void)state;
    expect_refused("(((a{1,255}){1,255}){1,255}){1,255}", "too large");
    expect_refused("((a{1,100}){1,100}){1,100}", "too large");
    char deep[200] = "";
    for (int i = 0; i < 60; i++)
        strcat(deep, "(");
    strcat(deep, "a");
    for (int i = 0; i < 60; i++)
        strcat(deep, ")");
    expect_refused(deep, "parentheses");
    char longp[REGEX_MAX_PATTERN + 2];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    expect_refused(longp, "limit is 1024");
    expect_refused("(", "at byte 1");
    expect_refused("\xff", "UTF-8");
    expect_refused("\\C", "disabled");
}

static void test_match_budget(void **state)
{
    (void)state;
    char subject[64];
    memset(subject, 'a', 40);
    strcpy(subject + 40, "!");
    struct strobe_error err = {0};
    struct regex *re = regex_compile("^(a|aa)+$", &err);
    assert_non_null(re);
    assert_int_equal(regex_match(re, subject, strlen(subject), &err), -1);
    assert_int_equal(err.code, ERR_VALIDATION);
    assert_non_null(strstr(err.msg, "matching stopped"));
    assert_int_equal(regex_match(re, "aaaa", 4, &err), 1); /* still usable */
    regex_free(re);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordinary_patterns),
        cmocka_unit_test(test_compile_budgets),
        cmocka_unit_test(test_match_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
