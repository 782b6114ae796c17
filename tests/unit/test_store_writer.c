/*
 * test_store_writer.c - the store's writer: FIFO eviction by the per-session event
 * cap (and which event types it may evict: logpoints and watch hits, not pauses),
 * the store_sync() and store_sync_session() barriers while producers keep pushing,
 * a batch the database refuses (its events lost, counted exactly per session), and
 * the time order of ids: an event waits for the producers whose floor is behind it
 * (base/ring.h), a producer's own late and unsorted events included, and no longer
 * than the hold's bound when a producer stalls.
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "tests/unit/store_fixture.h"

static void test_eviction(void **state)
{
    struct fx *f = *state;
    int64_t k = new_session(f, "evict");
    int64_t other = new_session(f, "other");
    store_session_set_limit(f->s, k, 100);
    char fn[32], line[32];
    int64_t seq = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(fn, sizeof fn, "f%d", i % 7);
        struct event e = event_init(k, EV_FUNCTION_ENTER, i * 10);
        e.seq = ++seq;
        e.function = fn;
        push(f, &e);
        e = event_init(k, EV_FUNCTION_EXIT, i * 10 + 1);
        e.seq = ++seq;
        e.function = fn;
        e.duration_ns = 1;
        push(f, &e);
        if (i % 10 == 0) {
            snprintf(line, sizeof line, "line %d", i);
            e = event_init(k, i % 20 ? EV_STDERR : EV_STDOUT, i * 10 + 2);
            e.text = line;
            push(f, &e);
        }
        if (i % 100 == 0) /* some events of an unlimited session in between */
            store_sync(f->s);
        e = event_init(other, EV_FUNCTION_ENTER, i);
        e.function = fn;
        push(f, &e);
    }
    struct event e = event_init(k, EV_CRASH, 5000);
    e.text = "SIGSEGV";
    push(f, &e);
    e = event_init(k, EV_PROCESS_EXIT, 5001);
    e.text = "killed";
    push(f, &e);
    store_sync(f->s);

    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    int64_t evictable = c[EV_FUNCTION_ENTER] + c[EV_FUNCTION_EXIT];
    assert_true(evictable >= 100 && evictable <= 101);
    assert_int_equal(c[EV_STDOUT], 25); /* never evicted */
    assert_int_equal(c[EV_STDERR], 25);
    assert_int_equal(c[EV_CRASH], 1);
    assert_int_equal(c[EV_PROCESS_EXIT], 1);

    /* The counters agree with the rows, and the survivors are the newest. */
    struct event_query q = q_init();
    q.event_type = EV_FUNCTION_ENTER;
    q.limit = 500;
    struct store_result res = run(f, k, &q);
    assert_int_equal(res.n, c[EV_FUNCTION_ENTER]);
    assert_true(res.rows[0].ts_ns >= 4000);
    assert_int_equal(res.rows[res.n - 1].ts_ns, 4990);
    store_result_free(&res);
    q = q_init();
    q.event_type = EV_STDOUT;
    q.limit = 1;
    res = run(f, k, &q);
    assert_string_equal(res.rows[0].text, "line 0");
    assert_int_equal(res.total_count, 25);
    store_result_free(&res);
    q = q_init();
    q.limit = 1000;
    res = run(f, k, &q);
    assert_int_equal(res.n, evictable + 52);
    store_result_free(&res);

    /* Function counts are calls observed: eviction does not lower them. */
    struct function_count *fc;
    int n;
    assert_int_equal(store_count_by_function(f->r, k, 10, &fc, &n), 0);
    int64_t calls = 0;
    for (int i = 0; i < n; i++) {
        calls += fc[i].count;
        free(fc[i].function);
    }
    free(fc);
    assert_int_equal(calls, 500);

    /* The other session (default limit) lost nothing. */
    assert_int_equal(store_count_by_type(f->r, other, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], 500);
}

/* A producer keeps pushing while store_sync() runs: everything pushed before the
 * call is visible after it. */
struct busy {
    struct fx *f;
    int64_t key;
    atomic_int pushed;
    atomic_int stop;
    struct ring *ring;
};

