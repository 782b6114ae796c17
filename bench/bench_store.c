/*
 * bench_store.c - store benchmark (not a test). Prints Markdown table rows.
 *
 *   bench_store [DIR] [N] [--index-cost]
 *
 * 1. Ingestion: N (default 2,000,000) function_enter/function_exit events with 20
 *    distinct function names, plus a stdout line every 1,000 events from a second
 *    producer thread (which waits for the calls to reach each line's timestamp),
 *    pushed through rings into one session (limit above N so nothing
 *    is evicted), then store_sync(). Each producer keeps its ring's floor at a
 *    timestamp it pushed (base/ring.h, "Time order"), so the writer orders the two
 *    streams by time as it orders a session's tracer and output. Reports
 *    sustained events/s (goal >= 1,000,000).
 * 2. Query latency on a session of 1,000,000 events: latest 50, function contains,
 *    count by function, time range; 200 runs each, p50 and p95 in ms (goal p95 < 5).
 * --index-cost: also ingests 500,000 events with each events index dropped in turn,
 *    to show what each index costs at insert time.
 *
 * DIR defaults to a fresh mkdtemp directory under $TMPDIR or /tmp, removed at the end.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static const char *const files[] = {"/src/audio/engine.cpp", "/src/audio/mixer.cpp",
                                    "/src/midi/clock.cpp", "/src/ui/window.cpp",
                                    "/src/util/log.c"};
static char fnames[20][64];

struct producer {
    struct store *s;
    struct ring *ring;
    int64_t key;
    int64_t n; /* events to push */
    bool output;
    int64_t pushed;
    _Atomic int64_t *time; /* the calls' producer's latest timestamp: the lines follow it */
};

/* Like ring_push(), but a full ring costs the producer a short sleep instead of one
 * futex wake-up per event popped: ring_pop() signals a waiting producer on every pop,
 * which in a flood turns into a context switch per event and measures the ring's
 * hand-off, not the store. */
