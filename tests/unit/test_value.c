/*
 * test_value.c - dwarf/value.c on hand-built types and fake target memory: every
 * serialization rule of PROTOCOL.md "Function events" (numbers, big integers, floats,
 * chars, enums, strings, pointers, structs, bit fields, unions, arrays), cycles, depth
 * markers, truncation, unreadable memory, the output budget and absurd types.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/value.h"

/* Fake target memory: [MEM_BASE, MEM_BASE + MEM_SIZE), two pages. */
#define MEM_BASE 0x10000u
#define MEM_SIZE 8192u
#define FAKE_MEM_BASE MEM_BASE
#define FAKE_MEM_SIZE MEM_SIZE
#include "fake_mem.h"


static void check_opts(const struct dw_type *t, const void *bytes, const struct value_opts *o,
                       const char *expected)
{
    struct strbuf sb = {0};
    value_json(&sb, t, bytes, mem_read, NULL, o);
    char *got = sb_take(&sb);
    assert_string_equal(got, expected);
    free(got);
}

static void check(const struct dw_type *t, const void *bytes, const char *expected)
{
    check_opts(t, bytes, NULL, expected);
}

static void check_at(const struct dw_type *t, uint64_t addr, const struct value_opts *o,
                     const char *expected)
{
    struct strbuf sb = {0};
    value_json_at(&sb, t, addr, mem_read, NULL, o);
    char *got = sb_take(&sb);
    assert_string_equal(got, expected);
    free(got);
}

/* Base types. */
static const struct dw_type t_int = {.kind = DWT_SIGNED, .name = "int", .size = 4};
static const struct dw_type t_short = {.kind = DWT_SIGNED, .name = "short", .size = 2};
static const struct dw_type t_long = {.kind = DWT_SIGNED, .name = "long", .size = 8};
static const struct dw_type t_ulong = {.kind = DWT_UNSIGNED, .name = "unsigned long", .size = 8};
static const struct dw_type t_uint = {.kind = DWT_UNSIGNED, .name = "unsigned int", .size = 4};
static const struct dw_type t_i128 = {.kind = DWT_SIGNED, .name = "__int128", .size = 16};
static const struct dw_type t_bool = {.kind = DWT_BOOL, .name = "_Bool", .size = 1};
static const struct dw_type t_char = {.kind = DWT_CHAR, .name = "char", .size = 1};
static const struct dw_type t_uchar = {.kind = DWT_CHAR, .name = "unsigned char", .size = 1};
static const struct dw_type t_char32 = {.kind = DWT_CHAR, .name = "char32_t", .size = 4};
static const struct dw_type t_float = {.kind = DWT_FLOAT, .name = "float", .size = 4};
static const struct dw_type t_double = {.kind = DWT_FLOAT, .name = "double", .size = 8};
static const struct dw_type t_ldouble = {.kind = DWT_FLOAT, .name = "long double", .size = 16};
static const struct dw_type t_f128 = {.kind = DWT_FLOAT, .name = "_Float128", .size = 16};
static const struct dw_type t_void = {.kind = DWT_VOID, .name = "void"};
static const struct dw_type t_voidp = {.kind = DWT_POINTER, .size = 8};
static const struct dw_type t_charp = {.kind = DWT_POINTER, .size = 8, .target = &t_char};
static const struct dw_type t_intp = {.kind = DWT_POINTER, .size = 8, .target = &t_int};
static const struct dw_type t_intref = {.kind = DWT_REFERENCE, .size = 8, .target = &t_int};
static const struct dw_type t_fn = {.kind = DWT_FUNCTION};
static const struct dw_type t_fnp = {.kind = DWT_POINTER, .size = 8, .target = &t_fn};

static const struct dw_enumerator color_values[] = {{"RED", 0}, {"GREEN", 1}, {"NEG", -2}};
static const struct dw_type t_color = {.kind = DWT_ENUM, .name = "enum color", .size = 4,
                                       .target = &t_int, .n_enumerators = 3,
                                       .enumerators = color_values};

/* struct node { int value; struct node *next; } */
static const struct dw_type t_node;
static const struct dw_type t_nodep = {.kind = DWT_POINTER, .size = 8, .target = &t_node};
static const struct dw_member node_members[] = {
    {.name = "value", .offset = 0, .type = &t_int},
    {.name = "next", .offset = 8, .type = &t_nodep},
};
static const struct dw_type t_node = {.kind = DWT_STRUCT, .name = "struct node", .size = 16,
                                      .n_members = 2, .members = node_members};
