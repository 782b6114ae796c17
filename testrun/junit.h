/*
 * junit.h - JUnit XML reports into test reports (adapter.h), for every framework
 * that writes one (CTest's --output-junit, pytest's --junitxml, ...):
 *
 *   <testsuites><testsuite name>
 *     <testcase classname name time [file line status]>
 *       <failure message type>text</failure> | <error .../> | <skipped message/>
 *       <system-out>..</system-out> <system-err>..</system-err>
 *     </testcase> ...
 *
 * Each finished <testcase> is handed to the adapter's callback as a junit_case,
 * because frameworks name their tests and place their failures differently; the
 * callback usually calls junit_add() and then sets the file, line and message the
 * way its framework writes them. A report that breaks off keeps the cases read
 * before the break (a case still open there was running: it is not reported) and
 * says so in the report's note.
 */
#ifndef STROBE_TESTRUN_JUNIT_H
#define STROBE_TESTRUN_JUNIT_H

#include "testrun/adapter.h"

#define JUNIT_FILE_MAX (64u << 20)   /* report files larger than this are refused */

/* One <testcase>. Strings are the document's, valid during the callback; NULL when
 * absent. */
struct junit_case {
    const char *suite;      /* the enclosing <testsuite>'s name */
    const char *classname;
    const char *name;
    const char *file;       /* file and line attributes (pytest's xunit1 family) */
    int line;               /* -1: absent */
    double time;            /* seconds, -1: absent */
    const char *status;     /* the status attribute (CTest: run, fail, notrun,
                               disabled; gtest: run, notrun) */
    enum test_status result; /* failure or error: failed; skipped, or a status of
                                notrun/disabled: skipped; else passed */
    const char *kind;       /* "failure", "error", "skipped" or NULL */
    const char *message;    /* that element's message and type attributes */
    const char *type;
    const char *text;       /* its text (the texts of several, joined by lines) */
    const char *out;        /* <system-out> and <system-err> */
    const char *err;
};

/* Turns one case into report entries; -1 when memory runs out (parsing stops). */
typedef int (*junit_case_fn)(void *ud, const struct junit_case *jc, struct test_report *r);

/* Parses a JUnit document. 0: read whole; 1: it broke off or is malformed (the
 * cases before that are in r, and r->note says where); -1: out of memory. Sets
 * r->structured when the document was a JUnit report. */
int junit_parse(const char *xml, size_t len, junit_case_fn fn, void *ud,
                struct test_report *r);
/* The same for a file. 2: no such file (or empty, or not JUnit at all): the run
 * wrote no report and r is untouched. */
int junit_parse_file(const char *path, junit_case_fn fn, void *ud, struct test_report *r);

/* The usual conversion: a case named name with jc's status, duration, output
 * (system-out then system-err) and message (the element's text, else its message
 * attribute). File and line are left to the caller. NULL when memory runs out. */
struct test_case *junit_add(const struct junit_case *jc, const char *name,
                            struct test_report *r);

#endif
