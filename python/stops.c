/*
 * stops.c - the Python collector's breakpoint, pause, step and memory slots
 * (core/collector.h "Breakpoints and steps", "Frames and variables"): each a command
 * to the process's agent (python/agent/_strobe_agent/breaks.py), which binds the
 * breakpoints, evaluates their conditions in Python, stops the threads and reads
 * their frames. The paused set is the agent's, kept by the link as the agent reports
 * it (link.c), so listing pauses costs no round trip.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/python_internal.h"

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int64_t num_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* The agent's breakpoint info (breaks.Breakpoint.info) into out. */
static void take_info(const cJSON *b, struct collector_bp_info *out)
{
    out->id = (int)num_of(b, "id");
    out->logpoint = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "logpoint"));
    snprintf(out->function, sizeof out->function, "%s", str_of(b, "function"));
    snprintf(out->file, sizeof out->file, "%s", str_of(b, "file"));
    out->line_asked = (int)num_of(b, "lineAsked");
    snprintf(out->condition, sizeof out->condition, "%s", str_of(b, "condition"));
    snprintf(out->message, sizeof out->message, "%s", str_of(b, "message"));
    out->hit_count = num_of(b, "hitCount");
    out->one_shot = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "oneShot"));
    out->line = (int)num_of(b, "line");
    snprintf(out->note, sizeof out->note, "%s", str_of(b, "note"));
    out->hits = num_of(b, "hits");
    out->traps = num_of(b, "traps");
    out->condition_errors = num_of(b, "conditionErrors");
    snprintf(out->last_condition_error, sizeof out->last_condition_error, "%s",
             str_of(b, "lastConditionError"));
    out->hit_limit = num_of(b, "hitLimit");
    out->n_locations = (size_t)num_of(b, "nLocations");
    const cJSON *loc;
    size_t k = 0;
    cJSON_ArrayForEach(loc, cJSON_GetObjectItemCaseSensitive(b, "locations")) {
        if (k == BP_SHOWN_LOCATIONS)
            break;
        struct collector_bp_location *l = &out->locations[k++];
        snprintf(l->function, sizeof l->function, "%s", str_of(loc, "function"));
        snprintf(l->file, sizeof l->file, "%s", str_of(loc, "file"));
        l->line = (int)num_of(loc, "line");
    }
}

/* bp as the agent's spec (breaks.Debugger.set), added to parent under name (NULL:
 * to an array). */
static void add_spec(cJSON *parent, const char *name, const struct collector_breakpoint *bp)
{
    cJSON *spec = cJSON_CreateObject();
    if (name)
        cJSON_AddItemToObject(parent, name, spec);
    else
        cJSON_AddItemToArray(parent, spec);
    cJSON_AddNumberToObject(spec, "id", bp->id);
    if (bp->file) {
        cJSON_AddStringToObject(spec, "file", bp->file);
        cJSON_AddNumberToObject(spec, "line", bp->line);
    }
    if (bp->function)
        cJSON_AddStringToObject(spec, "function", bp->function);
    if (bp->condition)
        cJSON_AddStringToObject(spec, "condition", bp->condition);
    if (bp->message)
        cJSON_AddStringToObject(spec, "message", bp->message);
    cJSON_AddNumberToObject(spec, "hitCount", (double)bp->hit_count);
    cJSON_AddBoolToObject(spec, "oneShot", bp->one_shot);
    cJSON_AddBoolToObject(spec, "allStop", bp->all_stop);
    cJSON_AddNumberToObject(spec, "hitLimit", (double)bp->hit_limit);
}

