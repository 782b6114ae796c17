/*
 * bench_fast.c - the cost of one call traced through the fast path (trace.mode
 * "fast", ptrace/hooks/hooks.h), side by side in one run with the same call untraced,
 * traced with int3 breakpoints and recorded by uftrace, on
 * tests/fixtures/bench_calls.c (which times its own loop of traced_fn calls):
 *
 *   - untraced: the fixture alone, N calls;
 *   - Strobe int3 (enter+exit, every call recorded), N_INT3 calls: at ~25 us a call
 *     N would take minutes, and the per-call cost does not depend on N;
 *   - Strobe fast path, every call recorded (trace.sampleAfter 100000000, so the
 *     hot function is never sampled; events.maxPerSession 10000000 so all 2N
 *     events are kept; the fast path pins no CPU: nothing stops); N calls;
 *   - the same with the ring warm: N_WARMUP untimed calls first (its pages written
 *     once, as in any program that has run a while), then N timed calls;
 *   - Strobe fast path with the default sampling settings (sampled after
 *     trace.sampleAfter 5000 recorded calls when hotter than
 *     trace.hotCallsPerSecond 100000: the recorder then only counts); N calls;
 *   - uftrace `record -P traced_fn` (dynamic patching of the same plain binary)
 *     and `record -a -P traced_fn` (arguments and return values too); N calls.
 *
 * Each Strobe fast run is checked to be one: its debug_trace answer, asked while
 * the fixture runs, must say "through the fast path"; the fully recorded runs must
 * store N function_enter and N function_exit events, the sampled run must report N
 * calls counted by the fast path ("countedBy": "fast"). Each uftrace run is checked
 * to have recorded N calls of traced_fn (`uftrace report`).
 *
 *   bench_fast FIXTURE [N [REPS]]   (N default 40,000; REPS default 5; medians)
 *
 * N is bounded by the fast path's ring: 131072 records (65536 calls of traced_fn)
 * which the daemon drains every 5 ms, at most 16384 records at a time; a fuller
 * ring counts calls without recording them, and a run of 100,000 calls already
 * keeps only part of its events.
 *
 * Starts its own daemon in a private STROBE_HOME under /tmp and stops it; needs
 * `strobe` on PATH (scripts/run-bench.sh puts the build's first). The uftrace rows
 * are skipped when uftrace is missing. Prints a Markdown table on stdout.
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

static const long N_INT3 = 20000;
static const long N_SHORT = 10000; /* a run shorter than one drain period (5 ms) */
/* Calls before the timed loop of the warm run: more than one lap of the ring (65536
 * calls of traced_fn), so that every record the loop writes lands on a page written
 * before. A page's first write costs a fault (and, under some hypervisors, far
 * more: BENCHMARKS.md), which the first lap pays and a long-running program does
 * not. */
static const long N_WARMUP = 70000;
/* The fixture stays this long after its loop (bench_calls' LINGER_MS) when traced
 * by Strobe: the debug_trace check below runs while it is alive, and the daemon
 * drains the last records at the pace its store takes their events; what still
 * finds no room when the process exits is counted as ringFull, not stored (300 ms
 * proved short for 110,000 calls here). */
#define LINGER_MS "1000"
static const char *fixture;
static char root[] = "/tmp/strobe-bench-fast.XXXXXX"; /* projectRoot and STROBE_HOME */
static bool have_root;

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "bench_fast: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(1);
}

/* Stops the private daemon and removes the root: atexit. */
static void cleanup(void)
{
    if (have_root)
        bench_remove_root(root, "bench_fast");
    have_root = false;
}

static void project_settings(const char *json)
{
    if (!bench_project_settings(root, json))
        die("cannot write the settings of %s", root);
}

/* Runs argv with stdout captured (stderr to /dev/null); its stdout, malloc'd, or
 * NULL when it did not run or failed. */
