/*
 * render_test.h - the text forms of debug_test status answers (shaped by
 * mcp/tool_test.c): a running run's progress on one line, and a completed run as a
 * test runner prints it. Like render.h, they write only to out and tolerate
 * missing fields, so any client can print them and hand-written answers
 * unit-test them.
 */
#ifndef STROBE_RENDER_TEST_H
#define STROBE_RENDER_TEST_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* The progress of a running run (answer.progress) on one line, without a newline:
 * "[12.3 s] running: 3 passed, 1 failed, 0 skipped; tests::slow 4.1 s (usually
 * 0.2 s); may be stuck (silent 6.0 s): DIAGNOSIS". Cut to width characters when
 * width > 0: a line rewritten in place on a terminal must not wrap. */
void render_test_progress(FILE *out, const cJSON *answer, int width);

/* A completed run (answer.result): the header "cargo: 3 passed, 1 failed, 1
 * skipped, 0 stuck in 2.3 s" with the adapter's note and a timeout; build errors
 * "file:line:col: message"; each failure "FAILED name (file:line)" with its message
 * indented, its rerun command and suggested traces; each stuck test with its
 * diagnosis and every thread's stack (as render_stacks prints them); the hint of a
 * project without tests; the end of the output when no result was parsed; then the
 * traced session ("session SID: strobectl query SID") and the details file last. */
void render_test_result(FILE *out, const cJSON *answer);

/* Whether a completed answer reports failed or stuck tests, a build that failed, a
 * timeout, or a test command that failed without results (strobectl exits 6). */
bool render_test_failed(const cJSON *answer);

#endif
