/*
 * test_resolve.c - trace pattern resolution (ptrace/resolve.c) and the sentences for
 * patterns that match nothing (ptrace/pattern_why.c), on a real program.
 *
 * pattern_names (tests/fixtures/pattern_names.cpp: shop::audit, shop::cart::add and
 * drop, shop::pay::charge, shop::pay::card::verify, shop::Box<int|double>::get,
 * shopping, helper_one, helper_two, tiny always inlined) runs under a real tracer
 * (tests/unit/traced.h) and waits on its stdin; patterns are applied with
 * resolve_update while it waits, then its stdin is closed and it calls every function
 * once. What a pattern selects is read twice: the per-pattern count of the update's
 * answer (which also counts main, already running, and _start) and the function_enter
 * events of the calls that follow, by name: exactly the functions selected, nothing
 * else. Patterns per man/strobe-patterns.7: exact names, linkage names, `*` (one
 * level), `**` (any levels, also none), a template's `<*>`, @file:, @usercode, an
 * exact library name (puts, in libc) against a wildcard that skips system libraries.
 *
 * Also: the warning of each pattern that matches nothing (a typo and its near names,
 * an inlined function, a wildcard, a file, the project root, the status when nothing
 * matches at all), removing a pattern keeps what another one still matches, patterns
 * staged before the launch armed at the entry point (main's own call recorded), and a
 * failed update leaving the patterns as they were. pattern_why_none's branches that
 * need another program (no index, no DWARF) and the IFUNC sentence are checked on
 * scopes built from the fixture's and libc's indexes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ptrace/pattern_why.h"
#include "ptrace/resolve.h"
#include "fixtures.h"
#include "traced.h"

struct session {
    struct traced tr;
    struct trace *trace;
};

static void free_trace(void *trace)
{
    resolve_free(trace);
}

static void session_start(struct session *s, const char *project_root)
{
    traced_start(&s->tr, "pattern_names", NULL, NULL);
    s->trace = resolve_new(project_root);
    assert_non_null(s->trace);
    s->tr.on_end = free_trace; /* when the program is gone */
    s->tr.on_end_arg = s->trace;
    char line[64];
    traced_line(&s->tr, line, sizeof line);
    assert_string_equal(line, "ready");
}

/* Lets the program make its calls and end; its events are read. */
static void session_run_out(struct session *s)
{
    traced_close_stdin(&s->tr);
    char line[64];
    traced_line_starting(&s->tr, "done ", line, sizeof line);
    assert_string_equal(line, "done 91");
    int status = traced_wait_exit(&s->tr);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    traced_drain(&s->tr);
}

static void session_end(struct session *s)
{
    traced_end(&s->tr);
}

static void update(struct session *s, const char *const *add, int n_add,
                   const char *const *remove, int n_remove, struct trace_result *res)
{
    struct strobe_error e = {0};
    if (resolve_update(s->trace, s->tr.t, add, n_add, remove, n_remove, 0, res, &e) != 0)
        fail_msg("resolve_update: %s: %s", err_code_name(e.code), e.msg);
}

static const struct pattern_result *result_of(const struct trace_result *res, const char *pat)
{
    for (int k = 0; k < res->n_patterns; k++)
        if (strcmp(res->patterns[k], pat) == 0)
            return &res->per_pattern[k];
    fail_msg("no pattern %s in the result", pat);
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The functions the program entered since it was released, each once, sorted and
 * joined by ", ". */
static void entered(const struct traced *tr, char *out, size_t cap)
{
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < tr->n_evs; i++) {
        const struct tev *e = &tr->evs[i];
        if (e->type != EV_FUNCTION_ENTER)
            continue;
        assert_int_equal(e->pid, tr->pid);
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], e->function) == 0;
        if (!seen && n < 64)
            names[n++] = e->function;
    }
    qsort(names, n, sizeof *names, by_name);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", names[i]);
}

/* pattern alone selects exactly the functions `called` (sorted, joined by ", ") among
 * those the program calls once released, plus `running` more it matches that are
 * running already (main, _start). */