static char *run_capture(char *const argv[])
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0)
        return NULL;
    if (pid == 0) {
        dup2(p[1], 1);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 2);
        close(p[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    return bench_read_child(p[0], pid);
}

/* The fixture's "traced_fn_ns_per_call X" in text, or -1. */
static double ns_per_call_in(const char *text)
{
    const char *p = text ? strstr(text, "traced_fn_ns_per_call ") : NULL;
    return p ? atof(p + strlen("traced_fn_ns_per_call ")) : -1;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* ---- Strobe ----------------------------------------------------------------------- */

enum check { CHECK_INT3, CHECK_FAST_ALL, CHECK_FAST_SAMPLED };

/* One launch of the fixture for n calls under the project settings in force; ns per
 * call the fixture measured. Exits the benchmark when the run is not what check
 * says it must be. */
static double strobe_once(struct rpc_client *c, long n, long warmup, enum check check)
{
    char nbuf[32], wbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    snprintf(wbuf, sizeof wbuf, "%ld", warmup);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", fixture);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *av = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(av, cJSON_CreateString(nbuf));
    cJSON_AddItemToArray(av, cJSON_CreateString("fn"));
    cJSON_AddItemToArray(av, cJSON_CreateString(LINGER_MS));
    cJSON_AddItemToArray(av, cJSON_CreateString(wbuf));
    cJSON *res = bench_tool(c, "debug_launch", req);
    if (num(res, "pendingPatternsApplied") < 1)
        die("debug_launch did not apply the pending pattern traced_fn%s", "");
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);

    /* While it runs: the hooked function must (or must not) be on the fast path. */
    req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "sessionId", sid);
    res = bench_tool(c, "debug_trace", req);
    const cJSON *st = cJSON_GetObjectItem(res, "status");
    bool fast = cJSON_IsString(st) && strstr(st->valuestring, "through the fast path");
    if (fast != (check != CHECK_INT3)) {
        fprintf(stderr, "bench_fast: expected %s; debug_trace said: %s\n",
                check == CHECK_INT3 ? "int3 tracing" : "\"through the fast path\"",
                cJSON_IsString(st) ? st->valuestring : "(no status)");
        exit(1);
    }
    cJSON_Delete(res);

    double enters = -1, exits = -1, calls = -1, ring_full = -1;
    const char *counted_by = "";
    char counted_buf[32] = "";
    for (bool running = true; running;) {
        usleep(20000);
        req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "action", "status");
        cJSON_AddStringToObject(req, "sessionId", sid);
        res = bench_tool(c, "debug_session", req);
        const char *s = cJSON_GetObjectItem(res, "status")->valuestring;
        running = strcmp(s, "running") == 0;
        if (!running) {
            if (strcmp(s, "exited") != 0)
                die("the traced fixture ended %s", s);
            const cJSON *counts = cJSON_GetObjectItem(res, "eventCounts");
            enters = num(counts, "function_enter");
            exits = num(counts, "function_exit");
            const cJSON *smp = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "sampling"), 0);
            if (smp) {
                calls = num(smp, "calls");
                ring_full = num(smp, "ringFull");
                const cJSON *by = cJSON_GetObjectItem(smp, "countedBy");
                if (cJSON_IsString(by))
                    snprintf(counted_buf, sizeof counted_buf, "%s", by->valuestring);
                counted_by = counted_buf;
            }
        }
        cJSON_Delete(res);
    }
    char *line = bench_stdout_with(c, sid, "traced_fn_ns_per_call");
    double ns = ns_per_call_in(line);
    free(line);
    bench_delete_session(c, sid);
    if (ns < 0)
        die("no traced_fn_ns_per_call line in the session's stdout%s", "");
    if (check == CHECK_FAST_SAMPLED) {
        if (calls != (double)n || strcmp(counted_by, "fast") != 0) {
            fprintf(stderr, "bench_fast: sampled run: expected %ld calls counted by \"fast\", "
                    "got %.0f by \"%s\"\n", n, calls, counted_by);
            exit(1);
        }
    } else if (enters != (double)(n + warmup) || exits != (double)(n + warmup)) {
        fprintf(stderr, "bench_fast: expected %ld function_enter and function_exit events, "
                "got %.0f / %.0f (calls %.0f, ringFull %.0f; -1: not said)\n", n + warmup,
                enters, exits, calls, ring_full);
        exit(1);
    }
    return ns;
}

/* ---- uftrace -------------------------------------------------------------------- */

