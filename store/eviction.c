/*
 * eviction.c - the per-session event cap: a session whose evictable events
 * (event_type_evictable) exceed its limit by more than 1% loses its oldest evictable
 * events (smallest ts_ns) down to the limit, in the transaction of the batch that
 * went over (batch.c). type_counts is decremented; function_counts is not (it counts
 * calls observed). parent_id of a surviving event may name an evicted one. The
 * function events evicted are counted per function in evicted_counts, with the
 * newest timestamp evicted, and every evicted event per type in evicted_types, with
 * the newest timestamp and the highest id evicted, so answers can say what the cap
 * took and from when (evicted.c reads them). Writer thread only.
 */
#include "store/writer_internal.h"

static int count_evicted(struct writer *w, int64_t session, int64_t fid, int64_t events,
                         int64_t through_ns)
{
    sqlite3_bind_int64(w->ec_upsert, 1, session);
    sqlite3_bind_int64(w->ec_upsert, 2, fid);
    sqlite3_bind_int64(w->ec_upsert, 3, events);
    sqlite3_bind_int64(w->ec_upsert, 4, through_ns);
    int rc = sqlite3_step(w->ec_upsert);
    sqlite3_reset(w->ec_upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int count_evicted_type(struct writer *w, int64_t session, int type, int64_t events,
                              int64_t through_ns, int64_t through_id)
{
    sqlite3_bind_int64(w->et_upsert, 1, session);
    sqlite3_bind_int(w->et_upsert, 2, type);
    sqlite3_bind_int64(w->et_upsert, 3, events);
    sqlite3_bind_int64(w->et_upsert, 4, through_ns);
    sqlite3_bind_int64(w->et_upsert, 5, through_id);
    int rc = sqlite3_step(w->et_upsert);
    sqlite3_reset(w->et_upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Deletes the k oldest evictable events of a session: walks ev_session_ts (session,
 * ts_ns, type) index-only to find the k-th oldest timestamp, then deletes evictable
 * rows up to it. Rows sharing that last timestamp all go, so a few more than k may. */
int st_evict(struct writer *w, struct wsess *ws, int64_t k)
{
    int64_t by_type[EV_TYPE_MAX + 1] = {0}, max_id[EV_TYPE_MAX + 1] = {0}, max_ts = 0,
            total = 0;
    sqlite3_bind_int64(w->evict_sel, 1, ws->key);
    sqlite3_bind_int64(w->evict_sel, 2, k);
    int rc;
    while ((rc = sqlite3_step(w->evict_sel)) == SQLITE_ROW)
        max_ts = sqlite3_column_int64(w->evict_sel, 0);
    sqlite3_reset(w->evict_sel);
    if (rc != SQLITE_DONE)
        return -1;
    /* Count what goes (ties at max_ts included) for type_counts, and per function for
     * evicted_counts (the rows are read by the delete next: their pages stay cached). */
    sqlite3_bind_int64(w->evict_cnt, 1, ws->key);
    sqlite3_bind_int64(w->evict_cnt, 2, max_ts);
    while ((rc = sqlite3_step(w->evict_cnt)) == SQLITE_ROW) {
        int t = sqlite3_column_int(w->evict_cnt, 0);
        int64_t c = sqlite3_column_int64(w->evict_cnt, 2);
        int64_t id = sqlite3_column_int64(w->evict_cnt, 3);
        if (t >= EV_TYPE_MIN && t <= EV_TYPE_MAX) {
            by_type[t] += c;
            max_id[t] = id > max_id[t] ? id : max_id[t];
        }
        total += c;
        if ((t == EV_FUNCTION_ENTER || t == EV_FUNCTION_EXIT) &&
            sqlite3_column_type(w->evict_cnt, 1) != SQLITE_NULL &&
            count_evicted(w, ws->key, sqlite3_column_int64(w->evict_cnt, 1), c, max_ts) < 0)
            break;
    }
    sqlite3_reset(w->evict_cnt);
    if (rc != SQLITE_DONE)
        return -1;
    if (!total)
        return 0;
    sqlite3_bind_int64(w->evict_del, 1, ws->key);
    sqlite3_bind_int64(w->evict_del, 2, max_ts);
    rc = sqlite3_step(w->evict_del);
    sqlite3_reset(w->evict_del);
    if (rc != SQLITE_DONE)
        return -1;
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
        if (by_type[t] && (st_upsert_type_count(w, ws->key, t, -by_type[t]) < 0 ||
                           count_evicted_type(w, ws->key, t, by_type[t], max_ts, max_id[t]) < 0))
            return -1;
    ws->evictable -= total;
    return 0;
}
