/*
 * bench_crash.c - what a crash report costs. For each crashing program: the time from
 * debug_launch until its crash event (stack, locals, signal) can be read back with
 * debug_query, through the real daemon socket; beside it the program run plainly to
 * its death (posix_spawn + waitpid, the floor), and gdb's batch crash report
 * (`gdb -batch -ex run -ex bt -ex "info locals"`), the usual way to get the same facts.
 *
 *   bench_crash RUNS PROGRAM...      (STROBE_HOME chooses the daemon)
 * Prints a Markdown table: medians in ms and strobe's time as a ratio of gdb's.
 */
#include <string.h>

#include "bench/bench_util.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_crash RUNS PROGRAM...\n");
        return 64;
    }
    int runs = atoi(argv[1]);
    if (runs < 1)
        runs = 10;
    struct rpc_client c;
    bench_connect(&c, "bench_crash");
    double *s = calloc((size_t)runs, sizeof *s), *p = calloc((size_t)runs, sizeof *p),
           *g = calloc((size_t)runs, sizeof *g);
    printf("| crashing program | runs | plain run to death (floor) ms | strobe: launch -> crash "
           "event queryable ms | gdb -batch run+bt+locals ms | strobe / gdb |\n"
           "|---|---|---|---|---|---|\n");
    for (int k = 2; k < argc; k++) {
        const char *program = argv[k];
        char root[4096];
        snprintf(root, sizeof root, "%s", program);
        *strrchr(root, '/') = '\0';
        char *plain[] = {(char *)program, NULL};
        char *gdb[] = {"gdb", "-q", "-nx", "-batch", "-ex", "run", "-ex", "bt", "-ex",
                       "info locals", (char *)program, NULL};
        bench_launch_until(&c, program, root, "crash"); /* warm the caches: index, page cache */
        bench_run_quiet(gdb);
        for (int i = 0; i < runs; i++) {
            p[i] = bench_run_quiet(plain);
            s[i] = bench_launch_until(&c, program, root, "crash");
            g[i] = bench_run_quiet(gdb);
        }
        double ms = median(s, runs), mp = median(p, runs), mg = median(g, runs);
        printf("| %s | %d | %.2f | %.2f | %.1f | %.2fx |\n", strrchr(program, '/') + 1, runs,
               mp, ms, mg, ms / mg);
    }
    free(s);
    free(p);
    free(g);
    rpc_close(&c);
    return 0;
}
