/*
 * test_encode.c - ptrace/vars/encode.c on hand-built types: every integer size and
 * signedness at its exact bounds and one past them, hex and decimal, bool, float,
 * double and long double (NaN, infinities, overflow), chars as strings and numbers,
 * enums by name and number, pointers, char arrays that fit and do not, and the
 * refusals of structs, unions, other arrays and unknown types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ptrace/vars/encode.h"

static const struct dw_type t_bool = {.kind = DWT_BOOL, .name = "_Bool", .size = 1};
static const struct dw_type t_char = {.kind = DWT_CHAR, .name = "char", .size = 1};
static const struct dw_type t_uchar = {.kind = DWT_CHAR, .name = "unsigned char", .size = 1};
static const struct dw_type t_float = {.kind = DWT_FLOAT, .name = "float", .size = 4};
static const struct dw_type t_double = {.kind = DWT_FLOAT, .name = "double", .size = 8};
static const struct dw_type t_ldouble = {.kind = DWT_FLOAT, .name = "long double", .size = 16};
static const struct dw_type t_ptr = {.kind = DWT_POINTER, .name = "int *", .size = 8};
static const struct dw_enumerator colors[] = {{"RED", 0}, {"GREEN", 5}, {"BLUE", 6}};
static const struct dw_type t_int = {.kind = DWT_SIGNED, .name = "int", .size = 4};
static const struct dw_type t_enum = {.kind = DWT_ENUM, .name = "enum color", .size = 4,
                                      .target = &t_int, .n_enumerators = 3,
                                      .enumerators = colors};
static const struct dw_type t_name = {.kind = DWT_ARRAY, .name = "char[8]", .size = 8,
                                      .target = &t_char, .count = 8};
static const struct dw_type t_ints = {.kind = DWT_ARRAY, .name = "int[4]", .size = 16,
                                      .target = &t_int, .count = 4};
static const struct dw_member point_members[] = {{.name = "x", .type = &t_int},
                                                 {.name = "y", .offset = 4, .type = &t_int}};
static const struct dw_type t_point = {.kind = DWT_STRUCT, .name = "struct point", .size = 8,
                                       .n_members = 2, .members = point_members};
static const struct dw_type t_union = {.kind = DWT_UNION, .name = "union u", .size = 4,
                                       .n_members = 1, .members = point_members};
static const struct dw_type t_unknown = {.kind = DWT_VOID, .size = 4};

static struct collector_value num(const char *text)
{
    return (struct collector_value){.kind = CV_NUMBER, .text = text};
}

static struct collector_value str(const char *text)
{
    return (struct collector_value){.kind = CV_STRING, .text = text};
}

static struct collector_value boolean(bool b)
{
    return (struct collector_value){.kind = CV_BOOL, .boolean = b};
}

/* Encodes v as t and returns the bytes as a little-endian number (up to 8 bytes). */
static uint64_t ok(const struct dw_type *t, struct collector_value v)
{
    unsigned char out[64];
    memset(out, 0xee, sizeof out);
    struct strobe_error e = {0};
    if (encode_value(t, "x", &v, out, sizeof out, &e) != 0)
        fail_msg("%s as %s: %s %s", v.text ? v.text : "bool", t->name, err_code_name(e.code),
                 e.msg);
    assert_int_equal(out[t->size], 0xee); /* nothing written past the value */
    uint64_t r = 0;
    for (size_t i = t->size < 8 ? t->size : 8; i-- > 0;)
        r = r << 8 | out[i];
    return r;
}

static void refused(const struct dw_type *t, struct collector_value v, enum err_code code,
                    const char *sentence_part)
{
    unsigned char out[64];
    struct strobe_error e = {0};
    assert_int_equal(encode_value(t, "x", &v, out, sizeof out, &e), -1);
    if (e.code != code || !strstr(e.msg, sentence_part))
        fail_msg("%s as %s: %s '%s', expected %s saying '%s'", v.text ? v.text : "bool",
                 t->name ? t->name : "?", err_code_name(e.code), e.msg, err_code_name(code),
                 sentence_part);
}

