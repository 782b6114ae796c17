/*
 * mcp_proxy.c - `strobe mcp`, the stdio <-> unix socket proxy an MCP client talks to.
 * It owns the survival of the client's session across daemon restarts: it
 * remembers the client's initialize handshake and the ids of requests in flight so
 * that a new daemon can be brought up without the client noticing more than a
 * "retry" error. See mcp_proxy.h.
 */
#include "cli/proxy/mcp_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/client.h"

/* Daemons started in a row that die before sending anything; see daemon_lost(). */
#define MAX_QUICK_RESTARTS 3

/* After stdin ends, how long to wait for the answers to requests in flight. */
#define EOF_GRACE_MS 30000

/* Stop reading stdin while this much is waiting to go to the daemon. */
#define SOCKQ_HIGH_WATER (4u * 1024 * 1024)

/* A request in flight. Requests that only read (ping, tools/list, debug_query,
 * debug_session status/list) keep their line: if the daemon dies under them they
 * are sent again to the next daemon instead of failing, since running them twice
 * changes nothing. Anything else is answered with a "retry" error. */
struct pending {
    char *id;   /* compact JSON text */
    char *line; /* NULL unless safe to send again */
};

/* Bytes waiting to be written to the (non-blocking) socket. line_start is where
 * the first line not yet written in full begins: when the daemon dies, the lines
 * from there on never reached it and go to the next daemon instead. */
struct outq {
    char *buf;
    size_t line_start, head, len, cap;
};

struct proxy {
    int sock;                 /* -1 while no daemon is connected */
    struct line_reader in;    /* stdin */
    struct line_reader sk;    /* socket */
    struct outq q;            /* to the socket */
    bool stdin_eof;
    char *init_line;          /* the client's last initialize request, as sent */
    bool initialized_sent;    /* the client sent notifications/initialized */
    struct pending *inflight; /* requests sent and not answered yet */
    size_t n_inflight, cap_inflight;
    char replay_id[48];       /* JSON text of the replayed initialize's id */
    bool replay_pending;      /* its answer has not come back yet */
    unsigned replay_n;
    unsigned quick_restarts;  /* restarts since the daemon last sent a line */
    char start_error[1024];   /* why the last start of a daemon failed */
};

static void die_oom(void)
{
    fputs("strobe mcp: out of memory\n", stderr);
    exit(1);
}

/* ---- socket output queue ------------------------------------------------------ */

static void q_push(struct outq *q, const char *s, size_t len)
{
    if (q->head > 0 && q->head == q->len)
        q->line_start = q->head = q->len = 0;
    if (q->len + len + 1 > q->cap) {
        if (q->line_start > 0) {
            memmove(q->buf, q->buf + q->line_start, q->len - q->line_start);
            q->len -= q->line_start;
            q->head -= q->line_start;
            q->line_start = 0;
        }
        size_t cap = q->cap ? q->cap : 65536;
        while (q->len + len + 1 > cap)
            cap *= 2;
        char *nb = realloc(q->buf, cap);
        if (!nb)
            die_oom();
        q->buf = nb;
        q->cap = cap;
    }
    memcpy(q->buf + q->len, s, len);
    q->buf[q->len + len] = '\n';
    q->len += len + 1;
}

static size_t q_size(const struct outq *q)
{
    return q->len - q->head;
}

/* Writes what the socket takes now. Returns 0, or -1 when the socket is broken. */
static int q_flush(struct outq *q, int fd)
{
    while (q_size(q) > 0) {
        ssize_t n = write(fd, q->buf + q->head, q_size(q));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        const char *nl = memrchr(q->buf + q->head, '\n', (size_t)n);
        if (nl)
            q->line_start = (size_t)(nl - q->buf) + 1;
        q->head += (size_t)n;
    }
    q->line_start = q->head = q->len = 0;
    return 0;
}

/* ---- requests in flight --------------------------------------------------------- */

static bool safe_to_resend(const cJSON *msg)
{
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
    if (!method)
        return false;
    if (strcmp(method, "ping") == 0 || strcmp(method, "tools/list") == 0 ||
        strcmp(method, "initialize") == 0)
        return true;
    if (strcmp(method, "tools/call") != 0)
        return false;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "action"));
    if (!tool)
        return false;
    return strcmp(tool, "debug_query") == 0 ||
           (strcmp(tool, "debug_session") == 0 && action &&
            (strcmp(action, "status") == 0 || strcmp(action, "list") == 0));
}

