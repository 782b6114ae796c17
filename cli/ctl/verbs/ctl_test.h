/*
 * ctl_test.h - strobectl's `test` command: argv to the arguments of debug_test
 * (action "run", or "status" of a run by its id) as its input schema names them
 * (mcp/tools.json).
 * No I/O; its row of the verb table is ctl_test_verbs (ctl_verbs.h),
 * strobectl.c polls the run to its end and cli/render/render_test.h prints it,
 * man/strobectl.1 documents the verb.
 */
#ifndef STROBE_CTL_TEST_H
#define STROBE_CTL_TEST_H

#include "cli/ctl/verbs/ctl_args.h"
#include "cli/ctl/verbs/ctl_walk.h"

#define U_TEST "strobectl test [PROJECT_ROOT] [--framework F] " \
               "[--level unit|integration|e2e] [--test NAME] [--command CMD] " \
               "[--trace PATTERN]... [--env KEY=VALUE]..."
#define U_TEST_STATUS "strobectl test --status TESTRUNID"

/* Parses the arguments of `test` from the walker into out->args, the tool's
 * arguments: {action: "run", projectRoot, framework, level, test, command,
 * tracePatterns, env} with PROJECT_ROOT and the program of --command made absolute
 * against cwd, or {action: "status", testRunId}. The caller adds waitMs. Sets
 * out->usage to the synopsis of the form used. 0, or -1 with a usage error in
 * w->err (out->args then holds a partial object the caller deletes). */
int ctl_parse_test(struct ctl_walker *w, const char *cwd, struct ctl_cmd *out);

#endif