static const struct dw_type t_noderef = {.kind = DWT_REFERENCE, .size = 8, .target = &t_node};

static void test_integers(void **state)
{
    (void)state;
    int32_t i = -42;
    check(&t_int, &i, "-42");
    int16_t s = 32767;
    check(&t_short, &s, "32767");
    uint32_t u = 4000000000u;
    check(&t_uint, &u, "4000000000");
    int64_t l = INT64_C(9007199254740992); /* 2^53 is still exact */
    check(&t_long, &l, "9007199254740992");
    l = INT64_C(9007199254740993);
    check(&t_long, &l, "\"9007199254740993\"");
    l = -INT64_C(1152921504606846976);
    check(&t_long, &l, "\"-1152921504606846976\"");
    uint64_t ul = UINT64_MAX;
    check(&t_ulong, &ul, "\"18446744073709551615\"");
    __int128 big = -((__int128)1 << 100);
    check(&t_i128, &big, "\"-1267650600228229401496703205376\"");
    __int128 small = -5;
    check(&t_i128, &small, "-5");
    uint8_t b = 1;
    check(&t_bool, &b, "true");
    b = 0;
    check(&t_bool, &b, "false");
}

static void test_chars_and_enums(void **state)
{
    (void)state;
    char c = 'A';
    check(&t_char, &c, "\"A\"");
    c = '"';
    check(&t_char, &c, "\"\\\"\"");
    c = '\n';
    check(&t_char, &c, "10");
    c = (char)0xff;
    check(&t_char, &c, "-1");
    check(&t_uchar, &c, "255");
    uint32_t snowman = 0x2603;
    check(&t_char32, &snowman, "\"\xe2\x98\x83\"");
    int32_t e = 1;
    check(&t_color, &e, "\"GREEN\"");
    e = -2;
    check(&t_color, &e, "\"NEG\"");
    e = 7;
    check(&t_color, &e, "7");
}

static void test_floats(void **state)
{
    (void)state;
    float f = 0.1f;
    check(&t_float, &f, "0.1");
    double d = 0.1;
    check(&t_double, &d, "0.1");
    d = -2.5e300;
    check(&t_double, &d, "-2.5e+300");
    d = NAN;
    check(&t_double, &d, "\"NaN\"");
    d = INFINITY;
    check(&t_double, &d, "\"Infinity\"");
    f = -INFINITY;
    check(&t_float, &f, "\"-Infinity\"");
    long double ld = 1.5L;
    uint8_t raw[16] = {0};
    memcpy(raw, &ld, 10);
    check(&t_ldouble, raw, "1.5");
    ld = -3.0e-5L;
    memcpy(raw, &ld, 10);
    check(&t_ldouble, raw, "-3e-05");
    /* _Float128 1.5: sign 0, exponent 0x3fff, fraction 0x8000... */
    uint8_t q[16] = {0};
    q[15] = 0x3f;
    q[14] = 0xff;
    q[13] = 0x80;
    check(&t_f128, q, "1.5");
}

static void test_strings(void **state)
{
    (void)state;
    uint64_t p = MEM_BASE + 0x100;
    poke(p, "hello \"world\"\n", 15);
    check(&t_charp, &p, "\"hello \\\"world\\\"\\n\"");
    poke(p, "ok\xff\xc3\xa9", 6); /* invalid byte escaped, valid UTF-8 kept */
    check(&t_charp, &p, "\"ok\\\\xFF\xc3\xa9\"");
    uint64_t null = 0;
    check(&t_charp, &null, "null");
    uint64_t bad = 0x42;
    check(&t_charp, &bad, "\"<unreadable 0x42>\"");

    /* Longer than max_string: cut and marked. */
    uint64_t long_str = MEM_BASE + 0x200;
    memset(mem + 0x200, 'a', 2000);
    mem[0x200 + 2000] = 0;
    struct strbuf sb = {0};
    value_json(&sb, &t_charp, &long_str, mem_read, NULL, NULL);
    char *got = sb_take(&sb);
    assert_int_equal(strlen(got), 1 + 1024 + strlen("...(truncated)") + 1);
    assert_non_null(strstr(got, "aaaa...(truncated)\""));
    free(got);
    /* Exactly max_string bytes: not truncated. */
    struct value_opts small = {.max_string = 4};
    poke(long_str, "abcd", 5);
    check_opts(&t_charp, &long_str, &small, "\"abcd\"");
    poke(long_str, "abcde", 6);
    check_opts(&t_charp, &long_str, &small, "\"abcd...(truncated)\"");

    /* A string ending at the last byte of readable memory (a page end). */
    uint64_t at_end = MEM_BASE + MEM_SIZE - 6;
    poke(at_end, "tail!", 6);
    check(&t_charp, &at_end, "\"tail!\"");
    /* No NUL before memory ends: what was read, marked. */
    poke(at_end, "tails!", 6);
    check(&t_charp, &at_end, "\"tails!...(truncated)\"");
}

