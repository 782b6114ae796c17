/*
 * tool_breakpoint.c - debug_breakpoint: breakpoints and logpoints added, removed and
 * listed (core/debug.h), and how one reads in an answer (also in debug_launch's).
 *
 * {sessionId?, add?: [spec], remove?: [id] | "*"}; neither: list. Without sessionId
 * the specs are staged for the next launch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/debug.h"
#include "mcp/args.h"
#include "mcp/budget.h"
#include "mcp/tools.h"

/* Bytes of breakpoints listed before the rest is counted (the whole answer stays
 * under answers.maxBytes, mcp/budget.h). */
#define ANSWER_BUDGET (tool_answer_budget() - 2048)

static const char *const fields[] = {"sessionId", "add", "remove", NULL};
static const char *const spec_fields[] = {"function", "file", "line", "condition", "hitCount",
                                          "hitLimit", "oneShot", "allStop", "message", NULL};

int tool_breakpoint_parse(const cJSON *o, const char *list, int i,
                          struct collector_breakpoint *b, struct strobe_error *e)
{
    char where[48];
    snprintf(where, sizeof where, "%s[%d]", list, i);
    if (!cJSON_IsObject(o))
        return err_set(e, ERR_VALIDATION, "'%s' must be an object ({function} or {file, "
                       "line}, with condition, hitCount, oneShot, allStop, message), not %s.",
                       where, args_type_name(o));
    int64_t line = 0, hit = 0, limit = 0;
    bool has_line = false, has_hit = false, has_limit = false;
    *b = (struct collector_breakpoint){0};
    if (args_only(o, where, spec_fields, e) != 0 ||
        args_string(o, "function", false, &b->function, e) != 0 ||
        args_string(o, "file", false, &b->file, e) != 0 ||
        args_int(o, "line", 1, 10000000, &line, &has_line, e) != 0 ||
        args_string(o, "condition", false, &b->condition, e) != 0 ||
        args_int(o, "hitCount", 1, 1000000000, &hit, &has_hit, e) != 0 ||
        args_int(o, "hitLimit", 1, 1000000000, &limit, &has_limit, e) != 0 ||
        args_bool(o, "oneShot", &b->one_shot, e) != 0 ||
        args_bool(o, "allStop", &b->all_stop, e) != 0 ||
        args_string(o, "message", false, &b->message, e) != 0)
        return -1;
    b->line = (int)line;
    b->hit_count = hit;
    b->hit_limit = limit;
    if (!b->function == !b->file)
        return err_set(e, ERR_VALIDATION, "'%s' needs exactly one of 'function' (a pattern) "
                       "and 'file' (with 'line').", where);
    if (b->file && !has_line)
        return err_set(e, ERR_VALIDATION, "'%s' has 'file' without 'line': give the line "
                       "number too.", where);
    if (b->function && has_line)
        return err_set(e, ERR_VALIDATION, "'%s' has 'line' with 'function': a line goes with "
                       "'file'.", where);
    if ((b->condition && (!b->condition[0] || strlen(b->condition) > BP_TEXT_MAX)) ||
        (b->message && (!b->message[0] || strlen(b->message) > BP_TEXT_MAX)))
        return err_set(e, ERR_VALIDATION, "'%s': condition and message are 1 to %d "
                       "characters.", where, BP_TEXT_MAX);
    if (b->message && b->all_stop)
        return err_set(e, ERR_VALIDATION, "'%s': a logpoint (message) never stops the "
                       "program, so allStop does not apply.", where);
    if (b->function && strlen(b->function) >= 256)
        return err_set(e, ERR_VALIDATION, "'%s': function patterns are under 256 characters.",
                       where);
    return 0;
}

int tool_breakpoints_given(const cJSON *args, struct collector_breakpoint *out, int *n,
                           struct strobe_error *e)
{
    *n = 0;
    const cJSON *bps = cJSON_GetObjectItemCaseSensitive(args, "breakpoints");
    if (bps && (!cJSON_IsArray(bps) || cJSON_GetArraySize(bps) > DEBUG_ADD_MAX))
        return err_set(e, ERR_VALIDATION, "'breakpoints' must be an array of up to %d "
                       "breakpoint specs, as debug_breakpoint's add: [{file: \"calc.c\", "
                       "line: 42}] or [{function: \"parse_*\", message: \"n={n}\"}].",
                       DEBUG_ADD_MAX);
    const cJSON *it;
    cJSON_ArrayForEach(it, bps) {
        if (tool_breakpoint_parse(it, "breakpoints", *n, &out[*n], e) != 0)
            return -1;
        ++*n;
    }
    return *n ? debug_breakpoints_for_launch(out, *n, e) : 0;
}

static void add_hex(cJSON *o, const char *name, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    cJSON_AddStringToObject(o, name, buf);
}

