/*
 * test_frame.c - dwarf/frame.c on the real fixture programs: source sites (a plain
 * function, a two-level inlined chain with its call lines, C++ and Rust names equal to
 * the index's), and variables with fake registers and fake memory: -O0 stack
 * variables from a given CFA and from a CFA computed from the CFI, a static (with the
 * load bias), nested blocks and inlined scopes in declaration order, unsaved
 * registers, -O2 register locations and location lists, the output cap, a file that
 * changes on disk, and two threads at once; and where one variable lives
 * (dw_frame_var_find): stack slots, a static, inlined parameters, registers, constants
 * and computed values, the names in scope when it is not.
 *
 * Expected addresses come from the fixtures' DWARF read here with libdw directly (the
 * lowest statement of a source line marked "mark:NAME", a variable's DW_OP_fbreg
 * offset), so the tests do not depend on one compiler's stack layout. Fixtures come
 * from $STROBE_FIXTURES, else ../fixtures next to this binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/fixtures.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf/dwarf.h"
#include "dwarf/frame.h"

/* Fake target memory: list nodes, a string, a static and the stack below CFA. */
#define MEM_BASE 0x10000u
#define FAKE_MEM_BASE MEM_BASE
#define FAKE_MEM_SIZE 8192u
#include "fake_mem.h"

#define NODE_A 0x10100u /* a -> b -> c, values 1 2 3 */
#define NODE_B 0x10110u
#define NODE_C 0x10120u
#define LABEL 0x10200u  /* "walk" */
#define CALLS 0x10300u  /* where the static `calls` is loaded */
#define CFA 0x11000u

