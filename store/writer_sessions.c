/*
 * writer_sessions.c - the writer's state per session (struct wsess, writer_internal.h):
 * found by key for each event (the last one found first: events come in runs of one
 * session), its event cap from the limits snapshot, and its parent map, the seq ->
 * event id table of recent function_enter events through which an event's
 * parent_seq becomes its parent_id without a SELECT. Writer thread only.
 */
#include "store/writer_internal.h"

#include <stdlib.h>
#include <string.h>

#define PARENT_CAP (1u << 15)

/* ---- parent map: seq -> event id of recent function_enter events ------------- */


/* Open addressing, bounded: each put or hit stamps the entry with a clock tick; when
 * half full, entries not touched during the last PARENT_CAP/8 ticks are dropped. An
 * enter that keeps being used as a parent (main, an event loop) stays. */
struct parent_ent {
    int64_t seq; /* 0 = empty */
    int64_t id;
    uint64_t used;
};

static size_t seq_slot(int64_t seq) { return ((uint64_t)seq * 0x9E3779B97F4A7C15ULL) >> 49; }

static void parent_insert_raw(struct parent_ent *ents, struct parent_ent e)
{
    size_t i = seq_slot(e.seq) & (PARENT_CAP - 1);
    while (ents[i].seq && ents[i].seq != e.seq)
        i = (i + 1) & (PARENT_CAP - 1);
    ents[i] = e;
}

void st_parent_put(struct parent_map *m, int64_t seq, int64_t id)
{
    if (!m->ents) {
        m->ents = calloc(PARENT_CAP, sizeof *m->ents);
        if (!m->ents)
            return; /* parents become NULL; not worth failing a batch */
    }
    if (m->n >= PARENT_CAP / 2) {
        struct parent_ent *n = calloc(PARENT_CAP, sizeof *n);
        if (!n)
            return;
        uint64_t keep_after = m->clock > PARENT_CAP / 8 ? m->clock - PARENT_CAP / 8 : 0;
        size_t kept = 0;
        for (size_t i = 0; i < PARENT_CAP; i++)
            if (m->ents[i].seq && m->ents[i].used >= keep_after) {
                parent_insert_raw(n, m->ents[i]);
                kept++;
            }
        free(m->ents);
        m->ents = n;
        m->n = kept;
    }
    size_t i = seq_slot(seq) & (PARENT_CAP - 1);
    while (m->ents[i].seq && m->ents[i].seq != seq)
        i = (i + 1) & (PARENT_CAP - 1);
    if (!m->ents[i].seq)
        m->n++;
    m->ents[i] = (struct parent_ent){seq, id, ++m->clock};
}

int64_t st_parent_get(struct parent_map *m, int64_t seq)
{
    if (!m->ents)
        return 0;
    for (size_t i = seq_slot(seq) & (PARENT_CAP - 1);; i = (i + 1) & (PARENT_CAP - 1)) {
        if (!m->ents[i].seq)
            return 0;
        if (m->ents[i].seq == seq) {
            m->ents[i].used = ++m->clock;
            return m->ents[i].id;
        }
    }
}

void st_parent_clear(struct parent_map *m)
{
    free(m->ents);
    memset(m, 0, sizeof *m);
}

/* ---- per-session state ---------------------------------------------------------- */

int64_t st_limit_for(struct writer *w, int64_t key)
{
    for (int i = 0; i < w->nlimits; i++)
        if (w->limits[i].key == key)
            return w->limits[i].limit;
    return STORE_DEFAULT_LIMIT;
}

struct wsess *st_wsess_get(struct writer *w, int64_t key)
{
    if (w->last_sess < w->nsess && w->sess[w->last_sess].key == key)
        return &w->sess[w->last_sess];
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].key == key) {
            w->last_sess = i;
            return &w->sess[i];
        }
    if (w->nsess == w->sess_cap) {
        int ncap = w->sess_cap ? w->sess_cap * 2 : 16;
        struct wsess *n = realloc(w->sess, ncap * sizeof *n);
        if (!n)
            return NULL;
        w->sess = n;
        w->sess_cap = ncap;
    }
    struct wsess *ws = &w->sess[w->nsess];
    memset(ws, 0, sizeof *ws);
    ws->key = key;
    ws->limit = st_limit_for(w, key);
    ws->horizon = ws->released_to = ws->due = INT64_MIN; /* nothing read: nothing due */
    ws->cycle_floor = INT64_MAX;
    w->last_sess = w->nsess++;
    return ws;
}

void st_wsess_remove(struct writer *w, int64_t key)
{
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].key == key) {
            st_parent_clear(&w->sess[i].parents);
            free(w->sess[i].pids);
            w->sess[i] = w->sess[--w->nsess];
            w->last_sess = 0;
            return;
        }
}
