/*
 * bench_pybreak.c - breakpoints in Python code, beside pdb on the same program in the
 * same run (bench/pybreak.py; its work(n) has its first line on line 14), and a
 * stacks snapshot of 16 Python threads.
 *
 *  1. Breakpoint hit to pause answer: a line breakpoint on work's first line of a
 *     program that loops forever; each sample is one debug_continue {action:
 *     "until"} round trip through the daemon socket (resume, run to the next hit,
 *     answer with the Python frames, arguments and locals). pdb: `python -m pdb
 *     pybreak.py 0` on a pipe, the same breakpoint; each sample is one `c` until its
 *     next "(Pdb) " prompt (its answer: the line it stopped at).
 *  2. A false condition per hit: the breakpoint with condition `n < 0` on a
 *     K-call loop the program times itself; per hit = (loop - plain loop) / K.
 *     Strobe: given to debug_launch (set before the first line); pdb: `b 14, n < 0`
 *     then `c`.
 *  3. Every thread's stack: debug_session stacks of pybreak.py threads16 (16 threads
 *     waiting on an Event, the main thread joining), each sample one round trip:
 *     the native stacks with each thread's Python frames joined.
 *
 *   bench_pybreak PYTHON PYBREAK N K RUNS      (STROBE_HOME chooses the daemon)
 * Round trips: N per run, the median over all RUNS x N; conditions: median of RUNS.
 * Prints Markdown tables and the ratios strobe / pdb.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"

enum { WORK_BODY = 14 };

static const char *python, *pybreak;

/* ---- strobe ----------------------------------------------------------------------- */

/* Launches pybreak.py arg with a breakpoint on work's body (condition may be NULL)
 * given to the launch; the session id into sid. */
static void launch(struct rpc_client *c, const char *arg, const char *condition, char *sid,
                   size_t cap)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", pybreak);
    *strrchr(root, '/') = '\0';
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", python);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *argv = cJSON_AddArrayToObject(req, "args");
    cJSON_AddItemToArray(argv, cJSON_CreateString(pybreak));
    cJSON_AddItemToArray(argv, cJSON_CreateString(arg));
    if (strcmp(arg, "threads16") != 0) {
        cJSON *spec = cJSON_CreateObject();
        cJSON_AddStringToObject(spec, "file", "pybreak.py");
        cJSON_AddNumberToObject(spec, "line", WORK_BODY);
        if (condition)
            cJSON_AddStringToObject(spec, "condition", condition);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "breakpoints"), spec);
    }
    cJSON *res = bench_tool(c, "debug_launch", req);
    snprintf(sid, cap, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);
}

/* One debug_continue until the next stop; checks it paused at work's body; ms. */
static double strobe_continue(struct rpc_client *c, const char *sid)
{
    cJSON *args = bench_session_args(sid);
    cJSON_AddStringToObject(args, "action", "until");
    double t0 = now_ms();
    cJSON *res = bench_tool(c, "debug_continue", args);
    double ms = now_ms() - t0;
    cJSON *state = cJSON_GetObjectItem(res, "state"), *line = cJSON_GetObjectItem(res, "line");
    if (!cJSON_IsString(state) || strcmp(state->valuestring, "paused") != 0 ||
        !cJSON_IsNumber(line) || line->valueint != WORK_BODY) {
        char *text = cJSON_PrintUnformatted(res);
        fprintf(stderr, "bench_pybreak: debug_continue: unexpected answer %s\n", text);
        exit(1);
    }
    cJSON_Delete(res);
    return ms;
}

static void strobe_hits(struct rpc_client *c, int n, double *out)
{
    char sid[128];
    launch(c, "0", NULL, sid, sizeof sid);
    strobe_continue(c, sid); /* the first hit */
    for (int i = 0; i < n; i++)
        out[i] = strobe_continue(c, sid);
    bench_stop_session(c, sid);
}

