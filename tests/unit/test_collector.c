/*
 * test_collector.c - the collector registry (core/collector.h) and the MCP hints
 * (mcp/hints.h).
 *
 * A fake collector, written from core/collector.h's recipe and registered like
 * strobe.c registers the native one, fills the required slots only (and init and
 * shutdown, to see them called). It is picked by probe, runs a whole session through
 * core/session.h (launch, output, trace changes, stop) with no edit of the session
 * code, and every optional capability, asked through the engine's public calls,
 * answers NOT_IMPLEMENTED naming its language: the proof that a second language is a
 * table and a registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/collector.h"
#include "core/debug.h"
#include "core/memory.h"
#include "core/poll.h"
#include "core/session.h"
#include "core/timeline.h"
#include "core/trace_watches.h"
#include "core/watch.h"
#include "mcp/hints.h"
#include "store/store.h"
#include "tests/unit/tmpdir.h"

/* ---- a fake collector: "programs" whose path ends in .fake --------------------- */

/* The program is a thread: it writes one line, then "runs" until killed. */
struct collector_target {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t killed_cond;
    bool killed, finished;
    struct collector_events events;
    int n_patterns;
    char patterns[4][PATTERN_MAX_LEN];
};

static int n_init, n_shutdown, n_launch, n_set_patterns;
static char init_dir[64];

static void fake_init(const char *cache_dir)
{
    n_init++;
    snprintf(init_dir, sizeof init_dir, "%s", cache_dir ? cache_dir : "");
}

static void fake_shutdown(void)
{
    n_shutdown++;
}

static bool fake_probe(const char *path, struct collector_probe *out)
{
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".fake") != 0)
        return false;
    snprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0], "fake: %s", path);
    return true;
}

static void *fake_program(void *arg)
{
    struct collector_target *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->killed)
        pthread_cond_wait(&t->killed_cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
    t->events.main_exit(t->events.arg, SIGKILL); /* wait status: killed by SIGKILL */
    pthread_mutex_lock(&t->lock);
    t->finished = true;
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static int fake_launch(const struct collector_launch *req, struct collector_target **out,
                       pid_t *pid, struct strobe_error *e)
{
    n_launch++;
    struct collector_target *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, ERR_INTERNAL, "out of memory");
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->killed_cond, NULL);
    t->events = req->events;
    static const char line[] = "hello from a fake program\n";
    assert_int_equal(write(req->stdout_fd, line, sizeof line - 1), (ssize_t)sizeof line - 1);
    if (pthread_create(&t->thread, NULL, fake_program, t) != 0) {
        free(t);
        return err_set(e, ERR_ATTACH_FAILED, "cannot start the fake program");
    }
    *out = t;
    *pid = 424242;
    return 0;
}

static int fake_set_patterns(struct collector_target *t, const char *const *add, int n_add,
                             const char *const *remove, int n_remove, int depth,
                             struct trace_result *res, struct strobe_error *e)
{
    (void)remove;
    (void)n_remove;
    (void)e;
    n_set_patterns++;
    memset(res, 0, sizeof *res);
    for (int i = 0; i < n_add && t->n_patterns < 4; i++)
        snprintf(t->patterns[t->n_patterns++], PATTERN_MAX_LEN, "%s", add[i]);
    res->n_patterns = t->n_patterns;
    memcpy(res->patterns, t->patterns, sizeof t->patterns);
    res->depth = depth ? depth : 3;
    res->matched = res->hooked = 1;
    snprintf(res->status, sizeof res->status, "1 function(s) hooked.");
    return 0;
}

static void fake_describe(struct collector_target *t, struct trace_result *res)
{
    memset(res, 0, sizeof *res);
    res->n_patterns = t->n_patterns;
}

static void fake_kill(struct collector_target *t)
{
    pthread_mutex_lock(&t->lock);
    t->killed = true;
    pthread_cond_broadcast(&t->killed_cond);
    pthread_mutex_unlock(&t->lock);
}

static bool fake_finished(struct collector_target *t)
{
    pthread_mutex_lock(&t->lock);
    bool f = t->finished;
    pthread_mutex_unlock(&t->lock);
    return f;
}

static void fake_join(struct collector_target *t)
{
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->killed_cond);
    free(t);
}

