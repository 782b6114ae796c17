/*
 * tests.c - the duration history of debug_test's tests (store.h): the last
 * STORE_TEST_HISTORY durations of each test of a project, from which a running
 * test's usual duration (its baseline) is read. On the session connection under
 * sess_lock, like session rows.
 */
#include "store/store_internal.h"

int store_test_durations_add(struct store *s, const char *project, const char *const *names,
                             const int64_t *ms, int n, int64_t at_ms)
{
    static const char insert_sql[] =
        "INSERT INTO test_durations(project, name, at, ms) VALUES(?1, ?2, ?3, ?4)";
    static const char prune_sql[] =
        "DELETE FROM test_durations WHERE project = ?1 AND name = ?2 AND rowid NOT IN"
        " (SELECT rowid FROM test_durations WHERE project = ?1 AND name = ?2"
        "  ORDER BY at DESC LIMIT ?3)";
    st_sdb_lock(s);
    sqlite3_stmt *ins = NULL, *prune = NULL;
    int rc = -1;
    if (st_exec(s->sdb, "BEGIN IMMEDIATE", NULL) < 0)
        goto out;
    if (sqlite3_prepare_v2(s->sdb, insert_sql, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->sdb, prune_sql, -1, &prune, NULL) != SQLITE_OK)
        goto rollback;
    for (int i = 0; i < n; i++) {
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, project, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, names[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, at_ms);
        sqlite3_bind_int64(ins, 4, ms[i]);
        sqlite3_reset(prune);
        sqlite3_bind_text(prune, 1, project, -1, SQLITE_STATIC);
        sqlite3_bind_text(prune, 2, names[i], -1, SQLITE_STATIC);
        sqlite3_bind_int(prune, 3, STORE_TEST_HISTORY);
        if (sqlite3_step(ins) != SQLITE_DONE || sqlite3_step(prune) != SQLITE_DONE)
            goto rollback;
    }
    rc = st_exec(s->sdb, "COMMIT", NULL) < 0 ? -1 : 0;
    if (rc == 0)
        goto out;
rollback:
    sqlite3_exec(s->sdb, "ROLLBACK", NULL, NULL, NULL);
out:
    sqlite3_finalize(ins);
    sqlite3_finalize(prune);
    st_sdb_unlock(s);
    return rc;
}

int64_t store_test_baseline(struct store *s, const char *project, const char *name)
{
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int64_t mean = -1;
    if (sqlite3_prepare_v2(s->sdb, "SELECT count(*), avg(ms) FROM test_durations"
                           " WHERE project = ?1 AND name = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, project, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
            mean = (int64_t)(sqlite3_column_double(st, 1) + 0.5);
    }
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    return mean;
}
