/*
 * bench_trace.c - the cost of one traced call, measured side by side in one run on
 * the same fixture (tests/fixtures/bench_calls.c, which times its own loops):
 *
 *   - the untraced call (the fixture alone);
 *   - the raw ptrace stop floor: a child runs N int3 instructions, this process
 *     answers each stop with waitpid -> GETREGS -> SETREGS -> CONT, the least a hook
 *     does; "two raw stops" (entry + return) is the reference of the goals;
 *   - Strobe tracing traced_fn (enter + exit, then enter only with
 *     trace.captureExits = 0) through a private daemon and the real socket;
 *   - ltrace on getppid() and gdb with a `commands / silent / continue` breakpoint
 *     on traced_fn, per hit;
 *   - Strobe tracing traced_fn with output.orderAtTraps 0: the pipes are not
 *     drained at each trap (the cost of output in true order, CPU 0);
 *   - each with tracer and target on one CPU (taskset -c 0 semantics: the affinity
 *     is set before the daemon / tracer is started and inherited) and unpinned.
 *
 *   bench_trace FIXTURE [N [REPS]]    (N traced calls per run, default 20000;
 *                                      REPS repetitions, default 5; medians)
 * Needs `strobe` on PATH (scripts/run-bench.sh puts the build's first); ltrace and
 * gdb rows are skipped when those are missing. Prints Markdown tables on stdout.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "cli/client.h"

extern char **environ;

static int reps = 5;
static long n_traced = 20000;
static const long N_UNTRACED = 2000000;
static const long N_FOREIGN = 5000; /* ltrace and gdb: 100-400 us per hit */
static const char *fixture;
static char fixture_dir[4096];
static cpu_set_t free_set; /* the affinity this program started with */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "bench_trace: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(1);
}

/* Pins this process (and so whatever it starts from now on) to CPU 0, or gives it
 * back the affinity it started with. */
static void pin(bool on)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof(cpu_set_t), on ? &one : &free_set) != 0)
        die("sched_setaffinity: %s", strerror(errno));
}

/* ---- running a program and reading the fixture's numbers ---------------------- */

/* Value of "KEY <number>" in text, or -1. */
static double find_value(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = text; (p = strstr(p, key)); p += kl)
        if ((p == text || p[-1] == '\n') && p[kl] == ' ')
            return atof(p + kl + 1);
    return -1;
}

/* Runs argv (PATH search) with stdout on a pipe, stderr and stdin on /dev/null;
 * returns its stdout (malloc'd), or NULL when it could not run or failed. */
static char *run_capture(char *const argv[])
{
    int p[2];
    if (pipe(p) != 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", 0, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return NULL;
    }
    return bench_read_child(p[0], pid);
}

/* ns per call the fixture reports for key ("traced_fn" or "libcall"), -1 on failure. */
static double run_fixture(char *const argv[], const char *key)
{
    char *out = run_capture(argv);
    if (!out)
        return -1;
    char k[64];
    snprintf(k, sizeof k, "%s_ns_per_call", key);
    double v = find_value(out, k);
    free(out);
    return v;
}

static bool have(const char *prog)
{
    char *argv[] = {(char *)prog, "--version", NULL};
    char *out = run_capture(argv);
    free(out);
    return out != NULL;
}

/* ---- raw ptrace stop floor ----------------------------------------------------- */

enum placement { SAME_CPU, FREE_CPU, CROSS_CPU };

/* us per int3 stop answered with GETREGS + SETREGS + CONT. */
static double raw_stop_us(long n, enum placement where)
{
    if (where == SAME_CPU)
        pin(true);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        if (where == CROSS_CPU) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(1, &one);
            sched_setaffinity(0, sizeof one, &one);
        }
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        for (long i = 0; i < n; i++)
            __asm__ volatile("int3");
        _exit(0);
    }
    if (where == CROSS_CPU) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
        die("raw floor: child did not stop%s", "");
    long stops = 0;
    double t0 = now_ns();
    ptrace(PTRACE_CONT, pid, 0, 0);
    for (;;) {
        if (waitpid(pid, &st, 0) != pid)
            die("waitpid: %s", strerror(errno));
        if (!WIFSTOPPED(st))
            break;
        struct user_regs_struct regs;
        ptrace(PTRACE_GETREGS, pid, 0, &regs);
        ptrace(PTRACE_SETREGS, pid, 0, &regs);
        stops++;
        ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st));
    }
    double t1 = now_ns();
    pin(false);
    if (stops != n)
        fprintf(stderr, "bench_trace: raw floor saw %ld stops, expected %ld\n", stops, n);
    return (t1 - t0) / 1e3 / (double)n;
}

