/*
 * test_value_compact.c - the compact renderings of dwarf/value.h on hand-built types
 * and fake memory: function pointers by symbol, opaque structs of system headers
 * (with their useful fields), large structs at depth 1, references across calls;
 * the argument budget shared by dwarf/abi.h; the one-line renderings of
 * dwarf/value_short.h; and ptrace/proc/fnsym.h naming this process's own code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf/abi.h"
#include "dwarf/value.h"
#include "dwarf/value_short.h"
#include "ptrace/proc/fnsym.h"

#define MEM_BASE 0x10000u
#define FAKE_MEM_BASE MEM_BASE
#define FAKE_MEM_SIZE 65536u
#include "fake_mem.h"

static char *render(const struct dw_type *t, const void *bytes, const struct value_opts *o)
{
    struct strbuf sb = {0};
    value_json(&sb, t, bytes, mem_read, NULL, o);
    return sb_take(&sb);
}

static void check(const struct dw_type *t, const void *bytes, const struct value_opts *o,
                  const char *expected)
{
    char *got = render(t, bytes, o);
    assert_string_equal(got, expected);
    free(got);
}

static const struct dw_type t_int = {.kind = DWT_SIGNED, .name = "int", .size = 4};

/* ---- function pointers ---------------------------------------------------------- */

static bool fake_symbols(void *ctx, uint64_t addr, char *out, size_t cap)
{
    (void)ctx;
    if (addr < 0x401000 || addr >= 0x401040)
        return false;
    if (addr == 0x401000)
        snprintf(out, cap, "twice");
    else
        snprintf(out, cap, "twice+0x%llx", (unsigned long long)(addr - 0x401000));
    return true;
}

static void test_function_pointers(void **state)
{
    (void)state;
    static const struct dw_type fn = {.kind = DWT_FUNCTION, .name = "int (int)"};
    static const struct dw_type fnp = {.kind = DWT_POINTER, .size = 8, .target = &fn};
    struct value_opts o = {.symbolize = fake_symbols};
    uint64_t p = 0x401000;
    check(&fnp, &p, &o, "\"twice\"");
    p = 0x401004;
    check(&fnp, &p, &o, "\"twice+0x4\"");
    p = 0x500000; /* no symbol: the address */
    check(&fnp, &p, &o, "\"0x500000\"");
    p = 0;
    check(&fnp, &p, &o, "null");
    p = 0x401000; /* no callback: the address */
    check(&fnp, &p, NULL, "\"0x401000\"");
}

/* A function of this program for fnsym to name. */
static __attribute__((noinline)) int fnsym_target(int v)
{
    return v * 3 + 1;
}

/* ptrace/proc/fnsym.h on this very process: its own function and libc's. */
static void test_fnsym_names_code(void **state)
{
    (void)state;
    struct fnsym *f = fnsym_new();
    assert_non_null(f);
    char name[256];
    assert_false(fnsym_name(f, (uint64_t)(uintptr_t)fnsym_target, name, sizeof name));
    fnsym_use(f, getpid());
    assert_true(fnsym_name(f, (uint64_t)(uintptr_t)fnsym_target, name, sizeof name));
    assert_string_equal(name, "fnsym_target");
    assert_true(fnsym_name(f, (uint64_t)(uintptr_t)fnsym_target + 4, name, sizeof name));
    assert_string_equal(name, "fnsym_target+0x4");
    assert_true(fnsym_name(f, (uint64_t)(uintptr_t)getpid, name, sizeof name));
    assert_non_null(strstr(name, "getpid"));
    int local = 0; /* the stack: no module */
    assert_false(fnsym_name(f, (uint64_t)(uintptr_t)&local, name, sizeof name));
    fnsym_free(f);
}

/* ---- opaque structs of system headers ----------------------------------------- */

/* glibc's pthread_mutex_t: union { struct __pthread_mutex_s __data; char __size[40];
 * long __align; }, reduced to the members the rendering reads. */
static const struct dw_member mutex_s_members[] = {
    {.name = "__lock", .offset = 0, .type = &t_int},
    {.name = "__count", .offset = 4, .type = &t_int},
    {.name = "__owner", .offset = 8, .type = &t_int},
};
static const struct dw_type t_mutex_s = {.kind = DWT_STRUCT, .name = "struct __pthread_mutex_s",
                                         .size = 40, .n_members = 3,
                                         .members = mutex_s_members, .system_header = true};
