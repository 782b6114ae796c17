/*
 * test_dwarf.c - the DWARF function index (dwarf/dwarf.h) on the real fixture programs
 * build/fixtures/trace_c, trace_cpp and, when built, trace_rust and trace_rust_v0:
 * names, declaration files and lines (read back from the sources), parameter and
 * return types, C++ overloads/templates/operators/lambdas, Rust legacy and v0 names,
 * one entry per address, dw_function_at, symbol-only libraries, the cache, and
 * dw_demangle. Fixtures come from $STROBE_FIXTURES, else ../fixtures next to this
 * binary (build/tests/test_dwarf -> build/fixtures).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/fixtures.h"

#include <dirent.h>
#include <fcntl.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf.h"

static const struct dw_function *find(const struct dw_index *ix, const char *name)
{
    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        if (strcmp(f->name, name) == 0)
            return f;
        for (size_t a = 0; a < f->n_aliases; a++)
            if (strcmp(f->aliases[a], name) == 0)
                return f;
    }
    return NULL;
}

static const struct dw_function *must_find(const struct dw_index *ix, const char *name)
{
    const struct dw_function *f = find(ix, name);
    if (!f)
        fail_msg("no function %s in %s", name, ix->path);
    return f;
}

static size_t count_named(const struct dw_index *ix, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < ix->n_functions; i++)
        n += strcmp(ix->functions[i].name, name) == 0;
    return n;
}

/* f is declared in the fixture source named base, on a line that contains word. */
static void check_decl(const struct dw_function *f, const char *base, const char *word)
{
    assert_true(f->has_dwarf);
    assert_non_null(f->decl_file);
    assert_int_equal(f->decl_file[0], '/');
    const char *slash = strrchr(f->decl_file, '/');
    assert_string_equal(slash + 1, base);
    assert_true(f->decl_line > 0);
    FILE *fp = fopen(f->decl_file, "r");
    assert_non_null(fp);
    char line[512] = "";
    for (int i = 0; i < f->decl_line && fgets(line, sizeof line, fp); i++)
        ;
    fclose(fp);
    if (!strstr(line, word))
        fail_msg("%s: line %d of %s is \"%s\", expected %s", f->name, f->decl_line, base, line,
                 word);
}

static void check_type(const struct dw_type *t, enum dw_type_kind kind, uint64_t size)
{
    assert_non_null(t);
    assert_int_equal(t->kind, kind);
    assert_int_equal(t->size, size);
}

static void check_param(const struct dw_function *f, size_t i, const char *name,
                        enum dw_type_kind kind, uint64_t size)
{
    assert_true(i < f->n_params);
    assert_string_equal(f->params[i].name, name);
    check_type(f->params[i].type, kind, size);
}

/* ---- C ---- */

