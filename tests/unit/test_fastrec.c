/*
 * test_fastrec.c - unit tests of the fast path's recorder blob (ptrace/hooks/fastrec/) and
 * trampolines (ptrace/hooks/fastcode.c), run for real in this process: functions of this
 * binary are patched with entry jumps (tests/unit/fast_harness.h), called, and the
 * records they leave in the area are read as the daemon drains them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "tests/unit/fast_harness.h"

/* The patched functions: real calls (noipa: no inlining, cloning or assumptions
 * about them at their callers), not instrumented by the sanitizers (their first
 * bytes are relocated; ASan's checks would only add RIP-relative operands). The
 * ones that gcc shrink-wraps (a branch as their first instruction, which the jump
 * refuses) start with 5 one-byte nops, as with a patchable entry; the others keep
 * their own first instructions, relocated (fr_lj_outer's is RIP-relative). */
#define NATURAL __attribute__((noipa, no_sanitize_address, no_sanitize_undefined))
#define TRACED NATURAL __attribute__((patchable_function_entry(5, 0)))

enum { F_ADD, F_SCALE, F_REC, F_CALLEE, F_CALLER, F_LJ_OUTER, F_LJ_CHAIN, F_STR, F_THREAD,
       F_DIES, F_SIG, F_WRITE, N_FNS };

#define REC_EXITS (FAST_FN_RECORD | FAST_FN_EXITS)

static bool ready;         /* the harness is set up and every function patched */
static const char *not_ready;
static volatile int sink;

NATURAL long fr_add(long a, long b);
NATURAL double fr_scale(double x, int k);
TRACED int fr_rec(int n);
TRACED int fr_tail_callee(int x);
int fr_tail_caller(int x); /* asm below: a tail call from a traced caller */
NATURAL int fr_lj_outer(void);
TRACED void fr_lj_chain(int n);
TRACED long fr_str(const char *s, const void *b);
TRACED long fr_thread_fn(long x);
TRACED long fr_dies(void);
TRACED int fr_sig(int x);
NATURAL long fr_write(long fd, const void *buf, long n); /* write's and writev's shape */

/* Called through volatile pointers: the compiler can neither see the callee nor turn
 * the recursion into a loop. */
static int (*volatile rec_ptr)(int) = fr_rec;
static void (*volatile chain_ptr)(int) = fr_lj_chain;
static long (*volatile add_ptr)(long, long) = fr_add;

long fr_add(long a, long b)
{
    return a * 3 + b;
}

double fr_scale(double x, int k)
{
    return x * k;
}

int fr_rec(int n)
{
    if (n == 0)
        return 0;
    return 1 + rec_ptr(n - 1);
}

int fr_tail_callee(int x)
{
    return x * 7;
}

/* lea edi, [rdi+1]; a 4-byte nop (so the jump displaces no branch); jmp callee. */
__asm__(".text\n"
        ".globl fr_tail_caller\n"
        ".type fr_tail_caller, @function\n"
        "fr_tail_caller:\n"
        "    leal 1(%rdi), %edi\n"
        "    nopl 0(%rax)\n"
        "    jmp fr_tail_callee\n"
        ".size fr_tail_caller, . - fr_tail_caller\n");

static jmp_buf lj_buf;

int fr_lj_outer(void)
{
    if (setjmp(lj_buf))
        return 7;
    chain_ptr(3);
    return 1;
}

void fr_lj_chain(int n)
{
    if (n == 1)
        longjmp(lj_buf, 1);
    chain_ptr(n - 1);
    sink++; /* not a tail call */
}

long fr_str(const char *s, const void *b)
{
    return (long)s ^ (long)b;
}

long fr_thread_fn(long x)
{
    return x * 2;
}

/* Declares the daemon dead while its own frame is on the shadow stack, then calls
 * a traced function. */
long fr_dies(void)
{
    fh_area->live_timeout_tsc = 1;
    fh_area->live = 0;
    return add_ptr(1, 2) + 100;
}

int fr_sig(int x)
{
    return x + 1000;
}

long fr_write(long fd, const void *buf, long n)
{
    return fd + (long)(buf != NULL) + n;
}

