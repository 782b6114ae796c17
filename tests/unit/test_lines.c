/*
 * test_lines.c - dwarf/lines.c on the bp_lines fixture: a line binds once per function
 * instance (a for loop on one line once, an always_inline function's line in each of
 * its three inlined copies), lines without code move to the next line with code in
 * the same function (a comment, a blank line, an inlined function's declaration) or
 * past the end of one, file names match by path, suffix and basename, unknown files
 * list near names; the address after a prologue; a function's rows; the line of an
 * address.
 *
 * Expected lines come from the fixture's "mark:NAME" comments and expected addresses
 * from its line table read here with libdw directly, so the tests do not depend on
 * one compiler's code layout. Fixtures come from $STROBE_FIXTURES, else ../fixtures
 * next to this binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/fixtures.h"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf/dwarf.h"
#include "dwarf/frame.h"
#include "dwarf/lines.h"

static const struct dw_function *must_find(const char *name)
{
    const struct dw_index *ix = load("bp_lines");
    for (size_t i = 0; i < ix->n_functions; i++)
        if (strcmp(ix->functions[i].name, name) == 0)
            return &ix->functions[i];
    fail_msg("no function %s in %s", name, ix->path);
    return NULL;
}

/* The fixture's source file, absolute, as its DWARF names it. */
static const char *source(void)
{
    return must_find("main")->decl_file;
}

/* The line of the source holding "mark:NAME". */
static int mark(const char *name)
{
    char want[64], buf[512];
    snprintf(want, sizeof want, "mark:%s", name);
    size_t len = strlen(want);
    FILE *fp = fopen(source(), "r");
    assert_non_null(fp);
    for (int n = 1; fgets(buf, sizeof buf, fp); n++) {
        const char *at = strstr(buf, want);
        if (at && (at[len] == ' ' || at[len] == ':')) {
            fclose(fp);
            return n;
        }
    }
    fclose(fp);
    fail_msg("no %s in %s", want, source());
    return 0;
}

/* The lowest address of a statement on line in the fixture's line table. */
static uint64_t lowest_stmt(int line)
{
    int fd = open(fixture("bp_lines"), O_RDONLY);
    assert_true(fd >= 0);
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    assert_non_null(dw);
    Dwarf_Die cu;
    Dwarf_Lines *lines;
    size_t n;
    assert_non_null(dwarf_addrdie(dw, must_find("main")->entry, &cu));
    assert_int_equal(dwarf_getsrclines(&cu, &lines, &n), 0);
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        int ln;
        bool stmt;
        dwarf_lineno(l, &ln);
        dwarf_linebeginstatement(l, &stmt);
        dwarf_lineaddr(l, &a);
        if (ln == line && stmt && a < best)
            best = a;
    }
    dwarf_end(dw);
    close(fd);
    assert_true(best != UINT64_MAX);
    return best;
}

static bool within(const struct dw_function *f, uint64_t addr)
{
    return f->entry <= addr && addr < f->end;
}

static void resolve(const char *file, int line, enum dw_line_status status,
                    struct dw_line_result *r)
{
    assert_int_equal(dw_line_resolve(fixture("bp_lines"), file, line, r), 0);
    if (r->status != status)
        fail_msg("%s:%d: status %d, expected %d (%s)", file, line, r->status, status,
                 r->message);
}

/* ---- file:line ---- */

/* A whole for loop on one line binds once, at its lowest statement. */
static void test_line_one_per_instance(void **state)
{
    (void)state;
    struct dw_line_result r;
    int line = mark("for");
    resolve("bp_lines.c", line, DWL_OK, &r);
    assert_int_equal(r.line, line);
    assert_string_equal(r.message, "");
    assert_int_equal(r.n_locs, 1);
    assert_int_equal(r.locs[0].addr, lowest_stmt(line));
    assert_true(within(must_find("sum_to"), r.locs[0].addr));
    assert_string_equal(r.locs[0].function, "sum_to");
    assert_false(r.locs[0].inlined);
    assert_string_equal(r.locs[0].file, source());
    assert_int_equal(r.locs[0].line, line);
    dw_line_result_free(&r);
}

/* An always_inline function's line binds in each inlined copy: one in sum_to, two in
 * main, sorted by address. */
