/*
 * test_reloc.c - unit tests of displaced-instruction relocation (ptrace/patch/reloc.c), of
 * the fast path's entry jump built on it (ptrace/hooks/fastcode.c; test_fastrec.c runs it)
 * and of the tracer's hash map (base/u64map.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/u64map.h"
#include "ptrace/hooks/fastcode.h"
#include "ptrace/patch/reloc.h"

static const uint64_t AT = 0x401000, SLOT = 0x500000;

static int32_t rel32_at(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void test_plain_instruction_runs_out_of_line(void **state)
{
    (void)state;
    const uint8_t push_rbp[] = {0x55, 0x48, 0x89, 0xe5};
    struct reloc r;
    reloc_plan(push_rbp, sizeof push_rbp, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_OUT_OF_LINE);
    assert_int_equal(r.insn_len, 1);
    assert_int_equal(r.slot_len, 6);
    assert_int_equal(r.slot[0], 0x55);
    assert_int_equal(r.slot[1], 0xE9); /* jmp back to AT + 1 */
    assert_int_equal((int64_t)(SLOT + 6) + rel32_at(r.slot + 2), (int64_t)AT + 1);
}

static void test_endbr64_is_copied_whole(void **state)
{
    (void)state;
    const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55};
    struct reloc r;
    reloc_plan(endbr, sizeof endbr, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_OUT_OF_LINE);
    assert_int_equal(r.insn_len, 4);
    assert_memory_equal(r.slot, endbr, 4);
}

static void test_rip_relative_operand_is_rebased(void **state)
{
    (void)state;
    /* mov eax, [rip + 0x100] */
    const uint8_t mov[] = {0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};
    struct reloc r;
    reloc_plan(mov, sizeof mov, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_OUT_OF_LINE);
    assert_int_equal(r.insn_len, 6);
    int64_t target = (int64_t)(SLOT + 6) + rel32_at(r.slot + 2);
    assert_int_equal(target, (int64_t)AT + 6 + 0x100);
}

static void test_rip_relative_out_of_reach_single_steps(void **state)
{
    (void)state;
    const uint8_t mov[] = {0x8b, 0x05, 0x00, 0x01, 0x00, 0x00};
    struct reloc r;
    reloc_plan(mov, sizeof mov, AT, AT + (5ULL << 30), &r);
    assert_int_equal(r.kind, RELOC_SINGLE_STEP);
    assert_non_null(strstr(r.why, "out of reach"));
}

static void test_far_slot_jumps_back_absolutely(void **state)
{
    (void)state;
    const uint8_t push_rbp[] = {0x55};
    struct reloc r;
    uint64_t far = AT + (8ULL << 30);
    reloc_plan(push_rbp, sizeof push_rbp, AT, far, &r);
    assert_int_equal(r.kind, RELOC_OUT_OF_LINE);
    assert_int_equal(r.slot_len, 1 + 14);
    assert_int_equal(r.slot[1], 0xFF);
    uint64_t dest;
    memcpy(&dest, r.slot + 7, 8);
    assert_int_equal(dest, AT + 1);
}

static void test_relative_branches_are_emulated_or_stepped(void **state)
{
    (void)state;
    struct reloc r;
    const uint8_t jmp[] = {0xe9, 0x10, 0x00, 0x00, 0x00};
    reloc_plan(jmp, sizeof jmp, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_EMULATE_JMP);
    assert_int_equal(r.target, AT + 5 + 0x10);
    const uint8_t call[] = {0xe8, 0xfb, 0xff, 0xff, 0xff};
    reloc_plan(call, sizeof call, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_EMULATE_CALL);
    assert_int_equal(r.target, AT);
    assert_int_equal(r.insn_len, 5);
    const uint8_t je[] = {0x74, 0x05};
    reloc_plan(je, sizeof je, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_SINGLE_STEP);
}

static void test_undecodable_single_steps(void **state)
{
    (void)state;
    const uint8_t junk[] = {0x48, 0x8b}; /* an instruction cut short */
    struct reloc r;
    reloc_plan(junk, sizeof junk, AT, SLOT, &r);
    assert_int_equal(r.kind, RELOC_SINGLE_STEP);
    assert_true(strlen(r.why) > 0);
}

