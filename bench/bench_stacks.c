/*
 * bench_stacks.c - what "where is every thread now?" costs. A program with 16
 * parked worker threads (tests/fixtures/threads16.c) runs under strobe; each run
 * asks debug_session stacks through the real daemon socket and records the answer's
 * round trip and how long the program's threads were held (stoppedMs, measured by
 * the daemon). Beside it, gdb on a second, untraced copy of the program: `gdb -batch
 * -p PID -ex "thread apply all bt"`, which holds the program from attach to detach.
 *
 *   bench_stacks RUNS PROGRAM     (STROBE_HOME chooses the daemon)
 * Prints a Markdown table of medians in ms and strobe's times as ratios of gdb's.
 */
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"

extern char **environ;

/* Starts program with stdout on a pipe and waits for its first line; its pid. */
static pid_t spawn_ready(const char *program)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(1);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {(char *)program, NULL};
    pid_t pid;
    if (posix_spawn(&pid, program, &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_stacks: cannot run %s\n", program);
        exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n')
        ;
    close(fds[0]);
    return pid;
}

static cJSON *session_call(struct rpc_client *c, const char *action, const char *sid)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", action);
    cJSON_AddStringToObject(args, "sessionId", sid);
    return bench_tool(c, "debug_session", args);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_stacks RUNS PROGRAM\n");
        return 64;
    }
    int runs = atoi(argv[1]);
    if (runs < 1)
        runs = 20;
    const char *program = argv[2];
    struct rpc_client c;
    bench_connect(&c, "bench_stacks");
    char sid[128];
    bench_launch_ready(&c, program, NULL, 0, sid, sizeof sid);
    double *rt = calloc((size_t)runs, sizeof *rt), *held = calloc((size_t)runs, sizeof *held),
           *g = calloc((size_t)runs, sizeof *g);
    int threads = 0;
    double first_rt = 0, first_held = 0;
    for (int i = -1; i < runs; i++) {
        double t0 = now_ms();
        cJSON *res = session_call(&c, "stacks", sid);
        double t1 = now_ms();
        double h = cJSON_GetObjectItem(res, "stoppedMs")->valuedouble;
        threads = cJSON_GetArraySize(cJSON_GetObjectItem(res, "threads"));
        cJSON_Delete(res);
        if (i < 0) {
            first_rt = t1 - t0, first_held = h;
        } else {
            rt[i] = t1 - t0;
            held[i] = h;
        }
    }
    cJSON_Delete(session_call(&c, "stop", sid));

    pid_t plain = spawn_ready(program);
    char pidarg[32];
    snprintf(pidarg, sizeof pidarg, "%d", (int)plain);
    char *gdb[] = {"gdb", "-q", "-nx", "-batch", "-p", pidarg, "-ex", "thread apply all bt",
                   NULL};
    bench_run_quiet(gdb); /* warm: page cache, gdb's own index of libc */
    for (int i = 0; i < runs; i++)
        g[i] = bench_run_quiet(gdb);
    kill(plain, SIGKILL);
    waitpid(plain, NULL, 0);

    double mrt = median(rt, runs), mheld = median(held, runs), mg = median(g, runs);
    printf("| %d threads, %d runs | median ms | vs gdb |\n|---|---|---|\n", threads, runs);
    printf("| strobe: program held (stoppedMs) | %.2f | %.3fx |\n", mheld, mheld / mg);
    printf("| strobe: debug_session stacks round trip | %.2f | %.3fx |\n", mrt, mrt / mg);
    printf("| strobe: first call of the session (held / round trip) | %.2f / %.2f | |\n",
           first_held, first_rt);
    printf("| gdb -batch -p PID -ex \"thread apply all bt\" (program held throughout) | %.1f "
           "| 1x |\n", mg);
    free(rt);
    free(held);
    free(g);
    rpc_close(&c);
    return 0;
}