static const struct collector_methods fake_collector = {
    .name = "fake",
    .language = "fake programs",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .probe = fake_probe,
    .launch = fake_launch,
    .set_patterns = fake_set_patterns,
    .describe = fake_describe,
    .kill = fake_kill,
    .finished = fake_finished,
    .join = fake_join,
};

/* A second collector that accepts every program, as the native one does. */
static bool any_probe(const char *path, struct collector_probe *out)
{
    (void)path;
    (void)out;
    return true;
}

static const struct collector_methods catch_all = {
    .name = "catch-all", .language = "anything", .probe = any_probe,
    .launch = fake_launch, .set_patterns = fake_set_patterns, .describe = fake_describe,
    .kill = fake_kill, .finished = fake_finished, .join = fake_join,
};

/* A runtime collector: adopts processes the catch-all runs, launches nothing. */
static const struct collector_adopt_rule fake_rule = {
    .module_hint = "fakert", .needs = {"fake_main"}, .entry = "fake_main", .call = "fake_run",
};

static int fake_adopt(const struct collector_adopt *req, struct collector_target **out,
                      char *buf, size_t cap, struct strobe_error *e)
{
    (void)req;
    (void)out;
    (void)buf;
    (void)cap;
    return err_set(e, ERR_INTERNAL, "not in this test");
}

static const struct collector_methods runtime = {
    .name = "runtime", .language = "a runtime", .adopt_rule = &fake_rule, .source_suffix = ".frt",
    .adopt = fake_adopt, .set_patterns = fake_set_patterns, .describe = fake_describe,
    .kill = fake_kill, .finished = fake_finished, .join = fake_join,
};

/* ---- the registry ------------------------------------------------------------- */

static void test_registry(void **state)
{
    (void)state;
    /* Registered in this order for the whole binary (the registry has no undo). A
     * table without a required member is refused. */
    struct collector_methods partial = fake_collector;
    partial.join = NULL;
    assert_int_equal(collector_register(NULL), -1);
    assert_int_equal(collector_register(&partial), -1);
    struct collector_methods no_adopt = runtime;
    no_adopt.adopt = NULL; /* a rule without adopt is neither kind: refused */
    assert_int_equal(collector_register(&no_adopt), -1);
    assert_int_equal(collector_register(&runtime), 0);
    assert_int_equal(collector_register(&fake_collector), 0);
    assert_int_equal(collector_register(&catch_all), 0);

    /* The runtime launches nothing (collector_for passes it by) and hands the
     * process collector its rule. */
    const struct collector_adopt_rule *rules[4];
    assert_int_equal(collector_adopt_rules(rules, 4), 1);
    assert_ptr_equal(rules[0], &fake_rule);
    assert_ptr_equal(collector_of_rule(0), &runtime);
    assert_null(collector_of_rule(1));

    struct collector_probe probe;
    assert_ptr_equal(collector_for("/work/app.fake", &probe), &fake_collector);
    assert_int_equal(probe.n_warnings, 1);
    assert_string_equal(probe.warnings[0], "fake: /work/app.fake");
    assert_ptr_equal(collector_for("/bin/true", &probe), &catch_all);
    assert_int_equal(probe.n_warnings, 0); /* not the fake's leftovers */

    /* A breakpoint is the runtime's by its file's suffix or a dotted function name
     * (its condition then checked by it); the rest the process collector's. */
    struct collector_breakpoint bp = {.file = "app/cart.frt", .line = 3};
    assert_ptr_equal(collector_breakpoint_owner(&bp), &runtime);
    bp.file = "cart.c";
    assert_null(collector_breakpoint_owner(&bp));
    bp = (struct collector_breakpoint){.function = "cart.Cart.total"};
    assert_ptr_equal(collector_breakpoint_owner(&bp), &runtime);
    bp.function = "ns::Cart::total";
    assert_null(collector_breakpoint_owner(&bp));
    bp.function = "scale";
    assert_null(collector_breakpoint_owner(&bp));

    /* init and shutdown reach the collectors that have them, once each. */
    collectors_init("/tmp/cache");
    assert_int_equal(n_init, 1);
    assert_string_equal(init_dir, "/tmp/cache");
    collectors_shutdown();
    assert_int_equal(n_shutdown, 1);

    /* Up to 8 collectors: the runtime, the fake and the catch-all are 3 of them. */
    for (int i = 3; i < 8; i++)
        assert_int_equal(collector_register(&catch_all), 0);
    assert_int_equal(collector_register(&catch_all), -1);
}