static const uint64_t TRAMP = 0x500040, COUNTER = 0x600000;

static void test_counting_jump_relocates_whole_instructions(void **state)
{
    (void)state;
    /* push rbp; mov rbp,rsp; mov rax,[rip+0x100]; pop rbp; ret */
    const uint8_t fn[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00,
                          0x5d, 0xc3};
    struct countjump cj;
    assert_true(reloc_countjump_plan(fn, sizeof fn, AT, TRAMP, COUNTER, &cj));
    assert_int_equal(cj.displaced, 11); /* whole instructions: 1 + 3 + 7 */
    assert_int_equal(cj.patch[0], 0xE9);
    assert_int_equal((int64_t)(AT + 5) + rel32_at(cj.patch + 1), (int64_t)TRAMP);
    const uint8_t lock_incq[4] = {0xF0, 0x48, 0xFF, 0x05};
    assert_memory_equal(cj.tramp, lock_incq, 4);
    assert_int_equal((int64_t)(TRAMP + 8) + rel32_at(cj.tramp + 4), (int64_t)COUNTER);
    assert_memory_equal(cj.tramp + COUNTJUMP_COUNT_LEN, fn, 4);
    /* the RIP-relative load still reads AT + 11 + 0x100 */
    uint64_t load = TRAMP + COUNTJUMP_COUNT_LEN + 4;
    assert_int_equal((int64_t)(load + 7) + rel32_at(cj.tramp + COUNTJUMP_COUNT_LEN + 7),
                     (int64_t)(AT + 11 + 0x100));
    assert_int_equal(cj.tramp[COUNTJUMP_COUNT_LEN + 11], 0xE9); /* back to AT + 11 */
    uint64_t back_end = TRAMP + COUNTJUMP_COUNT_LEN + 11 + 5;
    assert_int_equal((int64_t)back_end + rel32_at(cj.tramp + COUNTJUMP_COUNT_LEN + 12),
                     (int64_t)AT + 11);
    assert_int_equal(cj.tramp_len, COUNTJUMP_COUNT_LEN + 11 + 5);
}

static void test_counting_jump_refusals(void **state)
{
    (void)state;
    struct countjump cj;
    /* a short jmp among the first 5 bytes */
    const uint8_t short_jmp[] = {0xeb, 0x00, 0x89, 0xf8, 0x83, 0xe0, 0x03, 0xc3};
    assert_false(reloc_countjump_plan(short_jmp, sizeof short_jmp, AT, TRAMP, COUNTER, &cj));
    assert_non_null(strstr(cj.why, "first 5 bytes"));
    /* an indirect call among them */
    const uint8_t call[] = {0x55, 0xff, 0xd0, 0x5d, 0x90, 0x90, 0xc3};
    assert_false(reloc_countjump_plan(call, sizeof call, AT, TRAMP, COUNTER, &cj));
    /* a loop whose branch goes back to byte 1 (inside the jmp's rel32) */
    const uint8_t loop[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0xeb, 0xf9, 0xc3};
    assert_false(reloc_countjump_plan(loop, sizeof loop, AT, TRAMP, COUNTER, &cj));
    assert_non_null(strstr(cj.why, "targets its first 5 bytes"));
    /* shorter than the jump */
    const uint8_t tiny[] = {0x31, 0xc0, 0xc3};
    assert_false(reloc_countjump_plan(tiny, sizeof tiny, AT, TRAMP, COUNTER, &cj));
    /* a trampoline out of rel32 reach */
    const uint8_t plain[] = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
    assert_false(reloc_countjump_plan(plain, sizeof plain, AT, AT + (1ULL << 33), COUNTER, &cj));
    assert_true(reloc_countjump_plan(plain, sizeof plain, AT, TRAMP, COUNTER, &cj));
}