static int setup_all(void **state)
{
    (void)state;
    if (fastrec_blob_len > FH_RET_OFF)
        return -1; /* the blob outgrew its place in the harness: move FH_RET_OFF */
    if (!fh_init((const void *)fr_add)) {
        not_ready = "no executable mapping within rel32 reach of the test's text";
        return 0;
    }
    struct {
        void *fn;
        const char *name;
    } fns[N_FNS] = {
        [F_ADD] = {(void *)fr_add, "fr_add"},
        [F_SCALE] = {(void *)fr_scale, "fr_scale"},
        [F_REC] = {(void *)fr_rec, "fr_rec"},
        [F_CALLEE] = {(void *)fr_tail_callee, "fr_tail_callee"},
        [F_CALLER] = {(void *)fr_tail_caller, "fr_tail_caller"},
        [F_LJ_OUTER] = {(void *)fr_lj_outer, "fr_lj_outer"},
        [F_LJ_CHAIN] = {(void *)fr_lj_chain, "fr_lj_chain"},
        [F_STR] = {(void *)fr_str, "fr_str"},
        [F_THREAD] = {(void *)fr_thread_fn, "fr_thread_fn"},
        [F_DIES] = {(void *)fr_dies, "fr_dies"},
        [F_SIG] = {(void *)fr_sig, "fr_sig"},
        [F_WRITE] = {(void *)fr_write, "fr_write"},
    };
    for (uint32_t i = 0; i < N_FNS; i++)
        if (!fh_patch(fns[i].fn, fns[i].name, i))
            return -1; /* a function of ours the jump cannot take: a defect */
    ready = true;
    return 0;
}

static int setup(void **state)
{
    (void)state;
    if (ready)
        fh_reset(FAST_RING_RECORDS);
    return 0;
}

#define NEED_READY()                                                                    \
    do {                                                                                \
        if (!ready) {                                                                   \
            print_message("skipped: %s\n", not_ready);                                  \
            skip();                                                                     \
        }                                                                               \
    } while (0)

static struct fast_record recs[60000];

static uint64_t bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return v;
}

static void test_counts_and_records(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_ADD)->flags = REC_EXITS;
    assert_int_equal(add_ptr(5, 7), 22);
    assert_int_equal(fh_fn(F_ADD)->calls, 1);
    assert_int_equal(fh_drain(recs, 100), 2);
    const struct fast_record *in = &recs[0], *out = &recs[1];
    assert_int_equal(in->kind, FAST_REC_ENTER);
    assert_int_equal(in->nrec, 1);
    assert_int_equal(in->flags, 0);
    assert_int_equal(in->fn, F_ADD);
    assert_int_equal(in->tid, syscall(SYS_gettid));
    assert_int_equal(in->regs[0], 5);
    assert_int_equal(in->regs[1], 7);
    assert_true(in->tsc > 0);
    assert_int_equal(out->kind, FAST_REC_EXIT);
    assert_int_equal(out->fn, F_ADD);
    assert_int_equal(out->regs[0], 22);
    assert_int_equal(out->regs[4], 0); /* nothing dropped */
    assert_int_equal(out->rsp, in->rsp);
    assert_int_equal(out->ret, in->ret);
    assert_true(out->tsc >= in->tsc);
    assert_int_equal(fh_my_slot()->depth, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(add_ptr(i, 1), i * 3 + 1);
    assert_int_equal(fh_fn(F_ADD)->calls, 4);
    assert_int_equal(fh_drain(recs, 100), 6);
}

static void test_double_through_xmm(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_SCALE)->flags = REC_EXITS | FAST_FN_FP;
    double (*volatile scale)(double, int) = fr_scale;
    assert_true(scale(1.5, 4) == 6.0);
    assert_int_equal(fh_drain(recs, 100), 3);
    assert_int_equal(recs[0].kind, FAST_REC_ENTER);
    assert_int_equal(recs[0].nrec, 2);
    assert_int_equal((uint32_t)recs[0].regs[0], 4);
    uint64_t xmm0;
    memcpy(&xmm0, &recs[1], 8); /* the XMM record: xmm0..7, 16 bytes each */
    assert_int_equal(xmm0, bits(1.5));
    assert_int_equal(recs[2].kind, FAST_REC_EXIT);
    assert_int_equal(recs[2].regs[2], bits(6.0));
}

static void test_recursion(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_REC)->flags = REC_EXITS;
    assert_int_equal(rec_ptr(10), 10);
    assert_int_equal(fh_fn(F_REC)->calls, 11);
    assert_int_equal(fh_drain(recs, 100), 22);
    for (int i = 0; i < 11; i++) {
        const struct fast_record *in = &recs[i], *out = &recs[21 - i];
        assert_int_equal(in->kind, FAST_REC_ENTER);
        assert_int_equal(in->regs[0], 10 - i);
        assert_int_equal(out->kind, FAST_REC_EXIT);
        assert_int_equal(out->rsp, in->rsp);
        assert_int_equal(out->ret, in->ret);
        assert_int_equal(out->regs[0], 10 - i); /* fr_rec(n) returns n */
        assert_int_equal(out->regs[4], 0);
        if (i > 0)
            assert_true(in->rsp < recs[i - 1].rsp);
    }
    assert_int_equal(fh_my_slot()->depth, 0);
}

