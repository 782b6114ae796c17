/*
 * jsonrpc.c - JSON-RPC 2.0 framing. See jsonrpc.h.
 */
#include "mcp/jsonrpc.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/linesplit.h"

/* Such bytes can only be inside JSON strings, where "\\xNN" is valid JSON. */
char *rpc_utf8_clean(char *text)
{
    size_t n = strlen(text), bad = utf8_invalid_bytes(text, n);
    if (!bad)
        return text;
    static const char json_escape[] = "\\\\x"; /* the text \\x: a JSON-escaped \x */
    char *out = malloc(n + bad * (sizeof json_escape - 1 + 1) + 1);
    if (out)
        utf8_escape(text, n, out, json_escape);
    free(text);
    return out;
}

static char *print_and_free(cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return s ? rpc_utf8_clean(s) : NULL;
}

/* Whether the JSON text has a \u0000 escape inside a string: cJSON would end the
 * string there, silently cutting a command or a session id short. */
static bool has_nul_escape(const char *s, size_t n)
{
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        if (!in_string) {
            in_string = s[i] == '"';
        } else if (s[i] == '"') {
            in_string = false;
        } else if (s[i] == '\\') {
            if (i + 5 < n && s[i + 1] == 'u' && strncmp(s + i + 2, "0000", 4) == 0)
                return true;
            i++; /* the escaped character */
        }
    }
    return false;
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON *copy;
    if (cJSON_IsNumber(id)) { /* an integer within 2^53 (rpc_parse): cJSON would print
                                 9007199254740992 as 9.00719925474099e+15 */
        char digits[32];
        snprintf(digits, sizeof digits, "%lld", (long long)id->valuedouble);
        copy = cJSON_CreateRaw(digits);
    } else {
        copy = id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull();
    }
    cJSON_AddItemToObject(msg, "id", copy);
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

/* Whether id can be echoed exactly: a string, or an integer within +-2^53. */
static bool id_echoable(const cJSON *id)
{
    return cJSON_IsString(id) ||
           (cJSON_IsNumber(id) && id->valuedouble == floor(id->valuedouble) &&
            fabs(id->valuedouble) <= 9007199254740992.0);
}

int rpc_parse(const char *line, size_t len, struct rpc_request *req, char **error_line)
{
    memset(req, 0, sizeof *req);
    char bad[4 * 64 + 128];
    if (utf8_describe_invalid(line, len, bad, sizeof bad)) {
        /* Answered with the request's id when it can be read (cJSON passes such
         * bytes through), so that the client waiting for that id gets it. */
        cJSON *root = cJSON_ParseWithLength(line, len);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
        char msg[sizeof bad + 256];
        snprintf(msg, sizeof msg, "Parse error: %s is not UTF-8. Send JSON text in UTF-8 "
                 "(a path or argument that is not UTF-8 cannot be named: rename or link "
                 "it to a UTF-8 name).", bad);
        *error_line = rpc_error(id_echoable(id) ? id : NULL, RPC_PARSE_ERROR, msg, NULL);
        cJSON_Delete(root);
        return -1;
    }
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
        } else if (cJSON_IsNumber(id) && !id_echoable(id)) {
            problem = "Invalid Request: a numeric \"id\" must be an integer from -2^53 to "
                      "2^53 (or send a string id).";
            id = NULL;
        } else if (has_nul_escape(line, len)) {
            problem = "Invalid Request: strings must not contain NUL (\\u0000).";
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
