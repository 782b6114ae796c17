/*
 * session.c - the session registry: launching, resolving, status, stop, delete and
 * trace changes. See session.h.
 *
 * A session's program is driven by a collector (core/collector.h), chosen per
 * program with collector_for() and reached only through its method table: this
 * file knows no tracer, no DWARF and no pattern resolution. The patterns in force
 * belong to the collector (it reads them on its own thread at entry points and
 * execs); the engine keeps the syntax checks and the pending set (core/patterns.h).
 *
 * Ordering guarantee: a session's status leaves "running" only in the output
 * capture's on_exit (core/output.h), after everything the main process wrote is
 * queued and the process_exit event behind it. Together with store_sync_session() in
 * session_resolve(), an agent that sees "exited" and then queries sees all output.
 */
#include "core/session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/debug.h"
#include "core/patterns.h"
#include "base/log.h"
#include "core/output.h"
#include "core/poll.h"
#include "core/trace_watches.h"
#include "base/ring.h"
#include "base/strbuf.h"

extern char **environ;

#define OUTPUT_RING_BYTES (4u << 20)
#define COLLECTOR_RING_BYTES (8u << 20)

struct session {
    char id[SESSION_ID_MAX];
    int64_t key;
    pid_t pid;
    char *binary_path;
    int64_t t0_ns;               /* CLOCK_MONOTONIC at launch */
    const struct collector_methods *collector;
    struct collector_target *target; /* NULL until launched */
    struct ring *collector_ring; /* function events, produced by the collector */
    struct ring *ring;           /* the output capture's, until it starts */
    bool ring_attached;          /* the store drains (and will free) it */
    int out_fd, err_fd;          /* read ends, until the output capture starts */
    pthread_mutex_t exit_lock;   /* hands the main process's end to the output capture */
    struct output *output;       /* set under exit_lock once started */
    pthread_cond_t output_ready; /* output set, or output_failed */
    bool output_failed;
    bool exited;                 /* the main process ended before the capture started */
    int exit_status;
    _Atomic int stop_requested;
    _Atomic int finished;        /* status recorded in the store */
    int64_t output_cap;
    bool order_output;           /* output.orderAtTraps: drain the pipes at each trap */
    struct collector_tuning tuning;
    int pending;                 /* pending patterns preloaded at launch */
    struct debug_state *debug;   /* pauses and their waiters (core/debug.h) */
    void (*tap)(void *, int, const char *, size_t); /* launch_request's tap */
    void (*tap_ended)(void *, int);
    void *tap_arg;
    int users;                   /* requests holding the session (session_acquire,
                                    session_target_get), under reg.lock */
    struct session *next;
};

static struct {
    pthread_mutex_t lock;        /* guards the list and launches */
    pthread_cond_t unused;       /* a session's users dropped to 0 */
    struct session *live;
    struct store *store;
    const char *global_settings;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER, .unused = PTHREAD_COND_INITIALIZER};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sessions_init(struct store *store, const char *global_settings_path)
{
    reg.store = store;
    reg.global_settings = global_settings_path;
}

void sessions_settings(const char *project_root, struct settings *out)
{
    settings_load(out, reg.global_settings, project_root);
}

/* ---- the end of the main process ---------------------------------------------- */

/* The output capture's on_exit: the process_exit event, then the status. */
static void record_exit(void *arg, struct output *o, int ws)
{
    struct session *s = arg;
    bool stopped = atomic_load(&s->stop_requested);
    char text[128], data[96], sigbuf[32];
    bool has_code = event_describe_exit(s->pid, ws, stopped, text, sizeof text, data, sizeof data);
    int code = has_code ? WEXITSTATUS(ws) : 0;
    const char *signame = NULL;
    if (!has_code) {
        const char *abbrev = sigabbrev_np(WTERMSIG(ws));
        snprintf(sigbuf, sizeof sigbuf, "SIG%s", abbrev ? abbrev : "UNKNOWN");
        signame = sigbuf;
    }
    const char *status = stopped ? "stopped" : has_code ? "exited" : "crashed";
    struct event ev = event_init(s->key, EV_PROCESS_EXIT, mono_ns() - s->t0_ns);
    ev.pid = s->pid;
    ev.tid = s->pid;
    ev.text = text;
    ev.data = data;
    output_push(o, &ev);
    store_sync_session(reg.store, s->key, -1);
    if (store_session_finish(reg.store, s->key, status, wall_ms(), has_code, code, signame) != 0)
        log_error("session %s: cannot record its end", s->id);
    atomic_store(&s->finished, 1);
    polls_end_session(s->id, false); /* nothing left to sample */
    log_info("session %s: %s", s->id, text);
    if (s->tap_ended)
        s->tap_ended(s->tap_arg, ws);
}

