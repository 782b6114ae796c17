/*
 * test_repl.c - unit tests of the REPL's pure parts: the command lookup (names,
 * aliases, unique prefixes, ambiguity; the command word of `p/x` and `x/4xw`),
 * x/FMT, breakpoint locations with `if`, assignments and typed values
 * (cli/repl/repl_cmds.c, cli/repl/repl_parse.c), and gdb's text forms of values, frames,
 * stops, exits, crashes and watchpoint hits from hand-written answers
 * (cli/repl/repl_fmt.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_parse.h"

/* The name of the command word resolves to, or "" (none), or "?" (ambiguous). */
static const char *lookup(const char *word)
{
    bool amb;
    const struct repl_cmd *c = repl_cmd_find(word, strlen(word), &amb);
    return c ? c->name : amb ? "?" : "";
}

static void test_lookup(void **state)
{
    (void)state;
    assert_string_equal(lookup("continue"), "continue");
    assert_string_equal(lookup("c"), "continue");
    assert_string_equal(lookup("cont"), "continue");
    assert_string_equal(lookup("n"), "next");
    assert_string_equal(lookup("s"), "step");
    assert_string_equal(lookup("fin"), "finish");
    assert_string_equal(lookup("b"), "break");
    assert_string_equal(lookup("bt"), "backtrace");
    assert_string_equal(lookup("where"), "backtrace");
    assert_string_equal(lookup("p"), "print");
    assert_string_equal(lookup("i"), "info");
    assert_string_equal(lookup("u"), "until");
    assert_string_equal(lookup("q"), "quit");
    assert_string_equal(lookup("sessions"), "sessions");
    assert_string_equal(lookup("session"), "session");
    assert_string_equal(lookup("tb"), "tbreak");
    assert_string_equal(lookup("wat"), "watch");
    assert_string_equal(lookup("disp"), "display");
    assert_string_equal(lookup("disa"), "disable");
    assert_string_equal(lookup("dis"), "?");
    assert_string_equal(lookup("a"), "?");
    assert_string_equal(lookup("se"), "?");
    assert_string_equal(lookup("zz"), "");
    assert_string_equal(lookup(""), "");

    const char *w;
    size_t n;
    const char *args = repl_cmd_split("  p/x n + 1", &w, &n);
    assert_int_equal(n, 1);
    assert_memory_equal(w, "p", 1);
    assert_string_equal(args, "/x n + 1");
    args = repl_cmd_split("x/4xw &g", &w, &n);
    assert_int_equal(n, 1);
    assert_string_equal(args, "/4xw &g");
    args = repl_cmd_split("info   breakpoints", &w, &n);
    assert_int_equal(n, 4);
    assert_string_equal(args, "breakpoints");
}