/* Records a request sent with this id; line is kept when it is safe to resend. */
static void inflight_add(struct proxy *p, const cJSON *msg, const char *line, size_t len)
{
    char *id = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(msg, "id"));
    char *copy = safe_to_resend(msg) ? strndup(line, len) : NULL;
    if (!id || (safe_to_resend(msg) && !copy))
        die_oom();
    if (p->n_inflight == p->cap_inflight) {
        size_t cap = p->cap_inflight ? p->cap_inflight * 2 : 16;
        struct pending *nb = realloc(p->inflight, cap * sizeof *nb);
        if (!nb)
            die_oom();
        p->inflight = nb;
        p->cap_inflight = cap;
    }
    p->inflight[p->n_inflight++] = (struct pending){id, copy};
}

/* Forgets one request with this id (JSON text). */
static void inflight_remove(struct proxy *p, const char *id)
{
    for (size_t i = 0; i < p->n_inflight; i++) {
        if (strcmp(p->inflight[i].id, id) == 0) {
            free(p->inflight[i].id);
            free(p->inflight[i].line);
            p->inflight[i] = p->inflight[--p->n_inflight];
            return;
        }
    }
}

/* ---- to the client ---------------------------------------------------------------- */

/* Writes one line to stdout. Returns 0, or -1 when the client stopped reading. */
static int to_client(const char *line, size_t len)
{
    return write_line(STDOUT_FILENO, line, len);
}

/* Answers the request with this id (JSON text, or "null") with a JSON-RPC error. */
static int answer_error(const char *id, int code, const char *message)
{
    cJSON *resp = cJSON_CreateObject();
    cJSON_AddStringToObject(resp, "jsonrpc", "2.0");
    cJSON *idv = cJSON_Parse(id);
    cJSON_AddItemToObject(resp, "id", idv ? idv : cJSON_CreateNull());
    cJSON *err = cJSON_AddObjectToObject(resp, "error");
    cJSON_AddNumberToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", message);
    char *s = cJSON_PrintUnformatted(resp);
    cJSON_Delete(resp);
    if (!s)
        die_oom();
    int rc = to_client(s, strlen(s));
    free(s);
    return rc;
}

/* The id (compact JSON text) of the request on this line; NULL for anything else. */
static char *request_id(const char *line, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength(line, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    char *s = id && cJSON_HasObjectItem(msg, "method") ? cJSON_PrintUnformatted(id) : NULL;
    cJSON_Delete(msg);
    return s;
}

/* True when q holds the request with this id (queued, never delivered). */
static bool queued(const struct outq *q, const char *id)
{
    bool found = false;
    for (size_t at = 0; at < q->len && !found;) {
        const char *line = q->buf + at;
        size_t len = (size_t)((const char *)memchr(line, '\n', q->len - at) - line);
        char *qid = request_id(line, len);
        found = qid && strcmp(qid, id) == 0;
        free(qid);
        at += len + 1;
    }
    return found;
}

/* The daemon died. Requests still queued in resend stay in flight; those safe to
 * resend stay too and their lines are added to resend (ahead of the queued ones, in
 * the order they were sent); the others are answered with a retry error. */
static int settle_lost(struct proxy *p, struct outq *resend, const char *message)
{
    struct outq again = {0};
    int rc = 0;
    size_t kept = 0;
    for (size_t i = 0; i < p->n_inflight; i++) {
        struct pending *r = &p->inflight[i];
        if (queued(resend, r->id) || r->line) {
            if (r->line && !queued(resend, r->id))
                q_push(&again, r->line, strlen(r->line));
            p->inflight[kept++] = *r;
            continue;
        }
        if (rc == 0)
            rc = answer_error(r->id, -32603, message);
        free(r->id);
    }
    p->n_inflight = kept;
    if (resend->len > 0)
        q_push(&again, resend->buf, resend->len - 1);
    free(resend->buf);
    *resend = again;
    return rc;
}

/* Answers every request in flight with the same error and forgets them. */
static int fail_inflight(struct proxy *p, const char *message)
{
    int rc = 0;
    for (size_t i = 0; i < p->n_inflight; i++) {
        if (rc == 0)
            rc = answer_error(p->inflight[i].id, -32603, message);
        free(p->inflight[i].id);
        free(p->inflight[i].line);
    }
    p->n_inflight = 0;
    return rc;
}

/* ---- the daemon connection ------------------------------------------------------ */

static void disconnect(struct proxy *p)
{
    if (p->sock >= 0)
        close(p->sock);
    p->sock = -1;
    lr_free(&p->sk);
    lr_init(&p->sk, -1, CLIENT_MAX_RESPONSE_LINE);
    p->q.head = p->q.len = 0;
    p->replay_pending = false;
}

/* Queues the client's handshake again for a new daemon, under a private id. */
static void replay_handshake(struct proxy *p)
{
    if (!p->init_line)
        return;
    cJSON *req = cJSON_Parse(p->init_line);
    if (!req)
        return; /* out of memory: it parsed when the client sent it */
    snprintf(p->replay_id, sizeof p->replay_id, "\"strobe-proxy-replay-%u\"",
             ++p->replay_n);
    cJSON *id = cJSON_Parse(p->replay_id);
    cJSON_ReplaceItemInObjectCaseSensitive(req, "id", id);
    char *s = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!s)
        die_oom();
    q_push(&p->q, s, strlen(s));
    free(s);
    p->replay_pending = true;
    if (p->initialized_sent) {
        static const char note[] =
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        q_push(&p->q, note, sizeof note - 1);
    }
}

