/*
 * bench_launch.c - launch latency: from sending debug_launch to the moment the
 * program's first stdout line can be read back with debug_query, through the real
 * daemon socket. Beside it, the same program started with posix_spawn and its
 * first stdout byte read from a pipe, the floor any launcher pays.
 *
 *   bench_launch PROGRAM [RUNS]      (STROBE_HOME chooses the daemon)
 * Prints Markdown table rows: median and p95 in ms.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"

extern char **environ;

static double plain_launch(const char *program)
{
    int p[2];
    if (pipe(p) != 0)
        exit(1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    char *argv[] = {(char *)program, NULL};
    double t0 = now_ms();
    pid_t pid;
    if (posix_spawn(&pid, program, &fa, NULL, argv, environ) != 0)
        exit(1);
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        exit(1);
    double t1 = now_ms();
    while (read(p[0], &c, 1) > 0)
        ;
    close(p[0]);
    waitpid(pid, NULL, 0);
    posix_spawn_file_actions_destroy(&fa);
    return t1 - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_launch PROGRAM [RUNS]\n");
        return 64;
    }
    const char *program = argv[1];
    int runs = argc > 2 ? atoi(argv[2]) : 50;
    if (runs < 1)
        runs = 50;
    char root[4096];
    snprintf(root, sizeof root, "%s", program);
    *strrchr(root, '/') = '\0';

    struct rpc_client c;
    bench_connect(&c, "bench_launch");

    double *a = calloc((size_t)runs, sizeof *a), *b = calloc((size_t)runs, sizeof *b);
    bench_launch_until(&c, program, root, "stdout"); /* warm the page cache and the daemon */
    for (int i = 0; i < runs; i++) {
        a[i] = bench_launch_until(&c, program, root, "stdout");
        b[i] = plain_launch(program);
    }
    printf("| launch to first stdout event | runs | median ms | p95 ms |\n|---|---|---|---|\n");
    report_row("strobe: debug_launch -> debug_query sees the line", a, runs);
    report_row("posix_spawn -> first byte on a pipe (floor)", b, runs);
    free(a);
    free(b);
    rpc_close(&c);
    return 0;
}
