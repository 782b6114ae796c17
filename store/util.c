/*
 * util.c - small helpers every store file uses: error sentences, connection setup
 * with the common pragmas, and the string->id hash map behind the writer's interning
 * caches. Kept apart so schema/writer/session/query each stay about one concern.
 */

#include "store/store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_fail(char **err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    free(*err);
    *err = msg;
    return -1;
}

int st_fail_db(char **err, sqlite3 *db, const char *what)
{
    return st_fail(err, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

char *st_strdup(const char *s) { return s ? strdup(s) : NULL; }

int st_exec(sqlite3 *db, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        st_fail(err, "database statement failed (%.60s...): %s", sql,
                msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static void config_sqlite(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

sqlite3 *st_connect(const char *path, bool create, char **err)
{
    /* Process-wide, before SQLite initializes: no allocation statistics, which
     * otherwise take a global mutex on every malloc. Harmless if too late. */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, config_sqlite);
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        st_fail(err, "cannot open the database %s: %s", path,
                db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    if (st_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                    "PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY;",
                err) < 0) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* ---- strmap ------------------------------------------------------------- */

struct strmap_ent {
    char *key; /* NULL = empty slot */
    size_t len;
    uint64_t hash;
    int64_t val;
};

uint64_t st_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

int64_t strmap_get(const struct strmap *m, const char *key, size_t len, uint64_t h)
{
    if (!m->cap)
        return -1;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const struct strmap_ent *e = &m->ents[i];
        if (!e->key)
            return -1;
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
            return e->val;
    }
}

static void strmap_insert_ent(struct strmap_ent *ents, size_t cap, struct strmap_ent e)
{
    size_t mask = cap - 1;
    size_t i = e.hash & mask;
    while (ents[i].key)
        i = (i + 1) & mask;
    ents[i] = e;
}

int strmap_put(struct strmap *m, const char *key, size_t len, uint64_t h, int64_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        struct strmap_ent *n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->ents[i].key)
                strmap_insert_ent(n, ncap, m->ents[i]);
        free(m->ents);
        m->ents = n;
        m->cap = ncap;
    }
    char *k = malloc(len + 1);
    if (!k)
        return -1;
    memcpy(k, key, len);
    k[len] = 0;
    strmap_insert_ent(m->ents, m->cap, (struct strmap_ent){k, len, h, val});
    m->n++;
    return 0;
}

void strmap_clear(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->ents[i].key);
    free(m->ents);
    m->ents = NULL;
    m->cap = m->n = 0;
}
