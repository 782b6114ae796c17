/*
 * tool_hot.c - what slows the program down, said in the answers that follow: a
 * breakpoint, logpoint or condition reached, or a data watch hit, more than 1,000
 * times a second or for a fifth of a thread's time. Each is a stop of the program
 * for the debugger (tens of microseconds), so its rate is the program's slowdown; a
 * logpoint on a hot line once turned a 0.04 s run into 32 s without a word. See
 * tools.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "core/debug.h"
#include "core/watch.h"
#include "mcp/tools.h"

/* Said hot from this rate on (docs/PROTOCOL.md), once set this long; or from this
 * share of a thread's time, which a slow debugger (or a slow machine) reaches at a
 * lower rate: the program is as slowed down either way. */
#define HOT_PER_SECOND 1000
#define HOT_PERCENT 20
#define HOT_MIN_AGE_NS 100000000

double tool_hot_rate(int64_t n, int64_t set_ns)
{
    int64_t age = mono_ns() - set_ns;
    return set_ns && age >= HOT_MIN_AGE_NS ? n * 1e9 / (double)age : 0;
}

struct hot {
    cJSON *list;
    char note[1024];
};

/* One entry, when hot; the note is the first's: the worst is rarely more than one.
 * work_ns: the debugger's time over its traps (a lower bound of the stops' time). */
static void add(struct hot *h, cJSON *o, const char *kind, int id, const char *where,
                int64_t traps, int64_t set_ns, int64_t work_ns, bool condition)
{
    double rate = tool_hot_rate(traps, set_ns);
    double work_us = traps ? work_ns / 1e3 / (double)traps : 0;
    double share = rate * work_us / 1e4; /* percent of one thread's time, at least */
    if (share > 100)
        share = 100;
    if (rate < HOT_PER_SECOND && share < HOT_PERCENT)
        return;
    if (!h->list)
        h->list = cJSON_AddArrayToObject(o, "hot");
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "kind", kind);
    cJSON_AddNumberToObject(e, "id", id);
    cJSON_AddStringToObject(e, "where", where);
    cJSON_AddNumberToObject(e, "perSecond", (double)(int64_t)rate);
    cJSON_AddNumberToObject(e, "workUsPerHit", (int64_t)(work_us * 10) / 10.0);
    cJSON_AddNumberToObject(e, "percentOfThread", (int64_t)share);
    cJSON_AddItemToArray(h->list, e);
    if (h->note[0])
        return;
    snprintf(h->note, sizeof h->note, "The %s %d at %s fires %.0f times a second%s: each "
             "time the program stops for the debugger (%.1f us of its work, and the stop "
             "itself), so the program spends at least %.0f%% of a thread's time there and "
             "runs that much slower. %s",
             kind, id, where, rate, condition ? " (its condition is evaluated each time)" : "",
             work_us, share, kind[0] == 'w' ? "Watch a variable written less often, or "
                                              "unwatch it."
                                            : "Give it a hitLimit, a condition on a line "
                                              "reached less often, or remove it.");
}

static void add_breakpoints(struct hot *h, cJSON *o, const char *id)
{
    struct collector_bp_info *infos = calloc(DEBUG_LIST_MAX, sizeof *infos);
    int n = 0;
    if (!infos || debug_breakpoints_list(id, infos, DEBUG_LIST_MAX, &n, NULL) != 0)
        n = 0;
    for (int i = 0; i < n && i < DEBUG_LIST_MAX; i++) {
        const struct collector_bp_info *b = &infos[i];
        char where[300];
        if (b->function[0])
            snprintf(where, sizeof where, "%s", b->function);
        else
            snprintf(where, sizeof where, "%s:%d", b->file, b->line ? b->line : b->line_asked);
        add(h, o, b->logpoint ? "logpoint" : "breakpoint", b->id, where, b->traps, b->set_ns,
            b->work_ns, b->condition[0]);
    }
    free(infos);
}

static void add_watches(struct hot *h, cJSON *o, const char *id)
{
    struct collector_watch_info *ws = calloc(WATCH_LIST_MAX, sizeof *ws);
    int n = 0;
    if (!ws || session_watch_list(id, ws, WATCH_LIST_MAX, &n, NULL) != 0)
        n = 0;
    for (int i = 0; i < n && i < WATCH_LIST_MAX; i++)
        if (!ws[i].ended)
            add(h, o, "watch", ws[i].id, ws[i].label, ws[i].hits, ws[i].set_ns, ws[i].work_ns,
                false);
    free(ws);
}

void tool_add_hot(cJSON *o, const char *id)
{
    struct hot h = {0};
    add_breakpoints(&h, o, id);
    add_watches(&h, o, id);
    if (h.note[0])
        cJSON_AddStringToObject(o, "hotNote", h.note);
}
