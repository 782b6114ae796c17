/*
 * tool_memory_rw.c - debug_memory read and write: the targets validated into a
 * struct collector_mem_request, run by the engine (core/memory.h), and answered per
 * target, each with its value or its own error (and the next step for it, from
 * mcp/hints.h), within a 16 KB budget: when the answer is larger, the largest values
 * are replaced by a sentence saying how to read them in parts.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "mcp/args.h"
#include "mcp/hints.h"
#include "mcp/tools.h"

#define MEMORY_BUDGET (16 * 1024)
#define PREVIEW_BYTES 32
#define CUT_MIN 400  /* values shorter than the sentence that replaces them stay */

static const char *const read_fields[] = {"action", "sessionId", "pid", "targets", "depth",
                                          NULL};
static const char *const write_fields[] = {"action", "sessionId", "pid", "targets", NULL};
static const char *const read_target_fields[] = {"variable", "address", "size", "type", NULL};
static const char *const write_target_fields[] = {"variable", "address", "type", "value",
                                                  NULL};

/* A request being built: the targets and values point into the arguments. */
struct request {
    struct collector_mem_request req;
    struct collector_mem_target targets[MEMORY_MAX_TARGETS];
    struct collector_value values[MEMORY_MAX_TARGETS];
    char numbers[MEMORY_MAX_TARGETS][40]; /* values given as JSON numbers, as text */
};

/* "0x..." in hex, else decimal (never octal: "010" is ten). */
static int parse_address(const char *text, int i, uint64_t *out, struct strobe_error *e)
{
    char *end;
    errno = 0;
    bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned long long v = strtoull(text, &end, hex ? 16 : 10);
    if (!*text || *end || errno || text[0] == '-' || text[0] == '+' || text[0] == ' ')
        return err_set(e, ERR_VALIDATION, "targets[%d].address must be an address in hex "
                       "(\"0x7ffd1000\"); got '%.60s'.", i, text);
    *out = v;
    return 0;
}

/* The value of a write target as the engine takes it. */
static int parse_value(const cJSON *t, int i, struct request *r, struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "value");
    struct collector_value *cv = &r->values[i];
    if (cJSON_IsString(v)) {
        *cv = (struct collector_value){.kind = CV_STRING, .text = v->valuestring};
    } else if (cJSON_IsBool(v)) {
        *cv = (struct collector_value){.kind = CV_BOOL, .boolean = cJSON_IsTrue(v)};
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == trunc(d) && fabs(d) < 9.007199254740992e15)
            snprintf(r->numbers[i], sizeof r->numbers[i], "%.0f", d);
        else
            snprintf(r->numbers[i], sizeof r->numbers[i], "%.17g", d);
        *cv = (struct collector_value){.kind = CV_NUMBER, .text = r->numbers[i]};
    } else {
        return err_set(e, ERR_VALIDATION, "targets[%d].value must be a number, a string or a "
                       "boolean; got %s. (Integers beyond 2^53 go as strings: "
                       "\"18446744073709551615\".)", i, args_type_name(v));
    }
    return 0;
}

