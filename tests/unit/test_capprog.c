/*
 * test_capprog.c - unit tests of ptrace/hooks/capprog.c: capture programs learned from the
 * reads a decoder makes, replayed against memory, and served from a call's copies.
 * Memory is a buffer here, at a made-up address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ptrace/hooks/capprog.h"

#define BASE 0x10000u
static uint8_t mem[8192];

static bool read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    if (addr < BASE || addr + len > BASE + sizeof mem)
        return false;
    memcpy(buf, mem + (addr - BASE), len);
    return true;
}

static void put64(uint64_t addr, uint64_t v)
{
    memcpy(mem + (addr - BASE), &v, sizeof v);
}

/* A decoder's read: live, and learned when the copies do not serve it. */
static bool read_as_decoder(struct capcall *cc, uint64_t addr, void *buf, size_t len)
{
    long n = capprog_copied(cc, addr, buf, len);
    if (n < 0)
        return false;
    if ((size_t)n == len)
        return true;
    bool ok = read_mem(NULL, addr + (uint64_t)n, (char *)buf + n, len - (size_t)n);
    capprog_learn(cc, addr + (uint64_t)n, len - (size_t)n, ok ? (char *)buf + n : NULL);
    return ok;
}

static struct capprog prog;
static struct capcall cc;

static int setup(void **state)
{
    (void)state;
    memset(mem, 0, sizeof mem);
    memset(&prog, 0, sizeof prog);
    prog.max = FAST_ENTER_ITEMS;
    return 0;
}

/* A list of two nodes passed in rsi, a string in rdi, a stack argument and a global:
 * each read becomes an item reached the way the call reached it. */
static void test_learns_sources(void **state)
{
    (void)state;
    uint64_t node1 = BASE + 0x100, node2 = BASE + 0x800, str = BASE + 0x400;
    uint64_t stack = BASE + 0x1C00, global = BASE + 0x80; /* far from the others */
    put64(node1, 1);
    put64(node1 + 8, node2);
    put64(node2, 2);
    memcpy(mem + (str - BASE), "hi", 3);
    uint64_t regs[6] = {str, node1, 0, 0, 0, 0};
    capprog_begin(&cc, &prog, regs, 6, stack);
    uint8_t buf[64];
    assert_true(read_as_decoder(&cc, str, buf, 64));
    assert_true(read_as_decoder(&cc, node1, buf, 16));
    assert_true(read_as_decoder(&cc, node2, buf, 16));
    assert_true(read_as_decoder(&cc, stack + 8, buf, 8));
    assert_true(read_as_decoder(&cc, global, buf, 4));
    assert_true(cc.changed);
    assert_int_equal(prog.n, 5);
    assert_int_equal(prog.item[0].src, FAST_SRC_REG);
    assert_int_equal(prog.item[0].idx, 0);
    assert_int_equal(prog.item[0].len, 64);
    assert_int_equal(prog.item[1].src, FAST_SRC_REG);
    assert_int_equal(prog.item[1].idx, 1);
    assert_int_equal(prog.item[2].src, FAST_SRC_ITEM);
    assert_int_equal(prog.item[2].idx, 1);
    assert_int_equal(prog.item[2].at, 8);
    assert_int_equal(prog.item[2].off, 0);
    assert_int_equal(prog.item[3].src, FAST_SRC_STACK);
    assert_int_equal(prog.item[3].off, 8);
    assert_int_equal(prog.item[4].src, FAST_SRC_ABS);
    assert_int_equal(prog.item[4].off, (int64_t)global);
    assert_int_equal(prog.records, 5);

    /* The same reads again: served by the copies, nothing learned. */
    cc.changed = false;
    assert_true(read_as_decoder(&cc, node2, buf, 16));
    assert_false(cc.changed);

    /* Replayed for another call whose list is elsewhere: the chase follows it. */
    uint64_t other1 = BASE + 0x200, other2 = BASE + 0x300;
    put64(other1 + 8, other2);
    put64(other2, 42);
    regs[1] = other1;
    capprog_begin(&cc, &prog, regs, 6, stack);
    capprog_run(&cc, read_mem, NULL);
    uint64_t v = 0;
    assert_int_equal(capprog_copied(&cc, other2, &v, 8), 8);
    assert_int_equal(v, 42);
}

