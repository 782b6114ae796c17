/*
 * test_symbolize.c - ptrace/proc/symbolize.c: frames in the vDSO are named "[vdso]" (no
 * file holds them). A busy thread that reads the clock sits there most of the time,
 * and two unnamed frames at the top of every sample made the stuck detector compare
 * empty stacks and call a working test an infinite loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ptrace/proc/symbolize.h"

static void test_vdso_frames_are_named(void **state)
{
    (void)state;
    struct unwind_frame frames[3] = {{.pc = 0x7fff1000}, {.pc = 0x7fff1800}, {.pc = 0x1234}};
    struct unwind_result uw = {.frames = frames, .n = 3, .head = 3, .total = 3};
    struct modules ms = {.vdso_start = 0x7fff1000, .vdso_end = 0x7fff3000};
    struct symbolized sy;
    symbolize(&uw, &ms, &sy);
    assert_int_equal(sy.n, 3);
    assert_string_equal(sy.frames[0].function, "[vdso]");
    assert_string_equal(sy.frames[1].function, "[vdso]");
    assert_null(sy.frames[2].function); /* in no module and not the vDSO: unknown */
    symbolize_free(&sy);
    /* modules read without the vDSO's range: nothing is named */
    struct modules none = {0};
    symbolize(&uw, &none, &sy);
    assert_null(sy.frames[0].function);
    symbolize_free(&sy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vdso_frames_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