static const struct dw_member mutex_members[] = {
    {.name = "__data", .type = &t_mutex_s},
    {.name = "__align", .type = &(const struct dw_type){.kind = DWT_SIGNED, .name = "long",
                                                        .size = 8}},
};
static const struct dw_type t_mutex = {.kind = DWT_UNION, .name = "pthread_mutex_t", .size = 40,
                                       .n_members = 2, .members = mutex_members,
                                       .system_header = true};
static const struct dw_type t_mutexp = {.kind = DWT_POINTER, .size = 8, .target = &t_mutex};

static const struct dw_member timespec_members[] = {
    {.name = "tv_sec", .offset = 0, .type = &t_int},
    {.name = "tv_nsec", .offset = 8, .type = &t_int},
};
static const struct dw_type t_timespec = {.kind = DWT_STRUCT, .name = "struct timespec",
                                          .size = 16, .n_members = 2,
                                          .members = timespec_members, .system_header = true};
static const struct dw_type t_stat = {.kind = DWT_STRUCT, .name = "struct stat", .size = 144,
                                      .n_members = 1, .members = timespec_members,
                                      .system_header = true};

static void test_system_structs_opaque(void **state)
{
    (void)state;
    int32_t m[10] = {1, 0, 4242};
    poke(MEM_BASE, m, sizeof m);
    uint64_t p = MEM_BASE;
    check(&t_mutexp, &p, NULL,
          "{\"@opaque\":\"<pthread_mutex_t 0x10000>\",\"owner\":4242,\"locked\":1,\"count\":0}");
    /* By value: no address. */
    check(&t_mutex, m, NULL, "{\"@opaque\":\"<pthread_mutex_t>\",\"owner\":4242,\"locked\":1,"
                             "\"count\":0}");
    /* A type without useful fields listed is its marker alone; stat lists members the
     * hand-built type lacks, so none are shown. */
    check(&t_stat, m, NULL, "{\"@opaque\":\"<struct stat>\"}");
    /* Small system structs are plain values. */
    int64_t ts[2] = {5, 6};
    check(&t_timespec, ts, NULL, "{\"tv_sec\":5,\"tv_nsec\":6}");
    /* A depth asked for expands them. */
    struct value_opts asked = {.max_depth = 2, .depth_asked = true};
    check(&t_mutexp, &p, &asked, "{\"@ptr\":\"0x10000\",\"__data\":{\"__lock\":1,\"__count\":0,"
                                 "\"__owner\":4242},\"__align\":1}");
}

/* ---- large structs --------------------------------------------------------------- */

static const struct dw_member small_members[] = {{.name = "v", .type = &t_int}};
static const struct dw_type t_small = {.kind = DWT_STRUCT, .name = "struct small", .size = 4,
                                       .n_members = 1, .members = small_members};
static const struct dw_type t_smallp = {.kind = DWT_POINTER, .size = 8, .target = &t_small};
static struct dw_member big_members[18];
static const struct dw_type t_big = {.kind = DWT_STRUCT, .name = "struct big", .size = 80,
                                     .n_members = 18, .members = big_members};
static const struct dw_type t_bigp = {.kind = DWT_POINTER, .size = 8, .target = &t_big};
static const struct dw_member holder_members[] = {{.name = "big", .type = &t_bigp}};
static const struct dw_type t_holder = {.kind = DWT_STRUCT, .name = "struct holder", .size = 8,
                                        .n_members = 1, .members = holder_members};