/* A string read in growing chunks extends one item, within FAST_ITEM_MAX. */
static void test_extends_contiguous_reads(void **state)
{
    (void)state;
    uint64_t str = BASE + 0x100;
    memset(mem + 0x100, 'x', 2000);
    uint64_t regs[6] = {str};
    capprog_begin(&cc, &prog, regs, 6, 0);
    uint8_t buf[1024];
    assert_true(read_as_decoder(&cc, str, buf, 64));
    assert_true(read_as_decoder(&cc, str + 64, buf, 128));
    assert_true(read_as_decoder(&cc, str + 192, buf, 256));
    assert_int_equal(prog.n, 1);
    assert_int_equal(prog.item[0].len, 448);
    assert_int_equal(prog.records, 5);
    assert_true(read_as_decoder(&cc, str + 448, buf, 1024)); /* past FAST_ITEM_MAX */
    assert_int_equal(prog.item[0].len, 448);
    assert_int_equal(prog.n, 1);
}

/* Copies from records: a read they cover is served, one where the item found the
 * memory unreadable at the call fails, a miss is learned once. */
static void test_serves_record_copies(void **state)
{
    (void)state;
    prog.item[0] = (struct fast_cap){.len = 16, .src = FAST_SRC_REG, .idx = 0};
    prog.n = 1;
    prog.records = 1;
    uint64_t regs[6] = {BASE + 0x100};
    capprog_begin(&cc, &prog, regs, 6, 0);
    uint8_t at_call[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    capprog_add_copy(&cc, 0, BASE + 0x100, at_call, 8, 16); /* 8 of 16 could be read */
    uint8_t buf[16];
    assert_int_equal(capprog_copied(&cc, BASE + 0x102, buf, 4), 4);
    assert_int_equal(buf[0], 3);
    assert_int_equal(capprog_copied(&cc, BASE + 0x104, buf, 8), 4); /* the rest is not */
    assert_int_equal(capprog_copied(&cc, BASE + 0x10a, buf, 2), -1);
    assert_int_equal(capprog_copied(&cc, BASE + 0x200, buf, 2), 0);

    /* A record written while item 0 asked for 8 bytes (it grew to 16 since): past
     * them nothing is served (read live), nothing is called unreadable. */
    capprog_begin(&cc, &prog, regs, 6, 0);
    capprog_add_copy(&cc, 0, BASE + 0x100, at_call, 8, 8);
    assert_int_equal(capprog_copied(&cc, BASE + 0x10a, buf, 2), 0);

    /* The record was written before item 1 existed: a read of it fills its copy and
     * learns nothing new. */
    prog.item[1] = (struct fast_cap){.len = 8, .src = FAST_SRC_REG, .idx = 1};
    prog.n = 2;
    prog.records = 2;
    regs[1] = BASE + 0x300;
    capprog_begin(&cc, &prog, regs, 6, 0);
    assert_true(read_as_decoder(&cc, BASE + 0x300, buf, 8));
    assert_false(cc.changed);
    assert_int_equal(prog.n, 2);
}

/* The budget: FAST_ENTER_ITEMS items (max), FAST_CALL_DATA_RECORDS records. */
static void test_budget(void **state)
{
    (void)state;
    prog.max = 3;
    uint64_t regs[6] = {0};
    capprog_begin(&cc, &prog, regs, 6, 0);
    uint8_t buf[FAST_ITEM_MAX];
    for (int i = 0; i < 5; i++)
        assert_true(read_as_decoder(&cc, BASE + 0x100 + 0x400u * (unsigned)i, buf, 8));
    assert_int_equal(prog.n, 3);
    memset(&prog, 0, sizeof prog);
    prog.max = FAST_ENTER_ITEMS;
    capprog_begin(&cc, &prog, regs, 6, 0);
    for (unsigned i = 0; i < 5; i++)
        assert_true(read_as_decoder(&cc, BASE + 0x100 + 1100 * i, buf, FAST_ITEM_MAX));
    assert_int_equal(prog.n, 4); /* 4 x 10 records: the fifth item would pass 40 */
    assert_int_equal(prog.records, FAST_CALL_DATA_RECORDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_learns_sources, setup),
        cmocka_unit_test_setup(test_extends_contiguous_reads, setup),
        cmocka_unit_test_setup(test_serves_record_copies, setup),
        cmocka_unit_test_setup(test_budget, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
