/*
 * bench_redis.c - a real server under load: redis-server built with -g from
 * Debian bookworm's own source package (scripts/bench-redis-build.sh) answering
 * `redis-benchmark -t set,get -n N -c 50 -q`; its GET and SET requests per second
 * side by side in one run: plain; under Strobe with nothing traced; Strobe
 * trace.mode "fast" (the default) and "int3" with one cold function traced
 * (configGetCommand: the bench sends two CONFIG GET so that it has calls); both
 * modes with the broad pattern *Command (hundreds of functions, several called by
 * every request); and uftrace `record --no-libcall -P '.*Command$'` (dynamic
 * patching of the same binary; skipped when uftrace is missing). Each repetition
 * runs every configuration once, in turn, so that load drift hits all of them
 * alike; medians. Each Strobe row also reports, from its session's status
 * (`strobectl --json status SESSION`, before the stop), the ptrace stops taken and
 * the traced calls against those recorded.
 *
 *   bench_redis [N [REPS [REDIS_SERVER]]]   (default 100,000, 3)
 *
 * REDIS_SERVER defaults to redis/redis-server beside this executable, which
 * scripts/bench-redis-build.sh (in the source tree above it) builds when missing.
 * Needs redis-tools and `strobe` on PATH (scripts/run-bench.sh puts the build's
 * first). Starts its own daemon in a private STROBE_HOME under /tmp; stops it and
 * every server it started, also on failure. Prints Markdown, or why it skipped.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "bench_util.h"

enum kind { PLAIN, STROBE, UFTRACE };

struct config {
    const char *what;
    enum kind kind;
    const char *settings; /* a Strobe row's .strobe/settings.json */
    const char *pattern;  /* a Strobe row's traced pattern; NULL: none */
    const char *shown;    /* the function whose counts the row shows */
    double get[16], set[16];
    int n;
    double stops;     /* ptrace stops of a Strobe row's last run */
    char traced[320]; /* calls against those recorded, last run */
};

static const char *redis;
static char root[] = "/tmp/strobe-bench-redis.XXXXXX"; /* projectRoot, STROBE_HOME */
static bool have_root;
static pid_t child = -1;  /* our child: a plain redis-server or uftrace */
static pid_t server = -1; /* the running redis-server (INFO server), any row */

