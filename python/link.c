/*
 * link.c - one agent's connection (python_internal.h, pylink_*).
 *
 * The socket is made before the target runs the loader: STATE/python/PID-TAG.sock,
 * in a 0700 directory, 0600 itself. Its thread accepts only a peer of this user whose
 * pid is the adopted process (SO_PEERCRED), and the first line must carry the token
 * the loader was given; anything else is closed unheard.
 *
 * The agent's lines (channel.py lists them): "hello" once; "events" batches, each
 * event pushed into the sink as a function event (the agent's numbers moved above
 * the native ones: a session's seqs are one space) and the batch's floor made the
 * ring's (base/ring.h: no later event is older); "reply" to the command waiting for
 * it; "counts" with "final" as the interpreter exits; "pause" when a thread stops
 * at a breakpoint or step (an EV_PAUSE event, and the thread kept in the paused set
 * until a resume); "logpoint" events among the batches (EV_LOGPOINT).
 */
#include "python/python_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/event.h"
#include "base/log.h"
#include "core/collector.h"

#define POLL_MS 200
#define LINE_MAX_BYTES (16u << 20) /* a batch of 512 events of 16 KB previews at most */
/* The agent's event numbers, moved above any the native collector gives. */
#define SEQ_BASE (INT64_C(1) << 48)
#define PAUSED_MAX 64              /* threads of one process paused at once */

struct pylink {
    pid_t pid;
    struct event_sink sink;
    int listen_fd, fd;
    char path[PATH_MAX];
    char token[33];
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;      /* hello, a reply, the end */
    pthread_mutex_t send_lock;
    bool hello, closed, stop;
    char version[32], hooks[32], error[256];
    int64_t next_id;
    int64_t reply_id;
    cJSON *reply;
    cJSON *final;
    int64_t seq_base;
    void (*paused)(void *);
    void *paused_arg;
    struct collector_pause pauses[PAUSED_MAX]; /* under lock */
    int n_pauses;
};

const char *pylink_socket(const struct pylink *l)
{
    return l->path;
}

const char *pylink_token(const struct pylink *l)
{
    return l->token;
}

static void set_closed(struct pylink *l)
{
    pthread_mutex_lock(&l->lock);
    l->closed = true;
    bool had_pauses = l->n_pauses > 0;
    l->n_pauses = 0;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    ring_idle(l->sink.ring);
    if (had_pauses && l->paused)
        l->paused(l->paused_arg);
}

/* ---- the agent's lines ---------------------------------------------------------- */

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t num_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static bool flag_of(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* A JSON member of o as text (malloc'd), or NULL. */
static char *json_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return v ? cJSON_PrintUnformatted(v) : NULL;
}

/* The event's data object: a summary line, and what the exit was (a suspend, an
 * exception), or NULL when there is nothing to say. */
static char *data_of(const cJSON *ev, bool enter)
{
    cJSON *d = cJSON_CreateObject();
    const char *s = str_of(ev, enter ? "short" : "retShort");
    if (s)
        cJSON_AddStringToObject(d, enter ? "argsShort" : "retShort", s);
    if (flag_of(ev, "resumed"))
        cJSON_AddTrueToObject(d, "resumed");
    if (flag_of(ev, "suspended"))
        cJSON_AddTrueToObject(d, "suspended");
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(ev, "exception");
    if (x) {
        cJSON_AddTrueToObject(d, "unwound");
        cJSON_AddItemToObject(d, "exception", cJSON_Duplicate(x, true));
    }
    char *text = cJSON_GetArraySize(d) ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    return text;
}

/* A logpoint's message: an EV_LOGPOINT with its breakpoint and where. */
static void push_logpoint(struct pylink *l, const cJSON *ev)
{
    struct event e = event_sink_init(&l->sink, EV_LOGPOINT, num_of(ev, "ts"));
    e.pid = l->pid;
    e.tid = (int32_t)num_of(ev, "tid");
    e.thread_name = str_of(ev, "thread");
    e.function = str_of(ev, "function");
    e.source_file = str_of(ev, "file");
    e.line = (int32_t)num_of(ev, "line");
    e.text = str_of(ev, "text");
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "breakpointId", (double)num_of(ev, "breakpointId"));
    cJSON_AddStringToObject(d, "file", e.source_file ? e.source_file : "");
    cJSON_AddNumberToObject(d, "line", e.line);
    cJSON_AddStringToObject(d, "function", e.function ? e.function : "");
    char *data = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    e.data = data;
    event_sink_push(&l->sink, &e);
    free(data);
}

