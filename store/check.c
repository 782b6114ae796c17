/*
 * check.c - the database's check at open, and setting a damaged one aside.
 *
 * A damaged file used to stop the daemon (SQLite answers "file is not a database" to
 * the first pragma) or, damaged in its event pages only, to be served while every
 * insert into those pages failed. Before store_open() uses the file, PRAGMA
 * quick_check reads every page of it (the structure of each b-tree, not that indexes
 * match their tables: integrity_check's extra cost buys nothing a daemon can act on).
 * A file SQLite cannot read as a database, or one the check finds fault with, is set
 * aside: renamed to "<name>.damaged-<UTC time>" with its -wal, -shm and -journal
 * files under the same new name, so the sqlite3 shell opens it as it was and nothing
 * stored is deleted; the store then starts a fresh database in its place. Failures
 * that say nothing about the file (it is busy, unreadable, on a full disk) are not
 * damage: the open fails with them instead, and the daemon says why.
 *
 * Cost: the whole file is read once per daemon start (0.6 s per 100 MB from the page
 * cache, 1.7 s from disk, on the CI machine); the caller is told every second of it
 * (store_open_alive), so a client waiting for the daemon knows it is at work.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* The files SQLite keeps beside a database; "" is the database itself, renamed last
 * so that a failure half-way never leaves a fresh database beside an old WAL. */
static const char *const side_files[] = {"-wal", "-shm", "-journal", ""};
#define N_SIDE_FILES (sizeof side_files / sizeof *side_files)

struct alive_clock {
    void (*alive)(void *);
    void *arg;
    int64_t next_ns;
};

/* SQLite's progress handler during the check: the caller hears about every second. */
static int check_progress(void *p)
{
    struct alive_clock *c = p;
    int64_t now = mono_ns();
    if (now >= c->next_ns) {
        c->next_ns = now + 1000000000LL;
        c->alive(c->arg);
    }
    return 0;
}

/* 1 when the database at path is damaged (why says how), 0 when it is sound, -1
 * when it cannot be checked (e set). */
static int check_file(const char *path, struct alive_clock *clock, char *why, size_t whylen,
                      struct strobe_error *e)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                                            SQLITE_OPEN_NOFOLLOW, NULL);
    if (rc != SQLITE_OK) {
        err_set(e, ERR_INTERNAL, "cannot open the database %s to check it: %s", path,
                db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    if (clock->alive)
        sqlite3_progress_handler(db, 100000, check_progress, clock);
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int ret = 0;
    const char *found = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (rc == SQLITE_ROW && found && strcmp(found, "ok") != 0) {
        snprintf(why, whylen, "quick_check: %s", found);
        ret = 1;
    } else if (rc != SQLITE_ROW && ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)) {
        snprintf(why, whylen, "%s", sqlite3_errmsg(db));
        ret = 1;
    } else if (rc != SQLITE_ROW) {
        ret = err_set(e, ERR_INTERNAL, "cannot check the database %s: %s", path,
                      sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ret;
}

/* "<path>.damaged-<UTC time>", with "-2", "-3", ... when one of that second exists. */
static char *set_aside_name(const char *path)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    size_t cap = strlen(path) + 64;
    char *name = malloc(cap);
    for (int n = 1; name && n < 100; n++) {
        if (n == 1)
            snprintf(name, cap, "%s.damaged-%s", path, stamp);
        else
            snprintf(name, cap, "%s.damaged-%s-%d", path, stamp, n);
        struct stat st;
        if (lstat(name, &st) != 0 && errno == ENOENT)
            return name;
    }
    free(name);
    return NULL;
}

/* Renames path (and its side files) to name; on a failure, puts back what moved. */
static int set_aside(const char *path, const char *name, struct strobe_error *e)
{
    size_t cap = strlen(path) + strlen(name) + 32;
    char *from = malloc(cap), *to = malloc(cap);
    int ret = from && to ? 0 : err_set(e, ERR_INTERNAL, "out of memory setting %s aside", path);
    size_t moved = 0;
    for (; ret == 0 && moved < N_SIDE_FILES; moved++) {
        snprintf(from, cap, "%s%s", path, side_files[moved]);
        snprintf(to, cap, "%s%s", name, side_files[moved]);
        if (rename(from, to) != 0 && (errno != ENOENT || !*side_files[moved]))
            ret = err_set(e, ERR_INTERNAL, "the database %s is damaged and cannot be set "
                          "aside as %s: %s; move it away yourself (with its -wal file)",
                          path, to, strerror(errno));
    }
    if (ret < 0)
        for (size_t i = 0; i + 1 < moved; i++) {
            snprintf(from, cap, "%s%s", path, side_files[i]);
            snprintf(to, cap, "%s%s", name, side_files[i]);
            rename(to, from); /* best effort: the error names the new name */
        }
    free(from);
    free(to);
    return ret;
}

int st_check(struct store *s, void (*alive)(void *), void *arg, struct strobe_error *e)
{
    struct stat st;
    if (lstat(s->path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
        return 0; /* nothing to check, or st_connect refuses it with its reason */
    struct alive_clock clock = {alive, arg, mono_ns() + 1000000000LL};
    char why[sizeof s->damage];
    int rc = check_file(s->path, &clock, why, sizeof why, e);
    if (rc <= 0)
        return rc;
    char *name = set_aside_name(s->path);
    if (!name)
        return err_set(e, ERR_INTERNAL, "the database %s is damaged (%s) and no name is free "
                       "to set it aside: move it away yourself", s->path, why);
    if (set_aside(s->path, name, e) < 0) {
        free(name);
        return -1;
    }
    s->set_aside = name;
    snprintf(s->damage, sizeof s->damage, "%s", why);
    return 0;
}