static void test_entry_jump_rewrites_direct_branches_among_the_displaced(void **state)
{
    (void)state;
    /* test edi,edi; je +0x10 (to AT + 0x14); mov eax,1; ret: the je is among the
     * displaced instructions and goes to a target past the patch */
    const uint8_t fn[] = {0x85, 0xff, 0x74, 0x10, 0xb8, 0x01, 0, 0, 0, 0xc3, 0x90, 0x90, 0x90,
                          0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x31, 0xc0, 0xc3};
    struct countjump cj;
    assert_true(reloc_countjump_plan(fn, sizeof fn, AT, TRAMP, COUNTER, &cj));
    assert_int_equal(cj.displaced, 9); /* test, je, mov */
    const uint8_t *t = cj.tramp + COUNTJUMP_COUNT_LEN;
    assert_memory_equal(t, fn, 2);
    assert_int_equal(t[2], 0x0F); /* je rel32 */
    assert_int_equal(t[3], 0x84);
    uint64_t je_end = TRAMP + COUNTJUMP_COUNT_LEN + 8;
    assert_int_equal((int64_t)je_end + rel32_at(t + 4), (int64_t)AT + 0x14);
    assert_memory_equal(t + 8, fn + 4, 5); /* mov eax,1 */
    assert_int_equal(t[13], 0xE9); /* the fall-through goes back to AT + 9 */
    assert_int_equal((int64_t)(je_end + 10) + rel32_at(t + 14), (int64_t)AT + 9);
    /* sub rsp,8; call +0x10; add rsp,8; ret: the call, last of the displaced, pushes
     * its own return address (AT + 9, past the patch) and jumps */
    const uint8_t calls[] = {0x48, 0x83, 0xec, 0x08, 0xe8, 0x10, 0, 0, 0, 0x48, 0x83, 0xc4,
                             0x08, 0xc3};
    assert_true(reloc_countjump_plan(calls, sizeof calls, AT, TRAMP, COUNTER, &cj));
    assert_int_equal(cj.displaced, 9);
    t = cj.tramp + COUNTJUMP_COUNT_LEN + 4;
    const uint8_t lea_rsp[5] = {0x48, 0x8D, 0x64, 0x24, 0xF8};
    assert_memory_equal(t, lea_rsp, 5);
    uint32_t lo, hi;
    memcpy(&lo, t + 8, 4);
    memcpy(&hi, t + 16, 4);
    assert_int_equal(((uint64_t)hi << 32) | lo, AT + 9);
    assert_int_equal(t[20], 0xE9);
    uint64_t jmp_end = TRAMP + COUNTJUMP_COUNT_LEN + 4 + 25;
    assert_int_equal((int64_t)jmp_end + rel32_at(t + 21), (int64_t)AT + 9 + 0x10);
    /* a conditional branch back onto the patched bytes stays refused */
    const uint8_t back[] = {0x85, 0xff, 0x74, 0xfc, 0x90, 0x90, 0xc3};
    assert_false(reloc_countjump_plan(back, sizeof back, AT, TRAMP, COUNTER, &cj));
    assert_non_null(strstr(cj.why, "first 5 bytes"));
}

static bool has_bytes(const uint8_t *hay, size_t n, const void *needle, size_t len)
{
    return memmem(hay, n, needle, len) != NULL;
}

