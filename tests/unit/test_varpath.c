/*
 * test_varpath.c - dwarf/varpath.c on hand-built types: member paths through structs,
 * arrays of structs, anonymous unions and typedefs; system-header objects named
 * whole; glibc's reserved members, padding, the inside of a scalar and offsets past
 * the end left unnamed, with the buffer untouched. Then dw_global_at (globals.h) on the
 * globals_all fixture and its library: the variable whose bytes hold an address, and
 * the path inside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dwarf/frame.h"
#include "dwarf/globals.h"
#include "dwarf/varpath.h"
#include "fixtures.h"

static const struct dw_type t_int = {.kind = DWT_SIGNED, .name = "int", .size = 4};
static const struct dw_type t_long = {.kind = DWT_SIGNED, .name = "long", .size = 8};
static const struct dw_type t_char = {.kind = DWT_CHAR, .name = "char", .size = 1};
static const struct dw_type t_size40 = {.kind = DWT_ARRAY, .target = &t_char, .size = 40,
                                        .count = 40};

/* pthread_mutex_t as glibc declares it: a union of a system header, whose members
 * are reserved names. */
static const struct dw_member mutex_m[] = {
    {.name = "__size", .offset = 0, .type = &t_size40},
    {.name = "__align", .offset = 0, .type = &t_long},
};
static const struct dw_type t_mutex = {.kind = DWT_UNION, .name = "pthread_mutex_t",
                                       .size = 40, .n_members = 2, .members = mutex_m,
                                       .system_header = true};
/* the same shape declared by the program: its members are reserved all the same */
static const struct dw_type t_own_mutex = {.kind = DWT_UNION, .name = "my_mutex_t",
                                           .size = 40, .n_members = 2, .members = mutex_m};

/* struct shard { int hits; pthread_mutex_t mu; }: 4 bytes of padding after hits */
static const struct dw_member shard_m[] = {
    {.name = "hits", .offset = 0, .type = &t_int},
    {.name = "mu", .offset = 8, .type = &t_mutex},
};
static const struct dw_type t_shard = {.kind = DWT_STRUCT, .name = "struct shard", .size = 48,
                                       .n_members = 2, .members = shard_m};
static const struct dw_type t_shards = {.kind = DWT_ARRAY, .target = &t_shard, .size = 192,
                                        .count = 4};
/* an anonymous union { long tag; struct shard first; } inside the table */
static const struct dw_member anon_m[] = {
    {.name = "tag", .offset = 0, .type = &t_long},
    {.name = "first", .offset = 0, .type = &t_shard},
};
static const struct dw_type t_anon = {.kind = DWT_UNION, .size = 48, .n_members = 2,
                                      .members = anon_m};
/* struct table { int n; struct shard shards[4]; union { ... }; my_mutex_t own; } */
static const struct dw_member table_m[] = {
    {.name = "n", .offset = 0, .type = &t_int},
    {.name = "shards", .offset = 8, .type = &t_shards},
    {.name = NULL, .offset = 200, .type = &t_anon},
    {.name = "own", .offset = 248, .type = &t_own_mutex},
};
static const struct dw_type t_table = {.kind = DWT_STRUCT, .name = "struct table",
                                       .size = 288, .n_members = 4, .members = table_m};
/* typedef struct table table_t: the typedef's name, the struct's shape */
static const struct dw_type t_table_td = {.kind = DWT_STRUCT, .name = "table_t",
                                          .size = 288, .n_members = 4, .members = table_m};
static const struct dw_type t_unsized = {.kind = DWT_STRUCT, .name = "struct opaque"};

/* The path of off in t appended after "v"; NULL when dw_member_path says none (then
 * "v" must be left as it was). */
static char *path_of(const struct dw_type *t, uint64_t off)
{
    struct strbuf sb = {0};
    sb_puts(&sb, "v");
    bool ok = dw_member_path(t, off, &sb);
    if (!ok) {
        assert_string_equal(sb.buf, "v");
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

static void expect(const struct dw_type *t, uint64_t off, const char *want)
{
    char *got = path_of(t, off);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_members_and_elements(void **state)
{
    (void)state;
    expect(&t_table, 0, "v.n");
    expect(&t_table, 8, "v.shards[0].hits");
    expect(&t_table, 8 + 2 * 48 + 8, "v.shards[2].mu");
    expect(&t_shards, 48 + 8, "v[1].mu");
    expect(&t_table_td, 8 + 3 * 48 + 8, "v.shards[3].mu");
}

static void test_whole_objects(void **state)
{
    (void)state;
    expect(&t_mutex, 0, "v");          /* a pthread_mutex_t global: its own name */
    expect(&t_int, 0, "v");
    expect(&t_shard, 8, "v.mu");       /* not v.mu.__size */
}

static void test_anonymous_union_is_the_parents(void **state)
{
    (void)state;
    expect(&t_table, 200, "v.tag");    /* the first member that holds the offset */
    expect(&t_table, 208, "v.first.mu");
}

static void test_unnamed_offsets(void **state)
{
    (void)state;
    expect(&t_table, 4, NULL);         /* padding after n */
    expect(&t_table, 2, NULL);         /* inside an int */
    expect(&t_mutex, 8, NULL);         /* inside a mutex */
    expect(&t_table, 248, "v.own");    /* a program's own union at its start */
    expect(&t_table, 256, NULL);       /* inside it: only reserved members there */
    expect(&t_table, 288, NULL);       /* past the end */
    expect(&t_unsized, 0, "v");        /* the start of anything is the variable */
    expect(&t_unsized, 8, NULL);       /* unknown size */
}

/* The name of link-time address addr in the globals_all fixture, as the stacks name a
 * wait; NULL when no global holds it. */
static char *global_name(uint64_t addr)
{
    struct dw_global g;
    if (!dw_global_at(fixture("globals_all"), addr, &g))
        return NULL;
    struct strbuf sb = {0};
    sb_puts(&sb, g.name);
    if (!dw_member_path(g.type, addr - g.addr, &sb)) {
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

static void expect_global(uint64_t addr, const char *want)
{
    char *got = global_name(addr);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_global_at(void **state)
{
    (void)state;
    struct dw_global cfg, arr, last;
    assert_int_equal(dw_global_find(fixture("globals_all"), "g_config", &cfg), DWG_FOUND);
    assert_int_equal(dw_global_find(fixture("globals_all"), "g_array", &arr), DWG_FOUND);
    expect_global(cfg.addr, "g_config.retries");
    expect_global(cfg.addr + 8, "g_config.ratio");
    expect_global(cfg.addr + 28, "g_config.origin.y");   /* name[8] at 16, origin at 24 */
    expect_global(cfg.addr + 3, NULL);                   /* inside retries */
    expect_global(arr.addr + 12, "g_array[3]");
    assert_true(dw_global_at(fixture("globals_all"), cfg.addr + 8, &last));
    assert_string_equal(last.name, "g_config");
    assert_false(dw_global_at(fixture("globals_all"), 8, &last));  /* below every variable */
    /* a shared library's global, by the library's own link-time address */
    struct dw_global lib;
    assert_int_equal(dw_global_find(fixture("libglobals.so"), "lib_counter", &lib), DWG_FOUND);
    assert_true(dw_global_at(fixture("libglobals.so"), lib.addr + 2, &last));
    assert_string_equal(last.name, "lib_counter");
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members_and_elements),
        cmocka_unit_test(test_whole_objects),
        cmocka_unit_test(test_anonymous_union_is_the_parents),
        cmocka_unit_test(test_unnamed_offsets),
        cmocka_unit_test(test_global_at),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dw_frame_cache_clear();
    return rc;
}
