/*
 * hwwatch.c - hardware data watchpoints. See hwwatch.h.
 *
 * State: four slots (one per debug register; a slot's index is its DR number),
 * the processes with the mask of slots that apply to each and the last value each
 * slot's address held there (a forked child's memory is its own), and per thread
 * the generation of the registers it was given. Every change of a slot or of a
 * process's mask bumps the generation; a thread in a stop whose generation is
 * older gets its registers rewritten (gdb's order: DR7 = 0 first, so that the old
 * lengths never make a new address look misaligned, then the addresses, then DR7).
 *
 * Which SIGTRAPs are ours: si_code TRAP_HWBKPT (a data breakpoint fired; DR6 says
 * which), or DR6 B0-B3 set on a trap that is neither an int3 (SI_KERNEL) nor sent
 * by kill (si_code <= 0). An int3 trap is never ours: the breakpoint table's
 * owners take it. A TRAP_HWBKPT whose slot was disarmed meanwhile (the hit was
 * pending while the threads were held for the unwatch) is swallowed.
 *
 * Hits and holds: a thread that hit a watch just as hold() interrupted it reports
 * the interrupt first (ptrace reports a PTRACE_INTERRUPT before pending signals) with
 * the SIGTRAP still queued and DR6 saying which watch fired. Held threads may run
 * injected code (inject.c steps a syscall) or be stepped before release, and every
 * debug exception starts DR6 afresh, so hold() records such a hit at once
 * (hwwatch_collect: DR6 B0-B3 set) and clears DR6; the SIGTRAP that follows is then
 * swallowed (TRAP_HWBKPT, no bits), and step_insn retries a step whose stop was that
 * queued SIGTRAP (hwwatch_queued_trap: TRAP_HWBKPT without DR6.BS; the instruction
 * had not run). A hit reported as the held stop itself is recorded at once too.
 * A step over an instruction that writes a watched address ends in one SIGTRAP with
 * DR6.BS and Bn both set (si_code TRAP_TRACE): the tracer records it after the step
 * (hwwatch_after_step).
 *
 * The line of a hit: the trap comes after the writing instruction, so rip is the
 * next instruction, which may be on the next line. rip - 1 is the last byte of the
 * writing instruction itself (for any instruction that falls through), so the
 * innermost frame is looked up at rip - 1. The exceptions are a call (it writes
 * the return address, then jumps) and a rep string instruction interrupted between
 * iterations (rip is still on it): watches on program data meet neither in
 * practice, and the frame then names the instruction before.
 */
#include "ptrace/watch/hwwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/event.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/u64map.h"
#include "dwarf/value.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/proc/symbolize.h"
#include "ptrace/proc/unwind.h"

#ifndef TRAP_HWBKPT
#define TRAP_HWBKPT 4
#endif

#define DR_OFFSET(i) (offsetof(struct user, u_debugreg) + (size_t)(i) * sizeof(long))
#define DR6_HITS 0xFu
#define DR6_BS (1u << 14)
#define MAX_STEPS 256
#define VALUE_TEXT_MAX 160

struct wslot {
    bool used;
    int id;
    struct hwwatch_spec spec;
    int64_t hits;
    int64_t set_ns;                /* CLOCK_MONOTONIC when armed: hits / age is its rate */
    int64_t work_ns;               /* time spent recording its hits */
};

struct wproc {
    pid_t tgid;
    unsigned mask;                 /* slots that apply to this process */
    unsigned char last[HWWATCH_SLOTS][8];
    int memfd;                     /* -1 until needed */
    struct modules ms;             /* cached for symbolizing hits */
    struct unwind_cache *uc;       /* cached for unwinding them */
};

/* A thread's registers and its name, read again when older than 50 ms at a hit. */
struct wthread {
    uintptr_t gen;                 /* the generation of its debug registers */
    char name[32];
    int64_t name_read_ns;
};

/* Where a hit happened: the frames as JSON and the frame of the program's own code.
 * Symbolizing is the dear part of a hit (a module's index is checked on disk for
 * each frame without debug info), and a watched variable is written from the same
 * few stacks again and again: the result is kept per (process, frame pcs). */
