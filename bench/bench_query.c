/*
 * bench_query.c - every debug_query shape of spec 003 at 200,000 events (not a test).
 * Prints Markdown table rows.
 *
 *   bench_query [DIR] [N]
 *
 * Fills a real store through the writer (rings, as the daemon does) with one session
 * of N (default 200,000) events: function_enter/function_exit pairs over 40 functions
 * in 5 files and 2 threads, durations spread over 0-1 ms, two pids, and a stdout or
 * stderr line every 10 events; plus a second session of 1,000 lines. Then runs each
 * query shape RUNS times (limit 50, totalCount included, as debug_query answers) and
 * prints p50/p95. Last, it deletes the big session while another thread queries the
 * small one (pushing an event, then its sync and query, as the daemon does for each
 * debug_query of a running session) and prints how long the delete took and the
 * other session's worst latency meanwhile; then the same probe while FLOODS sessions
 * flood the store with output for FLOOD_MS (one session's flood never delays
 * another's answers: tests/e2e/test_hardening.py checks the answers, this their
 * latency).
 *
 * DIR defaults to a fresh mkdtemp directory under $TMPDIR or /tmp, removed at the end.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/regex.h"
#include "store/store.h"

enum { RUNS = 50, NFUNC = 40, FLOODS = 4, FLOOD_MS = 3000 };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_query: %s: %s\n", what, why);
    exit(1);
}

static void push(struct store *s, struct ring *r, const struct event *e)
{
    while (!ring_try_push(r, e)) {
        store_wake(s);
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
}

static char fnames[NFUNC][48];
static const char *const files[] = {"/src/net/socket.c", "/src/net/http.c", "/src/db/pool.c",
                                    "/src/db/query.c", "/src/util/log.c"};

static void fill(struct store *s, int64_t key, int64_t n)
{
    struct ring *r = ring_create(4 << 20);
    store_attach_ring(s, r, 0);
    char args[64], text[96];
    int64_t seq = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ts = i * 1000;
        struct event e;
        if (i % 10 == 9) {
            e = event_init(key, i % 20 == 19 ? EV_STDERR : EV_STDOUT, ts);
            snprintf(text, sizeof text, "%s request %lld served in %lld us",
                     i % 20 == 19 ? "[warn]" : "[info]", (long long)i, (long long)(i % 977));
            e.text = text;
        } else {
            int f = (int)((i / 2 * 7) % NFUNC);
            e = event_init(key, i % 2 ? EV_FUNCTION_EXIT : EV_FUNCTION_ENTER, ts);
            e.function = fnames[f];
            e.source_file = files[f % 5];
            e.line = 10 + f;
            if (e.type == EV_FUNCTION_EXIT)
                e.parent_seq = seq; /* returns from the enter just before */
            e.seq = ++seq;
            if (e.type == EV_FUNCTION_ENTER) {
                snprintf(args, sizeof args, "[%lld,\"buf\"]", (long long)(i & 1023));
                e.arguments = args;
            } else {
                e.return_value = "0";
                e.duration_ns = (i * 7919) % 1000000;
            }
        }
        e.pid = i % 4 == 0 ? 5001 : 5000;
        e.tid = i % 3 ? 5000 : 5002;
        e.thread_name = i % 3 ? "main" : "worker-1";
        push(s, r, &e);
    }
    store_release_ring(s, r);
    store_sync(s);
}

static int64_t session(struct store *s, const char *id, int64_t limit)
{
    struct session_row r = {.id = (char *)id, .binary_path = "/bin/server", .pid = 5000,
                            .started_at_ms = 1700000000000};
    struct strobe_error err;
    if (store_session_create(s, &r, &err) < 0)
        die("session", err.msg);
    store_session_set_limit(s, r.key, limit);
    return r.key;
}

static struct event_query base(void)
{
    return (struct event_query){.limit = 50};
}

/* q on session key, its patterns compiled once as the engine does per request. */
static void shape(struct store_reader *r, const char *what, int64_t key, struct event_query q,
                  int flags)
{
    double ms[RUNS];
    struct store_result res = {0};
    struct strobe_error err;
    struct strobe_error why;
    if ((q.function_matches && !(q.function_re = regex_compile(q.function_matches, &why))) ||
        (q.text_matches && !(q.text_re = regex_compile(q.text_matches, &why))))
        die(what, why.msg);
    for (int i = 0; i < RUNS; i++) {
        double t0 = now_ms();
        if (store_query_events(r, key, &q, flags, &res, &err) < 0)
            die(what, err.msg);
        ms[i] = now_ms() - t0;
        if (i < RUNS - 1)
            store_result_free(&res);
    }
    qsort(ms, RUNS, sizeof *ms, cmp_d);
    double p95 = ms[RUNS * 95 / 100];
    printf("| %s | p50 %.2f ms, p95 %.2f ms | %d rows, totalCount %lld%s | %s |\n", what,
           ms[RUNS / 2], p95, res.n, (long long)res.total_count,
           res.total_is_lower_bound ? " (lower bound)" : "", p95 < 50 ? "met" : "MISSED");
    store_result_free(&res);
    event_query_free_compiled(&q);
}