static void die(const char *fmt, const char *a)
{
    fprintf(stderr, "bench_redis: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    exit(1);
}

/* Kills whatever server still runs (a Strobe one directly: the daemon may be what
 * failed). */
static void cleanup_servers(void)
{
    if (server > 0)
        kill(server, SIGKILL);
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    server = child = -1;
}

/* atexit: the servers killed, the private daemon stopped, the root removed. */
static void cleanup(void)
{
    cleanup_servers();
    if (have_root)
        bench_remove_root(root, "bench_redis");
    have_root = false;
}

static void on_signal(int sig)
{
    exit(128 + sig); /* runs cleanup */
}

/* The stdout of the shell command printf(fmt, ...), its stderr dropped; malloc'd,
 * NULL when it failed. */
static char *sh_out(const char *fmt, ...)
{
    char cmd[8800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd - 16, fmt, ap);
    va_end(ap);
    strcat(cmd, " 2>/dev/null"); /* the 16 bytes kept above */
    FILE *f = popen(cmd, "r");
    char *out = NULL;
    size_t cap = 0;
    if (f && getdelim(&out, &cap, '\0', f) < 0 && out)
        out[0] = '\0'; /* no output */
    if (!f || pclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* A TCP port of 127.0.0.1 nothing listens on: the kernel's pick. */
static void free_port(char *out, size_t cap)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        die("cannot find a free port: %s", strerror(errno));
    close(fd);
    snprintf(out, cap, "%u", ntohs(a.sin_port));
}

/* Polls `redis-cli ping` until the server answers (at most 60 s: a launch under a
 * tracer indexes redis's DWARF first); then learns the server's pid. */
static void wait_ready(const char *port)
{
    bool up = false;
    for (int i = 0; i < 600 && !up; i++) {
        char *out = sh_out("redis-cli -p %s ping", port);
        up = out && strstr(out, "PONG");
        free(out);
        if (!up && child > 0 && waitpid(child, NULL, WNOHANG) == child) {
            child = -1;
            die("redis-server (port %s) exited before it answered", port);
        }
        if (!up)
            usleep(100000);
    }
    if (!up)
        die("redis-server (port %s) did not answer ping within 60 s", port);
    char *info = sh_out("redis-cli -p %s INFO server", port);
    const char *p = info ? strstr(info, "process_id:") : NULL;
    server = p ? atoi(p + strlen("process_id:")) : -1;
    free(info);
    if (server <= 0)
        die("no process_id in INFO server of port %s", port);
}

/* Waits up to ms for our child to exit; false when it did not. */
static bool wait_child(int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (waitpid(child, NULL, WNOHANG) == child)
            return true;
        usleep(10000);
    }
    return false;
}

/* Stops the plain or uftrace server: SHUTDOWN, so that uftrace, seeing its program
 * exit, writes its data and exits too (SIGINT, then SIGKILL, when it does not). */
static void stop_child(const char *port)
{
    free(sh_out("redis-cli -p %s SHUTDOWN NOSAVE", port));
    if (!wait_child(60000)) {
        kill(child, SIGINT);
        if (!wait_child(5000))
            cleanup_servers();
    }
    child = server = -1; /* gone: uftrace waits for its program */
}

/* "TEST: X requests per second" in redis-benchmark's output (its progress lines
 * say "TEST: rps=..."), or -1. */
static double rps_in(const char *out, const char *test)
{
    char key[16];
    snprintf(key, sizeof key, "%s: ", test);
    double v = -1, x;
    for (const char *p = out ? strstr(out, key) : NULL; p; p = strstr(p + 1, key)) {
        int end = 0;
        if (sscanf(p + strlen(key), "%lf requests per second%n", &x, &end) == 1 && end > 0)
            v = x;
    }
    return v;
}

/* The load: two CONFIG GET (the cold function's calls), then redis-benchmark. */
static void load(const char *port, const char *n, struct config *cf)
{
    for (int i = 0; i < 2; i++)
        free(sh_out("redis-cli -p %s CONFIG GET maxmemory", port));
    char *out = sh_out("redis-benchmark -p %s -t set,get -n %s -c 50 -q", port, n);
    double get = rps_in(out, "GET"), set = rps_in(out, "SET");
    free(out);
    if (get <= 0 || set <= 0)
        die("redis-benchmark gave no GET or SET figure (%s)", cf->what);
    cf->get[cf->n] = get;
    cf->set[cf->n++] = set;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The entry of array arr whose "function" is fn, or NULL. */
static const cJSON *entry(const cJSON *arr, const char *fn)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *f = cJSON_GetObjectItem(e, "function");
        if (cJSON_IsString(f) && strcmp(f->valuestring, fn) == 0)
            return e;
    }
    return NULL;
}

/* A Strobe row's stops and "FN C calls, R recorded" from its session's status (no
 * "overhead": it never stopped; no "recorded": never sampled, every call recorded;
 * no "ringFull": none). */
static void read_status(const cJSON *st, struct config *cf)
{
    const cJSON *ov = cJSON_GetObjectItem(st, "overhead");
    cf->stops = ov ? num(ov, "stops") : 0;
    if (!cf->pattern)
        return;
    const cJSON *top = entry(cJSON_GetObjectItem(st, "topFunctions"), cf->shown);
    const cJSON *smp = entry(cJSON_GetObjectItem(st, "sampling"), cf->shown);
    double calls = top ? num(top, "calls") : 0, rec = top ? num(top, "recorded") : 0;
    int len = snprintf(cf->traced, sizeof cf->traced, "%s %.0f calls, %.0f recorded",
                       cf->shown, calls, rec < 0 ? calls : rec);
    if (smp && num(smp, "ringFull") >= 0)
        len += snprintf(cf->traced + len, sizeof cf->traced - len, ", ringFull %.0f",
                        num(smp, "ringFull"));
    double matched = num(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "patterns"), 0), "matched");
    snprintf(cf->traced + len, sizeof cf->traced - len, "; %.0f function%s traced, "
             "%.0f function_enter events stored", matched, matched == 1 ? "" : "s",
             num(cJSON_GetObjectItem(st, "eventCounts"), "function_enter"));
}

static void pending_pattern(struct rpc_client *c, const char *action, const char *pattern)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, action), cJSON_CreateString(pattern));
    cJSON_Delete(bench_tool(c, "debug_trace", req));
}