static void push(struct producer *p, const struct event *e)
{
    while (!ring_try_push(p->ring, e)) {
        store_wake(p->s);
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Its next events are no older: said at every line, and every 256 calls (the
     * tracer says it once per drain). */
    if (p->output || ++p->pushed % 256 == 0)
        ring_floor(p->ring, e->ts_ns);
    if (!p->output)
        atomic_store_explicit(p->time, e->ts_ns, memory_order_relaxed);
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    char text[128], args[64];
    int64_t seq = 0;
    if (p->output) {
        for (int64_t i = 0; i < p->n; i++) {
            snprintf(text, sizeof text, "[info] processed block %lld of the input stream",
                     (long long)i);
            struct event e = event_init(p->key, EV_STDOUT, i * 1000 * 1000);
            /* printed when the calls reach its time, as a program's lines are */
            while (atomic_load_explicit(p->time, memory_order_relaxed) < e.ts_ns) {
                struct timespec ts = {0, 100 * 1000};
                nanosleep(&ts, NULL);
            }
            e.pid = 4242;
            e.tid = 4242;
            e.text = text;
            push(p, &e);
        }
        ring_idle(p->ring);
        return NULL;
    }
    for (int64_t i = 0; i < p->n; i += 2) {
        int f = (int)((i / 2 * 7) % 20);
        snprintf(args, sizeof args, "[%lld,\"buf\",0.5]", (long long)(i & 1023));
        struct event e = event_init(p->key, EV_FUNCTION_ENTER, i * 1000);
        e.pid = 4242;
        e.tid = 4243;
        e.thread_name = "audio";
        e.seq = ++seq;
        e.parent_seq = seq > 1 ? seq - 1 : 0;
        e.function = fnames[f];
        e.source_file = files[f % 5];
        e.line = 100 + f;
        e.arguments = args;
        push(p, &e);
        e = event_init(p->key, EV_FUNCTION_EXIT, i * 1000 + 500);
        e.pid = 4242;
        e.tid = 4243;
        e.thread_name = "audio";
        e.seq = ++seq;
        e.function = fnames[f];
        e.source_file = files[f % 5];
        e.return_value = "0";
        e.duration_ns = 500;
        push(p, &e);
    }
    ring_idle(p->ring);
    return NULL;
}

static int64_t make_session(struct store *s, const char *id, int64_t limit)
{
    struct session_row r = {.id = (char *)id, .binary_path = "/bin/synth", .pid = 4242,
                            .started_at_ms = 1700000000000};
    struct strobe_error err;
    if (store_session_create(s, &r, &err) < 0) {
        fprintf(stderr, "session: %s\n", err.msg);
        exit(1);
    }
    store_session_set_limit(s, r.key, limit);
    return r.key;
}

/* Ingests n function events (+ n/1000 lines); returns events/s. */
static double ingest(struct store *s, int64_t key, int64_t n, int64_t *total)
{
    _Atomic int64_t time = 0;
    struct producer fp = {s, ring_create(4 << 20), key, n, false, 0, &time};
    struct producer op = {s, ring_create(1 << 20), key, n / 1000, true, 0, &time};
    store_attach_ring(s, fp.ring, key);
    store_attach_ring(s, op.ring, key);
    double t0 = now_s();
    pthread_t a, b;
    pthread_create(&a, NULL, producer_main, &fp);
    pthread_create(&b, NULL, producer_main, &op);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    store_sync(s);
    double dt = now_s() - t0;
    store_release_ring(s, fp.ring);
    store_release_ring(s, op.ring);
    *total = n + n / 1000;
    return *total / dt;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { RUNS = 200 };

static void report(const char *what, double *ms, const char *note)
{
    qsort(ms, RUNS, sizeof *ms, cmp_d);
    double p50 = ms[RUNS / 2], p95 = ms[RUNS * 95 / 100];
    printf("| query at 1,000,000 events: %s | p50 %.3f ms, p95 %.3f ms | %s | %s |\n", what,
           p50, p95, note, p95 < 5.0 ? "met (p95 < 5 ms)" : "MISSED (p95 < 5 ms)");
}

static void query_bench(struct store *s, int64_t key, int64_t span_ns)
{
    struct strobe_error err;
    struct store_reader *r = store_reader_open(s, &err);
    if (!r) {
        fprintf(stderr, "reader: %s\n", err.msg);
        exit(1);
    }
    double ms[RUNS];
    struct store_result res;
    char note[160];

    for (int i = 0; i < RUNS; i++) {
        struct event_query q = {.limit = 50};
        double t0 = now_s();
        if (store_query_events(r, key, &q, STORE_QUERY_LATEST, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "%d rows, totalCount %lld", res.n, (long long)res.total_count);
        store_result_free(&res);
    }
    report("latest 50 of the session", ms, note);

    for (int i = 0; i < RUNS; i++) {
        struct event_query q = {.limit = 50, .function_contains = "mixer::"};
        double t0 = now_s();
        if (store_query_events(r, key, &q, 0, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "function contains \"mixer::\" (2 of 20 names): %d rows, "
                 "totalCount %lld%s", res.n, (long long)res.total_count,
                 res.total_is_lower_bound ? " (lower bound)" : "");
        store_result_free(&res);
    }
    report("function contains, first page", ms, note);

    for (int i = 0; i < RUNS; i++) {
        struct event_query q = {.limit = 50, .function_equals = fnames[3]};
        double t0 = now_s();
        if (store_query_events(r, key, &q, STORE_QUERY_LATEST, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "function equals, latest 50: %d rows, totalCount %lld%s",
                 res.n, (long long)res.total_count,
                 res.total_is_lower_bound ? " (lower bound)" : "");
        store_result_free(&res);
    }
    report("function equals, latest page", ms, note);

    for (int i = 0; i < RUNS; i++) {
        /* Function events are not in the partial ev_session_type: served by ev_session_ts. */
        struct event_query q = {.limit = 50, .event_type = EV_FUNCTION_EXIT};
        double t0 = now_s();
        if (store_query_events(r, key, &q, STORE_QUERY_LATEST, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "eventType function_exit, latest 50: %d rows, totalCount %lld",
                 res.n, (long long)res.total_count);
        store_result_free(&res);
    }
    report("event type, latest page", ms, note);

    for (int i = 0; i < RUNS; i++) {
        struct function_count *fc;
        int n;
        double t0 = now_s();
        if (store_count_by_function(r, key, 20, &fc, &n) < 0) {
            fprintf(stderr, "count by function failed\n");
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "%d functions, top %lld calls", n,
                 n ? (long long)fc[0].count : 0LL);
        for (int k = 0; k < n; k++) {
            free(fc[k].function);
            free(fc[k].function_raw);
        }
        free(fc);
    }
    report("count by function", ms, note);

    for (int i = 0; i < RUNS; i++) {
        /* A window of 1% of the session, at a varying place. */
        int64_t from = (span_ns / 200) * (i % 150);
        struct event_query q = {.limit = 50,
                                .from = {.set = true, .ns = from},
                                .to = {.set = true, .ns = from + span_ns / 100}};
        double t0 = now_s();
        if (store_query_events(r, key, &q, 0, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "1%% window: %d rows, totalCount %lld%s", res.n,
                 (long long)res.total_count, res.total_is_lower_bound ? " (lower bound)" : "");
        store_result_free(&res);
    }
    report("time range", ms, note);

    for (int i = 0; i < RUNS; i++) {
        /* A 10% window: the count hits the 100,000 cap. */
        int64_t from = (span_ns / 200) * (i % 100);
        struct event_query q = {.limit = 50,
                                .from = {.set = true, .ns = from},
                                .to = {.set = true, .ns = from + span_ns / 10}};
        double t0 = now_s();
        if (store_query_events(r, key, &q, 0, &res, &err) < 0) {
            fprintf(stderr, "query: %s\n", err.msg);
            exit(1);
        }
        ms[i] = (now_s() - t0) * 1e3;
        snprintf(note, sizeof note, "10%% window: %d rows, totalCount %lld%s", res.n,
                 (long long)res.total_count, res.total_is_lower_bound ? " (lower bound)" : "");
        store_result_free(&res);
    }
    report("time range, wide", ms, note);
    store_reader_close(r);
}

static void rm_rf(const char *dir)
{
    const char *names[] = {"bench.db", "bench.db-wal", "bench.db-shm"};
    char p[600];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
}

static struct store *open_fresh(const char *dir, char *path, size_t len)
{
    snprintf(path, len, "%s/bench.db", dir);
    rm_rf(dir);
    struct strobe_error err;
    struct store *s = store_open(path, &err);
    if (!s) {
        fprintf(stderr, "store_open: %s\n", err.msg);
        exit(1);
    }
    return s;
}

static void index_cost(const char *dir)
{
    const char *idx[] = {NULL, "ev_session_ts", "ev_session_type", "ev_session_func"};
    const int64_t n = 500000;
    for (size_t i = 0; i < sizeof idx / sizeof *idx; i++) {
        char path[600];
        struct store *s = open_fresh(dir, path, sizeof path);
        if (idx[i]) {
            sqlite3 *db;
            char sql[128];
            snprintf(sql, sizeof sql, "DROP INDEX %s", idx[i]);
            sqlite3_open(path, &db);
            sqlite3_busy_timeout(db, 5000);
            sqlite3_exec(db, sql, NULL, NULL, NULL);
            sqlite3_close(db);
        }
        int64_t key = make_session(s, "idx", n * 2);
        int64_t total;
        double rate = ingest(s, key, n, &total);
        printf("| ingest without %s | %.0f events/s | %lld events | - |\n",
               idx[i] ? idx[i] : "(none dropped: all indexes)", rate, (long long)total);
        fflush(stdout);
        store_close(s);
    }
}

int main(int argc, char **argv)
{
    char dirbuf[512];
    const char *dir = NULL;
    int64_t n = 2000000;
    bool cost = false, own_dir = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--index-cost"))
            cost = true;
        else if (!dir)
            dir = argv[i];
        else
            n = atoll(argv[i]);
    }
    if (!dir || !strcmp(dir, "-")) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dirbuf, sizeof dirbuf, "%s/strobe-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dirbuf)) {
            perror("mkdtemp");
            return 1;
        }
        dir = dirbuf;
        own_dir = true;
    }
    for (int i = 0; i < 20; i++)
        snprintf(fnames[i], sizeof fnames[i], "%s::%s_%d(float*, int)",
                 i < 4 ? "audio::engine" : i < 6 ? "audio::mixer" : i < 12 ? "midi::clock" : "ui",
                 i % 2 ? "process" : "update", i);

    printf("| benchmark | result | detail | goal |\n| --- | --- | --- | --- |\n");
    char path[600];
    struct store *s = open_fresh(dir, path, sizeof path);
    int64_t key = make_session(s, "ingest", n * 2);
    int64_t total;
    double rate = ingest(s, key, n, &total);
    printf("| ingest %lld events (20 functions, stdout every 1000) | %.0f events/s | "
           "%lld bytes on disk (%.0f B/event) | %s |\n",
           (long long)total, rate, (long long)store_size_bytes(s),
           (double)store_size_bytes(s) / total, rate >= 1e6 ? "met" : "MISSED (goal 1,000,000/s)");
    fflush(stdout);

    /* A session of exactly 1,000,000 events for the query latencies. */
    int64_t qkey = make_session(s, "query", 2000000);
    int64_t qn = 1000000 - 1000000 / 1001; /* + lines = 1,000,000 events */
    ingest(s, qkey, qn, &total);
    query_bench(s, qkey, qn * 1000);
    store_close(s);

    if (cost)
        index_cost(dir);
    rm_rf(dir);
    if (own_dir)
        rmdir(dir);
    return 0;
}
