/*
 * timearg.c - parsing of debug_query time bounds. See timearg.h.
 */
#include "base/timearg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int timearg_parse(const char *s, int64_t *ns, bool *relative)
{
    static const struct {
        const char *suffix;
        int64_t scale;
    } units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000LL},
                 {"m", 60000000000LL}, {"h", 3600000000000LL}};
    while (*s == ' ')
        s++;
    bool negative = *s == '-';
    char *end;
    errno = 0;
    double v = strtod(negative ? s + 1 : s, &end);
    if (end == (negative ? s + 1 : s) || errno != 0 || v < 0)
        return -1;
    if (*end == '\0') {
        if (negative)
            return -1; /* "-5" has no unit: ambiguous */
        *ns = (int64_t)v;
        *relative = false;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        double total = v * (double)units[i].scale;
        if (total > 9.2e18)
            return -1;
        *ns = negative ? -(int64_t)total : (int64_t)total;
        *relative = negative;
        return 0;
    }
    return -1;
}
