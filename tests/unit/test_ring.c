/*
 * test_ring.c - the SPSC event ring: push/peek/pop round trip, wrap-around with
 * records of varying sizes, backpressure on a full ring with a real producer thread,
 * records too large to ever fit, and the producer's time promise (floor and idle).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/ring.h"

static void test_push_peek_pop(void **state)
{
    (void)state;
    struct ring *r = ring_create(1);
    assert_non_null(r);
    assert_int_equal(ring_max_record(r), 64 * 1024 / 4);
    struct event e = event_init(7, EV_FUNCTION_EXIT, 123456789);
    e.pid = 42;
    e.tid = 43;
    e.thread_name = "worker";
    e.seq = 9;
    e.parent_seq = 3;
    e.function = "ns::f(int)";
    e.function_raw = "_ZN2ns1fEi";
    e.source_file = "/src/f.cpp";
    e.line = 77;
    e.arguments = "[1,2]";
    e.return_value = "\"ok\"";
    e.duration_ns = 555;
    e.sampled = true;
    assert_true(ring_try_push(r, &e));
    assert_true(ring_used(r) > 0);

    struct event out;
    assert_true(ring_peek(r, &out));
    assert_int_equal(out.session_key, 7);
    assert_int_equal(out.type, EV_FUNCTION_EXIT);
    assert_int_equal(out.ts_ns, 123456789);
    assert_int_equal(out.pid, 42);
    assert_int_equal(out.tid, 43);
    assert_int_equal(out.seq, 9);
    assert_int_equal(out.parent_seq, 3);
    assert_string_equal(out.thread_name, "worker");
    assert_string_equal(out.function, "ns::f(int)");
    assert_string_equal(out.function_raw, "_ZN2ns1fEi");
    assert_string_equal(out.source_file, "/src/f.cpp");
    assert_int_equal(out.line, 77);
    assert_string_equal(out.arguments, "[1,2]");
    assert_string_equal(out.return_value, "\"ok\"");
    assert_null(out.text);
    assert_null(out.data);
    assert_int_equal(out.duration_ns, 555);
    assert_true(out.sampled);
    ring_pop(r);
    assert_false(ring_peek(r, &out));
    assert_int_equal(ring_used(r), 0);
    ring_destroy(r);
}

static void test_wrap_around(void **state)
{
    (void)state;
    struct ring *r = ring_create(64 * 1024);
    assert_non_null(r);
    char text[3000];
    int pushed = 0, popped = 0;
    /* Keep the ring partly full while offsets cross the end many times. */
    for (int round = 0; round < 2000; round++) {
        for (int k = 0; k < 3; k++) {
            int len = (pushed * 37) % (int)sizeof text;
            memset(text, 'a' + pushed % 26, len);
            text[len] = 0;
            struct event e = event_init(1, EV_STDOUT, pushed);
            e.text = text;
            e.seq = pushed;
            if (!ring_try_push(r, &e))
                break;
            pushed++;
        }
        for (int k = 0; k < 2; k++) {
            struct event out;
            if (!ring_peek(r, &out))
                break;
            assert_int_equal(out.seq, popped);
            assert_int_equal(out.ts_ns, popped);
            int len = (popped * 37) % (int)sizeof text;
            assert_int_equal(strlen(out.text), len);
            if (len)
                assert_int_equal(out.text[len - 1], 'a' + popped % 26);
            ring_pop(r);
            popped++;
        }
    }
    struct event out;
    while (ring_peek(r, &out)) {
        assert_int_equal(out.seq, popped);
        ring_pop(r);
        popped++;
    }
    assert_int_equal(pushed, popped);
    assert_true(pushed > 2000); /* several laps of a 64 KiB ring */
    ring_destroy(r);
}

struct producer {
    struct ring *r;
    int n;
    atomic_int wakes;
    atomic_int done;
};

