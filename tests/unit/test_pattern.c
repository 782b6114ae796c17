/*
 * test_pattern.c - base/pattern_match.c and ptrace/proc/match.c: every row of spec 003's
 * pattern table with its matches and non-matches, "::" inside template arguments and
 * other brackets, operator names, C names, Rust paths, @usercode and @file:, and the
 * "did you mean" suggestions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/pattern_match.h"
#include "ptrace/proc/match.h"

#define MATCH(p, n) assert_true(pattern_match_name(p, n))
#define NO_MATCH(p, n) assert_false(pattern_match_name(p, n))

static void test_exact(void **state)
{
    (void)state;
    MATCH("foo::bar", "foo::bar");
    NO_MATCH("foo::bar", "foo::barx");
    NO_MATCH("foo::bar", "xfoo::bar");
    NO_MATCH("foo::bar", "ns::foo::bar");
    NO_MATCH("foo::bar", "foo::bar::baz");
    NO_MATCH("foo::bar", "Foo::bar");
    MATCH("main", "main");
    NO_MATCH("main", "main2");
}

static void test_single_star(void **state)
{
    (void)state;
    MATCH("foo::*", "foo::bar");
    MATCH("foo::*", "foo::vector<a::b>");
    NO_MATCH("foo::*", "foo::bar::baz");
    NO_MATCH("foo::*", "foo");
    NO_MATCH("foo::*", "foobar::x");
    MATCH("*::validate", "User::validate");
    MATCH("*::validate", "vector<a::b>::validate");
    NO_MATCH("*::validate", "auth::User::validate");
    NO_MATCH("*::validate", "validate");
    MATCH("process_*", "process_order");
    MATCH("*_order", "process_order");
    MATCH("*", "main");
    MATCH("*", "vector<a::b>");
    NO_MATCH("*", "std::vector<a::b>");
    /* A star never eats half a separator. */
    NO_MATCH("a*:b", "a::b");
    MATCH("a*b", "a<x::y>b");
}

static void test_double_star(void **state)
{
    (void)state;
    MATCH("foo::**", "foo::bar");
    MATCH("foo::**", "foo::bar::baz::qux");
    NO_MATCH("foo::**", "foo");
    NO_MATCH("foo::**", "foobar::x");
    MATCH("auth::**::validate", "auth::User::validate");
    MATCH("auth::**::validate", "auth::a::b::validate");
    MATCH("auth::**::validate", "auth::validate");
    NO_MATCH("auth::**::validate", "auth::User::validate_all");
    NO_MATCH("auth::**::validate", "other::auth::validate");
    MATCH("**::validate", "validate");
    MATCH("**::validate", "a::b::validate");
    MATCH("**", "anything::at::all");
    MATCH("auth**", "auth::x::y");
    MATCH("auth**", "authz");
    NO_MATCH("auth**::x", "auth"); /* not a whole segment: no zero-segment rule */
    MATCH("auth**::x", "auth::x");
    MATCH("a::**::b::**::c", "a::b::c");
    MATCH("a::**::b::**::c", "a::1::2::b::3::c");
    NO_MATCH("a::**::b::**::c", "a::c");
}

static void test_templates_and_brackets(void **state)
{
    (void)state;
    MATCH("std::*::push_back", "std::vector<a::b>::push_back");
    MATCH("std::*::push_back", "std::vector<std::map<a::b, c::d> >::push_back");
    NO_MATCH("std::*::push_back", "std::__1::vector<int>::push_back");
    MATCH("std::**::push_back", "std::__1::vector<int>::push_back");
    MATCH("std::vector<a::b>::push_back", "std::vector<a::b>::push_back");
    MATCH("std::vector<*>::push_back", "std::vector<a::b>::push_back");
    MATCH("*::helper", "(anonymous namespace)::helper");
    MATCH("run()::*::operator()", "run()::{lambda(std::string)#1}::operator()");
    MATCH("ns::Type::*", "ns::Type::operator<");
    MATCH("ns::Type::*", "ns::Type::operator<<=");
    MATCH("ns::Type::*", "ns::Type::operator->");
    MATCH("ns::Type::*::get", "ns::Type::operator<::get"); /* after operator<, :: splits */
    NO_MATCH("ns::*::get", "ns::Type::operator<::get");
    MATCH("std::*", "std::operator<< <std::char_traits<char> >");
    NO_MATCH("*", "std::operator<< <char>");
    /* Unbalanced brackets do not break anything. */
    MATCH("a::*", "a::b>");
    MATCH("*", "f(int");
}

static void test_c_and_rust_names(void **state)
{
    (void)state;
    MATCH("parse_header", "parse_header");
    MATCH("parse_*", "parse_header");
    NO_MATCH("parse_*", "do_parse_header");
    MATCH("myapp::parser::parse", "myapp::parser::parse");
    MATCH("myapp::**", "myapp::parser::parse");
    MATCH("myapp::*::parse", "myapp::parser::parse");
    MATCH("*::parse", "<T as core::fmt::Display>::parse");
    MATCH("core::**", "core::ptr::drop_in_place<alloc::vec::Vec<u8>>");
    NO_MATCH("alloc::**", "core::ptr::drop_in_place<alloc::vec::Vec<u8>>");
}