static void test_xfmt(void **state)
{
    (void)state;
    struct repl_xfmt prev = {1, 'x', 4}, f;
    char err[256];
    assert_int_equal(repl_parse_xfmt("4xw", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.count, 4);
    assert_int_equal(f.format, 'x');
    assert_int_equal(f.size, 4);
    assert_int_equal(repl_parse_xfmt("2g", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.count, 2);
    assert_int_equal(f.format, 'x');
    assert_int_equal(f.size, 8);
    assert_int_equal(repl_parse_xfmt("s", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.format, 's');
    assert_int_equal(f.size, 1);
    assert_int_equal(repl_parse_xfmt("3db", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.count, 3);
    assert_int_equal(f.format, 'd');
    assert_int_equal(f.size, 1);
    assert_int_equal(repl_parse_xfmt("a", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.size, 8);
    assert_int_equal(repl_parse_xfmt("f", &prev, &f, err, sizeof err), 0);
    assert_int_equal(f.size, 4); /* gdb keeps the last size, a float's 4 */
    assert_int_equal(repl_parse_xfmt("fb", &prev, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "Floats are 4 (w) or 8 (g) bytes wide"));
    assert_int_equal(repl_parse_xfmt("4z", &prev, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "Invalid format letter 'z'"));
    assert_int_equal(repl_parse_xfmt("0x", &prev, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "between 1 and 4096"));
}

static void test_locations(void **state)
{
    (void)state;
    struct repl_location l;
    char err[256];
    assert_int_equal(repl_parse_location("calc.c:42 if n > 3 && ok", NULL, &l, err,
                                         sizeof err), 0);
    assert_string_equal(l.file, "calc.c");
    assert_int_equal(l.line, 42);
    assert_null(l.function);
    assert_string_equal(l.condition, "n > 3 && ok");
    cJSON *spec = repl_location_spec(&l);
    char *s = cJSON_PrintUnformatted(spec);
    assert_string_equal(s, "{\"file\":\"calc.c\",\"line\":42,\"condition\":\"n > 3 && ok\"}");
    free(s);
    cJSON_Delete(spec);
    repl_location_free(&l);

    assert_int_equal(repl_parse_location("ns::parse_config", NULL, &l, err, sizeof err), 0);
    assert_string_equal(l.function, "ns::parse_config");
    assert_null(l.condition);
    repl_location_free(&l);
    /* "if" inside a name is not the condition */
    assert_int_equal(repl_parse_location("verify_ifdef if x", NULL, &l, err, sizeof err), 0);
    assert_string_equal(l.function, "verify_ifdef");
    assert_string_equal(l.condition, "x");
    repl_location_free(&l);
    assert_int_equal(repl_parse_location("17", "calc.c", &l, err, sizeof err), 0);
    assert_string_equal(l.file, "calc.c");
    assert_int_equal(l.line, 17);
    repl_location_free(&l);

    assert_int_equal(repl_parse_location("17", NULL, &l, err, sizeof err), -1);
    assert_string_equal(err, "No default source file for line 17: write `break FILE:17`.");
    assert_int_equal(repl_parse_location("f if ", NULL, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "The condition after \"if\" is empty"));
    assert_int_equal(repl_parse_location("", NULL, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "No location given"));
}

static void test_assign_and_values(void **state)
{
    (void)state;
    char *name, *value, err[256];
    assert_int_equal(repl_parse_assign("var qty = 2", &name, &value, err, sizeof err), 0);
    assert_string_equal(name, "qty");
    assert_string_equal(value, "2");
    free(name);
    free(value);
    assert_int_equal(repl_parse_assign("variable cfg.name=\"bob\"", &name, &value, err,
                                       sizeof err), 0);
    assert_string_equal(name, "cfg.name");
    assert_string_equal(value, "\"bob\"");
    free(name);
    free(value);
    assert_int_equal(repl_parse_assign("var x == 2", &name, &value, err, sizeof err), -1);
    assert_int_equal(repl_parse_assign("var = 2", &name, &value, err, sizeof err), -1);
    assert_non_null(strstr(err, "the name is missing"));

    static const struct { const char *in, *json; } values[] = {
        {"2", "2"}, {"-7", "-7"}, {"0x1f", "\"0x1f\""}, {"2.5", "2.5"},
        {"\"bob\"", "\"bob\""}, {"'x'", "\"x\""}, {"true", "true"},
        {"RED", "\"RED\""}, {"NULL", "\"NULL\""},
        {"18446744073709551615", "\"18446744073709551615\""},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        cJSON *v = repl_parse_value(values[i].in);
        char *s = cJSON_PrintUnformatted(v);
        assert_string_equal(s, values[i].json);
        free(s);
        cJSON_Delete(v);
    }
}

/* What f(out, answer) printed for the JSON answer text. The caller frees. */
static char *printed(const char *json, void (*f)(FILE *, const cJSON *, void *), void *arg)
{
    cJSON *a = cJSON_Parse(json);
    assert_non_null(a);
    char *s = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&s, &len);
    f(out, a, arg);
    fclose(out);
    cJSON_Delete(a);
    return s;
}

static void value_of(FILE *out, const cJSON *a, void *fmt)
{
    repl_fmt_value(out, a, NULL, *(char *)fmt, 4);
}

static void test_values(void **state)
{
    (void)state;
    char natural = 0, hex = 'x', bin = 't';
    static const struct { const char *json, *text; } cases[] = {
        {"17", "17"}, {"-2", "-2"}, {"2.5", "2.5"}, {"true", "true"}, {"null", "<unavailable>"},
        {"\"0x7ffd\"", "0x7ffd"}, {"\"walk\"", "\"walk\""}, {"\"<optimized out>\"",
                                                              "<optimized out>"},
        {"[1,2,3]", "{1, 2, 3}"},
        {"{\"next\":\"0x0\",\"value\":3}", "{next = 0x0, value = 3}"},
        {"{\"@ptr\":\"0x55aa\",\"name\":\"cat\"}", "0x55aa"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = printed(cases[i].json, value_of, &natural);
        assert_string_equal(s, cases[i].text);
        free(s);
    }
    char *s = printed("-1", value_of, &hex);
    assert_string_equal(s, "0xffffffff"); /* 4 bytes wide */
    free(s);
    s = printed("30", value_of, &hex);
    assert_string_equal(s, "0x1e");
    free(s);
    s = printed("5", value_of, &bin);
    assert_string_equal(s, "101");
    free(s);
}

static void stop_of(FILE *out, const cJSON *a, void *values)
{
    repl_fmt_stop(out, a, "add_item", "Breakpoint", values);
}

static void test_stops(void **state)
{
    (void)state;
    int values = 0;
    char *s = printed("{\"state\":\"paused\",\"reason\":\"breakpoint\",\"breakpointId\":1,"
                      "\"function\":\"compute\",\"file\":\"/nonexistent/calc.c\",\"line\":42,"
                      "\"arguments\":[{\"name\":\"n\",\"type\":\"int\",\"value\":4},"
                      "{\"name\":\"p\",\"type\":\"char *\",\"value\":\"hi\"}]}",
                      stop_of, &values);
    assert_string_equal(s, "\nBreakpoint 1, compute (n=4, p=\"hi\") at calc.c:42\n"
                           "42\tin /nonexistent/calc.c\n");
    free(s);
    /* a step in the same function prints only the source line */
    s = printed("{\"state\":\"paused\",\"reason\":\"step\",\"function\":\"add_item\","
                "\"file\":\"/nonexistent/calc.c\",\"line\":43}", stop_of, &values);
    assert_string_equal(s, "43\tin /nonexistent/calc.c\n");
    free(s);
    /* a finish: the caller's line and the value returned */
    s = printed("{\"state\":\"paused\",\"reason\":\"step\",\"function\":\"main\","
                "\"file\":\"/nonexistent/calc.c\",\"line\":50,\"arguments\":[],"
                "\"returnValue\":{\"type\":\"int\",\"value\":5}}", stop_of, &values);
    assert_string_equal(s, "main () at calc.c:50\n50\tin /nonexistent/calc.c\n"
                           "Value returned is $1 = 5\n");
    free(s);
    /* Ctrl-C in a library: no source, the arguments are not that frame's */
    s = printed("{\"state\":\"paused\",\"reason\":\"pause\",\"function\":\"__nanosleep\","
                "\"arguments\":[{\"name\":\"argc\",\"value\":1}]}", stop_of, &values);
    assert_string_equal(s, "\nProgram received signal SIGINT, Interrupt.\n__nanosleep ()\n");
    free(s);

    cJSON *f = cJSON_Parse("{\"function\":\"main\",\"file\":\"/src/calc.c\",\"line\":50}");
    char *t = NULL;
    size_t len;
    FILE *out = open_memstream(&t, &len);
    repl_fmt_frame(out, 1, f, NULL);
    fclose(out);
    assert_string_equal(t, "#1  main () at calc.c:50\n");
    free(t);
    cJSON_Delete(f);
}

static void exit_of(FILE *out, const cJSON *a, void *arg)
{
    (void)arg;
    repl_fmt_exit(out, a, 4242);
}

static void crash_of(FILE *out, const cJSON *a, void *arg)
{
    (void)arg;
    repl_fmt_crash(out, a);
}

static void hit_of(FILE *out, const cJSON *a, void *arg)
{
    (void)arg;
    repl_fmt_watch_hit(out, a, 2, "Hardware watchpoint");
}

static void test_exits_crashes_watch_hits(void **state)
{
    (void)state;
    char *s = printed("{\"state\":\"exited\",\"exitCode\":3}", exit_of, NULL);
    assert_string_equal(s, "[Inferior 1 (process 4242) exited with code 3]\n");
    free(s);
    s = printed("{\"state\":\"exited\",\"exitCode\":0}", exit_of, NULL);
    assert_string_equal(s, "[Inferior 1 (process 4242) exited normally]\n");
    free(s);
    s = printed("{\"state\":\"exited\",\"signal\":11}", exit_of, NULL);
    assert_string_equal(s, "\nProgram terminated with signal SIGSEGV, Segmentation fault.\n"
                           "The program no longer exists.\n");
    free(s);
    s = printed("{\"signalNumber\":11,\"crashFrame\":1,\"frames\":[{\"function\":\"memcpy\"},"
                "{\"function\":\"read_field\",\"file\":\"/nonexistent/crash.c\",\"line\":54,"
                "\"arguments\":[{\"name\":\"p\",\"type\":\"int *\",\"value\":\"0x0\"}]}]}",
                crash_of, NULL);
    assert_string_equal(s, "\nProgram received signal SIGSEGV, Segmentation fault.\n"
                           "read_field (p=0x0) at crash.c:54\n54\tin /nonexistent/crash.c\n");
    free(s);
    s = printed("{\"label\":\"g_counter\",\"oldValue\":1,\"newValue\":2,\"changed\":true,"
                "\"function\":\"add_item\",\"sourceFile\":\"/nonexistent/c.c\",\"line\":32}",
                hit_of, NULL);
    assert_string_equal(s, "\nHardware watchpoint 2: g_counter\n\nOld value = 1\n"
                           "New value = 2\nadd_item () at c.c:32\n32\tin /nonexistent/c.c\n"
                           "(recorded as it ran: strobe's watchpoints do not stop the "
                           "program; `continue` shows the next hit)\n");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_xfmt),
        cmocka_unit_test(test_locations),
        cmocka_unit_test(test_assign_and_values),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_stops),
        cmocka_unit_test(test_exits_crashes_watch_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
