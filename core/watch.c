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
    int rc = st.collector->watch_set
                 ? st.collector->watch_set(st.target, req, out, e)
                 : collector_unsupported(st.collector, "watching memory (data watchpoints)", e);
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
    int rc = 0;
    if (!st.collector->watch_clear || !st.collector->watch_list) {
        rc = collector_unsupported(st.collector, "watching memory (data watchpoints)", e);
    } else {
        struct collector_watch_info all[WATCH_LIST_MAX];
        int n = st.collector->watch_list(st.target, all, WATCH_LIST_MAX);
        if (n > WATCH_LIST_MAX)
            n = WATCH_LIST_MAX;
        bool found = false;
        for (int i = 0; i < n && rc == 0; i++) {
            if (watch_id && all[i].id != watch_id)
                continue;
            found = true;
            rc = st.collector->watch_clear(st.target, all[i].id, e);
            if (rc == 0 && *n_removed < max)
                removed[(*n_removed)++] = all[i];
        }
        if (rc == 0 && watch_id && !found)
            rc = err_set(e, ERR_VALIDATION, "there is no watch %d in session %s.", watch_id,
                         id);
    }
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
    int rc = 0;
    if (!st.collector->watch_list)
        rc = collector_unsupported(st.collector, "watching memory (data watchpoints)", e);
    else {
        *n = st.collector->watch_list(st.target, out, max);
        if (*n > max)
            *n = max;
    }
    session_target_put(&st);
    return rc;
}