static void test_pointers(void **state)
{
    (void)state;
    uint64_t p = 0x7ffd1234abcdULL;
    check(&t_voidp, &p, "\"0x7ffd1234abcd\"");
    check(&t_intp, &p, "\"0x7ffd1234abcd\"");
    check(&t_fnp, &p, "\"0x7ffd1234abcd\"");
    uint64_t null = 0;
    check(&t_voidp, &null, "null");
    check(&t_nodep, &null, "null");

    /* References are followed: to a scalar, the value; to a struct, the object. */
    uint64_t cell = MEM_BASE + 0x300;
    int32_t v = 99;
    poke(cell, &v, 4);
    check(&t_intref, &cell, "99");
    uint64_t node = MEM_BASE + 0x310;
    int32_t nv = 5;
    poke(node, &nv, 4);
    poke64(node + 8, 0);
    check(&t_noderef, &node, "{\"@ptr\":\"0x10310\",\"value\":5,\"next\":null}");
    uint64_t bad = 0x10;
    check(&t_intref, &bad, "\"<unreadable 0x10>\"");
    check(&t_nodep, &bad, "\"<unreadable 0x10>\"");
}

static void test_cycles_and_depth(void **state)
{
    (void)state;
    /* a -> b -> a */
    uint64_t a = MEM_BASE + 0x400, b = MEM_BASE + 0x420;
    int32_t one = 1, two = 2;
    poke(a, &one, 4);
    poke64(a + 8, b);
    poke(b, &two, 4);
    poke64(b + 8, a);
    check_at(&t_node, a, NULL,
             "{\"value\":1,\"next\":{\"@ptr\":\"0x10420\",\"value\":2,"
             "\"next\":\"<cycle 0x10400>\"}}");
    check(&t_nodep, &a,
          "{\"@ptr\":\"0x10400\",\"value\":1,\"next\":{\"@ptr\":\"0x10420\",\"value\":2,"
          "\"next\":\"<cycle 0x10400>\"}}");

    /* A longer chain is cut by the depth. */
    uint64_t chain[5];
    for (int i = 0; i < 5; i++)
        chain[i] = MEM_BASE + 0x500 + 0x20 * (uint64_t)i;
    for (int i = 0; i < 5; i++) {
        int32_t val = i;
        poke(chain[i], &val, 4);
        poke64(chain[i] + 8, i < 4 ? chain[i + 1] : 0);
    }
    struct value_opts depth2 = {.max_depth = 2};
    check_opts(&t_nodep, &chain[0], &depth2,
               "{\"@ptr\":\"0x10500\",\"value\":0,\"next\":{\"@ptr\":\"0x10520\",\"value\":1,"
               "\"next\":\"<struct node at 0x10540>\"}}");
    struct value_opts depth1 = {.max_depth = 1};
    check_opts(&t_nodep, &chain[0], &depth1,
               "{\"@ptr\":\"0x10500\",\"value\":0,\"next\":\"<struct node at 0x10520>\"}");
    /* Depth is clamped to 1..10: 50 behaves as 10 and terminates. */
    struct value_opts deep = {.max_depth = 50};
    struct strbuf sb = {0};
    value_json(&sb, &t_nodep, &chain[0], mem_read, NULL, &deep);
    char *got = sb_take(&sb);
    assert_non_null(strstr(got, "\"value\":4,\"next\":null}}}}}"));
    free(got);
}

/* struct outer { int id; struct inner { struct inner2 { int x; } in2; } in; } */
static const struct dw_member inner2_members[] = {{.name = "x", .type = &t_int}};
static const struct dw_type t_inner2 = {.kind = DWT_STRUCT, .name = "inner2", .size = 4,
                                        .n_members = 1, .members = inner2_members};
