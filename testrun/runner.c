/*
 * runner.c - test runs: the registry, the thread that runs each, and the status
 * answers. See testrun.h.
 *
 * One thread per run reads the command's stdout and stderr (from its pipes on the
 * plain path; on the traced path from pipes the session's output tap writes to, so
 * both paths read the same way), feeds every line to the adapter's live parser,
 * samples CPU time and takes stacks for the stuck detector (stuck.h), enforces the
 * level's hard timeout, and at the end has the adapter parse everything, writes the
 * details file (details.c) and records the durations. Each run's fields are guarded
 * by its lock; once it is TESTRUN_COMPLETED its results never change, so a status
 * answer shares them (holding a reference) instead of copying.
 */
#include "testrun/testrun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/linesplit.h"
#include "base/log.h"
#include "base/paths.h"
#include "core/daemon.h"
#include "core/debug.h"
#include "core/patterns.h"
#include "core/session.h"
#include "testrun/details.h"
#include "testrun/live.h"
#include "testrun/proc.h"
#include "testrun/stuck.h"
#include "store/store.h"

#define NS_PER_MS 1000000LL
#define OUTPUT_CAP (64u << 20)       /* bytes of each stream kept for parsing */
#define PARTIAL_AFTER_MS 1000        /* a line without newline counts as partial */
#define EXIT_DRAIN_MS 2000           /* output still read after the main process ends */
#define DUMP_WAIT_MS 1500            /* what a runtime prints after the dump signal */
#define TAIL_BYTES 2000

struct stream_buf {
    struct strbuf all;               /* everything, up to OUTPUT_CAP */
    size_t dropped;                  /* bytes beyond it */
    size_t line_start;               /* offset of the line not yet complete */
    bool partial_sent;               /* that line went out as partial */
    int fd;                          /* -1 at EOF */
};

struct testrun {
    char id[TESTRUN_ID_MAX];
    pthread_mutex_t lock;
    pthread_cond_t changed;          /* state or progress changed */
    int refs;                        /* the registry's, the thread's, each view's */
    const struct test_adapter *ad;
    char *project_root, *command_arg, *test_name, work_dir[4096];
    struct test_plan plan;
    struct test_command cmd;
    char command_line[1024];
    char marker[64];                 /* STROBE_TEST_RUN=<id> */
    enum testrun_state state;
    char session_id[SESSION_ID_MAX];
    pid_t pid;                       /* the main process */
    int wait_status;
    bool exited;                     /* wait_status is set */
    int tap_w[2];                    /* traced path: the tap's write ends */
    struct stream_buf out, err;
    int64_t started_ns, ended_ns, timeout_ms;
    int64_t paused_ns;                /* the run's thread: time spent paused at
                                         breakpoints, which the hard timeout leaves out */
    struct test_live live;
    void *live_state;
    int64_t current_baseline_ms;
    struct stuck det;
    struct testrun_warning warning;
    bool has_warning;
    _Atomic int cancel;
    bool timed_out;
    /* results, set once before state becomes COMPLETED */
    struct test_report report;
    struct testrun_failure *failures;
    int n_failures;
    struct testrun_stuck stuck;
    int n_stuck;
    int exit_code;
    char details_path[4096];
    bool no_tests;
    char hint[512];
    char *tail;
    /* A traced run of an adapter that builds first: the request's tracing and
     * environment, copied (the request is gone by then), launched after the build. */
    bool launch_after_build;
    struct testrun_request later;
    struct arena later_mem;
    bool building;                   /* the untraced build is running */
    char error[512];                 /* why the run could not go on; "" */
    pthread_t thread;
    bool has_thread;                 /* onboarding answers run nothing */
    struct testrun *next;
};

static struct {
    pthread_mutex_t lock;
    struct testrun *runs;            /* newest first */
    struct store *store;
    char tests_dir[4096];
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- lifetime ----------------------------------------------------------------- */

static void run_free(struct testrun *r)
{
    if (r->ad && r->ad->live_close)
        r->ad->live_close(r->live_state);
    tcmd_free(&r->cmd);
    free(r->project_root);
    free(r->command_arg);
    free(r->test_name);
    sb_free(&r->out.all);
    sb_free(&r->err.all);
    test_report_free(&r->report);
    for (int i = 0; i < r->n_failures; i++) {
        free(r->failures[i].rerun);
        for (int k = 0; k < r->failures[i].n_suggested; k++)
            free(r->failures[i].suggested[k]);
    }
    free(r->failures);
    free(r->stuck.name);
    free(r->stuck.runtime_dump);
    collector_stacks_free(&r->stuck.stacks);
    free(r->tail);
    arena_free(&r->later_mem);
    stuck_free(&r->det);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->changed);
    free(r);
}

static void run_put(struct testrun *r)
{
    pthread_mutex_lock(&r->lock);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (last)
        run_free(r);
}

void testruns_init(struct store *store, const char *tests_dir)
{
    g.store = store;
    snprintf(g.tests_dir, sizeof g.tests_dir, "%s", tests_dir ? tests_dir : "");
}

