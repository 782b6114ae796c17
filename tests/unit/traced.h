/*
 * traced.h - a fixture program under a real tracer (ptrace/tracer/tracer.h), for the
 * unit tests of what runs on top of it (test_bpset.c, test_stepper.c, test_resolve.c,
 * test_watchset.c, test_crash.c): the program is started with tracer_start from
 * build/fixtures/ (fixtures.h), its stdout is read line by line, its stdin is a pipe
 * the test may close, and the events the tracer thread pushes into the session's
 * ring (crash, logpoint, pause, watch_hit, function events) are copied out of it as
 * the test waits. Waits are for a condition, checked whenever something changes and
 * every few milliseconds, with a bound far above what a busy machine needs; nothing
 * sleeps a fixed time. Also: the runtime address of a fixture function, and the line
 * of a marker comment in a fixture's source. Include after <cmocka.h> and fixtures.h.
 */
#ifndef STROBE_TEST_TRACED_H
#define STROBE_TEST_TRACED_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/ring.h"
#include "dwarf/dwarf.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/tracer/tracer.h"

#define TRACED_WAIT_S 120 /* a bound for waits that only a hang reaches */

/* One event as the tracer pushed it (strings copied out of the ring). */
struct tev {
    int type;
    pid_t pid, tid;
    int line;
    char *text, *data, *function, *file, *thread_name;
};

/* What a test adds to the tracer's callbacks (all optional). */
struct traced_hooks {
    void (*on_start)(void *arg, struct tracer *t);
    void (*on_entry)(void *arg, struct tracer *t);
    void (*on_main_exec)(void *arg);
    bool stop_at_entry;
    void *arg;
};

struct traced {
    struct tracer *t;
    pid_t pid;
    char path[PATH_MAX];        /* the fixture, as /proc/PID/maps names it */
    struct ring *ring;
    FILE *out;                  /* its stdout */
    int in;                     /* the write end of its stdin; -1 once closed */
    int null;
    struct traced_hooks hooks;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool exited;
    int status;                 /* wait(2) status of the main process */
    struct tev *evs;            /* every event read from the ring so far */
    size_t n_evs, cap_evs;
    /* What the test built on the tracer, freed once the tracer is joined. */
    void (*on_end)(void *arg);
    void *on_end_arg;
};

/* The programs launched and not ended yet: a test that fails leaves its own running
 * (cmocka's longjmp skips its end), and traced_teardown ends them, so that a failure
 * stays in its test. Their structs must outlive the test's frame: tests declare them
 * static. */
#define TRACED_OPEN_MAX 8
static struct traced *traced_open[TRACED_OPEN_MAX];

static inline void traced_notify(void *arg)
{
    struct traced *tr = arg;
    pthread_mutex_lock(&tr->lock);
    pthread_cond_broadcast(&tr->cond);
    pthread_mutex_unlock(&tr->lock);
}

static inline void traced_on_exit(void *arg, int status)
{
    struct traced *tr = arg;
    pthread_mutex_lock(&tr->lock);
    tr->exited = true;
    tr->status = status;
    pthread_cond_broadcast(&tr->cond);
    pthread_mutex_unlock(&tr->lock);
}

static inline void traced_on_start(void *arg, struct tracer *t)
{
    struct traced *tr = arg;
    if (tr->hooks.on_start)
        tr->hooks.on_start(tr->hooks.arg, t);
}

static inline void traced_on_entry(void *arg, struct tracer *t)
{
    struct traced *tr = arg;
    if (tr->hooks.on_entry)
        tr->hooks.on_entry(tr->hooks.arg, t);
}

static inline void traced_on_main_exec(void *arg)
{
    struct traced *tr = arg;
    if (tr->hooks.on_main_exec)
        tr->hooks.on_main_exec(tr->hooks.arg);
}

static inline char *traced_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Copies the events queued in the ring (the test thread is its one consumer). */
static inline void traced_drain(struct traced *tr)
{
    struct event e;
    while (ring_peek(tr->ring, &e)) {
        if (tr->n_evs == tr->cap_evs) {
            tr->cap_evs = tr->cap_evs ? 2 * tr->cap_evs : 64;
            tr->evs = realloc(tr->evs, tr->cap_evs * sizeof *tr->evs);
            assert_non_null(tr->evs);
        }
        tr->evs[tr->n_evs++] = (struct tev){
            .type = e.type, .pid = e.pid, .tid = e.tid, .line = e.line,
            .text = traced_dup(e.text), .data = traced_dup(e.data),
            .function = traced_dup(e.function), .file = traced_dup(e.source_file),
            .thread_name = traced_dup(e.thread_name)};
        ring_pop(tr->ring);
    }
}

/* Before traced_launch: the ring and the lock, so that what the test builds on the
 * tracer (a debugger) can take the session's sink first. */
