/*
 * test_ctl_verbs.c - unit tests of strobectl's verb table (cli/ctl/verbs/ctl_verbs.c):
 * every verb is in --help and in man/strobectl.1 and has complete help; `VERB
 * --help`, `help VERB` and "did you mean"; the exit statuses each help lists
 * (cli/ctl/verbs/ctl_exit.h); and that no text strobectl prints tells a shell user
 * to call an MCP tool: the daemon's error hints (mcp/hints.c, every code and tool),
 * launch's nextSteps and the hints of status and trace answers
 * (cli/render/render_hint.c, cli/render/render.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/ctl/verbs/ctl_verbs.h"
#include "cli/render/render.h"
#include "cli/render/render_hint.h"
#include "mcp/hints.h"
#include "tests/unit/ctl_parse.h"

/* What fn printed, as a string the caller frees. */
#define CAPTURE(buf, call)                                   \
    do {                                                     \
        size_t len_;                                         \
        FILE *out = open_memstream(&(buf), &len_);           \
        call;                                                \
        fclose(out);                                         \
    } while (0)

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *s = NULL;
    size_t n = 0;
    assert_true(getdelim(&s, &n, '\0', f) > 0);
    fclose(f);
    return s;
}

static void test_every_verb_in_help_and_man(void **state)
{
    (void)state;
    char *overview;
    CAPTURE(overview, ctl_print_overview(out));
    char *man = read_file("man/strobectl.1");
    const struct ctl_verb *v;
    size_t i;
    for (i = 0; (v = ctl_verb_at(i)); i++) {
        char want[64];
        snprintf(want, sizeof want, "\n  %-12s %s\n", v->name, v->summary);
        assert_non_null(strstr(overview, want));
        snprintf(want, sizeof want, "\n.SS %s\n", v->name);
        if (!strstr(man, want))
            fail_msg("man/strobectl.1 has no section '.SS %s'", v->name);
        assert_ptr_equal(ctl_verb_find(v->name), v);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "strobectl %s", v->name);
        assert_memory_equal(v->synopsis, prefix, strlen(prefix));
        assert_non_null(v->parse);
        assert_true(*v->description && *v->examples);
        /* Every help line but the synopsis fits a terminal. */
        char *help;
        CAPTURE(help, ctl_print_verb_help(out, v));
        for (char *line = strstr(help, "\n\n"); line && *line;) {
            size_t n = strcspn(line, "\n");
            if (n > 80)
                fail_msg("%s --help: a line of %zu columns: %.*s", v->name, n, (int)n, line);
            line += n + (line[n] == '\n');
        }
        free(help);
    }
    assert_true(i >= 25);
    /* Every tool has a verb; every status a line. */
    static const char *const tools[] = { "debug_launch", "debug_query", "debug_session",
                                         "debug_trace", "debug_memory", "debug_breakpoint",
                                         "debug_continue", "debug_test" };
    for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++) {
        bool found = false;
        for (i = 0; (v = ctl_verb_at(i)); i++)
            found |= v->tool && strcmp(v->tool, tools[t]) == 0;
        assert_true(found);
    }
    assert_non_null(strstr(overview, "strobectl help VERB"));
    assert_non_null(strstr(man, ".SH EXIT STATUS"));
    free(overview);
    free(man);
}