int testruns_running(void)
{
    int n = 0;
    pthread_mutex_lock(&g.lock);
    for (struct testrun *r = g.runs; r; r = r->next) {
        pthread_mutex_lock(&r->lock);
        n += r->state == TESTRUN_RUNNING;
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_unlock(&g.lock);
    return n;
}

void testruns_shutdown(void)
{
    pthread_mutex_lock(&g.lock);
    struct testrun *runs = g.runs;
    g.runs = NULL;
    pthread_mutex_unlock(&g.lock);
    for (struct testrun *r = runs; r; r = r->next)
        atomic_store(&r->cancel, 1);
    while (runs) {
        struct testrun *next = runs->next;
        if (runs->has_thread)
            pthread_join(runs->thread, NULL);
        run_put(runs);
        runs = next;
    }
}

static void service_init(struct store *store, const char *home)
{
    char dir[PATH_MAX];
    if (!home) {
        testruns_init(store, "");
        return;
    }
    struct strobe_error e;
    if (strobe_private_dir(home, "tests", dir, sizeof dir, &e) != 0) {
        log_error("%s", e.msg);
        dir[0] = '\0';
    }
    testruns_init(store, dir);
}

const struct daemon_service testrun_service = {
    .name = "testrun",
    .init = service_init,
    .busy = testruns_running,
    .shutdown = testruns_shutdown,
};

/* Adds r to the registry, dropping the oldest finished runs beyond TESTRUN_KEEP. */
static void registry_add(struct testrun *r)
{
    pthread_mutex_lock(&g.lock);
    r->next = g.runs;
    g.runs = r;
    int kept = 0;
    for (struct testrun **p = &g.runs; *p;) {
        struct testrun *x = *p;
        pthread_mutex_lock(&x->lock);
        bool done = x->state != TESTRUN_RUNNING;
        pthread_mutex_unlock(&x->lock);
        if (done && ++kept > TESTRUN_KEEP) {
            *p = x->next;
            if (x->has_thread)
                pthread_join(x->thread, NULL);
            run_put(x);
            continue;
        }
        p = &x->next;
    }
    pthread_mutex_unlock(&g.lock);
}

static struct testrun *run_get(const char *id)
{
    pthread_mutex_lock(&g.lock);
    struct testrun *found = NULL;
    for (struct testrun *r = g.runs; r && !found; r = r->next)
        if (strcmp(r->id, id) == 0)
            found = r;
    if (found) {
        pthread_mutex_lock(&found->lock);
        found->refs++;
        pthread_mutex_unlock(&found->lock);
    }
    pthread_mutex_unlock(&g.lock);
    return found;
}

/* ---- output ------------------------------------------------------------------ */

/* Feeds the complete lines of b that came in since the last call (and a partial
 * line silent for PARTIAL_AFTER_MS) to the live parser. Called with r->lock. */
static void feed_lines(struct testrun *r, struct stream_buf *b, int stream, bool silent)
{
    if (!r->ad->live_line)
        return;
    const char *buf = b->all.buf;
    size_t len = b->all.len;
    while (b->line_start < len) {
        const char *nl = memchr(buf + b->line_start, '\n', len - b->line_start);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (buf + b->line_start));
        if (n && buf[b->line_start + n - 1] == '\r')
            n--;
        r->ad->live_line(r->live_state, &r->live, stream, buf + b->line_start, n, false);
        b->line_start = (size_t)(nl - buf) + 1;
        b->partial_sent = false;
    }
    if (silent && !b->partial_sent && b->line_start < len) {
        r->ad->live_line(r->live_state, &r->live, stream, buf + b->line_start,
                         len - b->line_start, true);
        b->partial_sent = true;
    }
}

/* Reads what fd has; false at EOF. */
static bool read_stream(struct testrun *r, struct stream_buf *b)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(b->fd, chunk, sizeof chunk);
        if (n > 0) {
            pthread_mutex_lock(&r->lock);
            size_t room = b->all.len < OUTPUT_CAP ? OUTPUT_CAP - b->all.len : 0;
            size_t take = (size_t)n < room ? (size_t)n : room;
            sb_append(&b->all, chunk, take);
            b->dropped += (size_t)n - take;
            pthread_mutex_unlock(&r->lock);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        close(b->fd);
        b->fd = -1;
        return false;
    }
}

/* The traced path's tap: the session's output thread writes into our pipes. */
static void tap_data(void *arg, int stream, const char *buf, size_t n)
{
    struct testrun *r = arg;
    int fd = r->tap_w[stream == 1 ? 0 : 1];
    while (n > 0 && fd >= 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        n -= (size_t)w;
    }
}

static void tap_ended(void *arg, int wait_status)
{
    struct testrun *r = arg;
    pthread_mutex_lock(&r->lock);
    r->wait_status = wait_status;
    r->exited = true;
    pthread_cond_broadcast(&r->changed); /* the run's thread may wait for this */
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < 2; i++)
        if (r->tap_w[i] >= 0) {
            close(r->tap_w[i]);
            r->tap_w[i] = -1;
        }
}

/* ---- stuck tests ----------------------------------------------------------------- */

/* The leaves of the run's process tree (the test binaries, not the drivers that
 * wait for them); all of them when the list has no parent links to go by. */
static int leaf_processes(struct testrun *r, pid_t *out, int max)
{
    pid_t all[TPROC_MAX];
    int n = tproc_list(r->pid, r->marker, all, TPROC_MAX);
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)all[i], (int)all[i]);
        FILE *f = fopen(path, "re");
        int c = f ? fgetc(f) : EOF;
        if (f)
            fclose(f);
        if (c == EOF)
            out[k++] = all[i];
    }
    return k;
}

static int take_stacks(struct testrun *r, struct collector_stacks *st)
{
    struct strobe_error e;
    struct collector_stacks_request req = {0};
    if (r->session_id[0])
        return session_stacks(r->session_id, &req, st, &e);
    pid_t leaves[32];
    int n = leaf_processes(r, leaves, 32);
    if (n == 0)
        return -1;
    return collector_stacks_of(leaves, n, &req, st, &e);
}

/* Has the runtime print its own stacks (adapter's dump_signal) and keeps what it
 * printed in the next DUMP_WAIT_MS. */
