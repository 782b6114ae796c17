/*
 * tool_trace.c - debug_trace. Runtime mode (sessionId) changes the running
 * program's hooks through core/session, whose status states what was hooked (the
 * query hint is ours, mcp/hints.h); pending mode stages patterns that the next
 * debug_launch arms before the program's main runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/patterns.h"
#include "core/session.h"
#include "core/timeline.h"
#include "core/trace_watches.h"
#include "mcp/args.h"
#include "mcp/mem_targets.h"
#include "mcp/hints.h"
#include "mcp/tools.h"

static const char *const fields[] = {"sessionId", "add", "remove", "serializationDepth",
                                     "projectRoot", "watches", "traceMode", NULL};

/* traceMode: "fast" or "int3" (*fast), absent (*given false); -1 with
 * VALIDATION_ERROR otherwise, or without a session to change. */
static int trace_mode_arg(const cJSON *args, const char *id, bool *given, bool *fast,
                          struct strobe_error *e)
{
    const char *mode = NULL;
    *given = false;
    if (args_string(args, "traceMode", false, &mode, e) != 0)
        return -1;
    if (!mode)
        return 0;
    if (strcmp(mode, "fast") != 0 && strcmp(mode, "int3") != 0)
        return err_set(e, ERR_VALIDATION, "traceMode must be \"fast\" (the in-process "
                       "recorder) or \"int3\" (breakpoints, two stops per call), not '%s'.",
                       mode);
    if (!id)
        return err_set(e, ERR_VALIDATION, "traceMode changes a running session: give its "
                       "sessionId. For the next launch, set \"trace.mode\": \"%s\" in "
                       "<projectRoot>/.strobe/settings.json.", mode);
    *given = true;
    *fast = strcmp(mode, "fast") == 0;
    return 0;
}

static cJSON *strings(cJSON *parent, const char *name, const char (*list)[PATTERN_MAX_LEN],
                      int n)
{
    cJSON *arr = cJSON_AddArrayToObject(parent, name);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(list[i]));
    return arr;
}

/* ---- watches ------------------------------------------------------------------ */

static const char *const watch_fields[] = {"add", "remove", NULL};
static const char *const target_fields[] = {"variable", "address", "type", "label", "expr",
                                            "on", NULL};

static int watch_target(const cJSON *t, int i, struct tool_watches *w, struct strobe_error *e)
{
    char where[40];
    snprintf(where, sizeof where, "watches.add[%d]", i);
    if (!cJSON_IsObject(t))
        return err_set(e, ERR_VALIDATION, "'%s' must be an object {variable, label?, on?} "
                       "or {address, type, label?, on?}, not %s.", where, args_type_name(t));
    const char *variable = NULL, *address = NULL, *type = NULL, *label = NULL;
    const char **on = NULL;
    int n_on = 0;
    if (args_only(t, where, target_fields, e) != 0 ||
        args_string(t, "variable", false, &variable, e) != 0 ||
        args_string(t, "address", false, &address, e) != 0 ||
        args_string(t, "type", false, &type, e) != 0 ||
        args_string(t, "label", false, &label, e) != 0)
        return -1;
    if (cJSON_HasObjectItem(t, "expr"))
        return err_set(e, ERR_VALIDATION, "'%s.expr': JavaScript expressions are not "
                       "supported by the native collector; watch a variable (\"a->b[2].c\") "
                       "or an address with a type.", where);
    struct trace_watch_spec *s = &w->add[i];
    *s = (struct trace_watch_spec){.label = label};
    if (variable && address)
        return err_set(e, ERR_VALIDATION, "'%s' has both variable and address; give one.",
                       where);
    if (variable) {
        if (type)
            return err_set(e, ERR_VALIDATION, "'%s.type' goes with an address; a variable "
                           "is read by its own type.", where);
        s->variable = variable;
    } else if (address) {
        if (!mem_parse_address(address, &s->address))
            return err_set(e, ERR_VALIDATION, "'%s.address' must be a non-zero hex address "
                           "like \"0x4010a0\", not '%.64s'.", where, address);
        int hint = type ? memory_hint_parse(type) : -1;
        if (hint < 0 || hint == MEMH_BYTES)
            return err_set(e, ERR_VALIDATION, "'%s' needs a type with its address: i8, u8, "
                           "i16, u16, i32, u32, i64, u64, f32, f64 or pointer%s%.32s%s.", where,
                           type ? "; not '" : "", type ? type : "", type ? "'" : "");
        s->hint = (enum memory_hint)hint;
    } else {
        return err_set(e, ERR_VALIDATION, "'%s' needs a variable (\"cfg.max_retries\") or an "
                       "address with a type.", where);
    }
    char field[48];
    snprintf(field, sizeof field, "%s.on", where);
    const cJSON *onv = cJSON_GetObjectItemCaseSensitive(t, "on");
    if (onv) {
        cJSON *tmp = cJSON_CreateObject();
        cJSON_AddItemReferenceToObject(tmp, field, (cJSON *)onv);
        int rc = args_strings(tmp, field, &on, &n_on, e);
        cJSON_Delete(tmp);
        if (rc != 0)
            return -1;
    }
    if (n_on > TRACE_WATCH_ON_MAX) {
        free(on);
        return err_set(e, ERR_VALIDATION, "'%s' has %d patterns; at most %d.", field, n_on,
                       TRACE_WATCH_ON_MAX);
    }
    for (int k = 0; k < n_on; k++)
        w->on[i][k] = on[k];
    free(on);
    s->on = w->on[i];
    s->n_on = n_on;
    return trace_watch_check(s, e);
}