static void test_unsupported_names_the_language(void **state)
{
    (void)state;
    assert_null(fake_collector.memory);
    struct strobe_error e = {0};
    assert_int_equal(collector_unsupported(&fake_collector, "Reading memory", &e), -1);
    assert_int_equal(e.code, ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(e.msg, "Reading memory"));
    assert_non_null(strstr(e.msg, "fake programs"));
    assert_non_null(strstr(e.msg, "fake collector"));
}

/* ---- a session driven by the fake collector ------------------------------------ */

static void expect_unsupported(int rc, const struct strobe_error *e, const char *what)
{
    assert_int_equal(rc, -1);
    assert_int_equal(e->code, ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(e->msg, what));
    assert_non_null(strstr(e->msg, "fake programs"));
}

/* Every optional capability of core/collector.h, asked of session id through the
 * engine's public calls. */
static void expect_no_optional_capability(const char *id)
{
    struct strobe_error e = {0};

    /* Tracing: exact counts, the trace mode, trace watches. */
    static struct collector_counts counts;
    expect_unsupported(session_counts(id, &counts, &e), &e, "Counting calls");
    expect_unsupported(session_trace_mode(id, false, &e), &e, "Changing the trace mode");
    static struct trace_watch_result twr;
    struct trace_watch_spec tw = {.variable = "g"};
    expect_unsupported(session_trace_watches(id, &tw, 1, NULL, 0, &twr, &e), &e,
                       "Watching variables on traced calls");

    /* Breakpoints and steps: every call on a session, every action of continue. */
    static struct collector_bp_info info[DEBUG_LIST_MAX];
    struct collector_breakpoint bp = {.function = "main"};
    int ids[] = {1}, removed[1], n = -1;
    const char *stops = "Breakpoints and stepping";
    expect_unsupported(debug_breakpoints_add(id, NULL, &bp, 1, info, &e), &e, stops);
    expect_unsupported(debug_breakpoints_remove(id, ids, 1, false, removed, &n, &e), &e, stops);
    expect_unsupported(debug_breakpoints_list(id, info, DEBUG_LIST_MAX, &n, &e), &e, stops);
    expect_unsupported(debug_breakpoints_launched(id, info, DEBUG_LIST_MAX, &n, &e), &e, stops);
    for (int a = DA_CONTINUE; a <= DA_UNTIL; a++) {
        struct debug_continue_req req = {.action = a, .timeout_ms = 100};
        static struct debug_outcome out;
        expect_unsupported(debug_continue(id, NULL, &req, &out, &e), &e, stops);
    }
    struct collector_pause ps[4];
    assert_int_equal(debug_pauses(id, ps, 4), 0);

    /* Frames, variables and memory: reads, writes, polls. */
    struct collector_mem_target mt = {.variable = "g"};
    struct collector_value one = {.kind = CV_NUMBER, .text = "1"};
    struct collector_mem_request read = {.targets = &mt, .n_targets = 1, .depth = 1};
    struct collector_mem_request write = {.targets = &mt, .values = &one, .n_targets = 1};
    struct collector_mem_result mr[1] = {0};
    expect_unsupported(session_memory(id, &read, mr, &e), &e, "Reading memory");
    expect_unsupported(session_memory(id, &write, mr, &e), &e, "Writing memory");
    struct poll_request preq = {.targets = &mt, .n_targets = 1, .depth = 1,
                                .interval_ms = 50, .duration_ms = 100};
    static struct poll_started started;
    expect_unsupported(poll_start(id, &preq, &started, &e), &e, "Reading memory");
    poll_started_free(&started);
    assert_int_equal(polls_running(id), 0);

    /* Stacks: of the session's program, and of processes nobody traces (no
     * registered collector reads those here). */
    static struct collector_stacks stacks;
    struct collector_stacks_request sreq = {.locals = true};
    expect_unsupported(session_stacks(id, &sreq, &stacks, &e), &e,
                       "Reading every thread's stack");
    pid_t self = getpid();
    assert_int_equal(collector_stacks_of(&self, 1, &sreq, &stacks, &e), -1);
    assert_int_equal(e.code, ERR_NOT_IMPLEMENTED);

    /* Data watchpoints. */
    const char *watches = "Watching memory (data watchpoints)";
    struct collector_watch_request wreq = {.variable = "g"};
    struct collector_watch_info wi[2];
    expect_unsupported(session_watch_set(id, &wreq, &wi[0], &e), &e, watches);
    expect_unsupported(session_watch_clear(id, 0, wi, 2, &n, &e), &e, watches);
    expect_unsupported(session_watch_list(id, wi, 2, &n, &e), &e, watches);
}