static const struct dw_function *must_find(const struct dw_index *ix, const char *name)
{
    for (size_t i = 0; i < ix->n_functions; i++)
        if (strcmp(ix->functions[i].name, name) == 0)
            return &ix->functions[i];
    fail_msg("no function %s in %s", name, ix->path);
    return NULL;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- the oracle: the fixture's DWARF and source, read without dwarf/frame.c ---- */

struct oracle {
    int fd;
    Dwarf *dw;
    const struct dw_function *fn; /* walk_list */
    char source[PATH_MAX];
};

static struct oracle open_frame_vars(void)
{
    struct oracle o;
    o.fn = must_find(load("frame_vars"), "walk_list");
    snprintf(o.source, sizeof o.source, "%s", o.fn->decl_file);
    o.fd = open(fixture("frame_vars"), O_RDONLY);
    assert_true(o.fd >= 0);
    o.dw = dwarf_begin(o.fd, DWARF_C_READ);
    assert_non_null(o.dw);
    return o;
}

static void close_oracle(struct oracle *o)
{
    dwarf_end(o->dw);
    close(o->fd);
}

/* The line of the source holding "mark:NAME"; with column, where text starts on it. */
static int mark_line(const struct oracle *o, const char *name, const char *text, int *column)
{
    char want[64], buf[512];
    snprintf(want, sizeof want, "mark:%s ", name);
    FILE *fp = fopen(o->source, "r");
    assert_non_null(fp);
    for (int n = 1; fgets(buf, sizeof buf, fp); n++)
        if (strstr(buf, want)) {
            fclose(fp);
            if (column) {
                const char *at = strstr(buf, text);
                assert_non_null(at);
                *column = (int)(at - buf) + 1;
            }
            return n;
        }
    fclose(fp);
    fail_msg("no %s in %s", want, o->source);
    return 0;
}

/* The lowest address of a statement on line of walk_list's CU. */
static uint64_t line_addr(const struct oracle *o, int line)
{
    Dwarf_Die cu;
    Dwarf_Lines *lines;
    size_t n;
    assert_non_null(dwarf_addrdie(o->dw, o->fn->entry, &cu));
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
    assert_true(best != UINT64_MAX);
    return best;
}

/* The operand of the one-operation location (atom) of the variable or parameter
 * named name anywhere under die. */
static bool find_var(Dwarf_Die *die, const char *name, int atom, uint64_t *out)
{
    Dwarf_Die c;
    if (dwarf_child(die, &c) != 0)
        return false;
    do {
        Dwarf_Attribute at;
        Dwarf_Op *ops;
        size_t n;
        const char *cn = dwarf_formstring(dwarf_attr_integrate(&c, DW_AT_name, &at));
        int tag = dwarf_tag(&c);
        if ((tag == DW_TAG_variable || tag == DW_TAG_formal_parameter) && cn &&
            strcmp(cn, name) == 0 &&
            dwarf_getlocation(dwarf_attr(&c, DW_AT_location, &at), &ops, &n) == 0 && n == 1 &&
            ops[0].atom == atom) {
            *out = ops[0].number;
            return true;
        }
        if (find_var(&c, name, atom, out))
            return true;
    } while (dwarf_siblingof(&c, &c) == 0);
    return false;
}

static uint64_t var_operand(const struct oracle *o, const char *name, int atom)
{
    Dwarf_Die cu, c;
    assert_non_null(dwarf_addrdie(o->dw, o->fn->entry, &cu));
    assert_int_equal(dwarf_child(&cu, &c), 0);
    uint64_t v;
    do {
        Dwarf_Addr lo;
        if (dwarf_tag(&c) == DW_TAG_subprogram && dwarf_lowpc(&c, &lo) == 0 &&
            lo == o->fn->entry && find_var(&c, name, atom, &v))
            return v;
    } while (dwarf_siblingof(&c, &c) == 0);
    fail_msg("no variable %s with operation 0x%x in walk_list", name, atom);
    return 0;
}

/* Writes an int to the stack slot of the variable name, at CFA + its fbreg offset. */
static void poke_var(const struct oracle *o, const char *name, int32_t value)
{
    poke(CFA + var_operand(o, name, DW_OP_fbreg), &value, 4);
}

/* The list a -> b -> c, the label, and the static `calls` = 7; returns the bias that
 * puts `calls` at CALLS. */
static uint64_t fill_memory(const struct oracle *o)
{
    memset(mem, 0xcc, sizeof mem);
    poke64(NODE_A, NODE_B);
    poke64(NODE_B, NODE_C);
    poke64(NODE_C, 0);
    for (int i = 0; i < 3; i++) {
        int32_t v = i + 1;
        poke(NODE_A + 16u * (unsigned)i + 8, &v, 4);
    }
    poke(LABEL, "walk", 5);
    int32_t calls = 7;
    poke(CALLS, &calls, 4);
    poke64(CFA + var_operand(o, "head", DW_OP_fbreg), NODE_A);
    poke64(CFA + var_operand(o, "label", DW_OP_fbreg), LABEL);
    poke_var(o, "limit", 10);
    return CALLS - var_operand(o, "calls", DW_OP_addr);
}

/* dw_frame_vars_json into two strings (freed by the caller) and its result. */
static int vars(const char *name, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                const struct value_opts *opts, char **params, char **locals)
{
    struct strbuf p = {0}, l = {0};
    int rc = dw_frame_vars_json(&p, &l, fixture(name), pc, bias, regs, mem_read, NULL, opts);
    *params = sb_take(&p);
    *locals = sb_take(&l);
    return rc;
}

static void check_vars(const char *name, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                       const struct value_opts *opts, const char *params, const char *locals)
{
    char *p, *l;
    assert_int_equal(vars(name, pc, bias, regs, opts, &p, &l), 0);
    assert_string_equal(p, params);
    assert_string_equal(l, locals);
    free(p);
    free(l);
}

/* ---- sites ---- */

static void test_sites_plain(void **state)
{
    (void)state;
    const struct dw_index *ix = load("trace_c");
    const struct dw_function *f = must_find(ix, "add_ints");
    struct dw_site s[4];
    assert_int_equal(dw_frame_sites(fixture("trace_c"), f->entry, s, 4), 1);
    assert_string_equal(s[0].function, "add_ints");
    assert_string_equal(s[0].file, f->decl_file); /* absolute */
    assert_string_equal(base_name(s[0].file), "trace_c.c");
    assert_int_equal(s[0].line, f->decl_line + 1); /* the prologue's line: the "{" below */
    assert_false(s[0].inlined);
    dw_sites_free(s, 1);

    /* an address inside main, a return address minus one as the unwinder passes */
    f = must_find(ix, "main");
    assert_int_equal(dw_frame_sites(fixture("trace_c"), f->end - 1, s, 4), 1);
    assert_string_equal(s[0].function, "main");
    assert_true(s[0].line > f->decl_line);
    dw_sites_free(s, 1);

    /* no DWARF function there, no such file */
    assert_int_equal(dw_frame_sites(fixture("trace_c"), 0x10, s, 4), 0);
    assert_int_equal(dw_frame_sites(fixture("trace_c"), 0x7fffffff0000, s, 4), 0);
    assert_int_equal(dw_frame_sites("/nonexistent/strobe", f->entry, s, 4), 0);
}

static void test_sites_inlined(void **state)
{
    (void)state;
    struct oracle o = open_frame_vars();
    int col_clamp, col_scale;
    int clamp = mark_line(&o, "clamp", NULL, NULL);
    int call_clamp = mark_line(&o, "call_clamp", "clamp_inl(", &col_clamp);
    int call_scale = mark_line(&o, "call_scale", "scale_inl(", &col_scale);
    uint64_t pc = line_addr(&o, clamp);

    struct dw_site s[4];
    assert_int_equal(dw_frame_sites(fixture("frame_vars"), pc, s, 4), 3);
    assert_string_equal(s[0].function, "clamp_inl");
    assert_string_equal(s[0].file, o.source);
    assert_int_equal(s[0].line, clamp);
    assert_true(s[0].column > 0);
    assert_true(s[0].inlined);
    assert_string_equal(s[1].function, "scale_inl");
    assert_string_equal(s[1].file, o.source);
    assert_int_equal(s[1].line, call_clamp);
    assert_int_equal(s[1].column, col_clamp);
    assert_true(s[1].inlined);
    assert_string_equal(s[2].function, "walk_list");
    assert_string_equal(s[2].file, o.source);
    assert_int_equal(s[2].line, call_scale);
    assert_int_equal(s[2].column, col_scale);
    assert_false(s[2].inlined);
    dw_sites_free(s, 3);

    /* room for one: the innermost */
    assert_int_equal(dw_frame_sites(fixture("frame_vars"), pc, s, 1), 1);
    assert_string_equal(s[0].function, "clamp_inl");
    dw_sites_free(s, 1);
    close_oracle(&o);
}

/* The out-of-line site of every DWARF function, at its entry, is named as the index
 * names it: namespaces, classes, templates, operators, a lambda, Rust paths. */
static void check_names(const char *name)
{
    const struct dw_index *ix = load(name);
    size_t checked = 0;
    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        if (!f->has_dwarf)
            continue;
        struct dw_site s[8];
        size_t n = dw_frame_sites(fixture(name), f->entry, s, 8);
        if (n == 0)
            fail_msg("%s: no site at %s", name, f->name);
        assert_string_equal(s[n - 1].function, f->name);
        assert_false(s[n - 1].inlined);
        dw_sites_free(s, n);
        checked++;
    }
    assert_true(checked > 10);
}

