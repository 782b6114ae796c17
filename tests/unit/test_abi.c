/*
 * test_abi.c - dwarf/abi.c: SysV x86-64 argument and return value locations on
 * hand-built signatures, registers and a fake stack: integer and SSE registers
 * counted separately, the 7th integer argument on the stack, small structs split
 * between general and xmm registers, large structs and long double on the stack, a
 * struct that no longer fits in registers, the hidden result pointer, and every kind
 * of return value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dwarf/abi.h"

/* Fake target memory: the stack and a result buffer. */
#define MEM_BASE 0x20000u
#define FAKE_MEM_BASE MEM_BASE
#define FAKE_MEM_SIZE 4096u
#define RSP (MEM_BASE + 0x108u) /* at entry rsp+8 is 16-byte aligned */
#include "fake_mem.h"


static void set_xmm(struct abi_regs *r, int i, double d) { memcpy(r->xmm[i], &d, 8); }

static void set_xmm_float(struct abi_regs *r, int i, float f) { memcpy(r->xmm[i], &f, 4); }

static struct abi_regs fresh_regs(void)
{
    memset(mem, 0xcc, sizeof mem);
    struct abi_regs r;
    memset(&r, 0xee, sizeof r); /* garbage everywhere that is not set on purpose */
    r.rsp = RSP;
    poke64(RSP, 0x401234); /* return address */
    return r;
}

static void check_args(const struct dw_function *f, const struct abi_regs *r, const char *expected)
{
    struct strbuf sb = {0};
    abi_args_json(&sb, f, r, mem_read, NULL, NULL);
    char *got = sb_take(&sb);
    assert_string_equal(got, expected);
    free(got);
}

static void check_return(const struct dw_type *t, const struct abi_regs *r, uint64_t hidden,
                         const char *expected)
{
    struct strbuf sb = {0};
    abi_return_json(&sb, t, r, hidden, mem_read, NULL, NULL);
    char *got = sb_take(&sb);
    assert_string_equal(got, expected);
    free(got);
}

static const struct dw_type t_int = {.kind = DWT_SIGNED, .name = "int", .size = 4};
static const struct dw_type t_long = {.kind = DWT_SIGNED, .name = "long", .size = 8};
static const struct dw_type t_char = {.kind = DWT_CHAR, .name = "char", .size = 1};
static const struct dw_type t_bool = {.kind = DWT_BOOL, .name = "bool", .size = 1};
static const struct dw_type t_float = {.kind = DWT_FLOAT, .name = "float", .size = 4};
static const struct dw_type t_double = {.kind = DWT_FLOAT, .name = "double", .size = 8};
static const struct dw_type t_ldouble = {.kind = DWT_FLOAT, .name = "long double", .size = 16};
static const struct dw_type t_charp = {.kind = DWT_POINTER, .size = 8, .target = &t_char};
static const struct dw_type t_void = {.kind = DWT_VOID};
static const struct dw_enumerator mode_values[] = {{"READ", 0}, {"WRITE", 1}};
static const struct dw_type t_mode = {.kind = DWT_ENUM, .name = "enum mode", .size = 4,
                                      .target = &t_int, .n_enumerators = 2,
                                      .enumerators = mode_values};

/* struct mixed { int i; float f; int j; }: 12 bytes, both eightbytes INTEGER. */
static const struct dw_member mixed_members[] = {
    {.name = "i", .offset = 0, .type = &t_int},
    {.name = "f", .offset = 4, .type = &t_float},
    {.name = "j", .offset = 8, .type = &t_int},
};
static const struct dw_type t_mixed = {.kind = DWT_STRUCT, .name = "struct mixed", .size = 12,
                                       .n_members = 3, .members = mixed_members};
/* struct fpair { float x, y; int tag; }: 12 bytes, SSE then INTEGER. */
static const struct dw_member fpair_members[] = {
    {.name = "x", .offset = 0, .type = &t_float},
    {.name = "y", .offset = 4, .type = &t_float},
    {.name = "tag", .offset = 8, .type = &t_int},
};
static const struct dw_type t_fpair = {.kind = DWT_STRUCT, .name = "struct fpair", .size = 12,
                                       .n_members = 3, .members = fpair_members};
