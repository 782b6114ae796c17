/*
 * timeline.c - the engine's read API over the store. See timeline.h.
 *
 * A thin layer on purpose: the store answers the queries (store/query.c plans them);
 * this file owns what a reader of a session needs beyond SQL: relative time bounds,
 * the query defaults, telling an invalid regex (the caller's mistake) from a failing
 * database, and the crash context join.
 */
#include "core/timeline.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/event.h"
#include "base/failure_text.h"
#include "base/regex.h"
#include "base/strbuf.h"
#include "core/crash_payload.h"

struct timeline_reader {
    struct store *db;
    struct store_reader *r;
};

struct timeline_reader *timeline_reader_open(struct store *db, struct strobe_error *e)
{
    struct timeline_reader *rd = calloc(1, sizeof *rd);
    if (!rd) {
        err_set(e, ERR_INTERNAL, "out of memory opening a database reader");
        return NULL;
    }
    char *err = NULL;
    rd->db = db;
    rd->r = db ? store_reader_open(db, &err) : NULL;
    if (!rd->r) {
        err_set(e, ERR_INTERNAL, "cannot open the database for reading: %s",
                err ? err : "no database");
        free(err);
        free(rd);
        return NULL;
    }
    return rd;
}

void timeline_reader_close(struct timeline_reader *rd)
{
    if (!rd)
        return;
    store_reader_close(rd->r);
    free(rd);
}

/* ---- events ------------------------------------------------------------------ */