/* One `uftrace record [-a] -P traced_fn FIXTURE n fn`; the fixture's ns per call,
 * after checking `uftrace report` counts n calls of traced_fn. */
static double uftrace_once(long n, bool args)
{
    char nbuf[32], dir[4200];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    snprintf(dir, sizeof dir, "%s/uftrace.data", root);
    char *rec[] = {"uftrace", "record", "-d", dir, "-P", "traced_fn", (char *)fixture, nbuf,
                   "fn", NULL};
    char *rec_a[] = {"uftrace", "record", "-d", dir, "-a", "-P", "traced_fn", (char *)fixture,
                     nbuf, "fn", NULL};
    char *out = run_capture(args ? rec_a : rec);
    double ns = ns_per_call_in(out);
    free(out);
    if (ns < 0)
        die("uftrace record did not run the fixture%s", "");
    char *rep[] = {"uftrace", "report", "-d", dir, "-F", "traced_fn", NULL};
    out = run_capture(rep);
    /* The row "  TOTAL  SELF  CALLS  traced_fn": the number before the name. */
    const char *p = out ? strstr(out, " traced_fn") : NULL;
    const char *q = p;
    while (q && q > out && q[-1] == ' ')
        q--;
    while (q && q > out && q[-1] != ' ')
        q--;
    double calls = q ? atof(q) : -1;
    free(out);
    if (calls != (double)n) {
        fprintf(stderr, "bench_fast: uftrace recorded %.0f calls of traced_fn, not %ld\n",
                calls, n);
        exit(1);
    }
    return ns;
}

/* ---- main -------------------------------------------------------------------------- */

/* A table row: ns is the fixture's ns per call, base the untraced one, fast_cost the
 * fast path's cost per call (the ratio's denominator; <= 0: no ratio). */
