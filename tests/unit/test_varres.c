/*
 * test_varres.c - variables by name: the expression parser (ptrace/vars/varres.c), the
 * global and static lookup of dwarf/globals.c on the fixtures globals_all,
 * libglobals.so and globals_cpp (C globals, a function static, C++ namespace
 * variables, class statics, constants, thread-locals, an optimized-out static, near
 * names), and varres_resolve / varres_render against a running globals_all, read
 * through /proc/PID/mem while it runs: members, pointers, elements, the library's
 * global at its load bias, and every error. Fixtures come from $STROBE_FIXTURES, else
 * ../fixtures next to this binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/fixtures.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "dwarf/frame.h"
#include "dwarf/globals.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/vars/varres.h"

/* ---- the parser ---- */

static void test_parse_valid(void **state)
{
    (void)state;
    struct varres_expr x;
    struct strobe_error e = {0};
    assert_int_equal(varres_parse("g_count", &x, &e), 0);
    assert_string_equal(x.root, "g_count");
    assert_int_equal(x.stars, 0);
    assert_int_equal(x.n_steps, 0);

    assert_int_equal(varres_parse("  * app::net::cfg . items [ 0x3 ]->next", &x, &e), 0);
    assert_string_equal(x.root, "app::net::cfg");
    assert_int_equal(x.stars, 1);
    assert_int_equal(x.n_steps, 3);
    assert_int_equal(x.steps[0].kind, VS_MEMBER);
    assert_int_equal(x.steps[0].name_len, 5);
    assert_memory_equal(x.steps[0].name, "items", 5);
    assert_int_equal(x.steps[1].kind, VS_INDEX);
    assert_int_equal(x.steps[1].index, 3);
    assert_int_equal(x.steps[2].kind, VS_ARROW);
    assert_memory_equal(x.steps[2].name, "next", 4);
    assert_int_equal(x.steps[2].end, strlen("  * app::net::cfg . items [ 0x3 ]->next"));

    assert_int_equal(varres_parse("a->b->c->d->e", &x, &e), 0); /* 4 dereferences */
    assert_int_equal(varres_parse("**p->q[12]", &x, &e), 0);
    assert_int_equal(x.steps[1].index, 12);
    assert_null(x.steps[1].name);
    /* An index named by a variable, read when the expression is resolved. */
    assert_int_equal(varres_parse("scores[ i ].value", &x, &e), 0);
    assert_int_equal(x.steps[0].kind, VS_INDEX);
    assert_int_equal(x.steps[0].name_len, 1);
    assert_memory_equal(x.steps[0].name, "i", 1);
    /* or by a path of its own, brackets nested */
    assert_int_equal(varres_parse("q->items[ q->head ].id", &x, &e), 0);
    assert_int_equal(x.n_steps, 3);
    assert_int_equal(x.steps[1].kind, VS_INDEX);
    assert_int_equal(x.steps[1].name_len, strlen("q->head"));
    assert_memory_equal(x.steps[1].name, "q->head", strlen("q->head"));
    assert_int_equal(varres_parse("a[b[c[1]]]", &x, &e), 0);
    assert_int_equal(x.n_steps, 1);
    assert_memory_equal(x.steps[0].name, "b[c[1]]", strlen("b[c[1]]"));
}

static void bad_expr(const char *expr, const char *sentence_part)
{
    struct varres_expr x;
    struct strobe_error e = {0};
    assert_int_equal(varres_parse(expr, &x, &e), -1);
    assert_int_equal(e.code, ERR_BAD_EXPRESSION);
    if (!strstr(e.msg, sentence_part))
        fail_msg("'%s': '%s' does not say '%s'", expr, e.msg, sentence_part);
}