int python_start_bps(const char *sock, const struct collector_breakpoint *bps, int n,
                     char *path, size_t cap, struct strobe_error *e)
{
    path[0] = '\0';
    if (n <= 0)
        return 0;
    size_t len = strlen(sock);
    if (len < 5 || strcmp(sock + len - 5, ".sock") != 0 ||
        snprintf(path, cap, "%.*s.bps.json", (int)(len - 5), sock) >= (int)cap) {
        path[0] = '\0';
        return err_set(e, ERR_INTERNAL, "no name for the breakpoints of %s", sock);
    }
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < n; i++)
        add_spec(list, NULL, &bps[i]);
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    int fd = text ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    size_t left = text ? strlen(text) : 0;
    bool ok = fd >= 0;
    for (const char *p = text; ok && left > 0;) {
        ssize_t k = write(fd, p, left);
        ok = k > 0;
        p += ok ? k : 0;
        left -= ok ? (size_t)k : 0;
    }
    int errnum = errno;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    free(text);
    if (ok)
        return 0;
    if (fd >= 0)
        unlink(path);
    path[0] = '\0';
    return err_set(e, ERR_INTERNAL, "cannot write the breakpoints a Python process starts with: "
                   "%s", strerror(errnum));
}

int python_breakpoint_set(struct collector_target *t, const struct collector_breakpoint *bp,
                          struct collector_bp_info *out, struct strobe_error *e)
{
    cJSON *msg = cJSON_CreateObject();
    add_spec(msg, "spec", bp);
    cJSON *reply = pylink_command(t->link, "break", msg, COMMAND_MS, e);
    if (!reply)
        return -1;
    collector_bp_info_init(out, bp);
    take_info(cJSON_GetObjectItemCaseSensitive(reply, "breakpoint"), out);
    cJSON_Delete(reply);
    return 0;
}

int python_breakpoint_clear(struct collector_target *t, int id, struct strobe_error *e)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddNumberToObject(msg, "bp", id);
    cJSON *reply = pylink_command(t->link, "unbreak", msg, COMMAND_MS, e);
    cJSON_Delete(reply);
    return reply ? 0 : -1;
}

int python_breakpoint_list(struct collector_target *t, struct collector_bp_info *out, int max)
{
    struct strobe_error e;
    cJSON *reply = pylink_command(t->link, "breakpoints", NULL, COMMAND_MS, &e);
    if (!reply)
        return 0;
    int n = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(reply, "breakpoints")) {
        if (n == max)
            break;
        memset(&out[n], 0, sizeof out[n]);
        take_info(b, &out[n++]);
    }
    cJSON_Delete(reply);
    return n;
}

int python_pauses(struct collector_target *t, struct collector_pause *out, int max)
{
    return pylink_pauses(t->link, out, max);
}

int python_pause(struct collector_target *t, pid_t pid, struct strobe_error *e)
{
    if (pid && pid != t->pid)
        return 0;
    cJSON *reply = pylink_command(t->link, "pause", NULL, COMMAND_MS, e);
    if (!reply)
        return -1;
    int n = (int)num_of(reply, "paused");
    cJSON_Delete(reply);
    return n;
}

int python_resume(struct collector_target *t, pid_t tid, enum collector_resume how,
                  struct strobe_error *e)
{
    static const char *const hows[] = {
        [RESUME_CONTINUE] = "continue", [RESUME_STEP_INTO] = "into",
        [RESUME_STEP_OVER] = "over", [RESUME_STEP_OUT] = "out",
    };
    struct collector_pause ps[64];
    int n = pylink_pauses(t->link, ps, 64);
    int64_t upto = 0;
    for (int i = 0; i < n; i++)
        if ((!tid || ps[i].tid == tid) && ps[i].seq > upto)
            upto = ps[i].seq;
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddNumberToObject(msg, "tid", tid);
    cJSON_AddStringToObject(msg, "how", hows[how]);
    cJSON *reply = pylink_command(t->link, "resume", msg, COMMAND_MS, e);
    if (!reply)
        return -1;
    cJSON_Delete(reply);
    pylink_resumed(t->link, tid, upto);
    return 0;
}

/* A write's value as JSON: a number, a string or a boolean, as the client gave it. */
static cJSON *json_value(const struct collector_value *v)
{
    if (v->kind == CV_BOOL)
        return cJSON_CreateBool(v->boolean);
    if (v->kind == CV_STRING)
        return cJSON_CreateString(v->text);
    char *end;
    double d = strtod(v->text, &end);
    return *end ? cJSON_CreateString(v->text) : cJSON_CreateNumber(d);
}

