/*
 * daemon.c - daemon lifecycle and the accept loop. See daemon.h.
 *
 * The main thread polls the listening socket and a signalfd (SIGTERM, SIGINT,
 * SIGHUP) with a one-second timeout that drives the idle check. SIGPIPE is ignored:
 * a client that disconnects mid-answer costs a failed send, not the daemon.
 *
 * Retention: store_purge_expired() runs once at start, before the socket is bound,
 * then on a thread of its own every STROBE_RETENTION_INTERVAL_MS (default one
 * hour), so a long purge never holds up accepting clients or the idle check, and
 * goes through the store's session connection one session at a time, so it never
 * holds up the writer (tracing) for more than one chunk of a delete. The
 * retention.* settings are re-read from the global file at every check.
 */
#include "core/daemon.h"

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
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/paths.h"
#include "core/collector.h"
#include "core/daemon_start.h"
#include "core/poll.h"
#include "core/session.h"

struct client {
    pthread_t thread;
    int fd;
    _Atomic int done;
    struct client *next;
};

/* After accept fails for lack of descriptors: how long to leave the listening socket
 * alone, and how often to say so in the log. */
#define ACCEPT_PAUSE_MS 100
#define EMFILE_LOG_INTERVAL_S 10

static struct {
    struct store *store;
    const struct daemon_protocol *protocol;
    const struct daemon_service *const *services;
    int n_services;
    _Atomic int64_t last_activity_s;
    pthread_mutex_t lock; /* guards clients, n_clients */
    struct client *clients;
    int n_clients;
    int64_t accept_paused_until_ms; /* serve loop only */
    int64_t emfile_logged_s;
} d = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define RETENTION_INTERVAL_MS_DEFAULT (3600 * 1000LL)
#define DAY_MS (86400 * 1000LL)

static struct {
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t cond;  /* CLOCK_MONOTONIC; signalled to stop */
    bool stop;
    pthread_t thread;
    bool started;
    int64_t interval_ms;
    /* The settings warnings logged last (by the retention checks only, which never
     * run at once): a bad file is reported once, not at every check. */
    int n_warned;
    __typeof__(((struct settings *)0)->warnings) warned;
} ret = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static void touch(void) { atomic_store(&d.last_activity_s, now_s()); }

int daemon_default_idle_timeout(void)
{
    const char *v = getenv("STROBE_IDLE_TIMEOUT");
    if (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (!*end && n > 0 && n <= INT_MAX)
            return (int)n;
    }
    return 1800;
}

/* $STROBE_RETENTION_INTERVAL_MS if set and valid (1 ms to 1 year), else one hour. */
static int64_t retention_interval_ms(void)
{
    const char *v = getenv("STROBE_RETENTION_INTERVAL_MS");
    if (v && *v) {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (!*end && !errno && n > 0 && n <= 365 * DAY_MS)
            return n;
        log_warn("STROBE_RETENTION_INTERVAL_MS=%s is not a number of milliseconds from 1 "
                 "to %lld; retention checks run every %lld ms", v, 365 * DAY_MS,
                 RETENTION_INTERVAL_MS_DEFAULT);
    }
    return RETENTION_INTERVAL_MS_DEFAULT;
}

static void log_purge(void *arg, const struct store_purged *p)
{
    const struct settings *st = arg;
    if (p->by_age)
        log_info("retention: purged session %s: %.1f days old, more than "
                 "retention.maxAgeDays (%lld)", p->session_id, (double)p->age_ms / DAY_MS,
                 (long long)st->retention_max_age_days);
    else
        log_info("retention: purged session %s: the database uses %lld bytes, more than "
                 "retention.maxTotalBytes (%lld); oldest sessions go first", p->session_id,
                 (long long)p->used_bytes, (long long)st->retention_max_total_bytes);
}