static void test_c_functions(void **state)
{
    (void)state;
    const struct dw_index *ix = load("trace_c");
    assert_true(ix->has_dwarf);
    assert_true(ix->is_pie);
    assert_int_equal(strlen(ix->build_id), 40);
    static const char *const names[] = {
        "add_ints", "scale",      "count_chars", "manhattan",  "move_point", "color_name",
        "is_even",  "factorial",  "square",      "apply",      "make_point", "next_color",
        "half",     "first_char", "list_sum",    "count_flags", "sum_all",   "main"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const struct dw_function *f = must_find(ix, names[i]);
        check_decl(f, "trace_c.c", names[i]);
        assert_string_equal(f->demangled, f->name);
        assert_null(f->linkage_name);
        assert_true(f->end > f->entry);
        assert_int_equal(f->variadic, strcmp(names[i], "sum_all") == 0);
    }

    const struct dw_function *f = must_find(ix, "add_ints");
    assert_int_equal(f->n_params, 2);
    check_param(f, 0, "a", DWT_SIGNED, 4);
    check_param(f, 1, "b", DWT_SIGNED, 4);
    check_type(f->return_type, DWT_SIGNED, 4);
    assert_string_equal(f->return_type->name, "int");

    f = must_find(ix, "scale");
    check_param(f, 0, "v", DWT_FLOAT, 8);
    check_type(f->return_type, DWT_FLOAT, 8);
    check_type(must_find(ix, "half")->return_type, DWT_FLOAT, 4);

    f = must_find(ix, "count_chars");
    check_param(f, 0, "text", DWT_POINTER, 8);
    check_type(f->params[0].type->target, DWT_CHAR, 1); /* const stripped */
    check_param(f, 1, "c", DWT_CHAR, 1);
    check_type(f->return_type, DWT_UNSIGNED, 8);
    assert_string_equal(f->return_type->name, "size_t"); /* typedef keeps its name */

    f = must_find(ix, "manhattan");
    check_param(f, 0, "p", DWT_STRUCT, 8);
    const struct dw_type *point = f->params[0].type;
    assert_string_equal(point->name, "struct point");
    assert_int_equal(point->n_members, 2);
    assert_string_equal(point->members[0].name, "x");
    assert_int_equal(point->members[0].offset, 0);
    assert_string_equal(point->members[1].name, "y");
    assert_int_equal(point->members[1].offset, 4);
    check_type(point->members[1].type, DWT_SIGNED, 4);
    /* one conversion per DIE: make_point returns the very same struct point */
    assert_ptr_equal(must_find(ix, "make_point")->return_type, point);

    f = must_find(ix, "move_point");
    check_param(f, 0, "p", DWT_POINTER, 8);
    assert_ptr_equal(f->params[0].type->target, point);
    assert_null(f->return_type);

    f = must_find(ix, "color_name");
    check_param(f, 0, "c", DWT_ENUM, 4);
    const struct dw_type *color = f->params[0].type;
    assert_string_equal(color->name, "enum color");
    assert_int_equal(color->n_enumerators, 3);
    assert_string_equal(color->enumerators[0].name, "RED");
    assert_int_equal(color->enumerators[0].value, 0);
    assert_string_equal(color->enumerators[1].name, "GREEN");
    assert_int_equal(color->enumerators[1].value, 5);
    assert_string_equal(color->enumerators[2].name, "BLUE");
    assert_int_equal(color->enumerators[2].value, -2);
    check_type(f->return_type, DWT_POINTER, 8);
    check_type(f->return_type->target, DWT_CHAR, 1);
    check_type(must_find(ix, "next_color")->return_type, DWT_ENUM, 4);

    f = must_find(ix, "is_even");
    check_type(f->return_type, DWT_BOOL, 1);
    f = must_find(ix, "factorial");
    check_param(f, 0, "n", DWT_UNSIGNED, 4);
    check_type(f->return_type, DWT_UNSIGNED, 8);

    f = must_find(ix, "apply"); /* static, with a function pointer */
    check_param(f, 0, "fn", DWT_POINTER, 8);
    const struct dw_type *fn = f->params[0].type->target;
    assert_non_null(fn);
    assert_int_equal(fn->kind, DWT_FUNCTION);
    check_type(fn->target, DWT_SIGNED, 4);
    assert_string_equal(f->params[0].type->name, "int (*)(int)");

    f = must_find(ix, "list_sum"); /* struct node { struct node *next; } terminates */
    const struct dw_type *node = f->params[0].type->target;
    check_type(node, DWT_STRUCT, 16);
    assert_string_equal(node->members[0].name, "next");
    assert_ptr_equal(node->members[0].type->target, node);

    f = must_find(ix, "count_flags");
    assert_string_equal(f->return_type->name, "counter_t");
    check_type(f->return_type, DWT_UNSIGNED, 8);
    const struct dw_type *flags = f->params[0].type->target;
    check_type(flags, DWT_STRUCT, 72);
    assert_int_equal(flags->n_members, 4);
    assert_int_equal(flags->members[0].bit_size, 1);
    assert_int_equal(flags->members[0].offset * 8 + flags->members[0].bit_offset, 0);
    assert_int_equal(flags->members[1].bit_size, 3);
    assert_int_equal(flags->members[1].offset * 8 + flags->members[1].bit_offset, 1);
    const struct dw_type *tags = flags->members[2].type;
    check_type(tags, DWT_ARRAY, 16);
    assert_int_equal(tags->count, 4);
    check_type(tags->target, DWT_SIGNED, 4);
    const struct dw_type *grid = flags->members[3].type; /* double[2][3] */
    check_type(grid, DWT_ARRAY, 48);
    assert_int_equal(grid->count, 2);
    check_type(grid->target, DWT_ARRAY, 24);
    assert_int_equal(grid->target->count, 3);
    check_type(grid->target->target, DWT_FLOAT, 8);
    assert_int_equal(flags->members[3].offset, 24);
}