int tool_watches_parse(const cJSON *args, struct tool_watches *w, struct strobe_error *e)
{
    const cJSON *obj;
    if (args_object(args, "watches", &obj, e) != 0)
        return -1;
    if (!obj)
        return 0;
    w->present = true;
    if (args_only(obj, "watches", watch_fields, e) != 0)
        return -1;
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(obj, "add");
    if (add && !cJSON_IsArray(add))
        return err_set(e, ERR_VALIDATION, "'watches.add' must be an array of watch targets, "
                       "not %s.", args_type_name(add));
    int n = add ? cJSON_GetArraySize(add) : 0;
    if (n > TRACE_WATCHES_MAX)
        return err_set(e, ERR_LIMIT_EXCEEDED, "%d watches to add; a session has at most %d.",
                       n, TRACE_WATCHES_MAX);
    int i = 0;
    for (const cJSON *t = add ? add->child : NULL; t; t = t->next, i++)
        if (watch_target(t, i, w, e) != 0)
            return -1;
    w->n_add = n;
    return args_strings(obj, "remove", &w->remove, &w->n_remove, e);
}

static void add_watches(cJSON *out, const struct trace_watch_result *r, bool pending)
{
    cJSON *arr = cJSON_AddArrayToObject(out, "activeWatches");
    for (int i = 0; r && i < r->n; i++) {
        const struct trace_watch_info *w = &r->watches[i];
        cJSON *o = cJSON_CreateObject();
        char addr[24];
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)w->address);
        cJSON_AddStringToObject(o, "label", w->label);
        if (w->variable[0])
            cJSON_AddStringToObject(o, "variable", w->variable);
        else
            cJSON_AddStringToObject(o, "address", addr);
        if (w->n_on) {
            cJSON *on = cJSON_AddArrayToObject(o, "on");
            for (int k = 0; k < w->n_on; k++)
                cJSON_AddItemToArray(on, cJSON_CreateString(w->on[k]));
        }
        if (!pending && w->variable[0] && w->address)
            cJSON_AddStringToObject(o, "resolvedAddress", addr);
        if (w->type[0])
            cJSON_AddStringToObject(o, "type", w->type);
        if (!pending && w->size)
            cJSON_AddNumberToObject(o, "size", (double)w->size);
        if (pending)
            cJSON_AddTrueToObject(o, "pending");
        cJSON_AddItemToArray(arr, o);
    }
}