/* struct big { long a, b, c; }: 24 bytes, MEMORY. */
static const struct dw_member big_members[] = {
    {.name = "a", .offset = 0, .type = &t_long},
    {.name = "b", .offset = 8, .type = &t_long},
    {.name = "c", .offset = 16, .type = &t_long},
};
static const struct dw_type t_big = {.kind = DWT_STRUCT, .name = "struct big", .size = 24,
                                     .n_members = 3, .members = big_members};
/* struct two { long a; int b; } and struct vec { double x, y; } and
 * struct dl { double d; long l; } */
static const struct dw_member two_members[] = {
    {.name = "a", .offset = 0, .type = &t_long},
    {.name = "b", .offset = 8, .type = &t_int},
};
static const struct dw_type t_two = {.kind = DWT_STRUCT, .name = "struct two", .size = 16,
                                     .n_members = 2, .members = two_members};
static const struct dw_member vec_members[] = {
    {.name = "x", .offset = 0, .type = &t_double},
    {.name = "y", .offset = 8, .type = &t_double},
};
static const struct dw_type t_vec = {.kind = DWT_STRUCT, .name = "struct vec", .size = 16,
                                     .n_members = 2, .members = vec_members};
static const struct dw_member dl_members[] = {
    {.name = "d", .offset = 0, .type = &t_double},
    {.name = "l", .offset = 8, .type = &t_long},
};
static const struct dw_type t_dl = {.kind = DWT_STRUCT, .name = "struct dl", .size = 16,
                                    .n_members = 2, .members = dl_members};
/* A packed struct { char c; int i; } (int at offset 1): MEMORY. */
static const struct dw_member packed_members[] = {
    {.name = "c", .offset = 0, .type = &t_char},
    {.name = "i", .offset = 1, .type = &t_int},
};
static const struct dw_type t_packed = {.kind = DWT_STRUCT, .name = "struct packed", .size = 5,
                                        .n_members = 2, .members = packed_members};

static void test_int_and_sse_counted_separately(void **state)
{
    (void)state;
    const struct dw_param params[] = {
        {"a", &t_int}, {"b", &t_double}, {"c", &t_int}, {"d", &t_double},
        {"e", &t_long}, {"f", &t_float}, {"flag", &t_bool}, {"m", &t_mode},
    };
    const struct dw_function f = {.name = "f", .params = params, .n_params = 8};
    struct abi_regs r = fresh_regs();
    r.rdi = 0xffffffff00000007; /* upper half is garbage for an int */
    set_xmm(&r, 0, 1.5);
    r.rsi = (uint64_t)-3;
    set_xmm(&r, 1, -0.25);
    r.rdx = 1234567890123;
    set_xmm_float(&r, 2, 2.5f);
    r.rcx = 1;
    r.r8 = 1;
    check_args(&f, &r,
               "[{\"name\":\"a\",\"value\":7},{\"name\":\"b\",\"value\":1.5},"
               "{\"name\":\"c\",\"value\":-3},{\"name\":\"d\",\"value\":-0.25},"
               "{\"name\":\"e\",\"value\":1234567890123},{\"name\":\"f\",\"value\":2.5},"
               "{\"name\":\"flag\",\"value\":true},{\"name\":\"m\",\"value\":\"WRITE\"}]");
}

static void test_seventh_int_on_stack(void **state)
{
    (void)state;
    const struct dw_param params[] = {
        {"a", &t_int}, {"b", &t_int}, {"c", &t_int}, {"d", &t_int},
        {"e", &t_int}, {"f", &t_int}, {"g", &t_long}, {NULL, &t_int}, {"x", &t_double},
    };
    const struct dw_function f = {.name = "seven", .params = params, .n_params = 9};
    struct abi_regs r = fresh_regs();
    r.rdi = 1, r.rsi = 2, r.rdx = 3, r.rcx = 4, r.r8 = 5, r.r9 = 6;
    poke64(RSP + 8, 7);
    poke64(RSP + 16, 0xcccccccc00000008); /* an int in a stack slot: low 4 bytes */
    set_xmm(&r, 0, 9.0);
    check_args(&f, &r,
               "[{\"name\":\"a\",\"value\":1},{\"name\":\"b\",\"value\":2},"
               "{\"name\":\"c\",\"value\":3},{\"name\":\"d\",\"value\":4},"
               "{\"name\":\"e\",\"value\":5},{\"name\":\"f\",\"value\":6},"
               "{\"name\":\"g\",\"value\":7},{\"name\":null,\"value\":8},"
               "{\"name\":\"x\",\"value\":9}]");
}