static void test_fast_jump_calls_the_recorder_then_runs_the_displaced_code(void **state)
{
    (void)state;
    /* push rbp; mov rbp,rsp; mov rax,[rip+0x100]; pop rbp; ret */
    const uint8_t fn[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00,
                          0x5d, 0xc3};
    const uint64_t area = 0x7f0011223344, enter = 0x7f0055667788;
    struct fastjump fj;
    assert_true(fastcode_jump_plan(fn, sizeof fn, AT, TRAMP, area, enter, 42, &fj));
    assert_int_equal(fj.displaced, 11);
    assert_int_equal(fj.patch[0], 0xE9);
    assert_int_equal((int64_t)(AT + 5) + rel32_at(fj.patch + 1), (int64_t)TRAMP);
    const uint8_t sub_rsp_200[7] = {0x48, 0x81, 0xEC, 200, 0, 0, 0};
    assert_memory_equal(fj.tramp, sub_rsp_200, 7);
    uint8_t movabs_rdi[10] = {0x48, 0xBF}, movabs_rax[10] = {0x48, 0xB8};
    const uint8_t mov_edx_fn[5] = {0xBA, 42, 0, 0, 0};
    memcpy(movabs_rdi + 2, &area, 8);
    memcpy(movabs_rax + 2, &enter, 8);
    assert_true(has_bytes(fj.tramp, fj.tramp_len, movabs_rdi, 10));
    assert_true(has_bytes(fj.tramp, fj.tramp_len, movabs_rax, 10));
    assert_true(has_bytes(fj.tramp, fj.tramp_len, mov_edx_fn, 5));
    /* the displaced instructions, then the jump back to AT + 11 */
    size_t off = fj.tramp_len - 5 - 11;
    assert_memory_equal(fj.tramp + off, fn, 4);
    assert_int_equal((int64_t)(TRAMP + off + 11) + rel32_at(fj.tramp + off + 7),
                     (int64_t)(AT + 11 + 0x100));
    assert_int_equal(fj.tramp[fj.tramp_len - 5], 0xE9);
    assert_int_equal((int64_t)(TRAMP + fj.tramp_len) + rel32_at(fj.tramp + fj.tramp_len - 4),
                     (int64_t)AT + 11);
    /* the counting jump's refusals */
    const uint8_t short_jmp[] = {0xeb, 0x00, 0x89, 0xf8, 0x83, 0xe0, 0x03, 0xc3};
    assert_false(fastcode_jump_plan(short_jmp, sizeof short_jmp, AT, TRAMP, area, enter, 1, &fj));
    assert_non_null(strstr(fj.why, "first 5 bytes"));
    assert_false(fastcode_jump_plan(fn, sizeof fn, AT, AT + (1ULL << 33), area, enter, 1, &fj));
    assert_non_null(strstr(fj.why, "reach"));
}

static void test_return_trampoline(void **state)
{
    (void)state;
    uint8_t code[FASTCODE_RETURN_LEN];
    const uint64_t area = 0x7f0011223344, exit_at = 0x7f0055667788;
    assert_int_equal(fastcode_return(code, sizeof code - 1, 0x1000, area, exit_at), 0);
    assert_int_equal(fastcode_return(code, sizeof code, 0x1000, area, exit_at),
                     FASTCODE_RETURN_LEN);
    uint8_t movabs_rax[10] = {0x48, 0xB8};
    memcpy(movabs_rax + 2, &exit_at, 8);
    assert_true(has_bytes(code, sizeof code, movabs_rax, 10));
    assert_int_equal(code[FASTCODE_RETURN_LEN - 1], 0xC3); /* ret */
}

static void test_u64map(void **state)
{
    (void)state;
    struct u64map m = {0};
    static int values[5000];
    for (uint64_t k = 1; k <= 5000; k++)
        assert_int_equal(u64map_put(&m, k * 4096, &values[k - 1]), 0);
    assert_int_equal(m.live, 5000);
    for (uint64_t k = 1; k <= 5000; k++)
        assert_ptr_equal(u64map_get(&m, k * 4096), &values[k - 1]);
    assert_null(u64map_get(&m, 12345));
    for (uint64_t k = 1; k <= 5000; k += 2)
        assert_ptr_equal(u64map_del(&m, k * 4096), &values[k - 1]);
    assert_int_equal(m.live, 2500);
    assert_null(u64map_get(&m, 4096));
    assert_ptr_equal(u64map_get(&m, 2 * 4096), &values[1]);
    assert_int_equal(u64map_put(&m, 4096, &values[0]), 0); /* reuses a tombstone */
    assert_ptr_equal(u64map_get(&m, 4096), &values[0]);
    u64map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_instruction_runs_out_of_line),
        cmocka_unit_test(test_endbr64_is_copied_whole),
        cmocka_unit_test(test_rip_relative_operand_is_rebased),
        cmocka_unit_test(test_rip_relative_out_of_reach_single_steps),
        cmocka_unit_test(test_far_slot_jumps_back_absolutely),
        cmocka_unit_test(test_relative_branches_are_emulated_or_stepped),
        cmocka_unit_test(test_entry_jump_rewrites_direct_branches_among_the_displaced),
        cmocka_unit_test(test_undecodable_single_steps),
        cmocka_unit_test(test_counting_jump_relocates_whole_instructions),
        cmocka_unit_test(test_counting_jump_refusals),
        cmocka_unit_test(test_fast_jump_calls_the_recorder_then_runs_the_displaced_code),
        cmocka_unit_test(test_return_trampoline),
        cmocka_unit_test(test_u64map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
