/*
 * ctl_test.c - argv to the arguments of debug_test for `strobectl test`: a run of
 * a project's tests, or the status of one. See ctl_test.h.
 *
 * Relative paths mean what they mean in the shell that typed them: PROJECT_ROOT
 * and the program of --command are made absolute against the current directory
 * here, since the daemon runs the command from the project root.
 */
#include "cli/ctl/verbs/ctl_test.h"

#include "cli/ctl/verbs/ctl_verbs.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* What the command line said, emitted in one fixed order at the end. */
struct test_opts {
    const char *root, *framework, *level, *test, *command, *status;
    cJSON *traces;   /* tracePatterns, or NULL */
    cJSON *env;      /* {KEY: VALUE}, or NULL */
};

/* s as one word of a debug_test command line (split as a shell splits it):
 * single-quoted unless every character is safe bare. The caller frees. */
static char *shell_word(const char *s)
{
    if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                  "_-./:=@%+,") == strlen(s))
        return strdup(s);
    size_t quotes = 0;
    for (const char *p = s; *p; p++)
        quotes += *p == '\'';
    char *out = malloc(strlen(s) + 3 * quotes + 3), *o = out;
    if (!out)
        return NULL;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* The command line with its program made absolute against cwd when it is a
 * relative path ("build/t", "./run.sh"); a bare name is left to the PATH search
 * and a quoted program as written. The caller frees; NULL when out of memory. */
static char *command_line(const char *cwd, const char *cmd)
{
    const char *start = cmd + strspn(cmd, " \t\n");
    size_t n = strcspn(start, " \t\n");
    bool relative = *start != '/' && memchr(start, '/', n) && !memchr(start, '\'', n) &&
                    !memchr(start, '"', n) && !memchr(start, '\\', n);
    if (!relative)
        return strdup(cmd);
    char *program = strndup(start, n);
    char *abs = program ? ctl_absolute(cwd, program) : NULL;
    char *word = abs ? shell_word(abs) : NULL;
    char *out = NULL;
    if (word && asprintf(&out, "%s%s", word, start + n) < 0)
        out = NULL;
    free(word);
    free(abs);
    free(program);
    return out;
}

