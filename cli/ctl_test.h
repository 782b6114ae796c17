/*
 * ctl_test.h - strobectl's `test` command: argv to the arguments of debug_test
 * (action "run", or "status" of a run by its id) as its input schema names them
 * (mcp/tools.c).
 * No I/O; ctl_args.c dispatches here, strobectl.c polls the run to its end and
 * cli/render_test.h prints it, man/strobectl.1 documents the command.
 */
#ifndef STROBE_CTL_TEST_H
#define STROBE_CTL_TEST_H

#include "cli/ctl_args.h"
#include "cli/ctl_walk.h"

#define U_TEST "strobectl test [PROJECT_ROOT] [--framework F] " \
               "[--level unit|integration|e2e] [--test NAME] [--command CMD] " \
               "[--trace PATTERN]... [--env KEY=VALUE]..."
#define U_TEST_STATUS "strobectl test --status TESTRUNID"

/* The --help lines of the command (part of ctl_help). */
#define CTL_TEST_HELP \
    "  " U_TEST "\n" \
    "      run the project's tests and wait for the end (a progress line on a\n" \
    "      terminal); the framework is detected from PROJECT_ROOT (default: the\n" \
    "      current directory) unless --framework names it (cargo, go, pytest,\n" \
    "      unittest, jest, vitest, mocha, ctest, gtest, catch2, generic); --command\n" \
    "      is the test binary or any command line, its program relative to the\n" \
    "      current directory; --level picks the tests and the hard timeout; --trace\n" \
    "      runs them under the debugger (prints the session). Prints each failure\n" \
    "      with its message and rerun command, build errors, a stuck test's threads;\n" \
    "      exits 6 when tests failed, were stuck or did not build, e.g.\n" \
    "      strobectl test . --command ./run_tests.sh\n" \
    "  " U_TEST_STATUS "\n" \
    "      the progress or the outcome of a run now (--json: as debug_test answers)\n"

/* Parses the arguments of `test` from the walker into out->args, the tool's
 * arguments: {action: "run", projectRoot, framework, level, test, command,
 * tracePatterns, env} with PROJECT_ROOT and the program of --command made absolute
 * against cwd, or {action: "status", testRunId}. The caller adds waitMs. Sets
 * out->usage to the synopsis of the form used. 0, or -1 with a usage error in
 * w->err (out->args then holds a partial object the caller deletes). */
int ctl_parse_test(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out);

#endif
