/*
 * strdist.c - Levenshtein distance with an early exit: one row of the table, and a
 * stop as soon as every entry of a row exceeds the cap (no later row can be lower).
 */
#include "base/strdist.h"

#include <string.h>

int str_distance(const char *a, const char *b, int cap)
{
    size_t la = strnlen(a, STRDIST_MAXLEN), lb = strnlen(b, STRDIST_MAXLEN);
    if ((la > lb ? la - lb : lb - la) > (size_t)cap)
        return cap + 1;
    int row[STRDIST_MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0], low = row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < low)
                low = v;
        }
        if (low > cap)
            return cap + 1;
    }
    return row[lb];
}