static void test_line_inlined_copies(void **state)
{
    (void)state;
    struct dw_line_result r;
    int line = mark("sq_body");
    resolve("bp_lines.c", line, DWL_OK, &r);
    assert_int_equal(r.n_locs, 3);
    size_t in_sum = 0, in_main = 0;
    for (size_t i = 0; i < r.n_locs; i++) {
        assert_true(r.locs[i].inlined);
        assert_string_equal(r.locs[i].function, "sq_inl");
        assert_int_equal(r.locs[i].line, line);
        if (i)
            assert_true(r.locs[i - 1].addr < r.locs[i].addr);
        in_sum += within(must_find("sum_to"), r.locs[i].addr);
        in_main += within(must_find("main"), r.locs[i].addr);
    }
    assert_int_equal(in_sum, 1);
    assert_int_equal(in_main, 2);
    assert_int_equal(r.locs[0].addr, lowest_stmt(line));
    dw_line_result_free(&r);

    /* the line of its declaration has no code of its own: its body's line, every copy */
    resolve("bp_lines.c", mark("sq_body") - 2, DWL_MOVED, &r);
    assert_int_equal(r.line, line);
    assert_int_equal(r.n_locs, 3);
    dw_line_result_free(&r);
}

/* A comment line and the blank line before it move to the next line with code. */
static void test_line_moved(void **state)
{
    (void)state;
    struct dw_line_result r;
    int comment = mark("comment"), next = mark("after_comment");
    char want[256];
    resolve("bp_lines.c", comment, DWL_MOVED, &r);
    assert_int_equal(r.line, next);
    snprintf(want, sizeof want,
             "line %d of bp_lines.c has no code; bound to line %d, the next line that has code",
             comment, next);
    assert_string_equal(r.message, want);
    assert_int_equal(r.n_locs, 1);
    assert_int_equal(r.locs[0].addr, lowest_stmt(next));
    assert_string_equal(r.locs[0].function, "sum_to");
    assert_int_equal(r.locs[0].line, next);
    dw_line_result_free(&r);

    resolve("bp_lines.c", comment - 1, DWL_MOVED, &r);
    assert_int_equal(r.line, next);
    dw_line_result_free(&r);

    /* between two functions: the next one's first line */
    int between = mark("between");
    resolve("bp_lines.c", between, DWL_MOVED, &r);
    assert_true(r.line > between && r.line <= mark("call1"));
    assert_int_equal(r.n_locs, 1);
    assert_string_equal(r.locs[0].function, "main");
    assert_int_equal(r.locs[0].addr, must_find("main")->entry);
    dw_line_result_free(&r);
}

static void test_line_no_code(void **state)
{
    (void)state;
    struct dw_line_result r;
    char want[256];
    resolve("bp_lines.c", 1000, DWL_NO_CODE, &r);
    snprintf(want, sizeof want,
             "bp_lines.c has no code at or after line 1000; its last line with code is %d",
             mark("last"));
    assert_string_equal(r.message, want);
    assert_int_equal(r.n_locs, 0);
    assert_null(r.locs);
    dw_line_result_free(&r);
}

static void test_line_files(void **state)
{
    (void)state;
    struct dw_line_result r;
    int line = mark("for");
    uint64_t addr = lowest_stmt(line);
    char path[PATH_MAX + 16];
    const char *names[] = {
        source(),                  /* exact */
        "fixtures/bp_lines.c",     /* suffix */
        "tests/fixtures/bp_lines.c",
        "./bp_lines.c",
        "/elsewhere/bp_lines.c",   /* basename */
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        resolve(names[i], line, DWL_OK, &r);
        assert_int_equal(r.n_locs, 1);
        assert_int_equal(r.locs[0].addr, addr);
        dw_line_result_free(&r);
    }
    /* the absolute path with a ".." in it */
    const char *slash = strrchr(source(), '/');
    assert_non_null(slash);
    snprintf(path, sizeof path, "%.*s/x/..%s", (int)(slash - source()), source(), slash);
    resolve(path, line, DWL_OK, &r);
    assert_int_equal(r.locs[0].addr, addr);
    dw_line_result_free(&r);

    /* a suffix that does not start at a path component, a typo: near names */
    char want[PATH_MAX + 256];
    resolve("p_lines.c", line, DWL_NO_FILE, &r);
    snprintf(want, sizeof want,
             "no file matching 'p_lines.c' in the debug info of %s; its source files "
             "include: bp_lines.c",
             fixture("bp_lines"));
    assert_string_equal(r.message, want);
    assert_int_equal(r.n_locs, 0);
    dw_line_result_free(&r);
    resolve("nosuch.c", line, DWL_NO_FILE, &r);
    assert_non_null(strstr(r.message, "no file matching 'nosuch.c' in the debug info of "));
    assert_non_null(strstr(r.message, "; its source files include: bp_lines.c"));
    dw_line_result_free(&r);

    /* an ELF file without DWARF, no file at all */
    assert_int_equal(dw_line_resolve("/bin/sh", "bp_lines.c", line, &r), 0);
    assert_int_equal(r.status, DWL_NO_FILE);
    assert_string_equal(r.message, "/bin/sh has no debug info (DWARF)");
    dw_line_result_free(&r);
    assert_int_equal(dw_line_resolve("/nonexistent/strobe", "bp_lines.c", line, &r), -1);
    assert_string_equal(r.message, "cannot read /nonexistent/strobe as an ELF file");
}