/* Runs after test_registry, which registered the fake collector. */
static void test_session_through_a_second_collector(void **state)
{
    (void)state;
    char dir[PATH_MAX], db[PATH_MAX + 16], program[PATH_MAX + 16];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/strobe-collector-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/strobe.db", dir);
    snprintf(program, sizeof program, "%s/app.fake", dir);
    FILE *f = fopen(program, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(program, 0755), 0);

    struct store *store = store_open(db, NULL);
    assert_non_null(store);
    struct timeline_reader *rd = timeline_reader_open(store, NULL);
    assert_non_null(rd);
    sessions_init(store, NULL);

    /* A breakpoint and a trace watch staged for the launch: the fake has neither. */
    struct strobe_error e = {0};
    struct collector_breakpoint bp = {.file = "app.c", .line = 3};
    static struct collector_bp_info staged;
    assert_int_equal(debug_breakpoints_add(NULL, NULL, &bp, 1, &staged, &e), 0);
    static struct trace_watch_result twr;
    struct trace_watch_spec tw = {.variable = "g"};
    assert_int_equal(trace_watches_pending_update(&tw, 1, NULL, 0, &twr, &e), 0);

    struct launch_request req = {.command = program, .project_root = dir};
    static struct launch_result res;
    assert_int_equal(session_launch(&req, &res, &e), 0);
    assert_int_equal(n_launch, 1);
    assert_int_equal(res.pid, 424242);
    assert_int_equal(res.n_warnings, 1); /* the fake's probe, passed on */
    assert_non_null(strstr(res.warnings[0], "fake: "));
    assert_int_equal(sessions_running(), 1);
    assert_int_equal(res.staged_breakpoints, 1);
    assert_int_equal(res.pending_watches, 0);
    assert_non_null(strstr(res.watch_warning, "1 pending watch(es) not added: Watching "
                                              "variables on traced calls is not supported "
                                              "for fake programs"));
    int removed[1], n_removed;
    assert_int_equal(debug_breakpoints_remove(NULL, NULL, 0, true, removed, &n_removed, &e), 0);
    assert_int_equal(n_removed, 1);
    const char *label = "g";
    assert_int_equal(trace_watches_pending_update(NULL, 0, &label, 1, &twr, &e), 0);

    /* Trace changes reach the collector's set_patterns. */
    static struct trace_result tr;
    const char *add[] = {"fake::*"};
    assert_int_equal(session_trace(res.session_id, add, 1, NULL, 0, 0, &tr, &e), 0);
    assert_int_equal(n_set_patterns, 1);
    assert_int_equal(tr.n_patterns, 1);
    assert_string_equal(tr.patterns[0], "fake::*");

    /* Each capability the fake leaves out: NOT_IMPLEMENTED, naming its language. */
    expect_no_optional_capability(res.session_id);

    /* Stop: the collector's kill and join; the end and the output are recorded. */
    int64_t events = 0;
    assert_int_equal(session_stop(res.session_id, true, &events, &e), 0);
    assert_int_equal(sessions_running(), 0);
    static struct timeline_status st;
    assert_int_equal(timeline_status(rd, res.session_id, &st, &e), 0);
    assert_string_equal(st.session.status, "stopped");
    assert_int_equal(st.counts[EV_STDOUT], 1);
    assert_int_equal(st.counts[EV_PROCESS_EXIT], 1);
    timeline_status_free(&st);

    /* A session without a running program answers PROCESS_EXITED, in engine words:
     * the MCP tool names are the hints' business. */
    assert_int_equal(session_trace(res.session_id, add, 1, NULL, 0, 0, &tr, &e), -1);
    assert_int_equal(e.code, ERR_PROCESS_EXITED);
    assert_null(strstr(e.msg, "debug_"));

    static struct collector_stacks stacks;
    struct collector_stacks_request sreq = {.locals = true};
    assert_int_equal(session_stacks(res.session_id, &sreq, &stacks, &e), -1);
    assert_int_equal(e.code, ERR_PROCESS_EXITED);
    assert_null(strstr(e.msg, "debug_"));
    assert_int_equal(session_stacks("no-such-session", &sreq, &stacks, &e), -1);
    assert_int_equal(e.code, ERR_SESSION_NOT_FOUND);

    assert_int_equal(session_delete(res.session_id, &e), 0);
    sessions_shutdown();
    timeline_reader_close(rd);
    store_close(store);
    rm_dir(dir);
}

