/*
 * client.c - the daemon connection used by `strobe mcp` and strobectl: connect (and
 * start the daemon when nothing answers: client_start.c), buffered line I/O, and
 * blocking JSON-RPC requests. See client.h.
 */
#include "cli/client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/linesplit.h"
#include "base/paths.h"
#include "cli/client_start.h"

/* ---- connecting ------------------------------------------------------------- */

/* One connect() attempt. Returns the fd, or -1 with errno from socket/connect. */
static int try_connect(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc;
    do
        rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Nothing listens: no socket file, or a stale one left by a dead daemon. */
static bool nobody_listens(int e)
{
    return e == ENOENT || e == ECONNREFUSED;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int client_connect(bool autostart, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct strobe_error pe;
    if (strobe_path(STROBE_SOCK, path, sizeof path, &pe) != 0) {
        snprintf(err, errlen, "%s", pe.msg);
        return -1;
    }
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen,
                 "socket path %s is longer than %zu bytes; set a shorter STROBE_HOME",
                 path, sizeof sa.sun_path - 1);
        return -1;
    }
    strcpy(sa.sun_path, path);

    int fd = try_connect(&sa);
    if (fd >= 0)
        return fd;
    int e = errno;
    if (!nobody_listens(e) || !autostart) {
        snprintf(err, errlen, "cannot connect to the strobe daemon at %s: %s%s", path,
                 strerror(e),
                 nobody_listens(e) ? " (is it running? `strobe daemon` starts it)" : "");
        return -1;
    }

    char bin[PATH_MAX], home[PATH_MAX];
    strobe_sibling_binary("strobe", bin, sizeof bin);
    int dir_len = (int)(strrchr(path, '/') - path); /* the state directory */
    snprintf(home, sizeof home, "%.*s", dir_len, path);
    if (client_start_daemon(bin, home, err, errlen) == CLIENT_START_FAILED)
        return -1;

    /* It listens (or another daemon, which may still be starting, has the directory):
     * connect, with a short back-off and a bounded total time. */
    int64_t deadline = now_ms() + CLIENT_START_TIMEOUT_MS;
    int delay_ms = 5;
    int last = 0;
    for (;;) {
        fd = try_connect(&sa);
        if (fd >= 0)
            return fd;
        last = errno;
        if (!nobody_listens(last) || now_ms() >= deadline)
            break;
        poll(NULL, 0, delay_ms);
        if (delay_ms < 200)
            delay_ms *= 2;
    }
    snprintf(err, errlen,
             "started '%s daemon' but it did not accept connections on %s within %d s "
             "(%s); look at %s/daemon.log",
             bin, path, CLIENT_START_TIMEOUT_MS / 1000, strerror(last), home);
    return -1;
}

/* ---- JSON-RPC ----------------------------------------------------------------- */

void rpc_init(struct rpc_client *c, int fd)
{
    c->fd = fd;
    c->next_id = 1;
    c->failure = RPC_FAIL_NONE;
    const char *t = getenv("STROBE_ANSWER_TIMEOUT_MS");
    long ms = t ? strtol(t, NULL, 10) : 0;
    c->answer_timeout_ms = ms > 0 && ms <= INT_MAX ? (int)ms : CLIENT_ANSWER_TIMEOUT_MS;
    lr_init(&c->rd, fd, CLIENT_MAX_RESPONSE_LINE);
}

void rpc_close(struct rpc_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    lr_free(&c->rd);
}

/* Serializes msg (consumed) as one line on c's socket. 0, or -1 with a sentence in
 * err: text that is not UTF-8 (a path or argument given as bytes) is refused here,
 * naming the byte, since the daemon could only answer it with a parse error. */
static int send_message(struct rpc_client *c, const char *method, cJSON *msg, char *err,
                        size_t errlen)
{
    char *text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!text) {
        snprintf(err, errlen, "cannot send %s to the strobe daemon: out of memory", method);
        return -1;
    }
    size_t n = strlen(text);
    char bad[512];
    int rc = -1;
    c->failure = RPC_FAIL_NONE;
    if (utf8_describe_invalid(text, n, bad, sizeof bad)) {
        snprintf(err, errlen, "cannot send %s: %s is not UTF-8; strobe takes program "
                 "paths, arguments and environment as UTF-8 text (rename or link the "
                 "file to a UTF-8 name)", method, bad);
        c->failure = RPC_FAIL_INPUT;
    } else if ((rc = write_line(c->fd, text, n)) != 0) {
        snprintf(err, errlen, "cannot send %s to the strobe daemon: %s", method,
                 strerror(errno));
        c->failure = RPC_FAIL_CONNECTION;
    }
    free(text);
    return rc;
}

static cJSON *new_message(const char *method, cJSON *params)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddStringToObject(msg, "method", method);
    if (params)
        cJSON_AddItemToObject(msg, "params", params);
    return msg;
}

int rpc_notify(struct rpc_client *c, const char *method, cJSON *params, char *err,
               size_t errlen)
{
    return send_message(c, method, new_message(method, params), err, errlen);
}

/* Waits for the next line until deadline (CLOCK_MONOTONIC ms). LR_AGAIN when the
 * deadline passed first. */