struct prober {
    struct store *s;
    int64_t key;
    atomic_bool stop;
    double worst_ms;
    int n;
    double ms[4096]; /* the first probes' latencies, for a median */
};

static void *probe_main(void *arg)
{
    struct prober *p = arg;
    struct strobe_error err;
    struct store_reader *r = store_reader_open(p->s, &err);
    if (!r)
        die("reader", err.msg);
    struct ring *ring = ring_create(1 << 16);
    store_attach_ring(p->s, ring, 0);
    for (int64_t ts = 1000000000; !atomic_load(&p->stop); ts++) {
        struct event_query q = base();
        struct store_result res;
        struct event e = event_init(p->key, EV_STDOUT, ts);
        e.text = "still here";
        double t0 = now_ms();
        push(p->s, ring, &e);
        store_wake(p->s);
        store_sync_session(p->s, p->key, 2000);
        if (store_query_events(r, p->key, &q, STORE_QUERY_LATEST, &res, &err) < 0)
            die("probe", err.msg);
        double dt = now_ms() - t0;
        store_result_free(&res);
        if (dt > p->worst_ms)
            p->worst_ms = dt;
        if (p->n < (int)(sizeof p->ms / sizeof *p->ms))
            p->ms[p->n] = dt;
        p->n++;
        usleep(2000);
    }
    store_release_ring(p->s, ring);
    store_reader_close(r);
    return NULL;
}

struct flooder {
    struct store *s;
    int64_t key;
    atomic_bool *stop;
    int64_t pushed;
};

/* A program's output as fast as the store takes it, into a session of its own. */
static void *flood_main(void *arg)
{
    struct flooder *f = arg;
    struct ring *ring = ring_create(4 << 20);
    store_attach_ring(f->s, ring, 0);
    char text[96];
    for (; !atomic_load(f->stop); f->pushed++) {
        struct event e = event_init(f->key, EV_STDOUT, f->pushed * 1000);
        snprintf(text, sizeof text, "line %lld of a program that prints all the time",
                 (long long)f->pushed);
        e.text = text;
        push(f->s, ring, &e);
    }
    store_release_ring(f->s, ring);
    return NULL;
}

/* The probe on session key while FLOODS other sessions flood the store. */
static void floods_meanwhile(struct store *s, int64_t key)
{
    atomic_bool stop = false;
    struct flooder f[FLOODS];
    pthread_t ft[FLOODS], pt;
    for (int i = 0; i < FLOODS; i++) {
        char id[32];
        snprintf(id, sizeof id, "flood-%d", i);
        f[i] = (struct flooder){.s = s, .key = session(s, id, 1000000), .stop = &stop};
        pthread_create(&ft[i], NULL, flood_main, &f[i]);
    }
    usleep(200000); /* the floods in full swing */
    struct prober p = {.s = s, .key = key};
    pthread_create(&pt, NULL, probe_main, &p);
    usleep(FLOOD_MS * 1000);
    atomic_store(&p.stop, true);
    pthread_join(pt, NULL);
    atomic_store(&stop, true);
    int64_t pushed = 0;
    for (int i = 0; i < FLOODS; i++) {
        pthread_join(ft[i], NULL);
        pushed += f[i].pushed;
    }
    store_sync(s);
    int cap = (int)(sizeof p.ms / sizeof *p.ms), kept = p.n < cap ? p.n : cap;
    qsort(p.ms, (size_t)kept, sizeof *p.ms, cmp_d);
    printf("| %d sessions flood their output for %d ms | %lld lines pushed |"
           " meanwhile another session's push + sync + query: median %.2f ms, worst %.2f ms"
           " over %d | %s |\n",
           FLOODS, FLOOD_MS, (long long)pushed, kept ? p.ms[kept / 2] : 0.0, p.worst_ms, p.n,
           p.worst_ms < 50 ? "met" : "MISSED");
}