static void test_verb_help_forms(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "break", "--help", NULL), 0);
    assert_int_equal(c.kind, CTL_HELP);
    assert_string_equal(c.verb->name, "break");
    assert_null(c.args);
    assert_int_equal(parse(&c, err, "memory", "read", "-h", NULL), 0);
    assert_int_equal(c.kind, CTL_HELP);
    assert_string_equal(c.verb->name, "memory");
    assert_int_equal(parse(&c, err, "help", "until", NULL), 0);
    assert_int_equal(c.kind, CTL_HELP);
    assert_string_equal(c.verb->name, "until");
    assert_int_equal(parse(&c, err, "help", NULL), 0);
    assert_int_equal(c.kind, CTL_HELP);
    assert_null(c.verb);
    assert_int_equal(parse(&c, err, "--help", NULL), 0);
    assert_null(c.verb);
    /* The program's own --help, and an argument after --. */
    assert_int_equal(parse(&c, err, "launch", "./app", "--help", NULL), 0);
    assert_int_equal(c.kind, CTL_LAUNCH);
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "query", "s1", "--", "--help", NULL), -1);
    assert_string_equal(err, "unexpected argument '--help'");
    assert_int_equal(parse(&c, err, "help", "brake", NULL), -1);
    assert_string_equal(err, "there is no verb 'brake'; did you mean 'break'? (strobectl "
                             "--help lists them)");
    assert_int_equal(parse(&c, err, "help", "break", "x", NULL), -1);
    assert_string_equal(err, "help VERB takes no arguments, not 'x'");
}

/* retain is stop --retain under a verb of its own. */
static void test_retain(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "retain", "s1", "--json", NULL), 0);
    assert_int_equal(c.kind, CTL_STOP);
    assert_string_equal(c.tool, "debug_session");
    assert_true(c.json);
    char *args = cJSON_PrintUnformatted(c.args);
    assert_string_equal(args, "{\"retain\":true,\"action\":\"stop\",\"sessionId\":\"s1\"}");
    free(args);
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "retain", NULL), -1);
    assert_string_equal(err, "retain needs a SESSION id");
    assert_string_equal(c.usage, "strobectl retain SESSION");
    assert_null(c.args);
}

static void test_did_you_mean(void **state)
{
    (void)state;
    static const struct { const char *typed, *meant; } cases[] = {
        { "lanch", "launch" }, { "sesions", "sessions" }, { "brake", "break" },
        { "breakpoint", "breakpoints" }, { "stat", "status" }, { "contnue", "continue" },
        { "unwach", "unwatch" }, { "xyzzy", NULL }, { "qqqqqqqqqqq", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct ctl_verb *v = ctl_verb_suggest(cases[i].typed);
        if (!cases[i].meant)
            assert_null(v);
        else
            assert_string_equal(v->name, cases[i].meant);
    }
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "lanch", "./app", NULL), -1);
    assert_string_equal(err, "unknown verb 'lanch'; did you mean 'launch'? (strobectl "
                             "--help lists them)");
    assert_int_equal(parse(&c, err, "xyzzy", NULL), -1);
    assert_string_equal(err, "unknown verb 'xyzzy'; strobectl --help lists them");
}

static void test_exit_statuses(void **state)
{
    (void)state;
    static const int statuses[] = { 0, 1, 2, 3, 4, 5, 6, 64 };
    char *overview;
    CAPTURE(overview, ctl_print_overview(out));
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        assert_non_null(ctl_exit_text(statuses[i]));
        char line[128];
        snprintf(line, sizeof line, "\n  %-3d %s\n", statuses[i], ctl_exit_text(statuses[i]));
        assert_non_null(strstr(overview, line));
    }
    assert_null(ctl_exit_text(7));
    free(overview);
    /* Each verb lists its own status, and not the others'. */
    static const struct { const char *verb; int own; } own[] = {
        { "crash", 3 }, { "memory", 4 }, { "continue", 5 }, { "until", 5 }, { "test", 6 },
        { "sessions", 0 },
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        char *help;
        CAPTURE(help, ctl_print_verb_help(out, ctl_verb_find(own[i].verb)));
        for (int s = 3; s <= 6; s++) {
            char line[16];
            snprintf(line, sizeof line, "\n  %-3d ", s);
            if ((strstr(help, line) != NULL) != (s == own[i].own))
                fail_msg("%s --help: exit status %d %s", own[i].verb, s,
                         s == own[i].own ? "missing" : "listed");
        }
        assert_non_null(strstr(help, "\n  64  "));
        free(help);
    }
}