static void test_sites_names(void **state)
{
    (void)state;
    check_names("trace_cpp");
    const struct dw_index *ix = load("trace_cpp");
    struct dw_site s[2];
    const struct dw_function *f = must_find(ix, "main::{lambda(int)#1}::operator()");
    assert_int_equal(dw_frame_sites(fixture("trace_cpp"), f->entry, s, 2), 1);
    assert_string_equal(base_name(s[0].file), "trace_cpp.cpp");
    dw_sites_free(s, 1);
    if (access(fixture("trace_rust"), R_OK) == 0 && access(fixture("trace_rust_v0"), R_OK) == 0) {
        check_names("trace_rust");
        check_names("trace_rust_v0");
        f = must_find(load("trace_rust"), "trace_rust::describe");
        assert_int_equal(dw_frame_sites(fixture("trace_rust"), f->entry, s, 2), 1);
        assert_string_equal(s[0].function, "trace_rust::describe");
        assert_string_equal(base_name(s[0].file), "trace_rust.rs");
        assert_int_equal(s[0].line, f->decl_line);
        dw_sites_free(s, 1);
    }
}

/* ---- variables ---- */

static const char LOOP_PARAMS[] =
    "[{\"name\":\"head\",\"type\":\"struct node *\",\"value\":{\"@ptr\":\"0x10100\","
    "\"next\":{\"@ptr\":\"0x10110\",\"next\":\"<struct node at 0x10120>\",\"value\":2},"
    "\"value\":1}},{\"name\":\"limit\",\"type\":\"int\",\"value\":10}]";