/* ---- C++ ---- */

static void test_cpp_functions(void **state)
{
    (void)state;
    const struct dw_index *ix = load("trace_cpp");
    static const struct {
        const char *name, *word;
    } fns[] = {
        {"a::b::Widget::get", "Widget::get"},
        {"a::b::Widget::set", "Widget::set"},
        {"a::b::Widget::scaled", "scaled"},
        {"a::b::Widget::Widget", "Widget("},
        {"a::b::operator+", "operator+"},
        {"a::b::operator==", "operator=="},
        {"a::b::twice<int>", "twice"},
        {"a::b::twice<double>", "twice"},
        {"a::b::Box<int>::unwrap", "unwrap"},
        {"Square::area", "area"},
        {"Circle::area", "area"},
        {"checked_div", "checked_div"},
        {"greet", "greet"},
        {"main", "main"},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        check_decl(must_find(ix, fns[i].name), "trace_cpp.cpp", fns[i].word);

    const struct dw_function *f = must_find(ix, "a::b::Widget::get");
    assert_string_equal(f->demangled, "a::b::Widget::get() const");
    assert_string_equal(f->linkage_name, "_ZNK1a1b6Widget3getEv");
    assert_int_equal(f->n_params, 1);
    check_param(f, 0, "this", DWT_POINTER, 8);
    assert_string_equal(f->params[0].type->target->name, "Widget");
    check_type(f->return_type, DWT_SIGNED, 4);

    f = must_find(ix, "a::b::Widget::set");
    assert_string_equal(f->demangled, "a::b::Widget::set(int)");
    check_param(f, 1, "size", DWT_SIGNED, 4);

    /* overloads: three entries, one name, distinct demangled forms */
    assert_int_equal(count_named(ix, "a::b::process"), 3);
    bool seen_int = false, seen_double = false, seen_item = false;
    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *g = &ix->functions[i];
        if (strcmp(g->name, "a::b::process") != 0)
            continue;
        check_decl(g, "trace_cpp.cpp", "process(");
        if (strcmp(g->demangled, "a::b::process(int)") == 0) {
            seen_int = true;
            check_param(g, 0, "v", DWT_SIGNED, 4);
        } else if (strcmp(g->demangled, "a::b::process(double)") == 0) {
            seen_double = true;
            check_param(g, 0, "v", DWT_FLOAT, 8);
            check_type(g->return_type, DWT_FLOAT, 8);
        } else if (strcmp(g->demangled, "a::b::process(a::b::Item const&)") == 0) {
            seen_item = true;
            check_param(g, 0, "item", DWT_REFERENCE, 8);
            const struct dw_type *item = g->params[0].type->target;
            check_type(item, DWT_STRUCT, 16);
            assert_string_equal(item->members[1].name, "weight");
            assert_int_equal(item->members[1].offset, 8);
        }
    }
    assert_true(seen_int && seen_double && seen_item);

    f = must_find(ix, "a::b::twice<double>");
    assert_string_equal(f->demangled, "double a::b::twice<double>(double)");
    check_param(f, 0, "v", DWT_FLOAT, 8);
    assert_int_equal(count_named(ix, "a::b::twice<int>"), 1);

    f = must_find(ix, "std::vector<a::b::Item, std::allocator<a::b::Item> >::push_back");
    assert_true(f->has_dwarf);
    assert_string_equal(f->linkage_name, "_ZNSt6vectorIN1a1b4ItemESaIS2_EE9push_backEOS2_");
    assert_string_equal(f->params[0].name, "this");

    f = must_find(ix, "a::b::operator+");
    check_type(f->return_type, DWT_STRUCT, 16);
    assert_int_equal(f->n_params, 2);
    check_type(must_find(ix, "a::b::operator==")->return_type, DWT_BOOL, 1);

    /* the lambda's DWARF has no linkage name: its symbol supplies the scopes */
    f = must_find(ix, "main::{lambda(int)#1}::operator()");
    assert_true(f->has_dwarf);
    assert_string_equal(f->demangled, "main::{lambda(int)#1}::operator()(int) const");
    check_param(f, 1, "x", DWT_SIGNED, 4);

    /* constructors, virtual destructors and methods */
    assert_non_null(find(ix, "Square::Square"));
    assert_non_null(find(ix, "Shape::~Shape"));
    check_type(must_find(ix, "Circle::area")->return_type, DWT_FLOAT, 8);

    f = must_find(ix, "greet"); /* static: DWARF has no linkage name, the symbol has */
    assert_non_null(f->linkage_name);
    assert_non_null(strstr(f->demangled, "greet(std::"));
    check_type(f->return_type, DWT_STRUCT, 32);

    /* std functions that exist only inlined are listed, and nothing traceable is */
    for (size_t i = 0; i < ix->n_inlined_only; i++) {
        assert_true(dw_is_inlined_only(ix, ix->inlined_only[i]));
        assert_null(find(ix, ix->inlined_only[i]));
    }
    assert_false(dw_is_inlined_only(ix, "main"));
    assert_false(dw_is_inlined_only(ix, "a::b::process"));
}

