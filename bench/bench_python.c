/*
 * bench_python.c - what tracing a Python function costs the program, through the
 * Python collector (docs/PYTHON.md): bench/pycalls.py calls step(i) N times and
 * reports its own calls per second, run
 *
 *   - alone, and under an empty sys.setprofile function (the floor of any
 *     setprofile tracer: the comparison the issue asks for);
 *   - under Strobe: adopted with no pattern, with a pattern on a function never
 *     called (the hooks' cost to untraced calls), with step traced (the default
 *     sampling: trace.sampleAfter calls whole, then 64 a second), and with step
 *     traced recording every call.
 *
 *   bench_python PYTHON PYCALLS [CALLS [REPS]]   (default 1000000, 3; medians)
 *
 * Starts its own daemon in a private STROBE_HOME under /tmp and stops it; needs
 * `strobe` on PATH (scripts/run-bench.sh puts the build's first). Prints a Markdown
 * table, or a line saying why it was skipped.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_util.h"

#define LINGER_S "0.3"

static char python[4096], pycalls[4096];
static char root[] = "/tmp/strobe-bench-python.XXXXXX"; /* projectRoot, STROBE_HOME */
static bool have_root;

static void cleanup(void)
{
    if (have_root)
        bench_remove_root(root, "bench_python");
    have_root = false;
}

static double rate_in(const char *text)
{
    const char *p = text ? strstr(text, "calls_per_second ") : NULL;
    return p ? atof(p + strlen("calls_per_second ")) : -1;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The interpreter alone (extra: "empty-profile" or ""): calls per second, or -1. */
static double alone(const char *calls, const char *extra)
{
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s %s", python, pycalls, calls, extra);
    return bench_popen_number(cmd, "calls_per_second");
}

struct run {
    double rate, calls, enters;
};

/* One run under Strobe with pattern (NULL: none) and the project settings. */
static struct run under_strobe(struct rpc_client *c, const char *calls, const char *pattern,
                               const char *settings)
{
    if (!bench_project_settings(root, settings)) {
        fprintf(stderr, "bench_python: cannot write the settings of %s\n", root);
        exit(1);
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", python);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *av = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(av, cJSON_CreateString(pycalls));
    cJSON_AddItemToArray(av, cJSON_CreateString(calls));
    cJSON_AddItemToArray(av, cJSON_CreateString(LINGER_S));
    if (pattern)
        cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "tracePatterns"),
                             cJSON_CreateString(pattern));
    cJSON *res = bench_tool(c, "debug_launch", req);
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);
    struct run r = {-1, 0, 0};
    res = bench_wait_ended(c, sid);
    r.enters = num(cJSON_GetObjectItem(res, "eventCounts"), "function_enter");
    r.calls = bench_top_calls(res);
    cJSON_Delete(res);
    char *line = bench_stdout_with(c, sid, "calls_per_second");
    r.rate = rate_in(line);
    free(line);
    bench_delete_session(c, sid);
    return r;
}

struct row {
    const char *what, *pattern, *settings, *extra; /* extra: alone, with these args */
    bool strobe;
    double rate[16];
    int n;
    double calls, enters;
};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_python PYTHON PYCALLS [CALLS [REPS]]\n");
        return 64;
    }
    if (!realpath(argv[1], python) || !realpath(argv[2], pycalls)) {
        printf("Skipped: %s or %s not found.\n", argv[1], argv[2]);
        return 0;
    }
    const char *calls = argc > 3 && atol(argv[3]) > 0 ? argv[3] : "1000000";
    int reps = argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 3;
    if (reps > 15)
        reps = 15;
    signal(SIGPIPE, SIG_IGN);
    if (!bench_private_root(root)) {
        fprintf(stderr, "bench_python: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    have_root = true;
    atexit(cleanup);
    /* pycalls.py in the project, so its module is "pycalls" */
    char copy[9000];
    snprintf(copy, sizeof copy, "cp '%s' '%s/pycalls.py'", pycalls, root);
    if (system(copy) != 0) {
        fprintf(stderr, "bench_python: cannot copy %s\n", pycalls);
        return 1;
    }
    snprintf(pycalls, sizeof pycalls, "%s/pycalls.py", root);

    struct rpc_client c;
    bench_connect(&c, "bench_python");
    struct row rows[] = {
        {.what = "alone", .extra = ""},
        {.what = "an empty sys.setprofile function", .extra = "empty-profile"},
        {.what = "Strobe, no pattern (adopted)", .strobe = true, .settings = "{}"},
        {.what = "Strobe, a pattern on a function never called", .strobe = true,
         .pattern = "pycalls.unused", .settings = "{}"},
        {.what = "Strobe, step traced (default sampling)", .strobe = true,
         .pattern = "pycalls.step", .settings = "{}"},
        {.what = "Strobe, step traced, every call recorded", .strobe = true,
         .pattern = "pycalls.step",
         .settings = "{\"trace.sampleAfter\": 100000000, \"events.maxPerSession\": 10000000}"},
    };
    int n_rows = (int)(sizeof rows / sizeof rows[0]);
    under_strobe(&c, calls, "pycalls.step", "{}"); /* warms the daemon and the caches */
    for (int i = 0; i < reps; i++)
        for (int k = 0; k < n_rows; k++) {
            struct row *r = &rows[k];
            double v;
            if (r->strobe) {
                struct run run = under_strobe(&c, calls, r->pattern, r->settings);
                v = run.rate;
                r->calls = run.calls;
                r->enters = run.enters;
            } else {
                v = alone(calls, r->extra);
            }
            if (v > 0)
                r->rate[r->n++] = v;
        }
    double base = rows[0].n ? median(rows[0].rate, rows[0].n) : -1;
    printf("`%s pycalls.py %s`: step(i) called %s times. Medians of %d runs; rate = the "
           "loop's own calls per second; slowdown = alone / this.\n\n", python, calls, calls,
           reps);
    printf("| run | calls/s | slowdown | traced |\n| --- | ---: | ---: | --- |\n");
    for (int k = 0; k < n_rows; k++) {
        struct row *r = &rows[k];
        double v = r->n ? median(r->rate, r->n) : -1;
        char traced[160] = "";
        if (r->pattern)
            snprintf(traced, sizeof traced, "%.0f calls counted, %.0f function_enter stored "
                     "(last run)", r->calls, r->enters);
        if (v < 0)
            printf("| %s | - | - | no run printed its rate |\n", r->what);
        else
            printf("| %s | %.0f | %.2fx | %s |\n", r->what, v, base / v, traced);
    }
    return 0;
}
