/*
 * bench_break.c - what breakpoints, conditions and steps cost, beside gdb on the same
 * fixture in the same run. The fixture bench_break ("N [wait]") calls work(i) in a
 * loop, line 52, whose first line is line 27 (tests/fixtures/bench_break.c).
 *
 *  1. Breakpoint hit to pause answer: a line breakpoint on work's first line of a
 *     program that loops forever; each sample is one round trip of debug_continue
 *     {action: "until"} (no condition: resume, run to the next hit, answer with the
 *     thread, frames, arguments and locals) through the daemon socket. gdb: the same
 *     breakpoint in `gdb --interpreter=mi2` driven over a pipe; each sample is one
 *     -exec-continue until its *stopped record (gdb's answer, with the frame and its
 *     arguments).
 *  2. A false condition per hit: the same breakpoint with condition `n < 0` (never
 *     true) on a K-iteration loop the fixture times itself; per hit = (loop time -
 *     plain loop time) / K. Strobe: set through the socket while the program waits,
 *     then SIGUSR1 starts the loop. gdb: `gdb -batch -ex 'break bench_break.c:27 if
 *     n < 0' -ex run`.
 *  3. Step-over: from a stop at main's call line (breakpoint then removed), each
 *     sample is one debug_continue {action: "step-over"} round trip (the loop
 *     alternates the `for` line and the call line, stepping over work()); gdb: one
 *     MI -exec-next until *stopped.
 *
 *   bench_break PROGRAM N K RUNS      (STROBE_HOME chooses the daemon)
 * Round trips: N per run, the median over all RUNS x N; conditions: median of RUNS.
 * Prints Markdown tables and the ratios strobe / gdb.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"

enum { WORK_BODY = 27, FOR_LINE = 51, LOOP_CALL = 52 };

/* ---- strobe ----------------------------------------------------------------------- */

/* Adds a line breakpoint (condition may be NULL); returns its id. */
static int add_break(struct rpc_client *c, const char *sid, int line, const char *condition)
{
    cJSON *args = bench_session_args(sid);
    cJSON *spec = cJSON_CreateObject();
    cJSON_AddStringToObject(spec, "file", "bench_break.c");
    cJSON_AddNumberToObject(spec, "line", line);
    if (condition)
        cJSON_AddStringToObject(spec, "condition", condition);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "add"), spec);
    cJSON *res = bench_tool(c, "debug_breakpoint", args);
    int id = (int)cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(res,
                                                                              "breakpoints"),
                                                         0),
                                      "id")
                 ->valuedouble;
    cJSON_Delete(res);
    return id;
}

static void remove_break(struct rpc_client *c, const char *sid, int id)
{
    cJSON *args = bench_session_args(sid);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(args, "remove"), cJSON_CreateNumber(id));
    cJSON_Delete(bench_tool(c, "debug_breakpoint", args));
}

/* One debug_continue of action; checks it paused for reason on one of the lines (0 =
 * any); ms of the round trip. */
static double strobe_continue(struct rpc_client *c, const char *sid, const char *action,
                              const char *reason, int line_a, int line_b)
{
    cJSON *args = bench_session_args(sid);
    cJSON_AddStringToObject(args, "action", action);
    double t0 = now_ms();
    cJSON *res = bench_tool(c, "debug_continue", args);
    double ms = now_ms() - t0;
    cJSON *state = cJSON_GetObjectItem(res, "state"), *why = cJSON_GetObjectItem(res, "reason"),
          *line = cJSON_GetObjectItem(res, "line");
    if (!cJSON_IsString(state) || strcmp(state->valuestring, "paused") != 0 ||
        !cJSON_IsString(why) || strcmp(why->valuestring, reason) != 0 || !cJSON_IsNumber(line) ||
        (line_a && line->valueint != line_a && line->valueint != line_b)) {
        char *text = cJSON_PrintUnformatted(res);
        fprintf(stderr, "bench_break: debug_continue %s: unexpected answer %s\n", action, text);
        exit(1);
    }
    cJSON_Delete(res);
    return ms;
}

/* Samples n hit round trips into out; a program looping forever. */
static void strobe_hits(struct rpc_client *c, const char *program, int n, double *out)
{
    const char *const run_args[] = {"0"};
    char sid[128];
    bench_launch_ready(c, program, run_args, 1, sid, sizeof sid);
    add_break(c, sid, WORK_BODY, NULL);
    strobe_continue(c, sid, "until", "breakpoint", WORK_BODY, WORK_BODY); /* first hit */
    for (int i = 0; i < n; i++)
        out[i] = strobe_continue(c, sid, "until", "breakpoint", WORK_BODY, WORK_BODY);
    bench_stop_session(c, sid);
}