/* ---- every index: one function per entry, dw_function_at ---- */

static void check_unique_and_lookup(const struct dw_index *ix)
{
    assert_true(ix->n_functions > 0);
    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        if (i > 0)
            assert_true(ix->functions[i - 1].entry < f->entry);
        assert_non_null(f->name);
        assert_non_null(f->demangled);
        assert_true(f->end >= f->entry);
        assert_ptr_equal(dw_function_at(ix, f->entry), f);
        if (f->end > f->entry + 1 &&
            (i + 1 == ix->n_functions || ix->functions[i + 1].entry >= f->end))
            assert_ptr_equal(dw_function_at(ix, f->end - 1), f);
    }
    assert_null(dw_function_at(ix, 0));
    assert_null(dw_function_at(ix, ix->functions[ix->n_functions - 1].end + 0x100000));
}

static void test_unique_entries(void **state)
{
    (void)state;
    check_unique_and_lookup(load("trace_c"));
    check_unique_and_lookup(load("trace_cpp"));
    const struct dw_index *ix = load("trace_c");
    const struct dw_function *f = must_find(ix, "factorial");
    assert_ptr_equal(dw_function_at(ix, f->entry + 4), f);
}

/* ---- symbol-only libraries ---- */

/* Path of the first mapped library of this process whose path contains needle. */
static bool mapped_library(const char *needle, char *out, size_t outlen)
{
    FILE *fp = fopen("/proc/self/maps", "r");
    assert_non_null(fp);
    char line[PATH_MAX + 128];
    bool found = false;
    while (!found && fgets(line, sizeof line, fp)) {
        char *path = strchr(line, '/');
        if (!path || !strstr(path, needle))
            continue;
        path[strcspn(path, "\n")] = '\0';
        snprintf(out, outlen, "%s", path);
        found = true;
    }
    fclose(fp);
    return found;
}

