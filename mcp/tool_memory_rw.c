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
#include "mcp/mem_targets.h"
#include "mcp/hints.h"
#include "mcp/budget.h"
#include "mcp/tools.h"

#define MEMORY_BUDGET tool_answer_budget() /* answers.maxBytes, mcp/budget.h */
#define PREVIEW_BYTES 32
#define CUT_MIN 400  /* values shorter than the sentence that replaces them stay */

static const char *const read_fields[] = {"action", "sessionId", "pid", "targets", "depth",
                                          "threadId", "frame", NULL};
static const char *const write_fields[] = {"action", "sessionId", "pid", "targets",
                                           "threadId", "frame", NULL};
/* A request being built: the targets and values point into the arguments. */
struct request {
    struct collector_mem_request req;
    struct collector_mem_target targets[MEMORY_MAX_TARGETS];
    struct collector_value values[MEMORY_MAX_TARGETS];
    char numbers[MEMORY_MAX_TARGETS][40]; /* values given as JSON numbers, as text */
};

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

static int parse_request(const cJSON *args, bool write, struct request *r,
                         struct strobe_error *e)
{
    int64_t pid = 0, depth = 1, tid = 0, frame = 0;
    bool present, depth_asked = false;
    int n;
    if (args_only(args, write ? "debug_memory write" : "debug_memory read",
                  write ? write_fields : read_fields, e) != 0 ||
        args_int(args, "pid", 1, INT32_MAX, &pid, &present, e) != 0 ||
        args_int(args, "threadId", 1, INT32_MAX, &tid, &present, e) != 0 ||
        args_int(args, "frame", 0, 255, &frame, &present, e) != 0 ||
        (!write && args_int(args, "depth", 1, 5, &depth, &depth_asked, e) != 0) ||
        mem_targets_parse(args, write ? MEM_TARGETS_WRITE : MEM_TARGETS_READ, r->targets,
                          &n, e) != 0)
        return -1;
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(args, "targets");
    for (int i = 0; write && i < n; i++)
        if (parse_value(cJSON_GetArrayItem(targets, i), i, r, e) != 0)
            return -1;
    r->req = (struct collector_mem_request){.pid = (pid_t)pid, .tid = (pid_t)tid,
                                            .frame = (int)frame, .targets = r->targets,
                                            .values = write ? r->values : NULL,
                                            .n_targets = n, .depth = (int)depth,
                                            .depth_asked = depth_asked};
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
    if (r->note)
        cJSON_AddStringToObject(o, "note", r->note);
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
                 "KB) and were cut; read them one per call.", cut, (int)(MEMORY_BUDGET / 1024));
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