/* ---- wait cycles ------------------------------------------------------------------ */

static void set_thread(struct collector_thread *th, pid_t tid, const char *name,
                       enum collector_wait_kind w, uint64_t addr, pid_t owner)
{
    *th = (struct collector_thread){.tid = tid, .pid = 100, .syscall_nr = -1,
                                    .own_frame = -1, .wait = w, .wait_address = addr,
                                    .wait_owner = owner};
    snprintf(th->name, sizeof th->name, "%s", name);
}

static void test_stacks_diagnose(void **state)
{
    (void)state;
    struct collector_stacks s = {0};
    s.threads = calloc(7, sizeof *s.threads);
    assert_non_null(s.threads);
    /* main joins a; a and b wait for each other's mutex. */
    set_thread(&s.threads[0], 100, "main", WAIT_JOIN, 0x900, 101);
    set_thread(&s.threads[1], 101, "a", WAIT_MUTEX, 0x20, 102);
    set_thread(&s.threads[2], 102, "b", WAIT_MUTEX, 0x10, 101);
    s.n_threads = 3;
    collector_stacks_diagnose(&s);
    assert_non_null(s.diagnosis);
    assert_string_equal(s.diagnosis, "deadlock: tid 101 (a) holds M1 (0x10) and waits for "
                                     "M2 (0x20) held by tid 102 (b), which waits for M1");
    free(s.diagnosis);
    s.diagnosis = NULL;

    /* Three threads in a ring, and a waiter whose owner is outside the snapshot. */
    set_thread(&s.threads[3], 103, "c", WAIT_MUTEX, 0x30, 104);
    set_thread(&s.threads[4], 104, "d", WAIT_MUTEX, 0x40, 105);
    set_thread(&s.threads[5], 105, "e", WAIT_MUTEX, 0x50, 103);
    s.threads[0].wait_owner = 999;
    s.n_threads = 6;
    collector_stacks_diagnose(&s);
    assert_string_equal(s.diagnosis,
                        "deadlock: tid 101 (a) holds M1 (0x10) and waits for M2 (0x20) held "
                        "by tid 102 (b), which waits for M1; deadlock: tid 103 (c) holds M1 "
                        "(0x50) and waits for M2 (0x30) held by tid 104 (d), which waits for "
                        "M3 (0x40) held by tid 105 (e), which waits for M1");
    free(s.diagnosis);
    s.diagnosis = NULL;

    /* No cycle: b holds a's mutex and runs (a loop under the lock?), named by the
     * variable when the engine knows it; c, blocked in read, holds the mutex d and f
     * wait for and the one e waits for. */
    s.threads[2].wait = WAIT_NONE;
    snprintf(s.threads[2].state, sizeof s.threads[2].state, "running");
    struct collector_frame spin = {.function = "find_slot", .file = "/src/kv.c", .line = 40};
    s.threads[2].frames = &spin;
    s.threads[2].n_frames = 1;
    s.threads[2].own_frame = 0;
    s.threads[1].wait_variable = strdup("g_table.lock");
    s.threads[3].wait = WAIT_NONE;
    snprintf(s.threads[3].state, sizeof s.threads[3].state, "sleeping");
    s.threads[3].syscall_nr = 0;
    s.threads[3].syscall_name = "read";
    s.threads[4].wait_owner = 103;
    set_thread(&s.threads[6], 106, "f", WAIT_MUTEX, 0x40, 103);
    s.n_threads = 7;
    collector_stacks_diagnose(&s);
    assert_string_equal(s.diagnosis,
                        "tid 102 (b) holds the mutex (g_table.lock, 0x20) that tid 101 (a) "
                        "waits for, and is running in find_slot (kv.c:40): a long or endless "
                        "loop under the lock? The same function in a second stacks call "
                        "means it is stuck there; tid 103 (c) holds the mutex (0x40) that "
                        "tid 104 (d) and 1 other thread(s) wait for, and is sleeping in read: "
                        "it blocks while it holds the lock; tid 103 (c) holds the mutex (0x50) "
                        "that tid 105 (e) waits for, and is sleeping in read: it blocks while "
                        "it holds the lock");
    s.threads[2].frames = NULL;
    s.threads[2].n_frames = 0;

    /* Nobody waits for a thread of the snapshot: no diagnosis. */
    for (size_t i = 0; i < s.n_threads; i++)
        s.threads[i].wait_owner = 0;
    collector_stacks_diagnose(&s);
    assert_null(s.diagnosis);
    collector_stacks_free(&s);
    assert_null(s.threads);
    assert_int_equal(s.n_threads, 0);
}

