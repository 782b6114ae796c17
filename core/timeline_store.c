/*
 * timeline_store.c - the database's own condition as answers tell it
 * (timeline_store_note, core/timeline.h): a full disk, and a damaged database set
 * aside at start. The store keeps the facts (store/health.c, store/check.c); the
 * sentences are the engine's, so every front end says the same.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/timeline.h"
#include "store/store.h"

/* "2026-11-28 17:48:04 UTC" */
static void utc_text(int64_t ms, char *out, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

void timeline_store_note(struct store *db, struct timeline_store_note *out)
{
    memset(out, 0, sizeof *out);
    struct store_health h;
    store_health(db, &h);
    if (h.full) {
        char since[40], room[48] = "";
        utc_text(h.full_since_ms, since, sizeof since);
        if (h.free_bytes >= 0)
            snprintf(room, sizeof room, "%lld KiB free, ", (long long)(h.free_bytes / 1024));
        snprintf(out->full, sizeof out->full,
                 "The disk holding %s is full (%s%s) since %s: new events are lost (a "
                 "session's status counts its lostEvents) and %d session update(s) (a pid, "
                 "an end) wait in memory to be written. Free space on that disk; this note "
                 "goes once %lld KiB are free.", h.path, room, h.full_why, since, h.pending,
                 (long long)(h.room_bytes / 1024));
    }
    if (h.set_aside[0]) {
        snprintf(out->set_aside, sizeof out->set_aside, "%s", h.set_aside);
        snprintf(out->set_aside_why, sizeof out->set_aside_why,
                 "The database was damaged when this daemon started (%s): it was set aside "
                 "as %s (with its -wal file), where the sessions recorded before remain "
                 "(sqlite3 can read what is intact), and a fresh database was started.",
                 h.damage, h.set_aside);
    }
}