static const struct dw_member inner_members[] = {{.name = "in2", .type = &t_inner2}};
static const struct dw_type t_inner = {.kind = DWT_STRUCT, .name = "struct inner", .size = 4,
                                       .n_members = 1, .members = inner_members};
static const struct dw_member outer_members[] = {
    {.name = "id", .type = &t_int},
    {.name = "in", .offset = 4, .type = &t_inner},
};
static const struct dw_type t_outer = {.kind = DWT_STRUCT, .name = "struct outer", .size = 8,
                                       .n_members = 2, .members = outer_members};

static void test_structs(void **state)
{
    (void)state;
    int32_t bytes[2] = {7, 8};
    check(&t_outer, bytes, "{\"id\":7,\"in\":{\"in2\":{\"x\":8}}}");
    struct value_opts depth2 = {.max_depth = 2};
    check_opts(&t_outer, bytes, &depth2, "{\"id\":7,\"in\":{\"in2\":\"<struct inner2>\"}}");
    struct value_opts depth1 = {.max_depth = 1};
    check_opts(&t_outer, bytes, &depth1, "{\"id\":7,\"in\":\"<struct inner>\"}");
}

/* struct shelf { struct inner2 slots[3]; }: past the depth, the array of structs is
 * one marker, not one per element; within it, each element is shown. */
static const struct dw_type t_slots = {.kind = DWT_ARRAY, .size = 12, .target = &t_inner2,
                                       .count = 3};
static const struct dw_member shelf_members[] = {{.name = "slots", .type = &t_slots}};
static const struct dw_type t_shelf = {.kind = DWT_STRUCT, .name = "struct shelf", .size = 12,
                                       .n_members = 1, .members = shelf_members};

static void test_array_of_structs_past_the_depth(void **state)
{
    (void)state;
    int32_t bytes[3] = {1, 2, 3};
    struct value_opts depth1 = {.max_depth = 1};
    check_opts(&t_shelf, bytes, &depth1, "{\"slots\":\"<struct inner2[3]>\"}");
    struct value_opts depth2 = {.max_depth = 2};
    check_opts(&t_shelf, bytes, &depth2, "{\"slots\":[{\"x\":1},{\"x\":2},{\"x\":3}]}");
}

/* struct flags { unsigned a:3; int b:5; unsigned wide:24 (crossing bytes);
 *                enum color c:2; } and an anonymous padding bit field. */
static const struct dw_member flag_members[] = {
    {.name = "a", .offset = 0, .bit_size = 3, .bit_offset = 0, .type = &t_uint},
    {.name = "b", .offset = 0, .bit_size = 5, .bit_offset = 3, .type = &t_int},
    {.name = NULL, .offset = 1, .bit_size = 2, .bit_offset = 0, .type = &t_uint},
    {.name = "wide", .offset = 1, .bit_size = 24, .bit_offset = 2, .type = &t_uint},
    {.name = "c", .offset = 4, .bit_size = 2, .bit_offset = 2, .type = &t_color},
    {.name = "top", .offset = 0, .bit_size = 64, .bit_offset = 4, .type = &t_ulong},
};
static const struct dw_type t_flags = {.kind = DWT_STRUCT, .name = "struct flags", .size = 16,
                                       .n_members = 6, .members = flag_members};

static void test_bitfields(void **state)
{
    (void)state;
    uint8_t b[16] = {0};
    /* a = 5 (bits 0-2), b = -3 (bits 3-7, 5-bit two's complement 11101) */
    b[0] = (uint8_t)(5 | (0x1d << 3));
    /* wide = 0xABCDEF at bit 2 of byte 1 */
    uint32_t wide = 0xABCDEFu << 2;
    b[1] = (uint8_t)wide;
    b[2] = (uint8_t)(wide >> 8);
    b[3] = (uint8_t)(wide >> 16);
    b[4] = (uint8_t)((wide >> 24) | (1 << 2)); /* c = 1 at bit 2 of byte 4 */
    /* top: 64 bits from bit 4 of byte 0, spanning 9 bytes; set its highest bit. */
    b[8] = 0x08;
    check(&t_flags, b, "{\"a\":5,\"b\":-3,\"wide\":11259375,\"c\":\"GREEN\","
                       "\"top\":\"9223372038649117646\"}");
}