static void test_parse_invalid(void **state)
{
    (void)state;
    bad_expr("", "empty");
    bad_expr("1abc", "expected a variable name at column 1");
    bad_expr("a.", "expected a member name at column 3");
    bad_expr("a..b", "expected a member name at column 3");
    bad_expr("a[", "non-negative index");
    bad_expr("a[-1]", "non-negative index");
    bad_expr("a[2", "expected ']'");
    bad_expr("a b", "expected '.', '->' or '['");
    bad_expr("a+1", "column 2");
    bad_expr("a::", "variable name at column 4");
    bad_expr("a->b->c->d->e->f", "dereferences 5 pointers; the limit is 4");
    bad_expr("**a->b->c->d", "dereferences 5 pointers");
    char long_expr[MEMORY_EXPR_MAX + 2];
    memset(long_expr, 'x', sizeof long_expr - 1);
    long_expr[sizeof long_expr - 1] = '\0';
    bad_expr(long_expr, "257 characters long; the limit is 256");
    long_expr[MEMORY_EXPR_MAX] = '\0';
    struct varres_expr x;
    struct strobe_error e = {0};
    assert_int_equal(varres_parse(long_expr, &x, &e), 0);
}

/* ---- the lookup in one file ---- */

static struct dw_global must_find_global(const char *file, const char *name)
{
    struct dw_global g;
    enum dw_global_match m = dw_global_find(fixture(file), name, &g);
    if (m != DWG_FOUND)
        fail_msg("%s in %s: %d", name, file, (int)m);
    return g;
}

static void test_globals_c(void **state)
{
    (void)state;
    struct dw_global g = must_find_global("globals_all", "g_int");
    assert_string_equal(g.name, "g_int");
    assert_int_equal(g.where, DWG_MEMORY);
    assert_true(g.addr != 0);
    assert_int_equal(g.type->kind, DWT_SIGNED);
    assert_int_equal(g.type->size, 4);
    assert_string_equal(g.type->name, "int");
    assert_non_null(strstr(g.decl_file, "globals_all.c"));
    assert_true(g.decl_line > 0);

    g = must_find_global("globals_all", "g_config");
    assert_int_equal(g.type->kind, DWT_STRUCT);
    assert_string_equal(g.type->name, "struct config");
    g = must_find_global("globals_all", "g_static");
    assert_int_equal(g.where, DWG_MEMORY);
    g = must_find_global("globals_all", "g_const");
    assert_int_equal(g.where, DWG_MEMORY);

    /* A static inside a function, qualified and bare. */
    g = must_find_global("globals_all", "tick::calls");
    assert_string_equal(g.name, "tick::calls");
    assert_int_equal(g.where, DWG_MEMORY);
    g = must_find_global("globals_all", "calls");
    assert_string_equal(g.name, "tick::calls");

    assert_int_equal(dw_global_find(fixture("globals_all"), "visits", &g), DWG_AMBIGUOUS);
    g = must_find_global("globals_all", "report::visits");
    assert_string_equal(g.name, "report::visits");

    g = must_find_global("globals_all", "g_tls");
    assert_int_equal(g.where, DWG_THREAD_LOCAL);

    /* main's locals and report's nothing are not globals. */
    assert_int_equal(dw_global_find(fixture("globals_all"), "turn", &g), DWG_NONE);
    assert_int_equal(dw_global_find(fixture("globals_all"), "main::turn", &g), DWG_NONE);
    assert_int_equal(dw_global_find(fixture("globals_all"), "nope", &g), DWG_NONE);
    assert_int_equal(dw_global_find(fixture("no_such_file"), "g_int", &g), DWG_NONE);
    /* The library's global is the library's, declared extern in the program. */
    assert_int_equal(dw_global_find(fixture("globals_all"), "lib_counter", &g), DWG_NONE);

    g = must_find_global("libglobals.so", "lib_counter");
    assert_int_equal(g.where, DWG_MEMORY);
    assert_string_equal(g.symbol, "lib_counter");
    assert_null(must_find_global("globals_all", "g_static").symbol);
    assert_null(must_find_global("globals_all", "tick::calls").symbol);

    /* The program's copy of the library's global (a copy relocation). */
    uint64_t addr = 0;
    uint64_t size = 0;
    assert_true(dw_symbol_find(fixture("globals_all"), "lib_counter", true, &addr, &size));
    assert_true(addr != 0 && addr != g.addr);
    assert_int_equal(size, 4);
    assert_true(dw_symbol_find(fixture("libglobals.so"), "lib_counter", true, &addr, &size));
    assert_int_equal(addr, g.addr);
    /* g_int is in the program's .symtab, not in its dynamic symbols. */
    assert_false(dw_symbol_find(fixture("globals_all"), "g_int", true, &addr, &size));
    assert_true(dw_symbol_find(fixture("globals_all"), "g_int", false, &addr, &size));
    assert_int_equal(addr, must_find_global("globals_all", "g_int").addr);
    assert_false(dw_symbol_find(fixture("globals_all"), "main", false, &addr, &size));
    g = must_find_global("libglobals.so", "lib_write_only");
    assert_int_equal(g.where, DWG_OPTIMIZED_OUT);
}