static int parse_target(const cJSON *t, int i, bool write, struct request *r,
                        struct strobe_error *e)
{
    char where[64];
    snprintf(where, sizeof where, "debug_memory targets[%d]", i);
    if (!cJSON_IsObject(t))
        return err_set(e, ERR_VALIDATION, "targets[%d] must be an object ({variable} or "
                       "{address, type%s}); got %s.", i, write ? ", value" : ", size",
                       args_type_name(t));
    const char *variable = NULL, *address = NULL, *type = NULL;
    int64_t size = 0;
    bool has_size = false;
    if (args_only(t, where, write ? write_target_fields : read_target_fields, e) != 0 ||
        args_string(t, "variable", false, &variable, e) != 0 ||
        args_string(t, "address", false, &address, e) != 0 ||
        args_string(t, "type", false, &type, e) != 0 ||
        (!write && args_int(t, "size", 1, MEMORY_MAX_BYTES, &size, &has_size, e) != 0))
        return -1;
    if (!variable == !address)
        return err_set(e, ERR_VALIDATION, "targets[%d] needs exactly one of 'variable' (a "
                       "global or static: \"cfg.retries\") and 'address' (hex, with 'type').", i);
    struct collector_mem_target *mt = &r->targets[i];
    if (variable) {
        if (type || has_size)
            return err_set(e, ERR_VALIDATION, "targets[%d]: 'type' and 'size' go with "
                           "'address'; a variable has its own type.", i);
        if (strlen(variable) > MEMORY_EXPR_MAX)
            return err_set(e, ERR_VALIDATION, "targets[%d].variable is %zu characters; the "
                           "limit is %d.", i, strlen(variable), MEMORY_EXPR_MAX);
        mt->variable = variable;
    } else {
        int hint = type ? memory_hint_parse(type) : -1;
        if (hint < 0)
            return err_set(e, ERR_VALIDATION, "targets[%d] reads an address, so it needs "
                           "'type': one of i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, "
                           "pointer%s; got %s%s%s.", i, write ? "" : ", bytes",
                           type ? "'" : "", type ? type : "none", type ? "'" : "");
        if (hint == MEMH_BYTES && write)
            return err_set(e, ERR_VALIDATION, "targets[%d]: a write needs a typed 'type' (i8 "
                           "... u64, f32, f64, pointer), not bytes.", i);
        if (hint == MEMH_BYTES && !has_size)
            return err_set(e, ERR_VALIDATION, "targets[%d]: type bytes needs 'size' (1 to "
                           "%u bytes).", i, MEMORY_MAX_BYTES);
        if (hint != MEMH_BYTES && has_size)
            return err_set(e, ERR_VALIDATION, "targets[%d]: 'size' goes with type bytes; "
                           "%s has its own size.", i, type);
        if (parse_address(address, i, &mt->address, e) != 0)
            return -1;
        mt->hint = (enum memory_hint)hint;
        mt->size = (size_t)size;
    }
    return write ? parse_value(t, i, r, e) : 0;
}

static int parse_request(const cJSON *args, bool write, struct request *r,
                         struct strobe_error *e)
{
    int64_t pid = 0, depth = 1;
    bool present;
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(args, "targets");
    if (args_only(args, write ? "debug_memory write" : "debug_memory read",
                  write ? write_fields : read_fields, e) != 0 ||
        args_int(args, "pid", 1, INT32_MAX, &pid, &present, e) != 0 ||
        (!write && args_int(args, "depth", 1, 5, &depth, &present, e) != 0))
        return -1;
    if (!cJSON_IsArray(targets) || cJSON_GetArraySize(targets) == 0)
        return err_set(e, ERR_VALIDATION, "'targets' must be a non-empty array of "
                       "{variable%s} or {address, type%s}; got %s.", write ? ", value" : "",
                       write ? ", value" : ", size", cJSON_IsArray(targets) ? "[]"
                                                        : args_type_name(targets));
    int n = cJSON_GetArraySize(targets);
    if (n > MEMORY_MAX_TARGETS)
        return err_set(e, ERR_LIMIT_EXCEEDED, "%d targets given; one call takes at most %d.", n,
                       MEMORY_MAX_TARGETS);
    for (int i = 0; i < n; i++)
        if (parse_target(cJSON_GetArrayItem(targets, i), i, write, r, e) != 0)
            return -1;
    r->req = (struct collector_mem_request){.pid = (pid_t)pid, .targets = r->targets,
                                            .values = write ? r->values : NULL,
                                            .n_targets = n, .depth = (int)depth};
    return 0;
}

static void add_error(cJSON *o, const struct collector_mem_result *r)
{
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(err, "code", err_code_name(r->error));
    char msg[1024];
    const char *hint = hint_for("debug_memory", r->error);
    snprintf(msg, sizeof msg, "%s%s%s", r->error_message ? r->error_message : "",
             hint ? " " : "", hint ? hint : "");
    cJSON_AddStringToObject(err, "message", msg);
}