/* Before a crash is stamped: what the program wrote before it is read first. A
 * program can crash before its output capture has started (the launch starts it
 * once the target runs): then it is waited for. The bounds only matter when the
 * daemon is starved (valgrind runs it 20-50x slower). */
static void settle_output(void *arg)
{
    struct session *s = arg;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&s->exit_lock);
    while (!s->output && !s->output_failed &&
           pthread_cond_timedwait(&s->output_ready, &s->exit_lock, &until) == 0)
        ;
    struct output *o = s->output;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_settle(o, 5000);
}

/* At a trap, before its event is stamped: what the program wrote by then is read
 * first (core/output.h). Nothing before the capture has started. */
static void drain_output(void *arg)
{
    struct session *s = arg;
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_drain_now(o);
}

static void on_paused(void *arg)
{
    struct session *s = arg;
    debug_state_notify(s->debug);
}

static void on_main_exit(void *arg, int wait_status)
{
    struct session *s = arg;
    debug_state_exited(s->debug, wait_status);
    pthread_mutex_lock(&s->exit_lock);
    struct output *o = s->output;
    s->exited = true;
    s->exit_status = wait_status;
    pthread_mutex_unlock(&s->exit_lock);
    if (o)
        output_exited(o, wait_status);
}

/* Starts the output capture of a launched target; 0 or -1. */
static int start_output(struct session *s)
{
    struct output_config cfg = {
        .out_fd = s->out_fd, .err_fd = s->err_fd, .store = reg.store,
        .sink = {.session_key = s->key, .t0_ns = s->t0_ns, .ring = s->ring,
                 .wake = store_wake, .wake_arg = reg.store},
        .pid = s->pid,
        .cap_bytes = s->output_cap, .on_exit = record_exit, .arg = s,
        .tap = s->tap, .tap_arg = s->tap_arg,
    };
    struct output *o = output_start(&cfg);
    if (!o) {
        pthread_mutex_lock(&s->exit_lock);
        s->output_failed = true;
        pthread_cond_broadcast(&s->output_ready);
        pthread_mutex_unlock(&s->exit_lock);
        return -1;
    }
    s->out_fd = s->err_fd = -1;
    s->ring = NULL;
    pthread_mutex_lock(&s->exit_lock);
    s->output = o;
    pthread_cond_broadcast(&s->output_ready);
    bool exited = s->exited;
    pthread_mutex_unlock(&s->exit_lock);
    if (exited) /* a program that ended at once */
        output_exited(o, s->exit_status);
    return 0;
}

/* ---- launch ----------------------------------------------------------------- */

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Resolves the command to an absolute, existing, executable path. */
static int resolve_command(const struct launch_request *req, char *out, struct strobe_error *e)
{
    const char *cmd = req->command;
    char candidate[PATH_MAX];
    if (strchr(cmd, '/')) {
        const char *base = req->cwd ? req->cwd : req->project_root;
        if (cmd[0] == '/')
            snprintf(candidate, sizeof candidate, "%s", cmd);
        else
            snprintf(candidate, sizeof candidate, "%s/%s", base, cmd);
        if (access(candidate, F_OK) != 0)
            return err_set(e, ERR_COMMAND_NOT_FOUND,
                           "Command '%s' not found (looked at %s).", cmd, candidate);
    } else {
        const char *path = getenv("PATH");
        for (int i = 0; i < req->n_env; i++)
            if (strncmp(req->env[i], "PATH=", 5) == 0)
                path = req->env[i] + 5;
        bool found = false;
        for (const char *p = path ? path : "/usr/bin:/bin"; *p && !found;) {
            const char *colon = strchrnul(p, ':');
            int len = (int)(colon - p);
            snprintf(candidate, sizeof candidate, "%.*s/%s", len ? len : 1,
                     len ? p : ".", cmd);
            found = access(candidate, F_OK) == 0;
            p = *colon ? colon + 1 : colon;
        }
        if (!found)
            return err_set(e, ERR_COMMAND_NOT_FOUND, "Command '%s' not found in PATH.", cmd);
    }
    struct stat st;
    if (!realpath(candidate, out) || stat(out, &st) != 0)
        return err_set(e, ERR_COMMAND_NOT_FOUND, "Command '%s' cannot be resolved: %s",
                       cmd, strerror(errno));
    if (!S_ISREG(st.st_mode) || access(out, X_OK) != 0)
        return err_set(e, ERR_COMMAND_NOT_EXECUTABLE, "'%s' is not an executable file%s.",
                       out, S_ISDIR(st.st_mode) ? " (it is a directory)" : "");
    return 0;
}

