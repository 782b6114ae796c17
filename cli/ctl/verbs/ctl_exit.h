/*
 * ctl_exit.h - strobectl's exit statuses, in one place: strobectl.c returns them,
 * each verb's help (ctl_verbs.c) and man/strobectl.1 ("EXIT STATUS") list them,
 * tests/e2e/test_strobectl_verbs.py checks each. A new status goes here, in
 * ctl_exit_text(), in the man page and in a test.
 */
#ifndef STROBE_CTL_EXIT_H
#define STROBE_CTL_EXIT_H

enum ctl_exit {
    CTL_EXIT_OK = 0,
    CTL_EXIT_TOOL_ERROR = 1,    /* the tool or the daemon answered with an error */
    CTL_EXIT_UNREACHABLE = 2,   /* the daemon could not be started or reached, or did not answer */
    CTL_EXIT_NO_CRASH = 3,      /* crash: no crash event recorded */
    CTL_EXIT_TARGETS = 4,       /* memory, watch: some targets failed (others printed) */
    CTL_EXIT_STILL_RUNNING = 5, /* continue..until: timed out, program still running */
    CTL_EXIT_TESTS_FAILED = 6,  /* test: tests failed, were stuck or did not build */
    CTL_EXIT_USAGE = 64,        /* the command line is wrong (sysexits' EX_USAGE) */
};

/* The bit of a verb-specific status in struct ctl_verb's exits mask. */
#define CTL_EXIT_BIT(status) (1u << (status))

/* What status means, as one line of help ("crash: no crash event recorded"), or
 * NULL for a value that is not a status. */
const char *ctl_exit_text(int status);

#endif