/* ---- Strobe through the daemon -------------------------------------------------- */

static cJSON *tool(struct rpc_client *c, const char *name, cJSON *args)
{
    char err[1024];
    cJSON *value = rpc_call_tool(c, name, args, err, sizeof err);
    if (!value)
        die("%s", err);
    return value;
}

struct daemon {
    char home[4096]; /* empty: nothing to stop */
    struct rpc_client c;
    bool connected;
    bool pin_cpu;    /* trace.pinCpu for its sessions */
};

static int order_at_traps = 1; /* output.orderAtTraps of the next runs */

static void write_settings(struct daemon *d, int capture_exits)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/settings.json", d->home);
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write %s", path);
    fprintf(f, "{\"trace.mode\": \"int3\", \"trace.hotCallsPerSecond\": 10000000, "
               "\"trace.overheadBudgetPercent\": 100, "
               "\"trace.captureExits\": %d, \"trace.pinCpu\": %d, \"output.orderAtTraps\": %d}\n",
            capture_exits, d->pin_cpu, order_at_traps);
    fclose(f);
}

/* Starts a daemon in a fresh STROBE_HOME under root. pinned: its sessions run
 * with trace.pinCpu 1 (the default: the tracer pins itself and the target's main
 * thread to one CPU); otherwise 0 (the scheduler places both). */
static void daemon_start(struct daemon *d, const char *root, const char *name, bool pinned)
{
    snprintf(d->home, sizeof d->home, "%s/%s", root, name);
    if (mkdir(d->home, 0700) != 0)
        die("mkdir: %s", strerror(errno));
    d->pin_cpu = pinned;
    write_settings(d, 1);
    setenv("STROBE_HOME", d->home, 1);
    char err[256];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0)
        die("%s", err);
    rpc_init(&d->c, fd);
    d->connected = true;
    if (rpc_handshake(&d->c, "bench_trace", err, sizeof err) != 0)
        die("%s", err);
    cJSON *args = cJSON_CreateObject();
    cJSON *add = cJSON_AddArrayToObject(args, "add");
    cJSON_AddItemToArray(add, cJSON_CreateString("traced_fn"));
    cJSON_Delete(tool(&d->c, "debug_trace", args));
}

static void daemon_stop(struct daemon *d)
{
    if (!d->home[0])
        return;
    if (d->connected)
        rpc_close(&d->c);
    d->connected = false;
    char path[4200];
    snprintf(path, sizeof path, "%s/strobe.pid", d->home);
    bench_stop_daemon(path);
    d->home[0] = '\0';
}

/* Whatever way this program ends (die() included): daemons stopped, files gone. */
static struct daemon dp, df; /* pinned to CPU 0, free */
static char root[] = "/tmp/strobe-bench-trace.XXXXXX";
static bool have_root;

static void cleanup(void)
{
    daemon_stop(&dp);
    daemon_stop(&df);
    if (!have_root)
        return;
    have_root = false;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_trace: could not remove %s\n", root);
}

static double num(cJSON *o, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

struct strobe_run {
    double ns_per_call;
    double enters, exits;
};

/* One launch of the fixture under the daemon, traced_fn armed before main. */
static struct strobe_run strobe_once(struct daemon *d, int capture_exits)
{
    write_settings(d, capture_exits);
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n_traced);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "command", fixture);
    cJSON_AddStringToObject(args, "projectRoot", fixture_dir);
    cJSON *av = cJSON_AddArrayToObject(args, "args");
    cJSON_AddItemToArray(av, cJSON_CreateString(nbuf));
    cJSON_AddItemToArray(av, cJSON_CreateString("fn"));
    cJSON *res = tool(&d->c, "debug_launch", args);
    if (num(res, "pendingPatternsApplied") < 1)
        die("debug_launch did not apply the pending pattern traced_fn%s", "");
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);

    struct strobe_run r = {-1, 0, 0};
    for (int polls = 0;; polls++) {
        usleep(20000);
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        cJSON_AddStringToObject(args, "sessionId", sid);
        res = tool(&d->c, "debug_session", args);
        cJSON *st = cJSON_GetObjectItem(res, "status");
        bool running = cJSON_IsString(st) && strcmp(st->valuestring, "running") == 0;
        if (!running) {
            if (strcmp(st->valuestring, "exited") != 0)
                die("the traced fixture ended %s", st->valuestring);
            cJSON *counts = cJSON_GetObjectItem(res, "eventCounts");
            r.enters = num(counts, "function_enter");
            r.exits = num(counts, "function_exit");
        }
        cJSON_Delete(res);
        if (!running)
            break;
        if (polls > 3000)
            die("the traced fixture still runs after a minute%s", "");
    }
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "eventType", "stdout");
    res = tool(&d->c, "debug_query", args);
    cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(res, "events"))
    {
        cJSON *t = cJSON_GetObjectItem(ev, "text");
        if (cJSON_IsString(t) && find_value(t->valuestring, "traced_fn_ns_per_call") >= 0)
            r.ns_per_call = find_value(t->valuestring, "traced_fn_ns_per_call");
    }
    cJSON_Delete(res);
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "delete");
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_Delete(tool(&d->c, "debug_session", args));
    if (r.ns_per_call < 0)
        die("no traced_fn_ns_per_call line in the session's stdout%s", "");
    /* The run must really have been traced: every call an event, none sampled away. */
    double want = 0.99 * (double)n_traced;
    if (r.enters < want || (capture_exits && r.exits < want)) {
        fprintf(stderr, "bench_trace: expected %ld function_enter%s events, got %.0f / %.0f\n",
                n_traced, capture_exits ? " and function_exit" : "", r.enters, r.exits);
        exit(1);
    }
    return r;
}