/* Samples n step-over round trips into out, from a stop at the call line. */
static void strobe_steps(struct rpc_client *c, const char *program, int n, double *out)
{
    const char *const run_args[] = {"0"};
    char sid[128];
    bench_launch_ready(c, program, run_args, 1, sid, sizeof sid);
    int id = add_break(c, sid, LOOP_CALL, NULL);
    strobe_continue(c, sid, "until", "breakpoint", LOOP_CALL, LOOP_CALL);
    remove_break(c, sid, id);
    for (int i = 0; i < n; i++)
        out[i] = strobe_continue(c, sid, "step-over", "step", FOR_LINE, LOOP_CALL);
    bench_stop_session(c, sid);
}

/* The loop ns of a K-iteration run with a never-true condition on work's first
 * line; *hits gets the breakpoint's hits (those whose condition held: 0). */
static double strobe_condition(struct rpc_client *c, const char *program, const char *k,
                               long long *hits)
{
    const char *const run_args[] = {k, "wait"};
    char sid[128];
    pid_t pid = bench_launch_ready(c, program, run_args, 2, sid, sizeof sid);
    add_break(c, sid, WORK_BODY, "n < 0");
    kill(pid, SIGUSR1);
    char *done;
    while (!(done = bench_stdout_with(c, sid, "elapsed_ns=")))
        usleep(2000);
    double ns = atof(strstr(done, "elapsed_ns=") + 11);
    free(done);
    cJSON *res = bench_tool(c, "debug_breakpoint", bench_session_args(sid));
    *hits = (long long)cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(res,
                                                                                  "breakpoints"),
                                                              0),
                                           "hits")
                ->valuedouble;
    cJSON_Delete(res);
    bench_stop_session(c, sid);
    return ns;
}

/* ---- gdb ---------------------------------------------------------------------------- */

struct gdb_mi {
    pid_t pid;
    FILE *in, *out;
};