static void *busy_main(void *arg)
{
    struct busy *b = arg;
    while (!atomic_load(&b->stop)) {
        struct event e = event_init(b->key, EV_FUNCTION_ENTER, atomic_load(&b->pushed));
        e.function = "spin";
        ring_push(b->ring, &e, store_wake, b->f->s);
        atomic_fetch_add(&b->pushed, 1);
        if (atomic_load(&b->pushed) % 16 == 0)
            usleep(200);
    }
    return NULL;
}

static void test_sync_barrier(void **state)
{
    struct fx *f = *state;
    struct busy b = {.f = f, .key = new_session(f, "busy"), .ring = ring_create(1 << 16)};
    store_attach_ring(f->s, b.ring, 0);
    store_session_set_limit(f->s, b.key, 1000000000); /* count everything */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, busy_main, &b), 0);
    for (int i = 0; i < 20; i++) {
        usleep(2000);
        int before = atomic_load(&b.pushed);
        store_sync(f->s);
        int64_t c[EV_TYPE_MAX + 1];
        assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
        if (c[EV_FUNCTION_ENTER] < before)
            fail_msg("after store_sync: %lld events stored, %d pushed before the call",
                     (long long)c[EV_FUNCTION_ENTER], before);
    }
    atomic_store(&b.stop, 1);
    pthread_join(t, NULL);
    store_release_ring(f->s, b.ring); /* drained, then destroyed by the writer */
    store_sync(f->s);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
    assert_int_equal(c[EV_FUNCTION_ENTER], atomic_load(&b.pushed));
}

/* store_sync_session: a barrier for one session's events (everything it pushed
 * before the call is visible after it), while another session floods. */
static void test_sync_session_barrier(void **state)
{
    struct fx *f = *state;
    struct busy b = {.f = f, .key = new_session(f, "flood"), .ring = ring_create(1 << 16)};
    store_attach_ring(f->s, b.ring, 0);
    store_session_set_limit(f->s, b.key, 1000000000);
    int64_t quiet = new_session(f, "quiet");
    struct ring *qr = ring_create(1 << 16);
    store_attach_ring(f->s, qr, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, busy_main, &b), 0);
    for (int i = 1; i <= 20; i++) {
        struct event e = event_init(quiet, EV_STDOUT, i);
        e.text = "line";
        ring_push(qr, &e, store_wake, f->s);
        assert_int_equal(store_sync_session(f->s, quiet, 10000), 0);
        int64_t c[EV_TYPE_MAX + 1];
        assert_int_equal(store_count_by_type(f->r, quiet, c), 0);
        assert_int_equal(c[EV_STDOUT], i);
        int before = atomic_load(&b.pushed);
        assert_int_equal(store_sync_session(f->s, b.key, -1), 0);
        assert_int_equal(store_count_by_type(f->r, b.key, c), 0);
        if (c[EV_FUNCTION_ENTER] < before)
            fail_msg("after store_sync_session: %lld events stored, %d pushed before",
                     (long long)c[EV_FUNCTION_ENTER], before);
    }
    /* Nothing of the quiet session on its way: answers at once, whatever the flood. */
    assert_int_equal(store_sync_session(f->s, quiet, 0), 0);
    atomic_store(&b.stop, 1);
    pthread_join(t, NULL);
    store_release_ring(f->s, b.ring);
    store_release_ring(f->s, qr);
    store_sync(f->s);
}

/* A batch the database refuses: its events are lost and counted per session, one
 * by one (stored + lost == pushed), and the writer goes on with the next ones. The
 * failure is injected with a trigger, through a connection of the test's own. */
