/*
 * fast_drain.c - the fast path's records turned into events (the drain, on the
 * tracer thread: the same function_enter and function_exit events the int3 path
 * makes, hooks_trap.c), how far the drains have caught up (hooks_fast_floor: the
 * store orders event ids by time, and these events come late), and the capture
 * programs behind the memory those events show (capprog.h): learned from a
 * function's first call at the recorder's stop, extended by the drain when an event
 * reads past its copies, written into every process of the image.
 *
 * The floor: the recorder reads rdtsc after it reserves a record, so a record
 * reserved after a drain read head is stamped after that drain's clock pair (read
 * before head). Once the tail reaches a drain's head, every record left was reserved
 * after it: the process's floor is that drain's time. A record half written (its
 * thread preempted, or stopped by the tracer, inside the recorder) keeps the tail,
 * and the floor, back until it is published. FLOOR_MARGIN_NS covers the line that
 * maps rdtsc to the clock (fastpath.c): refitted at each drain, it may put a record
 * a little before the drain whose head preceded it (NTP slews the clock by up to
 * 500 ppm; the margin covers two seconds of it).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "base/ring.h"
#include "base/u64map.h"
#include "dwarf/abi.h"
#include "ptrace/hooks/capprog.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/fastpath_internal.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/procmem.h"

#define DRAIN_MAX_RECORDS 16384      /* per drain: the tracer has other work */
#define FLOOR_MARGIN_NS 1000000

/* ---- followed writes (hook_output) ------------------------------------------------ */

_Static_assert(FAST_OUT_PREFIX == sizeof(((struct thread *)0)->write_prefix), "prefix");

/* The enter of a write to the output the recorder follows: its pipe and first bytes
 * wait on the thread for its return. */
static void output_entered(struct thread *t, const struct fast_record *r)
{
    uint8_t plen = (uint8_t)(r->spare[3] & 0xff), stream = (uint8_t)(r->spare[3] >> 8);
    t->writing = stream == 1 || stream == 2;
    t->write_stream = stream;
    t->write_plen = plen <= FAST_OUT_PREFIX ? plen : 0;
    t->write_rsp = r->rsp;
    memcpy(t->write_prefix, r->spare, FAST_OUT_PREFIX);
}

/* Its return: what it wrote (rax bytes) is told at the end of the drain. */
static void output_returned(struct hooks *h, struct thread *t, const struct fast_record *r)
{
    struct fastpath *fp = h->fast;
    if (!t->writing || t->write_rsp != r->rsp)
        return;
    t->writing = false;
    if ((int64_t)r->regs[0] <= 0 || !h->cfg.output.wrote)
        return;
    if (fp->n_wrote == fp->cap_wrote) {
        size_t cap = fp->cap_wrote ? 2 * fp->cap_wrote : 64;
        struct fast_wrote *w = realloc(fp->wrote, cap * sizeof *w);
        if (!w)
            return; /* its bytes take their read's time */
        fp->wrote = w;
        fp->cap_wrote = cap;
    }
    struct fast_wrote *w = &fp->wrote[fp->n_wrote++];
    *w = (struct fast_wrote){.ts_ns = fastpath_tsc_to_ns(fp, r->tsc), .n = (size_t)r->regs[0],
                             .stream = t->write_stream, .plen = t->write_plen};
    memcpy(w->prefix, t->write_prefix, sizeof w->prefix);
}

static int by_time(const void *a, const void *b)
{
    const struct fast_wrote *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The writes this drain found returned, told in their time order (each process's
 * ring is drained in turn: the pipe has them in the order they returned). */
static void tell_writes(struct hooks *h)
{
    struct fastpath *fp = h->fast;
    if (fp->n_wrote == 0)
        return;
    qsort(fp->wrote, fp->n_wrote, sizeof *fp->wrote, by_time);
    for (size_t i = 0; i < fp->n_wrote; i++)
        h->cfg.output.wrote(h->cfg.output.arg, fp->wrote[i].stream, fp->wrote[i].prefix,
                            fp->wrote[i].plen, fp->wrote[i].n, fp->wrote[i].ts_ns);
    fp->n_wrote = 0;
}

static void writing_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct thread *t = value;
    if (t->writing)
        *(bool *)arg = true;
}

bool hooks_fast_writing(const struct hooks *h)
{
    bool writing = false;
    if (h->fast)
        u64map_each(&h->threads, writing_in, &writing);
    return writing;
}

/* ---- the drain ---------------------------------------------------------------------- */

/* The thread of a record of p. A thread's exit drains the rings, but a drain stops
 * at a reservation another thread is still writing: records of a thread that has
 * exited (and been forgotten) can come later. It is made again for them, and
 * forgotten once its frames are (record_done). */
