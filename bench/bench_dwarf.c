/*
 * bench_dwarf.c - DWARF index benchmark (not a test). Prints Markdown table rows.
 *
 *   bench_dwarf [BINARY...]
 *
 * Times dw_index_get() on each BINARY (best of 3 runs, the cache cleared between
 * them) and reports it per 100,000 functions (goal: under 0.2 s), next to
 * `gdb -batch -ex 'info functions' BINARY > /dev/null` on the same file.
 * Without arguments it first generates a C++ program with INSTANCES (default 1000,
 * env BENCH_DWARF_INSTANCES) class template instantiations, each bringing its own
 * std::vector<Node<N>> members, in two translation units compiled in parallel with
 * `c++ -O0 -g` (about 40 s on 2 cores), and benchmarks that. The temporary
 * directory is removed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dwarf/dwarf.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Writes dir/tu0.cpp, tu1.cpp (overlapping instance ranges, as real programs repeat
 * template instances across translation units) and main.cpp. */
static int generate(const char *dir, int instances)
{
    char path[600];
    for (int tu = 0; tu < 2; tu++) {
        snprintf(path, sizeof path, "%s/tu%d.cpp", dir, tu);
        FILE *f = fopen(path, "w");
        if (!f)
            return -1;
        fprintf(f, "#include <vector>\n"
                   "namespace bench {\n"
                   "template <int N> struct Node {\n"
                   "    int v;\n"
                   "    double w;\n"
                   "    int get() const { return v + N; }\n"
                   "    void set(int x) { v = x; }\n"
                   "    double weigh(double k) const { return w * k + N; }\n"
                   "};\n"
                   "template <int N> int use(int x)\n"
                   "{\n"
                   "    std::vector<Node<N>> v;\n"
                   "    v.push_back(Node<N>{x, 1.0});\n"
                   "    v.back().set(x);\n"
                   "    return v[0].get() + (int)v[0].weigh(2);\n"
                   "}\n"
                   "}\n"
                   "int run%d(int x)\n{\n    int s = 0;\n",
                tu);
        int lo = tu == 0 ? 0 : instances / 3, hi = tu == 0 ? instances * 2 / 3 : instances;
        for (int i = lo; i < hi; i++)
            fprintf(f, "    s += bench::use<%d>(x);\n", i);
        fprintf(f, "    return s;\n}\n");
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/main.cpp", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "int run0(int);\nint run1(int);\n"
               "int main(int argc, char **) { return (run0(argc) + run1(argc)) & 1; }\n");
    fclose(f);
    return 0;
}

static double run_timed(const char *cmd)
{
    double t0 = now_s();
    int rc = system(cmd);
    double t = now_s() - t0;
    if (rc != 0)
        fprintf(stderr, "bench_dwarf: `%s` exited with %d\n", cmd, rc);
    return rc == 0 ? t : -1;
}

static void bench(const char *binary)
{
    struct strobe_error err = {0};
    double best = 1e9;
    size_t n = 0, n_dwarf = 0;
    for (int run = 0; run < 3; run++) {
        dw_cache_clear();
        double t0 = now_s();
        const struct dw_index *ix = dw_index_get(binary, &err);
        double t = now_s() - t0;
        if (!ix) {
            fprintf(stderr, "bench_dwarf: %s\n", err.msg);
            return;
        }
        if (t < best)
            best = t;
        n = ix->n_functions;
        n_dwarf = 0;
        for (size_t i = 0; i < n; i++)
            n_dwarf += ix->functions[i].has_dwarf;
    }
    dw_cache_clear();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "gdb -nx -batch -ex 'info functions' '%s' > /dev/null 2>&1", binary);
    double gdb = run_timed(cmd);
    struct stat st;
    double mb = stat(binary, &st) == 0 ? st.st_size / 1e6 : 0;
    printf("| %s | %.0f MB | %zu (%zu with DWARF) | %.3f s | %.3f s | %.2f s |\n", binary, mb, n,
           n_dwarf, best, n ? best * 100000.0 / n : 0, gdb);
    fflush(stdout);
}

static void header(void)
{
    printf("| binary | size | functions indexed | strobe index (best of 3) "
           "| per 100k functions | gdb `info functions` |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        header();
        for (int i = 1; i < argc; i++)
            bench(argv[i]);
        return 0;
    }
    const char *env = getenv("BENCH_DWARF_INSTANCES");
    int instances = env && atoi(env) > 0 ? atoi(env) : 1000;
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bench_dwarf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || generate(dir, instances) != 0) {
        perror("bench_dwarf: temporary directory");
        return 1;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && (c++ -O0 -g -c tu0.cpp -o tu0.o & c++ -O0 -g -c tu1.cpp -o tu1.o & "
             "wait) && c++ -O0 -g -o big tu0.o tu1.o main.cpp",
             dir);
    double compile = run_timed(cmd);
    int rc = 0;
    if (compile < 0) {
        rc = 1;
    } else {
        printf("Generated C++ with %d template instances, compiled in %.1f s.\n\n", instances,
               compile);
        header();
        char binary[600];
        snprintf(binary, sizeof binary, "%s/big", dir);
        bench(binary);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