/* Connects (starting a daemon if needed) and replays the handshake. 0 or -1. */
static int reconnect(struct proxy *p)
{
    int fd = client_connect(true, p->start_error, sizeof p->start_error);
    if (fd < 0) {
        fprintf(stderr, "strobe mcp: %s\n", p->start_error);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    p->sock = fd;
    lr_free(&p->sk);
    lr_init(&p->sk, fd, CLIENT_MAX_RESPONSE_LINE);
    replay_handshake(p);
    return 0;
}

/* The daemon went away. Answers what was in flight and, unless the client is done,
 * starts a new daemon right away. A daemon that dies before saying anything (or the
 * dying one accepting a last connection) counts as a quick restart; after
 * MAX_QUICK_RESTARTS of them in a row the proxy stops starting daemons on its own
 * and leaves it to the next client line. Returns -1 when the client stopped
 * reading. */
static int daemon_lost(struct proxy *p)
{
    /* Lines the dead daemon never received in full go to the next daemon, and their
     * requests stay in flight; the replayed handshake is queued afresh by reconnect(). */
    struct outq resend = {0};
    for (size_t at = p->q.line_start; at < p->q.len;) {
        const char *line = p->q.buf + at;
        size_t len = (size_t)((const char *)memchr(line, '\n', p->q.len - at) - line);
        at += len + 1;
        char *id = request_id(line, len);
        bool replay = id && p->replay_pending && strcmp(id, p->replay_id) == 0;
        free(id);
        if (!replay)
            q_push(&resend, line, len);
    }
    disconnect(p);
    fputs("strobe mcp: lost the connection to the strobe daemon\n", stderr);
    const char *why = "strobe daemon restarted; the request was not completed, retry it";
    int rc = settle_lost(p, &resend, why);
    bool restart = rc == 0 && !p->stdin_eof && p->quick_restarts < MAX_QUICK_RESTARTS;
    if (restart) {
        p->quick_restarts++;
        /* Let a dying daemon finish closing its listening socket. */
        poll(NULL, 0, 50 * (int)p->quick_restarts);
        restart = reconnect(p) == 0;
    }
    if (restart && resend.len > 0)
        q_push(&p->q, resend.buf, resend.len - 1);
    else if (rc == 0)
        rc = fail_inflight(p, why);
    free(resend.buf);
    return rc;
}

/* ---- one line each way ------------------------------------------------------------ */

/* A line from the client: note what the proxy must remember, then queue it. */
static int from_client(struct proxy *p, const char *line, size_t len)
{
    if (len == 0)
        return 0; /* blank separator lines are not messages */
    cJSON *msg = cJSON_ParseWithLength(line, len);
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *name = cJSON_IsString(method) ? method->valuestring : "";
    char *id_text = NULL;
    /* Only a valid id can be answered with it; the daemon answers others with
     * id null. */
    bool valid_id = cJSON_IsString(id) || (cJSON_IsNumber(id) && isfinite(id->valuedouble));
    if (*name && valid_id) {
        inflight_add(p, msg, line, len);
        id_text = strdup(p->inflight[p->n_inflight - 1].id);
        if (!id_text)
            die_oom();
    } else if (strcmp(name, "notifications/cancelled") == 0) {
        /* The daemon need not answer a cancelled request: stop waiting for it. */
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
        char *s = rid ? cJSON_PrintUnformatted(rid) : NULL;
        if (s)
            inflight_remove(p, s);
        free(s);
    }
    bool is_init = id && strcmp(name, "initialize") == 0;
    bool is_initialized = !id && strcmp(name, "notifications/initialized") == 0;
    cJSON_Delete(msg);

    int rc = 0;
    /* Reconnecting replays the handshake seen so far, so remember this line only
     * once it is queued. */
    if (p->sock < 0 && reconnect(p) != 0) {
        if (id_text) {
            char why[sizeof p->start_error + 160];
            snprintf(why, sizeof why, "%s. Fix that, then send the request again: strobe "
                     "mcp starts the daemon anew for each request while none runs.",
                     p->start_error);
            inflight_remove(p, id_text);
            rc = answer_error(id_text, -32603, why);
        }
    } else {
        q_push(&p->q, line, len);
        if (is_init) {
            free(p->init_line);
            p->init_line = strndup(line, len);
            if (!p->init_line)
                die_oom();
        }
        if (is_initialized)
            p->initialized_sent = true;
    }
    free(id_text);
    return rc;
}

/* A line from the daemon: swallow the replayed handshake's answer, settle the
 * request it answers, pass it on. */
static int from_daemon(struct proxy *p, const char *line, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength(line, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    bool swallow = false;
    if (id && !cJSON_HasObjectItem(msg, "method")) {
        char *s = cJSON_PrintUnformatted(id);
        if (!s)
            die_oom();
        if (p->replay_pending && strcmp(s, p->replay_id) == 0) {
            swallow = true;
            p->replay_pending = false;
            if (cJSON_HasObjectItem(msg, "error"))
                fprintf(stderr, "strobe mcp: the new daemon refused the replayed "
                                "initialize: %.*s\n", (int)len, line);
        } else {
            inflight_remove(p, s);
        }
        free(s);
    }
    cJSON_Delete(msg);
    return swallow ? 0 : to_client(line, len);
}

/* ---- main loop ---------------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what the socket has and passes on the complete lines. Returns -1 when the
 * client stopped reading. */
static int pump_daemon(struct proxy *p)
{
    ssize_t n = lr_fill(&p->sk);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    /* Complete lines were passed on after earlier reads; what is left at EOF is a
     * message cut short, which the client must not see. */
    if (n <= 0)
        return daemon_lost(p);
    for (;;) {
        char *line;
        size_t len;
        enum lr_status st = lr_next(&p->sk, &line, &len);
        if (st == LR_LINE) {
            p->quick_restarts = 0;
            if (from_daemon(p, line, len) != 0)
                return -1;
        } else if (st == LR_TOO_LONG) {
            fputs("strobe mcp: dropped a daemon message over 64 MiB\n", stderr);
        } else {
            break;
        }
    }
    return 0;
}

/* Reads what stdin has and handles the complete lines. Returns -1 when the client
 * stopped reading. */
static int pump_client(struct proxy *p)
{
    ssize_t n = lr_fill(&p->in);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n < 0) {
        fprintf(stderr, "strobe mcp: reading stdin: %s\n", strerror(errno));
        p->stdin_eof = true;
    }
    for (;;) {
        char *line;
        size_t len;
        enum lr_status st = lr_next(&p->in, &line, &len);
        int rc = 0;
        if (st == LR_LINE)
            rc = from_client(p, line, len);
        else if (st == LR_TOO_LONG)
            rc = answer_error("null", -32600,
                              "request line over 1 MiB (1048576 bytes); discarded");
        else
            break;
        if (rc != 0)
            return -1;
    }
    if (p->in.eof)
        p->stdin_eof = true;
    return 0;
}

int proxy_main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct proxy p = { .sock = -1 };
    lr_init(&p.in, STDIN_FILENO, CLIENT_MAX_REQUEST_LINE);
    lr_init(&p.sk, -1, CLIENT_MAX_RESPONSE_LINE);
    /* A daemon that cannot start is said in the answer to each request (initialize
     * first), never by closing stdout on a client that would see no reason. */
    reconnect(&p);

    int status = 0;
    int64_t eof_deadline = -1;
    for (;;) {
        int timeout = -1;
        if (p.stdin_eof) {
            if (p.n_inflight == 0 || p.sock < 0)
                break;
            if (eof_deadline < 0)
                eof_deadline = now_ms() + EOF_GRACE_MS;
            timeout = (int)(eof_deadline - now_ms());
            if (timeout <= 0) {
                fputs("strobe mcp: gave up waiting for the daemon's answers\n", stderr);
                break;
            }
        }
        struct pollfd fds[2] = {
            { .fd = -1, .events = POLLIN },
            { .fd = p.sock, .events = POLLIN | (q_size(&p.q) ? POLLOUT : 0) },
        };
        if (!p.stdin_eof && q_size(&p.q) < SOCKQ_HIGH_WATER)
            fds[0].fd = STDIN_FILENO;
        if (poll(fds, 2, timeout) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "strobe mcp: poll: %s\n", strerror(errno));
            status = 1;
            break;
        }
        if (p.sock >= 0 && (fds[1].revents & POLLOUT) && q_flush(&p.q, p.sock) != 0 &&
            daemon_lost(&p) != 0)
            break;
        if (p.sock >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
            pump_daemon(&p) != 0)
            break;
        if (fds[0].revents && pump_client(&p) != 0)
            break;
        /* Send what the client just wrote without waiting for another poll round. */
        if (p.sock >= 0 && q_size(&p.q) && q_flush(&p.q, p.sock) != 0 &&
            daemon_lost(&p) != 0)
            break;
    }

    disconnect(&p);
    lr_free(&p.in);
    lr_free(&p.sk);
    fail_inflight(&p, "strobe mcp is exiting");
    free(p.inflight);
    free(p.init_line);
    free(p.q.buf);
    return status;
}