/* One retention check with the current global settings. */
static void retention_check(void)
{
    struct settings st;
    sessions_settings(NULL, &st);
    if (st.n_warnings != ret.n_warned ||
        memcmp(st.warnings, ret.warned, sizeof st.warnings) != 0) {
        for (int i = 0; i < st.n_warnings; i++)
            log_warn("settings: %s", st.warnings[i]);
        ret.n_warned = st.n_warnings;
        memcpy(ret.warned, st.warnings, sizeof st.warnings);
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct store_retention policy = {
        .now_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000,
        .max_age_ms = st.retention_max_age_days * DAY_MS,
        .max_used_bytes = st.retention_max_total_bytes,
        .in_use = session_key_in_use,
    };
    struct strobe_error err;
    if (store_purge_expired(d.store, &policy, log_purge, &st, &err) < 0)
        log_error("retention: %s", err.msg);
}

static void *retention_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ret.lock);
    while (!ret.stop) {
        struct timespec until = clock_after_ms(CLOCK_MONOTONIC, ret.interval_ms);
        int rc = 0;
        while (!ret.stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&ret.cond, &ret.lock, &until);
        if (ret.stop)
            break;
        pthread_mutex_unlock(&ret.lock);
        retention_check();
        pthread_mutex_lock(&ret.lock);
    }
    pthread_mutex_unlock(&ret.lock);
    return NULL;
}

static void retention_start(void)
{
    ret.interval_ms = retention_interval_ms();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ret.cond, &ca);
    pthread_condattr_destroy(&ca);
    ret.stop = false;
    ret.started = pthread_create(&ret.thread, NULL, retention_main, NULL) == 0;
    if (!ret.started)
        log_error("cannot start the retention thread: retention runs at daemon start only");
}

/* Waits for a check in progress to finish. */
static void retention_stop(void)
{
    if (ret.started) {
        pthread_mutex_lock(&ret.lock);
        ret.stop = true;
        pthread_cond_signal(&ret.cond);
        pthread_mutex_unlock(&ret.lock);
        pthread_join(ret.thread, NULL);
        ret.started = false;
    }
    pthread_cond_destroy(&ret.cond);
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    d.protocol->serve(c->fd, d.store, touch);
    touch();
    atomic_store(&c->done, 1);
    return NULL;
}

/* Joins finished client threads. With all=true, first shuts every connection down
 * so its thread returns. */
static int reap_clients(bool all)
{
    pthread_mutex_lock(&d.lock);
    int live = 0;
    for (struct client **p = &d.clients; *p;) {
        struct client *c = *p;
        if (all && !atomic_load(&c->done))
            shutdown(c->fd, SHUT_RDWR);
        if (all || atomic_load(&c->done)) {
            pthread_join(c->thread, NULL);
            *p = c->next;
            d.n_clients--;
            free(c);
        } else {
            live++;
            p = &c->next;
        }
    }
    pthread_mutex_unlock(&d.lock);
    return live;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void accept_client(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* The connection stays queued; poll would report it again at once. */
            d.accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
            if (now_s() - d.emfile_logged_s >= EMFILE_LOG_INTERVAL_S) {
                d.emfile_logged_s = now_s();
                log_warn("cannot accept connections: %s (%d open); pausing accepts for "
                         "%d ms at a time", strerror(errno), d.n_clients, ACCEPT_PAUSE_MS);
            }
        }
        return;
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid()) {
        log_warn("refused a connection from uid %d (pid %d)", (int)cred.uid, (int)cred.pid);
        close(fd);
        return;
    }
    pthread_mutex_lock(&d.lock);
    int open_now = d.n_clients;
    pthread_mutex_unlock(&d.lock);
    if (open_now >= DAEMON_MAX_CLIENTS) {
        char why[200];
        snprintf(why, sizeof why, "too many connections (%d open, the limit): close idle "
                 "ones (each strobe mcp or strobectl holds one) and retry", open_now);
        log_warn("refused a connection: %s", why);
        d.protocol->refuse(fd, why);
        return;
    }
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    touch();
    pthread_mutex_lock(&d.lock);
    if (pthread_create(&c->thread, NULL, client_main, c) != 0) {
        pthread_mutex_unlock(&d.lock);
        log_error("cannot create a client thread");
        close(fd);
        free(c);
        return;
    }
    c->next = d.clients;
    d.clients = c;
    d.n_clients++;
    pthread_mutex_unlock(&d.lock);
}