void tool_pattern_results(cJSON *out, const struct trace_result *r)
{
    cJSON *arr = cJSON_AddArrayToObject(out, "patterns");
    for (int i = 0; i < r->n_patterns; i++) {
        const struct pattern_result *p = &r->per_pattern[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pattern", r->patterns[i]);
        cJSON_AddNumberToObject(o, "matched", (double)p->matched);
        cJSON_AddNumberToObject(o, "armed", (double)p->armed);
        if (p->warning[0])
            cJSON_AddStringToObject(o, "warning", p->warning);
        cJSON_AddItemToArray(arr, o);
    }
}

void tool_add_pattern_status(cJSON *out, const char *id)
{
    struct trace_result *r = malloc(sizeof *r);
    struct strobe_error e = {0};
    if (r && session_trace_describe(id, r, &e) == 0 && r->n_patterns > 0)
        tool_pattern_results(out, r);
    free(r);
}

static cJSON *answer(const char *mode, const struct trace_result *r,
                     const struct settings *settings)
{
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "mode", mode);
    strings(out, "activePatterns", r->patterns, r->n_patterns);
    cJSON_AddNumberToObject(out, "hookedFunctions", (double)r->hooked);
    cJSON_AddNumberToObject(out, "matchedFunctions", (double)r->matched);
    cJSON *warnings = cJSON_AddArrayToObject(out, "warnings");
    for (int i = 0; i < r->n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(r->warnings[i]));
    for (int i = 0; i < settings->n_warnings; i++)
        cJSON_AddItemToArray(warnings, cJSON_CreateString(settings->warnings[i]));
    cJSON_AddNumberToObject(out, "eventLimit", (double)settings->events_max_per_session);
    cJSON_AddNumberToObject(out, "serializationDepth", r->depth);
    cJSON_AddStringToObject(out, "status", r->status);
    return out; /* sampling and overhead: tool_add_counts */
}

/* staged: [{pattern, lastLaunch?: {sessionId, program}}]: each staged pattern with
 * the program it was last armed in (none yet: no lastLaunch). */
static void add_staged(cJSON *out, const struct trace_result *r)
{
    cJSON *arr = cJSON_AddArrayToObject(out, "staged");
    for (int i = 0; i < r->n_patterns; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "pattern", r->patterns[i]);
        char id[64], program[256];
        if (patterns_pending_last_launch(r->patterns[i], id, sizeof id, program,
                                         sizeof program)) {
            cJSON *l = cJSON_AddObjectToObject(o, "lastLaunch");
            cJSON_AddStringToObject(l, "sessionId", id);
            cJSON_AddStringToObject(l, "program", program);
        }
        cJSON_AddItemToArray(arr, o);
    }
}

static cJSON *pending_mode(const char **add, int n_add, const char **remove, int n_remove,
                           int depth, const struct settings *settings, struct strobe_error *e)
{
    for (int i = 0; i < n_add; i++)
        if (patterns_pending_add(add[i], e) != 0)
            return NULL;
    for (int i = 0; i < n_remove; i++)
        patterns_pending_remove(remove[i]);
    if (depth)
        patterns_pending_set_depth(depth);
    static struct trace_result r; /* large: kept off the stack, guarded below */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    memset(&r, 0, sizeof r);
    r.n_patterns = patterns_pending_list(r.patterns, PATTERNS_MAX);
    if (r.n_patterns > PATTERNS_MAX)
        r.n_patterns = PATTERNS_MAX;
    r.depth = patterns_pending_depth();
    hint_trace_pending(r.n_patterns, r.status, sizeof r.status);
    cJSON *out = answer("pending", &r, settings);
    add_staged(out, &r);
    cJSON_AddArrayToObject(out, "activeWatches");
    pthread_mutex_unlock(&lock);
    return out;
}

/* How long the ended session id ran, in ms; -1 when unknown. */
static int64_t run_ms(struct tool_ctx *ctx, const char *id)
{
    struct strobe_error e = {0};
    struct timeline_reader *rd = tool_reader(ctx, &e);
    struct timeline_status st;
    if (!rd || timeline_status(rd, id, &st, &e) != 0)
        return -1;
    int64_t ms = st.session.ended_at_ms ? st.session.ended_at_ms - st.session.started_at_ms : -1;
    timeline_status_free(&st);
    return ms;
}