struct where {
    pid_t tgid;
    uint64_t pcs[HWWATCH_MAX_FRAMES];
    size_t n_pcs;
    char *frames_json;             /* [{"function","file","line"}...] */
    char *function, *file;         /* the own frame's; NULL when unknown */
    int line;
    size_t own;
};

#define WHERE_CACHE 64

struct hwwatch {
    struct hwwatch_config cfg;
    struct wslot slots[HWWATCH_SLOTS];
    struct hwwatch_info ended[HWWATCH_ENDED_KEPT]; /* oldest first */
    int n_ended;
    int next_id;
    uintptr_t gen;                 /* 0: no watch was ever armed */
    struct u64map procs;           /* tgid -> struct wproc */
    struct u64map threads;         /* tid -> struct wthread */
    struct where where_cache[WHERE_CACHE];
};

static void where_clear(struct where *wh);
static void where_forget(struct hwwatch *w, pid_t tgid);

struct hwwatch *hwwatch_new(const struct hwwatch_config *cfg)
{
    struct hwwatch *w = calloc(1, sizeof *w);
    if (w) {
        w->cfg = *cfg;
        w->next_id = 1;
    }
    return w;
}

static void proc_free(struct wproc *p)
{
    if (!p)
        return;
    if (p->memfd >= 0)
        close(p->memfd);
    free(p->ms.m);
    unwind_cache_free(p->uc);
    free(p);
}

static void free_proc_entry(uint64_t key, void *value, void *arg)
{
    (void)key, (void)arg;
    proc_free(value);
}

static void free_thread_entry(uint64_t key, void *value, void *arg)
{
    (void)key, (void)arg;
    free(value);
}

void hwwatch_free(struct hwwatch *w)
{
    if (!w)
        return;
    u64map_each(&w->procs, free_proc_entry, NULL);
    u64map_free(&w->procs);
    u64map_each(&w->threads, free_thread_entry, NULL);
    for (int i = 0; i < WHERE_CACHE; i++)
        where_clear(&w->where_cache[i]);
    u64map_free(&w->threads);
    free(w);
}

/* ---- processes --------------------------------------------------------------------- */

static struct wproc *proc_find(const struct hwwatch *w, pid_t tgid)
{
    return u64map_get(&w->procs, (uint64_t)tgid);
}

/* The record of tgid, made when missing: a process seen before the fork event of
 * its parent inherits the parent's watches here. */
