/*
 * util.c - small helpers every store file uses: error sentences, growing the arrays
 * that rows are read into, connection setup with the common pragmas. Kept apart so
 * schema/writer/session/query each stay about one concern.
 */

#include "store/store_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int st_fail_db(struct strobe_error *e, sqlite3 *db, const char *what)
{
    if (db && (sqlite3_errcode(db) & 0xff) == SQLITE_FULL)
        return err_set(e, ERR_STORE_FULL, "%s: the disk holding %s is full (%s).", what,
                       sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
    return err_set(e, ERR_INTERNAL, "%s: %s", what,
                   db ? sqlite3_errmsg(db) : "out of memory");
}

char *st_strdup(const char *s) { return s ? strdup(s) : NULL; }

char *st_column_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

void *st_grow(void *array, int n, int *cap, size_t elem_size, int first_cap)
{
    if (n < *cap)
        return array;
    int ncap = *cap ? *cap * 2 : first_cap;
    void *grown = realloc(array, (size_t)ncap * elem_size);
    if (grown)
        *cap = ncap;
    return grown;
}

int st_exec(sqlite3 *db, const char *sql, struct strobe_error *e)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        err_set(e, ERR_INTERNAL, "database statement failed (%.60s...): %s", sql,
                msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static void config_sqlite(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

sqlite3 *st_connect(const char *path, bool create, struct strobe_error *e)
{
    /* Process-wide, before SQLite initializes: no allocation statistics, which
     * otherwise take a global mutex on every malloc. Harmless if too late. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, config_sqlite);
    /* Strobe follows no link it did not create, and trusts no database another
     * user could have planted; NOFOLLOW also covers a link swapped in after this
     * check. The -wal and -shm files SQLite creates take the database's mode (0600:
     * the daemon's umask is 077). */
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            err_set(e, ERR_INTERNAL, "%s is a symbolic link; Strobe opens no link it did "
                    "not create: remove it (the daemon then creates its own database)", path);
            return NULL;
        }
        if (st.st_uid != geteuid()) {
            err_set(e, ERR_INTERNAL,
                    "%s belongs to uid %u, not to this user (uid %u): move it away", path,
                    (unsigned)st.st_uid, (unsigned)geteuid());
            return NULL;
        }
    }
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
                (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        err_set(e, ERR_INTERNAL, "cannot open the database %s: %s", path,
                db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    if (st_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                    "PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY;",
                e) < 0) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}