static void test_globals_cpp(void **state)
{
    (void)state;
    struct dw_global g = must_find_global("globals_cpp", "app::net::port");
    assert_int_equal(g.where, DWG_MEMORY);
    assert_string_equal(g.type->name, "int");
    g = must_find_global("globals_cpp", "port");
    assert_string_equal(g.name, "app::net::port");
    g = must_find_global("globals_cpp", "net::port");
    assert_string_equal(g.name, "app::net::port");

    g = must_find_global("globals_cpp", "app::Registry::instances");
    assert_int_equal(g.where, DWG_MEMORY);
    g = must_find_global("globals_cpp", "Registry::instances");
    assert_string_equal(g.name, "app::Registry::instances");

    g = must_find_global("globals_cpp", "app::next_id::last_id");
    assert_int_equal(g.where, DWG_MEMORY);
    g = must_find_global("globals_cpp", "next_id::last_id");
    assert_string_equal(g.name, "app::next_id::last_id");

    g = must_find_global("globals_cpp", "app::net::kMaxClients");
    assert_int_equal(g.where, DWG_CONSTANT);
    int64_t v = 0;
    assert_true(g.len <= sizeof v);
    memcpy(&v, g.bytes, g.len);
    assert_int_equal(v, 64);

    g = must_find_global("globals_cpp", "(anonymous namespace)::hidden");
    assert_int_equal(g.where, DWG_MEMORY);
    g = must_find_global("globals_cpp", "hidden");
    assert_string_equal(g.name, "(anonymous namespace)::hidden");

    /* "pt" is the end of no name at a "::" boundary. */
    assert_int_equal(dw_global_find(fixture("globals_cpp"), "rt", &g), DWG_NONE);
}

static void test_near_names(void **state)
{
    (void)state;
    struct dw_near near = {0};
    dw_global_near(fixture("globals_all"), "g_conifg", &near);
    assert_true(near.n >= 1);
    assert_string_equal(near.name[0], "g_config");
    assert_int_equal(near.distance[0], 2);

    memset(&near, 0, sizeof near);
    dw_global_near(fixture("globals_all"), "g_conifg", &near);
    dw_global_near(fixture("libglobals.so"), "lib_countr", &near);
    assert_string_equal(near.name[0], "lib_counter");
    assert_int_equal(near.distance[0], 1);

    memset(&near, 0, sizeof near);
    dw_global_near(fixture("globals_cpp"), "last_idd", &near);
    assert_string_equal(near.name[0], "app::next_id::last_id");

    memset(&near, 0, sizeof near);
    dw_global_near(fixture("globals_all"), "completely_different_name", &near);
    assert_int_equal(near.n, 0);
}

/* ---- a running program ---- */

struct target {
    pid_t pid;
    int memfd;
};