cJSON *tool_breakpoint_json(const struct collector_bp_info *b, bool staged)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", b->id);
    cJSON_AddStringToObject(o, "kind", b->logpoint ? "logpoint" : "breakpoint");
    if (b->function[0]) {
        cJSON_AddStringToObject(o, "function", b->function);
    } else {
        cJSON_AddStringToObject(o, "file", b->file);
        cJSON_AddNumberToObject(o, "line", b->line ? b->line : b->line_asked);
        if (b->line && b->line != b->line_asked)
            cJSON_AddNumberToObject(o, "movedFrom", b->line_asked);
    }
    if (b->condition[0])
        cJSON_AddStringToObject(o, "condition", b->condition);
    if (b->hit_count > 1)
        cJSON_AddNumberToObject(o, "hitCount", (double)b->hit_count);
    if (b->hit_limit)
        cJSON_AddNumberToObject(o, "hitLimit", (double)b->hit_limit);
    if (b->one_shot)
        cJSON_AddTrueToObject(o, "oneShot");
    if (b->all_stop)
        cJSON_AddTrueToObject(o, "allStop");
    if (b->message[0])
        cJSON_AddStringToObject(o, "message", b->message);
    if (staged) {
        cJSON_AddTrueToObject(o, "staged");
        return o;
    }
    cJSON_AddNumberToObject(o, "locations", (double)b->n_locations);
    cJSON *where = cJSON_AddArrayToObject(o, "where");
    for (size_t i = 0; i < b->n_locations && i < BP_SHOWN_LOCATIONS; i++) {
        const struct collector_bp_location *l = &b->locations[i];
        cJSON *w = cJSON_CreateObject();
        add_hex(w, "address", l->address);
        cJSON_AddStringToObject(w, "function", l->function);
        if (l->file[0]) {
            cJSON_AddStringToObject(w, "file", l->file);
            cJSON_AddNumberToObject(w, "line", l->line);
        }
        if (l->inlined)
            cJSON_AddTrueToObject(w, "inlined");
        cJSON_AddItemToArray(where, w);
    }
    if (b->n_locations > BP_SHOWN_LOCATIONS)
        cJSON_AddNumberToObject(o, "omittedLocations",
                                (double)(b->n_locations - BP_SHOWN_LOCATIONS));
    if (b->pending)
        cJSON_AddTrueToObject(o, "pending");
    if (b->note[0])
        cJSON_AddStringToObject(o, "note", b->note);
    cJSON_AddNumberToObject(o, "hits", (double)b->hits);
    double rate = tool_hot_rate(b->traps, b->set_ns);
    if (rate >= 1)
        cJSON_AddNumberToObject(o, "perSecond", (double)(int64_t)rate);
    if (b->condition_errors) {
        cJSON_AddNumberToObject(o, "conditionErrors", (double)b->condition_errors);
        cJSON_AddStringToObject(o, "lastConditionError", b->last_condition_error);
    }
    return o;
}

/* breakpoints: [...] within the budget, the rest counted. */
static void add_list(cJSON *res, const struct collector_bp_info *bps, int n, bool staged)
{
    cJSON *arr = cJSON_AddArrayToObject(res, "breakpoints");
    size_t used = 0, budget = ANSWER_BUDGET;
    int shown = 0;
    for (; shown < n; shown++) {
        cJSON *o = tool_breakpoint_json(&bps[shown], staged);
        char *text = cJSON_PrintUnformatted(o);
        used += text ? strlen(text) : 0;
        free(text);
        if (used > budget && shown > 0) {
            cJSON_Delete(o);
            break;
        }
        cJSON_AddItemToArray(arr, o);
    }
    if (shown < n) {
        cJSON_AddNumberToObject(res, "omittedBreakpoints", n - shown);
        cJSON_AddStringToObject(res, "omittedHint", "The list was cut to fit the answer "
                                "budget; remove breakpoints you no longer need.");
    }
}

void tool_add_breakpoint_count(cJSON *o, const char *id)
{
    struct collector_bp_info *infos = calloc(DEBUG_LIST_MAX, sizeof *infos);
    int n = 0;
    if (infos && debug_breakpoints_list(id, infos, DEBUG_LIST_MAX, &n, NULL) == 0) {
        int lps = 0;
        for (int i = 0; i < n && i < DEBUG_LIST_MAX; i++)
            lps += infos[i].logpoint;
        cJSON_AddNumberToObject(o, "breakpoints", n);
        if (lps)
            cJSON_AddNumberToObject(o, "logpoints", lps);
    }
    free(infos);
}

