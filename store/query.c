/*
 * query.c - store_query_events(): debug_query's events query, its rows and its
 * totalCount; store_explain_query(), its plans. Reader connections: reader.c; a
 * session's counts: counts.c.
 *
 * A query is built in two steps. Name filters (function, source file, thread name)
 * are first resolved against the small names tables (equality, instr() for
 * "contains", a bounded regular expression (base/regex.h) for "matches") into sets of ids; the
 * events query then uses `IN (ids)` on the integer columns, so it can walk the
 * (session, function_id, ts_ns) index. An empty set means no row can match.
 *
 * The text filters run on the events themselves (text is not interned): "contains"
 * is instr(e.text, ?), "matches" calls strobe_text_match(e.text), an SQL function
 * each reader registers on its connection, which matches the query's regex (text_re,
 * compiled by the caller once per request: base/event_query.h; handed to the function
 * through the reader) with base/regex.h's budgets. A match over budget makes the
 * function fail, which stops the statement; the query then answers STORE_E_PATTERN.
 *
 * Rows are read in two steps: the page's ids are picked from the indexes alone
 * (ev_session_ts covers the pid, thread, file, type and duration filters, so neither
 * an offset nor non-matching events cost a table read), then only those rows are
 * read. Plans of every shape: tests/unit/test_store_plans.c; times: bench_query.c.
 *
 * totalCount: exact from type_counts when the only filters are the session and the
 * event type; exact for free when the page is the last one (offset + rows); otherwise
 * a count capped at STORE_COUNT_CAP (total_is_lower_bound is set when it hits the cap).
 *
 * returnValue.equals compares the stored JSON text with the given JSON text exactly;
 * when the given text is a JSON number, a stored JSON number with the same numeric
 * value also matches (1.0 matches 1). returnValue.isNull matches function_exit events
 * whose return value is absent or JSON null; isNull=false matches function_exit
 * events with a non-null return value. Both filters imply eventType function_exit.
 */
#include "store/store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/regex.h"
#include "base/strbuf.h"

/* ---- id sets from the names tables -------------------------------------------- */

