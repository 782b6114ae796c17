/*
 * recorder.c - the in-process recorder of the fast path: fast_enter and fast_exit,
 * called by the trampolines ptrace/hooks/fastcode.c generates, inside the traced process.
 * ptrace/hooks/fast_abi.h is the contract (area, records, semantics of both entry points).
 *
 * Freestanding: built by the Makefile with its own fixed flags into a flat image at
 * address 0 (ptrace/hooks/fastrec_blob.S embeds it), so it has no globals, no data
 * relocations, calls nothing (raw syscalls only) and touches no xmm register
 * (-mgeneral-regs-only: the trampolines save only the integer registers around it).
 * The build fails if the object has an undefined symbol or an absolute relocation.
 *
 * Concurrency: every thread of the target runs this at once; shared words are
 * changed with locked instructions only (calls, lost, quota, credit, head, thread
 * slot claims). A thread's shadow stack is its own, except against a signal handler
 * on the same thread: the busy word makes an enter from a handler that interrupted
 * the recorder record without touching the stack.
 */
#include "ptrace/hooks/fast_abi.h"

#define SYS_FSTAT 5
#define SYS_PROCESS_VM_READV 310
#define SYS_GETTID 186
#define SYS_GETPID 39
#define SYS_RT_TGSIGQUEUEINFO 297
#define SYS_RT_SIGPROCMASK 14
#define SIG_UNBLOCK 1
#define SIG_SETMASK 2
#define PAGE 4096u

/* Both entry points are reached through their offsets in the image (the Makefile
 * reads them from the symbol table). */
void fast_enter(struct fast_area *a, struct fast_saved *s, uint32_t fn, uint64_t *ret_slot);
uint64_t fast_exit(struct fast_area *a, struct fast_ret_saved *s, uint64_t entry_rsp);

struct iov {
    uint64_t base, len;
};

static inline long syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* The thread pointer, read as the x86-64 TLS ABI keeps it: the first word of the
 * TCB is its own address (glibc, musl), so %fs:0 is the fs base, and no FSGSBASE
 * (rdfsbase) is needed. The daemon checks that it holds, and that the fs base is
 * not 0 (this load would fault), before it maps the recorder (fastpath.c). */
static inline uint64_t thread_pointer(void)
{
    uint64_t v;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(v));
    return v;
}

/* Orders the busy word against the stack it guards, for a signal handler of the same
 * thread (no fence needed: one CPU). */
static inline void compiler_barrier(void)
{
    __asm__ volatile("" ::: "memory");
}

static inline struct fast_fn *fn_table(struct fast_area *a)
{
    return (struct fast_fn *)((char *)a + FAST_FNS_OFF);
}

static inline struct fast_thread *thread_table(struct fast_area *a)
{
    return (struct fast_thread *)((char *)a + FAST_THREADS_OFF);
}

static inline struct fast_prog *prog_table(struct fast_area *a)
{
    return (struct fast_prog *)((char *)a + FAST_PROGS_OFF);
}

static inline struct fast_record *record_at(struct fast_area *a, uint64_t index)
{
    struct fast_record *ring = (struct fast_record *)((char *)a + FAST_RING_OFF);
    return &ring[index & (a->ring_records - 1)];
}

/* The part of the kernel's siginfo a self-sent signal carries (x86-64 layout). */
struct self_siginfo {
    int32_t signo, errno_, code, pad;
    int32_t pid;
    uint32_t uid;
    uint64_t value;
    uint8_t rest[128 - 32];
};

/* A stop for the daemon (fast_abi.h, FAST_STOP_SIGNAL): the signal, and the
 * registers the daemon reads at its delivery stop. The signal is unblocked around
 * the send if the thread blocks it, so the stop comes at once, not later (or never,
 * or to a sigwait of the program's). */
