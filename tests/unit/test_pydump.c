/*
 * test_pydump.c - a stuck Python test's stacks from faulthandler's dump
 * (testrun/pydump.c): each dump thread's frames go to the native thread of the same
 * pthread_t, named module.Class.function from the source under the project root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/collector.h"
#include "testrun/pydump.h"

static const char source[] =
    "import threading\n"                     /* 1 */
    "\n"                                     /* 2 */
    "class Ledger:\n"                        /* 3 */
    "    def transfer(self, a, b):\n"        /* 4 */
    "        def inner():\n"                 /* 5 */
    "            # waits here\n"             /* 6 */
    "            return a.lock.acquire()\n"  /* 7 */
    "        return inner()\n"               /* 8 */
    "\n"                                     /* 9 */
    "async def main():\n"                    /* 10 */
    "    pass\n";                            /* 11 */

static struct collector_frame *frame(const char *function)
{
    struct collector_frame *f = calloc(1, sizeof *f);
    f->function = strdup(function);
    return f;
}

static void test_dump_threads_replace_the_native_frames(void **state)
{
    (void)state;
    char root[] = "/tmp/strobe-test-pydump-XXXXXX";
    assert_non_null(mkdtemp(root));
    char dir[64], file[96];
    snprintf(dir, sizeof dir, "%s/bank", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(file, sizeof file, "%s/ledger.py", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(source, f);
    fclose(f);

    /* two native threads: a worker (fs base 0x7f01) and the main one (0x7f02) */
    struct collector_stacks st = {.threads = calloc(2, sizeof *st.threads), .n_threads = 2};
    st.threads[0] = (struct collector_thread){.tid = 11, .thread_pointer = 0x7f01,
                                              .syscall_nr = 202, .own_frame = -1,
                                              .frames = frame("PyEval_EvalFrameDefault"),
                                              .n_frames = 1};
    st.threads[1] = (struct collector_thread){.tid = 10, .thread_pointer = 0x7f02,
                                              .syscall_nr = 202, .own_frame = -1};
    char dump[2048];
    snprintf(dump, sizeof dump,
             "Fatal Python error: Aborted\n\n"
             "Thread 0x0000000000007f01 (most recent call first):\n"
             "  File \"%s\", line 7 in inner\n"
             "  File \"%s\", line 8 in transfer\n"
             "  File \"/usr/lib/python3.11/threading.py\", line 982 in run\n\n"
             "Current thread 0x0000000000007f02 (most recent call first):\n"
             "  File \"%s/.venv/lib/site.py\", line 3 in helper\n"
             "  File \"%s\", line 11 in main\n\n"
             "Thread 0x0000000000007f09 (most recent call first):\n"
             "  File \"<frozen runpy>\", line 88 in _run_code\n\n"
             "Extension modules: json (total: 1)\n",
             file, file, root, file);
    assert_int_equal(pydump_stacks(dump, root, &st), 3);

    assert_int_equal(st.n_threads, 3);
    const struct collector_thread *w = &st.threads[0];
    assert_int_equal(w->tid, 11);
    assert_int_equal(w->syscall_nr, 202); /* the native state stays */
    assert_int_equal(w->n_frames, 3);
    assert_string_equal(w->frames[0].function, "bank.ledger.Ledger.transfer.<locals>.inner");
    assert_int_equal(w->frames[0].line, 7);
    assert_string_equal(w->frames[1].function, "bank.ledger.Ledger.transfer");
    assert_string_equal(w->frames[2].function, "threading.run");
    assert_int_equal(w->own_frame, 0);

    const struct collector_thread *m = &st.threads[1];
    assert_int_equal(m->n_frames, 2);
    assert_string_equal(m->frames[0].function, "site.helper"); /* an installed package's */
    assert_string_equal(m->frames[1].function, "bank.ledger.main");
    assert_int_equal(m->own_frame, 1);

    /* a thread the native stacks did not have is kept, with no tid */
    const struct collector_thread *x = &st.threads[2];
    assert_int_equal(x->tid, 0);
    assert_int_equal(x->thread_pointer, 0x7f09);
    assert_string_equal(x->frames[0].function, "<frozen runpy>._run_code");
    assert_int_equal(x->own_frame, -1);
    collector_stacks_free(&st);

    /* not a dump: nothing read, nothing changed */
    struct collector_stacks none = {0};
    assert_int_equal(pydump_stacks("Segmentation fault\n", root, &none), 0);
    assert_int_equal(none.n_threads, 0);

    unlink(file);
    rmdir(dir);
    rmdir(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_threads_replace_the_native_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