static struct thread *record_thread(struct hooks *h, const struct process *p, int32_t tid)
{
    if (tid <= 0)
        return NULL;
    struct thread *t = u64map_get(&h->threads, (uint64_t)tid);
    if (t)
        return t;
    bool alive = procmem_tgid(tid) == p->tgid;
    t = hooks_state_thread_in(h, tid, p->tgid);
    if (t)
        t->gone = !alive;
    return t;
}

static void record_done(struct hooks *h, struct thread *t)
{
    if (t->gone && t->depth == 0)
        hooks_state_thread_forget(h, t);
}

/* The function (*k) and thread of record r of p; NULL when either is unknown. */
static struct thread *record_owner(struct hooks *h, const struct process *p,
                                   const struct fast_record *r, struct hook **k)
{
    struct fastpath *fp = h->fast;
    *k = r->fn < fp->n_fns ? fp->fns[r->fn] : NULL;
    return *k ? record_thread(h, p, r->tid) : NULL;
}

/* Whether the session's event ring is used up to quarters (of 4) of its capacity
 * at most: the drain never waits for the store (the tracer would stop serving), it
 * leaves the records in the target's ring, where a full ring is counted per
 * function (fast_fn.lost). */
static bool sink_has_room(const struct hooks *h, int quarters)
{
    const struct ring *r = h->cfg.sink.ring;
    return !r || ring_used(r) <= (size_t)quarters * ring_max_record(r);
}

/* An enter record; no_room: the event ring is half full (a complete drain). The
 * call of a function that has used its quota (trace.sampleAfter recorded calls: a
 * flood) is then followed as a silent frame and counted as ring-full: waiting for
 * the store for a flood would stall the tracer, and its drains, behind the store's
 * time order (store/order.c), and the target's ring would fill meanwhile. A call of
 * a function within its quota is recorded all the same, its push waiting for room
 * if it must: at most trace.sampleAfter such waits per function, and a flood does
 * not take a rare function's calls (fast_budget.c). It used to be dropped past the
 * ring's third quarter: 1 call in 8,000 of a short program whose threads end (a
 * complete drain at each exit) went while the store was busy elsewhere. */
static void on_enter_record(struct hooks *h, struct process *p, const struct fast_record *r,
                            const struct fast_record *more, int n_more, bool no_room)
{
    struct fastpath *fp = h->fast;
    struct hook *k;
    struct thread *t = record_owner(h, p, r, &k);
    if (!t)
        return;
    bool unrecorded = no_room && (int64_t)k->recorded >= h->cfg.tuning.sample_after;
    struct abi_regs a = {.rdi = r->regs[0]};
    a.rsi = r->regs[1];
    a.rdx = r->regs[2];
    a.rcx = r->regs[3];
    a.r8 = r->regs[4];
    a.r9 = r->regs[5];
    a.rsp = r->rsp;
    /* Its FAST_REC_XMM record (no header) is there when its flags have FAST_FN_FP,
     * which is k->needs_fp for good; its program's DATA records follow. */
    if (n_more > 0 && k->needs_fp) {
        memcpy(a.xmm, &more[0], sizeof a.xmm);
        more++;
        n_more--;
    }
    if (unrecorded && k->role == HOOK_TRACE)
        k->ring_full_folded++;
    if (k->role == HOOK_OUTPUT)
        output_entered(t, r);

    struct hk_call c = {.regs = &a, .ret = r->ret, .tail = (r->flags & FAST_F_TAIL) != 0,
                        .push = !(r->flags & FAST_F_NO_EXIT), .fast = true,
                        .silent = unrecorded || k->role != HOOK_TRACE,
                        .now = fastpath_tsc_to_ns(fp, r->tsc)};
    c.mem = fast_learn_record_reader(h, p, k, false, &a, r->rsp, more, n_more);
    hooks_calls_entered(h, t, k, &c);
    record_done(h, t);
    if (fp->cc->changed)
        fast_learn_write_prog(h, k, false);
}

static void on_exit_record(struct hooks *h, struct process *p, const struct fast_record *r,
                           const struct fast_record *more, int n_more)
{
    struct fastpath *fp = h->fast;
    struct hook *k;
    struct thread *t = record_owner(h, p, r, &k);
    if (!t)
        return;
    if (k->role == HOOK_OUTPUT)
        output_returned(h, t, r);
    struct abi_regs a = {.rax = r->regs[0], .rdx = r->regs[1]};
    memcpy(a.xmm[0], &r->regs[2], 8);
    memcpy(a.xmm[1], &r->regs[3], 8);
    a.rsp = r->rsp + 8;
    struct hk_mem mem = fast_learn_record_reader(h, p, k, true, &a, r->rsp, more, n_more);
    hooks_calls_returned(h, t, r->rsp, &a, fastpath_tsc_to_ns(fp, r->tsc), &mem);
    record_done(h, t);
    if (fp->cc->changed)
        fast_learn_write_prog(h, k, true);
}