static void test_integers_at_their_bounds(void **state)
{
    (void)state;
    static const char *const names[2][4] = {
        {"unsigned char", "short unsigned int", "unsigned int", "long unsigned int"},
        {"signed char", "short int", "int", "long int"}};
    static const char *const max_u[] = {"255", "65535", "4294967295", "18446744073709551615"};
    static const char *const over_u[] = {"256", "65536", "4294967296", "18446744073709551616"};
    static const char *const min_s[] = {"-128", "-32768", "-2147483648",
                                        "-9223372036854775808"};
    static const char *const under_s[] = {"-129", "-32769", "-2147483649",
                                          "-9223372036854775809"};
    static const char *const max_s[] = {"127", "32767", "2147483647", "9223372036854775807"};
    static const char *const over_s[] = {"128", "32768", "2147483648", "9223372036854775808"};
    for (int i = 0; i < 4; i++) {
        size_t size = (size_t)1 << i;
        uint64_t mask = size == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;
        struct dw_type u = {.kind = DWT_UNSIGNED, .name = names[0][i], .size = size};
        struct dw_type s = {.kind = DWT_SIGNED, .name = names[1][i], .size = size};
        assert_true(ok(&u, num(max_u[i])) == mask);
        assert_true(ok(&u, num("0")) == 0);
        char range[80];
        snprintf(range, sizeof range, "from 0 to %s.", max_u[i]);
        refused(&u, num(over_u[i]), ERR_VALUE_OUT_OF_RANGE, range);
        refused(&u, num("-1"), ERR_VALUE_OUT_OF_RANGE, "0 to");
        assert_true(ok(&s, num(min_s[i])) == (mask >> 1) + 1);
        assert_true(ok(&s, num(max_s[i])) == mask >> 1);
        assert_true(ok(&s, num("-1")) == mask);
        snprintf(range, sizeof range, "from %s to %s.", min_s[i], max_s[i]);
        refused(&s, num(under_s[i]), ERR_VALUE_OUT_OF_RANGE, range);
        refused(&s, num(over_s[i]), ERR_VALUE_OUT_OF_RANGE, range);
    }
    assert_int_equal(ok(&t_int, num("0x7fffffff")), 0x7fffffff);
    assert_int_equal(ok(&t_int, str("-0x10")), 0xfffffff0u);
    assert_int_equal(ok(&t_int, str("+12")), 12);
    refused(&t_int, num("2.5"), ERR_VALUE_OUT_OF_RANGE, "'2.5' is not an integer");
    refused(&t_int, num("1e3"), ERR_VALUE_OUT_OF_RANGE, "not an integer");
    refused(&t_int, str("twelve"), ERR_VALUE_OUT_OF_RANGE, "not an integer");
    refused(&t_int, str(""), ERR_VALUE_OUT_OF_RANGE, "not an integer");
    refused(&t_int, num("99999999999999999999999"), ERR_VALUE_OUT_OF_RANGE,
            "out of range for x (int)");
    refused(&t_int, boolean(true), ERR_VALUE_OUT_OF_RANGE, "not a boolean");
}

static void test_bool(void **state)
{
    (void)state;
    assert_int_equal(ok(&t_bool, boolean(true)), 1);
    assert_int_equal(ok(&t_bool, boolean(false)), 0);
    assert_int_equal(ok(&t_bool, num("1")), 1);
    assert_int_equal(ok(&t_bool, num("0")), 0);
    refused(&t_bool, num("2"), ERR_VALUE_OUT_OF_RANGE, "true or false");
    refused(&t_bool, str("yes"), ERR_VALUE_OUT_OF_RANGE, "not a boolean");
}

static void test_floats(void **state)
{
    (void)state;
    float f;
    uint32_t fb = (uint32_t)ok(&t_float, num("0.25"));
    memcpy(&f, &fb, 4);
    assert_true(f == 0.25f);
    double d;
    uint64_t db = ok(&t_double, num("-1.5e300"));
    memcpy(&d, &db, 8);
    assert_true(d == -1.5e300);
    db = ok(&t_double, str("NaN"));
    memcpy(&d, &db, 8);
    assert_true(isnan(d));
    db = ok(&t_double, str("-Infinity"));
    memcpy(&d, &db, 8);
    assert_true(isinf(d) && d < 0);
    refused(&t_float, num("1e39"), ERR_VALUE_OUT_OF_RANGE, "out of range for x (float)");
    refused(&t_double, num("1e400"), ERR_VALUE_OUT_OF_RANGE, "out of range for x (double)");
    refused(&t_double, num("1e5000"), ERR_VALUE_OUT_OF_RANGE, "not a finite number");
    refused(&t_double, str("fast"), ERR_VALUE_OUT_OF_RANGE, "not a finite number");
    refused(&t_double, boolean(true), ERR_VALUE_OUT_OF_RANGE, "not a boolean");

    unsigned char out[16];
    struct collector_value v = num("2.5");
    struct strobe_error e = {0};
    assert_int_equal(encode_value(&t_ldouble, "x", &v, out, sizeof out, &e), 0);
    long double ld;
    memcpy(&ld, out, sizeof ld);
    assert_true(ld == 2.5L);
    struct dw_type f128 = {.kind = DWT_FLOAT, .name = "_Float128", .size = 16};
    refused(&f128, num("1"), ERR_VALUE_OUT_OF_RANGE, "this size of float");
}

