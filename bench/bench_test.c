/*
 * bench_test.c - what debug_test costs over running the tests directly, and how
 * long it takes to call a deadlocked test stuck.
 *
 * Overhead: for each project, debug_test runs its suite (framework detected, or
 * named) RUNS times through the real daemon socket: from the run call to the status
 * answer that says completed. Beside it, the very command debug_test ran (its
 * `command` shell line, output to /dev/null) is run directly RUNS times with sh -c.
 * Stuck: debug_test on a program that deadlocks at once (deadlock_abba), from the
 * run call to the completed answer with the stuck verdict, 3 times. The frameworks'
 * own behaviour for a hung test is a default, not a measurement: see BENCHMARKS.md.
 *
 *   bench_test RUNS DEADLOCK_PROGRAM [ROOT FRAMEWORK|auto COMMAND|-]...
 * (STROBE_HOME chooses the daemon). Prints Markdown tables of medians in ms.
 */
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"

/* Starts a run and waits for its end; ms, and the command line it ran into cmd. */
static double one_run(struct rpc_client *c, const char *root, const char *framework,
                      const char *command, char *cmd, size_t cap, int *stuck)
{
    double t0 = now_ms();
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "projectRoot", root);
    if (framework && strcmp(framework, "auto") != 0)
        cJSON_AddStringToObject(args, "framework", framework);
    if (command && strcmp(command, "-") != 0)
        cJSON_AddStringToObject(args, "command", command);
    cJSON *res = bench_tool(c, "debug_test", args);
    char id[64];
    snprintf(id, sizeof id, "%s", cJSON_GetObjectItem(res, "testRunId")->valuestring);
    if (cmd)
        snprintf(cmd, cap, "%s", cJSON_GetObjectItem(res, "command")->valuestring);
    cJSON_Delete(res);
    for (;;) {
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        cJSON_AddStringToObject(args, "testRunId", id);
        res = bench_tool(c, "debug_test", args);
        const char *status = cJSON_GetObjectItem(res, "status")->valuestring;
        if (strcmp(status, "completed") == 0) {
            double t1 = now_ms();
            cJSON *sum = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "result"), "summary");
            if (stuck)
                *stuck = cJSON_GetObjectItem(sum, "stuck")->valueint;
            cJSON_Delete(res);
            return t1 - t0;
        }
        cJSON_Delete(res);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc - 3) % 3 != 0) {
        fprintf(stderr, "usage: bench_test RUNS DEADLOCK_PROGRAM [ROOT FRAMEWORK COMMAND]...\n");
        return 64;
    }
    int runs = atoi(argv[1]);
    if (runs < 1 || runs > 1000)
        runs = 5;
    char err[1024];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "bench_test: %s\n", err);
        return 1;
    }
    struct rpc_client c;
    rpc_init(&c, fd);
    if (rpc_handshake(&c, "bench_test", err, sizeof err) != 0) {
        fprintf(stderr, "bench_test: %s\n", err);
        return 1;
    }
    double *via = calloc((size_t)runs, sizeof *via), *direct = calloc((size_t)runs, sizeof *direct);
    printf("| suite | runs | direct (ms) | debug_test (ms) | ratio |\n"
           "| --- | --- | --- | --- | --- |\n");
    for (int p = 3; p + 2 < argc; p += 3) {
        const char *root = argv[p], *fw = argv[p + 1], *command = argv[p + 2];
        char cmd[1024];
        one_run(&c, root, fw, command, cmd, sizeof cmd, NULL); /* warm: builds, caches */
        for (int i = 0; i < runs; i++) {
            via[i] = one_run(&c, root, fw, command, NULL, 0, NULL);
            char *sh[] = {"sh", "-c", cmd, NULL};
            direct[i] = bench_run_quiet(sh);
        }
        double d = median(direct, runs), v = median(via, runs);
        printf("| %s (`%s`) | %d | %.1f | %.1f | %.2fx |\n", fw, cmd, runs, d, v, v / d);
    }
    printf("\n| stuck test | runs | run call to stuck verdict (ms) |\n| --- | --- | --- |\n");
    double stuck_ms[3];
    for (int i = 0; i < 3; i++) {
        int stuck = 0;
        stuck_ms[i] = one_run(&c, "/tmp", "generic", argv[2], NULL, 0, &stuck);
        if (stuck != 1) {
            fprintf(stderr, "bench_test: %s was not found stuck\n", argv[2]);
            return 1;
        }
    }
    printf("| %s (deadlock) | 3 | %.0f |\n", argv[2], median(stuck_ms, 3));
    free(via);
    free(direct);
    close(fd);
    return 0;
}