/* struct tagged { int kind; union { int i; float f; }; union value { char c; short s; } v; } */
static const struct dw_member anon_members[] = {
    {.name = "i", .type = &t_int},
    {.name = "f", .type = &t_float},
};
static const struct dw_type t_anon = {.kind = DWT_UNION, .size = 4, .n_members = 2,
                                      .members = anon_members};
static const struct dw_member value_members[] = {
    {.name = "c", .type = &t_char},
    {.name = "s", .type = &t_short},
};
static const struct dw_type t_union = {.kind = DWT_UNION, .name = "union value", .size = 2,
                                       .n_members = 2, .members = value_members};
static const struct dw_member tagged_members[] = {
    {.name = "kind", .type = &t_int},
    {.name = NULL, .offset = 4, .type = &t_anon},
    {.name = "v", .offset = 8, .type = &t_union},
};
static const struct dw_type t_tagged = {.kind = DWT_STRUCT, .name = "struct tagged", .size = 12,
                                        .n_members = 3, .members = tagged_members};

static void test_unions_and_anonymous(void **state)
{
    (void)state;
    uint8_t b[12] = {0};
    int32_t kind = 2;
    float f = 1.0f;
    memcpy(b, &kind, 4);
    memcpy(b + 4, &f, 4);
    b[8] = 'x';
    /* A union is shown once: its bytes and its first member. */
    check(&t_tagged, b, "{\"kind\":2,\"i\":1065353216,\"v\":{\"@bytes\":\"7800\",\"c\":\"x\"}}");
    struct value_opts depth1 = {.max_depth = 1};
    check_opts(&t_tagged, b, &depth1, "{\"kind\":2,\"i\":1065353216,\"v\":\"<union value>\"}");
    /* A depth asked for shows every member from the same bytes. */
    struct value_opts asked = {.max_depth = 3, .depth_asked = true};
    check_opts(&t_tagged, b, &asked,
               "{\"kind\":2,\"i\":1065353216,\"f\":1,\"v\":{\"c\":\"x\",\"s\":120}}");
}

static const struct dw_type t_int3 = {.kind = DWT_ARRAY, .size = 12, .target = &t_int, .count = 3};
static const struct dw_type t_int150 = {.kind = DWT_ARRAY, .size = 600, .target = &t_int,
                                        .count = 150};
static const struct dw_type t_char8 = {.kind = DWT_ARRAY, .size = 8, .target = &t_char, .count = 8};
static const struct dw_type t_char4 = {.kind = DWT_ARRAY, .size = 4, .target = &t_char, .count = 4};
static const struct dw_type t_char_flex = {.kind = DWT_ARRAY, .target = &t_char};
static const struct dw_type t_int_flex = {.kind = DWT_ARRAY, .target = &t_int};
static const struct dw_type t_grid = {.kind = DWT_ARRAY, .size = 24, .target = &t_int3, .count = 2};

static void test_arrays(void **state)
{
    (void)state;
    int32_t three[3] = {1, -2, 3};
    check(&t_int3, three, "[1,-2,3]");
    int32_t grid[6] = {1, 2, 3, 4, 5, 6};
    check(&t_grid, grid, "[[1,2,3],[4,5,6]]");
    int32_t many[150];
    for (int i = 0; i < 150; i++)
        many[i] = i;
    struct strbuf sb = {0};
    value_json(&sb, &t_int150, many, mem_read, NULL, NULL);
    char *got = sb_take(&sb);
    assert_non_null(strstr(got, ",98,99,\"...(50 more)\"]"));
    free(got);
    struct value_opts two = {.max_array = 2};
    check_opts(&t_int3, three, &two, "[1,-2,\"...(1 more)\"]");
    check(&t_char8, "abc\0def", "\"abc\"");
    check(&t_char4, "abcd", "\"abcd\"");
    struct value_opts cut = {.max_string = 2};
    check_opts(&t_char4, "abcd", &cut, "\"ab...(truncated)\"");
    check(&t_int_flex, "", "[]");
    check(&t_char_flex, "", "\"\"");
    poke(MEM_BASE + 0x700, "flex", 5);
    check_at(&t_char_flex, MEM_BASE + 0x700, NULL, "\"flex\"");
}

