/*
 * fastpath.c - the daemon's side of the in-process fast path (hooks.h, "Fast path";
 * the contract with the recorder is fast_abi.h): the area and the recorder's code
 * mapped into the image's main process, a traced function's entry jump to its
 * trampoline, and the drain that turns the records into the same function_enter and
 * function_exit events the int3 path makes (hooks_trap.c), on the tracer thread.
 *
 * The area is private anonymous memory (mmap injected like the scratch areas),
 * read and written by the daemon through /proc/PID/mem: a forked child gets a copy
 * at the same address, which the daemon makes its own at the fork (its ring
 * emptied, the thread slots of threads it does not have cleared, the forking
 * thread's slot given the child's tid): no memfd, no injection into the child.
 * The recorder's code and its return trampoline sit in one executable mapping;
 * each function's entry trampoline in a scratch area near its module (rel32).
 *
 * Time: records carry rdtsc. The daemon maps it to CLOCK_MONOTONIC with a line
 * through two points (the area's creation and the latest drain), so the error
 * shrinks as the session runs; the TSC is constant and non-stop on the machines
 * the fast path is enabled on (the CPU's flags are checked).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <x86intrin.h>

#include "base/clock.h"
#include "base/u64map.h"
#include "dwarf/abi.h"
#include "ptrace/bptab.h"
#include "ptrace/capprog.h"
#include "ptrace/fast_abi.h"
#include "ptrace/fastcode.h"
#include "ptrace/fastrec.h"
#include "ptrace/hooks_internal.h"
#include "ptrace/inject.h"
#include "ptrace/procmem.h"

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

#define CODE_SIZE (64u << 10)        /* the recorder and its return trampoline */
#define DRAIN_BATCH 512              /* records read per pread */
#define DRAIN_MAX_RECORDS 16384      /* per drain: the tracer has other work */
#define LIVE_TIMEOUT_NS 2000000000LL /* a daemon silent this long is gone */

/* The reader of the call being decoded (read_call). */
struct call_reader {
    struct capcall *cc;
    int memfd;
};

struct fastpath {
    uint64_t area;           /* the area's address (the same in every process) */
    uint64_t code;           /* the recorder's code */
    uint64_t enter, ret_tramp;
    struct hook **fns;       /* fn id -> hook */
    struct capprog (*progs)[2]; /* fn id -> its capture program: enter, exit */
    uint32_t n_fns;
    struct capcall *cc;      /* the call being decoded (one at a time) */
    struct call_reader reader;
    int64_t hot_checked;     /* when the calls counters were last read */
    /* rdtsc -> CLOCK_MONOTONIC: through (tsc0, ns0) and (tsc1, ns1). */
    uint64_t tsc0, tsc1;
    int64_t ns0, ns1;
    struct fast_record *buf; /* DRAIN_BATCH records */
};

/* ---- time ------------------------------------------------------------------------ */

