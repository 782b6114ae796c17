/*
 * bench_count.c - the cost of exact counting: a traced call once its function is
 * sampled and counted by the counting jump (ptrace/hooks/hooks.h), against the same call
 * untraced, on tests/fixtures/bench_calls.c (which times its own loop).
 *
 *   bench_count FIXTURE [N [REPS]]   (N calls per run, default 10,000,000; REPS
 *                                     runs, default 5; medians)
 *
 * The traced runs use a project settings file with trace.sampleAfter 0 and
 * trace.overheadBudgetPercent 1, so traced_fn is sampled within the first 100 ms
 * window: the figure is the whole loop's ns per call (the int3 calls of that first
 * window and of the sample windows included) minus the untraced ns per call. Each
 * run is checked to report exactly N calls. Needs STROBE_HOME set and `strobe` on
 * PATH (scripts/run-bench.sh does both). Prints a Markdown table on stdout.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_util.h"

static double ns_per_call_in(const char *text)
{
    const char *p = text ? strstr(text, "traced_fn_ns_per_call ") : NULL;
    return p ? atof(p + strlen("traced_fn_ns_per_call ")) : -1;
}

/* The fixture alone: its own ns per call of traced_fn. */
static double untraced(const char *fixture, const char *n)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "'%s' %s fn", fixture, n);
    FILE *f = popen(cmd, "r");
    char line[256] = "";
    double v = -1;
    while (f && fgets(line, sizeof line, f))
        if (ns_per_call_in(line) >= 0)
            v = ns_per_call_in(line);
    if (f)
        pclose(f);
    return v;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

struct counted_run {
    double ns_per_call, calls, recorded;
};

/* One traced run to its end; the session is deleted after. */
static struct counted_run traced(struct rpc_client *c, const char *fixture, const char *root,
                                 const char *n)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", fixture);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *argv = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(argv, cJSON_CreateString(n));
    cJSON_AddItemToArray(argv, cJSON_CreateString("fn"));
    cJSON *res = bench_tool(c, "debug_launch", req);
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);
    struct counted_run r = {-1, -1, -1};
    for (bool running = true; running;) {
        usleep(20000);
        req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "action", "status");
        cJSON_AddStringToObject(req, "sessionId", sid);
        res = bench_tool(c, "debug_session", req);
        running = strcmp(cJSON_GetObjectItem(res, "status")->valuestring, "running") == 0;
        const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "sampling"), 0);
        if (!running && s) {
            r.calls = num(s, "calls");
            r.recorded = num(s, "recorded");
        }
        cJSON_Delete(res);
    }
    char *line = bench_stdout_with(c, sid, "traced_fn_ns_per_call");
    r.ns_per_call = ns_per_call_in(line);
    free(line);
    bench_delete_session(c, sid);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_count FIXTURE [N [REPS]]\n");
        return 64;
    }
    static char fixture[4096];
    if (!realpath(argv[1], fixture)) {
        fprintf(stderr, "bench_count: cannot find %s\n", argv[1]);
        return 1;
    }
    const char *n = argc > 2 ? argv[2] : "10000000";
    int reps = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 5;
    if (reps > 15)
        reps = 15;
    char root[] = "/tmp/strobe-bench-count.XXXXXX";
    if (!mkdtemp(root))
        return 1;
    char path[4200];
    snprintf(path, sizeof path, "%s/.strobe", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/.strobe/settings.json", root);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "{\"trace.mode\": \"int3\", \"trace.sampleAfter\": 0, "
               "\"trace.overheadBudgetPercent\": 1}\n");
    fclose(f);

    char err[256];
    int fd = client_connect(true, err, sizeof err);
    struct rpc_client c;
    if (fd < 0) {
        fprintf(stderr, "bench_count: %s\n", err);
        return 1;
    }
    rpc_init(&c, fd);
    if (rpc_handshake(&c, "bench_count", err, sizeof err) != 0) {
        fprintf(stderr, "bench_count: %s\n", err);
        return 1;
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "add"), cJSON_CreateString("traced_fn"));
    cJSON_Delete(bench_tool(&c, "debug_trace", req));

    double plain[16], jump[16], recorded = 0;
    traced(&c, fixture, root, n); /* warms the DWARF index and the page cache */
    for (int i = 0; i < reps; i++) {
        plain[i] = untraced(fixture, n);
        struct counted_run r = traced(&c, fixture, root, n);
        if (r.calls != atof(n)) {
            fprintf(stderr, "bench_count: %.0f calls counted, not %s\n", r.calls, n);
            return 1;
        }
        jump[i] = r.ns_per_call;
        recorded = r.recorded;
    }
    req = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "remove"), cJSON_CreateString("traced_fn"));
    cJSON_Delete(bench_tool(&c, "debug_trace", req));
    rpc_close(&c);
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    if (system(path) != 0)
        fprintf(stderr, "bench_count: could not remove %s\n", root);

    double base = median(plain, reps), counted = median(jump, reps);
    printf("Medians of %d runs of %s calls of traced_fn; every traced run counted exactly %s "
           "calls (last run: %.0f recorded as events).\n\n", reps, n, n, recorded);
    printf("| measurement | ns per call |\n| --- | --- |\n");
    printf("| untraced traced_fn() | %.1f |\n", base);
    printf("| traced, sampled: counting jump (whole loop) | %.1f |\n", counted);
    printf("| **cost of exact counting per call** | **%.1f** |\n", counted - base);
    return 0;
}