static const struct dw_function fn_user = {
    .name = "auth::User::validate", .linkage_name = "_ZN4auth4User8validateEv",
    .decl_file = "/home/me/proj/src/foo.cpp"};
static const struct dw_function fn_lib = {
    .name = "std::vector<int>::push_back", .decl_file = "/usr/include/c++/12/bits/stl_vector.h"};
static const struct dw_function fn_sibling = {.name = "f", .decl_file = "/home/me/project2/x.c"};
static const struct dw_function fn_nofile = {.name = "g"};

static void test_functions(void **state)
{
    (void)state;
    assert_true(match_function("@usercode", &fn_user, "/home/me/proj"));
    assert_true(match_function("@usercode", &fn_user, "/home/me/proj/"));
    assert_true(match_function("@usercode", &fn_user, "/home/me/proj//"));
    assert_true(match_function("@usercode", &fn_user, "/"));
    assert_false(match_function("@usercode", &fn_lib, "/home/me/proj"));
    assert_false(match_function("@usercode", &fn_sibling, "/home/me/proj"));
    assert_false(match_function("@usercode", &fn_nofile, "/home/me/proj"));
    assert_false(match_function("@usercode", &fn_user, NULL));
    assert_false(match_function("@usercode", &fn_user, ""));

    assert_true(match_function("@file:foo.cpp", &fn_user, NULL));
    assert_true(match_function("@file:src/foo", &fn_user, NULL));
    assert_false(match_function("@file:foo.cpp", &fn_lib, NULL));
    assert_false(match_function("@file:foo.cpp", &fn_nofile, NULL));
    assert_false(match_function("@file:", &fn_user, NULL));

    assert_true(match_function("auth::**::validate", &fn_user, NULL));
    assert_true(match_function("_ZN4auth4User8validateEv", &fn_user, NULL));
    assert_false(match_function("_ZN4auth*", &fn_user, NULL)); /* linkage: exact only */
    assert_true(match_function("std::*::push_back", &fn_lib, NULL));
    assert_false(match_function("*", &fn_lib, NULL));
    assert_true(match_function("*", &fn_nofile, NULL));
}

/* glibc: one address, an internal DWARF name and public aliases. */
static const char *const mutex_aliases[] = {"__pthread_mutex_lock", "pthread_mutex_lock"};
static const struct dw_function fn_mutex = {.name = "___pthread_mutex_lock",
                                            .n_aliases = 2, .aliases = mutex_aliases};

static void test_public_names(void **state)
{
    (void)state;
    assert_string_equal(match_public_name("pthread_mutex_lock", &fn_mutex),
                        "pthread_mutex_lock");
    assert_string_equal(match_public_name("__pthread_mutex_lock", &fn_mutex),
                        "__pthread_mutex_lock"); /* the name the pattern used */
    assert_string_equal(match_public_name("___pthread_mutex_lock", &fn_mutex),
                        "___pthread_mutex_lock");
    assert_string_equal(match_public_name("*mutex_lock", &fn_mutex), "pthread_mutex_lock");
    assert_string_equal(match_public_name("@usercode", &fn_mutex), "pthread_mutex_lock");
    assert_string_equal(match_public_name(NULL, &fn_mutex), "pthread_mutex_lock");
    assert_string_equal(match_public_name("auth::**", &fn_user), fn_user.name);
}

static void test_suggestions(void **state)
{
    (void)state;
    const char *const names[] = {
        "auth::User::validate", "auth::User::validate", "auth::Admin::validate",
        "process_order", "process_orders", "main", "parse_header", NULL,
        "billing::Invoice::total",
    };
    size_t n = sizeof names / sizeof *names;
    const char *out[4];

    size_t k = pattern_suggest("proces_order", names, n, out, 4);
    assert_int_equal(k, 2);
    assert_string_equal(out[0], "process_order");
    assert_string_equal(out[1], "process_orders");

    k = pattern_suggest("auth::Usr::validate", names, n, out, 4);
    assert_int_equal(k, 2); /* the duplicate is listed once */
    assert_string_equal(out[0], "auth::User::validate");
    assert_string_equal(out[1], "auth::Admin::validate");

    k = pattern_suggest("VALIDATE", names, n, out, 1); /* last segment, any case */
    assert_int_equal(k, 1);
    assert_string_equal(out[0], "auth::User::validate"); /* closer as a whole */

    k = pattern_suggest("billing::**::totl", names, n, out, 4);
    assert_int_equal(k, 1);
    assert_string_equal(out[0], "billing::Invoice::total");

    assert_int_equal(pattern_suggest("completely_unrelated", names, n, out, 4), 0);
    assert_int_equal(pattern_suggest("main", names, n, out, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_single_star),
        cmocka_unit_test(test_double_star),
        cmocka_unit_test(test_templates_and_brackets),
        cmocka_unit_test(test_c_and_rust_names),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_public_names),
        cmocka_unit_test(test_suggestions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