/* --env KEY=VALUE into o->env (a later KEY wins). */
static int add_env(struct ctl_walker *w, struct test_opts *o, const char *value)
{
    const char *eq = strchr(value, '=');
    if (!eq || eq == value)
        return ctl_usage_error(w->err, w->errlen, "--env needs KEY=VALUE, not '%s'", value);
    if (!o->env)
        o->env = cJSON_CreateObject();
    char *key = strndup(value, (size_t)(eq - value));
    if (!key || !o->env)
        return ctl_usage_error(w->err, w->errlen, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(o->env, key);
    cJSON_AddStringToObject(o->env, key, eq + 1);
    free(key);
    return 0;
}

/* One option into o. */
static int test_opt(struct ctl_walker *w, struct test_opts *o, const char *name,
                    const char *value)
{
    static const struct { const char *opt, *what; } needs[] = {
        { "--framework", "a framework name" }, { "--level", "unit, integration or e2e" },
        { "--test", "a test NAME" }, { "--command", "a command line" },
        { "--trace", "a PATTERN" }, { "--status", "a TESTRUNID" },
    };
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if (strcmp(name, needs[i].opt) == 0 && !value[strspn(value, " \t\n")])
            return ctl_usage_error(w->err, w->errlen, "%s needs %s", name, needs[i].what);
    if (strcmp(name, "--env") == 0)
        return add_env(w, o, value);
    if (strcmp(name, "--trace") == 0) {
        if (!o->traces)
            o->traces = cJSON_CreateArray();
        cJSON_AddItemToArray(o->traces, cJSON_CreateString(value));
        return 0;
    }
    if (strcmp(name, "--level") == 0 && strcmp(value, "unit") != 0 &&
        strcmp(value, "integration") != 0 && strcmp(value, "e2e") != 0)
        return ctl_usage_error(w->err, w->errlen, "--level is unit, integration or e2e "
                               "(leave it out for every test), not '%s'", value);
    const char **slot = strcmp(name, "--framework") == 0 ? &o->framework
                      : strcmp(name, "--level") == 0     ? &o->level
                      : strcmp(name, "--test") == 0      ? &o->test
                      : strcmp(name, "--command") == 0   ? &o->command
                                                         : &o->status;
    *slot = value;
    return 0;
}

/* The run's arguments from o, in the order of the tool's schema; o's arrays move
 * into args. */
static int emit_run(struct ctl_walker *w, const char *cwd, struct test_opts *o, cJSON *args)
{
    char *root = ctl_absolute(cwd, o->root ? o->root : ".");
    char *command = o->command ? command_line(cwd, o->command) : NULL;
    if (!root || (o->command && !command)) {
        free(root);
        return ctl_usage_error(w->err, w->errlen, "out of memory");
    }
    cJSON_AddStringToObject(args, "action", "run");
    cJSON_AddStringToObject(args, "projectRoot", root);
    free(root);
    if (o->framework)
        cJSON_AddStringToObject(args, "framework", o->framework);
    if (o->level)
        cJSON_AddStringToObject(args, "level", o->level);
    if (o->test)
        cJSON_AddStringToObject(args, "test", o->test);
    if (command)
        cJSON_AddStringToObject(args, "command", command);
    free(command);
    if (o->traces)
        cJSON_AddItemToObject(args, "tracePatterns", o->traces);
    if (o->env)
        cJSON_AddItemToObject(args, "env", o->env);
    o->traces = o->env = NULL;
    return 0;
}

int ctl_parse_test(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out)
{
    static const struct ctl_opt opts[] = {
        { "--framework", OPT_VALUE }, { "--level", OPT_VALUE }, { "--test", OPT_VALUE },
        { "--command", OPT_VALUE },   { "--trace", OPT_VALUE }, { "--env", OPT_VALUE },
        { "--status", OPT_VALUE },    { 0 },
    };
    struct test_opts o = { 0 };
    bool dd = false;
    out->usage = U_TEST;
    const char *name, *value;
    int k, rc = 0;
    while (rc == 0 && (k = ctl_walk(w, opts, &dd, &name, &value)) != 0) {
        if (k < 0)
            rc = -1;
        else if (k == 1)
            rc = test_opt(w, &o, name, value);
        else if (o.root)
            rc = ctl_usage_error(w->err, w->errlen, "test takes one PROJECT_ROOT; "
                                 "unexpected argument '%s'", value);
        else
            o.root = value;
    }
    if (rc == 0 && o.status) {
        out->usage = U_TEST_STATUS;
        if (o.root || o.framework || o.level || o.test || o.command || o.traces || o.env) {
            rc = ctl_usage_error(w->err, w->errlen, "--status takes only the TESTRUNID of "
                                 "a run; leave out PROJECT_ROOT and the run's options");
        } else {
            cJSON_AddStringToObject(out->args, "action", "status");
            cJSON_AddStringToObject(out->args, "testRunId", o.status);
        }
    } else if (rc == 0) {
        rc = emit_run(w, cwd, &o, out->args);
    }
    cJSON_Delete(o.traces);
    cJSON_Delete(o.env);
    return rc;
}

const struct ctl_verb ctl_test_verbs[] = {
    { "test", CTL_TEST, "debug_test", U_TEST "\n" U_TEST_STATUS,
      "run the project's tests: failures, reruns, stuck tests' stacks",
      "Runs the project's tests (debug_test) and waits for the end, with a progress\n"
      "line on a terminal. The framework is detected from PROJECT_ROOT (default: the\n"
      "current directory) unless --framework names it. Prints each failure with its\n"
      "message, file:line and rerun command, build errors, and a stuck (deadlocked or\n"
      "looping) test's threads. --status prints the progress or outcome of a run now.\n",
      "  --framework F   cargo, go, pytest, unittest, jest, vitest, mocha, ctest,\n"
      "                  gtest, catch2, generic\n"
      "  --level L       unit, integration or e2e: which tests, and the hard timeout\n"
      "  --test NAME     one test\n"
      "  --command CMD   the test binary or any command line (its program relative\n"
      "                  to the current directory)\n"
      "  --trace PATTERN run the tests under the debugger, tracing PATTERN (repeat;\n"
      "                  prints the session)\n"
      "  --env KEY=VALUE set a variable in the tests' environment (repeat)\n"
      "  --status ID     the run ID's progress or outcome, now\n"
      "  --json          print debug_test's answer as JSON\n",
      "strobectl test ~/src/app --level unit\n"
      "strobectl test . --command ./run_tests.sh\n"
      "strobectl test --test parser::tests::empty --trace 'parser::*'\n",
      CTL_EXIT_BIT(CTL_EXIT_TESTS_FAILED), NULL, ctl_parse_test },
    { 0 },
};