static void mi_start(struct gdb_mi *g, const char *program)
{
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        exit(1);
    g->pid = fork();
    if (g->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(to[1]);
        close(from[0]);
        execlp("gdb", "gdb", "-q", "-nx", "--interpreter=mi2", "--args", program, "0",
               (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    g->in = fdopen(to[1], "w");
    g->out = fdopen(from[0], "r");
}

/* Sends command and reads gdb's records until one starting with until_prefix;
 * exits when gdb ends first or the record lacks want (NULL: anything). */
static void mi_do(struct gdb_mi *g, const char *command, const char *until_prefix,
                  const char *want)
{
    fprintf(g->in, "%s\n", command);
    fflush(g->in);
    char line[65536];
    while (fgets(line, sizeof line, g->out)) {
        if (strncmp(line, until_prefix, strlen(until_prefix)) != 0)
            continue;
        if (want && !strstr(line, want)) {
            fprintf(stderr, "bench_break: gdb %s: unexpected %s", command, line);
            exit(1);
        }
        return;
    }
    fprintf(stderr, "bench_break: gdb ended during %s\n", command);
    exit(1);
}

/* -gdb-exit kills the program; gdb's output is read to its end so that gdb is gone
 * (and the program with it) before the next measurement. */
static void mi_end(struct gdb_mi *g)
{
    fprintf(g->in, "-gdb-exit\n");
    fclose(g->in);
    char line[4096];
    while (fgets(line, sizeof line, g->out))
        ;
    fclose(g->out);
    waitpid(g->pid, NULL, 0);
}

static double mi_timed(struct gdb_mi *g, const char *command, const char *want)
{
    double t0 = now_ms();
    mi_do(g, command, "*stopped", want);
    return now_ms() - t0;
}

static void gdb_hits(const char *program, int n, double *out)
{
    struct gdb_mi g;
    mi_start(&g, program);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "-break-insert bench_break.c:%d", WORK_BODY);
    mi_do(&g, cmd, "^", "^done");
    mi_do(&g, "-exec-run", "*stopped", "breakpoint-hit");
    for (int i = 0; i < n; i++)
        out[i] = mi_timed(&g, "-exec-continue", "breakpoint-hit");
    mi_end(&g);
}

static void gdb_steps(const char *program, int n, double *out)
{
    struct gdb_mi g;
    mi_start(&g, program);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "-break-insert bench_break.c:%d", LOOP_CALL);
    mi_do(&g, cmd, "^", "^done");
    mi_do(&g, "-exec-run", "*stopped", "breakpoint-hit");
    mi_do(&g, "-break-delete 1", "^", "^done");
    for (int i = 0; i < n; i++)
        out[i] = mi_timed(&g, "-exec-next", "end-stepping-range");
    mi_end(&g);
}


/* ---- main --------------------------------------------------------------------------- */

static double p95(double *v, int n)
{
    median(v, n);
    return v[(n * 95) / 100];
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_break PROGRAM N K RUNS\n");
        return 64;
    }
    const char *program = argv[1], *k = argv[3];
    int n = atoi(argv[2]), runs = atoi(argv[4]);
    double iters = atof(k);
    if (n < 1 || runs < 1 || iters < 1)
        return 64;
    if (system("command -v gdb >/dev/null 2>&1") != 0) {
        fprintf(stderr, "bench_break: gdb is not installed (scripts/deps.sh bench)\n");
        return 1;
    }
    struct rpc_client c;
    bench_connect(&c, "bench_break");
    int total = n * runs;
    double *sh = calloc((size_t)total, sizeof *sh), *gh = calloc((size_t)total, sizeof *gh);
    double *ss = calloc((size_t)total, sizeof *ss), *gs = calloc((size_t)total, sizeof *gs);
    double *plain = calloc((size_t)runs, sizeof *plain), *sc = calloc((size_t)runs, sizeof *sc),
           *gc = calloc((size_t)runs, sizeof *gc);
    long long hits = 0;
    char bp_cond[64];
    snprintf(bp_cond, sizeof bp_cond, "break bench_break.c:%d if n < 0", WORK_BODY);
    for (int r = 0; r < runs; r++) {
        strobe_hits(&c, program, n, sh + r * n);
        gdb_hits(program, n, gh + r * n);
        strobe_steps(&c, program, n, ss + r * n);
        gdb_steps(program, n, gs + r * n);
        char *pa[] = {(char *)program, (char *)k, NULL};
        plain[r] = bench_run_elapsed(pa);
        sc[r] = strobe_condition(&c, program, k, &hits);
        char *ga[] = {"gdb", "-q", "-batch", "-nx", "-ex", bp_cond, "-ex", "run", "--args",
                      (char *)program, (char *)k, NULL};
        gc[r] = bench_run_elapsed(ga);
    }
    double msh = median(sh, total), mgh = median(gh, total);
    double mss = median(ss, total), mgs = median(gs, total);
    printf("| round trip (%d x %d) | strobe median ms | strobe p95 ms | gdb median ms | gdb p95 "
           "ms | strobe / gdb |\n|---|---|---|---|---|---|\n", runs, n);
    printf("| breakpoint hit -> pause answer (debug_continue until / MI -exec-continue) | "
           "%.3f | %.3f | %.3f | %.3f | %.2f |\n", msh, p95(sh, total), mgh, p95(gh, total),
           msh / mgh);
    printf("| step-over (debug_continue step-over / MI -exec-next) | %.3f | %.3f | %.3f | "
           "%.3f | %.2f |\n", mss, p95(ss, total), mgs, p95(gs, total), mss / mgs);
    double p = median(plain, runs), s = median(sc, runs), g = median(gc, runs);
    printf("\n| %s hits of a false condition (n < 0) | runs | loop ms | per hit us | hits "
           "paused |\n|---|---|---|---|---|\n", k);
    printf("| plain | %d | %.2f | %.4f | - |\n", runs, p / 1e6, p / iters / 1e3);
    printf("| strobe (debug_breakpoint condition) | %d | %.2f | %.2f | %lld |\n", runs,
           s / 1e6, (s - p) / iters / 1e3, hits);
    printf("| gdb (break ... if n < 0, -batch run) | %d | %.2f | %.2f | - |\n", runs, g / 1e6,
           (g - p) / iters / 1e3);
    printf("\nstrobe / gdb: hit %.2f, step-over %.2f, false condition per hit %.2f\n",
           msh / mgh, mss / mgs, (s - p) / (g - p));
    free(sh);
    free(gh);
    free(ss);
    free(gs);
    free(plain);
    free(sc);
    free(gc);
    rpc_close(&c);
    return 0;
}