static const char LOOP_LOCALS[] =
    "[{\"name\":\"val\",\"type\":\"int\",\"value\":2},"
    "{\"name\":\"n\",\"type\":\"struct node *\",\"value\":{\"@ptr\":\"0x10110\","
    "\"next\":{\"@ptr\":\"0x10120\",\"next\":null,\"value\":3},\"value\":2}},"
    "{\"name\":\"calls\",\"type\":\"int\",\"value\":7},"
    "{\"name\":\"label\",\"type\":\"char *\",\"value\":\"walk\"},"
    "{\"name\":\"total\",\"type\":\"int\",\"value\":1}]";

/* In the loop body, second iteration: the parameters, then the body's and the loop's
 * variables, then the function's (static included), from stack slots under CFA. */
static void test_vars_stack(void **state)
{
    (void)state;
    struct oracle o = open_frame_vars();
    uint64_t bias = fill_memory(&o);
    poke64(CFA + var_operand(&o, "n", DW_OP_fbreg), NODE_B);
    poke_var(&o, "val", 2);
    poke_var(&o, "total", 1);
    uint64_t pc = line_addr(&o, mark_line(&o, "loop", NULL, NULL));
    struct value_opts opts = {.max_depth = 2};

    struct dw_regs regs = {.cfa = CFA}; /* no register needed */
    check_vars("frame_vars", pc, bias, &regs, &opts, LOOP_PARAMS, LOOP_LOCALS);

    /* no CFA given: the CFI says rbp + 16 there (-O0 keeps a frame pointer) */
    regs = (struct dw_regs){.known = 1u << 6};
    regs.val[6] = CFA - 16;
    check_vars("frame_vars", pc, bias, &regs, &opts, LOOP_PARAMS, LOOP_LOCALS);

    /* nor rbp: stack variables are unavailable, the static is still read */
    regs.known = 1u << 7;
    regs.val[7] = CFA - 64;
#define NO_RBP "\"<unavailable: register 6 not saved>\""
    check_vars("frame_vars", pc, bias, &regs, &opts,
               "[{\"name\":\"head\",\"type\":\"struct node *\",\"value\":" NO_RBP "},"
               "{\"name\":\"limit\",\"type\":\"int\",\"value\":" NO_RBP "}]",
               "[{\"name\":\"val\",\"type\":\"int\",\"value\":" NO_RBP "},"
               "{\"name\":\"n\",\"type\":\"struct node *\",\"value\":" NO_RBP "},"
               "{\"name\":\"calls\",\"type\":\"int\",\"value\":7},"
               "{\"name\":\"label\",\"type\":\"char *\",\"value\":" NO_RBP "},"
               "{\"name\":\"total\",\"type\":\"int\",\"value\":" NO_RBP "}]");
#undef NO_RBP

    /* appended to what the buffers hold */
    struct strbuf p = {0}, l = {0};
    sb_puts(&p, "P=");
    sb_puts(&l, "L=");
    regs = (struct dw_regs){.cfa = CFA};
    assert_int_equal(dw_frame_vars_json(&p, &l, fixture("frame_vars"), pc, bias, &regs, mem_read,
                                        NULL, &opts),
                     0);
    assert_int_equal(strncmp(p.buf, "P=[{\"name\":\"head\"", 17), 0);
    assert_int_equal(strncmp(l.buf, "L=[{\"name\":\"val\"", 16), 0);
    sb_free(&p);
    sb_free(&l);
    close_oracle(&o);
}

