/*
 * jsproj.h - what the JavaScript test adapters (jest, vitest, mocha) share: which
 * of them a project uses (package.json, config files), where its copy of the
 * framework is installed, the command's common part, the report file read whole,
 * and the failure text of a JS error split into its message and the place it was
 * thrown.
 */
#ifndef STROBE_TESTRUN_JSPROJ_H
#define STROBE_TESTRUN_JSPROJ_H

#include <stdbool.h>
#include <stddef.h>

#include "testrun/adapter.h"

enum js_framework { JS_JEST, JS_VITEST, JS_MOCHA };

/* Confidence that project_root (and command, when given) runs its tests with fw:
 * full when the framework's config file is there, or when package.json depends on
 * it and its test script names it; a little less when package.json only depends on
 * it; 40 when another framework's config file or test script claims the project;
 * 0 when nothing names it. */
int js_detect(const char *project_root, const char *command, enum js_framework fw,
              int confidence);

/* The common part of a JS framework's command: the agent's command split into
 * words when given (with "--" after a package manager's "npm test", so the options
 * that follow reach the framework); else for a report run the framework's own executable from
 * node_modules/.bin in project_root or the nearest parent that has it
 * (COMMAND_NOT_FOUND naming the npm package when none has it); else (a command for a
 * person) `npx BIN`. prefix_args follow the program ("run" for vitest), NULL-ended. */
int js_command(const struct test_plan *plan, const char *bin, const char *const *prefix_args,
               struct test_command *out, struct strobe_error *e);

/* A test name as a regular expression that matches it literally (jest and vitest
 * take -t as a regex); malloc'd. */
char *js_regex_literal(const char *name);

/* The whole file at path, NUL-terminated (malloc'd), NULL when it cannot be read. */
char *js_read_file(const char *path, size_t *len);

/* Splits a JS error's text ("Error: msg\n    at f (file:12:5)\n...") into the
 * message before the stack (malloc'd, trailing blanks dropped) and the innermost
 * stack frame in the project's own code (not node_modules, not node's internals):
 * file (relative to project_root when inside it, malloc'd) and line. The
 * location is left alone when no frame qualifies. */
void js_split_error(const char *text, const char *project_root, char **message, char **file,
                    int *line);

/* The line of a load error worth showing, malloc'd: the "...Error: " line when
 * there is one (jest wraps babel's SyntaxError in paragraphs of advice), else the
 * first line that is not jest's "● Test suite failed to run" header. */
char *js_error_line(const char *text);

/* path relative to project_root when it lies inside it, else path; malloc'd. */
char *js_relative(const char *path, const char *project_root);

/* Jest's and vitest's JSON report (the same shape): every case of testResults[]
 * and each suite that failed to load. false when json is not such a report. */
bool js_parse_jest_json(const char *json, const char *project_root, struct test_report *r);

/* Jest and vitest list the tests -t left out as skipped: with a test filter, drops
 * the skipped cases whose name does not contain it (the filter is literal). */
void js_drop_filtered(struct test_report *r, const char *test);

/* A trace suggestion for JS: none. Strobe traces native code (ptrace, DWARF);
 * JavaScript functions run inside V8's JIT and have no symbols it can hook, so any
 * pattern would match nothing. */
int js_suggest_none(const struct test_case *c, char **out, int max);

#endif