static inline void traced_init(struct traced *tr)
{
    memset(tr, 0, sizeof *tr);
    pthread_mutex_init(&tr->lock, NULL);
    pthread_cond_init(&tr->cond, NULL);
    tr->ring = ring_create(8u << 20);
    assert_non_null(tr->ring);
    tr->in = -1;
}

/* Where the tracer and what runs on it push their events. */
static inline struct event_sink traced_sink(struct traced *tr)
{
    return (struct event_sink){.session_key = 1, .t0_ns = 0, .ring = tr->ring,
                               .wake = traced_notify, .wake_arg = tr};
}

/* Starts build/fixtures/name with args (NULL-terminated, after argv[0]; NULL: none)
 * under a tracer of its own. Its stderr goes to /dev/null. */
static inline void traced_launch(struct traced *tr, const char *name, const char *const *args,
                                 const struct traced_hooks *hooks)
{
    if (hooks)
        tr->hooks = *hooks;
    assert_non_null(realpath(fixture(name), tr->path));
    char *argv[16] = {tr->path};
    for (int i = 0; args && args[i] && i < 14; i++)
        argv[i + 1] = (char *)args[i];
    char *envp[] = {NULL};
    int out[2], in[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    tr->null = open("/dev/null", O_RDWR | O_CLOEXEC);
    assert_true(tr->null >= 0);
    struct tracer_spec spec = {
        .path = tr->path, .argv = argv, .envp = envp, .cwd = "/",
        .stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = tr->null,
        .on_main_exit = traced_on_exit, .arg = tr,
        .sink = traced_sink(tr),
        .on_start = traced_on_start,
        .on_entry = tr->hooks.on_entry ? traced_on_entry : NULL,
        .on_main_exec = traced_on_main_exec,
        .stop_at_entry = tr->hooks.stop_at_entry,
    };
    struct strobe_error e = {0};
    int rc = tracer_start(&spec, &tr->t, &tr->pid, &e);
    if (rc != 0)
        fail_msg("tracer_start %s: %s", tr->path, e.msg);
    for (int i = 0; i < TRACED_OPEN_MAX; i++)
        if (!traced_open[i]) {
            traced_open[i] = tr;
            break;
        }
    close(out[1]);
    close(in[0]);
    tr->in = in[1];
    tr->out = fdopen(out[0], "r");
    assert_non_null(tr->out);
}

static inline void traced_start(struct traced *tr, const char *name, const char *const *args,
                                const struct traced_hooks *hooks)
{
    traced_init(tr);
    traced_launch(tr, name, args, hooks);
}

/* The next line the program prints (without its newline). */
static inline void traced_line(struct traced *tr, char *buf, size_t cap)
{
    if (!fgets(buf, (int)cap, tr->out))
        fail_msg("%s ended its output before the line the test waits for", tr->path);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Reads lines until one starts with prefix; that one into buf. */
static inline void traced_line_starting(struct traced *tr, const char *prefix, char *buf,
                                        size_t cap)
{
    do
        traced_line(tr, buf, cap);
    while (strncmp(buf, prefix, strlen(prefix)) != 0);
}

/* Closes the program's stdin: it reads its end. */
static inline void traced_close_stdin(struct traced *tr)
{
    if (tr->in >= 0)
        close(tr->in);
    tr->in = -1;
}

/* Waits until done(arg) holds, draining the ring meanwhile; fails the test after
 * TRACED_WAIT_S seconds (what), which only a hang reaches. */
static inline void traced_wait(struct traced *tr, bool (*done)(void *arg), void *arg,
                               const char *what)
{
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += TRACED_WAIT_S;
    for (;;) {
        traced_drain(tr);
        if (done(arg))
            return;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
            fail_msg("gave up waiting for %s", what);
        /* A change (a pause, the exit, a full ring) wakes this at once; ring events
         * are looked for every 2 ms. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 2000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&tr->lock);
        pthread_cond_timedwait(&tr->cond, &tr->lock, &until);
        pthread_mutex_unlock(&tr->lock);
    }
}

/* How many events of type the ring has given so far (type 0: any). */
static inline size_t traced_count(const struct traced *tr, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->n_evs; i++)
        n += !type || tr->evs[i].type == type;
    return n;
}

/* The k-th (0-based) event of type, or NULL. */
static inline const struct tev *traced_event(const struct traced *tr, int type, size_t k)
{
    for (size_t i = 0; i < tr->n_evs; i++)
        if (tr->evs[i].type == type && k-- == 0)
            return &tr->evs[i];
    return NULL;
}

struct traced_count_want {
    struct traced *tr;
    int type;
    size_t n;
};

static inline bool traced_has_count(void *arg)
{
    struct traced_count_want *w = arg;
    return traced_count(w->tr, w->type) >= w->n;
}

/* Waits until n events of type have come. */
static inline void traced_wait_events(struct traced *tr, int type, size_t n)
{
    struct traced_count_want w = {tr, type, n};
    char what[64];
    snprintf(what, sizeof what, "%zu events of type %d", n, type);
    traced_wait(tr, traced_has_count, &w, what);
}

static inline bool traced_has_exited(void *arg)
{
    struct traced *tr = arg;
    pthread_mutex_lock(&tr->lock);
    bool done = tr->exited;
    pthread_mutex_unlock(&tr->lock);
    return done;
}

/* Waits for the main process to end; its wait(2) status. */
static inline int traced_wait_exit(struct traced *tr)
{
    traced_wait(tr, traced_has_exited, tr, "the program's exit");
    return tr->status;
}

/* Frees what traced_init made and the events read (for a test that used the ring
 * alone, with no program launched). */
static inline void traced_release(struct traced *tr)
{
    traced_drain(tr);
    for (size_t i = 0; i < tr->n_evs; i++) {
        struct tev *e = &tr->evs[i];
        free(e->text);
        free(e->data);
        free(e->function);
        free(e->file);
        free(e->thread_name);
    }
    free(tr->evs);
    ring_destroy(tr->ring);
    pthread_mutex_destroy(&tr->lock);
    pthread_cond_destroy(&tr->cond);
}

/* Kills what still runs, joins the tracer and frees everything. */
static inline void traced_end(struct traced *tr)
{
    for (int i = 0; i < TRACED_OPEN_MAX; i++)
        if (traced_open[i] == tr)
            traced_open[i] = NULL;
    traced_close_stdin(tr);
    if (!traced_has_exited(tr))
        tracer_kill(tr->t);
    traced_wait_exit(tr);
    /* Other processes of the program may outlive the main one: the tracer's thread
     * ends with the last of them. */
    tracer_kill(tr->t);
    tracer_join(tr->t);
    fclose(tr->out);
    close(tr->null);
    traced_release(tr);
    if (tr->on_end)
        tr->on_end(tr->on_end_arg);
}

/* cmocka teardown of every test that launches a program (traced_test(f) in the
 * list of tests): ends what a failed test left running. */
static inline int traced_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < TRACED_OPEN_MAX; i++)
        if (traced_open[i])
            traced_end(traced_open[i]);
    return 0;
}

#define traced_test(f) cmocka_unit_test_teardown(f, traced_teardown)

/* Runs nothing on the tracer thread: returns once the stop it was handling (and
 * anything a handler did after a pause became visible) is done. */
static inline void traced_nothing(struct tracer *t, void *arg)
{
    (void)t;
    (void)arg;
}

static inline void traced_sync(struct traced *tr)
{
    struct strobe_error e = {0};
    assert_int_equal(tracer_call(tr->t, traced_nothing, NULL, &e), 0);
}

/* ---- where things are in a fixture -------------------------------------------------- */

/* The function named name in the index of fixture file path; fails when missing. */
static inline const struct dw_function *fixture_function(const char *path, const char *name)
{
    struct strobe_error err = {0};
    const struct dw_index *ix = dw_index_get(path, &err);
    if (!ix)
        fail_msg("%s: %s", path, err.msg);
    for (size_t i = 0; i < ix->n_functions; i++)
        if (strcmp(ix->functions[i].name, name) == 0)
            return &ix->functions[i];
    fail_msg("no function %s in %s", name, path);
    return NULL;
}

/* The load bias of the running fixture in its process. */
static inline uint64_t traced_bias(const struct traced *tr)
{
    struct module *mods;
    size_t n;
    assert_int_equal(procmem_modules(tr->pid, &mods, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(mods[i].path, tr->path) == 0) {
            uint64_t bias = mods[i].bias;
            free(mods);
            return bias;
        }
    free(mods);
    fail_msg("%s is not mapped in process %d", tr->path, (int)tr->pid);
    return 0;
}

/* The first line of the source file declaring function fn of the fixture at
 * fixture_path (its DWARF decl_file) that holds text; with delimited, text must be
 * followed by a blank or a colon there. */
static inline int source_line(const char *fixture_path, const char *fn, const char *text,
                              bool delimited)
{
    const char *src = fixture_function(fixture_path, fn)->decl_file;
    assert_non_null(src);
    char buf[1024];
    size_t len = strlen(text);
    FILE *fp = fopen(src, "r");
    assert_non_null(fp);
    for (int n = 1; fgets(buf, sizeof buf, fp); n++) {
        const char *at = strstr(buf, text);
        if (at && (!delimited || at[len] == ' ' || at[len] == ':')) {
            fclose(fp);
            return n;
        }
    }
    fclose(fp);
    fail_msg("no '%s' in %s", text, src);
    return 0;
}

/* The line of fn's source holding the marker comment "/ * mark" (then a blank or a
 * colon: "/ * SQ_BODY * /", "/ * CRASH HERE * /", "/ * NO_CODE: ..."). */
static inline int marked_line(const char *fixture_path, const char *fn, const char *mark)
{
    char want[128];
    snprintf(want, sizeof want, "/* %s", mark);
    return source_line(fixture_path, fn, want, true);
}

#endif