static void runtime_dump(struct testrun *r)
{
    if (!r->ad->dump_signal)
        return;
    size_t out0 = r->out.all.len, err0 = r->err.all.len;
    pid_t leaves[32];
    int n = leaf_processes(r, leaves, 32);
    for (int i = 0; i < n; i++)
        kill(leaves[i], r->ad->dump_signal);
    int64_t until = mono_ns() + DUMP_WAIT_MS * NS_PER_MS;
    while ((r->out.fd >= 0 || r->err.fd >= 0) && mono_ns() < until) {
        struct pollfd p[2] = {{.fd = r->out.fd, .events = POLLIN},
                              {.fd = r->err.fd, .events = POLLIN}};
        if (poll(p, 2, 100) > 0) {
            if (r->out.fd >= 0 && p[0].revents)
                read_stream(r, &r->out);
            if (r->err.fd >= 0 && p[1].revents)
                read_stream(r, &r->err);
        }
    }
    struct strbuf printed = {0}, text = {0};
    sb_append(&printed, r->err.all.buf ? r->err.all.buf + err0 : "", r->err.all.len - err0);
    sb_append(&printed, r->out.all.buf ? r->out.all.buf + out0 : "", r->out.all.len - out0);
    if (r->ad->dump_text && printed.len)
        r->ad->dump_text(printed.buf, printed.len, &text);
    struct strbuf *keep = r->ad->dump_text ? &text : &printed;
    r->stuck.runtime_dump = keep->len ? sb_take(keep) : NULL;
    sb_free(&printed);
    sb_free(&text);
}

static void kill_run(struct testrun *r)
{
    if (r->session_id[0]) {
        struct strobe_error e;
        int64_t events;
        session_stop(r->session_id, true, &events, &e);
    }
    tproc_kill_all(r->pid, r->marker);
}

/* One look at a silent run; true when it was found stuck (and killed). */
static bool check_stuck(struct testrun *r, int64_t now)
{
    if (!stuck_wants_stacks(&r->det, now))
        return false;
    struct collector_stacks st;
    if (take_stacks(r, &st) != 0)
        return false;
    collector_stacks_diagnose(&st);
    char diagnosis[256];
    enum stuck_verdict v = stuck_stacks(&r->det, now, &st, diagnosis, sizeof diagnosis);
    pthread_mutex_lock(&r->lock);
    r->has_warning = true;
    snprintf(r->warning.test, sizeof r->warning.test, "%s", r->live.current);
    r->warning.idle_ms = (now - r->det.last_output_ns) / NS_PER_MS;
    snprintf(r->warning.diagnosis, sizeof r->warning.diagnosis, "%s", r->det.warning);
    if (v != STUCK_NONE) {
        /* The framework's current test; else the one the run was asked for. */
        r->stuck.name = strdup(r->live.current[0] || !r->test_name ? r->live.current
                                                                   : r->test_name);
        r->stuck.elapsed_ms = (now - (r->live.current_since_ns ? r->live.current_since_ns
                                                                 : r->started_ns)) / NS_PER_MS;
        snprintf(r->stuck.diagnosis, sizeof r->stuck.diagnosis, "%s", diagnosis);
        r->stuck.stacks = st;
        r->n_stuck = 1;
    }
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    if (v == STUCK_NONE) {
        collector_stacks_free(&st);
        return false;
    }
    log_info("test run %s: %s", r->id, diagnosis);
    runtime_dump(r);
    if (r->ad->dump_stacks && r->stuck.runtime_dump) { /* the runtime's frames, by thread */
        pthread_mutex_lock(&r->lock);
        r->ad->dump_stacks(r->stuck.runtime_dump, r->project_root, &r->stuck.stacks);
        pthread_mutex_unlock(&r->lock);
    }
    kill_run(r);
    return true;
}

/* ---- the run's thread --------------------------------------------------------- */

static void reap(struct testrun *r, bool block)
{
    if (r->session_id[0] || r->exited)
        return;
    int status;
    pid_t w;
    do
        w = waitpid(r->pid, &status, block ? 0 : WNOHANG);
    while (w < 0 && errno == EINTR);
    if (w == r->pid) {
        pthread_mutex_lock(&r->lock);
        r->wait_status = status;
        r->exited = true;
        pthread_mutex_unlock(&r->lock);
    }
}