static inline void stop_for_daemon(uint32_t which, struct fast_area *a, void *saved,
                                   uint32_t fn, uint64_t slot)
{
    uint64_t urg = 1ull << (FAST_STOP_SIGNAL - 1), mask = 0;
    syscall6(SYS_RT_SIGPROCMASK, SIG_UNBLOCK, (long)&urg, (long)&mask, 8, 0, 0);
    int32_t pid = (int32_t)syscall6(SYS_GETPID, 0, 0, 0, 0, 0, 0);
    int32_t tid = (int32_t)syscall6(SYS_GETTID, 0, 0, 0, 0, 0, 0);
    struct self_siginfo si = {.signo = FAST_STOP_SIGNAL, .errno_ = FAST_STOP_MAGIC,
                              .code = FAST_STOP_CODE, .pid = pid,
                              .value = (uint64_t)a};
    register uint64_t r10 __asm__("r10") = (uint64_t)&si;
    register uint64_t r8 __asm__("r8") = which;
    register uint64_t r9 __asm__("r9") = (uint64_t)saved;
    register uint64_t r12 __asm__("r12") = fn;
    register uint64_t r13 __asm__("r13") = slot;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_RT_TGSIGQUEUEINFO), "D"((long)pid), "S"((long)tid),
                       "d"((long)FAST_STOP_SIGNAL), "r"(r10), "r"(r8), "r"(r9), "r"(r12),
                       "r"(r13)
                     : "rcx", "r11", "memory");
    (void)ret;
    if (mask & urg)
        syscall6(SYS_RT_SIGPROCMASK, SIG_SETMASK, (long)&mask, 0, 8, 0, 0);
}

/* The daemon drained recently enough before now (a rdtsc), or set no timeout. */
/* Signed: the daemon may store a live word read on another CPU a little after this
 * thread read its clock; that word is newer than now, and the daemon is live (the
 * unsigned difference wrapped, and 1 call in ~8,000 of a program whose threads end,
 * each end a drain, was counted as lost to a dead daemon). */
static inline int daemon_live(struct fast_area *a, uint64_t now)
{
    uint64_t timeout = a->live_timeout_tsc;
    return timeout == 0 || (int64_t)(now - a->live) <= (int64_t)timeout;
}

/* The calling thread's slot, claimed on first use; 0 when the table is full or the
 * thread pointer is 0. */
static struct fast_thread *my_thread(struct fast_area *a)
{
    uint64_t key = thread_pointer();
    if (key == 0)
        return 0;
    struct fast_thread *t = thread_table(a);
    uint32_t h = fast_thread_hash(key);
    for (uint32_t i = 0; i < FAST_THREADS; i++) {
        struct fast_thread *slot = &t[(h + i) & (FAST_THREADS - 1)];
        uint64_t k = __atomic_load_n(&slot->key, __ATOMIC_ACQUIRE);
        if (k == 0) {
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&slot->key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                k = key;
            else
                k = expected;
        }
        if (k == key) {
            if (slot->tid == 0)
                slot->tid = (int32_t)syscall6(SYS_GETTID, 0, 0, 0, 0, 0, 0);
            return slot;
        }
    }
    return 0;
}

/* Which output pipe the daemon reads fd is (fast_abi.h, FAST_FN_OUTPUT): 1 or 2 for
 * out_ino[0] or [1], 0 for none. Only an fd that was one when the area was made is
 * checked, by fstat (one syscall a write to the captured output costs). */
static uint32_t captured_output(const struct fast_area *a, uint64_t fd)
{
    if (fd >= 64 || !((a->out_fds >> fd) & 1))
        return 0;
    uint64_t st[18]; /* struct stat: st_dev, then st_ino */
    if (syscall6(SYS_FSTAT, (long)fd, (long)st, 0, 0, 0, 0) != 0 || st[0] != a->out_dev)
        return 0;
    return st[1] == a->out_ino[0] ? 1 : st[1] == a->out_ino[1] ? 2 : 0;
}

/* The spare words of a followed write's enter (fast_record.spare): its first
 * FAST_OUT_PREFIX bytes (from buf, or from iov[0] for writev), copied with
 * process_vm_readv (a bad pointer copies nothing; the write itself then fails). */
