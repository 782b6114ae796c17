/*
 * details.h - a test run's details file: every test with its status, duration,
 * place, whole message and own output, the stuck test's stacks, and the raw output
 * of the framework, as one JSON document the agent reads only when the answer's
 * summary is not enough. Files live in $STROBE_HOME/tests (0700), each 0600 and
 * created new (never through a symlink); the oldest beyond DETAILS_KEEP are removed.
 */
#ifndef STROBE_TESTRUN_DETAILS_H
#define STROBE_TESTRUN_DETAILS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "testrun/testrun.h"

#define DETAILS_KEEP 100

struct details {
    const char *id, *framework, *command, *project_root;
    int exit_code;
    bool timed_out;
    int64_t duration_ms;
    const struct test_report *report;
    const struct testrun_stuck *stuck;      /* NULL: none */
    const struct strbuf *out, *err;
    size_t out_dropped, err_dropped;
};

/* Writes d to tests_dir/ID.json (tests_dir NULL or "": $STROBE_HOME/tests); its path
 * into path. 0, or -1 with a sentence in err. */
int details_write(const char *tests_dir, const struct details *d, char *path, size_t cap,
                  char *err, size_t errlen);

/* Removes a run's private work directory and the files in it. */
void details_remove_dir(const char *dir);

#endif