static void selects(const char *root, const char *pattern, const char *called, size_t running)
{
    static struct session s;
    session_start(&s, root);
    struct trace_result res;
    update(&s, &pattern, 1, NULL, 0, &res);
    size_t n_called = called[0] ? 1 : 0;
    for (const char *c = called; *c; c++)
        n_called += *c == ',';
    const struct pattern_result *r = result_of(&res, pattern);
    if (r->matched != n_called + running)
        fail_msg("'%s' matched %zu functions, not %zu", pattern, r->matched,
                 n_called + running);
    assert_int_equal(r->armed, r->matched);
    assert_string_equal(r->warning, "");
    assert_int_equal(res.n_warnings, 0);
    assert_int_equal(res.matched, n_called + running);
    session_run_out(&s);
    char got[1024];
    entered(&s.tr, got, sizeof got);
    if (strcmp(got, called) != 0)
        fail_msg("'%s' selected [%s], not [%s]", pattern, got, called);
    session_end(&s);
}

/* ---- what a pattern selects ---------------------------------------------------------- */

static void test_exact_names(void **state)
{
    (void)state;
    selects("/", "shop::cart::add", "shop::cart::add", 0);
    selects("/", "shop::Box<double>::get", "shop::Box<double>::get", 0);
    selects("/", "_ZN4shop4cart4dropEi", "shop::cart::drop", 0); /* its linkage name */
}

static void test_one_star_is_one_level(void **state)
{
    (void)state;
    selects("/", "shop::cart::*", "shop::cart::add, shop::cart::drop", 0);
    selects("/", "shop::*", "shop::audit", 0);
    selects("/", "shop::pay::*::verify", "shop::pay::card::verify", 0);
    selects("/", "helper_*", "helper_one, helper_two", 0);
    /* The program's own top-level names; libc's are out of reach of wildcards. */
    selects("/", "*", "helper_one, helper_two, shopping", 2);
    selects("/", "shop::Box<*>::get", "shop::Box<double>::get, shop::Box<int>::get", 0);
}

static void test_two_stars_cross_levels(void **state)
{
    (void)state;
    selects("/", "shop::**", "shop::Box<double>::get, shop::Box<int>::get, shop::audit, "
            "shop::cart::add, shop::cart::drop, shop::pay::card::verify, shop::pay::charge", 0);
    selects("/", "shop**", "shop::Box<double>::get, shop::Box<int>::get, shop::audit, "
            "shop::cart::add, shop::cart::drop, shop::pay::card::verify, shop::pay::charge, "
            "shopping", 0);
    selects("/", "**::verify", "shop::pay::card::verify", 0);
    selects("/", "shop::**::charge", "shop::pay::charge", 0); /* ** as no level at all */
    selects("/", "shop::**::get", "shop::Box<double>::get, shop::Box<int>::get", 0);
}

static const char every_own[] =
    "helper_one, helper_two, shop::Box<double>::get, shop::Box<int>::get, shop::audit, "
    "shop::cart::add, shop::cart::drop, shop::pay::card::verify, shop::pay::charge, shopping";

static void test_source_files_and_the_project(void **state)
{
    (void)state;
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%s",
             fixture_function(fixture("pattern_names"), "main")->decl_file);
    const char *dir = dirname(src); /* .../tests/fixtures */
    selects("/", "@file:pattern_names.cpp", every_own, 1); /* and main */
    selects(dir, "@usercode", every_own, 1);
}

/* Exact names match in every module, libc included; wildcards do not reach it. */
static void test_library_functions_by_exact_name(void **state)
{
    (void)state;
    selects("/", "puts", "puts", 0);
    static struct session s;
    session_start(&s, "/");
    const char *pat = "put*";
    struct trace_result res;
    update(&s, &pat, 1, NULL, 0, &res);
    assert_int_equal(result_of(&res, pat)->matched, 0);
    session_end(&s);
}

/* ---- what matches nothing, and why ---------------------------------------------------- */