static void output_prefix(struct fast_area *a, uint32_t fl, uint32_t stream,
                          const struct fast_saved *s, uint64_t *spare)
{
    uint64_t base = s->rsi, len = s->rdx;
    if (fl & FAST_FN_IOV) {
        struct iov first = {0, 0};
        struct iov local = {(uint64_t)&first, sizeof first}, remote = {s->rsi, sizeof first};
        if (s->rdx == 0 || syscall6(SYS_PROCESS_VM_READV, a->pid, (long)&local, 1,
                                    (long)&remote, 1, 0) != (long)sizeof first)
            first.len = 0;
        base = first.base;
        len = first.len;
    }
    if (len > FAST_OUT_PREFIX)
        len = FAST_OUT_PREFIX;
    struct iov local = {(uint64_t)spare, len}, remote = {base, len};
    long got = len ? syscall6(SYS_PROCESS_VM_READV, a->pid, (long)&local, 1, (long)&remote, 1, 0)
                   : 0;
    spare[3] = (uint64_t)(got > 0 ? got : 0) | (uint64_t)stream << 8;
}

/* Takes one call from f's budget (fast_abi.h, FAST_FN_BUDGET): 0 when the call is
 * past it (counted only), else the records its reservation leaves free beyond the
 * exits' headroom. */
static uint32_t take_budget(struct fast_area *a, struct fast_fn *f)
{
    if (__atomic_load_n(&f->quota, __ATOMIC_RELAXED) > 0 &&
        __atomic_fetch_sub(&f->quota, 1, __ATOMIC_RELAXED) > 0)
        return 1;
    if (__atomic_fetch_sub(&f->credit, 1, __ATOMIC_RELAXED) <= 0)
        return 0;
    return 1 + FAST_ROOM_KEPT(a->ring_records);
}

/* Reserves n consecutive records: their first index, or -1 when the ring has no
 * room (the daemon has not drained it). */