struct idset {
    int64_t *ids;
    int n, cap;
    bool active; /* a filter applies */
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int idset_push(struct idset *s, int64_t id)
{
    if (s->n == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 16;
        int64_t *n = realloc(s->ids, ncap * sizeof *n);
        if (!n)
            return -1;
        s->ids = n;
        s->cap = ncap;
    }
    s->ids[s->n++] = id;
    return 0;
}

/* set = set AND other (other is consumed). */
static void idset_and(struct idset *set, struct idset *other)
{
    if (other->n > 1)
        qsort(other->ids, other->n, sizeof *other->ids, cmp_i64);
    if (!set->active) {
        free(set->ids);
        *set = *other;
        set->active = true;
        memset(other, 0, sizeof *other);
        return;
    }
    int k = 0;
    for (int i = 0; i < set->n && other->n; i++)
        if (bsearch(&set->ids[i], other->ids, other->n, sizeof *other->ids, cmp_i64))
            set->ids[k++] = set->ids[i];
    set->n = k;
    free(other->ids);
    memset(other, 0, sizeof *other);
}

/* Ids from a names table: `sql` selects (id, name) with ?1 bound to arg (may be NULL);
 * when re is set, names are filtered by it. */
static int names_to_ids(struct store_reader *r, const char *sql, const char *arg,
                        const struct regex *re, struct idset *set, struct strobe_error *e)
{
    struct strobe_error why;
    struct idset found = {0};
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return st_fail_db(e, r->db, "cannot look up names");
    if (arg)
        sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        int m = re && name ? regex_match(re, name, (size_t)sqlite3_column_bytes(st, 1), &why)
                           : 1;
        if (m < 0) {
            rc = STORE_E_PATTERN;
            break;
        }
        if (!name || m == 0)
            continue;
        if (idset_push(&found, sqlite3_column_int64(st, 0)) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(found.ids);
        if (rc == STORE_E_PATTERN) {
            err_set(e, ERR_VALIDATION,
                    "the pattern is too costly to match against the names (%s)", why.msg);
            return STORE_E_PATTERN;
        }
        return rc == SQLITE_NOMEM ? err_set(e, ERR_INTERNAL, "out of memory looking up names")
                                  : st_fail_db(e, r->db, "cannot look up names");
    }
    idset_and(set, &found);
    return 0;
}

/* ---- building the statement ------------------------------------------------------ */

struct built {
    struct strbuf where; /* " AND ..." terms after e.session = ?1 */
    bool empty;        /* a name filter matched nothing: no rows */
    bool counters_exact; /* only session/type filters: totals from type_counts */
    bool has_num;
    double num;
    /* afterEventId polls walk the rowid range (new events are few); the unary + keeps
     * SQLite from walking the session's whole index and sorting by id instead. */
    const char *session_term;
    /* The events table as the FROM clause names it: without a function filter, an id
     * range or a type ev_session_type holds, the walk must be ev_session_ts (it covers
     * the other filters); SQLite would otherwise be free to pick ev_session_func for
     * "session = ?" and read the table in function order. */
    const char *events;
    struct idset fn, file, thr;
    int64_t session_key;
    bool latest;       /* STORE_QUERY_LATEST, and no after_id */
};

static void built_free(struct built *b)
{
    free(b->where.buf);
    free(b->fn.ids);
    free(b->file.ids);
    free(b->thr.ids);
}

static void add_in(struct strbuf *w, const char *col, const struct idset *set)
{
    sb_printf(w, " AND %s IN (", col);
    for (int i = 0; i < set->n; i++)
        sb_printf(w, "%s%lld", i ? "," : "", (long long)set->ids[i]);
    sb_printf(w, ")");
}

static bool parse_number(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (*end || !isfinite(v))
        return false;
    /* JSON numbers only: no hex, inf, nan, leading '+' or '.'. */
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    for (const char *c = s; *c; c++)
        if (*c == 'x' || *c == 'X')
            return false;
    *out = v;
    return true;
}

/* Bind parameters: ?1 session, then see below. Fixed numbering so the
 * same binder serves the row query and the count. */
enum {
    P_SESSION = 1,
    P_RET,
    P_RETNUM,
    P_FROM,
    P_TO,
    P_MINDUR,
    P_PID,
    P_AFTER,
    P_TEXT,
    P_LIMIT,
    P_OFFSET,
};

static int build(struct store_reader *r, int64_t session_key, const struct event_query *q,
                 int flags, struct built *b, struct strobe_error *e)
{
    memset(b, 0, sizeof *b);
    if ((q->function_matches && !q->function_re) || (q->text_matches && !q->text_re))
        return err_set(e, ERR_VALIDATION, "a pattern of the query is not compiled");
    if ((q->from.set && q->from.relative) || (q->to.set && q->to.relative))
        return err_set(e, ERR_VALIDATION,
                       "a time bound of the query is relative to the latest event");
    b->session_key = session_key;
    b->latest = (flags & STORE_QUERY_LATEST) && q->after_id <= 0;
    b->session_term = q->after_id > 0 ? "+e.session = ?1" : "e.session = ?1";
    static const char fn_eq[] = "SELECT id, name FROM functions WHERE name = ?1";
    static const char fn_has[] = "SELECT id, name FROM functions WHERE instr(name, ?1) > 0";
    static const char fn_all[] = "SELECT id, name FROM functions";
    if (q->function_equals && names_to_ids(r, fn_eq, q->function_equals, NULL, &b->fn, e) < 0)
        return -1;
    if (q->function_contains &&
        names_to_ids(r, fn_has, q->function_contains, NULL, &b->fn, e) < 0)
        return -1;
    if (q->function_re) {
        int rc = names_to_ids(r, fn_all, NULL, q->function_re, &b->fn, e);
        if (rc < 0)
            return rc;
    }
    if (q->file_equals &&
        names_to_ids(r, "SELECT id, path FROM files WHERE path = ?1", q->file_equals, NULL,
                     &b->file, e) < 0)
        return -1;
    if (q->file_contains &&
        names_to_ids(r, "SELECT id, path FROM files WHERE instr(path, ?1) > 0",
                     q->file_contains, NULL, &b->file, e) < 0)
        return -1;
    if (q->thread_name_contains &&
        names_to_ids(r, "SELECT id, name FROM threads WHERE instr(name, ?1) > 0",
                     q->thread_name_contains, NULL, &b->thr, e) < 0)
        return -1;
    if ((b->fn.active && !b->fn.n) || (b->file.active && !b->file.n) ||
        (b->thr.active && !b->thr.n))
        b->empty = true;

    struct strbuf *w = &b->where;
    sb_printf(w, " ");
    int type = q->event_type;
    bool ret_filter = q->return_equals || q->return_null != EVENT_RETURN_ANY;
    if (ret_filter) {
        if (type && type != EV_FUNCTION_EXIT)
            b->empty = true;
        type = EV_FUNCTION_EXIT;
    }
    /* A literal, not a parameter: SQLite picks the partial index ev_session_type only
     * when it can see the value (schema.c). */
    if (type)
        sb_printf(w, " AND e.type = %d", type);
    if (b->file.active)
        add_in(w, "e.file_id", &b->file);
    if (b->thr.active)
        add_in(w, "e.thread_id", &b->thr);
    if (q->return_equals) {
        b->has_num = parse_number(q->return_equals, &b->num);
        if (b->has_num)
            sb_printf(w,
                   " AND (e.return_value = ?%d OR (CASE WHEN json_valid(e.return_value)"
                   " THEN json_type(e.return_value) END IN ('integer', 'real')"
                   " AND CAST(e.return_value AS REAL) = ?%d))",
                   P_RET, P_RETNUM);
        else
            sb_printf(w, " AND e.return_value = ?%d", P_RET);
    }
    if (q->return_null == EVENT_RETURN_NULL)
        sb_printf(w, " AND (e.return_value IS NULL OR e.return_value = 'null')");
    else if (q->return_null == EVENT_RETURN_NOT_NULL)
        sb_printf(w, " AND e.return_value IS NOT NULL AND e.return_value <> 'null'");
    if (q->from.set)
        sb_printf(w, " AND e.ts_ns >= ?%d", P_FROM);
    if (q->to.set)
        sb_printf(w, " AND e.ts_ns <= ?%d", P_TO);
    if (q->min_duration_ns > 0)
        sb_printf(w, " AND e.duration_ns >= ?%d", P_MINDUR);
    if (q->pid)
        sb_printf(w, " AND e.pid = ?%d", P_PID);
    /* The exits' parent ids are read once into SQLite's ephemeral index (the subquery
     * is not correlated): one walk of the session's exits on ev_session_exit (covering),
     * then a lookup per enter. An exit whose parent the writer could not name (its
     * parent map forgot an enter not used for long) still ends its call: the enter of
     * its function at its start (exit ts - duration, the tracer's same clock reading);
     * such exits are few, and only enters left open are checked against them. */
    if (q->open_calls)
        sb_printf(w, " AND e.type = %d AND e.id NOT IN (SELECT x.parent_id FROM events x"
                  " INDEXED BY ev_session_exit WHERE x.session = ?%d AND x.type = 4"
                  " AND x.parent_id IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM events y"
                  " INDEXED BY ev_session_exit WHERE y.session = ?%d AND y.type = 4"
                  " AND y.parent_id IS NULL AND y.function_id = e.function_id"
                  " AND y.ts_ns - y.duration_ns = e.ts_ns)",
                  EV_FUNCTION_ENTER, P_SESSION, P_SESSION);
    if (q->after_id > 0)
        sb_printf(w, " AND e.id > ?%d", P_AFTER);
    if (q->text_contains)
        sb_printf(w, " AND instr(e.text, ?%d) > 0", P_TEXT);
    if (q->text_re)
        sb_printf(w, " AND strobe_text_match(e.text)");
    if (w->oom)
        return err_set(e, ERR_INTERNAL, "out of memory building a query");
    bool type_indexed = type == EV_STDOUT || type == EV_STDERR || type == EV_CRASH ||
                        type == EV_PROCESS_EXIT || type == EV_VARIABLE_SNAPSHOT;
    b->events = b->fn.active || q->after_id > 0 || type_indexed
                    ? "events e" : "events e INDEXED BY ev_session_ts";
    b->counters_exact = !b->fn.active && !b->file.active && !b->thr.active && !ret_filter &&
                        !q->from.set && !q->to.set && q->min_duration_ns <= 0 &&
                        !q->pid && q->after_id <= 0 && !q->text_contains &&
                        !q->text_re && !q->open_calls;
    return 0;
}

static void bind_all(sqlite3_stmt *st, const struct event_query *q, const struct built *b)
{
    int n = sqlite3_bind_parameter_count(st);
    for (int i = 1; i <= n; i++) {
        switch (i) {
        case P_SESSION: sqlite3_bind_int64(st, i, b->session_key); break;
        case P_RET:
            if (q->return_equals)
                sqlite3_bind_text(st, i, q->return_equals, -1, SQLITE_STATIC);
            break;
        case P_RETNUM: sqlite3_bind_double(st, i, b->num); break;
        case P_FROM: sqlite3_bind_int64(st, i, q->from.ns); break;
        case P_TO: sqlite3_bind_int64(st, i, q->to.ns); break;
        case P_MINDUR: sqlite3_bind_int64(st, i, q->min_duration_ns); break;
        case P_PID: sqlite3_bind_int(st, i, q->pid); break;
        case P_AFTER: sqlite3_bind_int64(st, i, q->after_id); break;
        case P_TEXT:
            if (q->text_contains)
                sqlite3_bind_text(st, i, q->text_contains, -1, SQLITE_STATIC);
            break;
        default: break; /* limit and offset: bound by the caller */
        }
    }
}

static int clamp_limit(int limit) { return limit < 0 ? 0 : limit > 100000 ? 100000 : limit; }

/* Up to this many function ids, the rows query is a UNION ALL of one ordered walk of
 * (session, function_id, ts_ns) per id, merged by SQLite (no sort of every match);
 * beyond it, one IN (...) and a sort. */
#define MERGE_MAX_IDS 32

/* The rows query has two steps: `pick` finds the page's ids from the indexes alone
 * (ev_session_ts covers every integer filter, so skipping an offset or walking past
 * non-matching events reads no table row), then the page's rows are read by id. */
#define ROW_COLUMNS                                                                         \
    "SELECT e.id, e.type, e.ts_ns, e.pid, e.tid,"                                           \
    " (SELECT name FROM threads WHERE id = e.thread_id), e.parent_id,"                      \
    " (SELECT name FROM functions WHERE id = e.function_id),"                               \
    " (SELECT name_raw FROM functions WHERE id = e.function_id),"                           \
    " (SELECT path FROM files WHERE id = e.file_id),"                                       \
    " e.line, e.arguments, e.return_value, e.text, e.data, e.duration_ns, e.sampled"        \
    " FROM (%s) AS pick JOIN events e ON e.id = pick.id ORDER BY %s"
#define PICK_COLUMNS "SELECT e.id AS id, e.ts_ns AS ts_ns FROM %s WHERE %s"

static char *rows_sql(const struct event_query *q, const struct built *b)
{
    struct strbuf pick = {0}, s = {0};
    const char *pick_order = q->after_id > 0 ? "id" : b->latest ? "ts_ns DESC, id DESC"
                                                                : "ts_ns, id";
    const char *order = q->after_id > 0 ? "pick.id"
                        : b->latest     ? "pick.ts_ns DESC, pick.id DESC"
                                        : "pick.ts_ns, pick.id";
    if (b->fn.active && b->fn.n > 1 && b->fn.n <= MERGE_MAX_IDS) {
        for (int i = 0; i < b->fn.n; i++)
            sb_printf(&pick, "%s" PICK_COLUMNS " AND e.function_id = %lld%s",
                      i ? " UNION ALL " : "", b->events, b->session_term, (long long)b->fn.ids[i],
                      b->where.buf);
    } else {
        sb_printf(&pick, PICK_COLUMNS, b->events, b->session_term);
        if (b->fn.active)
            add_in(&pick, "e.function_id", &b->fn);
        sb_printf(&pick, "%s", b->where.buf);
    }
    sb_printf(&pick, " ORDER BY %s LIMIT ?%d OFFSET ?%d", pick_order, P_LIMIT, P_OFFSET);
    if (!pick.oom)
        sb_printf(&s, ROW_COLUMNS, pick.buf, order);
    free(pick.buf);
    if (pick.oom || s.oom) {
        free(s.buf);
        return NULL;
    }
    return s.buf;
}

static char *count_sql(const struct built *b)
{
    struct strbuf s = {0};
    sb_printf(&s, "SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s", b->events,
              b->session_term);
    if (b->fn.active)
        add_in(&s, "e.function_id", &b->fn);
    sb_printf(&s, "%s LIMIT %d)", b->where.buf, STORE_COUNT_CAP);
    if (s.oom) {
        free(s.buf);
        return NULL;
    }
    return s.buf;
}

static void event_row_free(struct store_event_row *e)
{
    free(e->thread_name);
    free(e->function);
    free(e->function_raw);
    free(e->source_file);
    free(e->arguments);
    free(e->return_value);
    free(e->text);
    free(e->data);
}

void store_result_free(struct store_result *res)
{
    if (!res)
        return;
    for (int i = 0; i < res->n; i++)
        event_row_free(&res->rows[i]);
    free(res->rows);
    memset(res, 0, sizeof *res);
}

static int read_rows(struct store_reader *r, const struct event_query *q,
                     const struct built *b, struct store_result *out, int limit,
                     struct strobe_error *e)
{
    char *sql = rows_sql(q, b);
    if (!sql)
        return err_set(e, ERR_INTERNAL, "out of memory building a query");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK)
        return st_fail_db(e, r->db, "cannot prepare the events query");
    bind_all(st, q, b);
    sqlite3_bind_int64(st, P_LIMIT, (int64_t)limit + 1);
    sqlite3_bind_int64(st, P_OFFSET, q->offset > 0 ? q->offset : 0);
    int cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == limit) {
            out->has_more = true;
            continue;
        }
        struct store_event_row *nr = st_grow(out->rows, out->n, &cap, sizeof *nr, 64);
        if (!nr) {
            rc = SQLITE_NOMEM;
            break;
        }
        out->rows = nr;
        struct store_event_row *ev = &out->rows[out->n++];
        memset(ev, 0, sizeof *ev);
        ev->id = sqlite3_column_int64(st, 0);
        ev->type = sqlite3_column_int(st, 1);
        ev->ts_ns = sqlite3_column_int64(st, 2);
        ev->pid = sqlite3_column_int(st, 3);
        ev->tid = sqlite3_column_int(st, 4);
        ev->thread_name = st_column_dup(st, 5);
        ev->parent_id = sqlite3_column_int64(st, 6);
        ev->function = st_column_dup(st, 7);
        ev->function_raw = st_column_dup(st, 8);
        if (ev->function_raw && !*ev->function_raw) {
            free(ev->function_raw);
            ev->function_raw = NULL;
        }
        ev->source_file = st_column_dup(st, 9);
        ev->line = sqlite3_column_int(st, 10);
        ev->arguments = st_column_dup(st, 11);
        ev->return_value = st_column_dup(st, 12);
        ev->text = st_column_dup(st, 13);
        ev->data = st_column_dup(st, 14);
        ev->duration_ns =
            sqlite3_column_type(st, 15) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 15);
        ev->sampled = sqlite3_column_int(st, 16) != 0;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc == SQLITE_NOMEM ? err_set(e, ERR_INTERNAL, "out of memory reading events")
                                  : st_fail_db(e, r->db, "cannot read events");
    if (b->latest) /* fetched newest first: back to chronological */
        for (int i = 0, j = out->n - 1; i < j; i++, j--) {
            struct store_event_row t = out->rows[i];
            out->rows[i] = out->rows[j];
            out->rows[j] = t;
        }
    return 0;
}