/* Whether the daemon itself is built with a sanitizer: then the *SAN_OPTIONS in its
 * environment configure it (log files of the test suite), not the programs it runs. */
#if defined(__SANITIZE_ADDRESS__) /* the SAN=1 build: address and undefined */
#define DAEMON_SANITIZED 1
#else
#define DAEMON_SANITIZED 0
#endif

static bool daemon_only_variable(const char *kv)
{
    if (strncmp(kv, "STROBE_", 7) == 0)
        return true;
    return DAEMON_SANITIZED &&
           (strncmp(kv, "ASAN_OPTIONS=", 13) == 0 || strncmp(kv, "UBSAN_OPTIONS=", 14) == 0 ||
            strncmp(kv, "LSAN_OPTIONS=", 13) == 0);
}

/* The daemon's environment minus what configures the daemon itself (STROBE_*, and a
 * sanitized daemon's sanitizer options), plus req->env. */
static char **build_env(const struct launch_request *req)
{
    int n = 0;
    while (environ[n])
        n++;
    char **envp = calloc((size_t)n + (size_t)req->n_env + 1, sizeof *envp);
    if (!envp)
        return NULL;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (daemon_only_variable(environ[i]))
            continue;
        const char *eq = strchr(environ[i], '=');
        size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool overridden = false;
        for (int j = 0; j < req->n_env && !overridden; j++)
            overridden = strncmp(req->env[j], environ[i], klen) == 0 &&
                         req->env[j][klen] == '=';
        if (!overridden)
            envp[m++] = environ[i];
    }
    for (int j = 0; j < req->n_env; j++)
        envp[m++] = (char *)req->env[j];
    envp[m] = NULL;
    return envp;
}

static char *command_line_json(const char *path, const struct launch_request *req)
{
    struct strbuf sb = {0};
    sb_puts(&sb, "[");
    sb_json_string(&sb, path);
    for (int i = 0; i < req->n_args; i++) {
        sb_puts(&sb, ",");
        sb_json_string(&sb, req->args[i]);
    }
    sb_puts(&sb, "]");
    return sb_take(&sb);
}

static int id_taken(void *arg, const char *id)
{
    (void)arg;
    for (struct session *s = reg.live; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return 1;
    return store_session_id_taken(reg.store, id);
}

static void session_free(struct session *s)
{
    if (s->out_fd >= 0)
        close(s->out_fd);
    if (s->err_fd >= 0)
        close(s->err_fd);
    if (s->ring && s->ring_attached)
        store_release_ring(reg.store, s->ring);
    else
        ring_destroy(s->ring);
    if (s->collector_ring && s->ring_attached)
        store_release_ring(reg.store, s->collector_ring);
    else
        ring_destroy(s->collector_ring);
    pthread_mutex_destroy(&s->exit_lock);
    pthread_cond_destroy(&s->output_ready);
    debug_state_end(s->debug);
    free(s->binary_path);
    free(s);
}

static int start_target(struct session *s, const struct launch_request *req,
                        const char *path, const char *cwd, const char *const *patterns,
                        const struct trace_watch_spec *watches, int n_watches,
                        const struct collector_breakpoint *bps, int n_bps,
                        struct strobe_error *e)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        int errnum = errno;
        if (devnull >= 0)
            close(devnull);
        for (int i = 0; i < 2; i++) {
            if (out[i] >= 0)
                close(out[i]);
            if (err[i] >= 0)
                close(err[i]);
        }
        return err_set(e, ERR_INTERNAL, "cannot create the output pipes: %s",
                       strerror(errnum));
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    s->out_fd = out[0];
    s->err_fd = err[0];

    char **argv = calloc((size_t)req->n_args + 2, sizeof *argv);
    char **envp = build_env(req);
    int rc = -1;
    if (!argv || !envp) {
        err_set(e, ERR_INTERNAL, "out of memory launching %s", path);
    } else {
        /* argv[0] as given, as a shell passes it: multi-call programs (rustup as
         * cargo, busybox) choose what to be by it; path is what runs. */
        argv[0] = (char *)req->command;
        for (int i = 0; i < req->n_args; i++)
            argv[i + 1] = (char *)req->args[i];
        struct collector_launch launch = {
            .path = path, .argv = argv, .envp = envp, .cwd = cwd,
            .stdin_fd = devnull, .stdout_fd = out[1], .stderr_fd = err[1],
            .project_root = req->project_root,
            .sink = {.session_key = s->key, .t0_ns = s->t0_ns, .ring = s->collector_ring,
                     .wake = store_wake, .wake_arg = reg.store},
            .tuning = s->tuning,
            .patterns = patterns, .n_patterns = s->pending,
            .depth = patterns_pending_depth(),
            .depth_asked = patterns_pending_depth_asked(),
            .events = {.main_exit = on_main_exit, .settle_output = settle_output,
                       .drain_output = s->order_output ? drain_output : NULL,
                       .paused = on_paused, .arg = s},
            .watches = watches, .n_watches = n_watches,
            .breakpoints = bps, .n_breakpoints = n_bps,
        };
        pid_t pid;
        rc = s->collector->launch(&launch, &s->target, &pid, e);
        if (rc == 0) {
            s->pid = pid;
            store_session_set_pid(reg.store, s->key, pid);
        }
    }
    free(argv);
    free(envp);
    close(devnull);
    close(out[1]);
    close(err[1]);
    return rc;
}