static void push_event(struct pylink *l, const cJSON *ev)
{
    const char *kind = str_of(ev, "ev");
    if (kind && strcmp(kind, "logpoint") == 0) {
        push_logpoint(l, ev);
        return;
    }
    bool enter = kind && strcmp(kind, "enter") == 0;
    if (!enter && !(kind && strcmp(kind, "exit") == 0))
        return;
    struct event e = event_sink_init(&l->sink, enter ? EV_FUNCTION_ENTER : EV_FUNCTION_EXIT,
                                     num_of(ev, "ts"));
    e.pid = l->pid;
    e.tid = (int32_t)num_of(ev, "tid");
    e.thread_name = str_of(ev, "thread");
    e.seq = l->seq_base + num_of(ev, "seq");
    int64_t parent = num_of(ev, "parent");
    e.parent_seq = parent ? l->seq_base + parent : 0;
    e.function = str_of(ev, "fn");
    e.source_file = str_of(ev, "file");
    e.line = (int32_t)num_of(ev, "line");
    char *args = enter ? json_of(ev, "args") : NULL;
    char *ret = enter ? NULL : json_of(ev, "ret");
    char *data = data_of(ev, enter);
    e.arguments = args;
    e.return_value = ret;
    e.data = data;
    if (!enter)
        e.duration_ns = num_of(ev, "duration");
    e.sampled = flag_of(ev, "sampled");
    event_sink_push(&l->sink, &e);
    free(args);
    free(ret);
    free(data);
}

/* An uncaught exception: an EV_CRASH whose data is the report's (kind
 * "uncaught_exception", core/crash_payload.h). */
static void push_crash(struct pylink *l, const cJSON *c)
{
    struct event e = event_sink_init(&l->sink, EV_CRASH, num_of(c, "ts"));
    e.pid = l->pid;
    e.tid = (int32_t)num_of(c, "tid");
    e.thread_name = str_of(c, "thread");
    e.function = str_of(c, "fn");
    e.source_file = str_of(c, "file");
    e.line = (int32_t)num_of(c, "line");
    e.text = str_of(c, "text");
    char *data = json_of(c, "data");
    e.data = data;
    event_sink_push(&l->sink, &e);
    free(data);
}

static enum collector_pause_reason reason_of(const char *r)
{
    if (r && strcmp(r, "step") == 0)
        return PAUSE_STEP;
    if (r && strcmp(r, "pause") == 0)
        return PAUSE_REQUEST;
    if (r && strcmp(r, "allStop") == 0)
        return PAUSE_ALL_STOP;
    return PAUSE_BREAKPOINT;
}

/* A thread stopped (breaks.py): the EV_PAUSE event, the paused set, paused(). */
static void take_pause(struct pylink *l, const cJSON *p)
{
    struct collector_pause cp = {.tid = (pid_t)num_of(p, "tid"), .pid = l->pid,
                                 .seq = num_of(p, "seq"), .reason = reason_of(str_of(p, "reason")),
                                 .breakpoint_id = (int)num_of(p, "breakpointId"), .line = (int)num_of(p, "line")};
    snprintf(cp.function, sizeof cp.function, "%s", str_of(p, "function") ? str_of(p, "function") : "");
    snprintf(cp.file, sizeof cp.file, "%s", str_of(p, "file") ? str_of(p, "file") : "");
    char *ret = json_of(p, "returnValue");
    if (ret && strlen(ret) < sizeof cp.return_value)
        snprintf(cp.return_value, sizeof cp.return_value, "%s", ret);
    const char *why = str_of(p, "reason") ? str_of(p, "reason") : "breakpoint";
    char text[512];
    int n = snprintf(text, sizeof text, "thread %d paused at %s:%d in %s", (int)cp.tid,
                     strrchr(cp.file, '/') ? strrchr(cp.file, '/') + 1 : cp.file, cp.line,
                     cp.function);
    if (cp.breakpoint_id && n < (int)sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, " (breakpoint %d)", cp.breakpoint_id);
    else if (n < (int)sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, " (%s)", why);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "reason", why);
    if (cp.breakpoint_id)
        cJSON_AddNumberToObject(d, "breakpointId", cp.breakpoint_id);
    cJSON_AddStringToObject(d, "file", cp.file);
    cJSON_AddNumberToObject(d, "line", cp.line);
    cJSON_AddStringToObject(d, "function", cp.function);
    if (ret)
        cJSON_AddRawToObject(d, "returnValue", ret);
    char *data = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    struct event e = event_sink_init(&l->sink, EV_PAUSE, num_of(p, "ts"));
    e.pid = l->pid;
    e.tid = cp.tid;
    e.thread_name = str_of(p, "thread");
    e.function = cp.function;
    e.source_file = cp.file;
    e.line = cp.line;
    e.text = text;
    e.data = data;
    event_sink_push(&l->sink, &e);
    free(data);
    free(ret);
    pthread_mutex_lock(&l->lock);
    int at = 0;
    while (at < l->n_pauses && l->pauses[at].tid != cp.tid)
        at++;
    if (at < PAUSED_MAX) {
        l->pauses[at] = cp;
        if (at == l->n_pauses)
            l->n_pauses++;
    }
    pthread_mutex_unlock(&l->lock);
    if (l->paused)
        l->paused(l->paused_arg);
}

