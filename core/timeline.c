/*
 * timeline.c - the engine's read API over the store. See timeline.h.
 *
 * A thin layer on purpose: the store answers the queries (store/query.c plans them);
 * this file owns what a reader of a session needs beyond SQL: relative time bounds,
 * the query defaults, compiling the query's patterns (an invalid one is the caller's
 * mistake, told apart from a failing database), moving the store's rows into the
 * API's own (the one place they are converted), a session's status, and the crash
 * context join.
 */
#include "core/timeline.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/failure_text.h"
#include "base/regex.h"
#include "base/strbuf.h"
#include "core/crash_payload.h"
#include "core/session.h"
#include "store/store.h"

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
    struct strobe_error why = {.msg = "no database"};
    rd->db = db;
    rd->r = db ? store_reader_open(db, &why) : NULL;
    if (!rd->r) {
        err_set(e, ERR_INTERNAL, "cannot open the database for reading: %s", why.msg);
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

/* ---- the store's rows into the API's ------------------------------------------ */

/* Each moves one row: the scalars are copied, the strings change owner (the store
 * row's pointers are then nobody's: its array is freed, never its strings). */

static void take_event(void *to, const void *from)
{
    const struct store_event_row *f = from;
    *(struct timeline_event *)to = (struct timeline_event){
        .id = f->id, .type = f->type, .ts_ns = f->ts_ns, .pid = f->pid, .tid = f->tid,
        .thread_name = f->thread_name, .parent_id = f->parent_id, .function = f->function,
        .function_raw = f->function_raw, .source_file = f->source_file, .line = f->line,
        .arguments = f->arguments, .return_value = f->return_value, .text = f->text,
        .data = f->data, .duration_ns = f->duration_ns, .sampled = f->sampled,
    };
}

/* The store's key stays behind: readers name a session by its id. */
static void take_session(void *to, const void *from)
{
    const struct session_row *f = from;
    *(struct timeline_session *)to = (struct timeline_session){
        .id = f->id, .binary_path = f->binary_path, .project_root = f->project_root,
        .command_line = f->command_line, .pid = f->pid, .started_at_ms = f->started_at_ms,
        .ended_at_ms = f->ended_at_ms, .status = f->status, .exit_code = f->exit_code,
        .has_exit_code = f->has_exit_code, .exit_signal = f->exit_signal,
        .retained = f->retained, .event_count = f->event_count,
    };
}

static void take_evicted(void *to, const void *from)
{
    const struct store_evicted *f = from;
    *(struct timeline_evicted *)to = (struct timeline_evicted){
        .function = f->function, .events = f->events, .through_ns = f->through_ns,
    };
}

static void take_function(void *to, const void *from)
{
    const struct function_count *f = from;
    *(struct timeline_function *)to = (struct timeline_function){
        .function = f->function, .function_raw = f->function_raw, .count = f->count,
        .sampled = f->sampled,
    };
}

/* A new array of the n store rows at from (from_size bytes each), each moved into a
 * row of to_size bytes by take; the caller then frees from's array alone. NULL when
 * memory runs out, from left whole. */
static void *take_all(const void *from, size_t from_size, int n, size_t to_size,
                      void (*take)(void *to, const void *from))
{
    char *rows = calloc(n > 0 ? (size_t)n : 1, to_size);
    for (int i = 0; rows && i < n; i++)
        take(rows + (size_t)i * to_size, (const char *)from + (size_t)i * from_size);
    return rows;
}

void timeline_event_free(struct timeline_event *ev)
{
    free(ev->thread_name);
    free(ev->function);
    free(ev->function_raw);
    free(ev->source_file);
    free(ev->arguments);
    free(ev->return_value);
    free(ev->text);
    free(ev->data);
}

/* ---- events ------------------------------------------------------------------ */

/* b made absolute: ns since the session started. */
static int resolve_bound(struct timeline_reader *rd, int64_t key, struct event_bound *b,
                         struct strobe_error *e)
{
    if (!b->set || !b->relative)
        return 0;
    int64_t latest = 0;
    if (store_latest_ts(rd->r, key, &latest) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read the session's latest event time");
    b->ns = latest + b->ns < 0 ? 0 : latest + b->ns;
    b->relative = false;
    return 0;
}

/* pattern compiled into *re, unless it is absent or already compiled. The store
 * matches handles and never compiles, so an invalid pattern, the caller's mistake,
 * is told here and never looks like a failing database. what names the filter in the
 * sentence ("function name", "text"). */
static int compile(const char *pattern, struct regex **re, const char *what,
                   struct strobe_error *e)
{
    if (!pattern || *re)
        return 0;
    struct strobe_error why;
    *re = regex_compile(pattern, &why);
    if (*re)
        return 0;
    return err_set(e, why.code, "the %s pattern \"%.200s\" is not a valid regular "
                   "expression, or is beyond the limits: %.200s", what, pattern, why.msg);
}

/* Runs q, in the store's terms (bounds absolute, patterns compiled), into out. */
static int run_query(struct timeline_reader *rd, int64_t key, const struct event_query *q,
                     int flags, struct timeline_page *out, struct strobe_error *e)
{
    struct store_result res;
    struct strobe_error why;
    int rc = store_query_events(rd->r, key, q, flags, &res, &why);
    /* The store's sentence names the caller's pattern: the agent sees it as it is. A
     * failure of ours (the database, a query not in the store's terms) is told as
     * the read that failed, whatever the store's code. */
    if (rc == STORE_E_PATTERN)
        return err_set(e, ERR_VALIDATION, "%s", why.msg);
    if (rc != 0)
        return err_set(e, ERR_INTERNAL, "cannot read the session's events: %s", why.msg);
    out->events = take_all(res.rows, sizeof *res.rows, res.n, sizeof *out->events,
                           take_event);
    if (!out->events) {
        store_result_free(&res);
        return err_set(e, ERR_INTERNAL, "out of memory reading the session's events");
    }
    out->n = res.n;
    out->total_count = res.total_count;
    out->total_is_lower_bound = res.total_is_lower_bound;
    out->has_more = res.has_more;
    free(res.rows);
    return 0;
}

/* q's patterns compiled (into q: they serve its next reads too), then *abs, what the
 * store reads: q with its bounds made absolute and its default page. A struct copy,
 * sharing q's strings and handles. */
static int store_form(struct timeline_reader *rd, int64_t session_key, struct event_query *q,
                      struct event_query *abs, struct strobe_error *e)
{
    if (compile(q->function_matches, &q->function_re, "function name", e) != 0 ||
        compile(q->text_matches, &q->text_re, "text", e) != 0)
        return -1;
    *abs = *q;
    if (abs->limit <= 0)
        abs->limit = TIMELINE_DEFAULT_LIMIT;
    if (resolve_bound(rd, session_key, &abs->from, e) != 0 ||
        resolve_bound(rd, session_key, &abs->to, e) != 0)
        return -1;
    return 0;
}

int timeline_events(struct timeline_reader *rd, int64_t session_key, struct event_query *q,
                    struct timeline_page *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    struct event_query abs;
    if (store_form(rd, session_key, q, &abs, e) != 0)
        return -1;
    return run_query(rd, session_key, &abs, 0, out, e);
}

int timeline_first_match(struct timeline_reader *rd, int64_t session_key,
                         struct event_query *q, int64_t after_event_id,
                         struct timeline_event *out, struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    struct event_query abs;
    if (store_form(rd, session_key, q, &abs, e) != 0)
        return -1;
    abs.after_id = after_event_id > 0 ? after_event_id : 0;
    abs.limit = 1;
    abs.offset = 0;
    struct timeline_page page;
    if (run_query(rd, session_key, &abs, STORE_QUERY_NO_TOTAL, &page, e) != 0)
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
    for (int i = 0; i < p->n; i++)
        timeline_event_free(&p->events[i]);
    free(p->events);
    memset(p, 0, sizeof *p);
}

int timeline_mark(struct timeline_reader *rd, int64_t session_key, struct timeline_mark *m,
                  struct strobe_error *e)
{
    struct store_mark sm;
    int rc = store_session_mark(rd->r, session_key, &sm);
    *m = (struct timeline_mark){sm.last_id, sm.recorded};
    return rc == 0 ? 0 : err_set(e, ERR_INTERNAL, "cannot read where the session's timeline "
                                 "stands");
}

int timeline_pids(struct timeline_reader *rd, int64_t session_key, int **pids, int *n,
                  struct strobe_error *e)
{
    if (store_query_pids(rd->r, session_key, pids, n) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read the processes of the session");
    return 0;
}

int timeline_evicted(struct timeline_reader *rd, int64_t session_key,
                     struct timeline_evicted **rows, int *n, struct strobe_error *e)
{
    struct store_evicted *got;
    int got_n;
    if (store_evicted_by_function(rd->r, session_key, &got, &got_n) != 0)
        return err_set(e, ERR_INTERNAL, "cannot read what the event cap evicted");
    *rows = take_all(got, sizeof *got, got_n, sizeof **rows, take_evicted);
    if (!*rows) {
        store_evicted_free(got, got_n);
        return err_set(e, ERR_INTERNAL, "out of memory reading what the event cap evicted");
    }
    free(got);
    *n = got_n;
    return 0;
}

int timeline_evicted_types(struct timeline_reader *rd, int64_t session_key,
                           struct timeline_evicted_type out[EV_TYPE_MAX + 1],
                           struct strobe_error *e)
{
    struct store_evicted_type got[EV_TYPE_MAX + 1];
    if (store_evicted_by_type(rd->r, session_key, got) != 0) {
        memset(out, 0, sizeof *out * (EV_TYPE_MAX + 1));
        return err_set(e, ERR_INTERNAL, "cannot read what the event cap evicted");
    }
    for (int t = 0; t <= EV_TYPE_MAX; t++)
        out[t] = (struct timeline_evicted_type){got[t].events, got[t].through_ns,
                                                got[t].through_id};
    return 0;
}

int64_t timeline_oldest_kept(struct timeline_reader *rd, int64_t session_key,
                             unsigned type_mask)
{
    int64_t id = 0;
    store_oldest_kept(rd->r, session_key, type_mask, &id);
    return id;
}

void timeline_evicted_free(struct timeline_evicted *rows, int n)
{
    for (int i = 0; i < n; i++)
        free(rows[i].function);
    free(rows);
}

/* ---- sessions ------------------------------------------------------------------ */

static void session_free(struct timeline_session *s)
{
    free(s->id);
    free(s->binary_path);
    free(s->project_root);
    free(s->command_line);
    free(s->status);
    free(s->exit_signal);
}

int timeline_sessions(struct timeline_reader *rd, struct timeline_session **rows, int *n,
                      struct strobe_error *e)
{
    struct session_row *got;
    int got_n;
    struct strobe_error why;
    if (store_session_list(rd->db, &got, &got_n, &why) != 0)
        return err_set(e, ERR_INTERNAL, "cannot list sessions: %s", why.msg);
    *rows = take_all(got, sizeof *got, got_n, sizeof **rows, take_session);
    if (!*rows) {
        for (int i = 0; i < got_n; i++)
            session_row_free(&got[i]);
        free(got);
        return err_set(e, ERR_INTERNAL, "out of memory listing sessions");
    }
    free(got);
    *n = got_n;
    return 0;
}

void timeline_sessions_free(struct timeline_session *rows, int n)
{
    for (int i = 0; i < n; i++)
        session_free(&rows[i]);
    free(rows);
}

static void top_free(struct timeline_function *top, int n)
{
    for (int i = 0; i < n; i++) {
        free(top[i].function);
        free(top[i].function_raw);
    }
    free(top);
}

/* The 10 most called functions of the session, into st. */
static int top_functions(struct timeline_reader *rd, int64_t key, struct timeline_status *st)
{
    struct function_count *got;
    int got_n;
    if (store_count_by_function(rd->r, key, 10, &got, &got_n) != 0)
        return -1;
    st->top = take_all(got, sizeof *got, got_n, sizeof *st->top, take_function);
    if (!st->top) {
        for (int i = 0; i < got_n; i++) {
            free(got[i].function);
            free(got[i].function_raw);
        }
        free(got);
        return -1;
    }
    free(got);
    st->n_top = got_n;
    return 0;
}

int timeline_status(struct timeline_reader *rd, const char *id, struct timeline_status *out,
                    struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    int64_t key;
    if (session_resolve(id, &key, e) != 0)
        return -1;
    struct session_row row;
    if (store_session_get(rd->db, id, &row) != 0)
        return session_not_found(id, e);
    take_session(&out->session, &row);
    out->output_capped = session_output_capped(id);
    out->lost_events = store_session_lost(rd->db, key, out->store_error,
                                          sizeof out->store_error);
    if (store_count_by_type(rd->r, key, out->counts) != 0 ||
        store_query_pids(rd->r, key, &out->pids, &out->n_pids) != 0 ||
        top_functions(rd, key, out) != 0) {
        timeline_status_free(out);
        return err_set(e, ERR_INTERNAL, "cannot count the events of session '%s'", id);
    }
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        out->total_events += out->counts[t];
    return 0;
}

void timeline_status_free(struct timeline_status *st)
{
    session_free(&st->session);
    free(st->pids);
    top_free(st->top, st->n_top);
    memset(st, 0, sizeof *st);
}

/* ---- crash context --------------------------------------------------------------- */

/* The latest `limit` events of the session (of type, 0 = any) up to the crash's
 * timestamp, oldest first. */
static int events_up_to(struct timeline_reader *rd, int64_t key,
                        const struct timeline_event *crash, int type, int limit,
                        struct timeline_page *out, struct strobe_error *e)
{
    struct event_query q = {
        .event_type = type, .to = {.set = true, .ns = crash->ts_ns}, .limit = limit,
    };
    return run_query(rd, key, &q, STORE_QUERY_LATEST, out, e);
}

/* The events before the crash: one more than kept is read, since the crash itself
 * is among those up to its timestamp. */
static int join_before(struct timeline_reader *rd, int64_t key,
                       const struct timeline_event *crash, struct timeline_crash_context *c,
                       struct strobe_error *e)
{
    struct timeline_page *p = &c->before;
    if (events_up_to(rd, key, crash, 0, CRASH_LAST_EVENTS + 1, p, e) != 0)
        return -1;
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->events[i].id == crash->id)
            timeline_event_free(&p->events[i]);
        else
            p->events[k++] = p->events[i];
    }
    int drop = k > CRASH_LAST_EVENTS ? k - CRASH_LAST_EVENTS : 0; /* the oldest */
    for (int i = 0; i < drop; i++)
        timeline_event_free(&p->events[i]);
    memmove(p->events, p->events + drop, (size_t)(k - drop) * sizeof *p->events);
    p->n = k - drop;
    c->has_before = true;
    return 0;
}

/* The runtime's account: failure_text.h reads the stderr lines before the crash
 * (after it, for Python's stack) and writes what it finds as JSON members; the one
 * this crash's kind wants is kept. */
static int join_account(struct timeline_reader *rd, int64_t key,
                        const struct timeline_event *crash, struct timeline_crash_context *c,
                        struct strobe_error *e)
{
    c->account_name = crash->data ? crash_payload_account_wanted(crash->data) : NULL;
    if (!c->account_name)
        return 0;
    struct timeline_page lines;
    /* Python's faulthandler prints after the signal the crash was recorded at */
    bool after = strcmp(c->account_name, "python") == 0;
    struct event_query q = {.event_type = EV_STDERR, .from = {.set = true, .ns = crash->ts_ns},
                            .limit = CRASH_STDERR_LINES};
    if (after ? run_query(rd, key, &q, 0, &lines, e) != 0
              : events_up_to(rd, key, crash, EV_STDERR, CRASH_STDERR_LINES, &lines, e) != 0)
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
    if (after)
        failure_scan_python(&sb, text, (size_t)lines.n, PYTHON_FRAMES_MAX);
    else
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
                           const struct timeline_event *crash,
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
