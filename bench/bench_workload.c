/*
 * bench_workload.c - a real program traced broadly: CPython's debug build
 * (python3.11-dbg, which has its symbols and DWARF) running bench/pyload.py, a
 * CPU-bound loop of dictionary, string and integer work that reports its own
 * throughput, with every function matching PyDict_* traced. Its throughput:
 *
 *   - untraced (the interpreter alone);
 *   - Strobe, trace.mode "int3" (the default sampling: hot functions sampled after
 *     trace.sampleAfter calls, the overhead budget);
 *   - Strobe, trace.mode "fast" (the default) with the default sampling;
 *   - Strobe, trace.mode "fast" recording as much as it can (trace.sampleAfter
 *     100000000, events.maxPerSession 10000000).
 *
 * Each traced run reports the calls counted and the function_enter events stored;
 * each fast run is checked to be one (debug_trace: "through the fast path"). A run
 * whose program crashed is counted and left out of the median when it printed no
 * throughput (pyload prints it before the interpreter's shutdown).
 *
 *   bench_workload PYTHON PYLOAD [ITERATIONS [REPS [PATTERN]]]
 *                                     (default 200000, 3, PyDict_*; medians)
 *
 * Starts its own daemon in a private STROBE_HOME under /tmp and stops it; needs
 * `strobe` on PATH (scripts/run-bench.sh puts the build's first). Prints a Markdown
 * table on stdout, or a line saying why it was skipped.
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

static const char *pattern = "PyDict_*"; /* the traced functions (argument 5) */
/* pyload stays this long after printing (LINGER_S): the debug_trace check runs
 * while it is alive, and the daemon drains the fast path's last records. */
#define LINGER_S "0.3"

static const char *python, *pyload;
static char root[] = "/tmp/strobe-bench-workload.XXXXXX"; /* projectRoot, STROBE_HOME */
static bool have_root;

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "bench_workload: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(1);
}

/* Stops the private daemon and removes the root: atexit. */
static void cleanup(void)
{
    if (have_root)
        bench_remove_root(root, "bench_workload");
    have_root = false;
}

static void project_settings(const char *json)
{
    if (!bench_project_settings(root, json))
        die("cannot write the settings of %s", root);
}

/* pyload's "ops_per_second X" in text, or -1. */
static double ops_in(const char *text)
{
    const char *p = text ? strstr(text, "ops_per_second ") : NULL;
    return p ? atof(p + strlen("ops_per_second ")) : -1;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The interpreter alone: ops per second, -1 when it failed. */
static double untraced(const char *iters)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", python, pyload, iters);
    return bench_popen_number(cmd, "ops_per_second");
}

struct traced_run {
    double ops;      /* -1: none printed */
    double calls;    /* of the traced functions, counted */
    double enters;   /* function_enter events stored */
    bool crashed;
};

/* One traced run under the project settings in force; fast: it must say "through
 * the fast path" while it runs. */
static struct traced_run traced(struct rpc_client *c, const char *iters, bool fast)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", python);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *av = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(av, cJSON_CreateString(pyload));
    cJSON_AddItemToArray(av, cJSON_CreateString(iters));
    cJSON_AddItemToArray(av, cJSON_CreateString(LINGER_S));
    cJSON *res = bench_tool(c, "debug_launch", req);
    if (num(res, "pendingPatternsApplied") < 1)
        die("debug_launch did not apply the pending pattern %s", pattern);
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);

    req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "sessionId", sid);
    res = bench_tool(c, "debug_trace", req);
    const cJSON *st = cJSON_GetObjectItem(res, "status");
    bool is_fast = cJSON_IsString(st) && strstr(st->valuestring, "through the fast path");
    if (is_fast != fast) {
        fprintf(stderr, "bench_workload: expected %s; debug_trace said: %s\n",
                fast ? "\"through the fast path\"" : "int3 tracing",
                cJSON_IsString(st) ? st->valuestring : "(no status)");
        exit(1);
    }
    cJSON_Delete(res);

    struct traced_run r = {-1, 0, 0, false};
    res = bench_wait_ended(c, sid);
    const cJSON *counts = cJSON_GetObjectItem(res, "eventCounts");
    r.enters = num(counts, "function_enter");
    r.crashed = num(counts, "crash") > 0;
    r.calls = bench_top_calls(res);
    cJSON_Delete(res);
    char *line = bench_stdout_with(c, sid, "ops_per_second");
    r.ops = ops_in(line);
    free(line);
    bench_delete_session(c, sid);
    return r;
}

