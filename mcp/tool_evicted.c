/*
 * tool_evicted.c - what the session's event cap (events.maxPerSession) took, said
 * beside the events it concerns: status, every debug_query whose range it touches,
 * and debug_continue's count of what happened meanwhile. Function events say more
 * (per function: tool_query.c's `evicted`); this is every type. See tools.h.
 */
#include <stdio.h>

#include "base/event.h"
#include "base/event_query.h"
#include "core/timeline.h"
#include "mcp/tools.h"

/* Whether the evictions of one type concern q: its type, and a range that starts
 * before the newest timestamp evicted (an absolute timeFrom after it misses none). */
static bool concerns(const struct event_query *q, int type,
                     const struct timeline_evicted_type *ev)
{
    if (!ev->events || (q && q->event_type && q->event_type != type))
        return false;
    return !q || !q->from.set || q->from.relative || q->from.ns <= ev->through_ns;
}

void tool_add_evicted_events(cJSON *o, struct timeline_reader *rd, int64_t key,
                             const struct event_query *q)
{
    struct timeline_evicted_type ev[EV_TYPE_MAX + 1];
    if (timeline_evicted_types(rd, key, ev, NULL) != 0)
        return;
    int64_t total = 0, through_id = 0;
    unsigned types = 0;
    cJSON *by_type = NULL;
    for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++) {
        if (!concerns(q, t, &ev[t]))
            continue;
        if (!by_type)
            by_type = cJSON_CreateObject();
        cJSON_AddNumberToObject(by_type, event_type_name(t), (double)ev[t].events);
        total += ev[t].events;
        types |= 1u << t;
        through_id = ev[t].through_id > through_id ? ev[t].through_id : through_id;
    }
    if (!total)
        return;
    cJSON_AddNumberToObject(o, "evictedEvents", (double)total);
    cJSON_AddItemToObject(o, "evictedByType", by_type);
    int64_t oldest_id = timeline_oldest_kept(rd, key, types);
    if (oldest_id) {
        char oldest[24];
        snprintf(oldest, sizeof oldest, "%lld", (long long)oldest_id);
        cJSON_AddStringToObject(o, "oldestEventId", oldest);
    }
    bool past_cursor = q && q->after_id && through_id > q->after_id;
    if (past_cursor)
        cJSON_AddTrueToObject(o, "evictedPastCursor");
    char note[600];
    snprintf(note, sizeof note, "The session's event cap (setting events.maxPerSession) "
             "evicted the oldest %lld event(s)%s%s; the oldest kept of those types is id "
             "%lld. Raise "
             "events.maxPerSession in <projectRoot>/.strobe/settings.json before the next "
             "launch, or trace, log or watch less.", (long long)total,
             q ? " of the types this query reads" : "",
             past_cursor ? ", some of them after afterEventId before this read saw them "
                           "(poll more often)" : "",
             (long long)oldest_id);
    cJSON_AddStringToObject(o, "evictedEventsNote", note);
}
