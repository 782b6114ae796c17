/*
 * test_base.c - unit tests of base/ pieces the other suites only use indirectly:
 * the string map (base/strmap.h), the arena (base/arena.h), the string hash
 * (base/hash.h) and the state directory's refusals (base/paths.h). The line reader and write loops (base/lineio.h) are tested in
 * test_client.c, where their clients are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/paths.h"
#include "base/procstat.h"
#include "base/strbuf.h"
#include "base/strmap.h"
#include "tests/unit/tmpdir.h"

/* ---- hash ---- */

/* Every code's name reads back as that code (an in-target helper names its errors'
 * codes so); an unknown or missing name is no code. */
static void test_err_code_names_parse_back(void **state)
{
    (void)state;
    for (int c = ERR_NONE + 1; c <= ERR_STORE_FULL; c++)
        assert_int_equal(err_code_parse(err_code_name((enum err_code)c)), c);
    assert_int_equal(err_code_parse("NO_SUCH_CODE"), ERR_NONE);
    assert_int_equal(err_code_parse(NULL), ERR_NONE);
}

static void test_fnv1a_reference_values(void **state)
{
    (void)state;
    /* The published FNV-1a 64 test vectors: the DWARF cache names files with it. */
    assert_int_equal(fnv1a("", 0), 0xcbf29ce484222325ull);
    assert_int_equal(fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
    assert_int_equal(fnv1a("foobar", 6), 0x85944171f73967e8ull);
}

/* ---- strmap ---- */

static void test_strmap_put_get_grow(void **state)
{
    (void)state;
    struct strmap m = {0};
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "fn_%d", i);
        assert_int_equal(strmap_put(&m, key, (size_t)n, strmap_hash(key, (size_t)n), i), 0);
    }
    assert_int_equal(m.n, 5000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "fn_%d", i);
        assert_int_equal(strmap_get(&m, key, (size_t)n, strmap_hash(key, (size_t)n)), i);
    }
    assert_int_equal(strmap_get(&m, "fn_5000", 7, strmap_hash("fn_5000", 7)), -1);
    strmap_clear(&m);
    assert_int_equal(m.n, 0);
    assert_int_equal(strmap_get(&m, "fn_1", 4, strmap_hash("fn_1", 4)), -1);
}

static void test_strmap_keys_by_length_and_copied(void **state)
{
    (void)state;
    struct strmap m = {0};
    char buf[] = "main.c:12";
    /* "main" is a prefix of the buffer: keys are (pointer, length), not C strings. */
    assert_int_equal(strmap_put(&m, buf, 4, strmap_hash(buf, 4), 7), 0);
    assert_int_equal(strmap_put(&m, buf, 6, strmap_hash(buf, 6), 8), 0);
    memset(buf, 'x', 6); /* the map holds copies */
    assert_int_equal(strmap_get(&m, "main", 4, strmap_hash("main", 4)), 7);
    assert_int_equal(strmap_get(&m, "main.c", 6, strmap_hash("main.c", 6)), 8);
    int64_t *v = strmap_ref(&m, "main", 4, strmap_hash("main", 4));
    assert_non_null(v);
    *v = 42;
    assert_int_equal(strmap_get(&m, "main", 4, strmap_hash("main", 4)), 42);
    assert_null(strmap_ref(&m, "mai", 3, strmap_hash("mai", 3)));
    strmap_clear(&m);
}

/* ---- arena ---- */

static void test_arena_alignment_strings_and_big_blocks(void **state)
{
    (void)state;
    struct arena a = {0};
    char *s = arena_strdup(&a, "parse_config");
    assert_string_equal(s, "parse_config");
    assert_null(arena_strdup(&a, NULL));
    assert_string_equal(arena_strndup(&a, "abcdef", 3), "abc");
    assert_string_equal(arena_printf(&a, "%s:%d", "x.c", 12), "x.c:12");
    for (int i = 1; i < 100; i++) {
        unsigned char *p = arena_alloc(&a, (size_t)i);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (int k = 0; k < i; k++)
            assert_int_equal(p[k], 0); /* zeroed */
        memset(p, 0xAB, (size_t)i);
    }
    /* A block larger than a chunk gets a chunk of its own; small ones keep going. */
    unsigned char *big = arena_alloc(&a, 1u << 20);
    big[(1u << 20) - 1] = 1;
    char *after = arena_strdup(&a, "still here");
    assert_string_equal(after, "still here");
    assert_string_equal(s, "parse_config");
    arena_free(&a);
    assert_null(a.head);
}