/* ---- hints ---------------------------------------------------------------------- */

static void test_hints_per_code_and_tool(void **state)
{
    (void)state;
    const char *h = hint_for("debug_query", ERR_SESSION_NOT_FOUND);
    assert_non_null(h);
    assert_non_null(strstr(h, "debug_session({action: \"list\"})"));
    assert_ptr_equal(hint_for("debug_trace", ERR_SESSION_NOT_FOUND), h); /* any tool */

    /* PROCESS_EXITED has a next step only where tracing was asked for. */
    h = hint_for("debug_trace", ERR_PROCESS_EXITED);
    assert_non_null(h);
    assert_non_null(strstr(h, "debug_query"));
    assert_null(hint_for("debug_query", ERR_PROCESS_EXITED));
    assert_null(hint_for(NULL, ERR_PROCESS_EXITED));

    h = hint_for("debug_trace", ERR_NO_DEBUG_SYMBOLS);
    assert_non_null(h);
    assert_non_null(strstr(h, "Ask user permission"));
    assert_non_null(strstr(h, "-g"));
    assert_non_null(strstr(hint_for("debug_launch", ERR_SESSION_EXISTS), "debug_session"));
    assert_non_null(hint_for("debug_launch", ERR_COMMAND_NOT_FOUND));
    assert_non_null(hint_for("debug_launch", ERR_COMMAND_NOT_EXECUTABLE));

    /* mcp/ writes its validation errors with their next step already. */
    assert_null(hint_for("debug_launch", ERR_VALIDATION));
    assert_null(hint_for("debug_launch", ERR_INTERNAL));
}

static void test_hints_apply(void **state)
{
    (void)state;
    struct strobe_error e = {0};
    err_set(&e, ERR_SESSION_NOT_FOUND, "No session found with ID '%s'.", "x");
    hints_apply("debug_session", &e);
    const char *want = "No session found with ID 'x'. Check the sessionId spelling";
    assert_int_equal(strncmp(e.msg, want, strlen(want)), 0);

    err_set(&e, ERR_VALIDATION, "'limit' must be an integer.");
    hints_apply("debug_query", &e);
    assert_string_equal(e.msg, "'limit' must be an integer.");

    /* A sentence that fills the message keeps its end; nothing overflows. */
    e.code = ERR_NO_DEBUG_SYMBOLS;
    memset(e.msg, 'a', sizeof e.msg - 1);
    e.msg[sizeof e.msg - 1] = '\0';
    hints_apply("debug_trace", &e);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    e.msg[sizeof e.msg - 20] = '\0';
    hints_apply("debug_trace", &e);
    assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
    assert_int_equal(strncmp(e.msg + sizeof e.msg - 20, " Ask user", 9), 0);
}

static void test_trace_status_hint(void **state)
{
    (void)state;
    static struct trace_result r;
    assert_null(hint_trace_status(&r)); /* no patterns */
    r.n_patterns = 1;
    assert_null(hint_trace_status(&r)); /* nothing matched: the status explains */
    r.matched = 3;
    r.hooked = 3;
    const char *h = hint_trace_status(&r);
    assert_non_null(h);
    assert_non_null(strstr(h, "debug_query"));
    assert_non_null(strstr(h, "function_enter"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_unsupported_names_the_language),
        cmocka_unit_test(test_session_through_a_second_collector),
        cmocka_unit_test(test_stacks_diagnose),
        cmocka_unit_test(test_hints_per_code_and_tool),
        cmocka_unit_test(test_hints_apply),
        cmocka_unit_test(test_trace_status_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
