/*
 * batch.c - one batch of the writer: a transaction in which events are inserted
 * CHUNK_ROWS per INSERT statement (the events of a chunk wait in struct pending until
 * it is full), names are interned (name -> id caches, so the hot path runs no
 * SELECT), pids are recorded in session_pids, and the per-batch type and function
 * counters are added to type_counts and function_counts at commit, where a session
 * over its cap is also evicted (eviction.c). A batch that fails is rolled back: its
 * events are lost and counted per session (store_session_lost, with the last write
 * failure's sentence: st_writer_error), and the caches forget what they learned
 * inside it.
 *
 * Event ids: the writer assigns them from next_event_id (persisted in meta at every
 * commit) as events are queued, so ids grow in commit order and are never reused;
 * events are queued in each session's time order (order.c).
 */
#include "store/writer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

/* ---- lost events ------------------------------------------------------------------ */

void st_writer_error(struct store *s, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&s->lock);
    int64_t n = ++s->write_errors;
    snprintf(s->last_error, sizeof s->last_error, "%s", buf);
    pthread_mutex_unlock(&s->lock);
    if (n == 1 || n % 1000 == 0)
        fprintf(stderr, "strobe: store writer: %s (%lld failures so far)\n", buf,
                (long long)n);
}

int64_t store_session_lost(struct store *s, int64_t key, char *msg, size_t msglen)
{
    pthread_mutex_lock(&s->lock);
    int64_t n = 0;
    for (int i = 0; i < s->nlost; i++)
        if (s->lost[i].key == key)
            n = s->lost[i].events;
    if (msg && msglen) {
        msg[0] = '\0';
        for (int i = 0; i < s->nlost; i++)
            if (s->lost[i].key == key)
                snprintf(msg, msglen, "%s", s->lost[i].why);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Adds n lost events to session key's count, lost by the failure st_writer_error()
 * has just told (s->last_error; s->lock held). */
static void count_lost(struct store *s, int64_t key, int64_t n)
{
    for (int i = 0; i < s->nlost; i++)
        if (s->lost[i].key == key) {
            s->lost[i].events += n;
            snprintf(s->lost[i].why, sizeof s->lost[i].why, "%s", s->last_error);
            return;
        }
    if (s->nlost == s->lost_cap) {
        int ncap = s->lost_cap ? 2 * s->lost_cap : 8;
        struct lost_entry *l = realloc(s->lost, (size_t)ncap * sizeof *l);
        if (!l)
            return;
        s->lost = l;
        s->lost_cap = ncap;
    }
    struct lost_entry *l = &s->lost[s->nlost++];
    *l = (struct lost_entry){.key = key, .events = n};
    snprintf(l->why, sizeof l->why, "%s", s->last_error);
}

void st_lost(struct store *s, int64_t key, int64_t n)
{
    pthread_mutex_lock(&s->lock);
    count_lost(s, key, n);
    pthread_mutex_unlock(&s->lock);
}

/* ---- interning ------------------------------------------------------------------ */

/* Id of (a, b) in a names table, inserting it on a miss. b may be NULL (one-column
 * tables, or no linkage name: stored as ''). 0 when a is NULL, -1 on error. */
static int64_t intern(struct writer *w, struct strmap *m, sqlite3_stmt *ins,
                      sqlite3_stmt *sel, const char *a, const char *b)
{
    if (!a)
        return 0;
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    size_t len = la + (b ? 1 + lb : 0);
    const char *key = a;
    if (b) {
        if (len + 1 > w->keycap) {
            size_t ncap = (len + 1) * 2;
            char *n = realloc(w->keybuf, ncap);
            if (!n)
                return -1;
            w->keybuf = n;
            w->keycap = ncap;
        }
        memcpy(w->keybuf, a, la);
        w->keybuf[la] = '\x01';
        memcpy(w->keybuf + la + 1, b, lb);
        w->keybuf[len] = 0;
        key = w->keybuf;
    }
    uint64_t h = strmap_hash(key, len);
    int64_t id = strmap_get(m, key, len, h);
    if (id > 0)
        return id;
    /* Miss: INSERT OR IGNORE, then SELECT (the row may come from an earlier run). */
    sqlite3_bind_text(ins, 1, a, (int)la, SQLITE_STATIC);
    sqlite3_bind_text(sel, 1, a, (int)la, SQLITE_STATIC);
    if (b) {
        sqlite3_bind_text(ins, 2, b, (int)lb, SQLITE_STATIC);
        sqlite3_bind_text(sel, 2, b, (int)lb, SQLITE_STATIC);
    }
    int rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE)
        return -1;
    id = -1;
    if (sqlite3_step(sel) == SQLITE_ROW)
        id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    if (id > 0 && strmap_put(m, key, len, h, id) < 0)
        return -1;
    return id;
}

/* ---- per-batch function counters ------------------------------------------------ */

struct fcount {
    int64_t session, fid, count; /* fid 0 = empty slot */
};

static int fcount_add(struct writer *w, int64_t session, int64_t fid)
{
    if ((w->fc_n + 1) * 2 > w->fc_cap) {
        size_t ncap = w->fc_cap ? w->fc_cap * 2 : 256;
        struct fcount *n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < w->fc_cap; i++) {
            if (!w->fc[i].fid)
                continue;
            size_t j = (size_t)(w->fc[i].fid * 31 + w->fc[i].session) & (ncap - 1);
            while (n[j].fid)
                j = (j + 1) & (ncap - 1);
            n[j] = w->fc[i];
        }
        free(w->fc);
        w->fc = n;
        w->fc_cap = ncap;
    }
    size_t j = (size_t)(fid * 31 + session) & (w->fc_cap - 1);
    while (w->fc[j].fid && (w->fc[j].fid != fid || w->fc[j].session != session))
        j = (j + 1) & (w->fc_cap - 1);
    if (!w->fc[j].fid) {
        w->fc[j] = (struct fcount){session, fid, 0};
        w->fc_n++;
    }
    w->fc[j].count++;
    return 0;
}