static void test_chars(void **state)
{
    (void)state;
    assert_int_equal(ok(&t_char, str("Z")), 'Z');
    assert_int_equal(ok(&t_char, num("-128")), 0x80);
    assert_int_equal(ok(&t_uchar, num("255")), 255);
    refused(&t_char, num("128"), ERR_VALUE_OUT_OF_RANGE, "-128 to 127");
    refused(&t_uchar, num("-1"), ERR_VALUE_OUT_OF_RANGE, "0 to 255");
    refused(&t_char, str("ab"), ERR_VALUE_OUT_OF_RANGE, "not one character");
    refused(&t_char, str(""), ERR_VALUE_OUT_OF_RANGE, "not one character");
}

static void test_enums(void **state)
{
    (void)state;
    assert_int_equal(ok(&t_enum, str("BLUE")), 6);
    assert_int_equal(ok(&t_enum, str("RED")), 0);
    assert_int_equal(ok(&t_enum, num("42")), 42); /* a value with no name is allowed */
    assert_int_equal(ok(&t_enum, str("-1")), 0xffffffffu);
    refused(&t_enum, str("PURPLE"), ERR_VALUE_OUT_OF_RANGE,
            "'PURPLE' is not an enumerator of x (enum color); it takes one of: RED, GREEN, "
            "BLUE, or a number.");
    refused(&t_enum, num("2147483648"), ERR_VALUE_OUT_OF_RANGE, "-2147483648 to 2147483647");
}

static void test_pointers(void **state)
{
    (void)state;
    assert_true(ok(&t_ptr, str("0x7ffd12345678")) == 0x7ffd12345678ull);
    assert_true(ok(&t_ptr, num("4096")) == 4096);
    assert_true(ok(&t_ptr, str("NULL")) == 0);
    assert_true(ok(&t_ptr, num("0")) == 0);
    refused(&t_ptr, num("-8"), ERR_VALUE_OUT_OF_RANGE, "not an address");
    refused(&t_ptr, boolean(false), ERR_VALUE_OUT_OF_RANGE, "not an address");
}

static void test_char_arrays(void **state)
{
    (void)state;
    unsigned char out[16];
    memset(out, 0xee, sizeof out);
    struct collector_value v = str("abc");
    struct strobe_error e = {0};
    assert_int_equal(encode_value(&t_name, "g_name", &v, out, sizeof out, &e), 0);
    assert_memory_equal(out, "abc\0\0\0\0\0", 8);
    assert_int_equal(out[8], 0xee);
    v = str("1234567");
    assert_int_equal(encode_value(&t_name, "g_name", &v, out, sizeof out, &e), 0);
    assert_memory_equal(out, "1234567", 8);
    refused(&t_name, str("12345678"), ERR_VALUE_OUT_OF_RANGE,
            "\"12345678\" is 8 bytes; x (char[8]) holds at most 7 and the terminating NUL.");
    refused(&t_name, num("1"), ERR_VALUE_OUT_OF_RANGE, "takes a string");
}

static void test_refusals(void **state)
{
    (void)state;
    refused(&t_point, num("1"), ERR_VALIDATION,
            "x is struct point: a write sets one value; write a member, e.g. 'x.x'.");
    refused(&t_union, num("1"), ERR_VALIDATION, "write a member");
    refused(&t_ints, num("1"), ERR_VALIDATION, "write an element, e.g. 'x[0]'.");
    refused(&t_unknown, num("1"), ERR_VALIDATION, "x is of unknown type, which a write "
                                                  "cannot set.");
    struct dw_type big = {.kind = DWT_ARRAY, .name = "char[100]", .size = 100,
                          .target = &t_char, .count = 100};
    refused(&big, str("a"), ERR_VALIDATION, "x is 100 bytes; a write sets at most 64.");
    struct dw_type i128 = {.kind = DWT_SIGNED, .name = "__int128", .size = 16};
    refused(&i128, num("1"), ERR_VALIDATION, "16-byte __int128");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers_at_their_bounds),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_chars),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_pointers),
        cmocka_unit_test(test_char_arrays),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