static void add_json(cJSON *o, const char *key, const char *json)
{
    cJSON *v = cJSON_Parse(json);
    cJSON_AddItemToObject(o, key, v ? v : cJSON_CreateString(json));
}

static cJSON *result_json(const struct collector_mem_result *r, bool write)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "target", r->target ? r->target : "?");
    if (r->type) {
        if (r->address) {
            char addr[32];
            snprintf(addr, sizeof addr, "0x%" PRIx64, r->address);
            cJSON_AddStringToObject(o, "address", addr);
        }
        cJSON_AddStringToObject(o, "type", r->type);
        cJSON_AddNumberToObject(o, "size", (double)r->size);
    }
    if (r->error != ERR_NONE) {
        add_error(o, r);
        return o;
    }
    if (r->file) {
        cJSON_AddStringToObject(o, "file", r->file);
        char preview[PREVIEW_BYTES * 3 + 1] = "";
        size_t n = r->size < PREVIEW_BYTES ? r->size : PREVIEW_BYTES, len = 0;
        for (size_t i = 0; i < n; i++)
            len += (size_t)snprintf(preview + len, sizeof preview - len, i ? " %02x" : "%02x",
                                    r->bytes[i]);
        cJSON_AddStringToObject(o, "preview", preview);
        return o;
    }
    if (write)
        add_json(o, "oldValue", r->old_value ? r->old_value : "null");
    add_json(o, "value", r->value ? r->value : "null");
    return o;
}

/* Replaces the largest values until the answer fits the budget. */
static void fit_budget(cJSON *answer, cJSON *results, int n)
{
    int cut = 0;
    for (;;) {
        char *text = cJSON_PrintUnformatted(answer);
        size_t len = text ? strlen(text) : 0;
        free(text);
        if (len <= MEMORY_BUDGET)
            break;
        cJSON *largest = NULL;
        size_t largest_len = 0;
        for (int i = 0; i < n; i++) {
            cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(results, i), "value");
            char *vt = v ? cJSON_PrintUnformatted(v) : NULL;
            size_t vl = vt ? strlen(vt) : 0;
            free(vt);
            if (vl > largest_len && vl > CUT_MIN) {
                largest = cJSON_GetArrayItem(results, i);
                largest_len = vl;
            }
        }
        if (!largest)
            break;
        char sentence[300];
        snprintf(sentence, sizeof sentence, "<%zu bytes of JSON cut to fit the answer: read "
                 "this target alone, with a lower depth, or its members and elements>",
                 largest_len);
        cJSON_ReplaceItemInObjectCaseSensitive(largest, "value", cJSON_CreateString(sentence));
        cJSON_AddTrueToObject(largest, "truncated");
        cut++;
    }
    if (cut) {
        char sentence[200];
        snprintf(sentence, sizeof sentence, "%d value(s) were too large for one answer (%d "
                 "KB) and were cut; read them one per call.", cut, MEMORY_BUDGET / 1024);
        cJSON_AddStringToObject(answer, "truncated", sentence);
    }
}

static cJSON *run(const cJSON *args, const char *id, bool write, struct strobe_error *e)
{
    struct request *r = calloc(1, sizeof *r);
    struct collector_mem_result out[MEMORY_MAX_TARGETS] = {0};
    if (!r) {
        err_set(e, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    cJSON *answer = NULL;
    if (parse_request(args, write, r, e) == 0 && session_memory(id, &r->req, out, e) == 0) {
        answer = cJSON_CreateObject();
        cJSON *results = cJSON_AddArrayToObject(answer, "results");
        for (int i = 0; i < r->req.n_targets; i++)
            cJSON_AddItemToArray(results, result_json(&out[i], write));
        fit_budget(answer, results, r->req.n_targets);
        collector_mem_results_free(out, r->req.n_targets);
    }
    free(r);
    return answer;
}

cJSON *tool_memory_read(const cJSON *args, const char *id, struct strobe_error *e)
{
    return run(args, id, false, e);
}

cJSON *tool_memory_write(const cJSON *args, const char *id, struct strobe_error *e)
{
    return run(args, id, true, e);
}