/* In clamp_inl inlined into scale_inl inlined into walk_list: the parameters of each
 * function scope, innermost first and in declaration order (gcc lists hi before x). */
static void test_vars_inlined(void **state)
{
    (void)state;
    struct oracle o = open_frame_vars();
    uint64_t bias = fill_memory(&o);
    poke_var(&o, "x", 12);
    poke_var(&o, "hi", 50);
    poke_var(&o, "s", 6);
    poke_var(&o, "r", 12);
    poke_var(&o, "doubled", 12);
    poke_var(&o, "total", 6);
    uint64_t pc = line_addr(&o, mark_line(&o, "clamp", NULL, NULL));
    struct dw_regs regs = {.cfa = CFA};
    struct value_opts opts = {.max_depth = 1};
    check_vars("frame_vars", pc, bias, &regs, &opts,
               "[{\"name\":\"x\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"hi\",\"type\":\"int\",\"value\":50},"
               "{\"name\":\"s\",\"type\":\"int\",\"value\":6},"
               "{\"name\":\"head\",\"type\":\"struct node *\",\"value\":{\"@ptr\":\"0x10100\","
               "\"next\":\"<struct node at 0x10110>\",\"value\":1}},"
               "{\"name\":\"limit\",\"type\":\"int\",\"value\":10}]",
               "[{\"name\":\"r\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"doubled\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"calls\",\"type\":\"int\",\"value\":7},"
               "{\"name\":\"label\",\"type\":\"char *\",\"value\":\"walk\"},"
               "{\"name\":\"total\",\"type\":\"int\",\"value\":6}]");

    /* a small budget: 4 x max_output bytes per array, the rest counted */
    opts.max_output = 16;
    check_vars("frame_vars", pc, bias, &regs, &opts,
               "[{\"name\":\"x\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"hi\",\"type\":\"int\",\"value\":50},"
               "{\"name\":\"...\",\"value\":\"(3 more)\"}]",
               "[{\"name\":\"r\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"doubled\",\"type\":\"int\",\"value\":12},"
               "{\"name\":\"...\",\"value\":\"(3 more)\"}]");
    close_oracle(&o);
}

/* -O2: parameters in registers, and main's loop counter in a location list (a
 * constant, rbx, rbx - 1 as a computed value, or nowhere, depending on pc). */
static void test_vars_registers(void **state)
{
    (void)state;
    const struct dw_index *ix = load("opt_O2");
    const struct dw_function *f = must_find(ix, "leaf_sum");
    struct dw_regs regs = {.known = 1u << 5 | 1u << 4};
    regs.val[5] = 7;  /* rdi */
    regs.val[4] = 10; /* rsi */
    check_vars("opt_O2", f->entry, 0, &regs, NULL,
               "[{\"name\":\"a\",\"type\":\"int\",\"value\":7},"
               "{\"name\":\"b\",\"type\":\"int\",\"value\":10}]",
               "[]");
    regs.known = 1u << 4;
    check_vars("opt_O2", f->entry, 0, &regs, NULL,
               "[{\"name\":\"a\",\"type\":\"int\","
               "\"value\":\"<unavailable: register 5 not saved>\"},"
               "{\"name\":\"b\",\"type\":\"int\",\"value\":10}]",
               "[]");
    check_vars("opt_O2", f->entry, 0, NULL, NULL,
               "[{\"name\":\"a\",\"type\":\"int\","
               "\"value\":\"<unavailable: register 5 not saved>\"},"
               "{\"name\":\"b\",\"type\":\"int\","
               "\"value\":\"<unavailable: register 4 not saved>\"}]",
               "[]");

    f = must_find(ix, "main");
    regs = (struct dw_regs){.known = (1u << 17) - 1};
    for (int r = 0; r < 17; r++)
        regs.val[r] = 1000 + (uint64_t)r;
    regs.val[3] = 5; /* rbx */
    bool lit = false, reg = false, computed = false, gone = false;
    for (uint64_t pc = f->entry; pc < f->end; pc++) {
        char *p, *l;
        assert_int_equal(vars("opt_O2", pc, 0, &regs, NULL, &p, &l), 0);
        assert_string_equal(p, "[]");
        assert_int_equal(l[0], '[');
        assert_int_equal(l[strlen(l) - 1], ']');
        lit |= strstr(l, "{\"name\":\"i\",\"type\":\"int\",\"value\":0}") != NULL;
        reg |= strstr(l, "{\"name\":\"i\",\"type\":\"int\",\"value\":5}") != NULL;
        computed |= strstr(l, "{\"name\":\"i\",\"type\":\"int\",\"value\":4}") != NULL;
        gone |= strstr(l, "\"<optimized out>\"") != NULL;
        free(p);
        free(l);
    }
    assert_true(lit);
    assert_true(reg);
    assert_true(computed);
    assert_true(gone);
}