static void watch(struct testrun *r)
{
    int64_t last_sample = 0, exited_at = 0, last_look = mono_ns();
    while (r->out.fd >= 0 || r->err.fd >= 0) {
        struct pollfd p[2] = {{.fd = r->out.fd, .events = POLLIN},
                              {.fd = r->err.fd, .events = POLLIN}};
        int n = poll(p, 2, 250);
        int64_t now = mono_ns();
        bool got = false;
        if (n > 0) {
            size_t before = r->out.all.len + r->err.all.len;
            if (r->out.fd >= 0 && p[0].revents)
                read_stream(r, &r->out);
            if (r->err.fd >= 0 && p[1].revents)
                read_stream(r, &r->err);
            got = r->out.all.len + r->err.all.len != before;
        }
        if (got)
            stuck_output(&r->det, now);
        bool silent = now - r->det.last_output_ns >= PARTIAL_AFTER_MS * NS_PER_MS;
        pthread_mutex_lock(&r->lock);
        feed_lines(r, &r->out, 1, silent);
        feed_lines(r, &r->err, 2, silent);
        bool changed = r->live.current_changed;
        r->live.current_changed = false;
        char current[256];
        snprintf(current, sizeof current, "%s", r->live.current);
        if (got || changed)
            pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        if (changed && current[0] && g.store) {
            int64_t base = store_test_baseline(g.store, r->project_root, current);
            pthread_mutex_lock(&r->lock);
            r->current_baseline_ms = base;
            pthread_mutex_unlock(&r->lock);
        }
        if (atomic_load(&r->cancel)) {
            kill_run(r);
            break;
        }
        reap(r, false);
        if (r->exited && !exited_at)
            exited_at = now;
        if (exited_at && now - exited_at > EXIT_DRAIN_MS * NS_PER_MS) {
            /* The main process is gone but something still holds its pipes: a
             * leftover of the run, killed with the rest. */
            kill_run(r);
            break;
        }
        if (r->session_id[0] && debug_pauses(r->session_id, &(struct collector_pause){0}, 1)) {
            /* paused at a breakpoint: the agent is looking, the test is not stuck */
            r->paused_ns += now - last_look;
            stuck_output(&r->det, now);
        }
        last_look = now;
        int64_t since = r->live.running_since_ns ? r->live.running_since_ns : r->started_ns;
        bool compiling = r->building || r->live.phase == TEST_PHASE_COMPILING;
        if (!r->exited && !compiling &&
            now - since - r->paused_ns > r->timeout_ms * NS_PER_MS) {
            r->timed_out = true;
            log_info("test run %s: hard timeout of %lld ms", r->id, (long long)r->timeout_ms);
            kill_run(r);
            break;
        }
        if (!r->exited && now - last_sample >= STUCK_SAMPLE_MS * NS_PER_MS) {
            last_sample = now;
            pid_t pids[TPROC_MAX];
            int np = tproc_list(r->pid, r->marker, pids, TPROC_MAX);
            stuck_cpu(&r->det, now, tproc_cpu_demand_ns(pids, np));
            if (check_stuck(r, now))
                break;
        }
    }
    /* Whatever is left in the pipes, then the main process's end. */
    for (int i = 0; i < 2; i++) {
        struct stream_buf *b = i ? &r->err : &r->out;
        if (b->fd >= 0) {
            read_stream(r, b);
            if (b->fd >= 0) {
                close(b->fd);
                b->fd = -1;
            }
        }
    }
    tproc_kill_all(r->pid, r->marker);
    reap(r, true);
    if (r->session_id[0]) {
        /* The session's end arrives through the tap once its output is read. */
        pthread_mutex_lock(&r->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        while (!r->exited && pthread_cond_timedwait(&r->changed, &r->lock, &until) == 0)
            ;
        pthread_mutex_unlock(&r->lock);
    }
}

/* What a failure needs beyond the adapter's case: its rerun command and traces. */
static void add_failures(struct testrun *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->report.n_cases; i++)
        n += r->report.cases[i].status == TEST_FAILED && !r->report.cases[i].stuck;
    r->failures = calloc(n ? n : 1, sizeof *r->failures);
    if (!r->failures)
        return;
    for (size_t i = 0; i < r->report.n_cases; i++) {
        struct test_case *c = &r->report.cases[i];
        if (c->status != TEST_FAILED || c->stuck)
            continue;
        struct testrun_failure *f = &r->failures[r->n_failures++];
        f->tc = c;
        struct test_plan one = r->plan;
        one.test = c->name;
        one.work_dir = NULL;
        one.traced = false;
        struct test_command cmd = {0};
        struct strobe_error e;
        if (r->ad->command(&one, &cmd, &e) == 0) {
            struct strbuf sb = {0};
            tcmd_shell(&cmd, r->project_root, &sb);
            f->rerun = sb_take(&sb);
        } else {
            f->rerun = strdup(r->command_line); /* one result for the whole command */
        }
        tcmd_free(&cmd);
        int max = (int)(sizeof f->suggested / sizeof *f->suggested);
        /* where the test file is, for the suggestions that look beside it for the
         * source under test (tsuggest.h) */
        char full[PATH_MAX];
        if (c->file && snprintf(full, sizeof full, "%s%s%s", c->file[0] == '/' ? "" :
                                r->project_root, c->file[0] == '/' ? "" : "/",
                                c->file) < (int)sizeof full && access(full, R_OK) == 0)
            c->file_found = full;
        f->n_suggested = r->ad->suggest ? r->ad->suggest(c, f->suggested, max)
                                        : test_suggest_default(c, f->suggested, max);
        c->file_found = NULL;
    }
}

/* Makes a string valid UTF-8 (invalid bytes as \xNN) for the JSON answers. */
static void sanitize(char **s)
{
    if (!*s || utf8_invalid_bytes(*s, strlen(*s)) == 0)
        return;
    size_t n = strlen(*s);
    char *clean = malloc(4 * n + 1);
    if (!clean)
        return;
    clean[utf8_sanitize(*s, n, clean)] = '\0';
    free(*s);
    *s = clean;
}

/* The stuck test is counted as stuck, not also as the failure its adapter may have
 * made of a test that never ended (its case stays, with what the adapter found). */
static void mark_stuck_case(struct test_report *rep, const char *name)
{
    struct test_case *c = name && name[0] ? test_report_find(rep, name) : NULL;
    if (c && c->status != TEST_PASSED)
        c->stuck = true;
}

