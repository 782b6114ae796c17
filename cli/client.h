/*
 * client.h - the client side of the daemon connection, shared by the rooms of cli/
 * (`strobe mcp`'s proxy, strobectl, the REPL): connecting to $STROBE_HOME/strobe.sock
 * (starting the daemon when nothing answers), and one blocking JSON-RPC
 * request/response exchange.
 *
 * The transport is described in docs/PROTOCOL.md: one JSON-RPC 2.0 message per line.
 */
#ifndef STROBE_CLIENT_H
#define STROBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/lineio.h"

/* Largest request line the daemon accepts (docs/PROTOCOL.md). */
#define CLIENT_MAX_REQUEST_LINE (1024 * 1024)
/* Largest response line strobectl accepts; responses are cut at about 32 KiB of
 * events, but verbose output can be several MiB. */
#define CLIENT_MAX_RESPONSE_LINE (64 * 1024 * 1024)
/* How long client_connect(true, ...) waits for a freshly started daemon: how long it
 * may stay silent (it says when it is ready, or why it cannot start, at once, and
 * that it is still at work every second of a long step: cli/client_start.c), and how
 * long another daemon that has the directory may take to listen. */
#define CLIENT_START_TIMEOUT_MS 10000
/* How long rpc_request waits for an answer before it gives up and says so. The
 * longest a tool waits by its own arguments is 60 s (debug_continue's timeoutMs);
 * the rest is room for a loaded machine or a daemon under valgrind. The environment
 * variable STROBE_ANSWER_TIMEOUT_MS (milliseconds) replaces it. */
#define CLIENT_ANSWER_TIMEOUT_MS 180000

/* Connects to the daemon's socket and returns the fd (close-on-exec, blocking).
 * When nothing answers and autostart is set, starts `<strobe> daemon` detached (the
 * strobe binary next to the running executable, else from PATH) and waits for it to
 * listen (CLIENT_START_TIMEOUT_MS). Returns -1 with a sentence in err (errlen
 * bytes) on failure: a daemon that cannot start is reported as soon as it gives up,
 * with its own sentence (the line it logs) and where its log is. */
int client_connect(bool autostart, char *err, size_t errlen);

/* ---- JSON-RPC ----------------------------------------------------------------- */

/* Why the last rpc_request or rpc_notify failed. */
enum rpc_failure {
    RPC_FAIL_NONE,
    RPC_FAIL_INPUT,      /* the message holds text that is not UTF-8: nothing was sent */
    RPC_FAIL_TIMEOUT,    /* no answer within answer_timeout_ms */
    RPC_FAIL_CONNECTION, /* the connection failed or closed: reconnect to go on */
};

/* One connection used for blocking request/response exchanges (strobectl). */
struct rpc_client {
    int fd;
    struct line_reader rd;
    int next_id;
    int answer_timeout_ms; /* CLIENT_ANSWER_TIMEOUT_MS, or the environment's */
    enum rpc_failure failure; /* of the last call */
};

/* Wraps an fd from client_connect(); the rpc_client owns it from now on. */
void rpc_init(struct rpc_client *c, int fd);
/* Closes the fd and frees the reader. */
void rpc_close(struct rpc_client *c);
/* Sends a notification (no id). params may be NULL; it is consumed. 0, or -1 with a
 * sentence in err. */
int rpc_notify(struct rpc_client *c, const char *method, cJSON *params, char *err,
               size_t errlen);
/* Sends a request with a fresh integer id and waits for the response with that
 * id, skipping notifications and other responses; an error with id null (the
 * daemon could not read the line) is the answer too, since one request is in
 * flight. params may be NULL; it is consumed. Returns the whole response object
 * (with "result" or "error"; the caller deletes it), or NULL with a sentence in err
 * when the message holds text that is not UTF-8 (naming the byte), when the
 * connection fails (c->broken is set), or when no answer came within
 * c->answer_timeout_ms (saying what timed out). */
cJSON *rpc_request(struct rpc_client *c, const char *method, cJSON *params,
                   char *err, size_t errlen);

/* The MCP handshake: initialize (protocol 2025-06-18, clientInfo client_name), then
 * notifications/initialized. 0, or -1 with a sentence in err. */
int rpc_handshake(struct rpc_client *c, const char *client_name, char *err, size_t errlen);

/* tools/call name(args), args consumed. Returns the result's structuredContent
 * (the caller deletes it), or NULL with err set to the tool's "CODE: sentence", the
 * JSON-RPC error, or the connection failure. For programs that stop on any error
 * (benchmarks); strobectl formats results itself. */
cJSON *rpc_call_tool(struct rpc_client *c, const char *name, cJSON *args, char *err,
                     size_t errlen);

#endif