/* After a drain that read head (at fp->ns1): p's floor (see the top of the file).
 * One later drain is remembered, whose time becomes the floor once the tail has
 * reached its head. */
static void advance_floor(const struct fastpath *fp, struct process *p, uint64_t head)
{
    if (p->fast_mark_ns && p->fast_tail >= p->fast_mark_head) {
        p->fast_floor = p->fast_mark_ns;
        p->fast_mark_ns = 0;
    }
    if (p->fast_tail >= head) {
        p->fast_floor = fp->ns1;
        p->fast_mark_ns = 0;
    } else if (!p->fast_mark_ns) {
        p->fast_mark_head = head;
        p->fast_mark_ns = fp->ns1;
    }
}

/* Reads the records of p from its tail on, stopping at a reservation still being
 * written; false when its memory cannot be read (the process is gone).
 *
 * A periodic drain reads up to DRAIN_MAX_RECORDS and stops when the event ring is
 * half full: the rest waits in the target's ring. A complete one (before a trap is
 * handled, a stack unwound, a thread let go) reads everything: the shadow stacks
 * must match the threads' real stacks before an int3's frame is pushed or a
 * stack is read (an enter drained after an int3 frame of the same thread would
 * take that frame for a stale one). Its enters of functions past their quota that
 * find no room in the event ring are not recorded but still followed (silent
 * frames, counted as ring-full); the others are recorded, waiting for room if they
 * must (on_enter_record). */
static bool drain_process(struct hooks *h, struct process *p, bool complete)
{
    struct fastpath *fp = h->fast;
    uint64_t head;
    if (!procmem_read(p->memfd, fp->area + offsetof(struct fast_area, head), &head, sizeof head))
        return false;
    uint64_t start = p->fast_tail;
    p->fast_head = head;
    while (p->fast_tail < head &&
           (complete || (p->fast_tail - start < DRAIN_MAX_RECORDS && sink_has_room(h, 2)))) {
        uint64_t idx = p->fast_tail;
        size_t n = head - idx < DRAIN_BATCH ? (size_t)(head - idx) : DRAIN_BATCH;
        if (!fastpath_read_records(fp, p, idx, n, fp->buf))
            return false;
        size_t i = 0;
        bool room = true;
        while (i < n && (complete || i % 64 || (room = sink_has_room(h, 2)))) {
            const struct fast_record *r = &fp->buf[i];
            if (r->commit != (uint32_t)(idx + i + 1) || !r->nrec || i + r->nrec > n)
                break; /* being written, or read whole by the next batch */
            if (complete && i % 64 == 0)
                room = sink_has_room(h, 2);
            if (r->kind == FAST_REC_ENTER)
                on_enter_record(h, p, r, r + 1, r->nrec - 1, !room);
            else if (r->kind == FAST_REC_EXIT)
                on_exit_record(h, p, r, r + 1, r->nrec - 1);
            i += r->nrec;
        }
        if (i == 0)
            break;
        p->fast_tail = idx + i;
    }
    if (p->fast_tail != start)
        procmem_write(p->memfd, fp->area + offsetof(struct fast_area, tail), &p->fast_tail,
                      sizeof p->fast_tail);
    advance_floor(fp, p, head);
    fastpath_write_live(fp, p);
    return true;
}

struct drain_walk {
    struct hooks *h;
    bool complete;
};

static void drain_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct process *p = value;
    struct drain_walk *w = arg;
    if (p->fast_ok && !drain_process(w->h, p, w->complete))
        p->fast_ok = false;
}

static void drain(struct hooks *h, bool complete)
{
    if (!h->fast)
        return;
    fastpath_clock_pair(&h->fast->tsc1, &h->fast->ns1);
    struct drain_walk w = {h, complete};
    u64map_each(&h->procs, drain_in, &w);
    tell_writes(h);
    fast_budget_look(h, h->fast->ns1);
}

void fast_drain_complete(struct hooks *h)
{
    drain(h, true);
}

bool hooks_fast_active(const struct hooks *h)
{
    return h->fast && h->fast->n_fns > 0;
}

void hooks_fast_drain(struct hooks *h)
{
    drain(h, false);
}

static void floor_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    int64_t *floor = arg;
    if (p->fast_ok && p->fast_floor < *floor)
        *floor = p->fast_floor;
}

int64_t hooks_fast_floor(const struct hooks *h)
{
    int64_t floor = INT64_MAX;
    if (hooks_fast_active(h))
        u64map_each(&h->procs, floor_in, &floor);
    return floor == INT64_MAX ? floor : floor - FLOOR_MARGIN_NS;
}

static void name_stale(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    struct thread *t = value;
    t->name_read_ns = 0;
}

void fast_drain_point(struct hooks *h)
{
    fast_drain_complete(h);
    u64map_each(&h->threads, name_stale, NULL);
}