static void test_symbol_only(void **state)
{
    (void)state;
    char path[PATH_MAX];
    /* cmocka ships without debug info: everything comes from .dynsym */
    assert_true(mapped_library("libcmocka", path, sizeof path));
    const struct dw_index *ix = dw_index_get(path, NULL);
    assert_non_null(ix);
    assert_false(ix->has_dwarf);
    for (size_t i = 0; i < ix->n_functions; i++) {
        assert_false(ix->functions[i].has_dwarf);
        assert_null(ix->functions[i].decl_file);
        assert_int_equal(ix->functions[i].n_params, 0);
    }
    const struct dw_function *f = must_find(ix, "_cmocka_run_group_tests");
    assert_true(f->end > f->entry);
    check_unique_and_lookup(ix);

    /* libc: symbol-only unless libc6-dbg is installed; either way malloc and puts are
     * found, by name or by alias (puts is _IO_puts in glibc's DWARF) */
    assert_true(mapped_library("/libc.so", path, sizeof path));
    ix = dw_index_get(path, NULL);
    assert_non_null(ix);
    for (const char *const *n = (const char *const[]){"malloc", "puts", "free", NULL}; *n; n++) {
        f = must_find(ix, *n);
        assert_int_equal(f->has_dwarf, ix->has_dwarf);
        assert_true(f->end > f->entry);
    }
    check_unique_and_lookup(ix);
}

/* ---- Rust (when the Makefile's rustc rule built the fixtures) ---- */

static void test_rust(void **state)
{
    (void)state;
    if (access(fixture("trace_rust"), R_OK) != 0 || access(fixture("trace_rust_v0"), R_OK) != 0)
        skip();
    const struct dw_index *ix = load("trace_rust");
    const struct dw_function *f = must_find(ix, "trace_rust::geometry::Point::manhattan");
    check_decl(f, "trace_rust.rs", "manhattan");
    assert_int_equal(strncmp(f->linkage_name, "_ZN", 3), 0); /* legacy */
    check_param(f, 0, "self", DWT_POINTER, 8);
    check_type(f->return_type, DWT_SIGNED, 4);
    assert_int_equal(count_named(ix, "trace_rust::largest"), 2); /* hash stripped */
    f = must_find(ix, "trace_rust::describe");
    check_param(f, 1, "count", DWT_UNSIGNED, 8);
    check_param(f, 2, "ok", DWT_BOOL, 1);
    check_unique_and_lookup(ix);

    ix = load("trace_rust_v0");
    f = must_find(ix, "trace_rust_v0::describe");
    check_decl(f, "trace_rust.rs", "describe");
    assert_int_equal(strncmp(f->linkage_name, "_R", 2), 0);
    char *d = dw_demangle(f->linkage_name, false);
    assert_string_equal(d, "trace_rust_v0::describe");
    free(d);
    /* v0 writes "<crate::Point>::new"; the index unwraps it like legacy names */
    f = must_find(ix, "trace_rust_v0::geometry::Point::new");
    assert_string_equal(f->demangled, "<trace_rust_v0::geometry::Point>::new");
    assert_non_null(find(ix, "trace_rust_v0::largest::<i32>"));
    assert_non_null(find(ix, "trace_rust_v0::largest::<f64>"));
    check_unique_and_lookup(ix);
}

/* ---- the cache ---- */

static void test_cache(void **state)
{
    (void)state;
    const struct dw_index *a = load("trace_c");
    assert_ptr_equal(load("trace_c"), a);
    assert_string_equal(a->path, fixture("trace_c"));
    struct strobe_error err = {0};
    assert_null(dw_index_get("/nonexistent/strobe", &err));
    assert_int_equal(err.code, ERR_NO_DEBUG_SYMBOLS);
    assert_non_null(strstr(err.msg, "/nonexistent/strobe"));
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s", must_find(a, "main")->decl_file); /* a C file */
    err = (struct strobe_error){0};
    assert_null(dw_index_get(src, &err));
    assert_int_equal(err.code, ERR_NO_DEBUG_SYMBOLS);
    assert_non_null(strstr(err.msg, "not an ELF"));
    dw_cache_clear();
    a = load("trace_c");
    assert_non_null(find(a, "main"));
}