static void test_tail_call_shares_the_callers_frame(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_CALLER)->flags = REC_EXITS;
    fh_fn(F_CALLEE)->flags = REC_EXITS;
    int (*volatile caller)(int) = fr_tail_caller;
    assert_int_equal(caller(5), 42);
    assert_int_equal(fh_drain(recs, 100), 3);
    assert_int_equal(recs[0].fn, F_CALLER);
    assert_int_equal(recs[0].flags, 0);
    assert_int_equal(recs[1].fn, F_CALLEE);
    assert_int_equal(recs[1].flags, FAST_F_TAIL);
    assert_int_equal(recs[1].rsp, recs[0].rsp);
    assert_int_equal(recs[1].ret, recs[0].ret); /* the real one, not the trampoline */
    assert_int_equal(recs[1].regs[0], 6);
    assert_int_equal(recs[2].kind, FAST_REC_EXIT);
    assert_int_equal(recs[2].fn, F_CALLEE);
    assert_int_equal(recs[2].rsp, recs[0].rsp);
    assert_int_equal(recs[2].ret, recs[0].ret);
    assert_int_equal(recs[2].regs[0], 42);
    assert_int_equal(fh_my_slot()->depth, 0);
}

static void test_longjmp_drops_abandoned_frames(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_LJ_OUTER)->flags = REC_EXITS;
    fh_fn(F_LJ_CHAIN)->flags = REC_EXITS;
    int (*volatile outer)(void) = fr_lj_outer;
    assert_int_equal(outer(), 7);
    assert_int_equal(fh_drain(recs, 100), 5);
    assert_int_equal(recs[0].fn, F_LJ_OUTER);
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(recs[i].kind, FAST_REC_ENTER);
        assert_int_equal(recs[i].fn, F_LJ_CHAIN);
    }
    assert_int_equal(recs[4].kind, FAST_REC_EXIT);
    assert_int_equal(recs[4].fn, F_LJ_OUTER);
    assert_int_equal(recs[4].rsp, recs[0].rsp);
    assert_int_equal(recs[4].regs[0], 7);
    assert_int_equal(recs[4].regs[4], 3); /* the chain's frames, dropped */
    assert_int_equal(fh_my_slot()->depth, 0);
}

/* Runs the traced chain n deep and longjmps out of it from its innermost call. */
static __attribute__((noinline)) void run_chain(int n)
{
    if (!setjmp(lj_buf))
        chain_ptr(n);
}

static void test_full_stack_drops_abandoned_frames_on_entry(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_LJ_CHAIN)->flags = REC_EXITS;
    fh_fn(F_ADD)->flags = REC_EXITS;
    run_chain(FAST_DEPTH + 2);
    struct fast_thread *me = fh_my_slot();
    assert_int_equal(me->depth, FAST_DEPTH); /* abandoned by the longjmp */
    assert_int_equal(me->lost_exits, 2);
    /* fr_add's slot is above every abandoned frame: they make room for its frame. */
    assert_int_equal(add_ptr(2, 3), 9);
    assert_int_equal(me->depth, 0);
    size_t n = fh_drain(recs, 1000);
    assert_int_equal(n, FAST_DEPTH + 2 + 2);
    for (int i = 0; i < FAST_DEPTH + 2; i++) {
        assert_int_equal(recs[i].fn, F_LJ_CHAIN);
        assert_int_equal(recs[i].flags, i < FAST_DEPTH ? 0 : FAST_F_NO_EXIT);
    }
    assert_int_equal(recs[n - 2].fn, F_ADD);
    assert_int_equal(recs[n - 2].flags, 0);
    assert_int_equal(recs[n - 1].kind, FAST_REC_EXIT);
    assert_int_equal(recs[n - 1].regs[0], 9);
    assert_int_equal(recs[n - 1].regs[4], 0);
}

#define THREADS 8
#define PER_THREAD 3000

struct worker {
    int index;
    pid_t tid;
    bool ok;
};

static int workers_done; /* atomic: a worker's records are all published before */

