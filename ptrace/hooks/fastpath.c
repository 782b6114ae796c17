/*
 * fastpath.c - the daemon's side of the in-process fast path (hooks.h, "Fast path";
 * the contract with the recorder is fast_abi.h): the area and the recorder's code
 * mapped into the image's main process, a traced function's entry jump to its
 * trampoline and recording flags, forks and thread exits, ring-full counts. The
 * drain that turns the records into events, and the capture programs, are
 * fast_drain.c's.
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
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <x86intrin.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/u64map.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/capprog.h"
#include "ptrace/hooks/fast_abi.h"
#include "ptrace/hooks/fastcode.h"
#include "ptrace/hooks/fastpath_internal.h"
#include "ptrace/hooks/fastrec.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/patch/inject.h"
#include "ptrace/proc/procmem.h"

#define CODE_SIZE (64u << 10)        /* the recorder and its return trampoline */
#define LIVE_TIMEOUT_NS 60000000000LL /* a daemon silent this long is gone */

/* ---- time ------------------------------------------------------------------------ */

void fastpath_clock_pair(uint64_t *tsc, int64_t *ns)
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

int64_t fastpath_tsc_to_ns(const struct fastpath *fp, uint64_t tsc)
{
    return fp->ns1 + (int64_t)(((double)(int64_t)(tsc - fp->tsc1)) * ns_per_tick(fp));
}

/* ---- the area -------------------------------------------------------------------- */

/* The recorder knows a thread by its thread pointer read as %fs:0 (recorder.c), which
 * is the fs base only where the program keeps the x86-64 TLS ABI's self pointer
 * (glibc and musl do; a Go program without cgo does not), and which faults for a
 * thread whose fs base is 0 (no TLS at all). Checked on the stopped thread: the
 * threads created later get their TCB from the same runtime. */
static bool tls_self_pointer_ok(pid_t tid, int memfd, char *why, size_t why_cap)
{
    struct user_regs_struct r;
    uint64_t self = 0;
    if (ptrace(PTRACE_GETREGS, tid, 0, &r) != 0 || r.fs_base == 0 ||
        !procmem_read(memfd, r.fs_base, &self, sizeof self) || self != r.fs_base) {
        snprintf(why, why_cap,
                 "its threads lack the TLS self pointer at %%fs:0 (no glibc or musl TLS)");
        return false;
    }
    return true;
}

static uint64_t inject_map(pid_t tid, int memfd, uint64_t size, int prot)
{
    long args[6] = {0, (long)size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0};
    struct step_signals kept = {0};
    long r = inject_syscall(tid, memfd, SYS_mmap, args, &kept);
    step_signals_resend(tid, &kept);
    return r < 0 && r > -4096 ? 0 : (uint64_t)r;
}

/* Faults the ring's pages in at once (MADV_POPULATE_WRITE, Linux 5.14), so that no
 * recorded call takes a page fault (one every 16 calls through the first lap of the
 * ring otherwise). A hypervisor may still charge a page's first write from user
 * mode: 10.7 us a page fresh, 4.7 us populated, 26 ns written before, on the AMD
 * EPYC guest (bench_fastrec, BENCHMARKS.md). The ring is then resident (16 MiB) for
 * the life of the process. An older kernel refuses the advice: the pages fault in
 * as they are written. */
static void inject_populate(pid_t tid, int memfd, uint64_t addr, uint64_t size)
{
    long args[6] = {(long)addr, (long)size, MADV_POPULATE_WRITE, 0, 0, 0};
    struct step_signals kept = {0};
    long r = inject_syscall(tid, memfd, SYS_madvise, args, &kept);
    step_signals_resend(tid, &kept);
    if (r != 0)
        log_info("fast path: the ring's pages were not populated (%ld)", r);
}

void fastpath_write_live(const struct fastpath *fp, const struct process *p)
{
    uint64_t now = __rdtsc();
    procmem_write(p->memfd, fp->area + offsetof(struct fast_area, live), &now, sizeof now);
}

