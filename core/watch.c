/*
 * watch.c - data watchpoints of a live session. See watch.h.
 */
#include "core/watch.h"

#include "core/session.h"

int session_watch_set(const char *id, const struct collector_watch_request *req,
                      struct collector_watch_info *out, struct strobe_error *e)
{
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int rc = collector_watch_set(st.collector, st.target, req, out, e);
    session_target_put(&st);
    return rc;
}

int session_watch_clear(const char *id, int watch_id, struct collector_watch_info *removed,
                        int max, int *n_removed, struct strobe_error *e)
{
    *n_removed = 0;
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    struct collector_watch_info all[WATCH_LIST_MAX];
    int n = collector_watch_list(st.collector, st.target, all, WATCH_LIST_MAX, e);
    int rc = n < 0 ? -1 : 0;
    if (n > WATCH_LIST_MAX)
        n = WATCH_LIST_MAX;
    bool found = false;
    for (int i = 0; i < n && rc == 0; i++) {
        if (watch_id && all[i].id != watch_id)
            continue;
        found = true;
        rc = collector_watch_clear(st.collector, st.target, all[i].id, e);
        if (rc == 0 && *n_removed < max)
            removed[(*n_removed)++] = all[i];
    }
    if (rc == 0 && watch_id && !found)
        rc = err_set(e, ERR_VALIDATION, "there is no watch %d in session %s.", watch_id, id);
    session_target_put(&st);
    return rc;
}

int session_watch_list(const char *id, struct collector_watch_info *out, int max, int *n,
                       struct strobe_error *e)
{
    *n = 0;
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    int got = collector_watch_list(st.collector, st.target, out, max, e);
    session_target_put(&st);
    if (got < 0)
        return -1;
    *n = got < max ? got : max;
    return 0;
}