/* The loop ns of a K-call run with a never-true condition on work's body. */
static double strobe_condition(struct rpc_client *c, const char *k)
{
    char sid[128];
    launch(c, k, "n < 0", sid, sizeof sid);
    char *done;
    while (!(done = bench_stdout_with(c, sid, "elapsed_ns=")))
        usleep(2000);
    double ns = atof(strstr(done, "elapsed_ns=") + 11);
    free(done);
    bench_stop_session(c, sid);
    return ns;
}

/* Samples n stacks round trips of 16 waiting Python threads into out. */
static void strobe_stacks(struct rpc_client *c, int n, double *out)
{
    char sid[128];
    launch(c, "threads16", NULL, sid, sizeof sid);
    char *ready;
    while (!(ready = bench_stdout_with(c, sid, "ready")))
        usleep(2000);
    free(ready);
    for (int i = 0; i < n; i++) {
        cJSON *args = bench_session_args(sid);
        cJSON_AddStringToObject(args, "action", "stacks");
        double t0 = now_ms();
        cJSON *res = bench_tool(c, "debug_session", args);
        out[i] = now_ms() - t0;
        char *text = cJSON_PrintUnformatted(res);
        int waits = 0;
        for (const char *p = text; (p = strstr(p, "threading.Event.wait")); p++)
            waits++;
        if (waits < 16) {
            fprintf(stderr, "bench_pybreak: stacks without 16 Python waits: %.2000s\n", text);
            exit(1);
        }
        free(text);
        cJSON_Delete(res);
    }
    bench_stop_session(c, sid);
}

/* ---- pdb ---------------------------------------------------------------------------- */

struct pdb {
    pid_t pid;
    int in, out;
};

static void pdb_start(struct pdb *p, const char *arg)
{
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0)
        exit(1);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        dup2(from[1], 2);
        close(to[1]);
        close(from[0]);
        execl(python, python, "-m", "pdb", pybreak, arg, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = to[1];
    p->out = from[0];
}

/* Sends line and reads until the next "(Pdb) " prompt; what was printed into buf
 * (cap bytes, the last ones kept). Exits when pdb ends first. */
static void pdb_do(struct pdb *p, const char *line, char *buf, size_t cap)
{
    if (line && (write(p->in, line, strlen(line)) < 0 || write(p->in, "\n", 1) < 0))
        exit(1);
    size_t n = 0;
    buf[0] = '\0';
    for (;;) {
        if (n + 1 >= cap) { /* keep the tail: the prompt is at the end */
            memmove(buf, buf + cap / 2, n - cap / 2);
            n -= cap / 2;
        }
        ssize_t k = read(p->out, buf + n, cap - 1 - n);
        if (k <= 0) {
            fprintf(stderr, "bench_pybreak: pdb ended during %s\n", line ? line : "start");
            exit(1);
        }
        n += (size_t)k;
        buf[n] = '\0';
        if (n >= 6 && strcmp(buf + n - 6, "(Pdb) ") == 0)
            return;
    }
}

static void pdb_end(struct pdb *p)
{
    kill(p->pid, SIGKILL);
    close(p->in);
    close(p->out);
    waitpid(p->pid, NULL, 0);
}

static void pdb_hits(int n, double *out)
{
    struct pdb p;
    char buf[8192], cmd[64];
    pdb_start(&p, "0");
    pdb_do(&p, NULL, buf, sizeof buf);
    snprintf(cmd, sizeof cmd, "b %d", WORK_BODY);
    pdb_do(&p, cmd, buf, sizeof buf);
    pdb_do(&p, "c", buf, sizeof buf); /* the first hit */
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        pdb_do(&p, "c", buf, sizeof buf);
        out[i] = now_ms() - t0;
        if (!strstr(buf, "pybreak.py(14)work()")) {
            fprintf(stderr, "bench_pybreak: pdb stopped elsewhere: %s\n", buf);
            exit(1);
        }
    }
    pdb_end(&p);
}