static int start_target(void **state)
{
    static struct target t;
    int out[2];
    if (pipe(out) != 0)
        return -1;
    t.pid = fork();
    if (t.pid == 0) {
        dup2(out[1], 1);
        execl(fixture("globals_all"), "globals_all", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char buf[64] = "";
    ssize_t n = read(out[0], buf, sizeof buf - 1); /* "ready ..." once the program runs */
    close(out[0]);
    if (n <= 0 || strncmp(buf, "ready", 5) != 0)
        return -1;
    t.memfd = procmem_open(t.pid);
    *state = &t;
    return t.memfd >= 0 ? 0 : -1;
}

static int stop_target(void **state)
{
    struct target *t = *state;
    close(t->memfd);
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    dw_frame_cache_clear();
    return 0;
}

/* The value of expr rendered at depth, as JSON text (static buffer). */
static const char *value_of(const struct target *t, const char *expr, int depth,
                            struct varres *v)
{
    static char text[4096];
    struct strobe_error e = {0};
    if (varres_resolve(t->pid, t->memfd, expr, v, &e) != 0)
        fail_msg("%s: %s %s", expr, err_code_name(e.code), e.msg);
    struct strbuf sb = {0};
    int memfd = t->memfd;
    assert_true(varres_render(procmem_read_ctx, &memfd, v, depth, true, &sb));
    snprintf(text, sizeof text, "%s", sb.buf);
    sb_free(&sb);
    return text;
}

static void expect(const struct target *t, const char *expr, const char *type,
                   size_t size, const char *json)
{
    struct varres v;
    const char *got = value_of(t, expr, 1, &v);
    if (strcmp(got, json) != 0)
        fail_msg("%s = %s, expected %s", expr, got, json);
    assert_string_equal(v.type_name, type);
    assert_int_equal(v.size, size);
    assert_true(v.has_address);
}

static void test_resolve_values(void **state)
{
    const struct target *t = *state;
    expect(t, "g_int", "int", 4, "-42");
    expect(t, "g_uint", "unsigned int", 4, "4000000000");
    expect(t, "g_char", "char", 1, "\"A\"");
    expect(t, "g_bool", "_Bool", 1, "true");
    expect(t, "g_double", "double", 8, "3.25");
    expect(t, "g_enum", "enum color", 4, "\"GREEN\"");
    expect(t, "g_name", "char[16]", 16, "\"hello\"");
    expect(t, "g_point", "struct point", 8, "{\"x\":7,\"y\":-8}");
    expect(t, "g_config.retries", "int", 4, "3");
    expect(t, "g_config.origin.y", "int", 4, "2");
    expect(t, "g_config.name", "char[8]", 8, "\"cfg\"");
    expect(t, "g_config.where->y", "int", 4, "-8");
    expect(t, "g_config_ptr->ratio", "double", 8, "0.5");
    expect(t, "g_config_ptr[0].retries", "int", 4, "3");
    expect(t, "*g_config_ptr->where", "struct point", 8, "{\"x\":7,\"y\":-8}");
    expect(t, "g_array[3]", "int", 4, "40");
    expect(t, "g_array[g_config.retries]", "int", 4, "40"); /* an index by path */
    expect(t, "g_array[g_config_ptr->retries]", "int", 4, "40");
    expect(t, "*g_array", "int", 4, "10");
    expect(t, "g_list->next->next->value", "int", 4, "3");
    expect(t, "g_union.i", "int", 4, "1094861636");
    expect(t, "g_const", "int", 4, "99");
    expect(t, "g_static", "int", 4, "17");

    struct varres v;
    assert_true(atoi(value_of(t, "tick::calls", 1, &v)) >= 0);
    /* The library's global is read where the program uses it: it counts the turns. */
    int first = atoi(value_of(t, "lib_counter", 1, &v));
    assert_true(first >= 1000);
    assert_non_null(strstr(v.module, "libglobals.so"));
    assert_non_null(strstr(v.decl_file, "globals_lib.c"));
    for (int i = 0; i < 200 && atoi(value_of(t, "lib_counter", 1, &v)) == first; i++)
        usleep(10 * 1000);
    assert_true(atoi(value_of(t, "lib_counter", 1, &v)) > first);

    /* Depth: a struct pointer followed one level, then shown as a marker. */
    const char *deep = value_of(t, "g_config", 1, &v);
    assert_non_null(strstr(deep, "\"where\":\"<struct point at 0x"));
    deep = value_of(t, "g_config", 2, &v);
    assert_non_null(strstr(deep, "\"where\":{\"@ptr\":\"0x"));
}

static void resolve_fails(const struct target *t, const char *expr, enum err_code code,
                          const char *sentence_part)
{
    struct varres v;
    struct strobe_error e = {0};
    assert_int_equal(varres_resolve(t->pid, t->memfd, expr, &v, &e), -1);
    if (e.code != code || !strstr(e.msg, sentence_part))
        fail_msg("%s: %s '%s', expected %s saying '%s'", expr, err_code_name(e.code), e.msg,
                 err_code_name(code), sentence_part);
}

static void test_resolve_errors(void **state)
{
    const struct target *t = *state;
    resolve_fails(t, "g_conifg", ERR_VARIABLE_NOT_FOUND, "did you mean 'g_config'");
    resolve_fails(t, "lib_countr", ERR_VARIABLE_NOT_FOUND, "'lib_counter'");
    resolve_fails(t, "zzzzzzzzzzzzzzzzzzzzzzzzzz", ERR_VARIABLE_NOT_FOUND, "No global");
    resolve_fails(t, "visits", ERR_VARIABLE_NOT_FOUND, "'visits' names several variables of "
                  "globals_all: '");
    resolve_fails(t, "visits", ERR_VARIABLE_NOT_FOUND, "'tick::visits'");
    resolve_fails(t, "visits", ERR_VARIABLE_NOT_FOUND, "'report::visits'");
    resolve_fails(t, "g_tls", ERR_VARIABLE_UNAVAILABLE, "thread-local");
    /* libc has the symbol, not its debug info (unless a debug package is installed). */
    if (!dw_global_find("/lib/x86_64-linux-gnu/libc.so.6", "environ", &(struct dw_global){0}))
        resolve_fails(t, "environ", ERR_VARIABLE_UNAVAILABLE,
                      "'environ' is a symbol of libc.so.6, which has no debug info for it: 8 "
                      "bytes at 0x");
    resolve_fails(t, "lib_write_only", ERR_VARIABLE_UNAVAILABLE, "optimized out");
    resolve_fails(t, "g_config.retrys", ERR_BAD_EXPRESSION,
                  "'g_config' has no member 'retrys'; struct config has members retries, "
                  "ratio, name, origin, where.");
    resolve_fails(t, "g_config_ptr.retries", ERR_BAD_EXPRESSION,
                  "is a pointer (struct config *): use 'g_config_ptr->retries'");
    resolve_fails(t, "g_config->retries", ERR_BAD_EXPRESSION,
                  "'g_config' is not a pointer (struct config): use '.'");
    resolve_fails(t, "g_int.x", ERR_BAD_EXPRESSION, "'g_int' is int, which has no members");
    resolve_fails(t, "g_int[0]", ERR_BAD_EXPRESSION, "only arrays, pointers and std::vector");
    /* Past an array's end: read as C reads it, with a note naming what is there. */
    struct varres past, whole;
    struct strobe_error e = {0};
    assert_int_equal(varres_resolve(t->pid, t->memfd, "g_array[5]", &past, &e), 0);
    assert_int_equal(varres_resolve(t->pid, t->memfd, "g_array", &whole, &e), 0);
    assert_int_equal(past.address, whole.address + 20);
    assert_non_null(strstr(past.note, "'g_array' has 5 elements (int[5]): index 5 is past its "
                                      "end, read anyway as C would"));
    assert_int_equal(whole.note[0], '\0');
    resolve_fails(t, "*g_int", ERR_BAD_EXPRESSION, "not a pointer");
    resolve_fails(t, "*g_null_ptr", ERR_MEMORY_UNREADABLE, "'g_null_ptr' is NULL.");
    resolve_fails(t, "*g_bad_ptr", ERR_MEMORY_UNREADABLE, "at 0x10 is unreadable");
    resolve_fails(t, "g_list->next->next->next->value", ERR_MEMORY_UNREADABLE,
                  "'g_list->next->next->next' is NULL.");
}

static void test_resolve_exited(void **state)
{
    (void)state;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    struct varres v;
    struct strobe_error e = {0};
    assert_int_equal(varres_resolve(pid, -1, "g_int", &v, &e), -1);
    assert_int_equal(e.code, ERR_PROCESS_EXITED);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_globals_c),
        cmocka_unit_test(test_globals_cpp),
        cmocka_unit_test(test_near_names),
        cmocka_unit_test_setup_teardown(test_resolve_values, start_target, stop_target),
        cmocka_unit_test_setup_teardown(test_resolve_errors, start_target, stop_target),
        cmocka_unit_test(test_resolve_exited),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    dw_frame_cache_clear();
    return failed;
}