static void test_large_structs_at_depth_one(void **state)
{
    (void)state;
    static char names[17][16];
    for (int i = 0; i < 17; i++) {
        snprintf(names[i], sizeof names[i], "m%d", i);
        big_members[i] = (struct dw_member){.name = names[i], .offset = 4 * (uint64_t)i,
                                            .type = &t_int};
    }
    big_members[17] = (struct dw_member){.name = "small", .offset = 72, .type = &t_smallp};
    uint8_t big[80] = {0};
    uint64_t small_at = MEM_BASE + 0x100, big_at = MEM_BASE;
    poke(big_at, big, sizeof big);
    poke64(big_at + 72, small_at);
    int32_t seven = 7;
    poke(small_at, &seven, 4);
    /* 18 members: large. Its members, and its nested struct as a marker. */
    char *got = render(&t_bigp, &big_at, NULL);
    assert_non_null(strstr(got, "\"m16\":0,\"small\":\"<struct small at 0x10100>\"}"));
    free(got);
    /* Met inside a small struct: a marker. */
    check(&t_holder, &big_at, NULL, "{\"big\":\"<struct big at 0x10000>\"}");
    /* A depth asked for: expanded. */
    struct value_opts asked = {.max_depth = 3, .depth_asked = true};
    got = render(&t_bigp, &big_at, &asked);
    assert_non_null(strstr(got, "\"small\":{\"@ptr\":\"0x10100\",\"v\":7}}"));
    free(got);
    assert_true(value_is_large(&t_big) && value_is_large(&t_bigp));
    assert_false(value_is_large(&t_small) || value_is_large(&t_int));
}

/* ---- references across calls ---------------------------------------------------- */

static void test_refs_across_calls(void **state)
{
    (void)state;
    int32_t seven = 7;
    poke(MEM_BASE, &seven, 4);
    uint64_t p = MEM_BASE;
    struct value_refs refs = {0};
    struct value_opts o = {.refs = &refs};
    refs.where = "frame 0";
    check(&t_smallp, &p, &o, "{\"@ptr\":\"0x10000\",\"v\":7}");
    refs.where = "frame 1";
    check(&t_smallp, &p, &o, "{\"@ptr\":\"0x10000\",\"@see\":\"frame 0\"}");
    check(&t_smallp, &p, &o, "{\"@ptr\":\"0x10000\",\"@see\":\"frame 0\"}");
    value_refs_free(&refs);
    check(&t_smallp, &p, &o, "{\"@ptr\":\"0x10000\",\"v\":7}");
    value_refs_free(&refs);
}

/* ---- the argument budget --------------------------------------------------------- */

static void test_argument_budget_shared(void **state)
{
    (void)state;
    static const struct dw_type t_char = {.kind = DWT_CHAR, .name = "char", .size = 1};
    static const struct dw_type text = {.kind = DWT_ARRAY, .name = "char[2000]", .size = 2000,
                                        .target = &t_char, .count = 2000};
    static const struct dw_type texts = {.kind = DWT_ARRAY, .size = 8000, .target = &text,
                                         .count = 4};
    static const struct dw_member blob_members[] = {{.name = "t", .type = &texts}};
    static const struct dw_type blob = {.kind = DWT_STRUCT, .name = "struct blob", .size = 8000,
                                        .n_members = 1, .members = blob_members};
    static const struct dw_type blobp = {.kind = DWT_POINTER, .size = 8, .target = &blob};
    const struct dw_param params[] = {{"a", &blobp}, {"b", &blobp}, {"n", &t_int}};
    const struct dw_function f = {.name = "f", .params = params, .n_params = 3};
    memset(mem, 'x', 8000);
    for (int i = 0; i < 4; i++)
        mem[i * 2000 + 1999] = '\0';
    struct abi_regs r = {.rdi = MEM_BASE, .rsi = MEM_BASE, .rdx = 42};
    struct strbuf sb = {0};
    struct value_opts o = {.max_output = 6000};
    abi_args_json(&sb, &f, &r, mem_read, NULL, &o);
    char *got = sb_take(&sb);
    /* a takes its share (2000 of 6000), b still gets text, n is whole. */
    const char *b = strstr(got, "{\"name\":\"b\"");
    assert_non_null(b);
    assert_true(b - got < 3200);
    assert_non_null(strstr(b, "\"t\":[\"xxxxxxxx"));
    assert_non_null(strstr(got, "{\"name\":\"n\",\"value\":42}]"));
    assert_true(strlen(got) < 7500);
    free(got);
}

/* ---- short renderings ------------------------------------------------------------ */

static void check_short(const char *json, const char *expected)
{
    struct strbuf sb = {0};
    value_short(&sb, json, VALUE_SHORT_LIMIT);
    char *got = sb_take(&sb);
    assert_string_equal(got, expected);
    free(got);
}

