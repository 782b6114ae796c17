/*
 * test_heldbytes.c - unit tests of base/heldbytes.h: bytes held with their read
 * times, a write found by its first bytes, bytes leaving with the time given or
 * their reads'.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/heldbytes.h"

/* What left, as "text@time|" runs. */
static char got[256];

static void took(void *arg, const char *data, size_t n, int64_t ts_ns)
{
    (void)arg;
    size_t l = strlen(got);
    snprintf(got + l, sizeof got - l, "%.*s@%lld|", (int)n, data, (long long)ts_ns);
}

static void test_take_keeps_each_reads_time_or_the_given_one(void **state)
{
    (void)state;
    struct heldbytes h = {0};
    assert_true(held_append(&h, "abc", 3, 10));
    assert_true(held_append(&h, "defg", 4, 20));
    assert_true(held_append(&h, "", 0, 25)); /* nothing: no read kept */
    assert_true(held_append(&h, "hi", 2, 30));
    assert_int_equal(held_oldest(&h), 10);
    got[0] = '\0';
    held_take(&h, 5, INT64_MIN, took, NULL); /* a read split: "fg" keeps time 20 */
    assert_string_equal(got, "abc@10|de@20|");
    assert_int_equal(held_oldest(&h), 20);
    got[0] = '\0';
    held_take(&h, 3, 99, took, NULL);
    assert_string_equal(got, "fg@99|h@99|");
    got[0] = '\0';
    held_take(&h, 100, INT64_MIN, took, NULL); /* more than held: what there is */
    assert_string_equal(got, "i@30|");
    assert_int_equal(h.len, 0);
    assert_int_equal(held_oldest(&h), INT64_MAX);
    held_free(&h);
}

/* Nothing held yet (no buffer): taking, finding and releasing do nothing. */
static void test_empty(void **state)
{
    (void)state;
    struct heldbytes h = {0};
    got[0] = '\0';
    held_take(&h, 10, 5, took, NULL);
    held_take_older(&h, 100, took, NULL);
    assert_string_equal(got, "");
    assert_int_equal(held_find(&h, "a", 1), -1);
    assert_int_equal(held_oldest(&h), INT64_MAX);
    held_free(&h);
}

static void test_find_by_first_bytes(void **state)
{
    (void)state;
    struct heldbytes h = {0};
    assert_true(held_append(&h, "xxhello", 7, 1));
    assert_true(held_append(&h, " world", 6, 2));
    assert_int_equal(held_find(&h, "hello w", 7), 2); /* across two reads */
    assert_int_equal(held_find(&h, "x", 1), 0);
    assert_int_equal(held_find(&h, "xh", 2), 1);
    assert_int_equal(held_find(&h, "world!", 6), -1); /* cut by the end */
    assert_int_equal(held_find(&h, "", 0), -1);
    assert_int_equal(held_find(&h, "zz", 2), -1);
    held_free(&h);
}

static void test_take_older_stops_at_the_first_newer_read(void **state)
{
    (void)state;
    struct heldbytes h = {0};
    assert_true(held_append(&h, "a", 1, 5));
    assert_true(held_append(&h, "b", 1, 15));
    assert_true(held_append(&h, "c", 1, 8)); /* read later, older time: stays too */
    got[0] = '\0';
    held_take_older(&h, 10, took, NULL);
    assert_string_equal(got, "a@5|");
    assert_int_equal(h.len, 2);
    got[0] = '\0';
    held_take_older(&h, 20, took, NULL);
    assert_string_equal(got, "b@15|c@8|");
    held_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_keeps_each_reads_time_or_the_given_one),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_find_by_first_bytes),
        cmocka_unit_test(test_take_older_stops_at_the_first_newer_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
