/*
 * calls.c - the exact calls of a session's traced functions (store.h): saved when
 * the session lets its program's tracer go, so that status after a stop with
 * retain, or after a daemon restart, still shows every call, not only the recorded
 * ones. On the session connection under sess_lock, like session rows.
 */
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

int store_function_calls_save(struct store *s, int64_t key, const struct store_fn_calls *rows,
                              int n)
{
    static const char sql[] =
        "INSERT OR REPLACE INTO function_calls(session, function, calls, recorded,"
        " sampled_since, lost) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
    st_sdb_lock(s);
    sqlite3_stmt *ins = NULL;
    int rc = -1;
    if (st_exec(s->sdb, "BEGIN IMMEDIATE", NULL) < 0)
        goto out;
    if (sqlite3_prepare_v2(s->sdb, sql, -1, &ins, NULL) != SQLITE_OK)
        goto rollback;
    for (int i = 0; i < n; i++) {
        const struct store_fn_calls *r = &rows[i];
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, key);
        sqlite3_bind_text(ins, 2, r->function, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, r->calls);
        sqlite3_bind_int64(ins, 4, r->recorded);
        if (r->sampled)
            sqlite3_bind_int64(ins, 5, r->sampled_since_ns);
        else
            sqlite3_bind_null(ins, 5);
        if (r->lost[0])
            sqlite3_bind_text(ins, 6, r->lost, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 6);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto rollback;
    }
    rc = st_exec(s->sdb, "COMMIT", NULL) < 0 ? -1 : 0;
    if (rc == 0)
        goto out;
rollback:
    sqlite3_exec(s->sdb, "ROLLBACK", NULL, NULL, NULL);
out:
    sqlite3_finalize(ins);
    st_sdb_unlock(s);
    return rc;
}

int store_function_calls_load(struct store *s, int64_t key, struct store_fn_calls *rows,
                              int max)
{
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_prepare_v2(s->sdb, "SELECT function, calls, recorded, sampled_since, lost"
                           " FROM function_calls WHERE session = ?1 ORDER BY calls DESC",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, key);
        n = 0;
        while (n < max && sqlite3_step(st) == SQLITE_ROW) {
            struct store_fn_calls *r = &rows[n++];
            memset(r, 0, sizeof *r);
            const char *fn = (const char *)sqlite3_column_text(st, 0);
            const char *lost = (const char *)sqlite3_column_text(st, 4);
            snprintf(r->function, sizeof r->function, "%s", fn ? fn : "");
            r->calls = sqlite3_column_int64(st, 1);
            r->recorded = sqlite3_column_int64(st, 2);
            r->sampled = sqlite3_column_type(st, 3) != SQLITE_NULL;
            r->sampled_since_ns = sqlite3_column_int64(st, 3);
            snprintf(r->lost, sizeof r->lost, "%s", lost ? lost : "");
        }
    }
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    return n;
}
