/*
 * failure_text.h - what language runtimes say when a program fails, parsed from
 * their own words: glibc's assertion message, libstdc++'s verbose terminate handler,
 * Rust's default panic hook and the sanitizers' reports. Pure string functions: the
 * crash reporter feeds them glibc's __abort_msg, the query layer feeds them the
 * stderr lines that preceded a crash event.
 */
#ifndef STROBE_FAILURE_TEXT_H
#define STROBE_FAILURE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

struct assertion_info {
    char expression[512];
    char file[512];
    char function[256];  /* "" when the message has none */
    int line;
};

/* Parses glibc's "[prog: ]file:line: [function: ]Assertion `expr' failed." */
bool failure_parse_assertion(const char *msg, struct assertion_info *out);

/* Appends to out, as JSON object members each preceded by a comma, what the stderr
 * lines (oldest first, the last ones a process wrote before failing) tell:
 *   ,"exception":{"type":"std::runtime_error","what":"..."}   (libstdc++)
 *   ,"panic":{"message":"...","file":"src/main.rs","line":5,"column":9,"thread":"main"}
 *   ,"sanitizer":{"tool":"AddressSanitizer","report":"heap-buffer-overflow on ...",
 *                 "summary":"SUMMARY: ..."}
 * Only the last occurrence of each counts. */
void failure_scan_stderr(struct strbuf *out, const char *const *lines, size_t n);

/* Appends ,"python":{"error":"Segmentation fault","frames":[{"function","file",
 * "line"}],"otherThreads":N} when the lines (a process's stderr from its fatal signal
 * on) hold CPython faulthandler's dump: the frames of its "Current thread" block,
 * innermost first, at most max. Nothing otherwise. */
void failure_scan_python(struct strbuf *out, const char *const *lines, size_t n, int max);

/* Indexes of the first and last lines of the last sanitizer report in lines, for
 * linking stderr events; false when there is none. */
bool failure_sanitizer_span(const char *const *lines, size_t n, size_t *first, size_t *last);

#endif