static int64_t reserve(struct fast_area *a, uint32_t n, uint32_t keep)
{
    uint64_t head = __atomic_load_n(&a->head, __ATOMIC_RELAXED);
    for (;;) {
        uint64_t tail = __atomic_load_n(&a->tail, __ATOMIC_ACQUIRE);
        /* Signed: head may be stale, and the daemon's tail already past it (the
         * cmpxchg then fails and reloads head). */
        if ((int64_t)(head + n - tail) > (int64_t)(a->ring_records - keep))
            return -1;
        if (__atomic_compare_exchange_n(&a->head, &head, head + n, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return (int64_t)head;
    }
}

static inline void publish(struct fast_record *r, uint64_t index)
{
    __atomic_store_n(&r->commit, (uint32_t)(index + 1), __ATOMIC_RELEASE);
}

/* A word-by-word copy (volatile: gcc must not turn it into a memcpy call). */
static void copy_words(uint64_t *dst, const uint64_t *src, uint32_t words)
{
    for (uint32_t i = 0; i < words; i++)
        ((volatile uint64_t *)dst)[i] = src[i];
}

/* The records an item of len bytes fills. */
static inline uint32_t item_records(uint32_t len)
{
    return (len + FAST_DATA_BYTES - 1) / FAST_DATA_BYTES;
}

/* Copies len bytes at addr into the data of the n records from index on (one
 * process_vm_readv, which fails instead of faulting; none for address 0) and sets
 * each record's header. The remote side is split at the page boundary: the kernel
 * stops at the first piece it cannot read, so the bytes before an unmapped page
 * still arrive. Returns the bytes copied. */
static uint32_t copy_item(struct fast_area *a, uint64_t index, uint32_t n, uint8_t item,
                          uint64_t addr, uint32_t len)
{
    struct iov local[FAST_ITEM_MAX / FAST_DATA_BYTES];
    for (uint32_t k = 0; k < n; k++) {
        struct fast_data_record *d = (struct fast_data_record *)record_at(a, index + k);
        uint32_t part = len - k * FAST_DATA_BYTES;
        local[k].base = (uint64_t)d->data;
        local[k].len = part < FAST_DATA_BYTES ? part : FAST_DATA_BYTES;
    }
    uint32_t first = PAGE - (uint32_t)(addr & (PAGE - 1));
    if (first > len)
        first = len;
    struct iov remote[2] = {{addr, first}, {addr + first, len - first}};
    long got = addr ? syscall6(SYS_PROCESS_VM_READV, a->pid, (long)local, n, (long)remote,
                               len > first ? 2 : 1, 0)
                    : 0;
    if (got < 0)
        got = 0;
    for (uint32_t k = 0; k < n; k++) {
        struct fast_data_record *d = (struct fast_data_record *)record_at(a, index + k);
        long have = got - (long)(k * FAST_DATA_BYTES);
        d->unused = 0;
        d->kind = FAST_REC_DATA;
        d->len = (uint16_t)(have <= 0 ? 0 : have < FAST_DATA_BYTES ? have : FAST_DATA_BYTES);
        d->addr = addr + k * FAST_DATA_BYTES;
        d->item = item;
        d->want = (uint16_t)len;
    }
    return (uint32_t)got;
}

/* A capture program's item lengths as one call read them: the daemon may change the
 * program meanwhile, and the records written must be the ones reserved. */
struct prog {
    uint32_t n;
    uint32_t records;               /* DATA records of all the items */
    uint16_t len[FAST_ENTER_ITEMS]; /* each item's length, read once */
};

/* Reads the lengths of n items (at most max), cut to FAST_CALL_DATA_RECORDS records
 * a call: an item past that copies nothing. */
static void read_prog(struct prog *p, const volatile struct fast_cap *caps, uint32_t n,
                      uint32_t max)
{
    p->n = n < max ? n : max;
    p->records = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t len = caps[i].len;
        if (len > FAST_ITEM_MAX)
            len = FAST_ITEM_MAX;
        if (p->records + item_records(len) > FAST_CALL_DATA_RECORDS)
            len = 0;
        p->len[i] = (uint16_t)len;
        p->records += item_records(len);
    }
}

/* The 8 bytes at byte at of an item's copy (its records from index on, got bytes
 * of it valid); 0 when they were not copied. */
static uint64_t item_word(struct fast_area *a, uint64_t index, uint32_t got, uint32_t at)
{
    if (at + 8u > got)
        return 0;
    uint64_t v = 0;
    for (uint32_t b = 0; b < 8; b++) {
        uint32_t o = at + b;
        const struct fast_data_record *d =
            (const struct fast_data_record *)record_at(a, index + o / FAST_DATA_BYTES);
        v |= (uint64_t)d->data[o % FAST_DATA_BYTES] << (8 * b);
    }
    return v;
}

/* Runs a program's items into the records from index on: regs are the n_regs
 * registers FAST_SRC_REG names, stack the return address's slot. */
static void run_prog(struct fast_area *a, uint64_t index, const struct prog *p,
                     const volatile struct fast_cap *caps, const uint64_t *regs,
                     uint32_t n_regs, uint64_t stack)
{
    uint8_t first[FAST_ENTER_ITEMS]; /* each item's first record, from index */
    uint16_t got[FAST_ENTER_ITEMS];
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t n = item_records(p->len[i]);
        first[i] = (uint8_t)k;
        got[i] = 0;
        if (!n)
            continue;
        uint32_t src = caps[i].src, idx = caps[i].idx;
        uint64_t base = src == FAST_SRC_REG && idx < n_regs ? regs[idx]
                      : src == FAST_SRC_STACK ? stack
                      : src == FAST_SRC_ITEM && idx < i
                          ? item_word(a, index + first[idx], got[idx], caps[i].at)
                          : 0;
        uint64_t addr = base || src == FAST_SRC_ABS ? base + (uint64_t)caps[i].off : 0;
        got[i] = (uint16_t)copy_item(a, index + k, n, (uint8_t)i, addr, p->len[i]);
        k += n;
    }
}

/* The topmost frame of t's stack at rsp; -1 if none. */
static int find_frame(const struct fast_thread *t, uint32_t depth, uint64_t rsp)
{
    for (int i = (int)depth - 1; i >= 0; i--)
        if (t->frames[i].rsp == rsp)
            return i;
    return -1;
}

/* Writes the reservation of an enter (nrec records): the XMM record, the DATA
 * records of its program, and the ENTER record last, published by its commit;
 * tsc is read after the reservation, so that a record reserved after the daemon
 * read head is stamped after that read (fast_drain.c: the floor of the store's time
 * order), however long the thread was stopped or preempted before. */
