/*
 * health.c - whether the store can write: a full disk noticed at the write that
 * failed for it, and noticed gone once there is room again; store_health(), the
 * store's condition as answers tell it (with the damaged database check.c set aside).
 *
 * "Full" is a fact about the file system, not about one statement: after a failed
 * batch, a small transaction may still fit in WAL pages the failure left allocated,
 * and its success says nothing about the next one. So a write failing with
 * SQLITE_FULL makes the store full, and only room makes it not full: at least
 * STORE_ROOM_BYTES free where the database lives, looked at after each successful
 * write and at the writer's retries (every STORE_RETRY_MS, pending.c), which also
 * clear it when nothing is left to write.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t st_health_free_bytes(const struct store *s)
{
    struct statvfs v;
    if (statvfs(s->path, &v) != 0)
        return -1;
    /* root writes into the blocks reserved for it; others stop at f_bavail */
    return (int64_t)(geteuid() == 0 ? v.f_bfree : v.f_bavail) * (int64_t)v.f_frsize;
}

void st_health_failed(struct store *s, sqlite3 *db)
{
    if ((sqlite3_errcode(db) & 0xff) != SQLITE_FULL)
        return;
    pthread_mutex_lock(&s->lock);
    bool was = s->full;
    if (!was) {
        s->full = true;
        s->full_since_ms = wall_ms();
        snprintf(s->full_why, sizeof s->full_why, "%s", sqlite3_errmsg(db));
    }
    pthread_mutex_unlock(&s->lock);
    if (!was)
        log_warn("store: the disk holding %s is full (%s): events and session updates "
                 "are not stored until there is room", s->path, sqlite3_errmsg(db));
}

void st_health_wrote(struct store *s)
{
    pthread_mutex_lock(&s->lock);
    bool full = s->full;
    pthread_mutex_unlock(&s->lock);
    if (!full)
        return;
    int64_t room = st_health_free_bytes(s);
    if (room < STORE_ROOM_BYTES)
        return;
    pthread_mutex_lock(&s->lock);
    s->full = false;
    pthread_mutex_unlock(&s->lock);
    log_info("store: the disk holding %s has room again (%lld bytes free)", s->path,
             (long long)room);
}

void store_health(struct store *s, struct store_health *h)
{
    memset(h, 0, sizeof *h);
    h->path = s->path;
    h->room_bytes = STORE_ROOM_BYTES;
    if (s->set_aside) {
        snprintf(h->set_aside, sizeof h->set_aside, "%s", s->set_aside);
        snprintf(h->damage, sizeof h->damage, "%s", s->damage);
    }
    pthread_mutex_lock(&s->lock);
    h->full = s->full;
    h->full_since_ms = s->full_since_ms;
    snprintf(h->full_why, sizeof h->full_why, "%s", s->full_why);
    h->pending = s->npending;
    pthread_mutex_unlock(&s->lock);
    h->free_bytes = h->full ? st_health_free_bytes(s) : -1;
}