/* After a launch with pending watches: how many the program took (the collector
 * adds them at its entry point; the listing waits for that) and which failed. */
static void launched_watches(struct launch_result *res, int n_watches)
{
    struct session_target st;
    struct strobe_error e;
    if (session_target_get(res->session_id, &st, &e) != 0)
        return;
    if (!st.collector->trace_watches) {
        snprintf(res->watch_warning, sizeof res->watch_warning, "%d pending watch(es) not "
                 "added: the %s collector has no trace watches.", n_watches,
                 st.collector->name);
    } else {
        struct trace_watch_result *r = malloc(sizeof *r);
        if (r && st.collector->trace_watches(st.target, NULL, 0, NULL, 0, r, &e) == 0) {
            res->pending_watches = r->n;
            snprintf(res->watch_warning, sizeof res->watch_warning, "%s", r->warning);
        }
        free(r);
    }
    session_target_put(&st);
}

/* What execve would refuse with E2BIG, refused here with the reason (under valgrind
 * the child dies instead of reporting the errno): one string (argument or
 * environment entry) over the kernel's 32-page limit, or all of them with their
 * pointers over ARG_MAX (a quarter of the stack limit). */
#define EXEC_STRING_MAX (32 * 4096)
static int check_exec_size(const struct launch_request *req, const char *path,
                           struct strobe_error *e)
{
    size_t total = strlen(path) + 1 + 2 * sizeof(char *);
    for (int i = 0; i < req->n_args; i++) {
        size_t len = strlen(req->args[i]) + 1;
        if (len > EXEC_STRING_MAX)
            return err_set(e, ERR_VALIDATION, "args[%d] is %zu bytes; the kernel takes at most "
                           "%d per argument (E2BIG). Pass large inputs in a file.", i, len - 1,
                           EXEC_STRING_MAX - 1);
        total += len + sizeof(char *);
    }
    for (int i = 0; environ[i]; i++)
        total += strlen(environ[i]) + 1 + sizeof(char *);
    for (int i = 0; i < req->n_env; i++) {
        size_t len = strlen(req->env[i]) + 1;
        if (len > EXEC_STRING_MAX)
            return err_set(e, ERR_VALIDATION, "env entry %d is %zu bytes; the kernel takes at "
                           "most %d per variable (E2BIG). Pass large inputs in a file.", i,
                           len - 1, EXEC_STRING_MAX - 1);
        total += len + sizeof(char *);
    }
    long arg_max = sysconf(_SC_ARG_MAX);
    if (arg_max > 0 && total > (size_t)arg_max)
        return err_set(e, ERR_VALIDATION, "the arguments and environment take %zu bytes; the "
                       "kernel takes at most %ld (E2BIG). Pass large inputs in a file.", total,
                       arg_max);
    return 0;
}

