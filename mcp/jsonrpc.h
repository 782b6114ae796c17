/*
 * jsonrpc.h - JSON-RPC 2.0 messages as one line each: parsing a request line and
 * building the response line. Codes are those of the JSON-RPC spec plus -32002
 * (server not initialized, as in LSP).
 */
#ifndef STROBE_JSONRPC_H
#define STROBE_JSONRPC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define RPC_NOT_INITIALIZED -32002
#define RPC_SERVER_BUSY -32000      /* the daemon refuses the connection */

/* The longest line a peer may send. */
#define RPC_MAX_LINE (1024 * 1024)

struct rpc_request {
    cJSON *root;          /* owns everything below */
    const cJSON *id;      /* NULL for a notification */
    const char *method;
    const cJSON *params;  /* NULL when absent */
};

/* Parses one line. Returns 0 with *req filled (free with rpc_request_free), or -1
 * with *error_line set to the error response to send (caller frees). */
int rpc_parse(const char *line, size_t len, struct rpc_request *req, char **error_line);
void rpc_request_free(struct rpc_request *req);

/* Response lines (no trailing newline), malloc'd. rpc_result takes ownership of
 * result. id may be NULL (sent as null). data_code, when not NULL, goes into
 * error.data.code. */
char *rpc_result(const cJSON *id, cJSON *result);
char *rpc_error(const cJSON *id, int code, const char *message, const char *data_code);

/* Makes printed JSON text valid UTF-8 whatever went into its strings (a binary's
 * path, a thread or symbol name, bytes of the request echoed back): each byte that is
 * not part of a valid character becomes the text \xNN, the rule output lines follow
 * (base/linesplit.h, utf8_sanitize). Returns text itself, or a clean copy (text
 * freed), or NULL when memory runs out (text freed). rpc_result and rpc_error apply
 * it; JSON text nested in a string (MCP's content text) needs it first. */
char *rpc_utf8_clean(char *text);

#endif