/* b resolved to ns since the session started. */
static int resolve_bound(struct timeline_reader *rd, int64_t key,
                         const struct timeline_bound *b, int64_t *ns, struct strobe_error *e)
{
    *ns = b->ns;
    if (!b->relative)
        return 0;
    int64_t latest = 0;
    if (store_latest_ts(rd->r, key, &latest) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read the session's latest event time");
    *ns = latest + b->ns < 0 ? 0 : latest + b->ns;
    return 0;
}

/* The store reports an invalid regex like any other failure; it is the caller's
 * mistake, not the database's, so it is told apart before the query runs. what
 * names the filter in the sentence ("function name", "text"). */
static int check_regex(const char *pattern, const char *what, struct strobe_error *e)
{
    char why[200];
    struct regex *re = regex_compile(pattern, why, sizeof why);
    if (re) {
        regex_free(re);
        return 0;
    }
    return err_set(e, ERR_VALIDATION, "the %s pattern \"%.200s\" is not a valid "
                   "regular expression, or is beyond the limits: %s", what, pattern, why);
}

static void page_from_result(struct timeline_page *p, struct store_result *res)
{
    p->events = res->rows;
    p->n = res->n;
    p->total_count = res->total_count;
    p->total_is_lower_bound = res->total_is_lower_bound;
    p->has_more = res->has_more;
    memset(res, 0, sizeof *res);
}

/* Runs sq, the store's form of a query, into out. */
static int run_query(struct timeline_reader *rd, const struct store_query *sq,
                     struct timeline_page *out, struct strobe_error *e)
{
    struct store_result res;
    char *err = NULL;
    int rc = store_query_events(rd->r, sq, &res, &err);
    if (rc == STORE_E_PATTERN) {
        err_set(e, ERR_VALIDATION, "%s", err ? err : "the function name pattern is too costly");
        free(err);
        return -1;
    }
    if (rc != 0) {
        err_set(e, ERR_INTERNAL, "cannot read the session's events: %s",
                err ? err : "the query failed");
        free(err);
        return -1;
    }
    page_from_result(out, &res);
    return 0;
}

/* q in the store's form, relative bounds resolved. */
static int store_form(struct timeline_reader *rd, int64_t session_key,
                      const struct timeline_query *q, struct store_query *sq,
                      struct strobe_error *e)
{
    if ((q->function_matches && check_regex(q->function_matches, "function name", e) != 0) ||
        (q->text_matches && check_regex(q->text_matches, "text", e) != 0))
        return -1;
    *sq = (struct store_query){
        .session_key = session_key,
        .event_type = q->event_type,
        .function_equals = q->function_equals,
        .function_contains = q->function_contains,
        .function_matches = q->function_matches,
        .file_equals = q->file_equals,
        .file_contains = q->file_contains,
        .return_equals = q->return_equals,
        .return_is_null = q->return_null == TIMELINE_RETURN_NULL       ? 1
                          : q->return_null == TIMELINE_RETURN_NOT_NULL ? 0
                                                                       : -1,
        .thread_name_contains = q->thread_name_contains,
        .text_contains = q->text_contains,
        .text_matches = q->text_matches,
        .has_time_from = q->from.set,
        .has_time_to = q->to.set,
        .min_duration_ns = q->min_duration_ns,
        .pid = q->pid,
        .open_calls = q->open_calls,
        .after_id = q->after_id,
        .limit = q->limit > 0 ? q->limit : TIMELINE_DEFAULT_LIMIT,
        .offset = q->offset,
    };
    if ((q->from.set && resolve_bound(rd, session_key, &q->from, &sq->time_from_ns, e) != 0) ||
        (q->to.set && resolve_bound(rd, session_key, &q->to, &sq->time_to_ns, e) != 0))
        return -1;
    return 0;
}

int timeline_events(struct timeline_reader *rd, int64_t session_key,
                    const struct timeline_query *q, struct timeline_page *out,
                    struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    struct store_query sq;
    if (store_form(rd, session_key, q, &sq, e) != 0)
        return -1;
    return run_query(rd, &sq, out, e);
}

int timeline_first_match(struct timeline_reader *rd, int64_t session_key,
                         const struct timeline_query *q, int64_t after_event_id,
                         struct store_event_row *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    struct store_query sq;
    if (store_form(rd, session_key, q, &sq, e) != 0)
        return -1;
    sq.after_id = after_event_id > 0 ? after_event_id : 0;
    sq.limit = 1;
    sq.offset = 0;
    sq.skip_total = true;
    struct timeline_page page;
    if (run_query(rd, &sq, &page, e) != 0)
        return -1;
    int found = page.n > 0;
    if (found) {
        *out = page.events[0];
        page.n = 0; /* moved to *out */
    }
    timeline_page_free(&page);
    return found;
}

void timeline_page_free(struct timeline_page *p)
{
    if (!p)
        return;
    struct store_result res = {.rows = p->events, .n = p->n};
    store_result_free(&res);
    memset(p, 0, sizeof *p);
}

int timeline_pids(struct timeline_reader *rd, int64_t session_key, int **pids, int *n,
                  struct strobe_error *e)
{
    if (store_query_pids(rd->r, session_key, pids, n) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read the processes of the session");
    return 0;
}

int timeline_evicted(struct timeline_reader *rd, int64_t session_key,
                     struct store_evicted **rows, int *n, struct strobe_error *e)
{
    if (store_evicted_by_function(rd->r, session_key, rows, n) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read what the event cap evicted");
    return 0;
}

void timeline_evicted_free(struct store_evicted *rows, int n)
{
    store_evicted_free(rows, n);
}

/* ---- sessions ------------------------------------------------------------------ */

int timeline_sessions(struct timeline_reader *rd, struct session_row **rows, int *n,
                      struct strobe_error *e)
{
    char *err = NULL;
    if (store_session_list(rd->db, rows, n, &err) != 0) {
        err_set(e, ERR_INTERNAL, "cannot list sessions: %s", err ? err : "?");
        free(err);
        return -1;
    }
    return 0;
}

void timeline_sessions_free(struct session_row *rows, int n)
{
    for (int i = 0; i < n; i++)
        session_row_free(&rows[i]);
    free(rows);
}

int timeline_status(struct timeline_reader *rd, const char *id, struct session_status *out,
                    struct strobe_error *e)
{
    return session_status(id, rd->r, out, e);
}

/* ---- crash context --------------------------------------------------------------- */

/* The latest `limit` events of the session (of type, 0 = any) up to the crash's
 * timestamp, oldest first. */
static int events_up_to(struct timeline_reader *rd, int64_t key,
                        const struct store_event_row *crash, int type, int limit,
                        struct timeline_page *out, struct strobe_error *e)
{
    struct store_query sq = {
        .session_key = key, .event_type = type, .return_is_null = -1, .has_time_to = true,
        .time_to_ns = crash->ts_ns, .limit = limit, .latest = true,
    };
    return run_query(rd, &sq, out, e);
}

/* The events before the crash: one more than kept is read, since the crash itself
 * is among those up to its timestamp. */
static int join_before(struct timeline_reader *rd, int64_t key,
                       const struct store_event_row *crash, struct timeline_crash_context *c,
                       struct strobe_error *e)
{
    struct timeline_page *p = &c->before;
    if (events_up_to(rd, key, crash, 0, CRASH_LAST_EVENTS + 1, p, e) != 0)
        return -1;
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->events[i].id == crash->id)
            store_event_row_free(&p->events[i]);
        else
            p->events[k++] = p->events[i];
    }
    int drop = k > CRASH_LAST_EVENTS ? k - CRASH_LAST_EVENTS : 0; /* the oldest */
    for (int i = 0; i < drop; i++)
        store_event_row_free(&p->events[i]);
    memmove(p->events, p->events + drop, (size_t)(k - drop) * sizeof *p->events);
    p->n = k - drop;
    c->has_before = true;
    return 0;
}

/* The runtime's account: failure_text.h reads the stderr lines before the crash
 * and writes what it finds as JSON members; the one this crash's kind wants is
 * kept. */
static int join_account(struct timeline_reader *rd, int64_t key,
                        const struct store_event_row *crash, struct timeline_crash_context *c,
                        struct strobe_error *e)
{
    c->account_name = crash->data ? crash_payload_account_wanted(crash->data) : NULL;
    if (!c->account_name)
        return 0;
    struct timeline_page lines;
    if (events_up_to(rd, key, crash, EV_STDERR, CRASH_STDERR_LINES, &lines, e) != 0)
        return -1;
    const char **text = calloc((size_t)lines.n + 1, sizeof *text);
    if (!text) {
        timeline_page_free(&lines);
        return err_set(e, ERR_INTERNAL, "out of memory reading the output before a crash");
    }
    for (int i = 0; i < lines.n; i++)
        text[i] = lines.events[i].text ? lines.events[i].text : "";
    struct strbuf sb = {0};
    sb_puts(&sb, "{\"_\":0");
    failure_scan_stderr(&sb, text, (size_t)lines.n);
    sb_puts(&sb, "}");
    cJSON *all = cJSON_Parse(sb.buf);
    cJSON *account = cJSON_GetObjectItemCaseSensitive(all, c->account_name);
    if (account)
        c->account_json = cJSON_PrintUnformatted(account);
    size_t first, last;
    if (account && strcmp(c->account_name, "sanitizer") == 0 &&
        failure_sanitizer_span(text, (size_t)lines.n, &first, &last)) {
        c->report_first_id = lines.events[first].id;
        c->report_last_id = lines.events[last].id;
    }
    cJSON_Delete(all);
    sb_free(&sb);
    free(text);
    timeline_page_free(&lines);
    return 0;
}

int timeline_crash_context(struct timeline_reader *rd, int64_t session_key,
                           const struct store_event_row *crash,
                           struct timeline_crash_context *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    int rc = join_before(rd, session_key, crash, out, e);
    if (join_account(rd, session_key, crash, out, e) != 0)
        rc = -1;
    return rc;
}

void timeline_crash_context_free(struct timeline_crash_context *c)
{
    if (!c)
        return;
    timeline_page_free(&c->before);
    free(c->account_json);
    memset(c, 0, sizeof *c);
}

int64_t timeline_last_id(struct timeline_reader *rd, int64_t session_key)
{
    int64_t id = 0;
    store_latest_id(rd->r, session_key, &id);
    return id;
}