static void finish(struct testrun *r)
{
    int ws = r->wait_status;
    r->exit_code = r->exited && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    struct test_output o = {
        .plan = &r->plan,
        .out = r->out.all.buf ? r->out.all.buf : "", .out_len = r->out.all.len,
        .err = r->err.all.buf ? r->err.all.buf : "", .err_len = r->err.all.len,
        .exit_code = r->exit_code, .stuck = r->n_stuck > 0,
        .report_path = r->cmd.report_path,
    };
    test_report_init(&r->report);
    if (r->ad->parse(&o, &r->report) != 0)
        snprintf(r->report.note, sizeof r->report.note, "out of memory parsing the output");
    for (size_t i = 0; i < r->report.n_cases; i++) {
        struct test_case *c = &r->report.cases[i];
        sanitize(&c->name);
        sanitize(&c->file);
        sanitize(&c->message);
        sanitize(&c->output);
    }
    for (size_t i = 0; i < r->report.n_diags; i++)
        sanitize(&r->report.diags[i].message);
    if (r->n_stuck) {
        sanitize(&r->stuck.runtime_dump);
        if ((!r->stuck.name || !r->stuck.name[0]) && r->live.current[0])
            test_set_str(&r->stuck.name, r->live.current, -1);
        /* One result for the whole command (generic): that is the stuck test. */
        if ((!r->stuck.name || !r->stuck.name[0]) && r->report.n_cases == 1)
            test_set_str(&r->stuck.name, r->report.cases[0].name, -1);
        mark_stuck_case(&r->report, r->stuck.name);
    }
    add_failures(r);
    bool ran = r->report.n_cases > 0 || r->n_stuck || r->report.build_failed;
    if (!ran) {
        /* Nothing parsed: the end of the output says what happened. */
        struct strbuf sb = {0};
        const struct strbuf *src = r->err.all.len ? &r->err.all : &r->out.all;
        size_t from = src->len > TAIL_BYTES ? src->len - TAIL_BYTES : 0;
        if (src->len)
            sb_append(&sb, src->buf + from, src->len - from);
        r->tail = sb.len ? sb_take(&sb) : NULL;
        sb_free(&sb);
        sanitize(&r->tail);
        r->no_tests = r->exit_code == 0 && !r->timed_out;
        if (r->no_tests)
            snprintf(r->hint, sizeof r->hint, "%s", r->ad->no_tests_hint);
    }
    /* Durations for the next runs' baselines. */
    if (g.store && r->report.n_cases) {
        const char **names = calloc(r->report.n_cases, sizeof *names);
        int64_t *ms = calloc(r->report.n_cases, sizeof *ms);
        int n = 0;
        for (size_t i = 0; names && ms && i < r->report.n_cases; i++)
            if (r->report.cases[i].duration_ms >= 0) {
                names[n] = r->report.cases[i].name;
                ms[n++] = r->report.cases[i].duration_ms;
            }
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (n)
            store_test_durations_add(g.store, r->project_root, names, ms, n,
                                     (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        free(names);
        free(ms);
    }
    struct details d = {
        .id = r->id, .framework = r->ad->name, .command = r->command_line,
        .project_root = r->project_root, .exit_code = r->exit_code,
        .timed_out = r->timed_out, .duration_ms = (r->ended_ns - r->started_ns) / NS_PER_MS,
        .report = &r->report, .stuck = r->n_stuck ? &r->stuck : NULL,
        .out = &r->out.all, .out_dropped = r->out.dropped,
        .err = &r->err.all, .err_dropped = r->err.dropped,
    };
    char err[512];
    if (details_write(g.tests_dir, &d, r->details_path, sizeof r->details_path, err,
                      sizeof err) != 0) {
        r->details_path[0] = '\0';
        log_error("test run %s: %s", r->id, err);
    }
}

static int start_traced(struct testrun *r, const struct testrun_request *req,
                        struct strobe_error *e);

static void set_error(struct testrun *r, const struct strobe_error *e)
{
    pthread_mutex_lock(&r->lock);
    snprintf(r->error, sizeof r->error, "%s: %.400s", err_code_name(e->code), e->msg);
    pthread_mutex_unlock(&r->lock);
    log_info("test run %s: %s", r->id, r->error);
}

/* The adapter's build of the tests, untraced, before a traced run: 0 when it
 * succeeded, -1 when it failed (its output then says why) or could not start. */
static int build_first(struct testrun *r)
{
    struct test_plan plan = r->plan;
    plan.build_only = true;
    struct test_command cmd = {0};
    struct strobe_error e;
    int out_fd, err_fd;
    if (r->ad->command(&plan, &cmd, &e) != 0 ||
        tproc_spawn(&cmd, cmd.cwd ? cmd.cwd : r->project_root, r->later.env, r->later.n_env,
                    r->marker, &r->pid, &out_fd, &err_fd, &e) != 0) {
        tcmd_free(&cmd);
        set_error(r, &e);
        return -1;
    }
    tcmd_free(&cmd);
    pthread_mutex_lock(&r->lock);
    r->building = true;
    test_live_phase(&r->live, TEST_PHASE_COMPILING);
    pthread_mutex_unlock(&r->lock);
    r->out.fd = out_fd;
    r->err.fd = err_fd;
    watch(r);
    pthread_mutex_lock(&r->lock);
    r->building = false;
    bool ok = r->exited && WIFEXITED(r->wait_status) && WEXITSTATUS(r->wait_status) == 0 &&
              !r->n_stuck && !r->timed_out && !atomic_load(&r->cancel);
    if (ok) {
        r->exited = false;
        r->wait_status = 0;
    }
    pthread_mutex_unlock(&r->lock);
    stuck_free(&r->det);
    stuck_init(&r->det, mono_ns());
    return ok ? 0 : -1;
}

static void *run_main(void *arg)
{
    struct testrun *r = arg;
    if (!r->launch_after_build) {
        watch(r);
    } else if (build_first(r) == 0) {
        struct strobe_error e;
        if (start_traced(r, &r->later, &e) == 0)
            watch(r);
        else
            set_error(r, &e);
    }
    r->ended_ns = mono_ns();
    finish(r);
    details_remove_dir(r->work_dir);
    pthread_mutex_lock(&r->lock);
    r->state = TESTRUN_COMPLETED;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    log_info("test run %s: %zu result(s), exit code %d", r->id, r->report.n_cases,
             r->exit_code);
    run_put(r);
    return NULL;
}

/* ---- start ------------------------------------------------------------------- */

static int64_t level_timeout_ms(const struct testrun_request *req)
{
    if (!req->level_given)
        return 120000;
    switch (req->level) {
    case TEST_LEVEL_UNIT: return 30000;
    case TEST_LEVEL_INTEGRATION: return 120000;
    case TEST_LEVEL_E2E: return 300000;
    default: return 120000;
    }
}

static void make_id(char *out)
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        uint64_t t = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
        memcpy(b, &t, 8);
        memcpy(b + 8, &t, 8);
    }
    char *p = out + sprintf(out, "tr-");
    for (int i = 0; i < 16; i++)
        p += sprintf(p, "%02x", b[i]);
}