/* A value the location computes with a division (DW_OP_mod, DW_OP_div...): place()'s
 * bucket b = h % t->cap, before the division runs, from rsi and the word rdi points
 * to. */
static void test_vars_computed_by_division(void **state)
{
    (void)state;
    const struct dw_function *f = must_find(load("loc_ops_O2"), "place");
    struct dw_regs regs = {.known = (1u << 17) - 1};
    for (int r = 0; r < 17; r++)
        regs.val[r] = 1000 + (uint64_t)r;
    poke64(MEM_BASE + 0x400, 7); /* t->cap */
    regs.val[5] = MEM_BASE + 0x400; /* rdi: t */
    regs.val[4] = 1003;             /* rsi: h */
    bool computed = false;
    for (uint64_t pc = f->entry; pc < f->end && !computed; pc++) {
        char *p, *l;
        assert_int_equal(vars("loc_ops_O2", pc, 0, &regs, NULL, &p, &l), 0);
        computed = strstr(l, "{\"name\":\"b\",\"type\":\"long unsigned int\",\"value\":2}") != NULL;
        free(p);
        free(l);
    }
    assert_true(computed); /* 1003 % 7 */
}

static void test_vars_no_dwarf(void **state)
{
    (void)state;
    char *p, *l;
    struct dw_regs regs = {.cfa = CFA};
    assert_int_equal(vars("trace_c", 0x10, 0, &regs, NULL, &p, &l), -1);
    assert_string_equal(p, "[]");
    assert_string_equal(l, "[]");
    free(p);
    free(l);
    struct strbuf sp = {0}, sl = {0};
    assert_int_equal(dw_frame_vars_json(&sp, &sl, "/nonexistent/strobe", 0x1000, 0, &regs,
                                        mem_read, NULL, NULL),
                     -1);
    assert_string_equal(sp.buf, "[]");
    assert_string_equal(sl.buf, "[]");
    sb_free(&sp);
    sb_free(&sl);
}

/* ---- one variable's place ---- */

static int find(const char *name, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                const char *var, struct dw_var_where *w, struct strobe_error *err)
{
    return dw_frame_var_find(fixture(name), pc, bias, regs, mem_read, NULL, var, w, err);
}

/* -O0 in walk_list's loop: stack slots at CFA + their DW_OP_fbreg offsets, the static
 * at its address plus the bias, the innermost scope's variable first; in the inlined
 * chain the callee's parameters; names not in scope listed; no rbp, no place. */