static double pdb_condition(const char *k)
{
    struct pdb p;
    char buf[8192], cmd[64];
    pdb_start(&p, k);
    pdb_do(&p, NULL, buf, sizeof buf);
    snprintf(cmd, sizeof cmd, "b %d, n < 0", WORK_BODY);
    pdb_do(&p, cmd, buf, sizeof buf);
    pdb_do(&p, "c", buf, sizeof buf); /* runs to the end: "The program finished" */
    const char *e = strstr(buf, "elapsed_ns=");
    if (!e) {
        fprintf(stderr, "bench_pybreak: pdb's run printed no elapsed_ns: %s\n", buf);
        exit(1);
    }
    double ns = atof(e + 11);
    pdb_end(&p);
    return ns;
}

/* ---- main --------------------------------------------------------------------------- */

static double p95(double *v, int n)
{
    median(v, n);
    return v[(n * 95) / 100];
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bench_pybreak PYTHON PYBREAK N K RUNS\n");
        return 64;
    }
    python = argv[1];
    pybreak = argv[2];
    const char *k = argv[4];
    int n = atoi(argv[3]), runs = atoi(argv[5]);
    double iters = atof(k);
    if (n < 1 || runs < 1 || iters < 1)
        return 64;
    if (access(python, X_OK) != 0) {
        printf("Skipped: %s is not installed.\n", python);
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rpc_client c;
    bench_connect(&c, "bench_pybreak");
    int total = n * runs;
    double *sh = calloc((size_t)total, sizeof *sh), *ph = calloc((size_t)total, sizeof *ph);
    double *st = calloc((size_t)total, sizeof *st);
    double *plain = calloc((size_t)runs, sizeof *plain), *sc = calloc((size_t)runs, sizeof *sc),
           *pc = calloc((size_t)runs, sizeof *pc);
    for (int r = 0; r < runs; r++) {
        strobe_hits(&c, n, sh + r * n);
        pdb_hits(n, ph + r * n);
        strobe_stacks(&c, n, st + r * n);
        char *pa[] = {(char *)python, (char *)pybreak, (char *)k, NULL};
        plain[r] = bench_run_elapsed(pa);
        sc[r] = strobe_condition(&c, k);
        pc[r] = pdb_condition(k);
    }
    double msh = median(sh, total), mph = median(ph, total);
    printf("| round trip (%d x %d) | strobe median ms | strobe p95 ms | pdb median ms | pdb p95 "
           "ms | strobe / pdb |\n|---|---|---|---|---|---|\n", runs, n);
    printf("| breakpoint hit -> pause answer (debug_continue until / pdb `c`) | %.3f | %.3f | "
           "%.3f | %.3f | %.2f |\n", msh, p95(sh, total), mph, p95(ph, total), msh / mph);
    double p = median(plain, runs), s = median(sc, runs), g = median(pc, runs);
    printf("\n| %s calls, a false condition (n < 0) on each | runs | loop ms | per call us "
           "|\n|---|---|---|---|\n", k);
    printf("| plain | %d | %.2f | %.4f |\n", runs, p / 1e6, p / iters / 1e3);
    printf("| strobe (debug_launch breakpoints, condition) | %d | %.2f | %.2f |\n", runs,
           s / 1e6, (s - p) / iters / 1e3);
    printf("| pdb (b 14, n < 0; c) | %d | %.2f | %.2f |\n", runs, g / 1e6,
           (g - p) / iters / 1e3);
    printf("\n| every thread's stack, 16 Python threads waiting (%d x %d) | median ms | p95 ms "
           "|\n|---|---|---|\n| debug_session stacks | %.3f | %.3f |\n", runs, n,
           median(st, total), p95(st, total));
    printf("\nstrobe / pdb: hit %.2f, false condition per call %.2f\n", msh / mph,
           (s - p) / (g - p));
    free(sh);
    free(ph);
    free(st);
    free(plain);
    free(sc);
    free(pc);
    rpc_close(&c);
    return 0;
}