static int check_request(const struct testrun_request *req, struct strobe_error *e)
{
    struct stat st;
    if (!req->project_root || req->project_root[0] != '/')
        return err_set(e, ERR_VALIDATION, "projectRoot must be an absolute path, not '%s'.",
                       req->project_root ? req->project_root : "");
    if (stat(req->project_root, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(e, ERR_VALIDATION, "projectRoot '%s' is not a directory.",
                       req->project_root);
    if (req->n_patterns > TESTRUN_MAX_PATTERNS)
        return err_set(e, ERR_VALIDATION, "at most %d tracePatterns, not %d.",
                       TESTRUN_MAX_PATTERNS, req->n_patterns);
    for (int i = 0; i < req->n_patterns; i++)
        if (pattern_check(req->patterns[i], e) != 0)
            return -1;
    for (int i = 0; i < req->n_env; i++)
        if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
            return err_set(e, ERR_VALIDATION, "env entry '%s' is not KEY=VALUE.", req->env[i]);
    return 0;
}

static const struct test_adapter *choose(const struct testrun_request *req, int *confidence,
                                          struct strobe_error *e)
{
    if (req->framework) {
        const struct test_adapter *ad = test_adapter_named(req->framework);
        if (!ad) {
            struct strbuf sb = {0};
            for (size_t i = 0; i < test_adapters_count; i++)
                sb_printf(&sb, "%s%s", i ? ", " : "", test_adapters[i]->name);
            err_set(e, ERR_VALIDATION, "unknown framework '%s'; known: %s.", req->framework,
                    sb.buf ? sb.buf : "");
            sb_free(&sb);
            return NULL;
        }
        *confidence = 100;
        return ad;
    }
    return test_adapter_detect(req->project_root, req->command, confidence);
}

/* Whether prog can be found (a path, or on PATH). */
static bool program_exists(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *colon = strchrnul(p, ':');
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(colon - p), p, prog);
        if (access(buf, X_OK) == 0)
            return true;
        p = *colon ? colon + 1 : colon;
    }
    return false;
}

static int start_plain(struct testrun *r, const struct testrun_request *req,
                       struct strobe_error *e)
{
    int out_fd, err_fd;
    const char *dir = r->cmd.cwd ? r->cmd.cwd : r->project_root;
    if (tproc_spawn(&r->cmd, dir, req->env, req->n_env, r->marker, &r->pid, &out_fd, &err_fd,
                    e) != 0)
        return -1;
    r->out.fd = out_fd;
    r->err.fd = err_fd;
    return 0;
}