static void test_lost_events_are_counted_exactly(void **state)
{
    struct fx *f = *state;
    int64_t a = new_session(f, "lossy"), b = new_session(f, "bystander");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER poison BEFORE INSERT ON events "
                                      "WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, "
                                      "'injected failure'); END;", NULL, NULL, NULL),
                     SQLITE_OK);
    int pushed_a = 0;
    for (int i = 0; i < 100; i++, pushed_a++) {
        struct event e = event_init(i % 2 ? a : b, EV_STDOUT, 1000 + i);
        e.text = i == 60 ? "poison" : "fine";
        push(f, &e);
    }
    store_sync(f->s);
    /* After the failure, later events are stored again. */
    struct event e = event_init(a, EV_STDOUT, 5000);
    e.text = "after";
    push(f, &e);
    store_sync(f->s);
    int64_t ca[EV_TYPE_MAX + 1], cb[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, a, ca), 0);
    assert_int_equal(store_count_by_type(f->r, b, cb), 0);
    char msg[256];
    int64_t lost_a = store_session_lost(f->s, a, NULL, 0);
    /* b lost the poisoned event at least: its count comes with the sentence (which
     * of a's events shared the failed batch depends on the writer's turns) */
    int64_t lost_b = store_session_lost(f->s, b, msg, sizeof msg);
    assert_true(lost_b >= 1);
    assert_int_equal(ca[EV_STDOUT] + lost_a, 50 + 1);
    assert_int_equal(cb[EV_STDOUT] + lost_b, 50);
    assert_non_null(strstr(msg, "injected failure"));
    struct event_query q = q_init();
    q.event_type = EV_STDOUT;
    q.limit = 100;
    struct store_result res = run(f, a, &q);
    assert_string_equal(res.rows[res.n - 1].text, "after");
    store_result_free(&res);
    sqlite3_exec(db, "DROP TRIGGER poison", NULL, NULL, NULL);
    sqlite3_close(db);
}

static void test_logpoints_evictable_pauses_not(void **state)
{
    struct fx *f = *state;
    assert_true(event_type_evictable(EV_LOGPOINT));
    assert_true(event_type_evictable(EV_WATCH_HIT));
    assert_false(event_type_evictable(EV_PAUSE));
    int64_t k = new_session(f, "logs");
    store_session_set_limit(f->s, k, 100);
    for (int i = 0; i < 400; i++) {
        struct event e = event_init(k, EV_LOGPOINT, i * 10);
        e.text = "tick";
        push(f, &e);
        if (i % 40 == 0) {
            e = event_init(k, EV_PAUSE, i * 10 + 1);
            e.text = "paused";
            push(f, &e);
            e = event_init(k, EV_WATCH_HIT, i * 10 + 2);
            push(f, &e);
            store_sync(f->s);
        }
    }
    store_sync(f->s);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, k, c), 0);
    assert_true(c[EV_LOGPOINT] + c[EV_WATCH_HIT] >= 100);
    assert_true(c[EV_LOGPOINT] + c[EV_WATCH_HIT] <= 101);
    assert_int_equal(c[EV_PAUSE], 10);
    struct event_query q = q_init();
    q.event_type = EV_PAUSE;
    assert_int_equal(count(f, k, &q), 10);
    q.event_type = EV_LOGPOINT;
    q.text_contains = "tick";
    assert_int_equal(count(f, k, &q), c[EV_LOGPOINT]);
    /* every eviction counted by type: kept + evicted = pushed; pauses never go */
    struct store_evicted_type ev[EV_TYPE_MAX + 1];
    assert_int_equal(store_evicted_by_type(f->r, k, ev), 0);
    assert_int_equal(c[EV_LOGPOINT] + ev[EV_LOGPOINT].events, 400);
    assert_int_equal(c[EV_WATCH_HIT] + ev[EV_WATCH_HIT].events, 10);
    assert_int_equal(ev[EV_PAUSE].events, 0);
    assert_true(ev[EV_LOGPOINT].through_id > 0 && ev[EV_LOGPOINT].through_ns > 0);
    /* the oldest logpoint kept comes after the newest evicted */
    int64_t oldest = 0;
    assert_int_equal(store_oldest_kept(f->r, k, 1u << EV_LOGPOINT, &oldest), 0);
    assert_true(oldest > ev[EV_LOGPOINT].through_id);
    struct store_mark m;
    assert_int_equal(store_session_mark(f->r, k, &m), 0);
    assert_int_equal(m.recorded, 410 + 10);
    assert_true(m.last_id >= oldest);
}

/* ---- time order ------------------------------------------------------------------ */

/* Two producers of one session, as the daemon has them: a tracer whose events come
 * late (its floor says how far it has caught up) and an output that stamps as it
 * pushes (idle between its lines). */
struct pair {
    int64_t key;
    struct ring *late, *now;
};

static struct pair pair_attach(struct fx *f, const char *id)
{
    struct pair p = {.key = new_session(f, id), .late = ring_create(1 << 16),
                     .now = ring_create(1 << 16)};
    ring_floor(p.late, 0);
    store_attach_ring(f->s, p.late, p.key);
    store_attach_ring(f->s, p.now, p.key);
    return p;
}

