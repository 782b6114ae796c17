/* test_strdist.c - base/strdist.h: Levenshtein distance and its cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/strdist.h"

static void test_distances(void **state)
{
    (void)state;
    assert_int_equal(str_distance("", "", 5), 0);
    assert_int_equal(str_distance("break", "break", 5), 0);
    assert_int_equal(str_distance("brake", "break", 5), 2);
    assert_int_equal(str_distance("kitten", "sitting", 5), 3);
    assert_int_equal(str_distance("", "abc", 5), 3);
    assert_int_equal(str_distance("counter", "g_counter", 5), 2);
}

static void test_cap(void **state)
{
    (void)state;
    /* Past the cap the answer is cap + 1, from the lengths alone or from a row. */
    assert_int_equal(str_distance("a", "abcdefgh", 2), 3);
    assert_int_equal(str_distance("abcdef", "uvwxyz", 2), 3);
    assert_int_equal(str_distance("kitten", "sitting", 3), 3);
}

static void test_long_names(void **state)
{
    (void)state;
    char a[300], b[300];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof b);
    b[200] = 'y'; /* past STRDIST_MAXLEN: not compared */
    assert_int_equal(str_distance(a, b, 3), 0);
    b[10] = 'y';
    assert_int_equal(str_distance(a, b, 3), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distances),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_long_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