static void *worker_main(void *p)
{
    struct worker *w = p;
    w->tid = (pid_t)syscall(SYS_gettid);
    long (*volatile fn)(long) = fr_thread_fn;
    w->ok = true;
    for (long i = 0; i < PER_THREAD; i++) {
        long x = w->index * 1000000L + i;
        if (fn(x) != 2 * x)
            w->ok = false;
    }
    __atomic_fetch_add(&workers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_threads_record_concurrently(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_THREAD)->flags = REC_EXITS;
    struct worker w[THREADS];
    pthread_t th[THREADS];
    workers_done = 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.index = i};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    /* Drain while they write (each record read is complete: its commit published),
     * then once more after the last one is done. */
    size_t want = THREADS * PER_THREAD * 2, n = 0;
    for (;;) {
        bool done = __atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) == THREADS;
        size_t got = fh_drain(recs + n, sizeof recs / sizeof *recs - n);
        n += got;
        if (done && !got)
            break;
        if (!got)
            sched_yield();
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_true(w[i].ok);
    }
    assert_int_equal(n, want);
    assert_int_equal(fh_drain(recs + n, 1), 0);
    assert_int_equal(fh_fn(F_THREAD)->calls, THREADS * PER_THREAD);
    assert_int_equal(fh_fn(F_THREAD)->lost, 0);
    long next[THREADS] = {0}, exits[THREADS] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct fast_record *r = &recs[i];
        assert_int_equal(r->fn, F_THREAD);
        int k = 0;
        while (k < THREADS && w[k].tid != r->tid)
            k++;
        assert_true(k < THREADS);
        if (r->kind == FAST_REC_ENTER) {
            /* a thread's calls arrive in its order, with its own arguments */
            assert_int_equal(r->regs[0], k * 1000000L + next[k]);
            next[k]++;
        } else {
            assert_int_equal(r->kind, FAST_REC_EXIT);
            assert_int_equal(r->regs[0], 2 * (k * 1000000L + next[k] - 1));
            exits[k]++;
        }
    }
    for (int k = 0; k < THREADS; k++) {
        assert_int_equal(next[k], PER_THREAD);
        assert_int_equal(exits[k], PER_THREAD);
        int slots = 0;
        for (unsigned i = 0; i < FAST_THREADS; i++)
            if (fh_threads()[i].key && fh_threads()[i].tid == w[k].tid) {
                slots++;
                assert_int_equal(fh_threads()[i].depth, 0);
            }
        assert_int_equal(slots, 1);
    }
}