static void push_to(struct fx *f, struct ring *r, int64_t key, int type, int64_t ts,
                    const char *text)
{
    struct event e = event_init(key, type, ts);
    e.text = text;
    e.function = type == EV_STDOUT ? NULL : text;
    assert_true(ring_push(r, &e, store_wake, f->s));
}

/* Waits until the writer has read everything r holds (into its heaps). */
static void wait_read(struct fx *f, struct ring *r)
{
    while (ring_used(r)) {
        store_wake(f->s);
        usleep(1000);
    }
}

/* The session's events by id: their texts (or functions), joined by spaces. */
static void by_id(struct fx *f, int64_t key, char *out, size_t cap)
{
    struct event_query q = q_init();
    q.limit = 100;
    struct store_result res = run(f, key, &q); /* by time: sorted by id here */
    for (int i = 1; i < res.n; i++)
        for (int j = i; j > 0 && res.rows[j - 1].id > res.rows[j].id; j--) {
            struct store_event_row t = res.rows[j];
            res.rows[j] = res.rows[j - 1];
            res.rows[j - 1] = t;
        }
    out[0] = 0;
    for (int i = 0; i < res.n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "",
                 res.rows[i].text ? res.rows[i].text : res.rows[i].function);
    store_result_free(&res);
}

/* A line read by the writer while the tracer's floor is behind it waits for the calls
 * the tracer drains later, unsorted, and gets its id after theirs. */
static void test_ids_follow_time(void **state)
{
    struct fx *f = *state;
    struct pair p = pair_attach(f, "order");
    push_to(f, p.now, p.key, EV_STDOUT, 100, "line@100");
    ring_idle(p.now);
    wait_read(f, p.now);
    push_to(f, p.late, p.key, EV_FUNCTION_ENTER, 60, "call@60");
    push_to(f, p.late, p.key, EV_FUNCTION_ENTER, 40, "call@40");
    push_to(f, p.late, p.key, EV_FUNCTION_ENTER, 120, "call@120");
    ring_floor(p.late, 110); /* caught up to 110: call@120 may still be joined */
    push_to(f, p.now, p.key, EV_STDOUT, 130, "line@130");
    ring_idle(p.now);
    wait_read(f, p.now);
    push_to(f, p.late, p.key, EV_FUNCTION_ENTER, 125, "call@125");
    ring_idle(p.late);
    assert_int_equal(store_sync_session(f->s, p.key, -1), 0);
    char order[256];
    by_id(f, p.key, order, sizeof order);
    assert_string_equal(order, "call@40 call@60 line@100 call@120 call@125 line@130");
    store_release_ring(f->s, p.late);
    store_release_ring(f->s, p.now);
}

/* A producer that stalls (its floor never moves) holds the others back for the
 * hold's bound at most: the barrier returns with the line stored; the stalled
 * producer's late call, older, then gets the next id. Another session never waits. */
static void test_hold_is_bounded(void **state)
{
    struct fx *f = *state;
    struct pair p = pair_attach(f, "stall");
    struct pair q = pair_attach(f, "bystander");
    ring_idle(q.late);
    push_to(f, p.now, p.key, EV_STDOUT, 100, "line@100");
    ring_idle(p.now);
    push_to(f, q.now, q.key, EV_STDOUT, 5, "other@5");
    ring_idle(q.now);
    assert_int_equal(store_sync_session(f->s, q.key, -1), 0);
    assert_int_equal(store_sync_session(f->s, p.key, -1), 0);
    char order[256];
    by_id(f, p.key, order, sizeof order);
    assert_string_equal(order, "line@100");
    push_to(f, p.late, p.key, EV_FUNCTION_ENTER, 50, "call@50");
    ring_idle(p.late);
    assert_int_equal(store_sync_session(f->s, p.key, -1), 0);
    by_id(f, p.key, order, sizeof order);
    assert_string_equal(order, "line@100 call@50");
    for (struct ring **r = (struct ring *[]){p.late, p.now, q.late, q.now, NULL}; *r; r++)
        store_release_ring(f->s, *r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_session_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_events_are_counted_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logpoints_evictable_pauses_not, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_follow_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_is_bounded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
