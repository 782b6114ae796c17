/*
 * session.c - session rows: create, look up, list, finish, retain, the retention
 * purge's delete (retention.c; store_session_delete is deleter.c's), and the orphan
 * sweep at daemon start. Sessions marked deleted are invisible here. A pid or an end
 * the database refused is kept and retried (pending.c), and every read shows it.
 * All of it runs on the session connection (s->sdb) under s->sess_lock; WAL plus
 * busy_timeout serialize it with the writer thread.
 * event_count comes from type_counts (kept exact by the writer), never from a scan.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void session_row_free(struct session_row *r)
{
    if (!r)
        return;
    free(r->id);
    free(r->binary_path);
    free(r->project_root);
    free(r->command_line);
    free(r->status);
    free(r->exit_signal);
    r->id = r->binary_path = r->project_root = r->command_line = r->status = NULL;
    r->exit_signal = NULL;
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

int store_session_create(struct store *s, struct session_row *r, struct strobe_error *e)
{
    if (!r->id || !*r->id)
        return err_set(e, ERR_VALIDATION, "a session needs a non-empty id");
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int ret = -1;
    if (sqlite3_prepare_v2(s->sdb,
                           "INSERT INTO sessions(id, binary_path, project_root, command_line,"
                           " pid, started_at, ended_at, status, exit_code, exit_signal, retained)"
                           " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
                           -1, &st, NULL) != SQLITE_OK) {
        st_fail_db(e, s->sdb, "cannot prepare the session insert");
        goto out;
    }
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_TRANSIENT);
    bind_opt_text(st, 2, r->binary_path);
    bind_opt_text(st, 3, r->project_root);
    bind_opt_text(st, 4, r->command_line);
    sqlite3_bind_int(st, 5, r->pid);
    sqlite3_bind_int64(st, 6, r->started_at_ms);
    if (r->ended_at_ms)
        sqlite3_bind_int64(st, 7, r->ended_at_ms);
    bind_opt_text(st, 8, r->status ? r->status : "running");
    if (r->has_exit_code)
        sqlite3_bind_int(st, 9, r->exit_code);
    bind_opt_text(st, 10, r->exit_signal);
    sqlite3_bind_int(st, 11, r->retained);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT) {
        err_set(e, ERR_VALIDATION, "a session with id %s already exists", r->id);
        goto out;
    }
    if (rc != SQLITE_DONE) {
        st_health_failed(s, s->sdb);
        st_fail_db(e, s->sdb, "cannot create the session");
        goto out;
    }
    r->key = sqlite3_last_insert_rowid(s->sdb);
    ret = 0;
out:
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    return ret;
}

int store_session_id_taken(struct store *s, const char *id)
{
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int ret = -1;
    if (sqlite3_prepare_v2(s->sdb, "SELECT 1 FROM sessions WHERE id = ?1 AND deleted = 0", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        ret = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    return ret;
}

#define SESSION_COLUMNS                                                                    \
    "SELECT s.key, s.id, s.binary_path, s.project_root, s.command_line, s.pid,"            \
    " s.started_at, s.ended_at, s.status, s.exit_code, s.exit_signal, s.retained,"         \
    " (SELECT coalesce(sum(count), 0) FROM type_counts c WHERE c.session = s.key)"         \
    " FROM sessions s "

static char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

static void read_row(sqlite3_stmt *st, struct session_row *r)
{
    memset(r, 0, sizeof *r);
    r->key = sqlite3_column_int64(st, 0);
    r->id = col_text(st, 1);
    r->binary_path = col_text(st, 2);
    r->project_root = col_text(st, 3);
    r->command_line = col_text(st, 4);
    r->pid = sqlite3_column_int(st, 5);
    r->started_at_ms = sqlite3_column_int64(st, 6);
    r->ended_at_ms = sqlite3_column_int64(st, 7);
    r->status = col_text(st, 8);
    r->has_exit_code = sqlite3_column_type(st, 9) != SQLITE_NULL;
    r->exit_code = sqlite3_column_int(st, 9);
    r->exit_signal = col_text(st, 10);
    r->retained = sqlite3_column_int(st, 11) != 0;
    r->event_count = sqlite3_column_int64(st, 12);
}

int store_session_get(struct store *s, const char *id, struct session_row *out)
{
    memset(out, 0, sizeof *out);
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int ret = -1;
    if (sqlite3_prepare_v2(s->sdb, SESSION_COLUMNS "WHERE s.id = ?1 AND s.deleted = 0", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            read_row(st, out);
            ret = 0;
        } else if (rc == SQLITE_DONE) {
            ret = 1;
        }
    }
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    if (ret == 0)
        st_pending_apply(s, out);
    return ret;
}

int store_session_list(struct store *s, struct session_row **rows, int *n,
                       struct strobe_error *e)
{
    *rows = NULL;
    *n = 0;
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int ret = -1, cap = 0;
    if (sqlite3_prepare_v2(s->sdb,
                           SESSION_COLUMNS
                           "WHERE s.deleted = 0 ORDER BY s.started_at DESC, s.key DESC",
                           -1, &st, NULL) != SQLITE_OK) {
        st_fail_db(e, s->sdb, "cannot list sessions");
        goto out;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct session_row *nr = st_grow(*rows, *n, &cap, sizeof *nr, 16);
        if (!nr) {
            err_set(e, ERR_INTERNAL, "out of memory listing sessions");
            goto out;
        }
        *rows = nr;
        read_row(st, &(*rows)[(*n)++]);
    }
    if (rc != SQLITE_DONE) {
        st_fail_db(e, s->sdb, "cannot list sessions");
        goto out;
    }
    ret = 0;
out:
    if (ret < 0) {
        for (int i = 0; i < *n; i++)
            session_row_free(&(*rows)[i]);
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    sqlite3_finalize(st);
    st_sdb_unlock(s);
    for (int i = 0; i < *n; i++)
        st_pending_apply(s, &(*rows)[i]);
    return ret;
}

/* Runs one statement with n int64 parameters; returns sqlite3_changes() or -1.
 * Caller holds sess_lock. */