static int counters_total(struct store_reader *r, const struct event_query *q,
                          const struct built *b, int64_t *total)
{
    sqlite3_stmt *st = NULL;
    const char *sql = q->event_type
                          ? "SELECT coalesce(sum(count), 0) FROM type_counts"
                            " WHERE session = ?1 AND type = ?2"
                          : "SELECT coalesce(sum(count), 0) FROM type_counts WHERE session = ?1";
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, b->session_key);
    if (q->event_type)
        sqlite3_bind_int(st, 2, q->event_type);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *total = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

static int capped_total(struct store_reader *r, const struct event_query *q,
                        const struct built *b, int64_t *total)
{
    char *sql = count_sql(b);
    if (!sql)
        return -1;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK)
        return -1;
    bind_all(st, q, b);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *total = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* A statement failed: when the text regex went over its budget, that is the cause
 * (the caller's pattern), told as STORE_E_PATTERN in place of the database's
 * sentence; else -1 and the sentence stands. */
static int query_failure(struct store_reader *r, const struct event_query *q,
                         struct strobe_error *e)
{
    if (!r->text_over_budget)
        return -1;
    err_set(e, ERR_VALIDATION, "the text pattern \"%.200s\" is too costly to match against "
            "the events' text (%s)", q->text_matches, r->text_why.msg);
    return STORE_E_PATTERN;
}

int store_query_events(struct store_reader *r, int64_t session_key,
                       const struct event_query *q, int flags, struct store_result *out,
                       struct strobe_error *e)
{
    memset(out, 0, sizeof *out);
    struct built b;
    int ret = build(r, session_key, q, flags, &b, e);
    if (ret < 0)
        goto done;
    ret = -1;
    if (b.empty) {
        ret = 0;
        goto done;
    }
    r->text_re = q->text_re;
    r->text_over_budget = false;
    /* One read transaction so rows and count see the same snapshot. */
    if (st_exec(r->db, "BEGIN", e) < 0)
        goto done;
    int limit = clamp_limit(q->limit);
    int offset = q->offset > 0 ? q->offset : 0;
    if (read_rows(r, q, &b, out, limit, e) < 0)
        goto rollback;
    int64_t total = -1;
    if ((flags & STORE_QUERY_NO_TOTAL) || (!out->has_more && (out->n > 0 || offset == 0))) {
        total = offset + out->n; /* the last page: exact without counting */
    } else if (b.counters_exact) {
        if (counters_total(r, q, &b, &total) < 0) {
            st_fail_db(e, r->db, "cannot count events");
            goto rollback;
        }
    } else {
        if (capped_total(r, q, &b, &total) < 0) {
            st_fail_db(e, r->db, "cannot count events");
            goto rollback;
        }
        if (total >= STORE_COUNT_CAP)
            out->total_is_lower_bound = true;
    }
    int64_t seen = out->n ? (int64_t)offset + out->n + (out->has_more ? 1 : 0) : 0;
    if (total < seen) /* the cap (or a racing writer) undercounted */
        total = seen;
    out->total_count = total;
    sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    ret = 0;
    goto done;
rollback:
    sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    store_result_free(out);
    ret = query_failure(r, q, e);
done:
    r->text_re = NULL;
    built_free(&b);
    return ret;
}

/* ---- EXPLAIN QUERY PLAN, for tests ------------------------------------------------- */

static int explain(struct store_reader *r, const char *sql, const struct event_query *q,
                   const struct built *b, struct strbuf *plan, struct strobe_error *e)
{
    struct strbuf text = {0};
    sb_printf(&text, "EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *st = NULL;
    int rc = text.oom ? SQLITE_NOMEM : sqlite3_prepare_v2(r->db, text.buf, -1, &st, NULL);
    free(text.buf);
    if (rc != SQLITE_OK)
        return st_fail_db(e, r->db, "cannot explain the query");
    bind_all(st, q, b);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        sb_printf(plan, "%s\n", (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : st_fail_db(e, r->db, "cannot explain the query");
}

int store_explain_query(struct store_reader *r, int64_t session_key,
                        const struct event_query *q, int flags, char **plan,
                        struct strobe_error *e)
{
    *plan = NULL;
    struct built b;
    struct strbuf p = {0};
    int ret = -1;
    if (build(r, session_key, q, flags, &b, e) < 0)
        goto out;
    char *rows = rows_sql(q, &b), *count = count_sql(&b);
    if (rows && count) {
        sb_printf(&p, "-- rows\n");
        if (explain(r, rows, q, &b, &p, e) == 0) {
            sb_printf(&p, "-- count\n");
            if (explain(r, count, q, &b, &p, e) == 0)
                ret = 0;
        }
    } else {
        err_set(e, ERR_INTERNAL, "out of memory building a query");
    }
    free(rows);
    free(count);
out:
    built_free(&b);
    if (ret == 0)
        *plan = p.buf;
    else
        free(p.buf);
    return ret;
}