/* ---- functions and addresses ---- */

/* -O0: after the "{" line's code, at the first body line. */
static void test_after_prologue(void **state)
{
    (void)state;
    const struct dw_function *f = must_find("sum_to");
    uint64_t a = dw_after_prologue(fixture("bp_lines"), f->entry);
    assert_true(a > f->entry && a < f->end);
    assert_int_equal(a, lowest_stmt(mark("first_body")));
    char *file;
    int line;
    assert_int_equal(dw_line_at(fixture("bp_lines"), a, &file, &line), 0);
    assert_int_equal(line, mark("first_body"));
    assert_string_equal(file, source());
    free(file);

    /* main's first line after "{" is sq_inl's inlined body */
    f = must_find("main");
    a = dw_after_prologue(fixture("bp_lines"), f->entry);
    assert_true(a > f->entry && a < f->end);
    assert_int_equal(dw_line_at(fixture("bp_lines"), a, NULL, &line), 0);
    assert_int_equal(line, mark("sq_body"));

    /* no line table there: entry itself */
    assert_int_equal(dw_after_prologue(fixture("bp_lines"), 0x10), 0x10);
    assert_int_equal(dw_after_prologue("/nonexistent/strobe", 0x1234), 0x1234);
}

static void test_function_lines(void **state)
{
    (void)state;
    const struct dw_function *f = must_find("sum_to");
    struct dw_func_lines fl;
    assert_int_equal(dw_function_lines(fixture("bp_lines"), lowest_stmt(mark("for")), &fl), 0);
    assert_int_equal(fl.lo, f->entry);
    assert_int_equal(fl.hi, f->end);
    assert_int_equal(fl.n_ranges, 1);
    assert_int_equal(fl.ranges[0].lo, f->entry);
    assert_int_equal(fl.ranges[0].hi, f->end);
    assert_true(fl.n_rows > 5);
    assert_int_equal(fl.rows[0].addr, f->entry);
    bool loop = false, inlined = false;
    for (size_t i = 0; i < fl.n_rows; i++) {
        const struct dw_line_row *row = &fl.rows[i];
        assert_true(row->addr >= fl.lo && row->addr < fl.hi);
        if (i)
            assert_true(fl.rows[i - 1].addr <= row->addr);
        assert_string_equal(row->file, source());
        loop |= row->line == mark("for") && row->is_stmt;
        assert_int_equal(row->inlined, row->line == mark("sq_body"));
        inlined |= row->inlined;
    }
    assert_true(loop);
    assert_true(inlined);
    assert_int_equal(fl.n_files, 1);
    dw_func_lines_free(&fl);
    assert_int_equal(fl.n_rows, 0);

    assert_int_equal(dw_function_lines(fixture("bp_lines"), 0x10, &fl), -1);
    assert_int_equal(fl.n_rows, 0);
    assert_null(fl.rows);
}

static void test_line_at(void **state)
{
    (void)state;
    int line, want = mark("for");
    assert_int_equal(dw_line_at(fixture("bp_lines"), lowest_stmt(want) + 1, NULL, &line), 0);
    assert_int_equal(line, want);
    assert_int_equal(dw_line_at(fixture("bp_lines"), 0x10, NULL, &line), -1);
    char *file = (char *)"unset";
    assert_int_equal(dw_line_at("/nonexistent/strobe", 0x1000, &file, &line), -1);
    assert_null(file);
}

static int teardown(void **state)
{
    (void)state;
    dw_frame_cache_clear();
    dw_cache_clear();
    return 0;
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_one_per_instance),
        cmocka_unit_test(test_line_inlined_copies),
        cmocka_unit_test(test_line_moved),
        cmocka_unit_test(test_line_no_code),
        cmocka_unit_test(test_line_files),
        cmocka_unit_test(test_after_prologue),
        cmocka_unit_test(test_function_lines),
        cmocka_unit_test(test_line_at),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
