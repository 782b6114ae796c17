/*
 * jsonrpc.c - JSON-RPC 2.0 framing. See jsonrpc.h.
 */
#include "mcp/jsonrpc.h"

#include <stdbool.h>
#include <string.h>

static char *print_and_free(cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return s;
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddItemToObject(msg, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    return msg;
}

char *rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *msg = envelope(id);
    cJSON_AddItemToObject(msg, "result", result);
    return print_and_free(msg);
}

char *rpc_error(const cJSON *id, int code, const char *message, const char *data_code)
{
    cJSON *msg = envelope(id);
    cJSON *err = cJSON_AddObjectToObject(msg, "error");
    cJSON_AddNumberToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", message);
    if (data_code) {
        cJSON *data = cJSON_AddObjectToObject(err, "data");
        cJSON_AddStringToObject(data, "code", data_code);
    }
    return print_and_free(msg);
}

int rpc_parse(const char *line, size_t len, struct rpc_request *req, char **error_line)
{
    memset(req, 0, sizeof *req);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    while (root && end < line + len && (*end == ' ' || *end == '\t' || *end == '\r'))
        end++;
    if (root && end != line + len) { /* trailing bytes after the object */
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root) {
        *error_line = rpc_error(NULL, RPC_PARSE_ERROR,
                                "Parse error: the line is not valid JSON. Send one JSON-RPC "
                                "2.0 object per line.", NULL);
        return -1;
    }
    const char *problem = NULL;
    const cJSON *id = NULL;
    if (!cJSON_IsObject(root)) {
        problem = "Invalid Request: a JSON-RPC message must be a JSON object "
                  "(batches are not supported).";
    } else {
        id = cJSON_GetObjectItemCaseSensitive(root, "id");
        const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
        if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id) && !cJSON_IsNull(id)) {
            problem = "Invalid Request: \"id\" must be a string or a number.";
            id = NULL;
        } else if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0) {
            problem = "Invalid Request: \"jsonrpc\" must be \"2.0\".";
        } else if (!cJSON_IsString(method)) {
            problem = "Invalid Request: \"method\" must be a string.";
        } else {
            req->root = root;
            req->id = id;
            req->method = method->valuestring;
            req->params = cJSON_GetObjectItemCaseSensitive(root, "params");
            return 0;
        }
    }
    *error_line = rpc_error(id, RPC_INVALID_REQUEST, problem, NULL);
    cJSON_Delete(root);
    return -1;
}

void rpc_request_free(struct rpc_request *req)
{
    cJSON_Delete(req->root);
    memset(req, 0, sizeof *req);
}