static void test_var_find_stack(void **state)
{
    (void)state;
    struct oracle o = open_frame_vars();
    uint64_t bias = fill_memory(&o);
    uint64_t pc = line_addr(&o, mark_line(&o, "loop", NULL, NULL));
    struct dw_regs regs = {.cfa = CFA};
    struct dw_var_where w;
    struct strobe_error err;

    assert_int_equal(find("frame_vars", pc, bias, &regs, "limit", &w, &err), 0);
    assert_int_equal(err.code, ERR_NONE);
    assert_string_equal(err.msg, "");
    assert_int_equal(w.kind, DWV_MEMORY);
    assert_int_equal(w.address, CFA + var_operand(&o, "limit", DW_OP_fbreg));
    assert_true(w.is_param);
    assert_int_equal(w.type->kind, DWT_SIGNED);
    assert_string_equal(w.type->name, "int");
    assert_string_equal(w.decl_file, o.source);
    assert_int_equal(w.decl_line, o.fn->decl_line);

    assert_int_equal(find("frame_vars", pc, bias, &regs, "val", &w, &err), 0);
    assert_int_equal(w.kind, DWV_MEMORY);
    assert_int_equal(w.address, CFA + var_operand(&o, "val", DW_OP_fbreg));
    assert_false(w.is_param);
    assert_true(w.decl_line > o.fn->decl_line);

    assert_int_equal(find("frame_vars", pc, bias, &regs, "n", &w, &err), 0);
    assert_int_equal(w.type->kind, DWT_POINTER);
    assert_string_equal(w.type->name, "struct node *");

    assert_int_equal(find("frame_vars", pc, bias, &regs, "calls", &w, &err), 0);
    assert_int_equal(w.kind, DWV_MEMORY);
    assert_int_equal(w.address, CALLS);

    assert_int_equal(find("frame_vars", pc, bias, &regs, "nope", &w, &err), 1);
    assert_int_equal(err.code, ERR_VARIABLE_NOT_FOUND);
    assert_string_equal(err.msg, "in scope here: val, n, head, limit, calls, label, total");
    /* the inlined callees' variables are not in scope in the loop */
    assert_int_equal(find("frame_vars", pc, bias, &regs, "doubled", &w, &err), 1);

    regs = (struct dw_regs){.known = 1u << 7};
    regs.val[7] = CFA - 64;
    assert_int_equal(find("frame_vars", pc, bias, &regs, "limit", &w, &err), -1);
    assert_int_equal(err.code, ERR_VARIABLE_UNAVAILABLE);
    assert_string_equal(err.msg, "register 6 not saved");
    assert_int_equal(find("frame_vars", pc, bias, &regs, "calls", &w, &err), 0);

    /* in clamp_inl inlined into scale_inl: its parameter x, scale_inl's s */
    pc = line_addr(&o, mark_line(&o, "clamp", NULL, NULL));
    regs = (struct dw_regs){.cfa = CFA};
    assert_int_equal(find("frame_vars", pc, bias, &regs, "x", &w, &err), 0);
    assert_int_equal(w.kind, DWV_MEMORY);
    assert_int_equal(w.address, CFA + var_operand(&o, "x", DW_OP_fbreg));
    assert_true(w.is_param);
    assert_int_equal(find("frame_vars", pc, bias, &regs, "s", &w, &err), 0);
    assert_int_equal(w.address, CFA + var_operand(&o, "s", DW_OP_fbreg));

    /* no function there, no file */
    assert_int_equal(find("frame_vars", 0x10, bias, &regs, "x", &w, &err), 1);
    assert_int_equal(err.code, ERR_VARIABLE_NOT_FOUND);
    assert_string_equal(err.msg, "nothing is in scope here");
    assert_int_equal(dw_frame_var_find("/nonexistent/strobe", pc, 0, &regs, mem_read, NULL, "x",
                                       &w, &err),
                     1);
    assert_int_equal(err.code, ERR_VARIABLE_NOT_FOUND);
    close_oracle(&o);
}

/* -O2: leaf_sum's parameters in rdi and rsi; main's loop counter a constant, a
 * register or a computed value, depending on pc; a body variable sometimes nowhere. */