/* Launches redis with args through the daemon under cf's settings and pattern; sid
 * gets the session. A traced row must be what its trace.mode says (debug_trace). */
static void strobe_start(struct rpc_client *c, const struct config *cf, char *const args[],
                         char *sid, size_t cap)
{
    if (!bench_project_settings(root, cf->settings))
        die("cannot write the settings of %s", root);
    if (cf->pattern)
        pending_pattern(c, "add", cf->pattern);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", redis);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *av = cJSON_AddArrayToObject(req, "args");
    for (int i = 1; args[i]; i++)
        cJSON_AddItemToArray(av, cJSON_CreateString(args[i]));
    cJSON *res = bench_tool(c, "debug_launch", req);
    snprintf(sid, cap, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    server = (pid_t)num(res, "pid");
    if (cf->pattern && num(res, "pendingPatternsApplied") < 1)
        die("debug_launch did not apply the pattern %s", cf->pattern);
    cJSON_Delete(res);
    if (!cf->pattern)
        return;
    pending_pattern(c, "remove", cf->pattern); /* the next row starts clean */
    res = bench_tool(c, "debug_trace", bench_session_args(sid));
    const cJSON *st = cJSON_GetObjectItem(res, "status");
    bool fast = cJSON_IsString(st) && strstr(st->valuestring, "through the fast path");
    if (fast != (strstr(cf->settings, "\"fast\"") != NULL))
        die("%s: debug_trace's status says otherwise", cf->what);
    cJSON_Delete(res);
}

/* One run of configuration cf: start, wait, load, read the status, stop. */
static void run_config(struct rpc_client *c, struct config *cf, const char *n)
{
    char port[16], sid[128], dir[4200];
    free_port(port, sizeof port);
    snprintf(dir, sizeof dir, "%s/uftrace.data", root);
    char *args[] = {"uftrace", "record", "--no-libcall", "-d", dir, "-P", ".*Command$",
                    (char *)redis, "--port", port, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", NULL};
    char *const *plain = args + 7; /* the server's own command line */
    if (cf->kind == STROBE)
        strobe_start(c, cf, plain, sid, sizeof sid);
    else
        child = bench_spawn_quiet(cf->kind == PLAIN ? plain : args);
    wait_ready(port);
    load(port, n, cf);
    if (cf->kind != STROBE) {
        stop_child(port);
        return;
    }
    cJSON *req = bench_session_args(sid);
    cJSON_AddStringToObject(req, "action", "status");
    cJSON *st = bench_tool(c, "debug_session", req);
    read_status(st, cf);
    cJSON_Delete(st);
    bench_stop_session(c, sid);
    for (int i = 0; i < 1000 && kill(server, 0) == 0; i++) /* until the daemon reaped it */
        usleep(10000);
    server = -1;
}

/* The uftrace row's calls of processCommand in its last run: `uftrace report`'s
 * CALLS column, the number before the name. */
static void uftrace_calls(struct config *cf)
{
    char *out = sh_out("uftrace report -d %s/uftrace.data -s call", root);
    const char *q = out ? strstr(out, " processCommand\n") : NULL;
    while (q && q > out && q[-1] == ' ')
        q--;
    while (q && q > out && q[-1] != ' ')
        q--;
    snprintf(cf->traced, sizeof cf->traced, "processCommand %.0f calls recorded "
             "(`uftrace report`)", q ? atof(q) : -1);
    free(out);
}

static void print_row(struct config *cf, double plain_get)
{
    if (cf->n == 0) {
        printf("| %s | - | - | - | - | skipped: uftrace not installed |\n", cf->what);
        return;
    }
    double get = median(cf->get, cf->n), set = median(cf->set, cf->n);
    char stops[32] = "-";
    if (cf->kind == STROBE)
        snprintf(stops, sizeof stops, "%.0f", cf->stops);
    printf("| %s | %.0f | %.0f | %.2f | %s | %s |\n", cf->what, get, set, get / plain_get,
           stops, cf->traced[0] ? cf->traced : "-");
}

/* The redis-server beside this executable, built by the script of the source tree
 * above it when missing; NULL when there is none and it cannot be built. */
static const char *default_redis(void)
{
    static char exe[4096], path[4200];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return NULL;
    exe[len] = '\0';
    const char *dir = dirname(exe);
    snprintf(path, sizeof path, "%s/redis/redis-server", dir);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "'%s/../../scripts/bench-redis-build.sh' '%s/redis' >&2", dir, dir);
    if (access(path, X_OK) != 0 && system(cmd) != 0)
        return NULL;
    return access(path, X_OK) == 0 ? path : NULL;
}

/* The private root: its project's .strobe and the daemon's STROBE_HOME (0700). */
static void private_root(void)
{
    if (!bench_private_root(root))
        die("mkdtemp: %s", strerror(errno));
    have_root = true;
    atexit(cleanup);
}

int main(int argc, char **argv)
{
    const char *n = argc > 1 && atol(argv[1]) > 0 ? argv[1] : "100000";
    int reps = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 3;
    reps = reps > 15 ? 15 : reps;
    static char abs_redis[4096];
    redis = argc > 3 ? argv[3] : default_redis();
    if (!redis || !realpath(redis, abs_redis)) {
        printf("Skipped: no redis-server (scripts/bench-redis-build.sh could not build it).\n");
        return 0;
    }
    redis = abs_redis;
    if (system("command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null")) {
        printf("Skipped: no redis-benchmark or redis-cli (redis-tools, scripts/deps.sh bench).\n");
        return 0;
    }
    bool uft = system("command -v uftrace >/dev/null") == 0;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    private_root();
    struct rpc_client c;
    bench_connect(&c, "bench_redis");

    const char *fast = "{\"trace.mode\": \"fast\"}", *int3 = "{\"trace.mode\": \"int3\"}";
    /* A cold row shows its function's counts; a *Command row processCommand's, which
     * every request calls once. */
    const char *cold = "configGetCommand", *broad = "*Command", *per_req = "processCommand";
#define TRACED(w, m, p, f) {.what = w, .kind = STROBE, .settings = m, .pattern = p, .shown = f}
    struct config rows[] = {
        {.what = "plain redis-server", .kind = PLAIN},
        {.what = "Strobe, nothing traced", .kind = STROBE, .settings = "{}"},
        TRACED("Strobe fast, `configGetCommand` (cold)", fast, cold, cold),
        TRACED("Strobe int3, `configGetCommand` (cold)", int3, cold, cold),
        TRACED("Strobe fast, `*Command`", fast, broad, per_req),
        TRACED("Strobe int3, `*Command`", int3, broad, per_req),
        {.what = "uftrace `record --no-libcall -P '.*Command$'`", .kind = UFTRACE},
    };
    int n_rows = (int)(sizeof rows / sizeof rows[0]);

    /* A first launch under Strobe, untimed: the page cache and the DWARF index. */
    struct config warm = rows[4];
    run_config(&c, &warm, "1000");
    for (int i = 0; i < reps; i++)
        for (int k = 0; k < n_rows - !uft; k++)
            run_config(&c, &rows[k], n);
    if (uft)
        uftrace_calls(&rows[n_rows - 1]);

    printf("Server: `%s --port PORT --bind 127.0.0.1 --save \"\" --appendonly no` (a free "
           "port each run). Load: `redis-cli -p PORT CONFIG GET maxmemory` twice, then "
           "`redis-benchmark -p PORT -t set,get -n %s -c 50 -q`; requests per second are "
           "redis-benchmark's own, medians of %d runs, the configurations taking turns in "
           "each. Strobe rows: `strobectl trace --add PATTERN`, then `strobectl launch` "
           "(debug_trace, debug_launch) of a project whose .strobe/settings.json sets "
           "trace.mode; stops and calls from `strobectl --json status SESSION` before the "
           "stop (overhead.stops; topFunctions calls and recorded, sampling ringFull), last "
           "run. uftrace row: `uftrace record --no-libcall -d DIR -P '.*Command$' %s ...`, "
           "ended by `redis-cli SHUTDOWN NOSAVE`; its calls from `uftrace report`, last run.\n\n",
           redis, n, reps, redis);
    printf("| configuration | GET rps | SET rps | GET / plain | stops | calls recorded |\n"
           "|---|---|---|---|---|---|\n");
    double plain_get = median(rows[0].get, rows[0].n);
    for (int k = 0; k < n_rows; k++)
        print_row(&rows[k], plain_get);
    rpc_close(&c);
    return 0;
}