static int64_t exec_params(struct store *s, const char *sql, int n, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->sdb, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
    va_end(ap);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? sqlite3_changes64(s->sdb) : -1;
}

int store_session_finish(struct store *s, int64_t key, const char *status,
                         int64_t ended_at_ms, bool has_exit_code, int exit_code,
                         const char *exit_signal)
{
    struct st_pending u = {.key = key, .has_end = true, .has_exit_code = has_exit_code,
                           .exit_code = has_exit_code ? exit_code : 0,
                           .ended_at_ms = ended_at_ms};
    snprintf(u.status, sizeof u.status, "%s", status);
    snprintf(u.exit_signal, sizeof u.exit_signal, "%s", exit_signal ? exit_signal : "");
    return st_pending_write(s, &u);
}

int store_session_set_retained(struct store *s, int64_t key, bool retained)
{
    st_sdb_lock(s);
    int64_t rc = exec_params(s, "UPDATE sessions SET retained = ?1 WHERE key = ?2", 2,
                             (int64_t)retained, (int64_t)key);
    st_sdb_unlock(s);
    return rc < 0 ? -1 : 0;
}

int store_session_set_pid(struct store *s, int64_t key, int pid)
{
    struct st_pending u = {.key = key, .has_pid = true, .pid = pid};
    return st_pending_write(s, &u);
}

int st_session_delete(struct store *s, int64_t key, struct strobe_error *e)
{
    st_sdb_lock(s);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->sdb, "SELECT 1 FROM sessions WHERE key = ?1", -1, &st,
                                NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, key);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        st_fail_db(e, s->sdb, "cannot look the session up to delete it");
    st_sdb_unlock(s);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 0 : -1;
    st_pending_forget(s, key);
    /* Each chunk its own transaction under its own hold of sess_lock: the writer
     * (other sessions' inserts) and other session calls get in between chunks. */
    for (bool done = false; !done;) {
        st_sdb_lock(s);
        rc = st_delete_chunk(s->sdb, key, &done, e);
        st_sdb_unlock(s);
        if (rc < 0)
            return -1;
    }
    st_writer_forget(s, key);
    return 1;
}

int store_session_close_orphans(struct store *s, int64_t now_ms)
{
    st_sdb_lock(s);
    int64_t n = exec_params(s,
                            "UPDATE sessions SET status = 'stopped', ended_at = ?1"
                            " WHERE status = 'running'",
                            1, (int64_t)now_ms);
    st_sdb_unlock(s);
    return n < 0 ? -1 : (int)n;
}