static void test_sentences_for_patterns_that_match_nothing(void **state)
{
    (void)state;
    static struct session s;
    session_start(&s, "/no/such/project");
    static const char *const pats[] = {
        "shop::cart::ad", "tiny", "zzz_*", "@file:no_such_file.c", "@usercode",
        "no_such_function_at_all", "helper_one",
    };
    static const char *const want[] = {
        "'shop::cart::ad' matches no function; near names: shop::cart::add.",
        "'tiny' is inlined into every caller (no out-of-line copy to hook): trace its "
        "callers, or rebuild with -fno-inline.",
        "'zzz_*' matches no function of the program or of its own libraries (wildcards "
        "skip system libraries: name a library function exactly).",
        "'@file:no_such_file.c' matches nothing: no function of the program comes from a "
        "source file whose path contains 'no_such_file.c'.",
        "'@usercode' matches nothing: no function of the program has its source under the "
        "project root (check projectRoot).",
        "'no_such_function_at_all' matches no function of the program or of the libraries "
        "loaded now; one loaded later (dlopen) is not searched: add the pattern again after "
        "it is loaded.",
        "",
    };
    struct trace_result res;
    update(&s, pats, 7, NULL, 0, &res);
    assert_int_equal(res.n_patterns, 7);
    for (int k = 0; k < 7; k++) {
        const struct pattern_result *r = result_of(&res, pats[k]);
        assert_string_equal(r->warning, want[k]);
        assert_int_equal(r->matched, k == 6);
    }
    /* The answer's warnings are those sentences (as many as it has room for). */
    assert_int_equal(res.n_warnings, 6);
    assert_string_equal(res.warnings[1], want[1]);
    assert_int_equal(res.matched, 1);
    assert_int_equal(strncmp(res.status, "1 function(s) hooked.", 21), 0);

    /* helper_one gone, nothing matches: the status says so, with each reason. */
    const char *gone = "helper_one";
    update(&s, NULL, 0, &gone, 1, &res);
    assert_int_equal(res.n_patterns, 6);
    assert_int_equal(res.matched, 0);
    assert_int_equal(res.hooked, 0);
    char status[1024];
    int len = snprintf(status, sizeof status, "No function matches the active patterns.");
    for (int k = 0; k < 6; k++)
        len += snprintf(status + len, sizeof status - (size_t)len, " %s", want[k]);
    assert_string_equal(res.status, status);
    session_run_out(&s);
    assert_int_equal(traced_count(&s.tr, EV_FUNCTION_ENTER), 0);
    session_end(&s);
}

/* ---- changing the set ------------------------------------------------------------------ */

static void test_removal_keeps_what_another_pattern_matches(void **state)
{
    (void)state;
    static struct session s;
    session_start(&s, "/");
    static const char *const both[] = {"helper_*", "helper_one"};
    struct trace_result res;
    update(&s, both, 2, NULL, 0, &res);
    assert_int_equal(res.n_patterns, 2);
    assert_int_equal(result_of(&res, "helper_*")->matched, 2);
    assert_int_equal(result_of(&res, "helper_one")->matched, 1);
    assert_int_equal(res.matched, 2); /* helper_one once */
    size_t hooked = res.hooked;
    const char *wide = "helper_*";
    update(&s, NULL, 0, &wide, 1, &res);
    assert_int_equal(res.n_patterns, 1);
    assert_string_equal(res.patterns[0], "helper_one");
    assert_int_equal(res.matched, 1);
    assert_int_equal(res.hooked, hooked - 1);
    /* Adding a pattern twice keeps one; the serialization depth is the session's. */
    const char *one = "helper_one";
    struct strobe_error e = {0};
    assert_int_equal(resolve_update(s.trace, s.tr.t, &one, 1, NULL, 0, 5, &res, &e), 0);
    assert_int_equal(res.n_patterns, 1);
    assert_int_equal(res.depth, 5);
    session_run_out(&s);
    char got[256];
    entered(&s.tr, got, sizeof got);
    assert_string_equal(got, "helper_one");
    /* Once the program is gone, an update fails and changes nothing. */
    const char *more = "shopping";
    assert_int_equal(resolve_update(s.trace, s.tr.t, &more, 1, NULL, 0, 0, &res, &e), -1);
    assert_int_equal(e.code, ERR_PROCESS_EXITED);
    resolve_describe(s.trace, &res);
    assert_int_equal(res.n_patterns, 1);
    assert_string_equal(res.patterns[0], "helper_one");
    assert_int_equal(res.per_pattern[0].matched, 1);
    assert_int_equal(res.depth, 5);
    assert_string_equal(res.status, "The process has exited: nothing is hooked.");
    session_end(&s);
}