static void test_small_structs_in_registers(void **state)
{
    (void)state;
    const struct dw_param params[] = {{"m", &t_mixed}, {"p", &t_fpair}, {"s", &t_charp}};
    const struct dw_function f = {.name = "small", .params = params, .n_params = 3};
    struct abi_regs r = fresh_regs();
    float half = 0.5f;
    uint32_t half_bits;
    memcpy(&half_bits, &half, 4);
    r.rdi = (uint64_t)half_bits << 32 | 11; /* m.i = 11, m.f = 0.5 */
    r.rsi = 0xdeadbeef00000012;             /* m.j = 18 (low 4 bytes) */
    set_xmm_float(&r, 0, 1.0f);             /* p.x */
    memcpy(r.xmm[0] + 4, &half, 4);         /* p.y */
    r.rdx = 77;                             /* p.tag */
    poke(MEM_BASE + 0x800, "hi", 3);
    r.rcx = MEM_BASE + 0x800;
    check_args(&f, &r,
               "[{\"name\":\"m\",\"value\":{\"i\":11,\"f\":0.5,\"j\":18}},"
               "{\"name\":\"p\",\"value\":{\"x\":1,\"y\":0.5,\"tag\":77}},"
               "{\"name\":\"s\",\"value\":\"hi\"}]");
}

static void test_memory_args(void **state)
{
    (void)state;
    /* big goes on the stack, n keeps rdi; after five ints the 16-byte struct two no
     * longer fits (needs 2 of the 1 left): stack, and the last int still takes r9.
     * long double and the packed struct are always in memory. */
    const struct dw_param params[] = {
        {"big", &t_big}, {"n", &t_int}, {"a", &t_int}, {"b", &t_int}, {"c", &t_int},
        {"d", &t_int}, {"two", &t_two}, {"last", &t_int}, {"ld", &t_ldouble},
        {"pk", &t_packed},
    };
    const struct dw_function f = {.name = "mem", .params = params, .n_params = 10};
    struct abi_regs r = fresh_regs();
    r.rdi = 1, r.rsi = 2, r.rdx = 3, r.rcx = 4, r.r8 = 5, r.r9 = 6;
    poke64(RSP + 8, 100); /* big at rsp+8 .. +32 */
    poke64(RSP + 16, 200);
    poke64(RSP + 24, 300);
    poke64(RSP + 32, 40); /* two at rsp+32 .. +48 */
    poke64(RSP + 40, 41);
    long double ld = 2.75L; /* rsp+48 rounded up to 16: rsp+56 */
    poke(RSP + 56, &ld, 10);
    poke(RSP + 72, "x\x2a\0\0\0", 5); /* pk */
    check_args(&f, &r,
               "[{\"name\":\"big\",\"value\":{\"a\":100,\"b\":200,\"c\":300}},"
               "{\"name\":\"n\",\"value\":1},{\"name\":\"a\",\"value\":2},"
               "{\"name\":\"b\",\"value\":3},{\"name\":\"c\",\"value\":4},"
               "{\"name\":\"d\",\"value\":5},{\"name\":\"two\",\"value\":{\"a\":40,\"b\":41}},"
               "{\"name\":\"last\",\"value\":6},{\"name\":\"ld\",\"value\":2.75},"
               "{\"name\":\"pk\",\"value\":{\"c\":\"x\",\"i\":42}}]");
}