static void test_value_short(void **state)
{
    (void)state;
    check_short("42", "42");
    check_short("null", "null");
    check_short("\"abc\"", "\"abc\"");
    check_short("\"abcdefghijklmnopqrstuvwxyz0123\"", "\"abcdefghijklmnopqrstuvwx\xe2\x80\xa6\"");
    check_short("\"0x7ffd1000\"", "0x7ffd1000");
    check_short("\"<struct node at 0x10>\"", "<struct node at 0x10>");
    /* an object a pointer led to keeps its address: a use-after-free's evidence */
    check_short("{\"@ptr\":\"0x10\",\"x\":1,\"y\":2}", "@0x10 {x=1, y=2}");
    check_short("{\"v\":1,\"next\":{\"@ptr\":\"0x55e4c0a1b2a0\",\"v\":2}}",
                "{v=1, next=@0x55e4c0a1b2a0 {v=2}}");
    check_short("{\"@bytes\":\"0100\",\"c\":\"x\"}", "{c=\"x\"}");
    check_short("{\"@opaque\":\"<FILE 0x10>\"}", "<FILE 0x10>");
    check_short("{\"@opaque\":\"<FILE 0x10>\",\"fileno\":1}", "{fileno=1}");
    check_short("[1, 2, 3]", "[1, 2, 3]");
    check_short("{\"a\":{\"b\":{\"c\":{\"d\":1}}}}", "{a={b={c={\xe2\x80\xa6}}}}");
    check_short("{\"a\":[[[1]]]}", "{a=[[[\xe2\x80\xa6]]]}");
    check_short("{\"@ptr\":\"0x10\",\"@see\":\"frame 0\"}", "@0x10 {}");
    /* Long values end with the ellipsis within the limit, and the closing character
     * of each container they were cut in. */
    struct strbuf sb = {0};
    value_short(&sb, "[1111111111, 2222222222, 3333333333, 4444444444, 5555555555, 6666666666, "
                     "7777777777, 8888888888, 9999999999]", VALUE_SHORT_LIMIT);
    char *got = sb_take(&sb);
    assert_true(strlen(got) <= VALUE_SHORT_LIMIT + 3 + 1);
    assert_string_equal(got + strlen(got) - 4, "\xe2\x80\xa6]");
    free(got);
    /* Invalid JSON renders as far as it goes, without reading past it. */
    check_short("{\"a\":1,", "{a=1");
    check_short("{\"a\"", "{");
    check_short("[1,", "[1, ");
    check_short("", "");
}

static void test_value_short_args(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    value_short_args(&sb, "[{\"name\":\"a\",\"value\":1},{\"name\":\"s\",\"value\":\"hi\"},"
                          "{\"name\":null,\"value\":{\"x\":1}}]", VALUE_SHORT_LIMIT);
    char *got = sb_take(&sb);
    assert_string_equal(got, "a=1, s=\"hi\", ?={x=1}");
    free(got);
    /* A long first argument is cut to its share; the last still shows. */
    value_short_args(&sb, "[{\"name\":\"big\",\"value\":[1111111111,2222222222,3333333333,"
                          "4444444444,5555555555]},{\"name\":\"n\",\"value\":7}]", 40);
    got = sb_take(&sb);
    assert_non_null(strstr(got, "big=[1111111111, \xe2\x80\xa6], n=7"));
    free(got);
    /* A long string shows its start within its share, not the ellipsis alone. */
    value_short_args(&sb, "[{\"name\":\"title\",\"value\":\"a title longer than the fifteen "
                          "bytes kept inline\"},{\"name\":\"n\",\"value\":7}]", 40);
    got = sb_take(&sb);
    assert_non_null(strstr(got, "title=\"a title"));
    assert_non_null(strstr(got, "\xe2\x80\xa6\", n=7"));
    free(got);
    value_short_args(&sb, "[{\"name\"", VALUE_SHORT_LIMIT); /* invalid: stops */
    sb_free(&sb);
    value_short_args(&sb, "[]", VALUE_SHORT_LIMIT);
    got = sb_take(&sb);
    assert_string_equal(got ? got : "", "");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_function_pointers),
        cmocka_unit_test(test_fnsym_names_code),
        cmocka_unit_test(test_system_structs_opaque),
        cmocka_unit_test(test_large_structs_at_depth_one),
        cmocka_unit_test(test_refs_across_calls),
        cmocka_unit_test(test_argument_budget_shared),
        cmocka_unit_test(test_value_short),
        cmocka_unit_test(test_value_short_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