int pylink_pauses(struct pylink *l, struct collector_pause *out, int max)
{
    pthread_mutex_lock(&l->lock);
    int n = l->n_pauses < max ? l->n_pauses : max;
    memcpy(out, l->pauses, (size_t)n * sizeof *out);
    pthread_mutex_unlock(&l->lock);
    return n;
}

void pylink_resumed(struct pylink *l, pid_t tid, int64_t upto_seq)
{
    pthread_mutex_lock(&l->lock);
    for (int i = 0; i < l->n_pauses;)
        if ((!tid || l->pauses[i].tid == tid) && l->pauses[i].seq <= upto_seq)
            l->pauses[i] = l->pauses[--l->n_pauses];
        else
            i++;
    pthread_mutex_unlock(&l->lock);
    if (l->paused)
        l->paused(l->paused_arg);
}

/* The hello line: the token must be the one given (else the connection is not the
 * loader's), and it says what runs or why the agent could not start. */
static bool take_hello(struct pylink *l, const cJSON *h)
{
    const char *token = str_of(h, "token");
    if (!token || strcmp(token, l->token) != 0)
        return false;
    pthread_mutex_lock(&l->lock);
    snprintf(l->version, sizeof l->version, "%s", str_of(h, "version") ? str_of(h, "version") : "");
    snprintf(l->hooks, sizeof l->hooks, "%s", str_of(h, "hooks") ? str_of(h, "hooks") : "");
    const char *err = str_of(h, "error");
    snprintf(l->error, sizeof l->error, "%s", err ? err : "");
    l->hello = true;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
    ring_floor(l->sink.ring, mono_ns() - l->sink.t0_ns);
    return true;
}

static bool take_line(struct pylink *l, const char *line)
{
    cJSON *msg = cJSON_Parse(line);
    if (!msg)
        return true; /* a line cut short by a dying process: nothing to keep */
    bool ok = true;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(msg, "hello"))) {
        ok = take_hello(l, v);
    } else if (!l->hello) {
        ok = false;
    } else if ((v = cJSON_GetObjectItemCaseSensitive(msg, "events"))) {
        const cJSON *ev;
        cJSON_ArrayForEach(ev, v)
            push_event(l, ev);
        int64_t floor = num_of(msg, "floor");
        if (floor)
            ring_floor(l->sink.ring, floor - l->sink.t0_ns);
    } else if (cJSON_GetObjectItemCaseSensitive(msg, "reply")) {
        pthread_mutex_lock(&l->lock);
        cJSON_Delete(l->reply);
        l->reply_id = num_of(msg, "reply");
        l->reply = msg;
        msg = NULL;
        pthread_cond_broadcast(&l->changed);
        pthread_mutex_unlock(&l->lock);
    } else if ((v = cJSON_GetObjectItemCaseSensitive(msg, "crash"))) {
        push_crash(l, v);
    } else if ((v = cJSON_GetObjectItemCaseSensitive(msg, "pause"))) {
        take_pause(l, v);
    } else if (flag_of(msg, "final")) {
        pthread_mutex_lock(&l->lock);
        cJSON_Delete(l->final);
        l->final = cJSON_DetachItemFromObjectCaseSensitive(msg, "counts");
        pthread_mutex_unlock(&l->lock);
    }
    cJSON_Delete(msg);
    return ok;
}

