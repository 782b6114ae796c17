/*
 * test_value_cost.c - the types of tests/fixtures/values_zoo.c as the tracer decodes
 * them, from the fixture's own DWARF: which char types are text (only plain char),
 * which structs come from system headers; and the cost of decoding a pointer to its
 * redis-like `struct client` (60 members, nested pointers) at the default depth: at
 * most 3 reads of the target (each read is a pread of /proc/PID/mem in the tracer).
 * How long a decode takes is not asserted here (a busy machine took 20.4 us for a
 * median that is about 10 us when quiet); it is a benchmark's figure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dwarf/value.h"
#include "fixtures.h"

#define MEM_BASE 0x10000u
#define FAKE_MEM_BASE MEM_BASE
#define FAKE_MEM_SIZE 16384u
#include "fake_mem.h"

static const struct dw_index *zoo;
static int reads;

static bool counting_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    reads++;
    return mem_read(ctx, addr, buf, len);
}

static const struct dw_function *function(const char *name)
{
    for (size_t i = 0; i < zoo->n_functions; i++)
        if (zoo->functions[i].name && strcmp(zoo->functions[i].name, name) == 0)
            return &zoo->functions[i];
    fail_msg("no function %s in values_zoo", name);
    return NULL;
}

static const struct dw_member *member(const struct dw_type *t, const char *name)
{
    for (size_t i = 0; i < t->n_members; i++)
        if (t->members[i].name && strcmp(t->members[i].name, name) == 0)
            return &t->members[i];
    fail_msg("no member %s", name);
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    struct strobe_error err = {0};
    zoo = dw_index_get(fixture("values_zoo"), &err);
    if (!zoo)
        fail_msg("values_zoo: %s", err.msg);
    return 0;
}

static void test_char_kinds_and_system_structs(void **state)
{
    (void)state;
    const struct dw_type *rec = function("take_bytes")->params[0].type->target;
    assert_int_equal(member(rec, "uc")->type->kind, DWT_UNSIGNED);
    assert_int_equal(member(rec, "u8")->type->kind, DWT_UNSIGNED); /* a typedef's shape */
    assert_int_equal(member(rec, "sc")->type->kind, DWT_SIGNED);
    assert_int_equal(member(rec, "i8")->type->kind, DWT_SIGNED);
    assert_int_equal(member(rec, "c")->type->kind, DWT_CHAR);
    const struct dw_function *lock = function("lock_and_log");
    assert_true(lock->params[0].type->target->system_header);  /* pthread_mutex_t */
    assert_true(lock->params[1].type->target->system_header);  /* FILE */
    assert_false(rec->system_header);
}

static void test_client_decode_cost(void **state)
{
    (void)state;
    const struct dw_type *cp = function("serve_client")->params[0].type;
    const struct dw_type *client = cp->target;
    assert_int_equal(client->n_members, 60);
    assert_true(value_is_large(cp));
    /* The client at MEM_BASE, its db and reply block after it, a query string. */
    uint64_t c = MEM_BASE, db = MEM_BASE + 0x1000, reply = MEM_BASE + 0x1100,
             query = MEM_BASE + 0x1200;
    memset(mem, 0, sizeof mem);
    poke64(c + member(client, "id")->offset, 77);
    poke64(c + member(client, "db")->offset, db);
    poke64(c + member(client, "reply")->offset, reply);
    poke64(c + member(client, "next")->offset, c);
    poke64(c + member(client, "querybuf")->offset, query);
    poke(query, "*3\r\n$3\r\nSET\r\n", 14);
    /* As the tracer's hooks decode arguments by default (ptrace/hooks/hooks.c). */
    struct value_opts o = {.max_depth = 3, .max_string = 1024, .max_array = 100};
    struct strbuf sb = {0};
    reads = 0;
    value_json(&sb, cp, &c, counting_read, NULL, &o);
    assert_true(reads <= 3);
    assert_non_null(strstr(sb.buf, "\"db\":\"<struct db at 0x11000>\""));
    assert_non_null(strstr(sb.buf, "\"querybuf\":\"*3\\r\\n$3\\r\\nSET\\r\\n\""));
    sb_free(&sb);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_char_kinds_and_system_structs),
        cmocka_unit_test(test_client_decode_cost),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