/* ---- batches -------------------------------------------------------------------- */

static void bind_id_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Binds p as the row whose first parameter is base+1 (columns as in the INSERTs). */
static void bind_row(struct writer *w, sqlite3_stmt *st, int base, const struct pending *p)
{
    sqlite3_bind_int64(st, base + 1, p->id);
    sqlite3_bind_int64(st, base + 2, p->session);
    sqlite3_bind_int64(st, base + 3, p->ts_ns);
    sqlite3_bind_int(st, base + 4, p->type);
    sqlite3_bind_int(st, base + 5, p->pid);
    sqlite3_bind_int(st, base + 6, p->tid);
    bind_id_or_null(st, base + 7, p->thr);
    bind_id_or_null(st, base + 8, p->parent);
    bind_id_or_null(st, base + 9, p->fid);
    bind_id_or_null(st, base + 10, p->file);
    bind_id_or_null(st, base + 11, p->line);
    if (p->duration_ns >= 0)
        sqlite3_bind_int64(st, base + 12, p->duration_ns);
    else
        sqlite3_bind_null(st, base + 12);
    sqlite3_bind_int(st, base + 13, p->sampled);
    for (int k = 0; k < P_NTEXT; k++) {
        if (p->off[k] >= 0)
            sqlite3_bind_text(st, base + 14 + k, w->arena + p->off[k], p->len[k], SQLITE_STATIC);
        else
            sqlite3_bind_null(st, base + 14 + k);
    }
}

/* Inserts the queued events: full chunks through the multi-row INSERT, the rest (the
 * end of a batch) one by one. */
static int flush_pending(struct writer *w)
{
    int done = 0, rc = SQLITE_DONE;
    while (w->npend - done >= CHUNK_ROWS && rc == SQLITE_DONE) {
        for (int r = 0; r < CHUNK_ROWS; r++)
            bind_row(w, w->ins_chunk, r * EV_COLS, &w->pend[done + r]);
        rc = sqlite3_step(w->ins_chunk);
        sqlite3_reset(w->ins_chunk);
        done += CHUNK_ROWS;
    }
    for (; done < w->npend && rc == SQLITE_DONE; done++) {
        bind_row(w, w->ins, 0, &w->pend[done]);
        rc = sqlite3_step(w->ins);
        sqlite3_reset(w->ins);
    }
    w->npend = 0;
    w->arena_len = 0;
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Copies s (NULL = absent) into the arena for p's column k. */
static int pend_text(struct writer *w, struct pending *p, int k, const char *s)
{
    p->off[k] = -1;
    if (!s)
        return 0;
    size_t len = strlen(s);
    if (w->arena_len + len > w->arena_cap) {
        size_t ncap = w->arena_cap ? w->arena_cap : 4096;
        while (ncap < w->arena_len + len)
            ncap *= 2;
        char *n = realloc(w->arena, ncap);
        if (!n)
            return -1;
        w->arena = n;
        w->arena_cap = ncap;
    }
    memcpy(w->arena + w->arena_len, s, len);
    p->off[k] = (int64_t)w->arena_len;
    p->len[k] = (int)len;
    w->arena_len += len;
    return 0;
}

int st_load_next_id(struct writer *w)
{
    int64_t next = 1;
    if (sqlite3_step(w->meta_get) == SQLITE_ROW)
        next = sqlite3_column_int64(w->meta_get, 0);
    int rc = sqlite3_reset(w->meta_get);
    if (rc != SQLITE_OK)
        return -1;
    /* Never below max(id)+1, whatever meta says. */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(w->db, "SELECT max(id) FROM events", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) >= next)
        next = sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);
    w->next_id = next;
    return 0;
}