/* ---- the thread ----------------------------------------------------------------- */

/* Waits for the agent: a peer of this user that is the adopted process. */
static int accept_agent(struct pylink *l)
{
    while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p = {.fd = l->listen_fd, .events = POLLIN};
        if (poll(&p, 1, POLL_MS) <= 0)
            continue;
        int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
            cred.uid == geteuid() && cred.pid == l->pid)
            return fd;
        log_warn("python: pid %d's agent socket: a connection from pid %d refused",
                 (int)l->pid, (int)cred.pid);
        close(fd);
    }
    return -1;
}

static void *link_main(void *arg)
{
    struct pylink *l = arg;
    int fd = accept_agent(l);
    close(l->listen_fd);
    l->listen_fd = -1;
    unlink(l->path);
    l->fd = fd;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    while (fd >= 0 && buf && !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, POLL_MS) <= 0)
            continue;
        if (len + 4096 > cap) {
            char *bigger = cap < LINE_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!bigger)
                break; /* a line past any the agent writes */
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        char *start = buf, *nl;
        bool ok = true;
        while (ok && (nl = memchr(start, '\n', len - (size_t)(start - buf)))) {
            *nl = '\0';
            ok = take_line(l, start);
            start = nl + 1;
        }
        if (!ok)
            break;
        len -= (size_t)(start - buf);
        memmove(buf, start, len);
    }
    free(buf);
    set_closed(l);
    return NULL;
}

struct pylink *pylink_open(const char *state_dir, pid_t pid, struct event_sink sink,
                           void (*paused)(void *), void *paused_arg, struct strobe_error *e)
{
    struct pylink *l = calloc(1, sizeof *l);
    uint8_t rnd[16];
    if (!l || getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
        free(l);
        err_set(e, ERR_INTERNAL, "cannot make the Python agent's token");
        return NULL;
    }
    for (int i = 0; i < 16; i++)
        snprintf(l->token + 2 * i, 3, "%02x", rnd[i]);
    l->pid = pid;
    l->sink = sink;
    l->paused = paused;
    l->paused_arg = paused_arg;
    l->fd = -1;
    l->seq_base = SEQ_BASE;
    snprintf(l->path, sizeof l->path, "%s/python/%d-%.8s.sock", state_dir, (int)pid, l->token + 16);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(l->path) >= sizeof a.sun_path) {
        err_set(e, ERR_INTERNAL, "the Python agent's socket path %s is too long", l->path);
        free(l);
        return NULL;
    }
    memcpy(a.sun_path, l->path, strlen(l->path) + 1);
    l->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l->listen_fd < 0 || bind(l->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        chmod(l->path, 0600) != 0 || listen(l->listen_fd, 4) != 0) {
        err_set(e, ERR_INTERNAL, "cannot make the Python agent's socket %s: %s", l->path,
                strerror(errno));
        if (l->listen_fd >= 0)
            close(l->listen_fd);
        unlink(l->path);
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_mutex_init(&l->send_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->changed, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&l->thread, NULL, link_main, l) != 0) {
        err_set(e, ERR_INTERNAL, "cannot start the Python agent's reader");
        close(l->listen_fd);
        unlink(l->path);
        pthread_mutex_destroy(&l->lock);
        pthread_mutex_destroy(&l->send_lock);
        pthread_cond_destroy(&l->changed);
        free(l);
        return NULL;
    }
    return l;
}

/* Waits on l->changed until deadline (CLOCK_MONOTONIC ns); false at the deadline. */
static bool wait_until(struct pylink *l, int64_t deadline)
{
    int64_t now = mono_ns();
    if (now >= deadline)
        return false;
    struct timespec ts = {deadline / 1000000000, deadline % 1000000000};
    pthread_cond_timedwait(&l->changed, &l->lock, &ts);
    return true;
}