/* The code of a failed read, from the agent's "ExcType: message". */
static enum err_code code_of(const char *why)
{
    if (strncmp(why, "NameError", 9) == 0 || strncmp(why, "AttributeError", 14) == 0 ||
        strncmp(why, "KeyError", 8) == 0 || strncmp(why, "IndexError", 10) == 0)
        return ERR_VARIABLE_NOT_FOUND;
    return ERR_BAD_EXPRESSION;
}

int python_memory(struct collector_target *t, const struct collector_mem_request *req,
                  struct collector_mem_result *out, struct strobe_error *e)
{
    if (req->pid && req->pid != t->pid)
        return err_set(e, ERR_VALIDATION, "process %d is not the Python process %d",
                       (int)req->pid, (int)t->pid);
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddNumberToObject(msg, "tid", req->tid);
    cJSON_AddNumberToObject(msg, "frame", req->frame);
    cJSON_AddNumberToObject(msg, "depth", req->depth);
    cJSON *targets = cJSON_AddArrayToObject(msg, "targets");
    cJSON *values = req->values ? cJSON_AddArrayToObject(msg, "values") : NULL;
    for (int i = 0; i < req->n_targets; i++) {
        cJSON_AddItemToArray(targets, cJSON_CreateString(req->targets[i].variable
                                                             ? req->targets[i].variable : "0"));
        if (values)
            cJSON_AddItemToArray(values, json_value(&req->values[i]));
    }
    cJSON *reply = pylink_command(t->link, "memory", msg, COMMAND_MS, e);
    if (!reply)
        return -1;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(reply, "results");
    for (int i = 0; i < req->n_targets; i++) {
        struct collector_mem_result *r = &out[i];
        memset(r, 0, sizeof *r);
        const cJSON *x = cJSON_GetArrayItem(results, i);
        r->target = strdup(req->targets[i].variable ? req->targets[i].variable : "0x0");
        if (!req->targets[i].variable) {
            r->error = ERR_VALIDATION;
            r->error_message = strdup("a Python process is read by names (locals, globals, "
                                      "obj.attr, d[\"k\"]), not by address");
            continue;
        }
        const char *why = str_of(x, "error");
        if (!x || why[0]) {
            r->error = x ? code_of(why) : ERR_INTERNAL;
            r->error_message = strdup(x ? why : "the agent gave no result");
            continue;
        }
        r->type = strdup(str_of(x, "type"));
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, "value");
        r->value = v ? cJSON_PrintUnformatted(v) : strdup("null");
        const cJSON *old = cJSON_GetObjectItemCaseSensitive(x, "old");
        r->old_value = old ? cJSON_PrintUnformatted(old) : NULL;
    }
    cJSON_Delete(reply);
    return 0;
}

int python_evaluate(struct collector_target *t, pid_t pid, const char *condition, bool *result,
                    char *values, size_t cap, struct strobe_error *e)
{
    struct collector_mem_target target = {.variable = condition};
    struct collector_mem_request req = {.pid = pid, .targets = &target, .n_targets = 1,
                                        .depth = 1};
    struct collector_mem_result r;
    if (python_memory(t, &req, &r, e) != 0)
        return -1;
    int rc = 0;
    if (r.error != ERR_NONE) {
        rc = err_set(e, r.error, "%s", r.error_message);
    } else {
        const char *v = r.value;
        bool number = (v[0] >= '0' && v[0] <= '9') || v[0] == '-';
        *result = number ? strtod(v, NULL) != 0
                         : strcmp(v, "false") && strcmp(v, "null") && strcmp(v, "\"\"") &&
                               strcmp(v, "[]") && strcmp(v, "{}");
        if (values && cap) /* "path=value", as the native collector says it */
            snprintf(values, cap, "%s=%s", condition, v);
    }
    collector_mem_results_free(&r, 1);
    return rc;
}
