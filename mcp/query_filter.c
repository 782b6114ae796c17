/*
 * query_filter.c - debug_query's filter object to a struct event_query. See
 * query_filter.h.
 *
 * text.matches is compiled here (base/regex.h), to reject a bad pattern with PCRE2's
 * own account of it before anything runs; the handle stays in the query, and the
 * store matches with it.
 */
#include "mcp/query_filter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/event.h"
#include "base/regex.h"
#include "base/timearg.h"
#include "mcp/args.h"

static const char *const filter_fields[] = {
    "eventType", "function", "sourceFile", "returnValue", "threadName", "text",
    "timeFrom", "timeTo", "minDurationNs", "pid", "openCalls", NULL};

/* A copy of s kept by f; *out points at it (NULL for NULL). */
static int own(struct query_filter *f, const char *s, const char **out, struct strobe_error *e)
{
    *out = NULL;
    if (!s)
        return 0;
    char *c = f->n_owned < QUERY_FILTER_STRINGS ? strdup(s) : NULL;
    if (!c)
        return err_set(e, ERR_INTERNAL, "out of memory reading the event filter");
    f->owned[f->n_owned++] = c;
    *out = c;
    return 0;
}

/* timeFrom / timeTo: integer ns, or a string timearg_parse() accepts. */
static int time_bound(const cJSON *args, const char *field, struct event_bound *b,
                      struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, field);
    b->set = v != NULL;
    if (!v)
        return 0;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d != floor(d) || d < 0 || d >= 9223372036854775808.0)
            return err_set(e, ERR_VALIDATION, "'%s' as a number is ns since the session "
                           "started: an integer from 0 to 2^63-1, not %g. For a time "
                           "relative to the latest event use a string like \"-5s\".",
                           field, d);
        b->ns = (int64_t)d;
        return 0;
    }
    if (!cJSON_IsString(v) || timearg_parse(v->valuestring, &b->ns, &b->relative) != 0)
        return err_set(e, ERR_VALIDATION, "'%s' must be ns since the session started (a "
                       "number) or a relative time like \"-5s\", \"-500ms\", \"-1m\"; got %s.",
                       field, cJSON_IsString(v) ? v->valuestring : args_type_name(v));
    return 0;
}

/* field: an object of string members named by keys (NULL-terminated); each present
 * one is copied into *outs[i]. */
static int string_filter(struct query_filter *f, const cJSON *args, const char *field,
                         const char *const *keys, const char **outs[], struct strobe_error *e)
{
    const cJSON *obj;
    if (args_object(args, field, &obj, e) != 0)
        return -1;
    if (!obj)
        return 0;
    if (args_only(obj, field, keys, e) != 0)
        return -1;
    for (int i = 0; keys[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, keys[i]);
        if (v && !cJSON_IsString(v))
            return err_set(e, ERR_VALIDATION, "'%s.%s' must be a string, not %s.", field,
                           keys[i], args_type_name(v));
        if (own(f, v ? v->valuestring : NULL, outs[i], e) != 0)
            return -1;
    }
    return 0;
}

static int event_type(const cJSON *args, struct event_query *q, struct strobe_error *e)
{
    const char *type = NULL;
    if (args_string(args, "eventType", false, &type, e) != 0)
        return -1;
    if (!type || (q->event_type = event_type_parse(type)))
        return 0;
    char list[256] = "";
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 t > EV_TYPE_MIN ? ", " : "", event_type_name(t));
    return err_set(e, ERR_VALIDATION, "'eventType' must be one of %s; not '%.100s'.", list,
                   type);
}

/* text: {contains} or {matches}, exactly one, a non-empty string of at most
 * QUERY_FILTER_TEXT_MAX bytes; matches must compile. */
static int text_filter(struct query_filter *f, const cJSON *args, struct strobe_error *e)
{
    static const char *const keys[] = {"contains", "matches", NULL};
    struct event_query *q = &f->q;
    const char **outs[] = {&q->text_contains, &q->text_matches};
    if (string_filter(f, args, "text", keys, outs, e) != 0)
        return -1;
    if (!cJSON_HasObjectItem(args, "text"))
        return 0;
    if (q->text_contains && q->text_matches)
        return err_set(e, ERR_VALIDATION, "'text' takes one of contains or matches, not "
                       "both: use text.contains for a plain substring or text.matches for "
                       "a regular expression (a substring is a regular expression too, "
                       "once its special characters are escaped).");
    const char *given = q->text_contains ? q->text_contains : q->text_matches;
    const char *name = q->text_contains ? "text.contains" : "text.matches";
    if (!given)
        return err_set(e, ERR_VALIDATION, "'text' needs contains (a case-sensitive "
                       "substring) or matches (a regular expression), e.g. {\"contains\": "
                       "\"error\"} or {\"matches\": \"timeout|refused\"}.");
    size_t len = strlen(given);
    if (len == 0)
        return err_set(e, ERR_VALIDATION, "'%s' is empty, which every line contains: give "
                       "the text to look for, or leave out the text filter.", name);
    if (len > QUERY_FILTER_TEXT_MAX)
        return err_set(e, ERR_VALIDATION, "'%s' is %zu bytes; at most %d: shorten it to a "
                       "distinctive part of the text.", name, len, QUERY_FILTER_TEXT_MAX);
    if (!q->text_matches)
        return 0;
    struct strobe_error why;
    q->text_re = regex_compile(q->text_matches, &why);
    if (!q->text_re)
        return err_set(e, why.code, "'text.matches' is not a valid regular "
                       "expression: %.200s. Pass a Perl-syntax regular expression (at most %d "
                       "bytes), e.g. \"timeout|refused\"; escape special characters such as "
                       "( [ . * with a backslash, or use text.contains for a plain substring.",
                       why.msg, QUERY_FILTER_TEXT_MAX);
    return 0;
}