static void on_wake(void *arg)
{
    struct producer *p = arg;
    atomic_fetch_add(&p->wakes, 1);
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    char text[200];
    for (int i = 0; i < p->n; i++) {
        snprintf(text, sizeof text, "line %d", i);
        struct event e = event_init(1, EV_STDOUT, i);
        e.seq = i + 1;
        e.text = text;
        if (!ring_push(p->r, &e, on_wake, p))
            abort();
    }
    atomic_store(&p->done, 1);
    return NULL;
}

static void test_backpressure(void **state)
{
    (void)state;
    struct producer p = {.r = ring_create(64 * 1024), .n = 100000};
    assert_non_null(p.r);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer_main, &p), 0);
    /* Let the producer fill the ring and block. */
    while (atomic_load(&p.wakes) == 0)
        usleep(1000);
    assert_false(atomic_load(&p.done));
    size_t used = ring_used(p.r);
    assert_true(used > 64 * 1024 - 256);
    /* Consume everything, in order, nothing lost. */
    int next = 1;
    char want[200];
    while (next <= p.n) {
        struct event e;
        if (!ring_peek(p.r, &e)) {
            usleep(100);
            continue;
        }
        assert_int_equal(e.seq, next);
        snprintf(want, sizeof want, "line %d", next - 1);
        assert_string_equal(e.text, want);
        ring_pop(p.r);
        next++;
    }
    pthread_join(t, NULL);
    assert_true(atomic_load(&p.done));
    assert_true(atomic_load(&p.wakes) >= 1);
    struct event e;
    assert_false(ring_peek(p.r, &e));
    ring_destroy(p.r);
}

static void test_too_large(void **state)
{
    (void)state;
    struct ring *r = ring_create(64 * 1024);
    size_t max = ring_max_record(r);
    char *big = malloc(max + 1);
    memset(big, 'x', max);
    big[max] = 0;
    struct event e = event_init(1, EV_STDOUT, 0);
    e.text = big;
    assert_false(ring_try_push(r, &e));
    assert_false(ring_push(r, &e, NULL, NULL)); /* never fits: no wait */
    assert_int_equal(ring_used(r), 0);
    /* A record just under the limit fits. */
    big[max - 200] = 0;
    assert_true(ring_try_push(r, &e));
    struct event out;
    assert_true(ring_peek(r, &out));
    assert_int_equal(strlen(out.text), max - 200);
    ring_pop(r);
    free(big);
    ring_destroy(r);
}

static void test_floor_and_idle(void **state)
{
    (void)state;
    struct ring *r = ring_create(64 * 1024);
    assert_true(ring_is_idle(r)); /* a new ring: nothing promised, nothing stamped */
    assert_true(ring_floor_get(r) == RING_NO_FLOOR);
    ring_floor(r, 500);
    assert_false(ring_is_idle(r));
    assert_true(ring_floor_get(r) == 500);
    ring_idle(r);
    assert_true(ring_is_idle(r));
    assert_true(ring_floor_get(r) == 500); /* still a bound once busy again */
    ring_floor(r, 400);                    /* a promise once made holds */
    assert_false(ring_is_idle(r));
    assert_true(ring_floor_get(r) == 500);
    ring_idle(r);
    int64_t t0 = mono_ns() - 1000;
    int64_t now = ring_stamp(r, t0);
    assert_false(ring_is_idle(r));
    assert_true(now - t0 >= 1000);
    assert_true(ring_floor_get(r) == now - t0);
    struct event_sink sink = {.session_key = 3, .t0_ns = t0, .ring = r};
    struct event e = event_sink_now(&sink, EV_STDOUT);
    assert_true(e.ts_ns == ring_floor_get(r) && e.ts_ns >= now - t0);
    /* each record carries the floor it was pushed with */
    assert_true(ring_try_push(r, &e));
    ring_floor(r, e.ts_ns + 5000);
    assert_true(ring_head_floor(r) == e.ts_ns);
    struct event out;
    assert_true(ring_peek(r, &out));
    ring_pop(r);
    assert_true(ring_head_floor(r) == e.ts_ns + 5000); /* empty: the floor now */
    ring_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_peek_pop),
        cmocka_unit_test(test_wrap_around),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_floor_and_idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