/* ---- demangling ---- */

static void test_demangle(void **state)
{
    (void)state;
    static const struct {
        const char *sym, *params, *plain;
    } cases[] = {
        {"_ZNK1a1b6Widget3getEv", "a::b::Widget::get() const", "a::b::Widget::get"},
        {"_ZNSt6vectorIiSaIiEE9push_backERKi",
         "std::vector<int, std::allocator<int> >::push_back(int const&)",
         "std::vector<int, std::allocator<int> >::push_back"},
        {"_Z5twiceIiET_S0_", "int twice<int>(int)", "twice<int>"},
        {"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write", "core::fmt::write"},
        {"_RNvCs1234_7mycrate4main", "mycrate::main", "mycrate::main"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *p = dw_demangle(cases[i].sym, true), *n = dw_demangle(cases[i].sym, false);
        assert_non_null(p);
        assert_non_null(n);
        assert_string_equal(p, cases[i].params);
        assert_string_equal(n, cases[i].plain);
        free(p);
        free(n);
    }
    assert_null(dw_demangle("main", true));
    assert_null(dw_demangle("_start", false));
    assert_null(dw_demangle("", false));
    assert_null(dw_demangle(NULL, false));
}

/* ---- the on-disk cache ---- */

/* Pairs of types already compared (or being compared: the graph has cycles), a -> b.
 * A type met again must map to the same b, so sharing is preserved too. */
struct type_pairs {
    const struct dw_type **a, **b;
    size_t n, cap;
};

static void eq_str(const char *a, const char *b)
{
    if (!a) {
        assert_null(b);
    } else {
        assert_non_null(b);
        assert_string_equal(a, b);
    }
}

static void eq_type(struct type_pairs *tp, const struct dw_type *a, const struct dw_type *b)
{
    if (!a) {
        assert_null(b);
        return;
    }
    assert_non_null(b);
    for (size_t i = 0; i < tp->n; i++)
        if (tp->a[i] == a) {
            assert_ptr_equal(tp->b[i], b);
            return;
        }
    if (tp->n == tp->cap) {
        tp->cap = tp->cap ? tp->cap * 2 : 64;
        tp->a = realloc(tp->a, tp->cap * sizeof *tp->a);
        tp->b = realloc(tp->b, tp->cap * sizeof *tp->b);
        assert_true(tp->a && tp->b);
    }
    tp->a[tp->n] = a;
    tp->b[tp->n++] = b;
    assert_int_equal(a->kind, b->kind);
    eq_str(a->name, b->name);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->system_header, b->system_header);
    assert_int_equal(a->n_members, b->n_members);
    for (size_t i = 0; i < a->n_members; i++) {
        const struct dw_member *x = &a->members[i], *y = &b->members[i];
        eq_str(x->name, y->name);
        assert_int_equal(x->offset, y->offset);
        assert_int_equal(x->bit_size, y->bit_size);
        assert_int_equal(x->bit_offset, y->bit_offset);
        eq_type(tp, x->type, y->type);
    }
    assert_int_equal(a->n_enumerators, b->n_enumerators);
    for (size_t i = 0; i < a->n_enumerators; i++) {
        eq_str(a->enumerators[i].name, b->enumerators[i].name);
        assert_int_equal(a->enumerators[i].value, b->enumerators[i].value);
    }
    eq_type(tp, a->target, b->target);
}

