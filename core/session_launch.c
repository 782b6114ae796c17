/*
 * session_launch.c - a session launched (session_launch in session.h): the command
 * resolved, its environment and arguments checked and built, the session recorded,
 * the target started under its collector with the pending (or given) patterns,
 * watches and breakpoints, and its output capture started.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/ring.h"
#include "base/strbuf.h"
#include "core/debug.h"
#include "core/output_keeper.h"
#include "core/patterns.h"
#include "core/session_internal.h"
#include "core/trace_watches.h"

extern char **environ;

#define OUTPUT_RING_BYTES (4u << 20)
#define COLLECTOR_RING_BYTES (8u << 20)

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
    for (struct session *s = sessions.live; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return 1;
    for (int i = 0; i < sessions.n_issued; i++)
        if (strcmp(sessions.issued[i], id) == 0)
            return 1;
    return store_session_id_taken(sessions.store, id);
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

    const struct collector_adopt_rule *rules[8];
    int n_rules = collector_adopt_rules(rules, 8);
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
                     .wake = store_wake, .wake_arg = sessions.store},
            .tuning = s->tuning,
            .patterns = patterns, .n_patterns = s->pending,
            .depth = patterns_pending_depth(),
            .depth_asked = patterns_pending_depth_asked(),
            .events = session_collector_events(s),
            .watches = watches, .n_watches = n_watches,
            .breakpoints = bps, .n_breakpoints = n_bps,
            .adopt_rules = rules, .n_adopt_rules = n_rules,
        };
        s->paused = launch.events.paused;
        session_layers_remember(s, patterns, s->pending, launch.depth);
        /* Before the program runs: started after it, the keeper's start delayed the
         * output thread, and a short program's lines were read at once, out of order.
         * If the launch fails, the write ends close and the keeper ends. */
        output_keeper_start(out[0], err[0], s->id); /* it outlives the daemon */
        pid_t pid;
        rc = collector_launch(s->collector, &launch, &s->target, &pid, e);
        if (rc == 0) {
            s->pid = pid;
            /* refused (a full disk), it is kept and retried by the store */
            if (store_session_set_pid(sessions.store, s->key, pid) < 0)
                log_error("session %s: cannot record its pid: out of memory", s->id);
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
    struct strobe_error e = {0};
    if (session_target_get(res->session_id, &st, &e) != 0)
        return;
    struct trace_watch_result *r = malloc(sizeof *r);
    if (r && collector_trace_watches(st.collector, st.target, NULL, 0, NULL, 0, r, &e) == 0) {
        res->pending_watches = r->n;
        snprintf(res->watch_warning, sizeof res->watch_warning, "%s", r->warning);
    } else if (r && e.code == ERR_NOT_IMPLEMENTED) {
        snprintf(res->watch_warning, sizeof res->watch_warning, "%d pending watch(es) not "
                 "added: %.400s", n_watches, e.msg);
    }
    free(r);
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
    pthread_mutex_init(&s->layers_lock, NULL);
    s->collector = collector;
    s->binary_path = strdup(path);
    s->project_root = strdup(req->project_root);
    s->ring = ring_create(OUTPUT_RING_BYTES);
    s->collector_ring = ring_create(COLLECTOR_RING_BYTES);
    s->joint = session_joint_new(s);
    s->joint_methods = &session_joint;
    s->output_cap = res->settings.output_max_bytes;
    s->order_output = res->settings.output_order_at_traps != 0;
    s->tuning = (struct collector_tuning){res->settings.hot_calls_per_second,
                                          res->settings.capture_exits != 0,
                                          res->settings.pin_cpu != 0,
                                          res->settings.sample_after,
                                          res->settings.overhead_budget_percent,
                                          res->settings.trace_mode == TRACE_MODE_FAST};
    if (!s->binary_path || !s->project_root || !s->ring || !s->collector_ring || !s->joint) {
        session_free(s);
        return err_set(e, ERR_INTERNAL, "out of resources creating a session");
    }

    pthread_mutex_lock(&sessions.lock);
    for (struct session *o = sessions.live; o; o = o->next)
        if (!atomic_load(&o->finished) && strcmp(o->binary_path, path) == 0) {
            err_set(e, ERR_SESSION_EXISTS, "Session '%s' is still running %s (pid %d).",
                    o->id, path, o->pid);
            goto fail_locked;
        }
    if (session_id_make(path, time(NULL), id_taken, NULL, s->id) != 0) {
        err_set(e, ERR_INTERNAL, "cannot choose a session id for %s", path);
        goto fail_locked;
    }
    snprintf(sessions.issued[sessions.next_issued], SESSION_ID_MAX, "%s", s->id);
    sessions.next_issued = (sessions.next_issued + 1) % SESSION_IDS_ISSUED;
    if (sessions.n_issued < SESSION_IDS_ISSUED)
        sessions.n_issued++;
    if (!(s->debug = debug_state_new(s->id))) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto fail_locked;
    }
    char *cmdline = command_line_json(path, req);
    struct session_row row = {
        .id = s->id, .binary_path = path, .project_root = (char *)req->project_root,
        .command_line = cmdline, .started_at_ms = session_wall_ms(), .status = "running",
    };
    struct strobe_error why;
    int rc = store_session_create(sessions.store, &row, &why);
    free(cmdline);
    if (rc != 0) {
        err_set(e, why.code == ERR_STORE_FULL ? ERR_STORE_FULL : ERR_INTERNAL,
                "cannot record the session: %s", why.msg);
        goto fail_locked;
    }
    s->key = row.key;
    store_session_set_limit(sessions.store, s->key, res->settings.events_max_per_session);
    store_attach_ring(sessions.store, s->ring, s->key);
    store_attach_ring(sessions.store, s->collector_ring, s->key);
    s->ring_attached = true;
    static char pending[PATTERNS_MAX][PATTERN_MAX_LEN]; /* sessions.lock serializes launches */
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
    const struct collector_breakpoint *bps = req->breakpoints;
    int n_bps = req->n_breakpoints;
    struct debug_staged *staged_bps =
        req->explicit_tracing ? NULL : debug_staged_take(&bps, &n_bps);
    /* the runtimes' breakpoints wait in the session for a process that runs them */
    struct collector_breakpoint *native = calloc((size_t)n_bps + 1, sizeof *native);
    int n_native = native ? session_joint_launch_bps(s, bps, n_bps, native, e)
                          : err_set(e, ERR_INTERNAL, "out of memory launching %s", path);
    rc = n_native < 0 ? -1 : start_target(s, req, path, cwd, list, watches, n_watches, native,
                                          n_native, e);
    res->staged_breakpoints = n_bps;
    free(native);
    debug_staged_free(staged_bps);
    trace_watches_staged_free(staged);
    if (rc != 0) {
        store_session_delete(sessions.store, s->key, NULL);
        goto fail_locked;
    }
    if (session_output_start(s) != 0) {
        /* Without its reader the target would block on a full pipe: end it. */
        collector_kill(s->collector, s->target);
        session_layers_kill(s);
        collector_join(s->collector, s->target);
        session_layers_join(s);
        s->target = NULL;
        store_session_delete(sessions.store, s->key, NULL);
        err_set(e, ERR_INTERNAL, "cannot create the output thread");
        goto fail_locked;
    }
    s->next = sessions.live;
    sessions.live = s;
    snprintf(res->session_id, sizeof res->session_id, "%s", s->id);
    res->pid = s->pid;
    res->pending_applied = s->pending;
    if (!req->explicit_tracing && s->pending > 0)
        patterns_pending_applied(s->id, path);
    pthread_mutex_unlock(&sessions.lock);
    log_info("session %s: launched %s as pid %d", s->id, path, s->pid);
    if (n_watches > 0)
        launched_watches(res, n_watches);
    return 0;

fail_locked:
    pthread_mutex_unlock(&sessions.lock);
    session_free(s);
    return -1;
}
