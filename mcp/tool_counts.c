/*
 * tool_counts.c - exact call counts, the sampling indicator and the measured
 * overhead in tool answers (status, debug_trace, debug_query). See tools.h.
 *
 * The counts come from the collector (core/collector.h, collector_counts): every
 * call of a traced function is counted even while its events are only a sample
 * (ptrace/hooks/hooks.h), so the store's count of recorded events is a lower bound and
 * these replace it where the session's target is still held.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/session.h"
#include "mcp/tools.h"

#define TOP_FUNCTIONS 10

static double percent(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)(part * 1000 / whole) / 10.0 : 0.0;
}

static cJSON *sampling_json(const struct collector_counts *c)
{
    cJSON *arr = NULL;
    for (size_t i = 0; i < c->n; i++) {
        const struct collector_fn_count *f = &c->fns[i];
        if (!f->sampled)
            continue;
        if (!arr)
            arr = cJSON_CreateArray();
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "function", f->function);
        cJSON_AddNumberToObject(o, "calls", (double)f->calls);
        cJSON_AddNumberToObject(o, "recorded", (double)f->recorded);
        cJSON_AddNumberToObject(o, "since", (double)f->sampled_since_ns);
        cJSON_AddBoolToObject(o, "callsExact", f->exact);
        cJSON_AddStringToObject(o, "countedBy", f->mode);
        if (!f->exact)
            cJSON_AddStringToObject(o, "callsLost", f->lost);
        if (f->ring_full)
            cJSON_AddNumberToObject(o, "ringFull", (double)f->ring_full);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static void add_overhead(cJSON *o, const struct collector_counts *c)
{
    int64_t all = c->busy_ns + c->run_ns;
    if (!all && !c->stops)
        return;
    double share = percent(c->busy_ns, all);
    cJSON *ov = cJSON_AddObjectToObject(o, "overhead");
    cJSON_AddNumberToObject(ov, "stops", (double)c->stops);
    cJSON_AddNumberToObject(ov, "tracerSharePercent", share);
    if (!c->final)
        cJSON_AddNumberToObject(ov, "lastSecondPercent",
                                percent(c->last_second_busy_ns,
                                        c->last_second_busy_ns + c->last_second_run_ns));
    cJSON_AddNumberToObject(ov, "stoppedMs", (double)(c->busy_ns / 1000000));
    cJSON_AddNumberToObject(ov, "runningMs", (double)(c->run_ns / 1000000));
    char text[300];
    snprintf(text, sizeof text, "the threads that call traced functions stopped %lld "
             "times and spent %.1f%% of their time stopped at those calls (the tracer's "
             "work and the kernel's stop); without tracing they would take about %.1f%% "
             "of the time they took", (long long)c->stops, share, 100.0 - share);
    cJSON_AddStringToObject(ov, "meaning", text);
}

static struct collector_counts *counts_of(const char *id)
{
    struct collector_counts *c = malloc(sizeof *c);
    struct strobe_error e;
    if (c && session_counts(id, c, &e) == 0)
        return c;
    free(c);
    return NULL;
}

bool tool_add_sampling(cJSON *o, const char *id)
{
    struct collector_counts *c = counts_of(id);
    cJSON *arr = c ? sampling_json(c) : NULL;
    free(c);
    if (arr)
        cJSON_AddItemToObject(o, "sampling", arr);
    return arr != NULL;
}

void tool_add_counts(cJSON *o, const char *id, bool top_functions)
{
    struct collector_counts *c = counts_of(id);
    if (!c)
        return;
    if (top_functions && c->n > 0) {
        cJSON_DeleteItemFromObject(o, "topFunctions");
        cJSON *top = cJSON_AddArrayToObject(o, "topFunctions");
        for (size_t i = 0; i < c->n && i < TOP_FUNCTIONS; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "function", c->fns[i].function);
            if (c->fns[i].function_raw[0])
                cJSON_AddStringToObject(f, "functionRaw", c->fns[i].function_raw);
            cJSON_AddNumberToObject(f, "calls", (double)c->fns[i].calls);
            if (c->fns[i].recorded != c->fns[i].calls)
                cJSON_AddNumberToObject(f, "recorded", (double)c->fns[i].recorded);
            if (!c->fns[i].exact)
                cJSON_AddFalseToObject(f, "callsExact");
            cJSON_AddItemToArray(top, f);
        }
    }
    cJSON *arr = sampling_json(c);
    if (arr) {
        cJSON_DeleteItemFromObject(o, "sampling");
        cJSON_AddItemToObject(o, "sampling", arr);
    }
    add_overhead(o, c);
    free(c);
}