int main(int argc, char **argv)
{
    char tmpl[] = "/tmp/strobe-bench-query-XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);
    int64_t n = argc > 2 ? atoll(argv[2]) : 200000;
    char path[4096];
    struct strobe_error err;
    snprintf(path, sizeof path, "%s/bench.db", dir);
    unlink(path);
    for (int i = 0; i < NFUNC; i++)
        snprintf(fnames[i], sizeof fnames[i], "%s::handler_%02d", i % 2 ? "net" : "db", i);
    struct store *s = store_open(path, &err);
    if (!s)
        die("open", err.msg);
    int64_t big = session(s, "big", n + 1), small = session(s, "small", 10000);
    double t0 = now_ms();
    fill(s, big, n);
    double fill_ms = now_ms() - t0;
    fill(s, small, 1000);
    struct store_reader *r = store_reader_open(s, &err);
    if (!r)
        die("reader", err.msg);
    printf("| shape (%lld events, limit 50) | time | answer | goal p95 < 50 ms |\n",
           (long long)n);
    printf("| --- | --- | --- | --- |\n");
    printf("| fill through the writer | %.0f ms | %.0f events/s | |\n", fill_ms,
           n / fill_ms * 1e3);
    struct event_query q = base();
    shape(r, "no filter, first page", big, q, 0);
    shape(r, "no filter, latest page", big, q, STORE_QUERY_LATEST);
    q = base();
    q.offset = (int)(n / 2);
    shape(r, "offset n/2", big, q, 0);
    q = base();
    q.event_type = EV_STDERR;
    shape(r, "eventType stderr", big, q, 0);
    q.event_type = EV_FUNCTION_EXIT;
    shape(r, "eventType function_exit", big, q, 0);
    q = base();
    q.function_equals = fnames[7];
    shape(r, "function.equals", big, q, 0);
    q = base();
    q.function_contains = "handler_1";
    shape(r, "function.contains (10 of 40)", big, q, 0);
    q = base();
    q.function_matches = "^db::handler_0[0-4]$";
    shape(r, "function.matches (3 of 40)", big, q, 0);
    q = base();
    q.file_equals = files[2];
    shape(r, "sourceFile equals", big, q, 0);
    q = base();
    q.file_contains = "net/";
    shape(r, "sourceFile contains", big, q, 0);
    q = base();
    q.thread_name_contains = "worker";
    shape(r, "threadName contains", big, q, 0);
    q = base();
    q.pid = 5001;
    shape(r, "pid", big, q, 0);
    q = base();
    q.from.set = q.to.set = true;
    q.from.ns = n * 1000 / 2;
    q.to.ns = q.from.ns + n * 1000 / 100;
    shape(r, "timeFrom/timeTo (1% window)", big, q, 0);
    q = base();
    q.min_duration_ns = 990000;
    shape(r, "minDurationNs (1% of exits)", big, q, 0);
    q.min_duration_ns = 100000;
    shape(r, "minDurationNs (90% of exits)", big, q, 0);
    q.function_equals = fnames[7];
    shape(r, "minDurationNs + function.equals", big, q, 0);
    q = base();
    q.open_calls = true;
    shape(r, "openCalls (5% of enters)", big, q, 0);
    q = base();
    q.text_contains = "served in 5 us";
    shape(r, "text contains (rare)", big, q, 0);
    q.text_contains = "[warn]";
    shape(r, "text contains (5%)", big, q, 0);
    q = base();
    q.text_matches = "request 1999[0-9]9 ";
    shape(r, "text matches (rare)", big, q, 0);
    q = base();
    q.after_id = n / 2;
    shape(r, "afterEventId (half)", big, q, 0);
    q.after_id = n - 20;
    shape(r, "afterEventId (poll)", big, q, 0);
    q = base();
    q.return_equals = "0";
    shape(r, "returnValue equals", big, q, 0);
    store_reader_close(r);

    struct prober p = {.s = s, .key = small};
    pthread_t th;
    pthread_create(&th, NULL, probe_main, &p);
    usleep(20000);
    t0 = now_ms();
    if (store_session_delete(s, big, &err) < 0)
        die("delete", err.msg);
    double call_ms = now_ms() - t0;
    while (store_deletes_pending(s) > 0)
        store_sync(s);
    double del_ms = now_ms() - t0;
    atomic_store(&p.stop, true);
    pthread_join(th, NULL);
    printf("| delete the %lld-event session | call %.1f ms, events gone after %.0f ms |"
           " meanwhile another session's push + sync + query: worst %.2f ms over %d | %s |\n",
           (long long)n, call_ms, del_ms, p.worst_ms, p.n, p.worst_ms < 50 ? "met" : "MISSED");
    floods_meanwhile(s, small);
    store_close(s);
    if (argc <= 1) {
        unlink(path);
        char side[4200];
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        unlink(side);
        rmdir(dir);
    }
    return 0;
}
