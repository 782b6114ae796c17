/*
 * ctl_parse.h - the strobectl argument parser driven from a test: one variadic call
 * per command line (test_client.c, test_ctl_break.c).
 */
#ifndef STROBE_TEST_CTL_PARSE_H
#define STROBE_TEST_CTL_PARSE_H

#include <stdarg.h>

#include "cli/ctl/verbs/ctl_args.h"

/* Parses a NULL-terminated argument list after "strobectl". */
static inline int parse(struct ctl_cmd *c, char *err, ...)
{
    char *argv[64] = { "strobectl" };
    int argc = 1;
    va_list ap;
    va_start(ap, err);
    char *a;
    while ((a = va_arg(ap, char *)))
        argv[argc++] = a;
    va_end(ap);
    return ctl_parse(argc, argv, "/home/u/proj", c, err, 256);
}

#endif
