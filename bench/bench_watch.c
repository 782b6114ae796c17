/*
 * bench_watch.c - what a data watchpoint hit costs the program. The fixture
 * watch_writer ("bench N") writes a global N times in a loop and times the loop
 * itself, so launching and arming are not counted:
 *  - plainly (the floor);
 *  - under strobe: launched with "wait", the global watched by address through the
 *    daemon socket (debug_memory watch), then SIGUSR1 starts the loop; every write
 *    is a watch_hit event (old/new value, stack, file:line), and the program runs on;
 *  - under gdb with a hardware watchpoint that continues silently (`watch -l
 *    g_counter` + `commands; silent; continue; end`), the usual way to log writes.
 * Per-hit cost = (loop time - plain loop time) / N.
 *
 *   bench_watch PROGRAM N RUNS       (STROBE_HOME chooses the daemon)
 * Prints a Markdown table with medians.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"


static char *wait_stdout(struct rpc_client *c, const char *sid, const char *needle)
{
    for (;;) {
        char *s = bench_stdout_with(c, sid, needle);
        if (s)
            return s;
        usleep(2000);
    }
}

static long long count_hits(struct rpc_client *c, const char *sid)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "eventType", "watch_hit");
    cJSON_AddNumberToObject(args, "limit", 1);
    cJSON *res = bench_tool(c, "debug_query", args);
    long long n = (long long)cJSON_GetObjectItem(res, "totalCount")->valuedouble;
    cJSON_Delete(res);
    return n;
}

/* One strobe run: loop ns; *hits gets the watch_hit events recorded. */
static double strobe_run(struct rpc_client *c, const char *program, const char *n,
                         long long *hits)
{
    const char *const run_args[] = {"bench", n, "wait"};
    char sid[128];
    pid_t pid = bench_launch_ready(c, program, run_args, 3, sid, sizeof sid);
    char *ready = wait_stdout(c, sid, "ready counter=");
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "watch");
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "address", strchr(ready, '=') + 1);
    cJSON_AddStringToObject(args, "type", "i64");
    cJSON_Delete(bench_tool(c, "debug_memory", args));
    free(ready);
    kill(pid, SIGUSR1);
    char *done = wait_stdout(c, sid, "elapsed_ns=");
    double ns = atof(strstr(done, "elapsed_ns=") + 11);
    free(done);
    *hits = count_hits(c, sid);
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "stop");
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_Delete(bench_tool(c, "debug_session", args));
    return ns;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_watch PROGRAM N RUNS\n");
        return 64;
    }
    const char *program = argv[1], *n = argv[2];
    double writes = atof(n);
    int runs = atoi(argv[3]);
    if (runs < 1 || writes < 1)
        return 64;
    struct rpc_client c;
    bench_connect(&c, "bench_watch");
    double *plain = calloc((size_t)runs, sizeof *plain);
    double *st = calloc((size_t)runs, sizeof *st);
    double *gd = calloc((size_t)runs, sizeof *gd);
    long long hits = 0;
    char script[] = "/tmp/bench_watch_gdb_XXXXXX";
    int fd = mkstemp(script);
    const char *cmds = "set pagination off\nset confirm off\nbreak main\nrun\n"
                       "watch -l g_counter\ncommands\nsilent\ncontinue\nend\ncontinue\n";
    if (fd < 0 || write(fd, cmds, strlen(cmds)) != (ssize_t)strlen(cmds))
        return 1;
    close(fd);
    bool have_gdb = system("command -v gdb >/dev/null 2>&1") == 0;
    for (int i = 0; i < runs; i++) {
        char *pa[] = {(char *)program, "bench", (char *)n, NULL};
        plain[i] = bench_run_elapsed(pa);
        st[i] = strobe_run(&c, program, n, &hits);
        if (have_gdb) {
            char *ga[] = {"gdb", "-q", "-batch", "-nx", "-x", script, "--args",
                          (char *)program, "bench", (char *)n, NULL};
            gd[i] = bench_run_elapsed(ga);
        }
    }
    unlink(script);
    double p = median(plain, runs), s = median(st, runs), g = have_gdb ? median(gd, runs) : 0;
    printf("| %s writes | runs | loop ms | per write us | watch_hit events |\n"
           "|---|---|---|---|---|\n", n);
    printf("| plain | %d | %.2f | %.4f | - |\n", runs, p / 1e6, p / writes / 1e3);
    printf("| strobe (debug_memory watch, recorded and runs on) | %d | %.2f | %.2f | %lld |\n",
           runs, s / 1e6, (s - p) / writes / 1e3, hits);
    if (have_gdb)
        printf("| gdb (watch -l, commands silent; continue) | %d | %.2f | %.2f | - |\n", runs,
               g / 1e6, (g - p) / writes / 1e3);
    printf("\nstrobe / gdb per hit: %.2f\n", have_gdb ? (s - p) / (g - p) : 0.0);
    free(plain);
    free(st);
    free(gd);
    return 0;
}