/* The listening socket, or -1 with why (whylen bytes). */
static int bind_socket(const char *path, char *why, size_t whylen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        snprintf(why, whylen, "socket path %s is too long (max %zu); set a shorter "
                 "STROBE_HOME", path, sizeof addr.sun_path - 1);
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "cannot create a socket: %s", strerror(errno));
        return -1;
    }
    unlink(path); /* a stale socket: we hold the lock, so nobody serves it */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    umask(old);
    if (rc != 0 || chmod(path, 0600) != 0 || listen(fd, 64) != 0) {
        snprintf(why, whylen, "cannot listen on %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* 0, or -1 with why (whylen bytes). */
static int write_pid(const char *path, char *why, size_t whylen)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = -1;
    if (fd >= 0) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
        rc = write(fd, buf, (size_t)n) == n ? 0 : -1;
        close(fd);
    }
    if (rc == 0)
        rc = rename(tmp, path);
    if (rc != 0)
        snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

/* Holds the single-instance lock for the daemon's lifetime; -1 with why (errlen
 * bytes) when another daemon has it (*elsewhere set) or the lock file cannot be
 * opened. */
static int take_lock(const char *path, char *why, size_t whylen, bool *elsewhere)
{
    *elsewhere = false;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, whylen, "%s is a symbolic link; Strobe opens no link it did not "
                     "create: remove it", path);
        else
            snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        *elsewhere = errno == EWOULDBLOCK;
        if (*elsewhere)
            snprintf(why, whylen, "another daemon already runs for %s (see strobe.pid); "
                     "nothing to do", path);
        else
            snprintf(why, whylen, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Work the services still do (the serve loop only). */
static int services_busy(void)
{
    int n = 0;
    for (int i = 0; i < d.n_services; i++)
        n += d.services[i]->busy();
    return n;
}

static int get_paths(char paths[][PATH_MAX])
{
    struct strobe_error e;
    for (int f = STROBE_SOCK; f <= STROBE_SETTINGS; f++)
        if (strobe_path(f, paths[f], PATH_MAX, &e) != 0) {
            daemon_start_failed("%s", e.msg);
            return -1;
        }
    return 0;
}

/* store_open_alive's word every second of the database's check. */
static void checking(void *arg)
{
    daemon_start_wait("checking the database %s", (const char *)arg);
}

/* Opens the database, checked; a damaged one set aside is said in the log. NULL when
 * it cannot be opened (said to the starter). */
static struct store *open_store(const char *path)
{
    daemon_start_wait("checking the database %s", path);
    struct strobe_error err;
    struct store *st = store_open_alive(path, checking, (void *)path, &err);
    if (!st) {
        daemon_start_failed("cannot open the database %s: %s", path, err.msg);
        return NULL;
    }
    struct store_health h;
    store_health(st, &h);
    if (h.set_aside[0])
        log_warn("the database %s was damaged (%s): set aside as %s (with its -wal file), "
                 "a fresh one started", path, h.damage, h.set_aside);
    return st;
}

static void serve_loop(int lfd, int sfd, int idle_timeout_s)
{
    for (;;) {
        int64_t pause = d.accept_paused_until_ms - now_ms();
        struct pollfd pfd[2] = {{.fd = pause > 0 ? -1 : lfd, .events = POLLIN},
                                {.fd = sfd, .events = POLLIN}};
        int n = poll(pfd, 2, pause > 0 ? (int)pause : 1000);
        if (n < 0 && errno != EINTR)
            break;
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == sizeof si)
                log_info("signal %d: shutting down", (int)si.ssi_signo);
            break;
        }
        if (pfd[0].revents & POLLIN)
            accept_client(lfd);
        int clients = reap_clients(false);
        if (clients == 0 && sessions_running() == 0 && services_busy() == 0 &&
            now_s() - atomic_load(&d.last_activity_s) >= idle_timeout_s) {
            log_info("idle for %d s with no client, running session or busy service: "
                     "exiting", idle_timeout_s);
            break;
        }
    }
}