static struct wproc *proc_get(struct hwwatch *w, pid_t tgid)
{
    struct wproc *p = proc_find(w, tgid);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->tgid = tgid;
    p->memfd = -1;
    pid_t ppid = procmem_parent(tgid);
    const struct wproc *parent = ppid > 0 ? proc_find(w, ppid) : NULL;
    if (parent) {
        p->mask = parent->mask;
        memcpy(p->last, parent->last, sizeof p->last);
    }
    if (u64map_put(&w->procs, (uint64_t)tgid, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static int proc_memfd(struct wproc *p)
{
    if (p->memfd < 0)
        p->memfd = procmem_open(p->tgid);
    return p->memfd;
}

struct mask_scan {
    unsigned bit;
    bool found;
};

static void scan_mask(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct wproc *p = value;
    struct mask_scan *s = arg;
    if (p->mask & s->bit)
        s->found = true;
}

static void keep_ended(struct hwwatch *w, const struct hwwatch_info *info)
{
    if (w->n_ended == HWWATCH_ENDED_KEPT) {
        memmove(&w->ended[0], &w->ended[1], (HWWATCH_ENDED_KEPT - 1) * sizeof w->ended[0]);
        w->n_ended--;
    }
    w->ended[w->n_ended++] = *info;
}

static void slot_info(const struct wslot *s, struct hwwatch_info *out)
{
    *out = (struct hwwatch_info){.id = s->id, .spec = s->spec, .hits = s->hits,
                                 .set_ns = s->set_ns, .work_ns = s->work_ns,
                                 .active = true};
}

/* Slots in mask that no process has any more end, for why. */
static void end_orphans(struct hwwatch *w, unsigned mask, const char *why)
{
    for (int i = 0; i < HWWATCH_SLOTS; i++) {
        struct wslot *s = &w->slots[i];
        if (!(mask & (1u << i)) || !s->used)
            continue;
        struct mask_scan sc = {1u << i, false};
        u64map_each(&w->procs, scan_mask, &sc);
        if (sc.found)
            continue;
        struct hwwatch_info info;
        slot_info(s, &info);
        info.active = false;
        snprintf(info.ended, sizeof info.ended, "%s", why);
        keep_ended(w, &info);
        log_info("watch %d (%s) ended: %s", s->id, s->spec.label, why);
        s->used = false;
    }
}

/* ---- debug registers ---------------------------------------------------------------- */

static int poke_dr(pid_t tid, int i, unsigned long v)
{
    errno = 0;
    return ptrace(PTRACE_POKEUSER, tid, (void *)DR_OFFSET(i), (void *)v) == 0 ? 0 : errno;
}

static bool peek_dr(pid_t tid, int i, unsigned long *v)
{
    errno = 0;
    long r = ptrace(PTRACE_PEEKUSER, tid, (void *)DR_OFFSET(i), 0);
    if (r == -1 && errno)
        return false;
    *v = (unsigned long)r;
    return true;
}

static unsigned long len_bits(size_t size)
{
    switch (size) {
    case 1: return 0;
    case 2: return 1;
    case 8: return 2;
    default: return 3; /* 4 */
    }
}

static unsigned long dr7_for(const struct hwwatch *w, unsigned mask)
{
    unsigned long dr7 = 0;
    for (int i = 0; i < HWWATCH_SLOTS; i++) {
        const struct wslot *s = &w->slots[i];
        if (!(mask & (1u << i)) || !s->used)
            continue;
        unsigned long rw = s->spec.readwrite ? 3 : 1;
        dr7 |= 1ul << (2 * i);
        dr7 |= (rw | len_bits(s->spec.size) << 2) << (16 + 4 * i);
    }
    return dr7;
}

int hwwatch_on_stop(struct hwwatch *w, pid_t tid, pid_t tgid)
{
    if (!w || !w->gen)
        return 0;
    struct wthread *th = u64map_get(&w->threads, (uint64_t)tid);
    if (th && th->gen == w->gen)
        return 0;
    struct wproc *p = proc_get(w, tgid);
    unsigned mask = p ? p->mask : 0;
    int err = poke_dr(tid, 7, 0);
    for (int i = 0; !err && i < HWWATCH_SLOTS; i++)
        if ((mask & (1u << i)) && w->slots[i].used)
            err = poke_dr(tid, i, w->slots[i].spec.address);
    unsigned long dr7 = dr7_for(w, mask);
    if (!err && dr7)
        err = poke_dr(tid, 7, dr7);
    if (!err && !th && (th = calloc(1, sizeof *th)) &&
        u64map_put(&w->threads, (uint64_t)tid, th) != 0) {
        free(th);
        th = NULL;
    }
    if (!err && th)
        th->gen = w->gen;
    else if (err != ESRCH)
        log_warn("tid %d: cannot write the debug registers: %s", (int)tid, strerror(err));
    return err;
}

/* ---- watches ------------------------------------------------------------------------ */

static void value_text(struct strbuf *out, const struct hwwatch_spec *s,
                       const unsigned char *bytes, int memfd)
{
    struct value_opts o = {.max_depth = 1, .max_string = 64, .max_array = 8,
                           .max_output = 512};
    if (s->type && s->type->size == s->size)
        value_json(out, s->type, bytes, procmem_read_ctx, &memfd, &o);
    else {
        uint64_t v = 0;
        memcpy(&v, bytes, s->size);
        sb_printf(out, "%llu", (unsigned long long)v);
    }
}

int hwwatch_arm(struct hwwatch *w, const struct hwwatch_spec *spec, const pid_t *pids,
                int n, struct strobe_error *e)
{
    int free_slot = -1;
    for (int i = 0; i < HWWATCH_SLOTS && free_slot < 0; i++)
        if (!w->slots[i].used)
            free_slot = i;
    if (free_slot < 0) {
        struct strbuf sb = {0};
        for (int i = 0; i < HWWATCH_SLOTS; i++)
            sb_printf(&sb, "%s#%d %s (%s, pid %d)", i ? ", " : "", w->slots[i].id,
                      w->slots[i].spec.label, w->slots[i].spec.readwrite ? "readwrite"
                                                                           : "write",
                      (int)w->slots[i].spec.pid);
        err_set(e, ERR_WATCH_SLOTS_FULL, "all %d hardware watch slots (x86 debug registers "
                "DR0-DR3) are in use: %s. Remove one (unwatch with its watchId) to watch "
                "%s.", HWWATCH_SLOTS, sb.buf ? sb.buf : "", spec->label);
        sb_free(&sb);
        return -1;
    }
    struct wslot *s = &w->slots[free_slot];
    *s = (struct wslot){.used = true, .id = w->next_id++, .spec = *spec, .set_ns = mono_ns()};
    unsigned bit = 1u << free_slot;
    for (int k = 0; k < n; k++) {
        struct wproc *p = proc_get(w, pids[k]);
        if (!p)
            continue;
        p->mask |= bit;
        memset(p->last[free_slot], 0, sizeof p->last[free_slot]);
        procmem_read(proc_memfd(p), spec->address, p->last[free_slot], spec->size);
    }
    w->gen++;
    return s->id;
}

static int slot_of(const struct hwwatch *w, int id)
{
    for (int i = 0; i < HWWATCH_SLOTS; i++)
        if (w->slots[i].used && w->slots[i].id == id)
            return i;
    return -1;
}

struct clear_scan {
    unsigned bit;
};

static void clear_bit(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct wproc *p = value;
    p->mask &= ~((struct clear_scan *)arg)->bit;
}

bool hwwatch_disarm(struct hwwatch *w, int id, struct hwwatch_info *removed)
{
    int i = slot_of(w, id);
    if (i >= 0) {
        slot_info(&w->slots[i], removed);
        struct clear_scan cs = {1u << i};
        u64map_each(&w->procs, clear_bit, &cs);
        w->slots[i].used = false;
        w->gen++;
        return true;
    }
    for (int k = 0; k < w->n_ended; k++)
        if (w->ended[k].id == id) {
            *removed = w->ended[k];
            memmove(&w->ended[k], &w->ended[k + 1],
                    (size_t)(w->n_ended - k - 1) * sizeof w->ended[0]);
            w->n_ended--;
            return true;
        }
    return false;
}

int hwwatch_list(const struct hwwatch *w, struct hwwatch_info *out, int max)
{
    int n = 0;
    for (int i = 0; i < HWWATCH_SLOTS; i++)
        if (w->slots[i].used) {
            if (n < max)
                slot_info(&w->slots[i], &out[n]);
            n++;
        }
    for (int k = 0; k < w->n_ended; k++) {
        if (n < max)
            out[n] = w->ended[k];
        n++;
    }
    return n;
}

bool hwwatch_value(const struct hwwatch *w, int id, pid_t pid, char *out, size_t cap)
{
    int i = slot_of(w, id);
    struct wproc *p = proc_find(w, pid);
    if (i < 0 || !p || cap == 0)
        return false;
    const struct hwwatch_spec *s = &w->slots[i].spec;
    unsigned char bytes[8] = {0};
    int fd = proc_memfd(p);
    if (!procmem_read(fd, s->address, bytes, s->size))
        return false;
    struct strbuf sb = {0};
    value_text(&sb, s, bytes, fd);
    snprintf(out, cap, "%s", sb.buf ? sb.buf : "null");
    sb_free(&sb);
    return true;
}

void hwwatch_note_write(struct hwwatch *w, pid_t tgid, uint64_t addr, const void *bytes,
                        size_t len)
{
    struct wproc *p = w && w->gen ? proc_find(w, tgid) : NULL;
    if (!p)
        return;
    for (int i = 0; i < HWWATCH_SLOTS; i++) {
        const struct hwwatch_spec *s = &w->slots[i].spec;
        if (!(p->mask & (1u << i)) || !w->slots[i].used || addr >= s->address + s->size ||
            addr + len <= s->address)
            continue;
        uint64_t from = addr > s->address ? addr : s->address;
        uint64_t to = addr + len < s->address + s->size ? addr + len : s->address + s->size;
        memcpy(p->last[i] + (from - s->address), (const unsigned char *)bytes + (from - addr),
               to - from);
    }
}

/* ---- process life ------------------------------------------------------------------- */

void hwwatch_on_fork(struct hwwatch *w, pid_t parent, pid_t child)
{
    if (!w || !w->gen)
        return;
    const struct wproc *pp = proc_find(w, parent);
    struct wproc *c = proc_get(w, child);
    if (!c)
        return;
    if (pp && c != pp) {
        c->mask = pp->mask;
        memcpy(c->last, pp->last, sizeof c->last);
    }
    free(u64map_del(&w->threads, (uint64_t)child));
}

void hwwatch_on_exec(struct hwwatch *w, pid_t tgid)
{
    if (!w || !w->gen)
        return;
    free(u64map_del(&w->threads, (uint64_t)tgid));
    struct wproc *p = proc_find(w, tgid);
    if (!p)
        return;
    unsigned mask = p->mask;
    p->mask = 0;
    if (p->memfd >= 0)
        close(p->memfd); /* the old address space's */
    p->memfd = -1;
    free(p->ms.m);
    p->ms = (struct modules){0};
    unwind_cache_free(p->uc);
    p->uc = NULL;
    where_forget(w, tgid);
    if (mask) {
        char why[160];
        snprintf(why, sizeof why, "process %d exec'd another program (an exec clears the "
                 "debug registers and the watched address is gone)", (int)tgid);
        end_orphans(w, mask, why);
    }
}

void hwwatch_on_exit(struct hwwatch *w, pid_t tid, bool process)
{
    if (!w || !w->gen)
        return;
    free(u64map_del(&w->threads, (uint64_t)tid));
    if (!process)
        return;
    struct wproc *p = u64map_del(&w->procs, (uint64_t)tid);
    if (!p)
        return;
    unsigned mask = p->mask;
    proc_free(p);
    if (mask) {
        char why[160];
        snprintf(why, sizeof why, "process %d exited", (int)tid);
        end_orphans(w, mask, why);
    }
}

/* ---- hits --------------------------------------------------------------------------- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void where_clear(struct where *wh)
{
    free(wh->frames_json);
    free(wh->function);
    free(wh->file);
    *wh = (struct where){0};
}

/* Forgets the stacks of process tgid (it exec'd: its addresses mean other code). */
static void where_forget(struct hwwatch *w, pid_t tgid)
{
    for (int i = 0; i < WHERE_CACHE; i++)
        if (w->where_cache[i].tgid == tgid)
            where_clear(&w->where_cache[i]);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void where_fill(struct where *wh, const struct symbolized *sy)
{
    struct strbuf d = {0};
    sb_puts(&d, "[");
    for (size_t i = 0; i < sy->n && i < HWWATCH_MAX_FRAMES; i++) {
        const struct shown_frame *f = &sy->frames[i];
        sb_puts(&d, i ? ",{\"function\":" : "{\"function\":");
        sb_json_string(&d, f->function ? f->function : "??");
        if (f->file) {
            sb_puts(&d, ",\"file\":");
            sb_json_string(&d, f->file);
            sb_printf(&d, ",\"line\":%d", f->line);
        }
        sb_puts(&d, "}");
    }
    sb_puts(&d, "]");
    wh->frames_json = sb_take(&d);
    wh->own = sy->n ? symbolize_own_frame(sy) : 0;
    const struct shown_frame *top = sy->n ? &sy->frames[wh->own] : NULL;
    wh->function = top ? dup_or_null(top->function) : NULL;
    wh->file = top ? dup_or_null(top->file) : NULL;
    wh->line = top ? top->line : 0;
}

/* Where thread tid of p is: its stack unwound (the innermost frame looked up at the
 * writing instruction, rip - 1) and symbolized, or taken from the cache. NULL when
 * the stack cannot be read. */
static const struct where *hit_where(struct hwwatch *w, struct wproc *p, pid_t tid)
{
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return NULL;
    uint64_t pc = regs.rip;
    if (w->cfg.unwind)
        w->cfg.unwind(w->cfg.unwind_arg, tid, &pc, false);
    struct user_regs_struct shown = regs;
    shown.rip = pc;
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &shown);
    if (!p->uc)
        p->uc = unwind_cache_new(p->tgid);
    struct unwind_result uw;
    bool ok = p->uc && unwind_thread_cached(p->uc, tid, proc_memfd(p), HWWATCH_MAX_FRAMES,
                                            MAX_STEPS, &uw) == 0;
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &regs);
    if (w->cfg.unwind)
        w->cfg.unwind(w->cfg.unwind_arg, tid, NULL, true);
    if (!ok)
        return NULL;
    if (uw.n && pc == regs.rip)
        uw.frames[0].pc -= 1;
    uint64_t hash = (uint64_t)p->tgid * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < uw.n; i++)
        hash = (hash ^ uw.frames[i].pc) * 0x100000001B3ull;
    struct where *wh = &w->where_cache[hash % WHERE_CACHE];
    bool same = wh->frames_json && wh->tgid == p->tgid && wh->n_pcs == uw.n;
    for (size_t i = 0; same && i < uw.n; i++)
        same = wh->pcs[i] == uw.frames[i].pc;
    if (!same) {
        where_clear(wh);
        if (!p->ms.m || (uw.n && !symbolize_module_of(&p->ms, uw.frames[0].pc))) {
            free(p->ms.m);
            p->ms = (struct modules){0};
            procmem_modules(p->tgid, &p->ms.m, &p->ms.n);
        }
        struct symbolized sy = {0};
        symbolize(&uw, &p->ms, &sy);
        wh->tgid = p->tgid;
        wh->n_pcs = uw.n < HWWATCH_MAX_FRAMES ? uw.n : HWWATCH_MAX_FRAMES;
        for (size_t i = 0; i < wh->n_pcs; i++)
            wh->pcs[i] = uw.frames[i].pc;
        where_fill(wh, &sy);
        symbolize_free(&sy);
    }
    unwind_result_free(&uw);
    return wh;
}

static void push_hit(struct hwwatch *w, struct wslot *s, int slot, struct wproc *p, pid_t tid,
                     const struct where *wh, const char *tname, int64_t ts)
{
    int fd = proc_memfd(p);
    unsigned char now[8] = {0};
    bool readable = procmem_read(fd, s->spec.address, now, s->spec.size);
    bool changed = readable && memcmp(now, p->last[slot], s->spec.size) != 0;
    struct strbuf oldv = {0}, newv = {0}, d = {0}, text = {0};
    value_text(&oldv, &s->spec, p->last[slot], fd);
    if (readable)
        value_text(&newv, &s->spec, now, fd);
    else
        sb_printf(&newv, "\"<unreadable 0x%llx>\"", (unsigned long long)s->spec.address);
    if (readable)
        memcpy(p->last[slot], now, s->spec.size);
    s->hits++;

    const char *access = changed ? "write" : s->spec.readwrite ? "access (read, or a write "
                                                                 "of the same value)"
                                                               : "write of the same value";
    sb_printf(&text, "%s: %.*s -> %.*s (%s", s->spec.label, VALUE_TEXT_MAX,
              oldv.buf ? oldv.buf : "null", VALUE_TEXT_MAX, newv.buf ? newv.buf : "null",
              access);
    if (wh && wh->function) {
        sb_printf(&text, " in %s", wh->function);
        if (wh->file)
            sb_printf(&text, " at %s:%d", base_name(wh->file), wh->line);
    }
    sb_puts(&text, ")");

    sb_printf(&d, "{\"watchId\":%d,\"label\":", s->id);
    sb_json_string(&d, s->spec.label);
    sb_printf(&d, ",\"address\":\"0x%llx\",\"size\":%zu,\"access\":\"%s\",\"oldValue\":%s,"
              "\"newValue\":%s,\"changed\":%s,\"hits\":%lld,\"frames\":%s,\"ownFrame\":%zu}",
              (unsigned long long)s->spec.address, s->spec.size,
              s->spec.readwrite ? "readwrite" : "write", oldv.buf ? oldv.buf : "null",
              newv.buf ? newv.buf : "null", changed ? "true" : "false", (long long)s->hits,
              wh ? wh->frames_json : "[]", wh ? wh->own : 0);

    if (w->cfg.sink.ring) {
        struct event ev = event_sink_init(&w->cfg.sink, EV_WATCH_HIT, ts);
        ev.pid = p->tgid;
        ev.tid = tid;
        ev.thread_name = tname[0] ? tname : NULL;
        ev.function = wh ? wh->function : NULL;
        ev.source_file = wh ? wh->file : NULL;
        ev.line = wh ? wh->line : 0;
        ev.text = text.buf;
        ev.data = d.buf;
        event_sink_push(&w->cfg.sink, &ev);
    }
    sb_free(&oldv);
    sb_free(&newv);
    sb_free(&d);
    sb_free(&text);
}

static void record_hits(struct hwwatch *w, pid_t tid, pid_t tgid, unsigned bits)
{
    int64_t ts = mono_ns();
    struct wproc *p = proc_get(w, tgid);
    if (!p || !(bits & p->mask))
        return;
    const struct where *wh = hit_where(w, p, tid);
    char tname[32] = "";
    struct wthread *th = u64map_get(&w->threads, (uint64_t)tid);
    if (th) {
        procmem_thread_name_cached(tid, th->name, sizeof th->name, &th->name_read_ns, ts);
        memcpy(tname, th->name, sizeof tname);
    } else
        procmem_thread_name(tid, tname, sizeof tname);
    int n_hit = 0;
    for (int i = 0; i < HWWATCH_SLOTS; i++)
        if ((bits & p->mask & (1u << i)) && w->slots[i].used) {
            push_hit(w, &w->slots[i], i, p, tid, wh, tname, ts);
            n_hit++;
        }
    /* The work of this trap, shared by the watches it hit. */
    int64_t work = mono_ns() - ts;
    for (int i = 0; i < HWWATCH_SLOTS && n_hit; i++)
        if ((bits & p->mask & (1u << i)) && w->slots[i].used)
            w->slots[i].work_ns += work / n_hit;
}

bool hwwatch_on_trap(struct hwwatch *w, pid_t tid, pid_t tgid)
{
    if (!w || !w->gen)
        return false;
    siginfo_t si;
    if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0 || si.si_code <= 0 ||
        si.si_code == SI_KERNEL)
        return false;
    unsigned long dr6 = 0;
    if (!peek_dr(tid, 6, &dr6))
        return false;
    unsigned bits = (unsigned)dr6 & DR6_HITS;
    if (si.si_code != TRAP_HWBKPT && !bits)
        return false;
    if (bits)
        record_hits(w, tid, tgid, bits);
    poke_dr(tid, 6, 0);
    return true;
}

void hwwatch_after_step(struct hwwatch *w, pid_t tid, pid_t tgid)
{
    if (!w || !w->gen)
        return;
    unsigned long dr6 = 0;
    if (!peek_dr(tid, 6, &dr6) || !(dr6 & DR6_HITS))
        return;
    record_hits(w, tid, tgid, (unsigned)dr6 & DR6_HITS);
    poke_dr(tid, 6, 0);
}

void hwwatch_collect(struct hwwatch *w, pid_t tid, pid_t tgid)
{
    hwwatch_after_step(w, tid, tgid);
}

bool hwwatch_queued_trap(pid_t tid)
{
    siginfo_t si;
    unsigned long dr6 = 0;
    return ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code == TRAP_HWBKPT &&
           peek_dr(tid, 6, &dr6) && !(dr6 & DR6_BS);
}