int session_launch(const struct launch_request *req, struct launch_result *res,
                   struct strobe_error *e)
{
    memset(res, 0, sizeof *res);
    if (req->project_root[0] != '/' || !is_dir(req->project_root))
        return err_set(e, ERR_VALIDATION,
                       "projectRoot '%s' is not an existing directory given as an absolute "
                       "path. Pass the absolute path of the project.", req->project_root);
    if (req->cwd && !is_dir(req->cwd))
        return err_set(e, ERR_VALIDATION, "cwd '%s' is not an existing directory.", req->cwd);
    char path[PATH_MAX];
    if (resolve_command(req, path, e) != 0 || check_exec_size(req, path, e) != 0)
        return -1;
    char cwd[PATH_MAX];
    if (req->cwd) {
        snprintf(cwd, sizeof cwd, "%s", req->cwd);
    } else {
        snprintf(cwd, sizeof cwd, "%s", path);
        *strrchr(cwd, '/') = '\0';
        if (!cwd[0])
            snprintf(cwd, sizeof cwd, "/");
    }
    sessions_settings(req->project_root, &res->settings);
    struct collector_probe probe;
    const struct collector_methods *collector = collector_for(path, &probe);
    if (!collector)
        return err_set(e, ERR_ATTACH_FAILED, "No collector can run %s.", path);
    res->n_warnings = probe.n_warnings;
    memcpy(res->warnings, probe.warnings, sizeof res->warnings);

    struct session *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, ERR_INTERNAL, "out of memory");
    s->out_fd = s->err_fd = -1;
    pthread_mutex_init(&s->exit_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->output_ready, &ca);
    pthread_condattr_destroy(&ca);
    s->collector = collector;
    s->binary_path = strdup(path);
    s->ring = ring_create(OUTPUT_RING_BYTES);
    s->collector_ring = ring_create(COLLECTOR_RING_BYTES);
    s->output_cap = res->settings.output_max_bytes;
    s->order_output = res->settings.output_order_at_traps != 0;
    s->tuning = (struct collector_tuning){res->settings.hot_calls_per_second,
                                          res->settings.capture_exits != 0,
                                          res->settings.pin_cpu != 0,
                                          res->settings.sample_after,
                                          res->settings.overhead_budget_percent};
    if (!s->binary_path || !s->ring || !s->collector_ring) {
        session_free(s);
        return err_set(e, ERR_INTERNAL, "out of resources creating a session");
    }

    pthread_mutex_lock(&reg.lock);
    for (struct session *o = reg.live; o; o = o->next)
        if (!atomic_load(&o->finished) && strcmp(o->binary_path, path) == 0) {
            err_set(e, ERR_SESSION_EXISTS, "Session '%s' is still running %s (pid %d).",
                    o->id, path, o->pid);
            goto fail_locked;
        }
    if (session_id_make(path, time(NULL), id_taken, NULL, s->id) != 0) {
        err_set(e, ERR_INTERNAL, "cannot choose a session id for %s", path);
        goto fail_locked;
    }
    if (!(s->debug = debug_state_new(s->id))) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto fail_locked;
    }
    char *cmdline = command_line_json(path, req);
    struct session_row row = {
        .id = s->id, .binary_path = path, .project_root = (char *)req->project_root,
        .command_line = cmdline, .started_at_ms = wall_ms(), .status = "running",
    };
    char *serr = NULL;
    int rc = store_session_create(reg.store, &row, &serr);
    free(cmdline);
    if (rc != 0) {
        err_set(e, ERR_INTERNAL, "cannot record the session: %s", serr ? serr : "?");
        free(serr);
        goto fail_locked;
    }
    s->key = row.key;
    store_session_set_limit(reg.store, s->key, res->settings.events_max_per_session);
    store_attach_ring(reg.store, s->ring);
    store_attach_ring(reg.store, s->collector_ring);
    s->ring_attached = true;
    static char pending[PATTERNS_MAX][PATTERN_MAX_LEN]; /* reg.lock serializes launches */
    const char *list[PATTERNS_MAX + 1] = {0};
    const struct trace_watch_spec *watches = req->watches;
    int n_watches = req->n_watches;
    struct trace_watches_staged *staged = NULL;
    if (req->explicit_tracing) {
        s->pending = req->n_patterns < PATTERNS_MAX ? req->n_patterns : PATTERNS_MAX;
        for (int i = 0; i < s->pending; i++)
            list[i] = req->patterns[i];
    } else {
        int n_pending = patterns_pending_list(pending, PATTERNS_MAX);
        for (int i = 0; i < n_pending && i < PATTERNS_MAX; i++)
            list[i] = pending[i];
        s->pending = n_pending < PATTERNS_MAX ? n_pending : PATTERNS_MAX;
        staged = trace_watches_pending_take(&watches, &n_watches);
    }
    s->tap = req->tap;
    s->tap_ended = req->tap_ended;
    s->tap_arg = req->tap_arg;
    s->t0_ns = mono_ns();
    const struct collector_breakpoint *bps = NULL;
    int n_bps = 0;
    struct debug_staged *staged_bps =
        req->explicit_tracing ? NULL : debug_staged_take(&bps, &n_bps);
    rc = start_target(s, req, path, cwd, list, watches, n_watches, bps, n_bps, e);
    res->staged_breakpoints = n_bps;
    debug_staged_free(staged_bps);
    trace_watches_staged_free(staged);
    if (rc != 0) {
        store_session_delete(reg.store, s->key, NULL);
        goto fail_locked;
    }
    if (start_output(s) != 0) {
        /* Without its reader the target would block on a full pipe: end it. */
        s->collector->kill(s->target);
        s->collector->join(s->target);
        s->target = NULL;
        store_session_delete(reg.store, s->key, NULL);
        err_set(e, ERR_INTERNAL, "cannot create the output thread");
        goto fail_locked;
    }
    s->next = reg.live;
    reg.live = s;
    snprintf(res->session_id, sizeof res->session_id, "%s", s->id);
    res->pid = s->pid;
    res->pending_applied = s->pending;
    if (!req->explicit_tracing && s->pending > 0)
        patterns_pending_applied(s->id, path);
    pthread_mutex_unlock(&reg.lock);
    log_info("session %s: launched %s as pid %d", s->id, path, s->pid);
    if (n_watches > 0)
        launched_watches(res, n_watches);
    return 0;