/* Every public field of b equals a's, by value, except the path each was asked by. */
static void eq_index(const struct dw_index *a, const struct dw_index *b)
{
    struct type_pairs tp = {0};
    assert_ptr_not_equal(a, b);
    assert_string_equal(a->build_id, b->build_id);
    assert_int_equal(a->has_dwarf, b->has_dwarf);
    assert_int_equal(a->is_pie, b->is_pie);
    assert_int_equal(a->n_functions, b->n_functions);
    for (size_t i = 0; i < a->n_functions; i++) {
        const struct dw_function *f = &a->functions[i], *g = &b->functions[i];
        assert_int_equal(f->entry, g->entry);
        assert_int_equal(f->end, g->end);
        eq_str(f->name, g->name);
        eq_str(f->demangled, g->demangled);
        eq_str(f->linkage_name, g->linkage_name);
        eq_str(f->decl_file, g->decl_file);
        assert_int_equal(f->decl_line, g->decl_line);
        eq_type(&tp, f->return_type, g->return_type);
        assert_int_equal(f->n_params, g->n_params);
        for (size_t k = 0; k < f->n_params; k++) {
            eq_str(f->params[k].name, g->params[k].name);
            eq_type(&tp, f->params[k].type, g->params[k].type);
        }
        assert_int_equal(f->has_dwarf, g->has_dwarf);
        assert_int_equal(f->variadic, g->variadic);
        assert_int_equal(f->ifunc_slot, g->ifunc_slot);
        assert_int_equal(f->n_aliases, g->n_aliases);
        for (size_t k = 0; k < f->n_aliases; k++)
            eq_str(f->aliases[k], g->aliases[k]);
    }
    assert_int_equal(a->n_inlined_only, b->n_inlined_only);
    for (size_t i = 0; i < a->n_inlined_only; i++)
        eq_str(a->inlined_only[i], b->inlined_only[i]);
    free(tp.a);
    free(tp.b);
}

/* The fixture by a path spelled differently each time (k "./"): the in-memory cache
 * is keyed by path and misses, the disk cache is keyed by build-id and hits. */
static const struct dw_index *load_as(const char *name, int k)
{
    static char path[PATH_MAX + 128];
    int n = snprintf(path, sizeof path, "%s/", fixture_dir);
    while (k-- > 0)
        n += snprintf(path + n, sizeof path - (size_t)n, "./");
    snprintf(path + n, sizeof path - (size_t)n, "%s", name);
    struct strobe_error err = {0};
    const struct dw_index *ix = dw_index_get(path, &err);
    if (!ix)
        fail_msg("%s: %s", path, err.msg);
    assert_string_equal(ix->path, path);
    return ix;
}

/* The cache file of ix in dir (the only one named after its build-id) into out. */
static void cache_file(const char *dir, const struct dw_index *ix, char *out, size_t outlen)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len > 7 && strcmp(de->d_name + len - 7, ".v3.idx") == 0 &&
            strncmp(de->d_name, ix->build_id, strlen(ix->build_id)) == 0) {
            snprintf(out, outlen, "%s/%s", dir, de->d_name);
            found++;
        }
    }
    closedir(d);
    assert_int_equal(found, 1);
}

static ino_t inode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_ino;
}