static void test_long_double_alignment(void **state)
{
    (void)state;
    /* seven longs: the 7th at rsp+8; the long double skips rsp+16 to rsp+24. */
    const struct dw_param params[] = {
        {"a", &t_long}, {"b", &t_long}, {"c", &t_long}, {"d", &t_long},
        {"e", &t_long}, {"f", &t_long}, {"g", &t_long}, {"ld", &t_ldouble}, {"h", &t_long},
    };
    const struct dw_function f = {.name = "align", .params = params, .n_params = 9};
    struct abi_regs r = fresh_regs();
    r.rdi = r.rsi = r.rdx = r.rcx = r.r8 = r.r9 = 0;
    poke64(RSP + 8, 7);
    long double ld = -1.0L;
    poke(RSP + 24, &ld, 10);
    poke64(RSP + 40, 8);
    check_args(&f, &r,
               "[{\"name\":\"a\",\"value\":0},{\"name\":\"b\",\"value\":0},"
               "{\"name\":\"c\",\"value\":0},{\"name\":\"d\",\"value\":0},"
               "{\"name\":\"e\",\"value\":0},{\"name\":\"f\",\"value\":0},"
               "{\"name\":\"g\",\"value\":7},{\"name\":\"ld\",\"value\":-1},"
               "{\"name\":\"h\",\"value\":8}]");
}

static void test_hidden_return_pointer(void **state)
{
    (void)state;
    const struct dw_param params[] = {{"this", &t_charp}, {"y", &t_int}};
    const struct dw_function f = {.name = "make", .params = params, .n_params = 2,
                                  .return_type = &t_big};
    assert_true(abi_returns_in_memory(&t_big));
    assert_false(abi_returns_in_memory(&t_two));
    assert_false(abi_returns_in_memory(&t_vec));
    assert_false(abi_returns_in_memory(&t_ldouble));
    assert_false(abi_returns_in_memory(NULL));
    assert_true(abi_returns_in_memory(&t_packed));
    struct abi_regs r = fresh_regs();
    r.rdi = MEM_BASE + 0x900; /* the result buffer */
    r.rsi = 0;
    r.rdx = 5;
    check_args(&f, &r, "[{\"name\":\"this\",\"value\":null},{\"name\":\"y\",\"value\":5}]");

    /* At exit: the buffer is filled; read through the pointer saved at entry. */
    poke64(MEM_BASE + 0x900, 1);
    poke64(MEM_BASE + 0x908, 2);
    poke64(MEM_BASE + 0x910, 3);
    r.rax = 0;
    check_return(&t_big, &r, MEM_BASE + 0x900, "{\"a\":1,\"b\":2,\"c\":3}");
    r.rax = MEM_BASE + 0x900; /* without the saved pointer: rax holds it */
    check_return(&t_big, &r, 0, "{\"a\":1,\"b\":2,\"c\":3}");
}

static void test_return_values(void **state)
{
    (void)state;
    struct abi_regs r = fresh_regs();
    r.rax = 0xffffffff0000002a;
    check_return(&t_int, &r, 0, "42");
    set_xmm(&r, 0, 3.25);
    check_return(&t_double, &r, 0, "3.25");
    check_return(NULL, &r, 0, "null");
    check_return(&t_void, &r, 0, "null");
    r.rax = (uint64_t)-9;
    r.rdx = 0xaaaaaaaa00000004;
    check_return(&t_two, &r, 0, "{\"a\":-9,\"b\":4}");
    set_xmm(&r, 0, 1.5);
    set_xmm(&r, 1, -2.0);
    check_return(&t_vec, &r, 0, "{\"x\":1.5,\"y\":-2}");
    set_xmm(&r, 0, 0.125);
    r.rax = 17;
    check_return(&t_dl, &r, 0, "{\"d\":0.125,\"l\":17}");
    float half = 0.5f;
    uint32_t half_bits;
    memcpy(&half_bits, &half, 4);
    r.rax = (uint64_t)half_bits << 32 | 3;
    r.rdx = 4;
    check_return(&t_mixed, &r, 0, "{\"i\":3,\"f\":0.5,\"j\":4}");
    long double ld = 6.5L;
    memcpy(r.st0, &ld, 10);
    check_return(&t_ldouble, &r, 0, "6.5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_and_sse_counted_separately),
        cmocka_unit_test(test_seventh_int_on_stack),
        cmocka_unit_test(test_small_structs_in_registers),
        cmocka_unit_test(test_memory_args),
        cmocka_unit_test(test_long_double_alignment),
        cmocka_unit_test(test_hidden_return_pointer),
        cmocka_unit_test(test_return_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