struct row {
    const char *what, *settings;
    bool fast;
    double ops[16];
    int n_ops, crashes;
    double calls, enters; /* of the last run */
};

static void print_row(const struct row *r, double base, int reps)
{
    double v[16];
    memcpy(v, r->ops, sizeof v);
    double ops = r->n_ops ? median(v, r->n_ops) : -1;
    char crashed[64] = "";
    if (r->crashes)
        snprintf(crashed, sizeof crashed, "; **crashed in %d of %d runs**", r->crashes, reps);
    if (ops < 0) {
        printf("| %s | - | - | no run printed its throughput%s | `%s` |\n", r->what, crashed,
               r->settings);
        return;
    }
    printf("| %s | %.0f | %.2fx | %.0f calls, %.0f function_enter events stored (last run)%s "
           "| `%s` |\n", r->what, ops, base / ops, r->calls, r->enters, crashed, r->settings);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_workload PYTHON PYLOAD [ITERATIONS [REPS [PATTERN]]]\n");
        return 64;
    }
    static char abs_python[4096], abs_pyload[4096];
    if (!realpath(argv[1], abs_python) || !realpath(argv[2], abs_pyload)) {
        printf("Skipped: %s or %s not found (python3.11-dbg is in scripts/deps.sh bench).\n",
               argv[1], argv[2]);
        return 0;
    }
    python = abs_python;
    pyload = abs_pyload;
    const char *iters = argc > 3 && atol(argv[3]) > 0 ? argv[3] : "200000";
    int reps = argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 3;
    if (argc > 5)
        pattern = argv[5];
    if (reps > 15)
        reps = 15;
    signal(SIGPIPE, SIG_IGN);
    if (!bench_private_root(root))
        die("mkdtemp: %s", strerror(errno));
    have_root = true;
    atexit(cleanup);

    struct rpc_client c;
    bench_connect(&c, "bench_workload");
    cJSON *req = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "add"), cJSON_CreateString(pattern));
    cJSON_Delete(bench_tool(&c, "debug_trace", req));

    struct row rows[] = {
        {.what = "Strobe int3, default sampling", .settings = "{\"trace.mode\": \"int3\"}"},
        {.what = "Strobe fast path, default sampling", .settings = "{\"trace.mode\": \"fast\"}",
         .fast = true},
        {.what = "Strobe fast path, recording all it can",
         .settings = "{\"trace.mode\": \"fast\", \"trace.sampleAfter\": 100000000, "
                     "\"events.maxPerSession\": 10000000}",
         .fast = true},
    };
    int n_rows = (int)(sizeof rows / sizeof rows[0]);
    double base[16];
    int n_base = 0;
    project_settings("{}"); /* the default: the fast path */
    traced(&c, iters, true); /* warms the page cache, the DWARF index and the daemon */
    for (int i = 0; i < reps; i++) {
        double b = untraced(iters);
        if (b < 0)
            die("%s did not run", pyload);
        base[n_base++] = b;
        for (int k = 0; k < n_rows; k++) {
            project_settings(rows[k].settings);
            struct traced_run r = traced(&c, iters, rows[k].fast);
            if (r.ops > 0)
                rows[k].ops[rows[k].n_ops++] = r.ops;
            rows[k].crashes += r.crashed;
            rows[k].calls = r.calls;
            rows[k].enters = r.enters;
        }
    }
    double b = median(base, n_base);

    printf("`%s %s %s`, functions matching `%s` traced (debug_trace before launch). "
           "Medians of %d runs; throughput = pyload's own loop iterations per second "
           "(time.perf_counter around its loop); slowdown = untraced / traced. Calls = "
           "calls of the 10 most called traced functions in the last run (debug_session's "
           "topFunctions), the whole run with the interpreter's start and exit.\n\n",
           python, pyload, iters, pattern, reps);
    printf("| measurement | loop iterations/s | slowdown | traced | settings |\n"
           "|---|---|---|---|---|\n");
    printf("| untraced | %.0f | 1.00x | - | - |\n", b);
    for (int k = 0; k < n_rows; k++)
        print_row(&rows[k], b, reps);
    rpc_close(&c);
    return 0;
}
