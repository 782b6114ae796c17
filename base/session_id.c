/*
 * session_id.c - session id generation. See session_id.h.
 */
#include "base/session_id.h"

#include <stdio.h>
#include <string.h>

int session_id_make(const char *binary_path, time_t when,
                    int (*taken)(void *arg, const char *id), void *arg, char *out)
{
    const char *base = strrchr(binary_path, '/');
    base = base ? base + 1 : binary_path;
    char name[65];
    size_t n = 0;
    for (; base[n] && n < sizeof name - 1; n++) {
        char c = base[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        name[n] = ok ? c : '-';
    }
    name[n] = '\0';
    if (n == 0)
        snprintf(name, sizeof name, "session");

    struct tm tm;
    localtime_r(&when, &tm);
    char stem[SESSION_ID_MAX - 8];
    snprintf(stem, sizeof stem, "%s-%04d-%02d-%02d-%02dh%02d", name, tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
    for (int i = 1; i <= 10000; i++) {
        if (i == 1)
            snprintf(out, SESSION_ID_MAX, "%.80s", stem);
        else
            snprintf(out, SESSION_ID_MAX, "%.80s-%d", stem, i % 100000);
        int t = taken(arg, out);
        if (t < 0)
            return -1;
        if (!t)
            return 0;
    }
    return -1;
}