static void write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static void check_disk_cache(const char *dir, const char *name)
{
    const struct dw_index *built = load(name);
    assert_non_null(built->build_id[0] ? built->build_id : NULL); /* fixtures have one */
    char file[PATH_MAX + 300];
    cache_file(dir, built, file, sizeof file);
    ino_t ino = inode_of(file);

    /* A valid file is loaded and not rewritten: same inode. */
    eq_index(built, load_as(name, 1));
    assert_true(inode_of(file) == ino);

    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    size_t size = (size_t)st.st_size;
    unsigned char *good = malloc(size);
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    assert_int_equal(fread(good, 1, size, f), size);
    fclose(f);

    /* Truncated: rejected, rebuilt (equal), and replaced by a whole file. */
    write_file(file, good, size / 2);
    eq_index(built, load_as(name, 2));
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_size, size);
    assert_true(st.st_ino != ino);

    /* One flipped payload byte: the checksum catches it. */
    unsigned char *bad = malloc(size);
    memcpy(bad, good, size);
    bad[68 + (size - 68) / 2] ^= 0x40;
    write_file(file, bad, size);
    ino = inode_of(file);
    eq_index(built, load_as(name, 3));
    assert_true(inode_of(file) != ino);

    /* A header claiming huge tables, with and without a matching payload size: the
     * sizes are checked against the file before anything is allocated. */
    memcpy(bad, good, size);
    memset(bad + 32, 0xff, 36);
    write_file(file, bad, size);
    eq_index(built, load_as(name, 4));
    memset(bad + 16, 0xff, 8);
    write_file(file, bad, size);
    eq_index(built, load_as(name, 5));
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_size, size);
    free(bad);
    free(good);

    /* And after the in-memory cache is dropped, the same path comes from disk. */
    dw_cache_clear();
    ino = inode_of(file);
    const struct dw_index *again = load(name);
    assert_true(inode_of(file) == ino);
    assert_non_null(find(again, "main"));
}

/* glibc's strlen is an IFUNC: indexed at its resolver, with the GOT slot an
 * IRELATIVE relocation fills with the variant; a plain function has none. */
static void test_ifunc_slots(void **state)
{
    (void)state;
    struct strobe_error err = {0};
    const struct dw_index *libc = dw_index_get("/lib/x86_64-linux-gnu/libc.so.6", &err);
    if (!libc)
        fail_msg("libc: %s", err.msg);
    size_t ifuncs = 0;
    for (size_t i = 0; i < libc->n_functions; i++) {
        const struct dw_function *f = &libc->functions[i];
        if (strcmp(f->name, "strlen") == 0)
            assert_int_not_equal(f->ifunc_slot, 0);
        if (strcmp(f->name, "malloc") == 0 || strcmp(f->name, "puts") == 0)
            assert_int_equal(f->ifunc_slot, 0);
        ifuncs += f->ifunc_slot != 0;
    }
    assert_true(ifuncs >= 20); /* memcpy, memset, strcmp, strchr ... */
}

static void test_disk_cache(void **state)
{
    (void)state;
    dw_cache_clear();
    char dir[] = "/tmp/strobe-idx-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[sizeof dir + 16], link[sizeof dir + 16];
    snprintf(sub, sizeof sub, "%s/cache", dir);
    snprintf(link, sizeof link, "%s/link", dir);

    /* A symlink is refused: nothing is written behind it. */
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(symlink(sub, link), 0);
    dw_cache_set_dir(link);
    load("trace_c");
    assert_int_equal(rmdir(sub), 0); /* fails unless empty */
    dw_cache_clear();

    dw_cache_set_dir(sub); /* created */
    check_disk_cache(sub, "trace_cpp");
    check_disk_cache(sub, "trace_c");
    dw_cache_set_dir(NULL);
    dw_cache_clear();

    DIR *d = opendir(sub);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        char p[sizeof sub + 300];
        snprintf(p, sizeof p, "%s/%s", sub, de->d_name);
        if (de->d_name[0] != '.' || strncmp(de->d_name, ".idx-", 5) == 0)
            assert_int_equal(unlink(p), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(sub), 0);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(rmdir(dir), 0);
}

static int teardown(void **state)
{
    (void)state;
    dw_cache_clear();
    return 0;
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c_functions),  cmocka_unit_test(test_cpp_functions),
        cmocka_unit_test(test_unique_entries), cmocka_unit_test(test_symbol_only),
        cmocka_unit_test(test_rust),          cmocka_unit_test(test_cache),
        cmocka_unit_test(test_demangle),     cmocka_unit_test(test_disk_cache),
        cmocka_unit_test(test_ifunc_slots),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
