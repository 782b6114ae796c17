/*
 * timearg.c - parsing of debug_query time bounds. See timearg.h.
 *
 * Strict on purpose: a bound the agent mistyped must fail loudly rather than
 * select everything, so no blanks, no "NaN" or "inf", no exponents or hex, and
 * nothing beyond 2^63 ns.
 */
#include "base/timearg.h"

#include <ctype.h>
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
    bool negative = *s == '-';
    const char *num = negative ? s + 1 : s, *p = num;
    while (isdigit((unsigned char)*p))
        p++;
    if (p == num)
        return -1;
    bool fraction = *p == '.';
    if (fraction) {
        const char *digits = ++p;
        while (isdigit((unsigned char)*p))
            p++;
        if (p == digits)
            return -1;
    }
    if (*p == '\0') {
        if (negative || fraction)
            return -1; /* "-5" has no unit: ambiguous; fractions of a ns mean nothing */
        errno = 0;
        long long v = strtoll(num, NULL, 10);
        if (errno == ERANGE)
            return -1;
        *ns = v;
        *relative = false;
        return 0;
    }
    double v = strtod(num, NULL); /* digits[.digits]: nothing else can be there */
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        double total = v * (double)units[i].scale;
        if (total >= 9.2e18)
            return -1;
        *ns = negative ? -(int64_t)total : (int64_t)total;
        *relative = negative;
        return 0;
    }
    return -1;
}
