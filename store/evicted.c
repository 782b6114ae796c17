/*
 * evicted.c - what the per-session event cap took: the function events evicted per
 * function (evicted_counts) and every event evicted per type (evicted_types), both
 * kept by the writer's st_evict() in eviction.c, read for query answers and status.
 * See store.h.
 */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

void store_evicted_free(struct store_evicted *rows, int n)
{
    for (int i = 0; i < n; i++)
        free(rows[i].function);
    free(rows);
}

int store_evicted_by_function(struct store_reader *r, int64_t session_key,
                              struct store_evicted **rows, int *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT f.name, sum(c.events) AS n, max(c.through_ns)"
                           " FROM evicted_counts c JOIN functions f ON f.id = c.function_id"
                           " WHERE c.session = ?1 GROUP BY f.name ORDER BY n DESC, f.name",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_evicted *nr = st_grow(*rows, *n, &cap, sizeof *nr, 8);
        if (!nr) {
            rc = SQLITE_NOMEM;
            break;
        }
        *rows = nr;
        const unsigned char *name = sqlite3_column_text(st, 0);
        struct store_evicted *e = &(*rows)[*n];
        e->function = strdup(name ? (const char *)name : "");
        e->events = sqlite3_column_int64(st, 1);
        e->through_ns = sqlite3_column_int64(st, 2);
        if (!e->function) {
            rc = SQLITE_NOMEM;
            break;
        }
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_evicted_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

int store_evicted_by_type(struct store_reader *r, int64_t session_key,
                          struct store_evicted_type out[EV_TYPE_MAX + 1])
{
    memset(out, 0, sizeof *out * (EV_TYPE_MAX + 1));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT type, events, through_ns, through_id"
                           " FROM evicted_types WHERE session = ?1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, session_key);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int t = sqlite3_column_int(st, 0);
        if (t < EV_TYPE_MIN || t > EV_TYPE_MAX)
            continue;
        out[t].events = sqlite3_column_int64(st, 1);
        out[t].through_ns = sqlite3_column_int64(st, 2);
        out[t].through_id = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}