static void row(const char *what, double ns, double base, double fast_cost, const char *note)
{
    if (ns < 0) {
        printf("| %s | - | - | %s |\n", what, note);
        return;
    }
    if (fast_cost > 0)
        printf("| %s | %.1f | %.2fx | %s |\n", what, ns - base, (ns - base) / fast_cost, note);
    else
        printf("| %s | %.1f | - | %s |\n", what, ns - base, note);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_fast FIXTURE [N [REPS]]\n");
        return 64;
    }
    static char abs_fixture[4096];
    if (!realpath(argv[1], abs_fixture))
        die("cannot find %s", argv[1]);
    fixture = abs_fixture;
    long n = argc > 2 && atol(argv[2]) > 0 ? atol(argv[2]) : 50000;
    int reps = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 5;
    if (reps > 15)
        reps = 15;
    signal(SIGPIPE, SIG_IGN);
    if (!bench_private_root(root))
        die("mkdtemp: %s", strerror(errno));
    have_root = true;
    atexit(cleanup);

    struct rpc_client c;
    bench_connect(&c, "bench_fast");
    cJSON *req = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "add"), cJSON_CreateString("traced_fn"));
    cJSON_Delete(bench_tool(&c, "debug_trace", req));

    /* Settings of each Strobe row, as the project's .strobe/settings.json. */
    const char *int3_settings = "{\"trace.mode\": \"int3\", "
                                "\"trace.hotCallsPerSecond\": 10000000, "
                                "\"trace.overheadBudgetPercent\": 100}";
    const char *all = "{\"trace.mode\": \"fast\", \"trace.sampleAfter\": 100000000, "
                      "\"events.maxPerSession\": 10000000}";
    const char *sampled_settings = "{\"trace.mode\": \"fast\"}";

    char *version = run_capture((char *[]){"uftrace", "--version", NULL});
    bool uft = version != NULL;
    free(version);
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    char *plain[] = {(char *)fixture, nbuf, "fn", NULL};

    /* Warm the page cache, the DWARF index and the daemon. */
    project_settings(int3_settings);
    strobe_once(&c, N_INT3, 0, CHECK_INT3);

    /* The sampled run is longer: the daemon decides to sample at a drain after
     * trace.sampleAfter calls, and a short run would be mostly recorded calls. */
    long n_sampled = 20 * n;
    double base[16], int3[16], fpin[16], fwarm[16], fshort[16], fsamp[16], up[16], ua[16];
    for (int i = 0; i < reps; i++) {
        char *out = run_capture(plain);
        base[i] = ns_per_call_in(out);
        free(out);
        if (base[i] < 0)
            die("%s did not run", fixture);
        project_settings(int3_settings);
        int3[i] = strobe_once(&c, N_INT3, 0, CHECK_INT3);
        project_settings(all);
        fpin[i] = strobe_once(&c, n, 0, CHECK_FAST_ALL);
        fwarm[i] = strobe_once(&c, n, N_WARMUP, CHECK_FAST_ALL);
        project_settings(sampled_settings);
        fsamp[i] = strobe_once(&c, n_sampled, 0, CHECK_FAST_SAMPLED);
        project_settings(all);
        fshort[i] = strobe_once(&c, N_SHORT, 0, CHECK_FAST_ALL);
        up[i] = uft ? uftrace_once(n, false) : -1;
        ua[i] = uft ? uftrace_once(n, true) : -1;
    }
    double b = median(base, reps), i3 = median(int3, reps), fp = median(fpin, reps);
    double fs = median(fsamp, reps), fsh = median(fshort, reps), fw = median(fwarm, reps);
    double u_p = uft ? median(up, reps) : -1, u_a = uft ? median(ua, reps) : -1;

    printf("Medians of %d runs. Per call = the fixture's own ns/call (CLOCK_MONOTONIC around "
           "its loop of traced_fn calls) minus the untraced ns/call; \"vs fast\" = that cost "
           "over the fast path's, every call recorded. "
           "Calls per run: %ld (fast, every call recorded, and uftrace; the warm run makes "
           "%ld untimed ones first), %ld (short run), "
           "%ld (default sampling), %ld (int3). Every fast run was checked to be one "
           "(debug_trace, asked while the fixture runs: \"through the fast path\"); the "
           "fully recorded runs to store one function_enter and one function_exit event per "
           "call, the sampled run to count every call (\"countedBy\": \"fast\"); each "
           "uftrace run to record every call (uftrace report).\n\n",
           reps, n, N_WARMUP, N_SHORT, n_sampled, N_INT3);
    printf("| measurement | per call (ns) | vs fast | notes |\n|---|---|---|---|\n");
    row("untraced traced_fn()", b, 0, -1, "the fixture alone (absolute ns per call)");
    char note[256];
    snprintf(note, sizeof note, "trace.mode \"fast\", trace.sampleAfter 100000000, "
             "events.maxPerSession 10000000");
    row("Strobe fast path, every call recorded (enter+exit)", fp, b, fp - b, note);
    snprintf(note, sizeof note, "the same settings, after %ld untimed calls and a 500 ms "
             "pause: the ring's pages written once before (bench_calls' WARMUP)", N_WARMUP);
    row("Strobe fast path, every call recorded, ring warm", fw, b, fp - b, note);
    row("Strobe fast path, every call recorded, short run", fsh, b, fp - b,
        "the same settings, a run shorter than one drain period");
    row("Strobe fast path, default sampling", fs, b, fp - b,
        "trace.mode \"fast\" alone: sampled after 5000 calls, then counted only");
    row("Strobe int3, every call recorded (enter+exit), CPU 0", i3, b, fp - b,
        "trace.mode \"int3\", no sampling, tracer and target on one CPU");
    row("uftrace record -P traced_fn", u_p, b, fp - b,
        uft ? "dynamic patching of the same binary" : "uftrace not installed");
    row("uftrace record -a -P traced_fn", u_a, b, fp - b,
        uft ? "with arguments and return values" : "uftrace not installed");
    printf("\n| ratio (per call, every call recorded) | fast path |\n|---|---|\n");
    printf("| int3 / fast path | %.0fx |\n", (i3 - b) / (fp - b));
    if (uft) {
        printf("| fast path / uftrace -P | %.2fx |\n", (fp - b) / (u_p - b));
        printf("| fast path / uftrace -a -P | %.2fx |\n", (fp - b) / (u_a - b));
    }
    rpc_close(&c);
    return 0;
}