int st_batch_begin(struct writer *w)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    w->in_txn = true;
    w->batch_n = 0;
    w->batch_started_ns = mono_ns();
    return 0;
}

/* After a failed batch: its events are lost (counted per session, with skipped:
 * an event of session skipped_key whose insert failed before it was counted, or 0),
 * and everything the caches learned inside it is gone. */
void st_batch_abort(struct store *s, struct writer *w, int64_t skipped_key)
{
    st_health_failed(s, w->db); /* before the ROLLBACK replaces the failure's code */
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < w->nsess; i++)
        if (w->sess[i].batch_events)
            count_lost(s, w->sess[i].key, w->sess[i].batch_events);
    if (skipped_key)
        count_lost(s, skipped_key, 1);
    pthread_mutex_unlock(&s->lock);
    if (w->in_txn)
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    w->in_txn = false;
    w->npend = 0;
    w->arena_len = 0;
    strmap_clear(&w->fns);
    strmap_clear(&w->files);
    strmap_clear(&w->threads);
    for (int i = 0; i < w->nsess; i++) {
        st_parent_clear(&w->sess[i].parents);
        w->sess[i].npids = 0;
        w->sess[i].evictable_known = false;
        w->sess[i].touched = false;
        w->sess[i].batch_events = 0;
        memset(w->sess[i].batch_types, 0, sizeof w->sess[i].batch_types);
    }
    if (w->fc)
        memset(w->fc, 0, w->fc_cap * sizeof *w->fc);
    w->fc_n = 0;
    if (st_load_next_id(w) < 0)
        w->next_id += BATCH_MAX; /* keep ids unique even if we cannot read meta */
}