static void test_full_ring_loses_without_a_frame(void **state)
{
    (void)state;
    NEED_READY();
    fh_reset(8);
    fh_fn(F_ADD)->flags = REC_EXITS;
    for (long i = 0; i < 10; i++) {
        assert_int_equal(add_ptr(i, 1), i * 3 + 1);
        assert_int_equal(fh_my_slot()->depth, 0);
    }
    assert_int_equal(fh_fn(F_ADD)->calls, 10);
    /* Enters leave half of this small ring to the exits (fast_abi.h's headroom): 2
     * calls fill the rest with their enter and exit; the 8 others lose their enter
     * and push nothing, so their exits do not come through the trampoline either. */
    assert_int_equal(fh_fn(F_ADD)->lost, 8);
    assert_int_equal(fh_drain(recs, 100), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(recs[i].kind, i % 2 ? FAST_REC_EXIT : FAST_REC_ENTER);
    assert_int_equal(add_ptr(1, 1), 4); /* room again */
    assert_int_equal(fh_drain(recs, 100), 2);
}

static void test_dead_daemon_counts_and_still_returns(void **state)
{
    (void)state;
    NEED_READY();
    fh_area->live_timeout_tsc = UINT64_MAX / 2;
    fh_area->live = 0;
    fh_fn(F_DIES)->flags = REC_EXITS;
    fh_fn(F_ADD)->flags = REC_EXITS;
    long (*volatile dies)(void) = fr_dies;
    assert_int_equal(dies(), 105);
    assert_int_equal(fh_fn(F_DIES)->calls, 1);
    assert_int_equal(fh_fn(F_ADD)->calls, 1);
    /* fr_dies's enter and exit: the daemon died before fr_add (not recorded); an
     * exit is recorded even then, its frame having been pushed */
    assert_int_equal(fh_drain(recs, 100), 2);
    assert_int_equal(recs[0].fn, F_DIES);
    assert_int_equal(recs[0].kind, FAST_REC_ENTER);
    assert_int_equal(recs[1].kind, FAST_REC_EXIT);
    assert_int_equal(fh_fn(F_ADD)->lost, 1);
    assert_int_equal(fh_my_slot()->depth, 0); /* its frame was popped */
    assert_int_equal(add_ptr(2, 2), 8);
    assert_int_equal(fh_fn(F_ADD)->calls, 2);
    assert_int_equal(fh_drain(recs, 100), 0);
}

/* The recorder's stops for the daemon (FAST_FN_TRAP_ENTER / _EXIT): the signal and
 * the registers fast_abi.h names, caught here by a SIGURG handler as a tracer would
 * catch them at the delivery stop; none once the daemon is gone. */
/* per stop: r8 which, r9 saved, r12 fn, r13 slot, the area, the saved rdi and rsi
 * (read at the stop: the stack they are on is reused after it) */
static volatile uint64_t stop_regs[16][7];
static volatile int n_stops;
static volatile int stop_signal_ok = 1;

static void on_stop(int sig, siginfo_t *si, void *uc_v)
{
    const ucontext_t *uc = uc_v;
    const greg_t *g = uc->uc_mcontext.gregs;
    if (sig != FAST_STOP_SIGNAL || si->si_code != FAST_STOP_CODE ||
        si->si_errno != FAST_STOP_MAGIC || si->si_pid != getpid())
        stop_signal_ok = 0;
    if (n_stops < 16) {
        volatile uint64_t *r = stop_regs[n_stops];
        r[0] = (uint64_t)g[REG_R8];
        r[1] = (uint64_t)g[REG_R9];
        r[2] = (uint64_t)g[REG_R12];
        r[3] = (uint64_t)g[REG_R13];
        r[4] = (uint64_t)si->si_value.sival_ptr;
        if (r[0] == FAST_TRAP_ENTER) {
            const struct fast_saved *saved = (const struct fast_saved *)r[1];
            r[5] = saved->rdi;
            r[6] = saved->rsi;
        }
    }
    n_stops++;
}

static void test_stops_for_the_daemon(void **state)
{
    (void)state;
    NEED_READY();
    struct sigaction sa = {.sa_sigaction = on_stop, .sa_flags = SA_SIGINFO}, old;
    sigaction(SIGURG, &sa, &old);
    n_stops = 0;
    fh_fn(F_ADD)->flags = REC_EXITS | FAST_FN_TRAP_ENTER | FAST_FN_TRAP_EXIT;
    assert_int_equal(add_ptr(2, 5), 11);
    assert_int_equal(n_stops, 2);
    assert_true(stop_signal_ok);
    assert_int_equal(stop_regs[0][0], FAST_TRAP_ENTER);
    assert_int_equal(stop_regs[0][4], (uint64_t)fh_area);
    assert_int_equal(stop_regs[0][2], F_ADD);
    /* the saved registers: the call's arguments */
    assert_int_equal(stop_regs[0][5], 2);
    assert_int_equal(stop_regs[0][6], 5);
    assert_int_equal(stop_regs[1][0], FAST_TRAP_EXIT);
    assert_int_equal(stop_regs[1][2], F_ADD);
    assert_int_equal(stop_regs[1][3], stop_regs[0][3]); /* the same slot */
    assert_int_equal(fh_drain(recs, 100), 2); /* and recorded as ever */

    /* a thread that blocks the signal stops all the same, at once, and keeps its
     * mask */
    sigset_t urg, was, pending;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    pthread_sigmask(SIG_BLOCK, &urg, &was);
    assert_int_equal(add_ptr(3, 3), 12);
    assert_int_equal(n_stops, 4);
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGURG));
    pthread_sigmask(SIG_SETMASK, &was, &urg);
    assert_true(sigismember(&urg, SIGURG)); /* still blocked until now */
    assert_int_equal(fh_drain(recs, 100), 2);

    fh_area->live_timeout_tsc = 1; /* the daemon is gone: no stop */
    fh_area->live = 0;
    assert_int_equal(add_ptr(1, 1), 4);
    assert_int_equal(n_stops, 4);
    assert_int_equal(fh_fn(F_ADD)->lost, 1);
    sigaction(SIGURG, &old, NULL);
}

/* With no tracer and SIGURG's default disposition (a daemon that died with the
 * program running, before the live word timed out), a stop is a no-op: the program
 * runs on, where an int3 would have killed it. Run in a child, which would die. */
