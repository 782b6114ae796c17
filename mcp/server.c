/*
 * server.c - MCP over one connection. See server.h.
 *
 * Tool failures are results with isError, carrying "CODE: sentence" as text and the
 * same in structuredContent.error; protocol failures are JSON-RPC errors. The
 * database's own condition is said here, for every tool: storeFull in each answer
 * while its disk is full, a damaged database set aside at start in initialize's
 * instructions (core/timeline.h, timeline_store_note). A line
 * longer than RPC_MAX_LINE is answered with -32600 and skipped up to its newline,
 * so one bad message never costs the client its connection.
 */
#include "mcp/server.h"

#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/lineio.h"
#include "base/log.h"
#include "base/version.h"
#include "core/debug.h"
#include "core/timeline.h"
#include "mcp/budget.h"
#include "mcp/hints.h"
#include "mcp/jsonrpc.h"
#include "mcp/tools.h"


static const char *const protocol_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

struct mcp_conn {
    bool initialized;
    struct tool_ctx tools;
};

/* Numbers connections for core/debug.h (which one controls a paused program). */
static _Atomic uint64_t next_conn = 1;

struct mcp_conn *mcp_conn_new(struct store *store)
{
    struct mcp_conn *c = calloc(1, sizeof *c);
    if (c) {
        c->tools.store = store;
        c->tools.conn.id = atomic_fetch_add(&next_conn, 1);
    }
    return c;
}

void mcp_conn_free(struct mcp_conn *c)
{
    if (!c)
        return;
    /* Nothing stays frozen for a client that is gone. */
    debug_release_connection(c->tools.conn.id);
    timeline_reader_close(c->tools.reader);
    free(c);
}

/* strobectl sends one command per connection: its connections never control a
 * paused program (core/debug.h), or each command would resume what the last one
 * paused. */
static void note_client(struct mcp_conn *c, const cJSON *params)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(params, "clientInfo");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(info, "name");
    c->tools.conn.transient = cJSON_IsString(name) && strcmp(name->valuestring, "strobectl") == 0;
}

/* The instructions of initialize: the workflow, and what the agent must know about
 * the database before it asks for sessions (one set aside at start). */
static void add_instructions(struct mcp_conn *c, cJSON *res)
{
    static const char workflow[] =
        "Strobe debugs running programs. Launch with debug_launch, read stderr/stdout with "
        "debug_query first, add traces with debug_trace only when output is not enough, "
        "end with debug_session stop.";
    struct timeline_store_note note = {0};
    if (c->tools.store)
        timeline_store_note(c->tools.store, &note);
    char text[sizeof workflow + sizeof note.set_aside_why + 2];
    snprintf(text, sizeof text, "%s%s%s", workflow, note.set_aside_why[0] ? " " : "",
             note.set_aside_why);
    cJSON_AddStringToObject(res, "instructions", text);
}

static cJSON *initialize_result(struct mcp_conn *c, const cJSON *params)
{
    const char *version = protocol_versions[0];
    const cJSON *asked = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    if (cJSON_IsString(asked))
        for (size_t i = 0; i < sizeof protocol_versions / sizeof *protocol_versions; i++)
            if (strcmp(asked->valuestring, protocol_versions[i]) == 0)
                version = protocol_versions[i];
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "protocolVersion", version);
    cJSON *caps = cJSON_AddObjectToObject(res, "capabilities");
    cJSON *tools = cJSON_AddObjectToObject(caps, "tools");
    cJSON_AddFalseToObject(tools, "listChanged");
    cJSON *info = cJSON_AddObjectToObject(res, "serverInfo");
    cJSON_AddStringToObject(info, "name", "strobe");
    cJSON_AddStringToObject(info, "version", STROBE_VERSION);
    add_instructions(c, res);
    return res;
}

static cJSON *tool_error_result(const struct strobe_error *e)
{
    const char *code = err_code_name(e->code);
    size_t n = strlen(code) + strlen(e->msg) + 3;
    char *text = malloc(n);
    cJSON *res = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(res, "content");
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "type", "text");
    if (text) {
        snprintf(text, n, "%s: %s", code, e->msg);
        cJSON_AddStringToObject(item, "text", text);
        free(text);
    }
    cJSON_AddItemToArray(content, item);
    cJSON *sc = cJSON_AddObjectToObject(res, "structuredContent");
    cJSON *err = cJSON_AddObjectToObject(sc, "error");
    cJSON_AddStringToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", e->msg);
    cJSON_AddTrueToObject(res, "isError");
    return res;
}

static cJSON *tool_ok_result(cJSON *value)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(res, "content");
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "type", "text");
    char *text = cJSON_PrintUnformatted(value);
    if (text)
        text = rpc_utf8_clean(text); /* the outer message is cleaned too, but by then
                                        this text is a string in a string */
    cJSON_AddStringToObject(item, "text", text ? text : "{}");
    free(text);
    cJSON_AddItemToArray(content, item);
    cJSON_AddItemToObject(res, "structuredContent", value);
    return res;
}

/* While the database's disk is full, every answer says so (storeFull): each one may
 * rest on events that were not stored. */