int st_upsert_type_count(struct writer *w, int64_t session, int type, int64_t delta)
{
    sqlite3_bind_int64(w->tc_upsert, 1, session);
    sqlite3_bind_int(w->tc_upsert, 2, type);
    sqlite3_bind_int64(w->tc_upsert, 3, delta);
    int rc = sqlite3_step(w->tc_upsert);
    sqlite3_reset(w->tc_upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}

int st_batch_commit(struct writer *w)
{
    if (flush_pending(w) < 0)
        return -1;
    for (int i = 0; i < w->nsess; i++) {
        struct wsess *ws = &w->sess[i];
        if (!ws->touched)
            continue;
        for (int t = EV_TYPE_MIN; t <= EV_TYPE_MAX; t++)
            if (ws->batch_types[t] && st_upsert_type_count(w, ws->key, t, ws->batch_types[t]) < 0)
                return -1;
        memset(ws->batch_types, 0, sizeof ws->batch_types);
        ws->touched = false;
        if (ws->evictable > ws->limit + ws->limit / 100 &&
            st_evict(w, ws, ws->evictable - ws->limit) < 0)
            return -1;
    }
    for (size_t i = 0; i < w->fc_cap; i++) {
        struct fcount *f = &w->fc[i];
        if (!f->fid)
            continue;
        sqlite3_bind_int64(w->fc_upsert, 1, f->session);
        sqlite3_bind_int64(w->fc_upsert, 2, f->fid);
        sqlite3_bind_int64(w->fc_upsert, 3, f->count);
        int rc = sqlite3_step(w->fc_upsert);
        sqlite3_reset(w->fc_upsert);
        if (rc != SQLITE_DONE)
            return -1;
        f->fid = 0;
    }
    w->fc_n = 0;
    sqlite3_bind_int64(w->meta_set, 1, w->next_id);
    int rc = sqlite3_step(w->meta_set);
    sqlite3_reset(w->meta_set);
    if (rc != SQLITE_DONE)
        return -1;
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    w->in_txn = false;
    for (int i = 0; i < w->nsess; i++)
        w->sess[i].batch_events = 0;
    return 0;
}

/* Records a pid of the session in session_pids the first time the writer sees it. */
static int note_pid(struct writer *w, struct wsess *ws, int32_t pid)
{
    for (int i = 0; i < ws->npids; i++)
        if (ws->pids[i] == pid) {
            /* Move to front: the next event is most likely from the same process. */
            ws->pids[i] = ws->pids[0];
            ws->pids[0] = pid;
            return 0;
        }
    if (ws->npids == ws->pids_cap) {
        int ncap = ws->pids_cap ? ws->pids_cap * 2 : 4;
        int32_t *n = realloc(ws->pids, ncap * sizeof *n);
        if (!n)
            return -1;
        ws->pids = n;
        ws->pids_cap = ncap;
    }
    sqlite3_bind_int64(w->pid_ins, 1, ws->key);
    sqlite3_bind_int(w->pid_ins, 2, pid);
    int rc = sqlite3_step(w->pid_ins);
    sqlite3_reset(w->pid_ins);
    if (rc != SQLITE_DONE)
        return -1;
    ws->pids[ws->npids++] = pid;
    return 0;
}

int st_insert_event(struct writer *w, const struct event *e)
{
    struct wsess *ws = st_wsess_get(w, e->session_key);
    if (!ws)
        return -1;
    if (!ws->evictable_known) {
        sqlite3_bind_int64(w->evictable_sel, 1, e->session_key);
        ws->evictable = 0;
        if (sqlite3_step(w->evictable_sel) == SQLITE_ROW)
            ws->evictable = sqlite3_column_int64(w->evictable_sel, 0);
        if (sqlite3_reset(w->evictable_sel) != SQLITE_OK)
            return -1;
        ws->evictable_known = true;
    }
    const char *fname = e->function ? e->function : e->function_raw;
    const char *raw = fname ? (e->function_raw ? e->function_raw : "") : NULL;
    int64_t fid = intern(w, &w->fns, w->fn_ins, w->fn_sel, fname, raw);
    int64_t file = intern(w, &w->files, w->file_ins, w->file_sel, e->source_file, NULL);
    int64_t thr = intern(w, &w->threads, w->thr_ins, w->thr_sel, e->thread_name, NULL);
    if (fid < 0 || file < 0 || thr < 0)
        return -1;
    if (e->pid > 0 && note_pid(w, ws, e->pid) < 0)
        return -1;
    int64_t parent = e->parent_seq ? st_parent_get(&ws->parents, e->parent_seq) : 0;
    int64_t id = w->next_id++;

    struct pending *p = &w->pend[w->npend];
    *p = (struct pending){.id = id, .session = e->session_key, .ts_ns = e->ts_ns,
                          .thr = thr, .parent = parent, .fid = fid, .file = file,
                          .duration_ns = e->duration_ns, .type = e->type, .pid = e->pid,
                          .tid = e->tid, .line = e->line, .sampled = e->sampled};
    if (pend_text(w, p, P_ARGS, e->arguments) < 0 ||
        pend_text(w, p, P_RET, e->return_value) < 0 || pend_text(w, p, P_TEXT, e->text) < 0 ||
        pend_text(w, p, P_DATA, e->data) < 0)
        return -1;
    if (++w->npend == CHUNK_ROWS && flush_pending(w) < 0)
        return -1;

    if (e->type == EV_FUNCTION_ENTER && e->seq)
        st_parent_put(&ws->parents, e->seq, id);
    if (e->type >= EV_TYPE_MIN && e->type <= EV_TYPE_MAX)
        ws->batch_types[e->type]++;
    ws->batch_events++;
    if (event_type_evictable(e->type))
        ws->evictable++;
    ws->touched = true;
    if (e->type == EV_FUNCTION_ENTER && fid > 0 && fcount_add(w, e->session_key, fid) < 0)
        return -1;
    w->batch_n++;
    return 0;
}