static void test_var_find_registers(void **state)
{
    (void)state;
    const struct dw_index *ix = load("opt_O2");
    const struct dw_function *f = must_find(ix, "leaf_sum");
    struct dw_var_where w;
    struct strobe_error err;
    assert_int_equal(find("opt_O2", f->entry, 0, NULL, "a", &w, &err), 0);
    assert_int_equal(w.kind, DWV_REGISTER);
    assert_int_equal(w.regno, 5);
    assert_true(w.is_param);
    assert_int_equal(find("opt_O2", f->entry, 0, NULL, "b", &w, &err), 0);
    assert_int_equal(w.regno, 4);

    f = must_find(ix, "main");
    struct dw_regs regs = {.known = (1u << 17) - 1};
    for (int r = 0; r < 17; r++)
        regs.val[r] = 1000 + (uint64_t)r;
    regs.val[3] = 5; /* rbx */
    bool value = false, reg = false, gone = false;
    for (uint64_t pc = f->entry; pc < f->end; pc++) {
        int rc = find("opt_O2", pc, 0, &regs, "i", &w, &err);
        if (rc == 0 && w.kind == DWV_VALUE) {
            assert_int_equal(w.n_bytes, 4);
            value = true;
        } else if (rc == 0) {
            assert_int_equal(w.kind, DWV_REGISTER);
            assert_true(w.regno == 3 || w.regno == 4); /* rbx, or rsi passing it on */
            reg = true;
        }
        /* t, the loop body's, lives in a register only between its call and its use */
        if (find("opt_O2", pc, 0, &regs, "t", &w, &err) == -1) {
            assert_int_equal(err.code, ERR_VARIABLE_UNAVAILABLE);
            assert_string_equal(err.msg, "optimized out at this point");
            gone = true;
        }
    }
    assert_true(value);
    assert_true(reg);
    assert_true(gone);
}

/* ---- the file cache ---- */

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* A file replaced on disk is read again, not answered from the old handle. */
static void test_file_changes(void **state)
{
    (void)state;
    char path[] = "/tmp/strobe-test-frame-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    uint64_t walk = must_find(load("frame_vars"), "walk_list")->entry;
    uint64_t add = must_find(load("trace_c"), "add_ints")->entry;
    struct dw_site s[4];

    copy_file(fixture("frame_vars"), path);
    assert_int_equal(dw_frame_sites(path, walk, s, 4), 1);
    assert_string_equal(s[0].function, "walk_list");
    dw_sites_free(s, 1);

    copy_file(fixture("trace_c"), path);
    assert_int_equal(dw_frame_sites(path, add, s, 4), 1);
    assert_string_equal(s[0].function, "add_ints");
    dw_sites_free(s, 1);

    dw_frame_cache_clear();
    assert_int_equal(dw_frame_sites(path, add, s, 4), 1);
    assert_string_equal(s[0].function, "add_ints");
    dw_sites_free(s, 1);
    assert_int_equal(unlink(path), 0);
}

/* Two threads (two crashing sessions) asking about two files at once. */
struct worker_arg {
    const char *file;
    uint64_t pc;
    const char *function;
    int failures;
};

static void *worker(void *p)
{
    struct worker_arg *w = p;
    for (int i = 0; i < 50; i++) {
        struct dw_site s[4];
        size_t n = dw_frame_sites(w->file, w->pc, s, 4);
        w->failures += n != 1 || strcmp(s[0].function, w->function) != 0;
        dw_sites_free(s, n);
        struct strbuf pa = {0}, lo = {0};
        struct dw_regs regs = {.cfa = CFA};
        w->failures += dw_frame_vars_json(&pa, &lo, w->file, w->pc, 0, &regs, mem_read, NULL,
                                          NULL) != 0;
        sb_free(&pa);
        sb_free(&lo);
        if (i % 10 == 0)
            dw_frame_cache_clear();
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char a[PATH_MAX + 64], b[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s", fixture("frame_vars"));
    snprintf(b, sizeof b, "%s", fixture("trace_c"));
    struct worker_arg w[2] = {
        {a, must_find(load("frame_vars"), "walk_list")->entry, "walk_list", 0},
        {b, must_find(load("trace_c"), "list_sum")->entry, "list_sum", 0},
    };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(w[0].failures, 0);
    assert_int_equal(w[1].failures, 0);
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
        cmocka_unit_test(test_sites_plain),    cmocka_unit_test(test_sites_inlined),
        cmocka_unit_test(test_sites_names),    cmocka_unit_test(test_vars_stack),
        cmocka_unit_test(test_vars_inlined),   cmocka_unit_test(test_vars_registers),
        cmocka_unit_test(test_vars_computed_by_division),
        cmocka_unit_test(test_vars_no_dwarf),  cmocka_unit_test(test_file_changes),
        cmocka_unit_test(test_threads),        cmocka_unit_test(test_var_find_stack),
        cmocka_unit_test(test_var_find_registers),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