static int start_traced(struct testrun *r, const struct testrun_request *req,
                        struct strobe_error *e)
{
    int outp[2], errp[2];
    if (pipe2(outp, O_CLOEXEC) != 0)
        return err_set(e, ERR_INTERNAL, "cannot create a pipe: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(outp[0]);
        close(outp[1]);
        return err_set(e, ERR_INTERNAL, "cannot create a pipe: %s", strerror(errno));
    }
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    r->out.fd = outp[0];
    r->err.fd = errp[0];
    r->tap_w[0] = outp[1];
    r->tap_w[1] = errp[1];
    const char *env[TESTRUN_MAX_ENV + TEST_ENV_MAX + 1];
    int n_env = 0;
    env[n_env++] = r->marker;
    for (int i = 0; i < req->n_env && i < TESTRUN_MAX_ENV; i++)
        env[n_env++] = req->env[i];
    for (int i = 0; i < r->cmd.n_env; i++)
        env[n_env++] = r->cmd.env[i];
    struct launch_request lr = {
        .command = r->cmd.argv[0], .args = (const char *const *)r->cmd.argv + 1,
        .n_args = r->cmd.argc - 1, .cwd = r->cmd.cwd ? r->cmd.cwd : r->project_root,
        .project_root = r->project_root, .env = env, .n_env = n_env,
        .explicit_tracing = true, .patterns = req->patterns, .n_patterns = req->n_patterns,
        .watches = req->watches, .n_watches = req->n_watches,
        .breakpoints = req->breakpoints, .n_breakpoints = req->n_breakpoints,
        .tap = tap_data, .tap_ended = tap_ended, .tap_arg = r,
    };
    struct launch_result res;
    if (session_launch(&lr, &res, e) != 0)
        return -1;
    pthread_mutex_lock(&r->lock);
    snprintf(r->session_id, sizeof r->session_id, "%s", res.session_id);
    r->pid = res.pid;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* The request's tracing and environment, copied into r for a launch after the
 * build. */
static void keep_for_later(struct testrun *r, const struct testrun_request *req)
{
    struct arena *a = &r->later_mem;
    struct testrun_request *l = &r->later;
    const char **patterns = arena_alloc(a, (size_t)(req->n_patterns + 1) * sizeof *patterns);
    for (int i = 0; i < req->n_patterns; i++)
        patterns[i] = arena_strdup(a, req->patterns[i]);
    const char **env = arena_alloc(a, (size_t)(req->n_env + 1) * sizeof *env);
    for (int i = 0; i < req->n_env; i++)
        env[i] = arena_strdup(a, req->env[i]);
    struct trace_watch_spec *w = arena_alloc(a, (size_t)(req->n_watches + 1) * sizeof *w);
    for (int i = 0; i < req->n_watches; i++) {
        w[i] = req->watches[i];
        w[i].label = arena_strdup(a, req->watches[i].label);
        w[i].variable = arena_strdup(a, req->watches[i].variable);
        const char **on = arena_alloc(a, (size_t)(w[i].n_on + 1) * sizeof *on);
        for (int k = 0; k < w[i].n_on; k++)
            on[k] = arena_strdup(a, req->watches[i].on[k]);
        w[i].on = on;
    }
    struct collector_breakpoint *b = arena_alloc(a, (size_t)(req->n_breakpoints + 1) *
                                                       sizeof *b);
    for (int i = 0; i < req->n_breakpoints; i++) {
        b[i] = req->breakpoints[i];
        b[i].function = req->breakpoints[i].function ? arena_strdup(a, b[i].function) : NULL;
        b[i].file = req->breakpoints[i].file ? arena_strdup(a, b[i].file) : NULL;
        b[i].condition = req->breakpoints[i].condition ? arena_strdup(a, b[i].condition) : NULL;
        b[i].message = req->breakpoints[i].message ? arena_strdup(a, b[i].message) : NULL;
    }
    *l = (struct testrun_request){.patterns = patterns, .n_patterns = req->n_patterns,
                                  .env = env, .n_env = req->n_env,
                                  .watches = w, .n_watches = req->n_watches,
                                  .breakpoints = b, .n_breakpoints = req->n_breakpoints};
    r->launch_after_build = true;
}

int testrun_start(const struct testrun_request *req, struct testrun_started *out,
                  struct strobe_error *e)
{
    if (check_request(req, e) != 0)
        return -1;
    int confidence = 0;
    const struct test_adapter *ad = choose(req, &confidence, e);
    if (!ad)
        return -1;
    struct testrun *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, ERR_INTERNAL, "out of memory starting a test run");
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    r->refs = 1;
    r->ad = ad;
    r->out.fd = r->err.fd = r->tap_w[0] = r->tap_w[1] = -1;
    r->current_baseline_ms = -1;
    make_id(r->id);
    snprintf(r->marker, sizeof r->marker, "STROBE_TEST_RUN=%s", r->id);
    r->project_root = strdup(req->project_root);
    r->command_arg = req->command ? strdup(req->command) : NULL;
    r->test_name = req->test ? strdup(req->test) : NULL;
    r->timeout_ms = level_timeout_ms(req);
    test_live_init(&r->live);
    if (!r->project_root || (req->command && !r->command_arg) || (req->test && !r->test_name)) {
        err_set(e, ERR_INTERNAL, "out of memory starting a test run");
        goto fail;
    }
    if (strobe_private_dir(g.tests_dir[0] ? g.tests_dir : NULL, r->id, r->work_dir,
                           sizeof r->work_dir, e) != 0)
        goto fail;
    bool wants_tracing = req->n_patterns > 0 || req->n_watches > 0 || req->n_breakpoints > 0;
    bool traced = wants_tracing && !ad->untraceable;
    r->plan = (struct test_plan){
        .project_root = r->project_root, .command = r->command_arg,
        .level = req->level_given ? req->level : TEST_LEVEL_ALL, .test = r->test_name,
        .work_dir = r->work_dir, .traced = traced,
    };
    bool onboarding = ad == &test_adapter_generic && !req->command;
    if (!onboarding) {
        if (ad->command(&r->plan, &r->cmd, e) != 0)
            goto fail;
        if (ad->dump_env) /* what a stuck verdict's runtime dump needs */
            tcmd_env(&r->cmd, "%s", ad->dump_env);
        if (r->cmd.too_long || r->cmd.argc == 0) {
            err_set(e, ERR_VALIDATION, "the %s command line is too long.", ad->display);
            goto fail;
        }
        if (ad->program && !program_exists(r->cmd.argv[0])) {
            err_set(e, ERR_COMMAND_NOT_FOUND, "'%s' is not installed (%s needs it; it comes "
                    "from %s).", r->cmd.argv[0], ad->display,
                    ad->provides ? ad->provides : "the framework's package");
            goto fail;
        }
        struct strbuf sb = {0};
        tcmd_shell(&r->cmd, r->project_root, &sb);
        snprintf(r->command_line, sizeof r->command_line, "%s", sb.buf ? sb.buf : "");
        sb_free(&sb);
    }
    if (ad->live_open)
        r->live_state = ad->live_open();
    stuck_init(&r->det, mono_ns());
    r->started_ns = mono_ns();
    if (onboarding) {
        r->no_tests = true;
        snprintf(r->hint, sizeof r->hint, "%s", ad->no_tests_hint);
    } else if (traced && ad->builds_first) {
        keep_for_later(r, req); /* the run's thread builds, then launches */
    } else if ((traced ? start_traced(r, req, e) : start_plain(r, req, e)) != 0) {
        if (e->code == ERR_COMMAND_NOT_FOUND && ad->provides)
            snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg),
                     " %s comes from %s.", ad->display, ad->provides);
        goto fail;
    }
    if (onboarding) {
        r->state = TESTRUN_COMPLETED;
    } else {
        r->refs = 2; /* the registry's and the thread's */
        if (pthread_create(&r->thread, NULL, run_main, r) != 0) {
            kill_run(r);
            reap(r, true);
            err_set(e, ERR_INTERNAL, "cannot start the test run's thread");
            goto fail;
        }
        r->has_thread = true;
    }
    snprintf(out->id, sizeof out->id, "%s", r->id);
    out->adapter = ad;
    out->confidence = confidence;
    snprintf(out->session_id, sizeof out->session_id, "%s", r->session_id);
    snprintf(out->command, sizeof out->command, "%s", r->command_line);
    out->trace_note = wants_tracing ? ad->trace_note : NULL;
    registry_add(r);
    log_info("test run %s: %s (%s)%s%s", r->id, ad->name, r->command_line,
             r->session_id[0] ? " as session " : "", r->session_id);
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        if (r->tap_w[i] >= 0)
            close(r->tap_w[i]);
    if (r->out.fd >= 0)
        close(r->out.fd);
    if (r->err.fd >= 0)
        close(r->err.fd);
    if (r->work_dir[0])
        details_remove_dir(r->work_dir);
    run_free(r);
    return -1;
}