static void write_enter(struct fast_area *a, uint64_t index, uint32_t nrec, uint32_t fl,
                        const struct prog *p, uint32_t fn, uint8_t flags, int32_t tid,
                        const struct fast_saved *s, uint64_t rsp, uint64_t ret,
                        const uint64_t *spare)
{
    uint64_t tsc = rdtsc();
    uint32_t k = 1;
    if (fl & FAST_FN_FP)
        copy_words((uint64_t *)record_at(a, index + k++), (const uint64_t *)s->xmm,
                   FAST_RECORD_SIZE / 8);
    run_prog(a, index + k, p, prog_table(a)[fn].enter, &s->rdi, 6, rsp);
    struct fast_record *r = record_at(a, index);
    r->kind = FAST_REC_ENTER;
    r->flags = flags;
    r->nrec = (uint8_t)nrec;
    r->fn = fn;
    r->tid = tid;
    r->tsc = tsc;
    r->rsp = rsp;
    r->ret = ret;
    copy_words(r->regs, &s->rdi, 6);
    copy_words(r->spare, spare, 5);
    publish(r, index);
}

void fast_enter(struct fast_area *a, struct fast_saved *s, uint32_t fn, uint64_t *ret_slot)
{
    if (fn >= FAST_MAX_FNS)
        return;
    struct fast_fn *f = &fn_table(a)[fn];
    __atomic_fetch_add(&f->calls, 1, __ATOMIC_RELAXED);
    uint32_t fl = *(volatile uint32_t *)&f->flags;
    if (!(fl & FAST_FN_RECORD))
        return;
    uint64_t spare[5] = {0, 0, 0, 0, 0};
    if (fl & FAST_FN_OUTPUT) {
        uint32_t stream = captured_output(a, s->rdi);
        if (!stream)
            return;
        output_prefix(a, fl, stream, s, spare);
    }
    uint64_t now = rdtsc(); /* the daemon's liveness */
    if (!daemon_live(a, now)) { /* not recorded: said, as a full ring is */
        __atomic_fetch_add(&f->lost, 1, __ATOMIC_RELAXED);
        return;
    }
    uint32_t room = (fl & FAST_FN_BUDGET) ? take_budget(a, f) : 1;
    if (!room)
        return;
    if (fl & FAST_FN_TRAP_ENTER)
        stop_for_daemon(FAST_TRAP_ENTER, a, s, fn, (uint64_t)ret_slot);
    const volatile struct fast_prog *prog = &prog_table(a)[fn];
    struct prog p;
    read_prog(&p, prog->enter, prog->n_enter, FAST_ENTER_ITEMS);
    uint32_t nrec = 1 + ((fl & FAST_FN_FP) ? 1 : 0) + p.records;

    uint8_t flags = 0;
    uint64_t rsp = (uint64_t)ret_slot, ret = *ret_slot;
    /* A tail call from a traced caller: the slot already returns to the trampoline,
     * the caller's frame holds the real return address, and the callee shares it. */
    int tail = a->ret_tramp != 0 && ret == a->ret_tramp;
    if (tail)
        flags |= FAST_F_TAIL;
    struct fast_thread *t = my_thread(a);
    int32_t tid = t ? t->tid : 0;
    int owner = 0; /* this call set busy: the thread's stack is ours until we clear it */
    if (!t) {
        flags |= FAST_F_NO_THREAD;
        __atomic_fetch_add(&a->no_thread, 1, __ATOMIC_RELAXED);
    } else if (!t->busy) {
        t->busy = 1;
        compiler_barrier();
        owner = 1;
    }

    int push = owner && ((fl & FAST_FN_EXITS) || tail);
    uint32_t depth = owner ? t->depth : 0;
    if (push && tail) {
        int caller = find_frame(t, depth, rsp);
        if (caller < 0)
            push = 0; /* the slot holds the trampoline for no frame of ours */
        else
            ret = t->frames[caller].ret;
    }
    if (push && depth >= FAST_DEPTH) {
        /* Frames at or below the new slot were abandoned (longjmp); a live one is
         * above it (but a tail caller shares it). */
        while (depth > 0 && (tail ? t->frames[depth - 1].rsp < rsp
                                  : t->frames[depth - 1].rsp <= rsp))
            depth--;
        t->depth = depth;
        if (depth >= FAST_DEPTH) {
            t->lost_exits++;
            push = 0;
        }
    }
    if (!push && ((fl & FAST_FN_EXITS) || tail))
        flags |= FAST_F_NO_EXIT;

    /* The headroom of the exits (fast_abi.h); a small ring (the unit tests') keeps
     * half. A call on credit leaves the quiet functions' room too. */
    uint32_t keep = a->ring_records > 2 * FAST_EXIT_HEADROOM ? FAST_EXIT_HEADROOM
                                                             : a->ring_records / 2;
    keep += room - 1;
    int64_t index = reserve(a, nrec, keep);
    if (index < 0) {
        /* Nothing written, so nothing pushed: an exit must have its enter. */
        __atomic_fetch_add(&f->lost, 1, __ATOMIC_RELAXED);
    } else {
        if (push) {
            t->frames[depth].ret = ret;
            t->frames[depth].rsp = rsp;
            t->frames[depth].fn = fn;
            compiler_barrier();
            t->depth = depth + 1;
            if (!tail)
                *ret_slot = a->ret_tramp;
        }
        write_enter(a, (uint64_t)index, nrec, fl, &p, fn, flags, tid, s, rsp, ret, spare);
    }
    if (owner) {
        compiler_barrier();
        t->busy = 0;
    }
}