static void clock_pair(uint64_t *tsc, int64_t *ns)
{
    /* The pair read closest together of three: a preemption between the two reads
     * would skew the line. */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = __rdtsc();
        int64_t n = mono_ns();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

static double ns_per_tick(const struct fastpath *fp)
{
    return (double)(fp->ns1 - fp->ns0) / (double)(fp->tsc1 - fp->tsc0);
}

static int64_t tsc_to_ns(const struct fastpath *fp, uint64_t tsc)
{
    return fp->ns1 + (int64_t)(((double)(int64_t)(tsc - fp->tsc1)) * ns_per_tick(fp));
}

/* ---- the area -------------------------------------------------------------------- */

/* The target's, not the daemon's: a daemon under valgrind runs on a CPU of
 * valgrind's that has no FSGSBASE, the target on the real one. */
static bool cpu_ok(pid_t pid)
{
    return (procmem_auxv(pid, AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
}

static uint64_t inject_map(pid_t tid, int memfd, uint64_t size, int prot)
{
    long args[6] = {0, (long)size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0};
    struct step_signals kept = {0};
    long r = inject_syscall(tid, memfd, SYS_mmap, args, &kept);
    step_signals_resend(tid, &kept);
    return r < 0 && r > -4096 ? 0 : (uint64_t)r;
}

static void write_live(const struct fastpath *fp, const struct process *p)
{
    uint64_t now = __rdtsc();
    procmem_write(p->memfd, fp->area + offsetof(struct fast_area, live), &now, sizeof now);
}

/* Maps the area and the recorder into the main process (stopped_tid, stopped).
 * NULL, with why, when the fast path cannot be used. */
static struct fastpath *fastpath_create(struct hooks *h, pid_t stopped_tid, int memfd,
                                        char *why, size_t why_cap)
{
    if (!cpu_ok(h->cfg.pid)) {
        snprintf(why, why_cap, "this CPU or kernel lacks FSGSBASE (rdfsbase)");
        return NULL;
    }
    struct fastpath *fp = calloc(1, sizeof *fp);
    if (fp) {
        fp->buf = malloc(DRAIN_BATCH * sizeof *fp->buf);
        fp->cc = malloc(sizeof *fp->cc);
    }
    if (!fp || !fp->buf || !fp->cc) {
        if (fp) {
            free(fp->buf);
            free(fp->cc);
            free(fp);
        }
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    fp->area = inject_map(stopped_tid, memfd, FAST_AREA_SIZE, PROT_READ | PROT_WRITE);
    fp->code = fp->area ? inject_map(stopped_tid, memfd, CODE_SIZE, PROT_READ | PROT_EXEC) : 0;
    uint8_t ret_code[256];
    size_t ret_len = 0;
    if (fp->code) {
        fp->enter = fp->code + fastrec_enter_offset;
        fp->ret_tramp = fp->code + ((fastrec_blob_len + 63) & ~63ul);
        ret_len = fastcode_return(ret_code, sizeof ret_code, fp->ret_tramp, fp->area,
                                  fp->code + fastrec_exit_offset);
    }
    /* A first line through two points 2 ms apart: close enough to time the first
     * records and the daemon's death; the drains refine it. */
    clock_pair(&fp->tsc0, &fp->ns0);
    do
        clock_pair(&fp->tsc1, &fp->ns1);
    while (fp->ns1 - fp->ns0 < 2000000);
    struct fast_area hdr = {.version = FAST_ABI_VERSION, .ring_records = FAST_RING_RECORDS,
                            .pid = h->cfg.pid, .ret_tramp = fp->ret_tramp,
                            .live = fp->tsc1,
                            .live_timeout_tsc =
                                (uint64_t)((double)LIVE_TIMEOUT_NS / ns_per_tick(fp))};
    if (!fp->code || !ret_len || fp->ret_tramp + ret_len > fp->code + CODE_SIZE ||
        !procmem_write(memfd, fp->code, fastrec_blob, fastrec_blob_len) ||
        !procmem_write(memfd, fp->ret_tramp, ret_code, ret_len) ||
        !procmem_write(memfd, fp->area, &hdr, sizeof hdr)) {
        snprintf(why, why_cap, "the recorder could not be mapped into process %d",
                 (int)h->cfg.pid);
        free(fp->buf);
        free(fp->cc);
        free(fp);
        return NULL;
    }
    return fp;
}

void hk_fast_free(struct hooks *h)
{
    if (!h->fast)
        return;
    free(h->fast->fns);
    free(h->fast->progs);
    free(h->fast->cc);
    free(h->fast->buf);
    free(h->fast);
    h->fast = NULL;
}

uint64_t hk_fast_ret_tramp(const struct hooks *h)
{
    return h->fast ? h->fast->ret_tramp : 0;
}

static uint64_t fn_addr(const struct fastpath *fp, uint32_t id)
{
    return fp->area + FAST_FNS_OFF + (uint64_t)id * sizeof(struct fast_fn);
}

/* What the recorder does for k's calls (fast_fn.flags): a traced function stops
 * at its first enter and exit for the daemon to learn its capture program; libc's
 * write (HOOK_OUTPUT) stops at every exit, for the tracer to read the output, and
 * a rename or an exec (HOOK_DRAIN) at every entry (fast_output.c). */
static uint32_t fn_flags(const struct hooks *h, const struct hook *k)
{
    if (k->quiet)
        return k->needs_fp ? FAST_FN_FP : 0;
    if (k->role == HOOK_DRAIN)
        return FAST_FN_RECORD | FAST_FN_TRAP_ENTER;
    bool output = k->role == HOOK_OUTPUT;
    uint32_t f = FAST_FN_RECORD;
    if (h->cfg.tuning.capture_exits || output)
        f |= FAST_FN_EXITS;
    if (k->needs_fp)
        f |= FAST_FN_FP;
    if (!output && !k->fast_learned)
        f |= FAST_FN_TRAP_ENTER;
    if ((f & FAST_FN_EXITS) && (output || !k->fast_learned_exit))
        f |= FAST_FN_TRAP_EXIT;
    return f;
}

/* Writes k's flags into every process of the image that has the area. */
struct flag_write {
    const struct fastpath *fp;
    uint64_t addr;
    uint32_t flags;
};

static void write_flags_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct flag_write *fw = arg;
    if (p->fast_ok)
        procmem_write(p->memfd, fw->addr, &fw->flags, sizeof fw->flags);
}

void hk_fast_update_flags(struct hooks *h, struct hook *k)
{
    if (!h->fast || !k->fast || fn_flags(h, k) == k->fast_flags)
        return;
    k->fast_flags = fn_flags(h, k);
    struct flag_write fw = {h->fast, fn_addr(h->fast, k->fast_id) +
                                     offsetof(struct fast_fn, flags), k->fast_flags};
    u64map_each(&h->procs, write_flags_in, &fw);
}

/* Plans k's fast-path entry: an id, its fast_fn entry, its trampoline written near
 * it. False (k->cj.why) when it cannot take one: it stays on its int3. */
bool hk_fast_plan(struct hooks *h, struct hook *k, pid_t stopped_tid, int memfd)
{
    struct process *main = hk_process_get(h, h->cfg.pid);
    if (!h->fast && !h->fast_why[0] && main) { /* one attempt per image */
        h->fast = fastpath_create(h, stopped_tid, memfd, h->fast_why, sizeof h->fast_why);
        main->fast_ok = h->fast != NULL;
        if (h->fast)
            hk_fast_hook_libc(h, stopped_tid);
    }
    struct fastpath *fp = h->fast;
    if (!fp || !main) {
        snprintf(k->cj.why, sizeof k->cj.why, "%s",
                 h->fast_why[0] ? h->fast_why : "its process is gone");
        return false;
    }
    if (fp->n_fns == FAST_MAX_FNS) {
        snprintf(k->cj.why, sizeof k->cj.why, "%d functions take the fast path already",
                 FAST_MAX_FNS);
        return false;
    }
    uint64_t len = k->fn->end > k->fn->entry ? k->fn->end - k->fn->entry : 0;
    uint8_t *code = len && len <= MAX_FUNCTION_BYTES ? malloc(len) : NULL;
    uint64_t tramp = 0;
    struct fastjump fj;
    bool ok = false;
    if (!code)
        snprintf(k->cj.why, sizeof k->cj.why, "%s", !len ? "its size is unknown"
                 : len > MAX_FUNCTION_BYTES ? "too large to check its branches"
                 : "out of memory");
    else if (!bptab_read(h->cfg.bp, memfd, k->addr, code, len))
        snprintf(k->cj.why, sizeof k->cj.why, "its code cannot be read");
    else if (!(tramp = hk_slot_near(h, stopped_tid, memfd, k->addr, k->addr + len,
                                    FASTJUMP_SLOT_SIZE)))
        snprintf(k->cj.why, sizeof k->cj.why, "no scratch memory near it");
    else if (!fastjump_plan(code, len, k->addr, tramp, fp->area, fp->enter, fp->n_fns, &fj))
        snprintf(k->cj.why, sizeof k->cj.why, "%s", fj.why);
    else
        ok = true;
    free(code);
    if (!ok)
        return false;
    struct hook **fns = fp->n_fns % 64 ? fp->fns
                      : realloc(fp->fns, (fp->n_fns + 64) * sizeof *fns);
    if (fns)
        fp->fns = fns;
    struct capprog(*progs)[2] = fp->n_fns % 64 ? fp->progs
                               : realloc(fp->progs, (fp->n_fns + 64) * sizeof *progs);
    if (progs)
        fp->progs = progs;
    if (!fns || !progs) {
        snprintf(k->cj.why, sizeof k->cj.why, "out of memory");
        return false;
    }
    k->fast_id = fp->n_fns;
    k->fast = true;
    k->fast_flags = fn_flags(h, k);
    struct fast_fn entry = {.flags = k->fast_flags};
    memset(&progs[fp->n_fns], 0, sizeof progs[fp->n_fns]);
    progs[fp->n_fns][0].max = FAST_ENTER_ITEMS;
    progs[fp->n_fns][1].max = FAST_EXIT_ITEMS;
    if (!procmem_write(memfd, fn_addr(fp, k->fast_id), &entry, sizeof entry) ||
        !hk_write_scratch(h, memfd, tramp, fj.tramp, fj.tramp_len)) {
        k->fast = false;
        snprintf(k->cj.why, sizeof k->cj.why, "its trampoline could not be written");
        return false;
    }
    fp->fns[fp->n_fns++] = k;
    memcpy(k->cj.patch, fj.patch, sizeof k->cj.patch);
    k->cj.displaced = fj.displaced;
    k->fast_resume = fj.resume;
    k->cj.tramp_len = (uint8_t)(fj.tramp_len > 255 ? 255 : fj.tramp_len);
    k->tramp = tramp;
    k->counter = fn_addr(fp, k->fast_id) + offsetof(struct fast_fn, calls);
    return true;
}

bool hk_fast_in_code(const struct hooks *h, uint64_t pc)
{
    return h->fast && pc >= h->fast->code && pc < h->fast->code + CODE_SIZE;
}

/* ---- fork and thread exit ----------------------------------------------------------- */

void hk_fast_on_fork(struct hooks *h, struct process *parent, struct process *child,
                     pid_t parent_tid, pid_t child_pid)
{
    struct fastpath *fp = h->fast;
    child->fast_ok = false;
    if (!fp || !parent || !parent->fast_ok)
        return;
    struct user_regs_struct r;
    uint64_t head = 0;
    uint64_t ta = fp->area + FAST_THREADS_OFF;
    size_t tsize = FAST_THREADS * sizeof(struct fast_thread);
    struct fast_thread *slots = malloc(tsize);
    if (!slots || ptrace(PTRACE_GETREGS, parent_tid, 0, &r) != 0 ||
        !procmem_read(child->memfd, fp->area + offsetof(struct fast_area, head), &head,
                      sizeof head) ||
        !procmem_read(child->memfd, ta, slots, tsize)) {
        free(slots);
        return; /* its copy keeps the parent's slots: it stays on the int3s it has */
    }
    /* The child's copy of the ring is the parent's: it starts empty. Its only
     * thread is the forking one (same fs base, the child's tid); the slots of the
     * parent's other threads are not its. */
    for (int i = 0; i < FAST_THREADS; i++) {
        struct fast_thread *s = &slots[i];
        if (!s->key)
            continue;
        bool mine = s->key == r.fs_base;
        uint64_t head_words[2] = {mine ? s->key : 0, 0};
        int32_t tid = mine ? child_pid : 0;
        uint32_t depth = mine ? s->depth : 0;
        memcpy(&head_words[1], &tid, 4);
        memcpy((char *)&head_words[1] + 4, &depth, 4);
        procmem_write(child->memfd, ta + (uint64_t)i * sizeof *s, head_words, sizeof head_words);
    }
    free(slots);
    int32_t pid = child_pid;
    child->fast_tail = head;
    child->fast_ok =
        procmem_write(child->memfd, fp->area + offsetof(struct fast_area, tail), &head,
                      sizeof head) &&
        procmem_write(child->memfd, fp->area + offsetof(struct fast_area, pid), &pid, sizeof pid);
}

/* k's ring-full count in p: read now, else as last read at one of its threads'
 * exits. */
static uint64_t lost_in(const struct fastpath *fp, const struct process *p,
                        const struct hook *k)
{
    uint64_t lost = 0;
    if (p->fast_ok && procmem_read(p->memfd, fn_addr(fp, k->fast_id) +
                                   offsetof(struct fast_fn, lost), &lost, sizeof lost))
        return lost;
    return k->fast_id < p->n_fast_lost ? p->fast_lost[k->fast_id] : 0;
}

static bool read_records(const struct fastpath *fp, const struct process *p, uint64_t idx,
                         size_t n, struct fast_record *buf);

/* The calls whose enter records are still unread in p's ring, per function, added
 * to lost[]: the drain stopped because the store was behind. */
static void count_unread(const struct fastpath *fp, const struct process *p, uint64_t *lost)
{
    uint64_t idx = p->fast_tail;
    while (idx < p->fast_head) {
        size_t n = p->fast_head - idx < DRAIN_BATCH ? (size_t)(p->fast_head - idx)
                                                    : DRAIN_BATCH;
        if (!read_records(fp, p, idx, n, fp->buf))
            return;
        size_t i = 0;
        while (i < n) {
            const struct fast_record *r = &fp->buf[i];
            if (r->commit != (uint32_t)(idx + i + 1) || !r->nrec)
                return;
            if (r->kind == FAST_REC_ENTER && r->fn < fp->n_fns)
                lost[r->fn]++;
            i += r->nrec;
        }
        idx += i;
    }
}

/* Keeps p's ring-full counts as they are now (one read of its fn table), and the
 * calls its ring holds unread, for when its memory is gone. */
static void snapshot_lost(const struct fastpath *fp, struct process *p)
{
    struct fast_fn *fns = malloc(fp->n_fns * sizeof *fns);
    uint64_t *lost = fns ? realloc(p->fast_lost, fp->n_fns * sizeof *lost) : NULL;
    if (lost) {
        p->fast_lost = lost;
        if (procmem_read(p->memfd, fn_addr(fp, 0), fns, fp->n_fns * sizeof *fns)) {
            for (uint32_t i = 0; i < fp->n_fns; i++)
                lost[i] = fns[i].lost;
            p->n_fast_lost = fp->n_fns;
            count_unread(fp, p, lost);
        }
    }
    free(fns);
}

void hk_fast_process_free(struct hooks *h, struct process *p)
{
    for (uint32_t i = 0; h->fast && i < p->n_fast_lost && i < h->fast->n_fns; i++)
        h->fast->fns[i]->ring_full_folded += p->fast_lost[i];
    free(p->fast_lost);
}

struct lost_sum {
    const struct fastpath *fp;
    const struct hook *k;
    uint64_t sum;
};

static void sum_lost(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct lost_sum *ls = arg;
    ls->sum += lost_in(ls->fp, value, ls->k);
}

uint64_t hk_fast_ring_full(struct hooks *h, struct hook *k)
{
    if (!h->fast || !k->fast)
        return 0;
    struct lost_sum ls = {h->fast, k, k->ring_full_folded};
    u64map_each(&h->procs, sum_lost, &ls);
    return ls.sum;
}

void hk_fast_on_thread_exit(struct hooks *h, struct thread *t)
{
    struct fastpath *fp = h->fast;
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    struct user_regs_struct r;
    if (!fp || !p || !p->fast_ok || ptrace(PTRACE_GETREGS, t->tid, 0, &r) != 0 || !r.fs_base)
        return;
    hk_fast_drain(h);
    snapshot_lost(fp, p);
    /* Its slot keeps its key (a later thread on the same TCB finds it) and forgets
     * its tid and frames. */
    uint64_t ta = fp->area + FAST_THREADS_OFF;
    uint32_t first = fast_thread_hash(r.fs_base);
    for (uint32_t probe = 0; probe < FAST_THREADS; probe++) {
        uint64_t slot = (first + probe) & (FAST_THREADS - 1);
        uint64_t at = ta + slot * sizeof(struct fast_thread), key = 0;
        int32_t tid = 0;
        if (!procmem_read(p->memfd, at, &key, sizeof key) || !key)
            return;
        if (key != r.fs_base)
            continue;
        if (procmem_read(p->memfd, at + offsetof(struct fast_thread, tid), &tid, sizeof tid) &&
            tid == t->tid) {
            uint64_t zero = 0; /* tid and depth */
            procmem_write(p->memfd, at + offsetof(struct fast_thread, tid), &zero, sizeof zero);
        }
        return;
    }
}

/* ---- capture programs (capprog.h) ------------------------------------------------- */

static uint64_t prog_addr(const struct fastpath *fp, uint32_t id)
{
    return fp->area + FAST_PROGS_OFF + (uint64_t)id * sizeof(struct fast_prog);
}

struct prog_write {
    uint64_t items, count; /* where in the area */
    const struct capprog *cp;
};

/* The items first, then their count: a thread reading the count sees items written. */
static void write_prog_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct prog_write *pw = arg;
    if (p->fast_ok &&
        procmem_write(p->memfd, pw->items, pw->cp->item, pw->cp->n * sizeof *pw->cp->item))
        procmem_write(p->memfd, pw->count, &pw->cp->n, sizeof pw->cp->n);
}

/* Writes side exit (or enter) of k's program into every process of the image. */
static void write_prog(struct hooks *h, const struct hook *k, bool exit)
{
    uint64_t at = prog_addr(h->fast, k->fast_id);
    struct prog_write pw = {
        at + (exit ? offsetof(struct fast_prog, exit) : offsetof(struct fast_prog, enter)),
        at + (exit ? offsetof(struct fast_prog, n_exit) : offsetof(struct fast_prog, n_enter)),
        &h->fast->progs[k->fast_id][exit]};
    u64map_each(&h->procs, write_prog_in, &pw);
}

/* Reads memory for the decoding of one call (capprog.h): from its copies first,
 * the rest live, learned. */
static bool read_call(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct call_reader *r = ctx;
    long n = capcall_copied(r->cc, addr, buf, len);
    if (n < 0)
        return false; /* unreadable at the call */
    if ((size_t)n == len)
        return true;
    bool ok = procmem_read(r->memfd, addr + (uint64_t)n, (char *)buf + n, len - (size_t)n);
    capcall_learn(r->cc, addr + (uint64_t)n, len - (size_t)n, ok ? (char *)buf + n : NULL);
    return ok;
}

/* The registers a side's FAST_SRC_REG items name. */
static uint32_t side_regs(const struct abi_regs *a, bool exit, uint64_t *regs)
{
    if (exit) {
        regs[0] = a->rax;
        regs[1] = a->rdx;
        return 2;
    }
    const uint64_t in[6] = {a->rdi, a->rsi, a->rdx, a->rcx, a->r8, a->r9};
    memcpy(regs, in, sizeof in);
    return 6;
}

void hk_fast_learn_begin(struct hooks *h, struct hook *k, bool exit, const struct abi_regs *a,
                         uint64_t stack, int memfd, struct hk_mem *mem)
{
    struct fastpath *fp = h->fast;
    uint64_t regs[6];
    uint32_t n = side_regs(a, exit, regs);
    capcall_begin(fp->cc, &fp->progs[k->fast_id][exit], regs, n, stack);
    capcall_run(fp->cc, procmem_read_ctx, &memfd);
    fp->reader = (struct call_reader){fp->cc, memfd};
    *mem = (struct hk_mem){read_call, &fp->reader, k};
}

void hk_fast_learn_end(struct hooks *h, struct hook *k, bool exit)
{
    if (h->fast->cc->changed)
        write_prog(h, k, exit);
    if (exit)
        k->fast_learned_exit = true;
    else
        k->fast_learned = true;
    hk_fast_update_flags(h, k); /* its first call's stop is over */
}

void hk_fast_on_stop(struct hooks *h, struct thread *t, const struct user_regs_struct *r)
{
    struct fastpath *fp = h->fast;
    if (!fp)
        return;
    /* Only a stop delivered just past the recorder's own syscall carries its
     * registers: one that was blocked, or a thread stepped out of the recorder
     * meanwhile (a stacks snapshot), is late and has nothing left to do. */
    uint64_t off = r->rip - 2 - fp->code;
    struct hook *k = r->r12 < fp->n_fns ? fp->fns[r->r12] : NULL;
    if (!hk_fast_in_code(h, r->rip - 2) || off + 1 >= fastrec_blob_len ||
        fastrec_blob[off] != 0x0F || fastrec_blob[off + 1] != 0x05 || !k)
        return;
    if (k->role == HOOK_DRAIN)
        hk_fast_drain_point(h);
    if (k->role != HOOK_TRACE)
        return; /* HOOK_OUTPUT: the tracer read the output before this */
    struct abi_regs a;
    memset(&a, 0, sizeof a);
    a.rsp = r->r13;
    if (r->r8 == FAST_TRAP_ENTER) {
        struct fast_saved s;
        if (!procmem_read(t->memfd, r->r9, &s, sizeof s))
            return;
        a.rdi = s.rdi;
        a.rsi = s.rsi;
        a.rdx = s.rdx;
        a.rcx = s.rcx;
        a.r8 = s.r8;
        a.r9 = s.r9;
        a.rax = s.rax;
        memcpy(a.xmm, s.xmm, sizeof a.xmm);
        hk_call_learn(h, t, k, &a, false);
    } else if (r->r8 == FAST_TRAP_EXIT) {
        struct fast_ret_saved s;
        if (!procmem_read(t->memfd, r->r9, &s, sizeof s))
            return;
        a.rax = s.rax;
        a.rdx = s.rdx;
        memcpy(a.xmm[0], s.xmm0, sizeof a.xmm[0]);
        memcpy(a.xmm[1], s.xmm1, sizeof a.xmm[1]);
        hk_call_learn(h, t, k, &a, true);
    }
}

/* ---- the drain ---------------------------------------------------------------------- */

/* Starts the decoding of a record of function fn (its side exit or enter) whose
 * reservation's other records are more[0..n_more): the copies its DATA records
 * carry. */
static struct hk_mem record_reader(struct hooks *h, struct process *p, struct hook *k,
                                   bool exit, const struct abi_regs *a, uint64_t stack,
                                   const struct fast_record *more, int n_more)
{
    struct fastpath *fp = h->fast;
    uint64_t regs[6];
    uint32_t n = side_regs(a, exit, regs);
    capcall_begin(fp->cc, &fp->progs[k->fast_id][exit], regs, n, stack);
    for (int i = 0; i < n_more; i++) {
        const struct fast_data_record *d = (const struct fast_data_record *)&more[i];
        if (d->kind == FAST_REC_DATA)
            capcall_add_copy(fp->cc, d->item, d->addr, d->data,
                             d->len < FAST_DATA_BYTES ? d->len : FAST_DATA_BYTES, d->want);
    }
    fp->reader = (struct call_reader){fp->cc, p->memfd};
    return (struct hk_mem){read_call, &fp->reader, k};
}

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
    t = hk_thread_in(h, tid, p->tgid);
    if (t)
        t->gone = !alive;
    return t;
}

static void record_done(struct hooks *h, struct thread *t)
{
    if (t->gone && t->depth == 0)
        hk_thread_forget(h, t);
}

/* An enter record; unrecorded: no room for its event (a complete drain), followed
 * as a silent frame and counted as ring-full. */
static void on_enter_record(struct hooks *h, struct process *p, const struct fast_record *r,
                            const struct fast_record *more, int n_more, bool unrecorded)
{
    struct fastpath *fp = h->fast;
    struct hook *k = r->fn < fp->n_fns ? fp->fns[r->fn] : NULL;
    struct thread *t = k ? record_thread(h, p, r->tid) : NULL;
    if (!t)
        return;
    struct abi_regs a;
    memset(&a, 0, sizeof a);
    a.rdi = r->regs[0];
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
    struct hk_call c = {.regs = &a, .ret = r->ret, .tail = (r->flags & FAST_F_TAIL) != 0,
                        .push = !(r->flags & FAST_F_NO_EXIT), .fast = true,
                        .silent = unrecorded || k->role != HOOK_TRACE,
                        .now = tsc_to_ns(fp, r->tsc)};
    c.mem = record_reader(h, p, k, false, &a, r->rsp, more, n_more);
    hk_call_entered(h, t, k, &c);
    record_done(h, t);
    if (fp->cc->changed)
        write_prog(h, k, false);
}

static void on_exit_record(struct hooks *h, struct process *p, const struct fast_record *r,
                           const struct fast_record *more, int n_more)
{
    struct fastpath *fp = h->fast;
    struct hook *k = r->fn < fp->n_fns ? fp->fns[r->fn] : NULL;
    struct thread *t = k ? record_thread(h, p, r->tid) : NULL;
    if (!t)
        return;
    struct abi_regs a;
    memset(&a, 0, sizeof a);
    a.rax = r->regs[0];
    a.rdx = r->regs[1];
    memcpy(a.xmm[0], &r->regs[2], 8);
    memcpy(a.xmm[1], &r->regs[3], 8);
    a.rsp = r->rsp + 8;
    struct hk_mem mem = record_reader(h, p, k, true, &a, r->rsp, more, n_more);
    hk_call_returned(h, t, r->rsp, &a, tsc_to_ns(fp, r->tsc), &mem);
    record_done(h, t);
    if (fp->cc->changed)
        write_prog(h, k, true);
}

/* Reads n records of p's ring from index idx on into buf, in one or two pieces
 * (across the ring's end). */
static bool read_records(const struct fastpath *fp, const struct process *p, uint64_t idx,
                         size_t n, struct fast_record *buf)
{
    size_t at = (size_t)(idx & (FAST_RING_RECORDS - 1));
    size_t first = n < FAST_RING_RECORDS - at ? n : FAST_RING_RECORDS - at;
    uint64_t ring = fp->area + FAST_RING_OFF;
    return procmem_read(p->memfd, ring + at * FAST_RECORD_SIZE, buf, first * FAST_RECORD_SIZE) &&
           (first == n || procmem_read(p->memfd, ring, buf + first,
                                       (n - first) * FAST_RECORD_SIZE));
}

/* Whether the session's event ring has room for a batch: the drain never waits for
 * the store (the tracer would stop serving), it leaves the records in the target's
 * ring, where a full ring is counted per function (fast_fn.lost). */
static bool sink_has_room(const struct hooks *h)
{
    const struct ring *r = h->cfg.sink.ring;
    return !r || ring_used(r) <= 2 * ring_max_record(r); /* half of its capacity */
}

/* Reads the records of p from its tail on, stopping at a reservation still being
 * written; false when its memory cannot be read (the process is gone).
 *
 * A periodic drain reads up to DRAIN_MAX_RECORDS and stops when the event ring is
 * half full: the rest waits in the target's ring. A complete one (before a trap is
 * handled, a stack unwound, a thread let go) reads everything: the shadow stacks
 * must match the threads' real stacks before an int3's frame is pushed or a
 * stack is read (an enter drained after an int3 frame of the same thread would
 * take that frame for a stale one). Its enters that find no room in the event ring
 * are not recorded but still followed (silent frames, counted as ring-full). */
static bool drain_process(struct hooks *h, struct process *p, bool complete)
{
    struct fastpath *fp = h->fast;
    uint64_t head;
    if (!procmem_read(p->memfd, fp->area + offsetof(struct fast_area, head), &head, sizeof head))
        return false;
    uint64_t start = p->fast_tail;
    p->fast_head = head;
    while (p->fast_tail < head &&
           (complete || (p->fast_tail - start < DRAIN_MAX_RECORDS && sink_has_room(h)))) {
        uint64_t idx = p->fast_tail;
        size_t n = head - idx < DRAIN_BATCH ? (size_t)(head - idx) : DRAIN_BATCH;
        if (!read_records(fp, p, idx, n, fp->buf))
            return false;
        size_t i = 0;
        bool room = true;
        while (i < n && (complete || i % 64 || (room = sink_has_room(h)))) {
            const struct fast_record *r = &fp->buf[i];
            if (r->commit != (uint32_t)(idx + i + 1) || !r->nrec || i + r->nrec > n)
                break; /* being written, or read whole by the next batch */
            if (complete && i % 64 == 0)
                room = sink_has_room(h);
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
    write_live(fp, p);
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

/* Hot functions, from the recorder's exact counters (its main process's) every
 * HOT_WINDOW_NS: a function called more than trace.hotCallsPerSecond once it has
 * recorded trace.sampleAfter calls goes quiet (its recorder only counts from the
 * next tick on). The drained records cannot tell: when the store is behind, most
 * calls never become records. */
static void check_hot(struct hooks *h, int64_t now)
{
    struct fastpath *fp = h->fast;
    struct process *p = u64map_get(&h->procs, (uint64_t)h->cfg.pid);
    int64_t span = now - fp->hot_checked;
    if (span < HOT_WINDOW_NS || !p || !p->fast_ok || !fp->n_fns)
        return;
    struct fast_fn *fns = malloc(fp->n_fns * sizeof *fns);
    if (fns && procmem_read(p->memfd, fn_addr(fp, 0), fns, fp->n_fns * sizeof *fns)) {
        for (uint32_t i = 0; i < fp->n_fns; i++) {
            struct hook *k = fp->fns[i];
            uint64_t calls = fns[i].calls - k->fast_calls_seen;
            k->fast_calls_seen = fns[i].calls;
            if (fp->hot_checked && !k->quiet && k->wanted && k->role == HOOK_TRACE &&
                (int64_t)k->recorded >= h->cfg.tuning.sample_after &&
                (double)calls * 1e9 / (double)span > (double)h->cfg.tuning.hot_calls_per_second)
                hk_go_quiet(h, k, now);
        }
        fp->hot_checked = now;
    }
    free(fns);
}

static void drain(struct hooks *h, bool complete)
{
    if (!h->fast)
        return;
    clock_pair(&h->fast->tsc1, &h->fast->ns1);
    struct drain_walk w = {h, complete};
    u64map_each(&h->procs, drain_in, &w);
    check_hot(h, h->fast->ns1);
}

void hk_fast_drain(struct hooks *h)
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
