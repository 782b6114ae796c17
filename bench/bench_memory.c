/*
 * bench_memory.c - what reading a running program's variables costs. A 16-target
 * debug_memory read of globals_all's 16 base-type globals through the real daemon
 * socket (the first call, which builds the variable tables, and then the median of
 * RUNS), beside gdb reading the same 16 variables of another copy of the program: a
 * `gdb -p PID -batch -ex 'print g_bool' ...` attach, print and detach, and the prints
 * alone inside one attached gdb (from a batch of 16 x 51 prints minus a batch of 16).
 *
 *   bench_memory RUNS GLOBALS_ALL     (STROBE_HOME chooses the daemon)
 * Prints a Markdown table: runs, median and p95 in ms.
 */
#include <signal.h>
#include <string.h>

#include "bench/bench_util.h"

enum { N_VARS = 16, INNER_REPEAT = 51 };

static const char *const vars[N_VARS] = {
    "g_bool", "g_char", "g_schar", "g_uchar", "g_short", "g_ushort", "g_int", "g_uint",
    "g_long", "g_ulong", "g_llong", "g_ullong", "g_float", "g_double", "g_ldouble", "g_enum",
};

static double strobe_read(struct rpc_client *c, const char *sid)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON *targets = cJSON_AddArrayToObject(args, "targets");
    for (int i = 0; i < N_VARS; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "variable", vars[i]);
        cJSON_AddItemToArray(targets, t);
    }
    double t0 = now_ms();
    cJSON *res = bench_tool(c, "debug_memory", args);
    double ms = now_ms() - t0;
    cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "results"), 0);
    if (cJSON_GetArraySize(cJSON_GetObjectItem(res, "results")) != N_VARS ||
        !cJSON_GetObjectItem(first, "value")) {
        fprintf(stderr, "bench_memory: unexpected answer %s\n", cJSON_PrintUnformatted(res));
        exit(1);
    }
    cJSON_Delete(res);
    return ms;
}

/* gdb -p pid -batch with the 16 prints repeat times; ms. */
static double gdb_prints(pid_t pid, int repeat)
{
    static char exprs[N_VARS][64];
    char pid_text[16];
    snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
    char **argv = calloc((size_t)(8 + 2 * N_VARS * repeat), sizeof *argv);
    int n = 0;
    argv[n++] = "gdb";
    argv[n++] = "-q";
    argv[n++] = "-nx";
    argv[n++] = "-batch";
    argv[n++] = "-p";
    argv[n++] = pid_text;
    for (int r = 0; r < repeat; r++)
        for (int i = 0; i < N_VARS; i++) {
            snprintf(exprs[i], sizeof exprs[i], "print %s", vars[i]);
            argv[n++] = "-ex";
            argv[n++] = exprs[i];
        }
    argv[n] = NULL;
    double ms = bench_run_quiet(argv);
    free(argv);
    return ms;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_memory RUNS GLOBALS_ALL\n");
        return 64;
    }
    int runs = atoi(argv[1]);
    if (runs < 1)
        runs = 20;
    const char *program = argv[2];
    struct rpc_client c;
    bench_connect(&c, "bench_memory");
    char sid[128];
    bench_launch_ready(&c, program, NULL, 0, sid, sizeof sid); /* "ready": it loops */

    double *s = calloc((size_t)runs, sizeof *s), *g = calloc((size_t)runs, sizeof *g),
           *in = calloc((size_t)runs, sizeof *in);
    double cold = strobe_read(&c, sid);
    for (int i = 0; i < runs; i++)
        s[i] = strobe_read(&c, sid);

    char *plain[] = {(char *)program, NULL};
    pid_t other = bench_spawn_quiet(plain); /* gdb cannot attach to strobe's copy */
    gdb_prints(other, 1);                   /* warm the page cache */
    for (int i = 0; i < runs; i++) {
        g[i] = gdb_prints(other, 1);
        in[i] = (gdb_prints(other, INNER_REPEAT) - g[i]) / (INNER_REPEAT - 1);
    }
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);

    printf("| 16 variables read from a running program | runs | median ms | p95 ms |\n"
           "|---|---|---|---|\n");
    printf("| strobe debug_memory, first call (builds the variable tables) | 1 | %.2f | %.2f |\n",
           cold, cold);
    report_row("strobe debug_memory (daemon socket, program keeps running)", s, runs);
    report_row("gdb -p PID -batch, 16 prints (attach, read, detach)", g, runs);
    report_row("gdb, 16 prints inside one attached session (program stopped)", in, runs);

    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "stop");
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_Delete(bench_tool(&c, "debug_session", args));
    free(s);
    free(g);
    free(in);
    rpc_close(&c);
    return 0;
}