/* ---- main ------------------------------------------------------------------------ */

struct row {
    const char *what;
    double us;       /* per call / hit */
    double ref_us;   /* two raw stops on the same placement; 0: none */
    char note[256];
};

static void print_row(const struct row *r)
{
    if (r->us < 0) {
        printf("| %s | - | - | %s |\n", r->what, r->note);
        return;
    }
    if (r->ref_us > 0)
        printf("| %s | %.2f | %.2fx | %s |\n", r->what, r->us, r->us / r->ref_us, r->note);
    else
        printf("| %s | %.3f | - | %s |\n", r->what, r->us, r->note);
}

static void goal_row(const char *what, double ratio, const char *target, bool pass)
{
    if (ratio <= 0)
        printf("| %s | - | %s | not measured |\n", what, target);
    else
        printf("| %s | %.2fx | %s | %s |\n", what, ratio, target, pass ? "PASS" : "MISS");
}

/* Median us per hit of a foreign tracer (argv[0] found on PATH) over reps, minus the
 * untraced ns per call; -1 when it cannot run. */
static double foreign_us(char *const argv[], const char *key, double untraced_ns,
                         bool pinned, int n_reps)
{
    double v[16];
    int k = 0;
    for (int i = 0; i < n_reps && i < 16; i++) {
        if (pinned)
            pin(true);
        double ns = run_fixture(argv, key);
        pin(false);
        if (ns < 0)
            return -1;
        v[k++] = (ns - untraced_ns) / 1e3;
    }
    return median(v, k);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_trace FIXTURE [N [REPS]]\n");
        return 64;
    }
    static char abs_fixture[4096];
    if (!realpath(argv[1], abs_fixture))
        die("cannot find %s", argv[1]);
    fixture = abs_fixture;
    snprintf(fixture_dir, sizeof fixture_dir, "%s", fixture);
    *strrchr(fixture_dir, '/') = '\0';
    if (argc > 2 && atol(argv[2]) > 0)
        n_traced = atol(argv[2]);
    if (argc > 3 && atoi(argv[3]) > 0)
        reps = atoi(argv[3]) > 15 ? 15 : atoi(argv[3]);
    if (sched_getaffinity(0, sizeof free_set, &free_set) != 0)
        die("sched_getaffinity: %s", strerror(errno));
    bool two_cpus = CPU_COUNT(&free_set) >= 2 && CPU_ISSET(0, &free_set) &&
                    CPU_ISSET(1, &free_set);
    signal(SIGPIPE, SIG_IGN);

    if (!mkdtemp(root))
        die("mkdtemp: %s", strerror(errno));
    have_root = true;
    atexit(cleanup);

    /* Untraced baseline: the fixture alone, both phases. */
    char nu[32];
    snprintf(nu, sizeof nu, "%ld", N_UNTRACED);
    char *plain[] = {(char *)fixture, nu, "both", NULL};
    double fn_ns[16], lib_ns[16];
    for (int i = 0; i < reps; i++) {
        fn_ns[i] = run_fixture(plain, "traced_fn");
        lib_ns[i] = run_fixture(plain, "libcall");
        if (fn_ns[i] < 0 || lib_ns[i] < 0)
            die("%s did not run", fixture);
    }
    double base_fn = median(fn_ns, reps), base_lib = median(lib_ns, reps);

    /* Raw ptrace floor. */
    double raw_same[16], raw_free[16], raw_cross[16];
    for (int i = 0; i < reps; i++) {
        raw_same[i] = raw_stop_us(n_traced, SAME_CPU);
        raw_free[i] = raw_stop_us(n_traced, FREE_CPU);
        raw_cross[i] = two_cpus ? raw_stop_us(n_traced, CROSS_CPU) : -1;
    }
    double floor_same = median(raw_same, reps), floor_free = median(raw_free, reps);
    double floor_cross = median(raw_cross, reps);

    /* Strobe: one daemon pinned to CPU 0, one free; runs interleaved. */
    daemon_start(&dp, root, "pinned", true);
    daemon_start(&df, root, "free", false);
    double t_pin[16], t_free[16], e_pin[16], e_free[16], nod_pin[16], enters = 0, exits = 0;
    strobe_once(&dp, 1); /* warm the page cache, the DWARF index and both daemons */
    strobe_once(&df, 1);
    for (int i = 0; i < reps; i++) {
        struct strobe_run r = strobe_once(&dp, 1);
        t_pin[i] = (r.ns_per_call - base_fn) / 1e3;
        enters = r.enters;
        exits = r.exits;
        t_free[i] = (strobe_once(&df, 1).ns_per_call - base_fn) / 1e3;
        e_pin[i] = (strobe_once(&dp, 0).ns_per_call - base_fn) / 1e3;
        e_free[i] = (strobe_once(&df, 0).ns_per_call - base_fn) / 1e3;
        order_at_traps = 0;
        nod_pin[i] = (strobe_once(&dp, 1).ns_per_call - base_fn) / 1e3;
        order_at_traps = 1;
    }
    daemon_stop(&dp);
    daemon_stop(&df);
    double traced_pin = median(t_pin, reps), traced_free = median(t_free, reps);
    double enter_pin = median(e_pin, reps), enter_free = median(e_free, reps);
    double nodrain_pin = median(nod_pin, reps);

    /* ltrace and gdb, per hit. */
    int freps = reps < 3 ? reps : 3;
    char nf[32];
    snprintf(nf, sizeof nf, "%ld", N_FOREIGN);
    double lt_pin = -1, lt_free = -1, gdb_pin = -1, gdb_free = -1;
    if (have("ltrace")) {
        char *lt[] = {"ltrace", "-o", "/dev/null", "-e", "getppid", (char *)fixture, nf, "lib",
                      NULL};
        lt_pin = foreign_us(lt, "libcall", base_lib, true, freps);
        lt_free = foreign_us(lt, "libcall", base_lib, false, freps);
    }
    if (have("gdb")) {
        char script[4200];
        snprintf(script, sizeof script, "%s/hits.gdb", root);
        FILE *f = fopen(script, "w");
        if (!f)
            die("cannot write %s", script);
        fprintf(f, "set pagination off\nset confirm off\nbreak traced_fn\ncommands 1\n"
                   "silent\ncontinue\nend\nrun\n");
        fclose(f);
        char *g[] = {"gdb", "-batch", "-nx", "-x", script, "--args", (char *)fixture, nf, "fn",
                     NULL};
        gdb_pin = foreign_us(g, "traced_fn", base_fn, true, freps);
        gdb_free = foreign_us(g, "traced_fn", base_fn, false, freps);
    }
    cleanup();

    /* ---- report ---- */
    printf("Medians of %d runs (ltrace and gdb: %d). Per call = the fixture's own ns/call "
           "(CLOCK_MONOTONIC around the loop) minus the untraced ns/call. Raw stops, ltrace "
           "and gdb: \"CPU 0\" = pinned with sched_setaffinity, \"free\" = no affinity. "
           "Strobe: \"CPU 0\" = trace.pinCpu 1, the default (the tracer pins itself and "
           "the target's main thread to one CPU), \"free\" = trace.pinCpu 0. Strobe runs with "
           "trace.hotCallsPerSecond = 10000000 and no overhead budget so sampling stays out of the "
           "measurement; each traced run was checked to record %ld function_enter events "
           "(last: %.0f enter, %.0f exit).\n\n",
           reps, freps, n_traced, enters, exits);
    printf("| measurement | per call/hit (us) | vs two raw stops | notes |\n|---|---|---|---|\n");
    struct row rows[] = {
        {"untraced traced_fn()", base_fn / 1e3, 0, ""},
        {"untraced getppid() via the PLT", base_lib / 1e3, 0, ""},
        {"raw ptrace stop, CPU 0", floor_same, 2 * floor_same, ""},
        {"raw ptrace stop, free", floor_free, 2 * floor_free, ""},
        {"raw ptrace stop, forced onto different CPUs", floor_cross, 2 * floor_cross, ""},
        {"Strobe traced call (enter+exit), CPU 0", traced_pin, 2 * floor_same, ""},
        {"Strobe traced call (enter+exit), free", traced_free, 2 * floor_free, ""},
        {"Strobe enter-only (trace.captureExits 0), CPU 0", enter_pin, 2 * floor_same, ""},
        {"Strobe enter-only (trace.captureExits 0), free", enter_free, 2 * floor_free, ""},
        {"ltrace -e getppid, CPU 0", lt_pin, 2 * floor_same, ""},
        {"ltrace -e getppid, free", lt_free, 2 * floor_free, ""},
        {"gdb break + commands silent/continue, CPU 0", gdb_pin, 2 * floor_same, ""},
        {"gdb break + commands silent/continue, free", gdb_free, 2 * floor_free, ""},
    };
    int nrows = (int)(sizeof rows / sizeof rows[0]);
    snprintf(rows[0].note, sizeof rows[0].note, "%ld calls per run", N_UNTRACED);
    snprintf(rows[1].note, sizeof rows[1].note, "%ld calls per run", N_UNTRACED);
    for (int i = 2; i < 5; i++)
        snprintf(rows[i].note, sizeof rows[i].note,
                 "int3 -> waitpid -> GETREGS -> SETREGS -> CONT, %ld stops per run", n_traced);
    if (!two_cpus) {
        rows[4].us = -1;
        snprintf(rows[4].note, sizeof rows[4].note, "needs CPUs 0 and 1");
    }
    for (int i = 5; i < 9; i++)
        snprintf(rows[i].note, sizeof rows[i].note, "%ld calls per run through the daemon%s",
                 n_traced, i >= 7 ? "; one stop per call" : "");
    for (int i = 9; i < 13; i++)
        snprintf(rows[i].note, sizeof rows[i].note,
                 rows[i].us < 0 ? "not installed" : "%ld hits per run", N_FOREIGN);
    for (int i = 0; i < nrows; i++)
        print_row(&rows[i]);

    printf("\n| goal | measured | target | result |\n|---|---|---|---|\n");
    goal_row("Strobe traced call / two raw stops, CPU 0", traced_pin / (2 * floor_same),
             "<= 1.3x", traced_pin / (2 * floor_same) <= 1.3);
    goal_row("Strobe traced call / two raw stops, free", traced_free / (2 * floor_free),
             "<= 1.3x", traced_free / (2 * floor_free) <= 1.3);
    goal_row("ltrace / Strobe traced call, CPU 0", lt_pin > 0 ? lt_pin / traced_pin : -1,
             ">= 5x", lt_pin / traced_pin >= 5);
    goal_row("ltrace / Strobe traced call, free", lt_free > 0 ? lt_free / traced_free : -1,
             ">= 5x", lt_free / traced_free >= 5);
    goal_row("gdb / Strobe traced call, CPU 0", gdb_pin > 0 ? gdb_pin / traced_pin : -1,
             ">= 10x", gdb_pin / traced_pin >= 10);
    goal_row("gdb / Strobe traced call, free", gdb_free > 0 ? gdb_free / traced_free : -1,
             ">= 10x", gdb_free / traced_free >= 10);
    /* gdb's breakpoint stops once per hit, like enter-only tracing: the like-for-like
     * reading of "per hit", beside the goal's letter (a whole traced call) above. */
    goal_row("gdb / Strobe enter-only (one stop per hit on both sides), CPU 0",
             gdb_pin > 0 ? gdb_pin / enter_pin : -1, ">= 10x", gdb_pin / enter_pin >= 10);
    goal_row("gdb / Strobe enter-only (one stop per hit on both sides), free",
             gdb_free > 0 ? gdb_free / enter_free : -1, ">= 10x", gdb_free / enter_free >= 10);
    printf("\n| pinning effect | free / CPU 0 |\n|---|---|\n");
    printf("| raw ptrace stop | %.2fx |\n", floor_free / floor_same);
    printf("| Strobe traced call | %.2fx |\n", traced_free / traced_pin);
    printf("| Strobe enter-only | %.2fx |\n", enter_free / enter_pin);
    printf("\n| output in true order, CPU 0 | per traced call (us) |\n|---|---|\n");
    printf("| output.orderAtTraps 1 (default: drain at each trap) | %.2f |\n", traced_pin);
    printf("| output.orderAtTraps 0 | %.2f |\n", nodrain_pin);
    printf("| cost of the drain (two traps) | %.2f |\n", traced_pin - nodrain_pin);
    return 0;
}