static enum lr_status read_line_until(struct rpc_client *c, int64_t deadline, char **line,
                                      size_t *len)
{
    for (;;) {
        enum lr_status st = lr_next(&c->rd, line, len);
        if (st != LR_AGAIN)
            return st;
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return LR_AGAIN;
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR)
            return LR_ERROR;
        if (n > 0 && lr_fill(&c->rd) < 0)
            return LR_ERROR;
    }
}

/* Whether resp answers request id: its id, or null on an error (the daemon's answer
 * to a line it could not read, which can only be the one request in flight). */
static bool answers(const cJSON *resp, int id)
{
    if (cJSON_HasObjectItem(resp, "method"))
        return false; /* a notification or a request of the daemon's */
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(resp, "id");
    if (cJSON_IsNumber(rid))
        return rid->valuedouble == id;
    return cJSON_IsNull(rid) && cJSON_HasObjectItem(resp, "error");
}

cJSON *rpc_request(struct rpc_client *c, const char *method, cJSON *params,
                   char *err, size_t errlen)
{
    /* A tool call is named by its tool in what the caller reads. */
    const char *what = method;
    if (strcmp(method, "tools/call") == 0 &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(params, "name")))
        what = cJSON_GetObjectItemCaseSensitive(params, "name")->valuestring;
    char what_copy[128];
    snprintf(what_copy, sizeof what_copy, "%s", what); /* params go with msg */
    what = what_copy;
    int id = c->next_id++;
    cJSON *msg = new_message(method, params);
    cJSON_AddNumberToObject(msg, "id", id);
    if (send_message(c, what, msg, err, errlen) != 0)
        return NULL;
    int64_t deadline = now_ms() + c->answer_timeout_ms;
    for (;;) {
        char *line;
        size_t len;
        enum lr_status st = read_line_until(c, deadline, &line, &len);
        if (st != LR_LINE) {
            if (st == LR_AGAIN)
                snprintf(err, errlen, "the strobe daemon did not answer %s within %.1f s: "
                         "it may be stuck; daemon.log in $STROBE_HOME (default ~/.strobe) "
                         "says what it did, and `kill $(cat ~/.strobe/strobe.pid)` ends it",
                         what, c->answer_timeout_ms / 1000.0);
            else if (st == LR_TOO_LONG)
                snprintf(err, errlen, "the strobe daemon's answer to %s is over %d MiB",
                         what, CLIENT_MAX_RESPONSE_LINE >> 20);
            else if (st == LR_ERROR)
                snprintf(err, errlen, "reading from the strobe daemon failed: %s",
                         strerror(errno));
            else
                snprintf(err, errlen,
                         "the strobe daemon closed the connection before answering %s",
                         what);
            c->failure = st == LR_AGAIN ? RPC_FAIL_TIMEOUT : RPC_FAIL_CONNECTION;
            return NULL;
        }
        cJSON *resp = cJSON_ParseWithLength(line, len);
        if (answers(resp, id))
            return resp;
        cJSON_Delete(resp); /* a notification, or not ours */
    }
}

int rpc_handshake(struct rpc_client *c, const char *client_name, char *err, size_t errlen)
{
    cJSON *init = cJSON_CreateObject();
    cJSON_AddStringToObject(init, "protocolVersion", "2025-06-18");
    cJSON_AddItemToObject(init, "capabilities", cJSON_CreateObject());
    cJSON *info = cJSON_AddObjectToObject(init, "clientInfo");
    cJSON_AddStringToObject(info, "name", client_name);
    cJSON_AddStringToObject(info, "version", "1");
    cJSON *resp = rpc_request(c, "initialize", init, err, errlen);
    bool ok = resp && cJSON_HasObjectItem(resp, "result");
    if (resp && !ok)
        snprintf(err, errlen, "the strobe daemon refused initialize");
    cJSON_Delete(resp);
    if (!ok)
        return -1;
    if (rpc_notify(c, "notifications/initialized", NULL, err, errlen) != 0)
        return -1;
    return 0;
}

cJSON *rpc_call_tool(struct rpc_client *c, const char *name, cJSON *args, char *err,
                     size_t errlen)
{
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", name);
    cJSON_AddItemToObject(params, "arguments", args);
    cJSON *resp = rpc_request(c, "tools/call", params, err, errlen);
    if (!resp)
        return NULL;
    cJSON *res = cJSON_GetObjectItemCaseSensitive(resp, "result");
    cJSON *value = NULL;
    if (!res) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        snprintf(err, errlen, "%s: %s", name, msg ? msg : "JSON-RPC error");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"))) {
        /* the engine's error: structuredContent.error {code, message} */
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(res, "structuredContent"), "error");
        const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0), "text");
        if (code && msg)
            snprintf(err, errlen, "%s: %s", code, msg);
        else
            snprintf(err, errlen, "%s: %s", name,
                     cJSON_IsString(text) ? text->valuestring : "tool error");
    } else {
        value = cJSON_DetachItemFromObjectCaseSensitive(res, "structuredContent");
        if (!value)
            snprintf(err, errlen, "%s: the answer has no structuredContent", name);
    }
    cJSON_Delete(resp);
    return value;
}