static int parse_remove(const cJSON *rm, int *ids, int *n, bool *all, struct strobe_error *e)
{
    *n = 0;
    *all = false;
    if (cJSON_IsString(rm) && strcmp(rm->valuestring, "*") == 0) {
        *all = true;
        return 0;
    }
    if (!cJSON_IsArray(rm) || cJSON_GetArraySize(rm) < 1 ||
        cJSON_GetArraySize(rm) > DEBUG_LIST_MAX)
        return err_set(e, ERR_VALIDATION, "'remove' must be \"*\" or an array of 1 to %d "
                       "breakpoint ids.", DEBUG_LIST_MAX);
    const cJSON *it;
    cJSON_ArrayForEach(it, rm) {
        if (!cJSON_IsNumber(it) || it->valuedouble != (double)(int)it->valuedouble ||
            it->valuedouble < 1)
            return err_set(e, ERR_VALIDATION, "'remove' holds breakpoint ids (integers from "
                           "1), not %s.", args_type_name(it));
        ids[(*n)++] = (int)it->valuedouble;
    }
    return 0;
}

cJSON *tool_debug_breakpoint(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    const char *id = NULL;
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(args, "add");
    const cJSON *rm = cJSON_GetObjectItemCaseSensitive(args, "remove");
    if (args_only(args, "debug_breakpoint", fields, e) != 0 ||
        args_string(args, "sessionId", false, &id, e) != 0)
        return NULL;
    struct collector_breakpoint specs[DEBUG_ADD_MAX];
    int n_specs = 0;
    if (add) {
        if (!cJSON_IsArray(add) || cJSON_GetArraySize(add) < 1 ||
            cJSON_GetArraySize(add) > DEBUG_ADD_MAX) {
            err_set(e, ERR_VALIDATION, "'add' must be an array of 1 to %d breakpoint specs: "
                    "[{file: \"calc.c\", line: 42, condition: \"n > 3\"}] or [{function: "
                    "\"parse_*\"}].", DEBUG_ADD_MAX);
            return NULL;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, add) {
            if (tool_breakpoint_parse(it, "add", n_specs, &specs[n_specs], e) != 0)
                return NULL;
            n_specs++;
        }
    }
    int ids[DEBUG_LIST_MAX], n_ids = 0, removed[DEBUG_LIST_MAX], n_removed = 0;
    bool all = false;
    if (rm && parse_remove(rm, ids, &n_ids, &all, e) != 0)
        return NULL;
    if (rm && debug_breakpoints_remove(id, ids, n_ids, all, removed, &n_removed, e) != 0)
        return NULL;
    struct collector_bp_info *infos = calloc(DEBUG_LIST_MAX, sizeof *infos);
    if (!infos) {
        err_set(e, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    cJSON *res = NULL;
    if (n_specs) {
        if (debug_breakpoints_add(id, &ctx->conn, specs, n_specs, infos, e) != 0)
            goto done;
        res = cJSON_CreateObject();
        if (id)
            cJSON_AddStringToObject(res, "sessionId", id);
        add_list(res, infos, n_specs, !id);
    } else {
        int n = 0;
        if (debug_breakpoints_list(id, infos, DEBUG_LIST_MAX, &n, e) != 0)
            goto done;
        res = cJSON_CreateObject();
        if (id)
            cJSON_AddStringToObject(res, "sessionId", id);
        add_list(res, infos, n < DEBUG_LIST_MAX ? n : DEBUG_LIST_MAX, !id);
    }
    if (rm) {
        cJSON *r = cJSON_AddArrayToObject(res, "removed");
        for (int i = 0; i < n_removed; i++)
            cJSON_AddItemToArray(r, cJSON_CreateNumber(removed[i]));
    }
    if (!id)
        cJSON_AddTrueToObject(res, "staged");
    int staged = id ? debug_staged_count() : 0;
    if (staged) {
        char note[200];
        snprintf(note, sizeof note, "%d breakpoint(s) also stay staged for the next "
                 "launches; debug_breakpoint({remove: \"*\"}) without sessionId removes "
                 "them.", staged);
        cJSON_AddStringToObject(res, "stagedNote", note);
    }
    /* Adding a breakpoint changes no thread's state: the hint says which it is. */
    struct collector_pause paused[1];
    bool any_paused = id && n_specs && debug_pauses(id, paused, 1) > 0;
    const char *hint =
        !id && rm && !n_specs ? "Removed from the staged set: later launches do not bind them."
        : !id ? "Staged: they bind when debug_launch starts the program, before any of its code "
              "runs; the launch answer says where each bound."
        : any_paused ? "The paused threads stay paused; debug_continue({sessionId}) resumes "
                       "them and runs to the next stop, or step with action \"step-over\"."
        : n_specs ? "The program runs on; debug_continue({sessionId, action: \"until\"}) waits "
                    "for the next stop and answers with the thread, its line and its locals."
                  : "debug_breakpoint({sessionId, remove: [id]}) removes one (\"*\": all).";
    cJSON_AddStringToObject(res, "hint", hint);
done:
    free(infos);
    return res;
}