static void on_entry(void *arg, struct tracer *t)
{
    resolve_on_entry(arg, t);
}

/* Patterns given before the launch are armed at the entry point, before main runs:
 * main's own call is recorded. */
static void test_preloaded_patterns_are_armed_at_the_entry_point(void **state)
{
    (void)state;
    struct trace *trace = resolve_new("/");
    static const char *const pats[] = {"main", "shop::cart::*", "no_such_function_at_all"};
    assert_int_equal(resolve_preload(trace, pats, 3, 3, false), 3);
    static struct traced tr;
    struct traced_hooks h = {.on_entry = on_entry, .stop_at_entry = true, .arg = trace};
    traced_start(&tr, "pattern_names", NULL, &h);
    tr.on_end = free_trace;
    tr.on_end_arg = trace;
    traced_close_stdin(&tr);
    assert_int_equal(WEXITSTATUS(traced_wait_exit(&tr)), 0);
    traced_drain(&tr);
    char got[256];
    entered(&tr, got, sizeof got);
    assert_string_equal(got, "main, shop::cart::add, shop::cart::drop");
    struct trace_result res;
    resolve_describe(trace, &res);
    assert_int_equal(res.n_patterns, 3);
    assert_int_equal(result_of(&res, "main")->matched, 1);
    assert_int_equal(result_of(&res, "shop::cart::*")->matched, 2);
    assert_non_null(strstr(result_of(&res, "no_such_function_at_all")->warning,
                           "matches no function"));
    traced_end(&tr);
}

/* ---- sentences for programs the fixture is not ---------------------------------------- */

static void test_sentences_without_an_index_or_debug_info(void **state)
{
    (void)state;
    const struct dw_index *ix = load("pattern_names");
    char out[512];
    const struct dw_index *libc = dw_index_get("/lib/x86_64-linux-gnu/libc.so.6", NULL);
    struct pattern_scope s = {.exe = ix, .exe_has_dwarf = false};
    pattern_why_none(&s, "shop::cart::ad", out, sizeof out);
    assert_string_equal(out, "'shop::cart::ad' matches nothing: the program has no debug info "
                        "and no such symbol (stripped, or a static function): rebuild it with "
                        "-g. Near names: shop::cart::add.");
    s.exe = NULL;
    pattern_why_none(&s, "shop::cart::ad", out, sizeof out);
    assert_string_equal(out, "'shop::cart::ad' matches nothing: the program could not be "
                        "indexed.");

    /* memcpy is chosen by IFUNC: its CPU variants are named, when libc's index knows
     * them (symbols or debug info installed). */
    s = (struct pattern_scope){.exe = ix, .exe_has_dwarf = true, .libs = &libc, .n_libs = 1};
    assert_false(pattern_why_ifunc(&s, "shop::cart::add", out, sizeof out));
    assert_false(pattern_why_ifunc(&s, "mem*", out, sizeof out));
    if (!libc || !pattern_why_ifunc(&s, "memcpy", out, sizeof out)) {
        fprintf(stderr, "libc's index names no memcpy variant here: the IFUNC sentence is "
                "not checked\n");
        return;
    }
    static const char head[] = "'memcpy' is an IFUNC: calls run one of ";
    assert_int_equal(strncmp(out, head, strlen(head)), 0);
    assert_non_null(strstr(out, " CPU variants, which it does not hook; trace them by name "
                                "(__memcpy_"));
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        traced_test(test_exact_names),
        traced_test(test_one_star_is_one_level),
        traced_test(test_two_stars_cross_levels),
        traced_test(test_source_files_and_the_project),
        traced_test(test_library_functions_by_exact_name),
        traced_test(test_sentences_for_patterns_that_match_nothing),
        traced_test(test_removal_keeps_what_another_pattern_matches),
        traced_test(test_preloaded_patterns_are_armed_at_the_entry_point),
        traced_test(test_sentences_without_an_index_or_debug_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
