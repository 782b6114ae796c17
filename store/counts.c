/*
 * counts.c - what status and the answers say about a session as a whole, read on a
 * reader connection: its latest timestamp and event id, its pids (session_pids),
 * its events per type (type_counts), its calls per function (function_counts,
 * with whether any of them was sampled) and where its timeline stands (a mark). See
 * store.h.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SELECT max(column) over the session's events into *out (0 when it has none). */
static int session_max(struct store_reader *r, int64_t session_key, const char *sql,
                       int64_t *out)
{
    sqlite3_stmt *st = NULL;
    *out = 0;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

int store_latest_ts(struct store_reader *r, int64_t session_key, int64_t *ts_ns)
{
    return session_max(r, session_key, "SELECT max(ts_ns) FROM events WHERE session = ?1",
                       ts_ns);
}

int store_session_mark(struct store_reader *r, int64_t session_key, struct store_mark *m)
{
    *m = (struct store_mark){0};
    /* One read transaction: the figures of one instant. */
    if (sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    int64_t stored = 0, evicted = 0;
    int rc = session_max(r, session_key, "SELECT max(id) FROM events WHERE session = ?1",
                         &m->last_id) == 0 &&
             session_max(r, session_key, "SELECT coalesce(sum(count), 0) FROM type_counts"
                         " WHERE session = ?1", &stored) == 0 &&
             session_max(r, session_key, "SELECT coalesce(sum(events), 0) FROM evicted_types"
                         " WHERE session = ?1", &evicted) == 0
                 ? 0 : -1;
    sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    m->recorded = stored + evicted;
    return rc;
}

int store_oldest_kept(struct store_reader *r, int64_t session_key, unsigned type_mask,
                      int64_t *id)
{
    char sql[256];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT min(id) FROM (SELECT id FROM events"
                                " INDEXED BY ev_session_ts WHERE session = ?1 AND type IN (0");
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        if (type_mask & (1u << t))
            n += (size_t)snprintf(sql + n, sizeof sql - n, ",%d", t);
    snprintf(sql + n, sizeof sql - n, ") ORDER BY ts_ns LIMIT 1)");
    return session_max(r, session_key, sql, id);
}

int store_query_pids(struct store_reader *r, int64_t session_key, int **pids, int *n)
{
    *pids = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT pid FROM session_pids WHERE session = ?1 ORDER BY pid", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int *np = st_grow(*pids, *n, &cap, sizeof *np, 8);
        if (!np) {
            rc = SQLITE_NOMEM;
            break;
        }
        *pids = np;
        (*pids)[(*n)++] = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*pids);
        *pids = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

int store_count_by_type(struct store_reader *r, int64_t session_key,
                        int64_t counts[EV_TYPE_MAX + 1])
{
    memset(counts, 0, sizeof(int64_t) * (EV_TYPE_MAX + 1));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT type, count FROM type_counts WHERE session = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int t = sqlite3_column_int(st, 0);
        if (t >= 0 && t <= EV_TYPE_MAX)
            counts[t] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int store_count_by_function(struct store_reader *r, int64_t session_key, int limit,
                            struct function_count **rows, int *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT f.name, sum(c.count) AS n, max(f.name_raw),"
                           " EXISTS(SELECT 1 FROM events e WHERE e.session = ?1"
                           "  AND e.function_id IN (SELECT id FROM functions WHERE name = f.name)"
                           "  AND e.sampled = 1)"
                           " FROM function_counts c JOIN functions f ON f.id = c.function_id"
                           " WHERE c.session = ?1"
                           " GROUP BY f.name ORDER BY n DESC, f.name LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    sqlite3_bind_int(st, 2, limit < 0 ? 0 : limit);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct function_count *nr = st_grow(*rows, *n, &cap, sizeof *nr, 16);
        if (!nr) {
            rc = SQLITE_NOMEM;
            break;
        }
        *rows = nr;
        struct function_count *f = &(*rows)[*n];
        f->function = st_column_dup(st, 0);
        f->count = sqlite3_column_int64(st, 1);
        const unsigned char *raw = sqlite3_column_text(st, 2);
        f->function_raw = raw && raw[0] ? st_column_dup(st, 2) : NULL;
        f->sampled = sqlite3_column_int(st, 3) != 0;
        if (!f->function || (raw && raw[0] && !f->function_raw)) {
            rc = SQLITE_NOMEM;
            break;
        }
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        for (int i = 0; i < *n; i++)
            free((*rows)[i].function);
        free(*rows);
        *rows = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}