int daemon_run(int idle_timeout_s, const struct daemon_protocol *protocol,
               const struct daemon_service *const *services, int n_services)
{
    /* Everything the daemon creates (database, WAL, log) is private to the user. */
    umask(077);
    char paths[STROBE_SETTINGS + 1][PATH_MAX];
    if (get_paths(paths) != 0)
        return 1;
    /* The log first, so that a start refused for any reason below is in it. */
    if (log_open(paths[STROBE_LOG]) != 0)
        fprintf(stderr, "strobe: cannot open %s: %s\n", paths[STROBE_LOG], strerror(errno));
    char lock_why[PATH_MAX + 128];
    bool elsewhere;
    int lock_fd = take_lock(paths[STROBE_LOCK], lock_why, sizeof lock_why, &elsewhere);
    if (lock_fd < 0) {
        if (elsewhere)
            daemon_start_other("%s", lock_why);
        else
            daemon_start_failed("%s", lock_why);
        log_close();
        return 1;
    }
    /* Collectors keep what they learn about programs there (function indexes), so a
     * new daemon does not learn it again. */
    char cache_dir[PATH_MAX + 8];
    bool have_home = strobe_home(cache_dir, PATH_MAX, NULL) == 0;
    collectors_init(have_home ? strcat(cache_dir, "/cache") : NULL);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* before any thread: all inherit it */
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
    if (sfd < 0) {
        daemon_start_failed("cannot create the signal descriptor: %s", strerror(errno));
        collectors_shutdown();
        log_close();
        close(lock_fd);
        return 1;
    }

    d.store = open_store(paths[STROBE_DB]);
    if (!d.store) {
        collectors_shutdown();
        log_close();
        close(sfd);
        close(lock_fd);
        return 1;
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int orphans = store_session_close_orphans(d.store, (int64_t)wall.tv_sec * 1000 +
                                                       wall.tv_nsec / 1000000);
    if (orphans > 0)
        log_info("marked %d session(s) of a previous daemon as stopped", orphans);
    sessions_init(d.store, paths[STROBE_SETTINGS]);
    char home[PATH_MAX];
    if (strobe_home(home, sizeof home, NULL) != 0)
        home[0] = '\0';
    d.services = services;
    d.n_services = n_services;
    for (int i = 0; i < n_services; i++)
        services[i]->init(d.store, home[0] ? home : NULL);
    daemon_start_wait("applying the retention settings");
    retention_check();
    retention_start();
    d.protocol = protocol;
    touch();

    char why[PATH_MAX + 128];
    int lfd = bind_socket(paths[STROBE_SOCK], why, sizeof why);
    int status = 1;
    if (lfd >= 0 && write_pid(paths[STROBE_PID], why, sizeof why) == 0) {
        log_info("daemon %d listening on %s (idle timeout %d s)", (int)getpid(),
                 paths[STROBE_SOCK], idle_timeout_s);
        daemon_start_ready();
        serve_loop(lfd, sfd, idle_timeout_s);
        status = 0;
    } else {
        daemon_start_failed("%s", why);
    }
    if (lfd >= 0) {
        close(lfd);
        unlink(paths[STROBE_SOCK]);
    }
    reap_clients(true);
    retention_stop();
    polls_shutdown();
    for (int i = n_services - 1; i >= 0; i--)
        services[i]->shutdown();
    sessions_shutdown();
    store_close(d.store);
    collectors_shutdown();
    unlink(paths[STROBE_PID]);
    log_info("daemon %d stopped", (int)getpid());
    log_close();
    close(sfd);
    close(lock_fd);
    return status;
}