static void test_unknown_and_unreadable(void **state)
{
    (void)state;
    check(&t_void, "", "null");
    static const struct dw_type t_odd = {.kind = DWT_VOID, .size = 4};
    check(&t_odd, "\x01\x02\x0a\xff", "\"<bytes 01020aff>\"");
    static const struct dw_type t_wide = {.kind = DWT_VOID, .size = 20};
    check(&t_wide, "0123456789abcdefghij",
          "\"<bytes 30313233343536373839616263646566...>\"");
    check(NULL, "", "null");
    check_at(&t_node, 0x8, NULL, "\"<unreadable 0x8>\"");
    check_at(&t_int, MEM_BASE + MEM_SIZE - 2, NULL, "\"<unreadable 0x11ffe>\"");
}

/* Types that make no sense must not crash or loop. */
static const struct dw_type t_self_array;
static const struct dw_type t_self_array = {.kind = DWT_ARRAY, .size = 8, .target = &t_self_array,
                                            .count = 1};
static const struct dw_type t_huge_array = {.kind = DWT_ARRAY, .size = 8, .target = &t_outer,
                                            .count = UINT64_C(1) << 62};
static const struct dw_member far_members[] = {
    {.name = "far", .offset = UINT64_C(1) << 40, .type = &t_int},
    {.name = "wrap", .offset = UINT64_MAX, .type = &t_int},
    {.name = "untyped", .offset = 0, .type = NULL},
};
static const struct dw_type t_far = {.kind = DWT_STRUCT, .name = "far", .size = 4,
                                     .n_members = 3, .members = far_members};
static const struct dw_type t_empty = {.kind = DWT_STRUCT, .name = "struct empty"};
static const struct dw_type t_emptyp = {.kind = DWT_POINTER, .size = 8, .target = &t_empty};
static const struct dw_type t_int24 = {.kind = DWT_SIGNED, .name = "int24", .size = 3};
static const struct dw_type t_int96 = {.kind = DWT_SIGNED, .name = "int96", .size = 12};

static void test_absurd_types(void **state)
{
    (void)state;
    uint8_t zeros[64] = {0};
    struct strbuf sb = {0};
    value_json(&sb, &t_self_array, zeros, mem_read, NULL, NULL);
    char *got = sb_take(&sb);
    assert_non_null(strstr(got, "\"<too deep>\""));
    free(got);
    value_json(&sb, &t_huge_array, zeros, mem_read, NULL, NULL);
    got = sb_take(&sb);
    assert_non_null(strstr(got, "\"...(4611686018427387804 more)\"]"));
    free(got);
    check(&t_far, zeros, "{\"far\":null,\"wrap\":null,\"untyped\":null}");
    check_at(&t_far, MEM_BASE, NULL,
             "{\"far\":\"<unreadable 0x10000010000>\",\"wrap\":null,\"untyped\":null}");
    check(&t_empty, "", "{}");
    uint64_t p = MEM_BASE;
    check(&t_emptyp, &p, "\"0x10000\"");
    check(&t_int24, "\x01\x02\xff", "-65023");
    check(&t_int96, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c",
          "\"<bytes 0102030405060708090a0b0c>\"");
}

static void test_output_budget(void **state)
{
    (void)state;
    static const struct dw_type t_nodes = {.kind = DWT_ARRAY, .size = 16 * 100, .target = &t_node,
                                           .count = 100};
    uint8_t zeros[1600] = {0};
    struct value_opts tight = {.max_output = 100};
    struct strbuf sb = {0};
    value_json(&sb, &t_nodes, zeros, mem_read, NULL, &tight);
    char *got = sb_take(&sb);
    /* Elements until the budget runs out, inside the one being written too. */
    const char *element = "{\"value\":0,\"next\":null},";
    size_t n = strlen(element);
    for (int i = 0; i < 4; i++)
        assert_memory_equal(got + 1 + i * n, element, n);
    assert_string_equal(got + 1 + 4 * n, "{\"value\":0,\"...\":\"(1 more)\"},\"...(95 more)\"]");
    free(got);
    /* Struct members collapse into one "..." entry. */
    struct value_opts tiny = {.max_output = 1};
    check_opts(&t_outer, zeros, &tiny, "{\"id\":0,\"...\":\"(1 more)\"}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_chars_and_enums),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_pointers),
        cmocka_unit_test(test_cycles_and_depth),
        cmocka_unit_test(test_structs),
        cmocka_unit_test(test_array_of_structs_past_the_depth),
        cmocka_unit_test(test_bitfields),
        cmocka_unit_test(test_unions_and_anonymous),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_unknown_and_unreadable),
        cmocka_unit_test(test_absurd_types),
        cmocka_unit_test(test_output_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