fail_locked:
    pthread_mutex_unlock(&reg.lock);
    session_free(s);
    return -1;
}

/* ---- lookup, status, stop ------------------------------------------------- */

static struct session *find_live(const char *id)
{
    for (struct session *s = reg.live; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static int not_found(const char *id, struct strobe_error *e)
{
    return err_set(e, ERR_SESSION_NOT_FOUND, "No session found with ID '%s'.", id);
}

/* How long a query or status waits for its session's events still on their way to
 * the database; past it the answer shows what is there (a flood of one session
 * never holds up another's answers: store_sync_session). */
#define RESOLVE_SYNC_MS 2000

int session_resolve(const char *id, int64_t *key, struct strobe_error *e)
{
    struct session_row row;
    int rc = store_session_get(reg.store, id, &row);
    if (rc < 0)
        return err_set(e, ERR_INTERNAL, "cannot read session '%s' from the database", id);
    if (rc == 1)
        return not_found(id, e);
    *key = row.key;
    session_row_free(&row);
    store_sync_session(reg.store, *key, RESOLVE_SYNC_MS);
    return 0;
}

int session_status(const char *id, struct store_reader *rd, struct session_status *out,
                   struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    int64_t key;
    if (session_resolve(id, &key, e) != 0)
        return -1;
    if (store_session_get(reg.store, id, &out->row) != 0)
        return not_found(id, e);
    pthread_mutex_lock(&reg.lock);
    struct session *s = find_live(id);
    out->output_capped = s && s->output && output_capped(s->output);
    pthread_mutex_unlock(&reg.lock);
    out->lost_events = store_session_lost(reg.store, key, out->store_error,
                                          sizeof out->store_error);
    if (store_count_by_type(rd, key, out->counts) != 0 ||
        store_query_pids(rd, key, &out->pids, &out->n_pids) != 0 ||
        store_count_by_function(rd, key, 10, &out->top, &out->n_top) != 0) {
        session_status_free(out);
        return err_set(e, ERR_INTERNAL, "cannot count the events of session '%s'", id);
    }
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        out->total_events += out->counts[t];
    return 0;
}

void session_status_free(struct session_status *st)
{
    session_row_free(&st->row);
    free(st->pids);
    st->pids = NULL;
    for (int i = 0; i < st->n_top; i++) {
        free(st->top[i].function);
        free(st->top[i].function_raw);
    }
    free(st->top);
    st->top = NULL;
}

/* The exact calls of s's traced functions go to the store before its tracer goes:
 * status after a stop with retain, or from a later daemon, still shows them. */
static void save_counts(struct session *s)
{
    struct collector_counts *c = s->collector->counts ? malloc(sizeof *c) : NULL;
    struct store_fn_calls *rows = c ? malloc(COUNTS_MAX * sizeof *rows) : NULL;
    if (rows && s->collector->counts(s->target, c) == 0 && c->n > 0) {
        for (size_t i = 0; i < c->n; i++) {
            const struct collector_fn_count *f = &c->fns[i];
            rows[i] = (struct store_fn_calls){.calls = (int64_t)f->calls,
                                              .recorded = (int64_t)f->recorded,
                                              .sampled_since_ns = f->sampled_since_ns,
                                              .sampled = f->sampled};
            snprintf(rows[i].function, sizeof rows[i].function, "%s", f->function);
            snprintf(rows[i].lost, sizeof rows[i].lost, "%s", f->exact ? "" : f->lost);
        }
        if (store_function_calls_save(reg.store, s->key, rows, (int)c->n) != 0)
            log_error("session %s: cannot store its functions' call counts", s->id);
    }
    free(rows);
    free(c);
}

/* Ends a live session's process and threads; s is unlinked and freed. Called
 * with reg.lock held. */
static void end_live(struct session *s)
{
    save_counts(s);
    atomic_store(&s->stop_requested, 1);
    s->collector->kill(s->target);
    while (s->users > 0) /* a trace update finishes: the dead target ends its wait */
        pthread_cond_wait(&reg.unused, &reg.lock);
    /* The collector is done once every process is gone, after reporting the main
     * one's end to the output capture, which records it before stopping. */
    s->collector->join(s->target);
    s->target = NULL;
    if (s->output)
        output_stop(s->output);
    for (struct session **p = &reg.live; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    session_free(s);
}

static int stop_or_delete(const char *id, bool retain, int64_t *events,
                          struct strobe_error *e)
{
    polls_end_session(id, true); /* before reg.lock: a sample may be waiting for it */
    pthread_mutex_lock(&reg.lock);
    struct session *s = find_live(id);
    if (s)
        end_live(s);
    pthread_mutex_unlock(&reg.lock);
    polls_end_session(id, true); /* one started meanwhile has found the session gone */
    struct session_row row;
    int rc = store_session_get(reg.store, id, &row);
    if (rc == 0) { /* its last events in, then the row again for their count */
        int64_t key = row.key;
        session_row_free(&row);
        store_sync_session(reg.store, key, -1);
        rc = store_session_get(reg.store, id, &row);
    }
    if (rc < 0)
        return err_set(e, ERR_INTERNAL, "cannot read session '%s' from the database", id);
    if (rc == 1)
        return not_found(id, e);
    if (events)
        *events = row.event_count;
    char *serr = NULL;
    if (retain)
        rc = store_session_set_retained(reg.store, row.key, true);
    else
        rc = store_session_delete(reg.store, row.key, &serr);
    session_row_free(&row);
    if (rc != 0) {
        err_set(e, ERR_INTERNAL, "cannot update session '%s': %s", id, serr ? serr : "?");
        free(serr);
        return -1;
    }
    log_info("session %s: %s", id, retain ? "stopped, data retained" : "deleted");
    return 0;
}

int session_stop(const char *id, bool retain, int64_t *events_collected,
                 struct strobe_error *e)
{
    return stop_or_delete(id, retain, events_collected, e);
}

int session_delete(const char *id, struct strobe_error *e)
{
    return stop_or_delete(id, false, NULL, e);
}

/* The live session id, kept alive (users) until session_release(); NULL with e set
 * to SESSION_NOT_FOUND, or to PROCESS_EXITED for a stored session whose process no
 * daemon runs now. */
static struct session *session_acquire(const char *id, struct strobe_error *e)
{
    pthread_mutex_lock(&reg.lock);
    struct session *s = find_live(id);
    if (s)
        s->users++;
    pthread_mutex_unlock(&reg.lock);
    if (s)
        return s;
    int64_t key;
    if (session_resolve(id, &key, e) == 0)
        err_set(e, ERR_PROCESS_EXITED, "Session '%s' has no running process (it ended or "
                "was started by an earlier daemon).", id);
    return NULL;
}

static void session_release(struct session *s)
{
    pthread_mutex_lock(&reg.lock);
    if (--s->users == 0)
        pthread_cond_broadcast(&reg.unused);
    pthread_mutex_unlock(&reg.lock);
}

static int process_exited(const char *id, struct strobe_error *e)
{
    return err_set(e, ERR_PROCESS_EXITED, "Target process of session '%s' has exited.", id);
}

int session_target_get(const char *id, struct session_target *out, struct strobe_error *e)
{
    *out = (struct session_target){0};
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    if (atomic_load(&s->finished)) {
        session_release(s);
        return process_exited(id, e);
    }
    *out = (struct session_target){.collector = s->collector, .target = s->target,
                                   .key = s->key, .t0_ns = s->t0_ns, .session = s,
                                   .pid = s->pid, .debug = s->debug};
    return 0;
}

void session_target_put(struct session_target *st)
{
    if (st->session)
        session_release(st->session);
    *st = (struct session_target){0};
}

struct store *sessions_store(void)
{
    return reg.store;
}

int session_trace(const char *id, const char *const *add, int n_add,
                  const char *const *remove, int n_remove, int depth,
                  struct trace_result *res, struct strobe_error *e)
{
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc;
    if (atomic_load(&s->finished)) {
        s->collector->describe(s->target, res);
        rc = process_exited(id, e);
    } else {
        rc = s->collector->set_patterns(s->target, add, n_add, remove, n_remove, depth,
                                        res, e);
    }
    session_release(s);
    return rc;
}

int session_trace_describe(const char *id, struct trace_result *res, struct strobe_error *e)
{
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    s->collector->describe(s->target, res);
    session_release(s);
    return 0;
}

int session_stacks(const char *id, const struct collector_stacks_request *req,
                   struct collector_stacks *out, struct strobe_error *e)
{
    *out = (struct collector_stacks){0};
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc;
    if (!s->collector->stacks)
        rc = collector_unsupported(s->collector, "reading every thread's stack", e);
    else if (atomic_load(&s->finished))
        rc = process_exited(id, e);
    else
        rc = s->collector->stacks(s->target, req, out, e);
    if (rc == 0 && !out->diagnosis)
        collector_stacks_diagnose(out);
    else if (rc != 0)
        collector_stacks_free(out);
    session_release(s);
    return rc;
}

/* The counts store_function_calls_save kept for a session that is not live. */
static int stored_counts(const char *id, struct collector_counts *out, struct strobe_error *e)
{
    int64_t key;
    struct store_fn_calls *rows = malloc(COUNTS_MAX * sizeof *rows);
    int n = rows && session_resolve(id, &key, e) == 0
                ? store_function_calls_load(reg.store, key, rows, COUNTS_MAX) : -1;
    for (int i = 0; i < n; i++) {
        struct collector_fn_count *f = &out->fns[i];
        snprintf(f->function, sizeof f->function, "%s", rows[i].function);
        f->calls = (uint64_t)rows[i].calls;
        f->recorded = (uint64_t)rows[i].recorded;
        f->sampled = rows[i].sampled;
        f->sampled_since_ns = rows[i].sampled_since_ns;
        f->exact = !rows[i].lost[0];
        snprintf(f->lost, sizeof f->lost, "%s", rows[i].lost);
        snprintf(f->mode, sizeof f->mode, "%s", "stored");
    }
    free(rows);
    out->n = n > 0 ? (size_t)n : 0;
    out->final = true;
    return n > 0 ? 0 : -1;
}

int session_counts(const char *id, struct collector_counts *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&reg.lock);
    bool live = find_live(id) != NULL;
    pthread_mutex_unlock(&reg.lock);
    if (!live)
        return stored_counts(id, out, e);
    struct session *s = session_acquire(id, e);
    if (!s)
        return -1;
    int rc = s->collector->counts && s->target ? s->collector->counts(s->target, out)
                                               : collector_unsupported(s->collector,
                                                     "counting calls", e);
    session_release(s);
    return rc;
}

int sessions_running(void)
{
    int n = 0;
    pthread_mutex_lock(&reg.lock);
    for (struct session *s = reg.live; s; s = s->next)
        n += !atomic_load(&s->finished);
    pthread_mutex_unlock(&reg.lock);
    return n;
}

void sessions_shutdown(void)
{
    pthread_mutex_lock(&reg.lock);
    while (reg.live)
        end_live(reg.live);
    pthread_mutex_unlock(&reg.lock);
}

bool session_key_in_use(void *arg, int64_t key)
{
    (void)arg;
    pthread_mutex_lock(&reg.lock);
    bool traced = false;
    for (struct session *s = reg.live; s; s = s->next)
        if (s->key == key) {
            traced = s->target && !s->collector->finished(s->target);
            break;
        }
    pthread_mutex_unlock(&reg.lock);
    return traced;
}
