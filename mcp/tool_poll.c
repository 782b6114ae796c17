/*
 * tool_poll.c - debug_memory read with `poll`: the targets are checked with one
 * read now (each failing target answers its error at once), then core/poll.h
 * samples the others in the background as variable_snapshot events.
 */
#include <stdio.h>
#include <string.h>

#include "core/poll.h"
#include "mcp/args.h"
#include "mcp/mem_targets.h"
#include "mcp/tools.h"

static const char *const poll_fields[] = {"intervalMs", "durationMs", NULL};

static cJSON *target_error(const struct collector_mem_result *r, const char *fallback)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "target", r->target ? r->target : fallback);
    cJSON_AddStringToObject(o, "code", err_code_name(r->error));
    cJSON_AddStringToObject(o, "error", r->error_message ? r->error_message : "");
    return o;
}

cJSON *tool_memory_poll(const cJSON *args, const char *id, struct strobe_error *e)
{
    struct collector_mem_target targets[MEMORY_MAX_TARGETS];
    int n = 0;
    int64_t depth = 1, pid = 0, interval = 0, duration = 0;
    bool has_interval = false, has_duration = false;
    const cJSON *poll = NULL;
    if (args_object(args, "poll", &poll, e) != 0)
        return NULL;
    if (!poll) {
        err_set(e, ERR_VALIDATION, "'poll' must be an object {intervalMs, durationMs}.");
        return NULL;
    }
    if (args_only(poll, "poll", poll_fields, e) != 0 ||
        args_int(poll, "intervalMs", POLL_INTERVAL_MIN_MS, POLL_INTERVAL_MAX_MS, &interval,
                 &has_interval, e) != 0 ||
        args_int(poll, "durationMs", POLL_DURATION_MIN_MS, POLL_DURATION_MAX_MS, &duration,
                 &has_duration, e) != 0)
        return NULL;
    if (!has_interval || !has_duration) {
        err_set(e, ERR_VALIDATION, "'poll' needs intervalMs (%d-%d) and durationMs (%d-%d).",
                POLL_INTERVAL_MIN_MS, POLL_INTERVAL_MAX_MS, POLL_DURATION_MIN_MS,
                POLL_DURATION_MAX_MS);
        return NULL;
    }
    if (args_int(args, "depth", 1, 5, &depth, NULL, e) != 0 ||
        args_int(args, "pid", 1, 0x7fffffff, &pid, NULL, e) != 0 ||
        mem_targets_parse(args, MEM_TARGETS_POLL, targets, &n, e) != 0)
        return NULL;
    static const char *const not_poll[] = {"variable", "address", "size", "type", "access",
                                           "watchId", NULL};
    for (int i = 0; not_poll[i]; i++)
        if (cJSON_HasObjectItem(args, not_poll[i])) {
            err_set(e, ERR_VALIDATION, "'%s' belongs to action watch/unwatch; a poll reads "
                    "'targets'.", not_poll[i]);
            return NULL;
        }
    struct poll_request req = {.pid = (pid_t)pid, .targets = targets, .n_targets = n,
                               .depth = (int)depth, .interval_ms = (int)interval,
                               .duration_ms = (int)duration};
    struct poll_started st;
    cJSON *out = NULL;
    if (poll_start(id, &req, &st, e) == 0) {
        out = cJSON_CreateObject();
        cJSON_AddTrueToObject(out, "polling");
        cJSON_AddNumberToObject(out, "pollId", st.poll_id);
        cJSON_AddNumberToObject(out, "variableCount", st.n_polled);
        cJSON_AddNumberToObject(out, "intervalMs", (double)interval);
        cJSON_AddNumberToObject(out, "durationMs", (double)duration);
        cJSON_AddNumberToObject(out, "expectedSamples", st.expected_samples);
        cJSON_AddStringToObject(out, "eventType", "variable_snapshot");
        cJSON *errors = NULL;
        for (int i = 0; i < st.n_results; i++) {
            if (st.results[i].error == ERR_NONE)
                continue;
            if (!errors)
                errors = cJSON_AddArrayToObject(out, "errors");
            char fallback[32];
            snprintf(fallback, sizeof fallback, "targets[%d]", i);
            cJSON_AddItemToArray(errors, target_error(&st.results[i], fallback));
        }
        char hint[400];
        snprintf(hint, sizeof hint,
                 "Sampling %d target(s) every %lld ms for %lld ms in the background%s. Read "
                 "the samples with debug_query({sessionId: \"%.96s\", eventType: "
                 "\"variable_snapshot\"}), or without eventType to see them between the "
                 "function calls.", st.n_polled, (long long)interval, (long long)duration,
                 errors ? " (the targets in errors are left out)" : "", id);
        cJSON_AddStringToObject(out, "hint", hint);
    } else if (st.n_results > 0) {
        /* None resolved: e says so; each target's reason follows in the sentence. */
        size_t len = strlen(e->msg);
        for (int i = 1; i < st.n_results && len + 2 < sizeof e->msg; i++) {
            const struct collector_mem_result *r = &st.results[i];
            snprintf(e->msg + len, sizeof e->msg - len, " %.80s: %s: %.160s",
                     r->target ? r->target : "?", err_code_name(r->error),
                     r->error_message ? r->error_message : "");
            len = strlen(e->msg);
        }
    }
    poll_started_free(&st);
    return out;
}
