/*
 * tsuggest.h - trace patterns that name the code under test of a failed native
 * (C, C++) test, for adapters whose failures point into the test's own file:
 * the source file the test file is named after ("tests/test_stack.cpp" ->
 * "@file:stack.cpp") and the functions the failed check calls
 * ("CHECK( s.sum() == 6 )" -> "**::sum").
 */
#ifndef STROBE_TESTRUN_TSUGGEST_H
#define STROBE_TESTRUN_TSUGGEST_H

#include "testrun/adapter.h"

/* Appends at most max malloc'd patterns for c to out; returns how many. Falls back
 * to test_suggest_default when neither the file nor the message gives one. */
int tsuggest_native(const struct test_case *c, char **out, int max);
/* "@file:SOURCE" for the source under test of c's test file when one exists (see
 * tsuggest.c), after the n patterns already in out; returns the new count. */
int tsuggest_file(const struct test_case *c, char **out, int n, int max);
/* Only the functions called on the first line of message ("**::sum"), after the n
 * patterns already in out; returns the new count. */
int tsuggest_calls(const char *message, char **out, int n, int max);

#endif