/* No "debug_" in text. */
static void assert_no_mcp(const char *text)
{
    if (strstr(text, "debug_"))
        fail_msg("names an MCP tool: %s", text);
}

static void test_errors_speak_shell(void **state)
{
    (void)state;
    static const char *const tools[] = { "debug_launch", "debug_query", "debug_session",
                                         "debug_trace", "debug_memory", "debug_breakpoint",
                                         "debug_continue", "debug_test" };
    int rewritten = 0;
    for (int code = ERR_VALIDATION; code <= ERR_STORE_FULL; code++) {
        for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++) {
            struct strobe_error e = { .code = code };
            snprintf(e.msg, sizeof e.msg, "No session found with ID 's1'.");
            hints_apply(tools[t], &e);
            char *text;
            CAPTURE(text, render_tool_error(out, err_code_name(code), e.msg));
            assert_no_mcp(text);
            /* The engine's sentence stays. */
            assert_non_null(strstr(text, "No session found with ID 's1'."));
            rewritten += render_error_hint(err_code_name(code)) != NULL;
            free(text);
        }
    }
    assert_true(rewritten > 0);
    char *text;
    CAPTURE(text, render_tool_error(out, "SESSION_NOT_FOUND", "No session 'x'. Check the "
                                    "spelling, or list sessions with debug_session({action: "
                                    "\"list\"})."));
    assert_string_equal(text, "strobectl: SESSION_NOT_FOUND: No session 'x'. List the "
                              "sessions with: strobectl sessions\n");
    free(text);
    /* Dots inside a sentence do not end it. */
    assert_int_equal(render_advice_cut("Use e.g. 0.5 s with debug_x."), 0);
    assert_int_equal(render_advice_cut("No hint here."), 13);
    /* An error text loses its advice, never its first sentence (the REPL's errors). */
    char e1[] = "PROCESS_EXITED: It has exited. Launch it again with debug_launch.";
    render_error_cut(e1);
    assert_string_equal(e1, "PROCESS_EXITED: It has exited.");
    char e2[] = "VALIDATION_ERROR: 'x' is no field of debug_query. Drop it.";
    render_error_cut(e2);
    assert_string_equal(e2, "VALIDATION_ERROR: 'x' is no field of debug_query. Drop it.");
}

static void test_answers_speak_shell(void **state)
{
    (void)state;
    cJSON *launch = cJSON_Parse(
        "{\"sessionId\":\"app-1\",\"pid\":42,\"nextSteps\":\"Read its output first: "
        "debug_query({sessionId: \\\"app-1\\\", eventType: \\\"stderr\\\"}).\"}");
    char *text;
    CAPTURE(text, render_launch(out, launch));
    assert_no_mcp(text);
    assert_non_null(strstr(text, "session app-1 pid 42\n"));
    assert_non_null(strstr(text, "strobectl query app-1 --type stderr"));
    assert_non_null(strstr(text, "strobectl status app-1"));
    assert_non_null(strstr(text, "strobectl trace app-1 --add 'PATTERN'"));
    free(text);
    cJSON_Delete(launch);
    cJSON *status = cJSON_Parse(
        "{\"status\":\"Tracing 3 functions. Calls appear in debug_query (eventType "
        "\\\"function_enter\\\").\",\"hint\":\"Threads are paused: debug_continue("
        "{sessionId}) resumes them.\",\"note\":\"debug_memory reads it.\",\"pid\":7}");
    CAPTURE(text, render_fields(out, status));
    assert_no_mcp(text);
    assert_non_null(strstr(text, "status: Tracing 3 functions.\n"));
    assert_non_null(strstr(text, "pid:"));
    assert_null(strstr(text, "note"));
    free(text);
    cJSON_Delete(status);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_verb_in_help_and_man),
        cmocka_unit_test(test_verb_help_forms),
        cmocka_unit_test(test_retain),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_exit_statuses),
        cmocka_unit_test(test_errors_speak_shell),
        cmocka_unit_test(test_answers_speak_shell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