static int return_filter(struct query_filter *f, const cJSON *args, struct strobe_error *e)
{
    const cJSON *rv;
    if (args_object(args, "returnValue", &rv, e) != 0)
        return -1;
    if (!rv)
        return 0;
    static const char *const rv_keys[] = {"equals", "isNull", NULL};
    bool is_null = false, has_null = cJSON_HasObjectItem(rv, "isNull");
    if (args_only(rv, "returnValue", rv_keys, e) != 0 ||
        args_bool(rv, "isNull", &is_null, e) != 0)
        return -1;
    if (has_null)
        f->q.return_null = is_null ? EVENT_RETURN_NULL : EVENT_RETURN_NOT_NULL;
    const cJSON *equals = cJSON_GetObjectItemCaseSensitive(rv, "equals");
    if (!equals)
        return 0;
    char *json = cJSON_PrintUnformatted(equals);
    int rc = own(f, json ? json : "", &f->q.return_equals, e);
    free(json);
    return json ? rc : err_set(e, ERR_INTERNAL, "out of memory reading the event filter");
}

/* The fields obj may hold: the filter's, then extra's. */
static int check_fields(const cJSON *obj, const char *where, const char *const *extra,
                        struct strobe_error *e)
{
    const char *allowed[32];
    size_t n = 0;
    for (const char *const *k = extra; k && *k && n < 20; k++)
        allowed[n++] = *k;
    for (const char *const *k = filter_fields; *k; k++)
        allowed[n++] = *k;
    allowed[n] = NULL;
    return args_only(obj, where, allowed, e);
}

int query_filter_parse(const cJSON *obj, const char *where, const char *const *extra,
                       struct query_filter *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    if (check_fields(obj, where, extra, e) != 0 || event_type(obj, &out->q, e) != 0)
        return -1;
    struct event_query *q = &out->q;
    static const char *const fn_keys[] = {"equals", "contains", "matches", NULL};
    static const char *const file_keys[] = {"equals", "contains", NULL};
    static const char *const thread_keys[] = {"contains", NULL};
    const char **fn_out[] = {&q->function_equals, &q->function_contains, &q->function_matches};
    const char **file_out[] = {&q->file_equals, &q->file_contains};
    const char **thread_out[] = {&q->thread_name_contains};
    if (string_filter(out, obj, "function", fn_keys, fn_out, e) != 0 ||
        string_filter(out, obj, "sourceFile", file_keys, file_out, e) != 0 ||
        string_filter(out, obj, "threadName", thread_keys, thread_out, e) != 0 ||
        text_filter(out, obj, e) != 0 || return_filter(out, obj, e) != 0)
        return -1;
    int64_t v;
    bool present;
    if (args_int(obj, "minDurationNs", 0, INT64_MAX / 2, &v, &present, e) != 0)
        return -1;
    q->min_duration_ns = present ? v : 0;
    if (args_int(obj, "pid", 1, 4194304, &v, &present, e) != 0)
        return -1;
    q->pid = present ? (int)v : 0;
    if (args_bool(obj, "openCalls", &q->open_calls, e) != 0)
        return -1;
    if (q->open_calls && q->event_type && q->event_type != EV_FUNCTION_ENTER)
        return err_set(e, ERR_VALIDATION, "'openCalls' selects function_enter events (the "
                       "calls not yet returned), so eventType '%s' finds none: leave out "
                       "eventType, or leave out openCalls.", event_type_name(q->event_type));
    if (time_bound(obj, "timeFrom", &q->from, e) != 0 ||
        time_bound(obj, "timeTo", &q->to, e) != 0)
        return -1;
    return 0;
}

void query_filter_explain(const struct query_filter *f, struct strobe_error *e)
{
    if (e->code != ERR_VALIDATION)
        return;
    const struct event_query *q = &f->q;
    struct strobe_error why = *e;
    if (q->function_matches && q->text_matches)
        err_set(e, ERR_VALIDATION, "%s. Simplify function.matches or text.matches (Perl "
                "syntax, at most 1024 bytes, no nested repetition such as (a+)+), or use "
                "function.contains / text.contains for plain substrings.", why.msg);
    else if (q->function_matches)
        err_set(e, ERR_VALIDATION, "'function.matches': %s. Pass a regular expression (Perl "
                "syntax, at most 1024 bytes), e.g. \"^parse_\", or use function.contains for "
                "a plain substring.", why.msg);
    else if (q->text_matches)
        err_set(e, ERR_VALIDATION, "'text.matches': %s. Simplify the regular expression "
                "(no nested repetition such as (a+)+, anchor it, or narrow it with eventType "
                "or timeFrom), or use text.contains for a plain substring.", why.msg);
}

void query_filter_free(struct query_filter *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_owned; i++)
        free(f->owned[i]);
    event_query_free_compiled(&f->q);
    memset(f, 0, sizeof *f);
}