static bool send_all(struct pylink *l, const char *text)
{
    size_t len = strlen(text), off = 0;
    pthread_mutex_lock(&l->send_lock);
    while (off < len) {
        ssize_t n = send(l->fd, text + off, len - off, MSG_NOSIGNAL);
        if (n <= 0 && errno != EINTR)
            break;
        off += n > 0 ? (size_t)n : 0;
    }
    pthread_mutex_unlock(&l->send_lock);
    return off == len;
}

cJSON *pylink_command(struct pylink *l, const char *op, cJSON *fields, int timeout_ms,
                      struct strobe_error *e)
{
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    cJSON *msg = fields ? fields : cJSON_CreateObject();
    pthread_mutex_lock(&l->lock);
    while (!l->hello && !l->closed && wait_until(l, deadline))
        ;
    if (l->closed || l->error[0]) {
        pthread_mutex_unlock(&l->lock);
        cJSON_Delete(msg);
        err_set(e, ERR_PROCESS_EXITED, "the Python process %d has ended", (int)l->pid);
        return NULL;
    }
    if (!l->hello) {
        pthread_mutex_unlock(&l->lock);
        cJSON_Delete(msg);
        err_set(e, ERR_ATTACH_FAILED, "the Python process %d has not started its agent within %d "
                "ms (paused, or busy in native code holding the GIL)", (int)l->pid, timeout_ms);
        return NULL;
    }
    int64_t id = ++l->next_id;
    pthread_mutex_unlock(&l->lock);
    cJSON_AddStringToObject(msg, "op", op);
    cJSON_AddNumberToObject(msg, "id", (double)id);
    char *text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    char *line = text ? malloc(strlen(text) + 2) : NULL;
    if (line)
        sprintf(line, "%s\n", text);
    free(text);
    bool sent = line && send_all(l, line);
    free(line);
    pthread_mutex_lock(&l->lock);
    while (sent && !l->closed && !(l->reply && l->reply_id == id) && wait_until(l, deadline))
        ;
    cJSON *reply = NULL;
    if (l->reply && l->reply_id == id) {
        reply = l->reply;
        l->reply = NULL;
    }
    bool closed = l->closed;
    pthread_mutex_unlock(&l->lock);
    const char *why = reply ? str_of(reply, "error") : NULL;
    if (why) {
        enum err_code code = err_code_parse(str_of(reply, "code"));
        if (code != ERR_NONE)
            err_set(e, code, "%s", why);
        else
            err_set(e, ERR_INTERNAL, "the Python agent of process %d failed: %s", (int)l->pid,
                    why);
        cJSON_Delete(reply);
        return NULL;
    }
    if (!reply && (closed || !sent))
        err_set(e, ERR_PROCESS_EXITED, "the Python process %d has ended", (int)l->pid);
    else if (!reply)
        err_set(e, ERR_ATTACH_FAILED, "the Python process %d did not answer within %d ms (paused, "
                "or busy in native code holding the GIL); the change applies when it "
                "answers", (int)l->pid, timeout_ms);
    return reply;
}

cJSON *pylink_final_counts(struct pylink *l)
{
    pthread_mutex_lock(&l->lock);
    cJSON *c = l->final ? cJSON_Duplicate(l->final, true) : NULL;
    pthread_mutex_unlock(&l->lock);
    return c;
}

void pylink_hello(struct pylink *l, char *version, char *hooks, char *error, size_t cap)
{
    pthread_mutex_lock(&l->lock);
    snprintf(version, cap, "%s", l->version);
    snprintf(hooks, cap, "%s", l->hooks);
    snprintf(error, cap, "%s", l->error);
    pthread_mutex_unlock(&l->lock);
}

bool pylink_closed(struct pylink *l)
{
    pthread_mutex_lock(&l->lock);
    bool c = l->closed;
    pthread_mutex_unlock(&l->lock);
    return c;
}

void pylink_shutdown(struct pylink *l)
{
    __atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
}

void pylink_free(struct pylink *l)
{
    if (!l)
        return;
    pylink_shutdown(l);
    pthread_join(l->thread, NULL);
    if (l->fd >= 0)
        close(l->fd);
    cJSON_Delete(l->reply);
    cJSON_Delete(l->final);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->send_lock);
    pthread_cond_destroy(&l->changed);
    free(l);
}
