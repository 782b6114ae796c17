/*
 * bench_fastrec.c - the cost of the fast path's recorder per call, in this process:
 * a function patched with the real entry jump, trampolines and recorder blob
 * (tests/unit/fast_harness.h), called N times in a loop, against the same code
 * unpatched. A second thread drains the ring every millisecond, as the daemon
 * would, so no record is lost. Prints a Markdown table of ns per call (medians of
 * REPS runs), then what a write to a page of a new ring costs on this machine.
 *
 *   bench_fastrec [N [REPS]]   (default 1,000,000 calls, 5 runs)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "tests/unit/fast_harness.h"

#define FN_ATTR __attribute__((noipa, patchable_function_entry(5, 0)))

FN_ATTR long bench_plain(long x);
FN_ATTR long bench_traced(long x);

long bench_plain(long x)
{
    return x + 1;
}

long bench_traced(long x)
{
    return x + 1;
}

static atomic_bool stop;

static void *drainer(void *arg)
{
    static struct fast_record buf[4096];
    (void)arg;
    struct timespec ms = {0, 1000000};
    while (!atomic_load(&stop)) {
        while (fh_drain(buf, sizeof buf / sizeof *buf))
            ;
        nanosleep(&ms, NULL); /* the daemon drains in batches, not record by record */
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double ns_per_call(long (*volatile fn)(long), long n)
{
    long acc = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        acc += fn(i);
    double t = now_ns() - t0;
    if (acc != n * (n + 1) / 2)
        fprintf(stderr, "bench_fastrec: wrong results\n");
    return t / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(long (*fn)(long), long n, int reps)
{
    double v[64];
    for (int r = 0; r < reps; r++)
        v[r] = ns_per_call(fn, n);
    qsort(v, (size_t)reps, sizeof *v, cmp);
    return v[reps / 2];
}

/* ns per page of one write to each page of size bytes at p. */
static double write_pages(char *p, size_t size)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t i = 0; i < size; i += 4096)
        ((volatile char *)p)[i] = 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
           (double)(size / 4096);
}

/* What a ring page's first write costs a recorded call on this machine (one page
 * every 16 calls while the ring is new): fresh, after the daemon's populate, and
 * written before. A hypervisor may charge the first user write of a page even when
 * the kernel has populated it. */
static void first_writes(void)
{
    size_t size = (size_t)FAST_RING_RECORDS * FAST_RECORD_SIZE;
    char *fresh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *pop = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED || pop == MAP_FAILED)
        return;
    double f = write_pages(fresh, size);
    double w = write_pages(fresh, size);
    bool populated = madvise(pop, size, MADV_POPULATE_WRITE) == 0;
    double q = write_pages(pop, size);
    printf("\n| a write to each page of a %zu MiB ring | ns per page |\n| --- | --- |\n",
           size >> 20);
    printf("| first write, fresh page | %.0f |\n", f);
    printf("| first write after MADV_POPULATE_WRITE%s | %.0f |\n",
           populated ? "" : " (refused: as fresh)", q);
    printf("| page written before | %.0f |\n", w);
    munmap(fresh, size);
    munmap(pop, size);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n <= 0 || reps <= 0 || reps > 64) {
        fprintf(stderr, "usage: bench_fastrec [N [REPS]]\n");
        return 2;
    }
    if (!fh_init((const void *)bench_traced) || !fh_patch((void *)bench_traced, "bench_traced", 0))
        return 1;
    pthread_t th;
    if (pthread_create(&th, NULL, drainer, NULL))
        return 1;
    /* The budget's modes (fast_abi.h, FAST_FN_BUDGET): a traced function's calls
     * within its quota, and past its quota and credit (counted by the recorder). */
    static const struct {
        const char *what;
        uint32_t flags;
        int64_t quota;
    } modes[] = {
        {"counted only (no record)", 0, 0},
        {"enter record", FAST_FN_RECORD, 0},
        {"enter + exit records", FAST_FN_RECORD | FAST_FN_EXITS, 0},
        {"enter + exit records, within a budget's quota",
         FAST_FN_RECORD | FAST_FN_EXITS | FAST_FN_BUDGET, INT64_MAX},
        {"past its budget (counted by the recorder)",
         FAST_FN_RECORD | FAST_FN_EXITS | FAST_FN_BUDGET, 0},
    };
    double plain = median(bench_plain, n, reps);
    printf("| call (%ld calls, median of %d) | ns per call | over untraced |\n", n, reps);
    printf("| --- | --- | --- |\n");
    printf("| untraced | %.1f | |\n", plain);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        fh_fn(0)->flags = modes[m].flags;
        fh_fn(0)->quota = modes[m].quota;
        fh_fn(0)->credit = 0;
        double v = median(bench_traced, n, reps);
        printf("| %s | %.1f | +%.1f |\n", modes[m].what, v, v - plain);
    }
    printf("\nlost records: %lu\n", (unsigned long)fh_fn(0)->lost);
    atomic_store(&stop, true);
    pthread_join(th, NULL);
    first_writes();
    return 0;
}
