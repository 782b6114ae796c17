/*
 * adapter_generic.c - any command (debug_test's `command`), when no framework is
 * recognized: its exit code is the verdict, one result for the whole command, and
 * the lines that look like failed assertions (assert(), panics, "FAIL", "Error:")
 * become its message, with the first FILE:LINE among them.
 */
#include "testrun/adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"

#define MESSAGE_MAX 4096

static int generic_detect(const char *project_root, const char *command)
{
    (void)project_root;
    return command ? 1 : 0;
}

static int generic_command(const struct test_plan *plan, struct test_command *out,
                           struct strobe_error *e)
{
    if (!plan->command)
        return err_set(e, ERR_VALIDATION, "no test framework was recognized in %s and no "
                       "command was given.", plan->project_root);
    if (plan->test)
        return err_set(e, ERR_VALIDATION, "the generic runner cannot pick one test out of "
                       "'%s': put the test's filter in the command itself.", plan->command);
    if (tcmd_split(out, plan->command) != 0 || out->argc == 0)
        return err_set(e, ERR_VALIDATION, "command '%s' has an unclosed quote or no words.",
                       plan->command);
    return 0;
}

/* Lines that report a failed check in the common runtimes and test tools. */
static const char ASSERTION_RE[] =
    "Assertion .* failed|assertion failed|panicked at|AssertionError|"
    "^\\s*(FAIL|FAILED|ERROR)\\b|\\bFAILED\\b|^Error: |error: |Segmentation fault|"
    "Traceback \\(most recent call last\\)|Expected|expected .* (got|but was)";

static void collect(const struct regex *re, const char *text, size_t len, struct strbuf *sb)
{
    const char *p = text, *end = text + len;
    while (p < end && sb->len < MESSAGE_MAX) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (regex_match(re, p, n, NULL) == 1) {
            sb_append(sb, p, n);
            sb_puts(sb, "\n");
        }
        p += n + 1;
    }
}

static int generic_parse(const struct test_output *o, struct test_report *out)
{
    const char *name = o->plan->command ? o->plan->command : "command";
    struct test_case *c = test_report_add(out, name, o->exit_code == 0 ? TEST_PASSED
                                                                       : TEST_FAILED);
    if (!c)
        return -1;
    snprintf(out->note, sizeof out->note, "no framework recognized: one result for the "
             "whole command, from its exit code");
    if (o->exit_code == 0)
        return 0;
    struct regex *re = regex_compile(ASSERTION_RE, NULL);
    struct strbuf sb = {0};
    if (re) {
        collect(re, o->out, o->out_len, &sb);
        collect(re, o->err, o->err_len, &sb);
        regex_free(re);
    }
    if (sb.len == 0 && o->stuck)
        sb_puts(&sb, "killed by Strobe: stuck (see `stuck` for its threads' stacks)");
    else if (sb.len == 0)
        sb_printf(&sb, o->exit_code < 0 ? "killed by a signal" : "exited with code %d",
                  o->exit_code);
    static const char *const sources[] = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".rs",
                                          ".go", ".py", ".js", ".ts", ".java", NULL};
    test_find_location(sb.buf, sources, &c->file, &c->line);
    c->message = sb_take(&sb);
    return 0;
}

const struct test_adapter test_adapter_generic = {
    .name = "generic",
    .display = "Generic",
    .language = "unknown",
    .build_system = "unknown",
    .program = NULL,
    .provides = NULL,
    .detect = generic_detect,
    .command = generic_command,
    .parse = generic_parse,
    .no_tests_hint = "No test framework was found. Write a test that reproduces the bug "
                     "first, or pass the command that runs your tests as `command`.",
};