uint64_t fast_exit(struct fast_area *a, struct fast_ret_saved *s, uint64_t entry_rsp)
{
    struct fast_thread *t = my_thread(a);
    if (!t)
        return 0;
    uint32_t was_busy = t->busy;
    t->busy = 1;
    compiler_barrier();
    uint32_t depth = t->depth;
    int m = find_frame(t, depth, entry_rsp);
    if (m < 0)
        /* The function moved its return address: the outermost frame at or below
         * it is the one that returned. */
        for (uint32_t i = 0; i < depth; i++)
            if (t->frames[i].rsp < entry_rsp + 8) {
                m = (int)i;
                break;
            }
    if (m < 0) {
        t->busy = was_busy;
        return 0;
    }
    uint64_t ret = t->frames[m].ret, rsp = t->frames[m].rsp;
    uint32_t fn = t->frames[m].fn, dropped = depth - 1 - (uint32_t)m;
    int bottom = m;
    while (bottom > 0 && t->frames[bottom - 1].rsp == rsp)
        bottom--; /* the tail callers that shared the slot return with it */
    t->depth = (uint32_t)bottom;

    /* A frame exists only when its enter was recorded: its exit is recorded even if
     * the function has gone count-only since (else the daemon would wait for it). */
    struct fast_fn *f = &fn_table(a)[fn < FAST_MAX_FNS ? fn : 0];
    {   /* always: the daemon's shadow stacks follow every pushed frame to its exit;
         * its program's items only when the ring has room for them too */
        const volatile struct fast_prog *prog = &prog_table(a)[fn < FAST_MAX_FNS ? fn : 0];
        if ((*(volatile uint32_t *)&f->flags & FAST_FN_TRAP_EXIT) && daemon_live(a, rdtsc()))
            stop_for_daemon(FAST_TRAP_EXIT, a, s, fn, entry_rsp);
        struct prog p;
        read_prog(&p, prog->exit, prog->n_exit, FAST_EXIT_ITEMS);
        int64_t index = p.records ? reserve(a, 1 + p.records, 0) : -1;
        if (index < 0) {
            p.n = p.records = 0;
            index = reserve(a, 1, 0);
        }
        if (index < 0) {
            __atomic_fetch_add(&f->lost, 1, __ATOMIC_RELAXED);
        } else {
            uint64_t regs[2] = {s->rax, s->rdx};
            run_prog(a, (uint64_t)index + 1, &p, prog->exit, regs, 2, entry_rsp);
            struct fast_record *r = record_at(a, (uint64_t)index);
            r->kind = FAST_REC_EXIT;
            r->flags = 0;
            r->nrec = (uint8_t)(1 + p.records);
            r->fn = fn;
            r->tid = t->tid;
            r->tsc = rdtsc();
            r->rsp = entry_rsp;
            r->ret = ret;
            r->regs[0] = s->rax;
            r->regs[1] = s->rdx;
            copy_words(&r->regs[2], (const uint64_t *)s->xmm0, 1);
            copy_words(&r->regs[3], (const uint64_t *)s->xmm1, 1);
            r->regs[4] = dropped;
            r->regs[5] = 0;
            for (int i = 0; i < 5; i++)
                r->spare[i] = 0;
            publish(r, (uint64_t)index);
        }
    }
    compiler_barrier();
    t->busy = was_busy;
    return ret;
}