/* ---- status ------------------------------------------------------------------ */

/* The project's language and build system: the adapter's, or for the generic one
 * what the files in its root say. */
static void project_kind(const struct testrun *r, const char **language,
                         const char **build_system)
{
    static const struct {
        const char *file, *language, *build_system;
    } marks[] = {
        {"Cargo.toml", "rust", "cargo"},       {"go.mod", "go", "go"},
        {"package.json", "javascript", "npm"}, {"pyproject.toml", "python", "pyproject"},
        {"setup.py", "python", "setuptools"},  {"CMakeLists.txt", "c/c++", "cmake"},
        {"meson.build", "c/c++", "meson"},      {"Makefile", "unknown", "make"},
    };
    *language = r->ad->language;
    *build_system = r->ad->build_system;
    if (r->ad != &test_adapter_generic)
        return;
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (test_has_file(r->project_root, marks[i].file)) {
            *language = marks[i].language;
            *build_system = marks[i].build_system;
            return;
        }
}

int testrun_status(const char *id, int wait_ms, struct testrun_view *v,
                   struct strobe_error *e)
{
    *v = (struct testrun_view){0};
    struct testrun *r = run_get(id);
    if (!r)
        return err_set(e, ERR_TEST_RUN_NOT_FOUND, "no test run with id '%s' (runs are kept "
                       "while the daemon runs, the last %d finished ones).", id, TESTRUN_KEEP);
    pthread_mutex_lock(&r->lock);
    if (wait_ms > 0 && r->state == TESTRUN_RUNNING) {
        struct timespec until = clock_after_ms(CLOCK_REALTIME, wait_ms);
        while (r->state == TESTRUN_RUNNING &&
               pthread_cond_timedwait(&r->changed, &r->lock, &until) != ETIMEDOUT)
            ;
    }
    int64_t now = mono_ns();
    snprintf(v->id, sizeof v->id, "%s", r->id);
    v->state = r->state;
    snprintf(v->session_id, sizeof v->session_id, "%s", r->session_id);
    snprintf(v->error, sizeof v->error, "%s", r->error);
    v->adapter = r->ad;
    snprintf(v->command, sizeof v->command, "%s", r->command_line);
    snprintf(v->project_root, sizeof v->project_root, "%s", r->project_root);
    v->elapsed_ms = ((r->ended_ns ? r->ended_ns : now) - r->started_ns) / NS_PER_MS;
    v->passed = r->live.passed;
    v->failed = r->live.failed;
    v->skipped = r->live.skipped;
    v->phase = r->live.phase;
    snprintf(v->current_test, sizeof v->current_test, "%s", r->live.current);
    v->current_elapsed_ms = r->live.current[0] ? (now - r->live.current_since_ns) / NS_PER_MS : 0;
    v->current_baseline_ms = r->live.current[0] ? r->current_baseline_ms : -1;
    if (r->has_warning && r->state == TESTRUN_RUNNING) {
        v->warnings[0] = r->warning;
        v->n_warnings = 1;
    }
    v->timeout_ms = r->timeout_ms;
    if (r->state == TESTRUN_COMPLETED) {
        v->report = &r->report;
        v->failures = r->failures;
        v->n_failures = r->n_failures;
        v->stuck = r->n_stuck ? &r->stuck : NULL;
        v->n_stuck = r->n_stuck;
        v->exit_code = r->exit_code;
        v->timed_out = r->timed_out;
        snprintf(v->details_path, sizeof v->details_path, "%s", r->details_path);
        v->no_tests = r->no_tests;
        snprintf(v->hint, sizeof v->hint, "%s", r->hint);
        project_kind(r, &v->language, &v->build_system);
        v->tail = r->tail;
        int passed = 0, failed = 0, skipped = 0;
        for (size_t i = 0; i < r->report.n_cases; i++) {
            const struct test_case *c = &r->report.cases[i];
            passed += c->status == TEST_PASSED;
            failed += c->status == TEST_FAILED && !c->stuck;
            skipped += c->status == TEST_SKIPPED;
        }
        v->passed = passed;
        v->failed = failed;
        v->skipped = skipped;
    }
    pthread_mutex_unlock(&r->lock);
    v->ref = r; /* the reference run_get took */
    return 0;
}

void testrun_view_free(struct testrun_view *v)
{
    if (v->ref)
        run_put(v->ref);
    *v = (struct testrun_view){0};
}