static void test_a_stop_without_a_tracer_is_harmless(void **state)
{
    (void)state;
    NEED_READY();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGURG, SIG_DFL);
        fh_fn(F_ADD)->flags = REC_EXITS | FAST_FN_TRAP_ENTER | FAST_FN_TRAP_EXIT;
        _exit(add_ptr(2, 5) == 11 && fh_drain(recs, 100) == 2 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* A budgeted function records its quota, then its credit, then only counts: a
 * flood is stopped in the recorder, at once. */
static void test_budget_quota_then_credit_then_counted(void **state)
{
    (void)state;
    NEED_READY();
    struct fast_fn *f = fh_fn(F_ADD);
    f->flags = REC_EXITS | FAST_FN_BUDGET;
    f->quota = 3;
    f->credit = 2;
    for (long i = 0; i < 10; i++)
        assert_int_equal(add_ptr(i, 1), i * 3 + 1);
    assert_int_equal(f->calls, 10);
    assert_int_equal(f->lost, 0); /* not recorded by the budget is no ring-full */
    assert_int_equal(fh_drain(recs, 100), 10); /* 5 calls: enter and exit each */
    assert_true(f->quota <= 0);
    assert_int_equal(f->credit, 2 - 7); /* below 0: the daemon sees it was spent */
    f->credit = 1; /* the daemon's next look gives some back */
    assert_int_equal(add_ptr(1, 1), 4);
    assert_int_equal(fh_drain(recs, 100), 2);
}

/* Calls on credit leave FAST_ROOM_KEPT of the ring to the functions within their
 * quota: the flood loses its calls, a rare function still finds room. */
static void test_credit_leaves_room_for_the_quota(void **state)
{
    (void)state;
    NEED_READY();
    long (*volatile str)(const char *, const void *) = fr_str;
    fh_reset(16); /* enters keep 8 for the exits, and 4 more on credit */
    struct fast_fn *flood = fh_fn(F_ADD), *rare = fh_fn(F_STR);
    flood->flags = rare->flags = REC_EXITS | FAST_FN_BUDGET;
    flood->credit = 100;
    rare->quota = 100;
    for (long i = 0; i < 10; i++)
        assert_int_equal(add_ptr(i, 1), i * 3 + 1);
    assert_int_equal(flood->lost, 8); /* 2 calls took 4 records: no more on credit */
    for (int i = 0; i < 2; i++)
        assert_int_equal(str((const char *)16, (const void *)1), 17);
    assert_int_equal(rare->lost, 0);
    assert_int_equal(fh_drain(recs, 100), 8);
    assert_int_equal(recs[4].fn, F_STR);
    assert_int_equal(recs[6].fn, F_STR);
}

static void test_count_only(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_ADD)->flags = FAST_FN_EXITS; /* no FAST_FN_RECORD: a sampled function */
    for (long i = 0; i < 5; i++)
        assert_int_equal(add_ptr(i, 0), i * 3);
    assert_int_equal(fh_fn(F_ADD)->calls, 5);
    assert_int_equal(fh_drain(recs, 100), 0);
    assert_null(fh_my_slot()); /* not even a thread slot */
}

/* libc's write under FAST_FN_OUTPUT (fd in rdi): followed only when the fd is in
 * out_fds and fstat finds one of the output's pipes there; a socket, a pipe's copy
 * at another number, a reused number return at once, counted only. */
