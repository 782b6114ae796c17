/*
 * test_store_retention.c - store_purge_expired(): which sessions retention purges
 * (by age, by the size cap), in what order, and that a session whose rings still
 * carry events is spared.
 * Each test works in its own mkdtemp directory, removed afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/store_fixture.h"

/* ---- retention ------------------------------------------------------------------- */

#define DAY_MS (86400 * 1000LL)
#define NOW_MS 1800000000000LL

/* A session started at started_ms; ended at ended_ms unless that is 0 (status then
 * "running", or "stopped" without an end when stopped_unended). */
static int64_t aged_session(struct fx *f, const char *id, int64_t started_ms,
                            int64_t ended_ms, bool stopped_unended)
{
    struct session_row r = {.id = (char *)id, .started_at_ms = started_ms,
                            .status = stopped_unended ? "stopped" : "running"};
    assert_int_equal(store_session_create(f->s, &r, NULL), 0);
    if (ended_ms)
        assert_int_equal(store_session_finish(f->s, r.key, "exited", ended_ms, true, 0, NULL),
                         0);
    return r.key;
}

/* n stdout events of `bytes` characters each for key, through a ring of its own
 * that is released and drained before returning. */
static void fill(struct fx *f, int64_t key, int n, size_t bytes)
{
    struct ring *ring = ring_create(1 << 20);
    store_attach_ring(f->s, ring, 0);
    char *text = malloc(bytes + 1);
    memset(text, 'x', bytes);
    text[bytes] = 0;
    for (int i = 0; i < n; i++) {
        struct event e = event_init(key, EV_STDOUT, i);
        e.text = text;
        assert_true(ring_push(ring, &e, store_wake, f->s));
    }
    free(text);
    store_release_ring(f->s, ring);
    store_sync(f->s);
}

struct purge_log {
    int n;
    char ids[8][64];
    bool by_age[8];
};

static void note_purge(void *arg, const struct store_purged *p)
{
    struct purge_log *l = arg;
    assert_true(l->n < 8);
    snprintf(l->ids[l->n], sizeof l->ids[0], "%s", p->session_id);
    l->by_age[l->n++] = p->by_age;
    if (p->by_age)
        assert_int_equal(p->used_bytes, -1);
    else
        assert_true(p->used_bytes > 0);
}

static bool exists(struct fx *f, const char *id)
{
    return store_session_id_taken(f->s, id) == 1;
}

static void test_purge_by_age(void **state)
{
    struct fx *f = *state;
    int64_t old = aged_session(f, "old", NOW_MS - 20 * DAY_MS, NOW_MS - 8 * DAY_MS, false);
    assert_int_equal(store_session_set_retained(f->s, old, true), 0);
    aged_session(f, "young", NOW_MS - 20 * DAY_MS, NOW_MS - 6 * DAY_MS, false);
    aged_session(f, "unended", NOW_MS - 8 * DAY_MS, 0, true); /* age from its start */
    aged_session(f, "running", NOW_MS - 30 * DAY_MS, 0, false);
    aged_session(f, "edge", NOW_MS - 9 * DAY_MS, NOW_MS - 7 * DAY_MS, false);
    fill(f, old, 100, 10);

    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = INT64_MAX};
    struct purge_log log = {0};
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 2);
    assert_int_equal(log.n, 2);
    assert_string_equal(log.ids[0], "old"); /* oldest start first */
    assert_string_equal(log.ids[1], "unended");
    assert_true(log.by_age[0] && log.by_age[1]);
    assert_false(exists(f, "old"));
    assert_false(exists(f, "unended"));
    assert_true(exists(f, "young"));
    assert_true(exists(f, "running"));
    assert_true(exists(f, "edge")); /* exactly 7 days: not older than the limit */

    /* Its events and counters went with it. */
    struct event_query q = q_init();
    assert_int_equal(count(f, old, &q), 0);
    int64_t c[EV_TYPE_MAX + 1];
    assert_int_equal(store_count_by_type(f->r, old, c), 0);
    assert_int_equal(c[EV_STDOUT], 0);

    /* Nothing left to do: a second pass purges nothing. */
    assert_int_equal(store_purge_expired(f->s, &p, NULL, NULL, NULL), 0);
}

static void test_purge_by_size(void **state)
{
    struct fx *f = *state;
    /* Key order differs from start order: the purge follows started_at. */
    int64_t a = aged_session(f, "third", NOW_MS - 1000, NOW_MS - 500, false);
    int64_t b = aged_session(f, "first", NOW_MS - 3000, NOW_MS - 2500, false);
    int64_t c = aged_session(f, "second", NOW_MS - 2000, NOW_MS - 1500, false);
    int64_t run = aged_session(f, "running", NOW_MS - 9000, 0, false);
    assert_int_equal(store_session_set_retained(f->s, c, true), 0);
    fill(f, a, 300, 1000);
    fill(f, b, 300, 1000);
    fill(f, c, 300, 1000);
    fill(f, run, 300, 1000);
    int64_t used = store_used_bytes(f->s);
    assert_true(used > 4 * 300 * 1000);

    /* Just over the cap: the oldest ended session goes, and that is enough. */
    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = used - 1};
    struct purge_log log = {0};
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 1);
    assert_int_equal(log.n, 1);
    assert_string_equal(log.ids[0], "first");
    assert_false(log.by_age[0]);
    int64_t after = store_used_bytes(f->s);
    assert_true(after < used - 300 * 1000); /* freed pages stop counting at once */

    /* A cap nothing fits under: every ended session goes, oldest first, retained or
     * not; the running one stays although it is the oldest and the cap is still
     * exceeded. */
    p.max_used_bytes = 1;
    log.n = 0;
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 2);
    assert_int_equal(log.n, 2);
    assert_string_equal(log.ids[0], "second");
    assert_string_equal(log.ids[1], "third");
    assert_true(exists(f, "running"));
    assert_true(store_used_bytes(f->s) > 1);
    struct event_query q = q_init();
    assert_int_equal(count(f, run, &q), 300);
}

static void test_purge_spares_sessions_still_produced(void **state)
{
    struct fx *f = *state;
    /* The main process ended, but a ring of the session is still attached (its
     * children still write): not purged until the ring is released and drained. */
    int64_t k = aged_session(f, "children", NOW_MS - 10 * DAY_MS, NOW_MS - 9 * DAY_MS,
                             false);
    struct ring *ring = ring_create(1 << 16);
    store_attach_ring(f->s, ring, 0);
    struct event e = event_init(k, EV_STDOUT, 1);
    e.text = "late";
    assert_true(ring_push(ring, &e, store_wake, f->s));
    store_sync(f->s);
    struct store_retention p = {.now_ms = NOW_MS, .max_age_ms = 7 * DAY_MS,
                                .max_used_bytes = 1};
    assert_int_equal(store_purge_expired(f->s, &p, NULL, NULL, NULL), 0);
    assert_true(exists(f, "children"));

    store_release_ring(f->s, ring);
    store_sync(f->s);
    struct purge_log log = {0};
    assert_int_equal(store_purge_expired(f->s, &p, note_purge, &log, NULL), 1);
    assert_true(log.by_age[0]); /* the age rule comes first */
    assert_false(exists(f, "children"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_purge_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_by_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_spares_sessions_still_produced, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