static void test_arena_splice(void **state)
{
    (void)state;
    struct arena a = {0}, worker = {0};
    char *mine = arena_strdup(&a, "index");
    char *theirs = arena_strdup(&worker, "worker result");
    arena_splice(&a, &worker);
    assert_null(worker.head);
    assert_string_equal(mine, "index");
    assert_string_equal(theirs, "worker result"); /* now owned by a */
    arena_splice(&a, &worker);                    /* an empty arena splices to nothing */
    arena_free(&a);
}

static void test_trimmed_dup(void **state)
{
    (void)state;
    char *t = str_trimmed_dup("  \t a b \n ", 10);
    assert_string_equal(t, "a b");
    free(t);
    t = str_trimmed_dup("xyz  ", 2); /* only the first n bytes count */
    assert_string_equal(t, "xy");
    free(t);
    t = str_trimmed_dup(" \n ", 3);
    assert_string_equal(t, "");
    free(t);
}

/* ---- paths ---- */

/* What is wrong with the state directory is INTERNAL, with the sentence that says
 * what to do; NULL takes no sentence. */
static void test_paths_refusals(void **state)
{
    (void)state;
    const char *old = getenv("STROBE_HOME");
    char *saved = old ? strdup(old) : NULL;
    char out[PATH_MAX], dir[] = "/tmp/strobe-test-base-XXXXXX";
    struct strobe_error e = {0};

    setenv("STROBE_HOME", "relative/home", 1);
    assert_int_equal(strobe_home(out, sizeof out, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_string_equal(e.msg, "STROBE_HOME must be an absolute path, not 'relative/home'");
    e = (struct strobe_error){0};
    assert_int_equal(strobe_path(STROBE_SOCK, out, sizeof out, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_non_null(strstr(e.msg, "must be an absolute path"));
    assert_int_equal(strobe_home(out, sizeof out, NULL), -1);

    assert_non_null(mkdtemp(dir));
    setenv("STROBE_HOME", dir, 1);
    assert_int_equal(strobe_path(STROBE_SOCK, out, sizeof out, NULL), 0);
    assert_non_null(strstr(out, "/strobe.sock"));
    char file[PATH_MAX + 8];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    e = (struct strobe_error){0};
    assert_int_equal(strobe_private_dir(NULL, "file", out, sizeof out, &e), -1);
    assert_int_equal(e.code, ERR_INTERNAL);
    assert_non_null(strstr(e.msg, "is not a directory of this user's"));
    assert_int_equal(strobe_private_dir(dir, "sub", out, sizeof out, &e), 0);
    rmdir(out);
    rm_dir(dir);

    if (saved)
        setenv("STROBE_HOME", saved, 1);
    else
        unsetenv("STROBE_HOME");
    free(saved);
}

/* The fields after the command name, even when the name holds ") (": the parent,
 * for the process and for one of its threads; NULL for a process that is gone. */
static void test_procstat_fields_after_a_tricky_name(void **state)
{
    (void)state;
    char old[16] = "";
    prctl(PR_GET_NAME, old, 0, 0, 0);
    prctl(PR_SET_NAME, "a) 9 (b", 0, 0, 0);
    char buf[1024];
    char st;
    int ppid = 0;
    const char *p = procstat_fields(getpid(), 0, buf, sizeof buf);
    assert_non_null(p);
    assert_int_equal(sscanf(p, " %c %d", &st, &ppid), 2);
    assert_int_equal(ppid, getppid());
    p = procstat_fields(getpid(), (pid_t)syscall(SYS_gettid), buf, sizeof buf);
    assert_non_null(p);
    assert_int_equal(sscanf(p, " %c %d", &st, &ppid), 2);
    assert_int_equal(st, 'R');
    assert_int_equal(ppid, getppid());
    prctl(PR_SET_NAME, old, 0, 0, 0);
    assert_null(procstat_fields(0x7ffffff0, 0, buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_code_names_parse_back),
        cmocka_unit_test(test_fnv1a_reference_values),
        cmocka_unit_test(test_strmap_put_get_grow),
        cmocka_unit_test(test_strmap_keys_by_length_and_copied),
        cmocka_unit_test(test_arena_alignment_strings_and_big_blocks),
        cmocka_unit_test(test_arena_splice),
        cmocka_unit_test(test_trimmed_dup),
        cmocka_unit_test(test_procstat_fields_after_a_tricky_name),
        cmocka_unit_test(test_paths_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