/* e (PROCESS_EXITED) gets the advice for a program that ran as long as id did. */
static void advise_exited(struct tool_ctx *ctx, const char *id, struct strobe_error *e)
{
    size_t len = strlen(e->msg);
    snprintf(e->msg + len, sizeof e->msg - len, " %s", hint_trace_exited(run_ms(ctx, id)));
}

cJSON *tool_debug_trace(struct tool_ctx *ctx, const cJSON *args, struct strobe_error *e)
{
    const char *id = NULL, *root = NULL;
    const char **add = NULL, **remove = NULL;
    int n_add = 0, n_remove = 0;
    int64_t depth = 0;
    bool mode_given = false, fast = false;
    cJSON *out = NULL;
    struct tool_watches *w = NULL;
    struct trace_watch_result *wr = NULL;
    if (args_only(args, "debug_trace", fields, e) != 0 ||
        args_string(args, "sessionId", false, &id, e) != 0 ||
        args_string(args, "projectRoot", false, &root, e) != 0 ||
        args_int(args, "serializationDepth", 1, 10, &depth, NULL, e) != 0 ||
        args_strings(args, "add", &add, &n_add, e) != 0 ||
        args_strings(args, "remove", &remove, &n_remove, e) != 0 ||
        trace_mode_arg(args, id, &mode_given, &fast, e) != 0)
        goto done;
    for (int i = 0; i < n_add; i++)
        if (pattern_check(add[i], e) != 0)
            goto done;
    w = calloc(1, sizeof *w);
    wr = malloc(sizeof *wr);
    if (!w || !wr) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto done;
    }
    if (tool_watches_parse(args, w, e) != 0)
        goto done;
    struct settings settings;
    sessions_settings(root, &settings);
    if (!id) {
        /* Watches first: they are checked whole, patterns cannot fail after that. */
        if (w->present ? trace_watches_pending_update(w->add, w->n_add, w->remove,
                                                      w->n_remove, wr, e) != 0
                       : (trace_watches_pending_list(wr), 0))
            goto done;
        out = pending_mode(add, n_add, remove, n_remove, (int)depth, &settings, e);
        if (out) {
            cJSON_DeleteItemFromObject(out, "activeWatches");
            add_watches(out, wr, true);
        }
        goto done;
    }
    struct trace_result *r = malloc(sizeof *r);
    if (!r) {
        err_set(e, ERR_INTERNAL, "out of memory");
        goto done;
    }
    /* Watches first: a watch that cannot be resolved changes nothing. */
    int wrc = session_trace_watches(id, w->present ? w->add : NULL, w->n_add, w->remove,
                                    w->n_remove, wr, e);
    if (wrc != 0 && (w->present || e->code != ERR_NOT_IMPLEMENTED)) {
        free(r);
        goto done;
    }
    if (wrc != 0)
        wr->n = 0; /* a collector without watches: patterns still work */
    /* The mode first: the patterns added by this call take it. */
    if (mode_given && session_trace_mode(id, fast, e) != 0) {
        free(r);
        goto done;
    }
    if (session_trace(id, add, n_add, remove, n_remove, (int)depth, r, e) == 0) {
        const char *hint = hint_trace_status(r);
        size_t len = strlen(r->status);
        if (hint)
            snprintf(r->status + len, sizeof r->status - len, " %s", hint);
        out = answer("runtime", r, &settings);
        tool_pattern_results(out, r);
        if (r->in_progress)
            cJSON_AddNumberToObject(out, "inProgressCalls", (double)r->in_progress);
        if (r->in_progress_lost)
            cJSON_AddNumberToObject(out, "inProgressLost", (double)r->in_progress_lost);
        tool_add_counts(out, id, false);
        add_watches(out, wr, false);
        if (w->present && wr->n && r->n_patterns == 0) {
            len = strlen(r->status);
            snprintf(r->status + len, sizeof r->status - len, " Watch values are read at "
                     "traced calls only: add patterns for the functions to watch them in.");
            cJSON_ReplaceItemInObject(out, "status", cJSON_CreateString(r->status));
        }
    }
    free(r);
done:
    if (!out && id && e->code == ERR_PROCESS_EXITED)
        advise_exited(ctx, id, e);
    if (w)
        free(w->remove);
    free(w);
    free(wr);
    free(add);
    free(remove);
    return out;
}