static void add_store_full(struct mcp_conn *c, cJSON *value)
{
    struct timeline_store_note note;
    if (!c->tools.store || !cJSON_IsObject(value))
        return;
    timeline_store_note(c->tools.store, &note);
    if (note.full[0])
        cJSON_AddStringToObject(value, "storeFull", note.full);
}

static char *call_tool(struct mcp_conn *c, const struct rpc_request *req)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(req->params, "name");
    if (!cJSON_IsString(name))
        return rpc_error(req->id, RPC_INVALID_PARAMS,
                         "tools/call needs params.name, the tool's name (a string).", NULL);
    const struct tool_def *tool = tools_find(name->valuestring);
    if (!tool) {
        char msg[512];
        snprintf(msg, sizeof msg, "Unknown tool '%.100s'. Tools: %s.", name->valuestring,
                 tools_names());
        return rpc_error(req->id, RPC_INVALID_PARAMS, msg, "UNKNOWN_TOOL");
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(req->params, "arguments");
    cJSON *empty = NULL;
    struct strobe_error e = {0};
    cJSON *value = NULL;
    if (args && !cJSON_IsObject(args)) {
        err_set(&e, ERR_VALIDATION, "the arguments of %s must be an object, not %s.",
                tool->name, cJSON_IsArray(args) ? "an array" : "a scalar");
    } else {
        if (!args)
            args = empty = cJSON_CreateObject();
        value = tool->fn(&c->tools, args, &e);
        if (!value) {
            hints_apply(tool->name, &e); /* the engine said what; this adds what next */
        } else {
            add_store_full(c, value);
            tool_answer_fit(value, tool_answer_budget());
        }
    }
    cJSON_Delete(empty);
    if (!value && e.code == ERR_NONE)
        err_set(&e, ERR_INTERNAL, "%s failed without saying why; see daemon.log", tool->name);
    if (!value && e.code == ERR_INTERNAL)
        log_error("%s: %s", tool->name, e.msg);
    return rpc_result(req->id, value ? tool_ok_result(value) : tool_error_result(&e));
}

static char *dispatch(struct mcp_conn *c, const struct rpc_request *req)
{
    const char *m = req->method;
    bool notification = req->id == NULL;
    if (notification)
        return NULL; /* notifications/initialized, cancelled, ...: nothing to answer */
    if (req->params && !cJSON_IsObject(req->params))
        return rpc_error(req->id, RPC_INVALID_PARAMS, "params must be an object.", NULL);
    if (strcmp(m, "initialize") == 0) {
        c->initialized = true;
        note_client(c, req->params);
        return rpc_result(req->id, initialize_result(c, req->params));
    }
    if (strcmp(m, "ping") == 0)
        return rpc_result(req->id, cJSON_CreateObject());
    bool known = strcmp(m, "tools/list") == 0 || strcmp(m, "tools/call") == 0;
    if (!known) {
        char msg[256];
        snprintf(msg, sizeof msg, "Method not found: '%.100s'. This server implements "
                 "initialize, ping, tools/list and tools/call.", m);
        return rpc_error(req->id, RPC_METHOD_NOT_FOUND, msg, NULL);
    }
    if (!c->initialized)
        return rpc_error(req->id, RPC_NOT_INITIALIZED,
                         "Server not initialized: send initialize first.", NULL);
    if (strcmp(m, "tools/list") == 0)
        return rpc_result(req->id, tools_list());
    return call_tool(c, req);
}

char *mcp_handle_line(struct mcp_conn *c, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (len == 0)
        return NULL;
    struct rpc_request req;
    char *error_line = NULL;
    if (rpc_parse(line, len, &req, &error_line) != 0)
        return error_line;
    char *out = dispatch(c, &req);
    rpc_request_free(&req);
    return out;
}

void mcp_refuse(int fd, const char *why)
{
    char msg[300];
    snprintf(msg, sizeof msg, "Server busy: %s.", why);
    char *out = rpc_error(NULL, RPC_SERVER_BUSY, msg, NULL);
    if (out) {
        write_line(fd, out, strlen(out));
        free(out);
    }
    close(fd);
}

void mcp_serve(int fd, struct store *store, void (*on_activity)(void))
{
    struct mcp_conn *c = mcp_conn_new(store);
    struct line_reader rd;
    lr_init(&rd, fd, RPC_MAX_LINE);
    for (bool ok = c != NULL; ok;) {
        char *line;
        size_t len;
        enum lr_status st = lr_read_line(&rd, &line, &len);
        if (st == LR_EOF || st == LR_ERROR)
            break;
        /* A line over the limit is answered once; the reader drops the rest of it. */
        char *out = st == LR_TOO_LONG
                        ? rpc_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: the line "
                                    "exceeds the 1 MiB limit and was discarded.", NULL)
                        : mcp_handle_line(c, line, len);
        if (out) {
            ok = write_line(fd, out, strlen(out)) == 0;
            free(out);
        }
        if (st == LR_LINE && on_activity)
            on_activity();
    }
    lr_free(&rd);
    mcp_conn_free(c);
    close(fd);
}
