/*
 * render_hint.c - MCP advice cut out of the daemon's sentences, and the next steps
 * of its error codes as strobectl verbs. See render_hint.h.
 */
#include "cli/render/render_hint.h"

#include <ctype.h>
#include <string.h>

static const struct {
    const char *code;
    const char *hint;
} hints[] = {
    { "SESSION_NOT_FOUND", "List the sessions with: strobectl sessions" },
    { "SESSION_EXISTS", "Stop it first with strobectl stop SESSION (strobectl retain "
                        "SESSION keeps its data), or keep querying it." },
    { "PROCESS_EXITED", "Its events stay: strobectl query SESSION, strobectl crash SESSION. "
                        "Launch the program again (strobectl launch) to work with it live." },
    { "NOT_PAUSED", "Wait for a stop with strobectl until SESSION --breakpoint ID, or stop "
                    "the program now with strobectl pause SESSION; set breakpoints with "
                    "strobectl break." },
    { "THREAD_NOT_PAUSED", "Leave --thread out to use the thread that paused last, or "
                           "stop the program with strobectl pause SESSION; strobectl status "
                           "SESSION lists the paused threads." },
    { "BREAKPOINT_NOT_FOUND", "List the breakpoints and their ids with strobectl "
                              "breakpoints SESSION." },
    { "WATCH_SLOTS_FULL", "Remove one with strobectl unwatch SESSION ID (or all), then "
                          "watch again." },
    { "WATCH_TOO_LARGE", "Watch one field (strobectl watch SESSION cfg.field) or an "
                         "address with --size 1, 2, 4 or 8." },
    { "WATCH_FAILED", "Watch another address, or read the value with strobectl memory "
                      "read SESSION VAR." },
    { "WATCH_UNSUPPORTED", "Find the writer with a logpoint on the functions that may "
                           "write it (strobectl break SESSION FUNC --log 'v={var}') "
                           "or sample it: strobectl memory poll SESSION VAR." },
    { "FUNCTION_NOT_FOUND", "strobectl trace SESSION --add with the same pattern shows "
                            "what it matches." },
    { "TEST_RUN_NOT_FOUND", "Use the id that strobectl test printed; runs are forgotten "
                            "when the daemon restarts: run the tests again." },
};

size_t render_advice_cut(const char *s)
{
    const char *tool = strstr(s, "debug_");
    if (!tool)
        return strlen(s);
    /* Back to the start of its sentence: a capital after ". ", "! " or "? " (so
     * not "e.g. 0.5" or "a.b"). */
    const char *p = tool;
    while (p > s && !(isupper((unsigned char)*p) && p - 1 > s &&
                      (p[-1] == ' ' || p[-1] == '\n') && strchr(".!?", p[-2])))
        p--;
    while (p > s && (p[-1] == ' ' || p[-1] == '\n'))
        p--;
    return (size_t)(p - s);
}

void render_error_cut(char *err)
{
    size_t keep = render_advice_cut(err);
    if (keep > strcspn(err, ":") + 1)
        err[keep] = '\0';
}

const char *render_error_hint(const char *code)
{
    for (size_t i = 0; code && i < sizeof hints / sizeof hints[0]; i++)
        if (strcmp(hints[i].code, code) == 0)
            return hints[i].hint;
    return NULL;
}

void render_tool_error(FILE *out, const char *code, const char *message)
{
    const char *hint = render_error_hint(code);
    int n = (int)render_advice_cut(message);
    fprintf(out, "strobectl: %s: %.*s%s%s\n", code, n, message, hint && n ? " " : "",
            hint ? hint : "");
}