static void test_only_writes_to_the_output_are_followed(void **state)
{
    (void)state;
    NEED_READY();
    int out[2], sv[2];
    struct stat st;
    assert_int_equal(pipe(out), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(fstat(out[1], &st), 0);
    int copy = dup(out[1]);
    assert_true(copy >= 0 && copy < 64 && out[1] < 64 && sv[0] < 64);
    fh_area->out_fds = 1ull << out[1] | 1ull << sv[0];
    fh_area->out_dev = st.st_dev;
    fh_area->out_ino[1] = st.st_ino;
    fh_fn(F_ADD)->flags = REC_EXITS | FAST_FN_OUTPUT;
    assert_int_equal(add_ptr(sv[0], 1), sv[0] * 3 + 1); /* in out_fds, a socket */
    assert_int_equal(add_ptr(copy, 1), copy * 3 + 1);   /* the pipe, not in out_fds */
    assert_int_equal(fh_drain(recs, 100), 0);
    assert_int_equal(add_ptr(out[1], 1), out[1] * 3 + 1); /* the output */
    assert_int_equal(fh_drain(recs, 100), 2);
    assert_int_equal(recs[0].regs[0], out[1]);
    assert_int_equal(dup2(sv[0], out[1]), out[1]); /* the number reused */
    assert_int_equal(add_ptr(out[1], 1), out[1] * 3 + 1);
    assert_int_equal(fh_drain(recs, 100), 0);
    assert_int_equal(add_ptr(1000, 1), 3001); /* past the mask's 64 fds */
    assert_int_equal(fh_drain(recs, 100), 0);
    assert_int_equal(fh_fn(F_ADD)->calls, 5);

    /* A followed write's enter carries its pipe and first bytes (FAST_OUT_PREFIX at
     * most): from buf, or from iov[0] for writev; none from a bad pointer. */
    assert_int_equal(dup2(copy, out[1]), out[1]); /* the pipe back */
    long (*volatile wr)(long, const void *, long) = fr_write;
    fh_fn(F_WRITE)->flags = REC_EXITS | FAST_FN_OUTPUT;
    const char *text = "a line longer than the prefix kept\n";
    assert_int_equal(wr(out[1], text, 35), out[1] + 36);
    assert_int_equal(wr(out[1], "hi\n", 3), out[1] + 4);
    assert_int_equal(wr(out[1], (const void *)8, 5), out[1] + 6);
    fh_fn(F_WRITE)->flags |= FAST_FN_IOV;
    struct iovec iov[2] = {{(void *)"vec ", 4}, {(void *)"tor\n", 4}};
    assert_int_equal(wr(out[1], iov, 2), out[1] + 3);
    assert_int_equal(fh_drain(recs, 100), 8);
    const struct fast_record *e[4] = {&recs[0], &recs[2], &recs[4], &recs[6]};
    for (int i = 0; i < 4; i++)
        assert_int_equal(e[i]->spare[3] >> 8, 2); /* out_ino[1] */
    assert_int_equal(e[0]->spare[3] & 0xff, FAST_OUT_PREFIX);
    assert_memory_equal(e[0]->spare, text, FAST_OUT_PREFIX);
    assert_int_equal(e[1]->spare[3] & 0xff, 3);
    assert_memory_equal(e[1]->spare, "hi\n", 3);
    assert_int_equal(e[2]->spare[3] & 0xff, 0);
    assert_int_equal(e[3]->spare[3] & 0xff, 4);
    assert_memory_equal(e[3]->spare, "vec ", 4);
    close(out[0]);
    close(out[1]);
    close(copy);
    close(sv[0]);
    close(sv[1]);
}

struct three {
    int a, b, c;
};

struct node {
    long value;
    struct node *next;
};

static inline struct fast_prog *fh_prog(uint32_t id)
{
    return &((struct fast_prog *)((char *)fh_area + FAST_PROGS_OFF))[id];
}

static void check_data(const struct fast_record *r, uint8_t item, const void *addr,
                       const void *bytes, size_t len)
{
    const struct fast_data_record *d = (const struct fast_data_record *)r;
    assert_int_equal(d->kind, FAST_REC_DATA);
    assert_int_equal(d->item, item);
    assert_int_equal(d->addr, (uint64_t)addr);
    assert_int_equal(d->len, len);
    if (len)
        assert_memory_equal(d->data, bytes, len);
}

/* Capture programs: items from registers, from a pointer an earlier item copied (a
 * list's next node), from the stack and from a fixed address; an item longer than
 * a record; an exit item from rax. */
static void test_capture(void **state)
{
    (void)state;
    NEED_READY();
    struct fast_fn *f = fh_fn(F_STR);
    struct fast_prog *p = fh_prog(F_STR);
    static char big[300];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    f->flags = REC_EXITS;
    p->enter[0] = (struct fast_cap){.len = 6, .src = FAST_SRC_REG, .idx = 0};
    p->enter[1] = (struct fast_cap){.len = sizeof(struct node), .src = FAST_SRC_REG, .idx = 1};
    p->enter[2] = (struct fast_cap){.len = sizeof(struct node), .src = FAST_SRC_ITEM, .idx = 1,
                                    .at = offsetof(struct node, next)};
    p->enter[3] = (struct fast_cap){.len = 8, .src = FAST_SRC_STACK};
    p->enter[4] = (struct fast_cap){.len = sizeof big, .src = FAST_SRC_ABS,
                                    .off = (int64_t)(uintptr_t)big};
    p->n_enter = 5;
    p->exit[0] = (struct fast_cap){.len = 4, .src = FAST_SRC_REG, .idx = 0, .off = 2};
    p->n_exit = 1;
    long (*volatile fn)(const char *, const void *) = fr_str;
    struct node second = {2, NULL}, first = {1, &second};
    long ret = fn("hello", &first);
    /* enter, 4 items of one record and one of three; exit and its item */
    assert_int_equal(fh_drain(recs, 100), 10);
    assert_int_equal(recs[0].kind, FAST_REC_ENTER);
    assert_int_equal(recs[0].nrec, 8);
    check_data(&recs[1], 0, (const void *)recs[0].regs[0], "hello", 6);
    check_data(&recs[2], 1, &first, &first, sizeof first);
    check_data(&recs[3], 2, &second, &second, sizeof second);
    /* the return address's slot, swapped for the return trampoline by then */
    check_data(&recs[4], 3, (const void *)recs[0].rsp, &fh_area->ret_tramp, 8);
    check_data(&recs[5], 4, big, big, FAST_DATA_BYTES);
    check_data(&recs[6], 4, big + FAST_DATA_BYTES, big + FAST_DATA_BYTES, FAST_DATA_BYTES);
    check_data(&recs[7], 4, big + 2 * FAST_DATA_BYTES, big + 2 * FAST_DATA_BYTES,
               sizeof big - 2 * FAST_DATA_BYTES);
    assert_int_equal(((const struct fast_data_record *)&recs[7])->want, sizeof big);
    assert_int_equal(recs[8].kind, FAST_REC_EXIT);
    assert_int_equal(recs[8].nrec, 2);
    assert_int_equal(recs[8].regs[0], (uint64_t)ret);
    check_data(&recs[9], 0, (const void *)(ret + 2), NULL, 0); /* not a pointer */

    /* A NULL next pointer copies nothing for its node; bytes up to an unmapped page
     * arrive, past it nothing; a pointer to nothing copies nothing. */
    p->n_exit = 0;
    p->n_enter = 3;
    char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(pages != MAP_FAILED);
    assert_int_equal(munmap(pages + 4096, 4096), 0);
    memcpy(pages + 4096 - 4, "abcd", 4);
    struct node alone = {7, NULL};
    fn(pages + 4096 - 4, &alone);
    fn((const char *)16, pages + 4096);
    assert_int_equal(fh_drain(recs, 100), 10);
    check_data(&recs[1], 0, pages + 4096 - 4, "abcd", 4);
    check_data(&recs[2], 1, &alone, &alone, sizeof alone);
    check_data(&recs[3], 2, NULL, NULL, 0);
    check_data(&recs[6], 0, (void *)16, NULL, 0);
    check_data(&recs[7], 1, pages + 4096, NULL, 0);
    check_data(&recs[8], 2, NULL, NULL, 0);
    munmap(pages, 4096);
    memset(p, 0, sizeof *p);
}

static volatile int sig_result;

static void on_usr1(int sig)
{
    (void)sig;
    int (*volatile fn)(int) = fr_sig;
    sig_result = fn(sig_result);
}

static void test_signal_while_the_recorder_runs(void **state)
{
    (void)state;
    NEED_READY();
    fh_fn(F_ADD)->flags = REC_EXITS;
    fh_fn(F_SIG)->flags = REC_EXITS;
    assert_int_equal(add_ptr(1, 1), 4); /* claims this thread's slot */
    assert_int_equal(fh_drain(recs, 100), 2);
    struct fast_thread *me = fh_my_slot();
    assert_non_null(me);
    /* As if the signal had interrupted fast_enter or fast_exit of this thread. */
    me->busy = 1;
    struct sigaction sa = {.sa_handler = on_usr1}, old;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    sig_result = 1;
    assert_int_equal(raise(SIGUSR1), 0);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_int_equal(sig_result, 1001);
    assert_int_equal(me->busy, 1); /* left to the interrupted call */
    assert_int_equal(me->depth, 0);
    assert_int_equal(fh_drain(recs, 100), 1); /* its enter, no frame, no exit */
    assert_int_equal(recs[0].fn, F_SIG);
    assert_int_equal(recs[0].flags, FAST_F_NO_EXIT);
    assert_int_equal(recs[0].tid, syscall(SYS_gettid));
    me->busy = 0;
    assert_int_equal(add_ptr(1, 1), 4);
    assert_int_equal(fh_drain(recs, 100), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_counts_and_records, setup),
        cmocka_unit_test_setup(test_double_through_xmm, setup),
        cmocka_unit_test_setup(test_recursion, setup),
        cmocka_unit_test_setup(test_tail_call_shares_the_callers_frame, setup),
        cmocka_unit_test_setup(test_longjmp_drops_abandoned_frames, setup),
        cmocka_unit_test_setup(test_full_stack_drops_abandoned_frames_on_entry, setup),
        cmocka_unit_test_setup(test_threads_record_concurrently, setup),
        cmocka_unit_test_setup(test_full_ring_loses_without_a_frame, setup),
        cmocka_unit_test_setup(test_dead_daemon_counts_and_still_returns, setup),
        cmocka_unit_test_setup(test_stops_for_the_daemon, setup),
        cmocka_unit_test_setup(test_a_stop_without_a_tracer_is_harmless, setup),
        cmocka_unit_test_setup(test_budget_quota_then_credit_then_counted, setup),
        cmocka_unit_test_setup(test_credit_leaves_room_for_the_quota, setup),
        cmocka_unit_test_setup(test_count_only, setup),
        cmocka_unit_test_setup(test_only_writes_to_the_output_are_followed, setup),
        cmocka_unit_test_setup(test_capture, setup),
        cmocka_unit_test_setup(test_signal_while_the_recorder_runs, setup),
    };
    return cmocka_run_group_tests(tests, setup_all, NULL);
}