bool fastpath_output_fd(const struct hooks *h, pid_t pid, int fd)
{
    if (!h->cfg.output.dev || fd < 0)
        return false;
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    ssize_t n = readlink(path, link, sizeof link - 1); /* the link's text: not followed */
    if (n <= 0)
        return false;
    link[n] = '\0';
    unsigned long long ino;
    int used = 0;
    if (sscanf(link, "pipe:[%llu]%n", &ino, &used) != 1 || used != n)
        return false;
    return ino == h->cfg.output.ino[0] || ino == h->cfg.output.ino[1];
}

/* The fds below 64 of process pid that are the output's (fast_area.out_fds). */
static uint64_t output_fds(const struct hooks *h, pid_t pid)
{
    uint64_t mask = 0;
    for (int fd = 0; h->cfg.output.dev && fd < 64; fd++)
        if (fastpath_output_fd(h, pid, fd))
            mask |= 1ull << fd;
    return mask;
}

/* Maps the area and the recorder into the main process (stopped_tid, stopped).
 * NULL, with why, when the fast path cannot be used. */
static struct fastpath *fastpath_create(struct hooks *h, pid_t stopped_tid, int memfd,
                                        char *why, size_t why_cap)
{
    if (!tls_self_pointer_ok(stopped_tid, memfd, why, why_cap))
        return NULL;
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
    if (fp->area)
        inject_populate(stopped_tid, memfd, fp->area + FAST_RING_OFF,
                        (uint64_t)FAST_RING_RECORDS * FAST_RECORD_SIZE);
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
    fastpath_clock_pair(&fp->tsc0, &fp->ns0);
    do
        fastpath_clock_pair(&fp->tsc1, &fp->ns1);
    while (fp->ns1 - fp->ns0 < 2000000);
    struct fast_area hdr = {.version = FAST_ABI_VERSION, .ring_records = FAST_RING_RECORDS,
                            .pid = h->cfg.pid, .ret_tramp = fp->ret_tramp,
                            .live = fp->tsc1,
                            .live_timeout_tsc =
                                (uint64_t)((double)LIVE_TIMEOUT_NS / ns_per_tick(fp)),
                            .out_fds = output_fds(h, h->cfg.pid),
                            .out_dev = h->cfg.output.dev,
                            .out_ino = {h->cfg.output.ino[0], h->cfg.output.ino[1]}};
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

void fastpath_free(struct hooks *h)
{
    if (!h->fast)
        return;
    free(h->fast->fns);
    free(h->fast->progs);
    free(h->fast->cc);
    free(h->fast->buf);
    free(h->fast->wrote);
    free(h->fast);
    h->fast = NULL;
}

uint64_t fastpath_ret_tramp(const struct hooks *h)
{
    return h->fast ? h->fast->ret_tramp : 0;
}

uint64_t fastpath_fn_addr(const struct fastpath *fp, uint32_t id)
{
    return fp->area + FAST_FNS_OFF + (uint64_t)id * sizeof(struct fast_fn);
}

/* What the recorder does for k's calls (fast_fn.flags): a traced function stops
 * at its first enter and exit for the daemon to learn its capture program; libc's
 * write (HOOK_OUTPUT) follows the writes to the captured output, by their records
 * (or, with no one to tell, by a stop at each exit for the tracer to read them), and
 * a rename or an exec (HOOK_DRAIN) at every entry (fast_output.c). */
static uint32_t fn_flags(const struct hooks *h, const struct hook *k)
{
    if (k->quiet)
        return k->needs_fp ? FAST_FN_FP : 0;
    if (k->role == HOOK_DRAIN)
        return FAST_FN_RECORD | FAST_FN_TRAP_ENTER;
    bool output = k->role == HOOK_OUTPUT;
    uint32_t f = FAST_FN_RECORD | (k->role == HOOK_TRACE ? FAST_FN_BUDGET : 0) |
                 (output ? FAST_FN_OUTPUT : 0);
    if (h->cfg.tuning.capture_exits || output)
        f |= FAST_FN_EXITS;
    if (k->needs_fp)
        f |= FAST_FN_FP;
    if (!output && !k->fast_learned)
        f |= FAST_FN_TRAP_ENTER;
    /* A write to the output stops at its return unless the output follows the
     * writes by their records (hook_output.wrote). */
    if ((f & FAST_FN_EXITS) && (output ? !h->cfg.output.wrote : !k->fast_learned_exit))
        f |= FAST_FN_TRAP_EXIT;
    if (output && k->fn->name && strstr(k->fn->name, "writev"))
        f |= FAST_FN_IOV;
    return f;
}

/* A field of k's fast_fn written into every process of the image that has the area. */
struct fn_write {
    const struct fastpath *fp;
    uint64_t addr;
    const void *value;
    size_t len;
};

static void write_fn_in(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct process *p = value;
    const struct fn_write *fw = arg;
    if (p->fast_ok) {
        procmem_write(p->memfd, fw->addr, fw->value, fw->len);
        /* Live now: arming a function can take the tracer longer than a drain
         * period (DWARF loading, under valgrind seconds), and the program runs its
         * first calls right after. */
        fastpath_write_live(fw->fp, p);
    }
}

void fastpath_write_fn(struct hooks *h, const struct hook *k, size_t field, const void *value,
                       size_t len)
{
    struct fn_write fw = {h->fast, fastpath_fn_addr(h->fast, k->fast_id) + field, value, len};
    u64map_each(&h->procs, write_fn_in, &fw);
}

void fastpath_update_flags(struct hooks *h, struct hook *k)
{
    if (!h->fast || !k->fast || fn_flags(h, k) == k->fast_flags)
        return;
    k->fast_flags = fn_flags(h, k);
    fastpath_write_fn(h, k, offsetof(struct fast_fn, flags), &k->fast_flags,
                      sizeof k->fast_flags);
}

/* Plans k's fast-path entry: an id, its fast_fn entry, its trampoline written near
 * it. False (k->cj.why) when it cannot take one: it stays on its int3. */
bool fastpath_plan(struct hooks *h, struct hook *k, pid_t stopped_tid, int memfd)
{
    struct process *main = hooks_state_process(h, h->cfg.pid);
    if (!h->fast && !h->fast_why[0] && main) { /* one attempt per image */
        h->fast = fastpath_create(h, stopped_tid, memfd, h->fast_why, sizeof h->fast_why);
        main->fast_ok = h->fast != NULL;
        main->fast_floor = h->fast ? h->fast->ns0 : 0; /* no record before the area */
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
    else if (!(tramp = hooks_areas_slot_near(h, stopped_tid, memfd, k->addr, k->addr + len,
                                             FASTJUMP_SLOT_SIZE)))
        snprintf(k->cj.why, sizeof k->cj.why, "no scratch memory near it");
    else if (!fastcode_jump_plan(code, len, k->addr, tramp, fp->area, fp->enter, fp->n_fns, &fj))
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
    struct fast_fn entry = {.flags = k->fast_flags, .quota = h->cfg.tuning.sample_after,
                            .credit = fast_budget_credit(h)};
    memset(&progs[fp->n_fns], 0, sizeof progs[fp->n_fns]);
    progs[fp->n_fns][0].max = FAST_ENTER_ITEMS;
    progs[fp->n_fns][1].max = FAST_EXIT_ITEMS;
    if (!procmem_write(memfd, fastpath_fn_addr(fp, k->fast_id), &entry, sizeof entry) ||
        !hooks_areas_write_scratch(h, memfd, tramp, fj.tramp, fj.tramp_len)) {
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
    k->counter = fastpath_fn_addr(fp, k->fast_id) + offsetof(struct fast_fn, calls);
    return true;
}

bool fastpath_in_code(const struct hooks *h, uint64_t pc)
{
    return h->fast && pc >= h->fast->code && pc < h->fast->code + CODE_SIZE;
}

/* ---- fork and thread exit ----------------------------------------------------------- */

void fastpath_on_fork(struct hooks *h, struct process *parent, struct process *child,
                      pid_t parent_tid, pid_t child_pid)
{
    struct fastpath *fp = h->fast;
    child->fast_ok = false;
    if (!fp || !parent || !parent->fast_ok)
        return;
    child->fast_floor = mono_ns(); /* its ring starts at the head read below */
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
    if (p->fast_ok && procmem_read(p->memfd, fastpath_fn_addr(fp, k->fast_id) +
                                   offsetof(struct fast_fn, lost), &lost, sizeof lost))
        return lost;
    return k->fast_id < p->n_fast_lost ? p->fast_lost[k->fast_id] : 0;
}

/* The calls whose enter records are still unread in p's ring, per function, added
 * to lost[]: the drain stopped because the store was behind. */
static void count_unread(const struct fastpath *fp, const struct process *p, uint64_t *lost)
{
    uint64_t idx = p->fast_tail;
    while (idx < p->fast_head) {
        size_t n = p->fast_head - idx < DRAIN_BATCH ? (size_t)(p->fast_head - idx)
                                                    : DRAIN_BATCH;
        if (!fastpath_read_records(fp, p, idx, n, fp->buf))
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
 * calls its ring holds unread, for when its memory is gone; the credits it spent
 * are said (fast_budget_at_end). */
static void snapshot_lost(struct hooks *h, const struct fastpath *fp, struct process *p)
{
    struct fast_fn *fns = malloc(fp->n_fns * sizeof *fns);
    uint64_t *lost = fns ? realloc(p->fast_lost, fp->n_fns * sizeof *lost) : NULL;
    if (lost) {
        p->fast_lost = lost;
        if (procmem_read(p->memfd, fastpath_fn_addr(fp, 0), fns, fp->n_fns * sizeof *fns)) {
            for (uint32_t i = 0; i < fp->n_fns; i++)
                lost[i] = fns[i].lost;
            p->n_fast_lost = fp->n_fns;
            fast_budget_at_end(h, fns, fp->n_fns);
            count_unread(fp, p, lost);
        }
    }
    free(fns);
}

void fastpath_process_free(struct hooks *h, struct process *p)
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

uint64_t fastpath_ring_full(struct hooks *h, struct hook *k)
{
    if (!h->fast || !k->fast)
        return 0;
    struct lost_sum ls = {h->fast, k, k->ring_full_folded};
    u64map_each(&h->procs, sum_lost, &ls);
    return ls.sum;
}

void fastpath_on_thread_exit(struct hooks *h, struct thread *t)
{
    struct fastpath *fp = h->fast;
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    struct user_regs_struct r;
    if (!fp || !p || !p->fast_ok || ptrace(PTRACE_GETREGS, t->tid, 0, &r) != 0 || !r.fs_base)
        return;
    snapshot_lost(h, fp, p);
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

bool fastpath_read_records(const struct fastpath *fp, const struct process *p, uint64_t idx,
                           size_t n, struct fast_record *buf)
{
    size_t at = (size_t)(idx & (FAST_RING_RECORDS - 1));
    size_t first = n < FAST_RING_RECORDS - at ? n : FAST_RING_RECORDS - at;
    uint64_t ring = fp->area + FAST_RING_OFF;
    return procmem_read(p->memfd, ring + at * FAST_RECORD_SIZE, buf, first * FAST_RECORD_SIZE) &&
           (first == n || procmem_read(p->memfd, ring, buf + first,
                                       (n - first) * FAST_RECORD_SIZE));
}

struct hook *fastpath_stop_hook(const struct hooks *h, const struct user_regs_struct *r)
{
    const struct fastpath *fp = h->fast;
    if (!fp)
        return NULL;
    /* Only a stop delivered just past the recorder's own syscall carries its
     * registers: one that was blocked, or a thread stepped out of the recorder
     * meanwhile (a stacks snapshot), is late and has nothing left to do. */
    uint64_t off = r->rip - 2 - fp->code;
    struct hook *k = r->r12 < fp->n_fns ? fp->fns[r->r12] : NULL;
    if (!fastpath_in_code(h, r->rip - 2) || off + 1 >= fastrec_blob_len ||
        fastrec_blob[off] != 0x0F || fastrec_blob[off + 1] != 0x05)
        return NULL;
    return k;
}
