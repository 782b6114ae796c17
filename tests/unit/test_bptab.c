/*
 * test_bptab.c - unit tests of the breakpoint table (ptrace/patch/bptab.c) against real
 * processes: forked children of the test, blocked on a pipe, whose copy of a byte
 * array stands in for code (the table writes through /proc/PID/mem, which a parent
 * may open on its children). The single-step (step_insn) on a seized child running
 * two instructions of this file: a step after our own interrupt, a step that
 * faults, signals that come first. Then the tracer (ptrace/tracer/tracer.c): a stop
 * handler keeps the threads that hit a breakpoint stopped until
 * tracer_resume_thread(); a trap no handler claims runs the program's instruction;
 * a thread other than the main one execs while commands stop the program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dwarf/elfinfo.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/tracer/tracer.h"
#include "children.h"
#include "fixtures.h"

static uint8_t code[16] = {0x55, 0x48, 0x89, 0xe5, 0xcc, 0x90, 0x90, 0xc3};

/* Instructions the step tests run in a child: a nop, and a push that faults when
 * the stack pointer is unmapped. Never called here. */
__asm__(".text\n"
        "step_nop: nop\n nop\n"
        "step_push: push %rbp\n ret\n");
extern char step_nop[], step_push[];
#define AT ((uint64_t)(uintptr_t)code)

static uint8_t byte_in(const struct child *c, uint64_t addr)
{
    uint8_t b = 0;
    assert_true(procmem_read(c->memfd, addr, &b, 1));
    return b;
}

static void test_references_share_one_saved_byte(void **state)
{
    (void)state;
    struct child a = child_start(), b = child_start();
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_true(bptab_add_process(t, b.pid));
    assert_int_equal(bptab_lookup(t, AT), 0);

    assert_true(bptab_insert(t, AT, BP_TRACE_HOOK));
    assert_int_equal(byte_in(&a, AT), 0xCC);
    assert_int_equal(byte_in(&b, AT), 0xCC); /* every process of the space */
    /* A second owner at the same address keeps the program's byte, not 0xCC. */
    assert_true(bptab_insert(t, AT, BP_PANIC));
    assert_true(bptab_insert(t, AT, BP_TRACE_HOOK));
    assert_int_equal(bptab_lookup(t, AT), BP_OWNER_BIT(BP_TRACE_HOOK) | BP_OWNER_BIT(BP_PANIC));

    assert_true(bptab_remove(t, AT, BP_TRACE_HOOK));
    assert_true(bptab_remove(t, AT, BP_TRACE_HOOK));
    assert_false(bptab_remove(t, AT, BP_TRACE_HOOK)); /* it holds none any more */
    assert_int_equal(bptab_lookup(t, AT), BP_OWNER_BIT(BP_PANIC));
    assert_int_equal(byte_in(&a, AT), 0xCC);
    assert_true(bptab_remove(t, AT, BP_PANIC));
    assert_int_equal(bptab_lookup(t, AT), 0);
    assert_int_equal(byte_in(&a, AT), 0x55);
    assert_int_equal(byte_in(&b, AT), 0x55);

    /* Inserted again after the last reference went: the byte read is the real one. */
    assert_true(bptab_insert(t, AT, BP_ENTRY));
    assert_true(bptab_remove(t, AT, BP_ENTRY));
    assert_int_equal(byte_in(&a, AT), 0x55);
    bptab_free(t);
    child_end(&a);
    child_end(&b);
}

static void test_program_int3_is_refused(void **state)
{
    (void)state;
    struct child a = child_start();
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_false(bptab_insert(t, AT + 4, BP_TRACE_HOOK)); /* code[4] is 0xCC */
    assert_int_equal(bptab_lookup(t, AT + 4), 0);
    assert_false(bptab_rewind(t, a.pid, AT + 4)); /* a trap there is the program's */
    bptab_free(t);
    child_end(&a);
}

static void test_read_shows_program_bytes(void **state)
{
    (void)state;
    struct child a = child_start();
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_true(bptab_insert(t, AT, BP_TRACE_HOOK));
    assert_true(bptab_insert(t, AT + 2, BP_USER_BREAKPOINT));
    uint8_t buf[8];
    assert_true(bptab_read(t, a.memfd, AT, buf, sizeof buf));
    assert_memory_equal(buf, code, sizeof buf); /* the program's own 0xCC stays */
    assert_true(procmem_read(a.memfd, AT, buf, sizeof buf));
    assert_int_equal(buf[0], 0xCC);
    assert_int_equal(buf[2], 0xCC);
    bptab_mask(t, AT + 1, buf + 1, 4); /* a window that starts after one of them */
    assert_int_equal(buf[0], 0xCC);
    assert_memory_equal(buf + 1, code + 1, 4);
    bptab_free(t);
    child_end(&a);
}

struct evicted {
    struct bptab *t;
    uint64_t addr;
    int calls;
};

/* A patch's owner asked to make room: it takes its patch out and counts on an int3. */
static void evict(void *arg, uint64_t addr)
{
    struct evicted *ev = arg;
    ev->calls++;
    ev->addr = addr;
    assert_true(bptab_unpatch(ev->t, addr));
    assert_true(bptab_insert(ev->t, addr, BP_TRACE_HOOK));
}

static void test_patch_writes_every_process_and_yields_to_int3s(void **state)
{
    (void)state;
    static const uint8_t jmp[5] = {0xE9, 1, 2, 3, 4};
    struct child a = child_start(), b = child_start();
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_true(bptab_add_process(t, b.pid));
    struct evicted ev = {t, 0, 0};
    assert_true(bptab_patch(t, AT, jmp, sizeof jmp, evict, &ev));
    assert_int_equal(byte_in(&a, AT + 4), 4);
    assert_int_equal(byte_in(&b, AT), 0xE9);
    uint8_t buf[8];
    assert_true(bptab_read(t, a.memfd, AT, buf, sizeof buf));
    assert_memory_equal(buf, code, sizeof buf); /* the program's bytes under it */
    assert_false(bptab_patch(t, AT + 2, jmp, sizeof jmp, evict, &ev)); /* overlaps */

    /* A user breakpoint inside the patch: its owner takes the patch out first. */
    assert_true(bptab_insert(t, AT + 3, BP_USER_BREAKPOINT));
    assert_int_equal(ev.calls, 1);
    assert_int_equal(ev.addr, AT);
    assert_int_equal(byte_in(&a, AT), 0xCC);
    assert_int_equal(byte_in(&a, AT + 1), code[1]);
    assert_int_equal(byte_in(&b, AT + 3), 0xCC);
    /* No patch over an int3 the table holds. */
    assert_true(bptab_remove(t, AT, BP_TRACE_HOOK));
    assert_false(bptab_patch(t, AT, jmp, sizeof jmp, evict, &ev));
    assert_true(bptab_remove(t, AT + 3, BP_USER_BREAKPOINT));
    assert_true(bptab_patch(t, AT, jmp, sizeof jmp, evict, &ev));
    assert_true(bptab_unpatch(t, AT));
    assert_false(bptab_unpatch(t, AT));
    assert_int_equal(byte_in(&a, AT), code[0]);
    assert_int_equal(byte_in(&b, AT + 4), code[4]);
    bptab_free(t);
    child_end(&a);
    child_end(&b);
}

static void test_rewind_after_removal(void **state)
{
    (void)state;
    struct child a = child_start(), b = child_start();
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_false(bptab_rewind(t, a.pid, AT)); /* never ours */
    assert_true(bptab_insert(t, AT, BP_TRACE_HOOK));
    assert_false(bptab_rewind(t, a.pid, AT)); /* held: a trap there is a hit */
    /* b joins with a copy of the int3 (as a fork made before the removal would,
     * had the tracer not seen it yet), then the breakpoint goes. */
    uint8_t int3 = 0xCC;
    assert_true(procmem_write(b.memfd, AT, &int3, 1));
    assert_true(bptab_remove(t, AT, BP_TRACE_HOOK));
    assert_true(bptab_add_process(t, b.pid));
    assert_int_equal(byte_in(&b, AT), 0xCC);
    assert_true(bptab_rewind(t, b.pid, AT));
    assert_int_equal(byte_in(&b, AT), 0x55);
    assert_true(bptab_rewind(t, a.pid, AT)); /* a trap in flight: nothing to write */
    assert_int_equal(byte_in(&a, AT), 0x55);
    bptab_drop_process(t, b.pid);
    assert_false(bptab_has_process(t, b.pid));
    assert_true(bptab_has_process(t, a.pid));
    bptab_free(t);
    child_end(&a);
    child_end(&b);
}

/* Memory mapped in the image's process after a child was forked (a scratch area):
 * the child may have its own data at that address, which the table never writes. */
static void test_insert_only_skips_older_children(void **state)
{
    (void)state;
    struct child a = child_start(), b = child_start();
    uint8_t other = 0x11;
    assert_true(procmem_write(b.memfd, AT, &other, 1));
    struct bptab *t = bptab_new();
    assert_true(bptab_add_process(t, a.pid));
    assert_true(bptab_add_process(t, b.pid));
    assert_true(bptab_insert_only(t, AT, BP_TRACE_HOOK, a.pid));
    assert_int_equal(byte_in(&a, AT), 0xCC);
    assert_int_equal(byte_in(&b, AT), 0x11);
    assert_true(bptab_insert(t, AT, BP_PANIC)); /* a second reference writes nothing */
    assert_true(bptab_remove(t, AT, BP_PANIC));
    assert_true(bptab_remove(t, AT, BP_TRACE_HOOK));
    assert_int_equal(byte_in(&a, AT), 0x55);
    assert_int_equal(byte_in(&b, AT), 0x11);
    assert_false(bptab_insert_only(t, AT, BP_TRACE_HOOK, a.pid)); /* had an entry */
    assert_false(bptab_insert_only(t, AT + 1, BP_TRACE_HOOK, b.pid)); /* not the image's */
    bptab_free(t);
    child_end(&a);
    child_end(&b);
}

/* ---- single-step ----------------------------------------------------------------- */

/* Points the stopped child at pc (and sp unless 0); no system call restarts. */
static void set_pc(pid_t pid, uint64_t pc, uint64_t sp)
{
    struct user_regs_struct regs;
    assert_int_equal(ptrace(PTRACE_GETREGS, pid, 0, &regs), 0);
    regs.rip = pc;
    if (sp)
        regs.rsp = sp;
    regs.orig_rax = (uint64_t)-1;
    assert_int_equal(ptrace(PTRACE_SETREGS, pid, 0, &regs), 0);
}

static uint64_t pc_of(pid_t pid)
{
    struct user_regs_struct regs;
    assert_int_equal(ptrace(PTRACE_GETREGS, pid, 0, &regs), 0);
    return regs.rip;
}

/* A thread trapped (here: in a signal stop) when hold() interrupted it: the
 * interrupt is reported when it resumes, before the instruction runs. The step
 * must still run it, once. */
static void test_step_after_interrupt_runs_the_instruction(void **state)
{
    (void)state;
    struct child c = child_start();
    seize_stopped(&c);
    int status;
    syscall(SYS_tgkill, c.pid, c.pid, SIGUSR1);
    assert_int_equal(ptrace(PTRACE_CONT, c.pid, 0, 0), 0);
    assert_int_equal(waitpid(c.pid, &status, __WALL), c.pid);
    assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGUSR1 && (status >> 16) == 0);
    assert_int_equal(ptrace(PTRACE_INTERRUPT, c.pid, 0, 0), 0);
    set_pc(c.pid, (uint64_t)(uintptr_t)step_nop, 0);

    struct step_signals kept;
    status = step_insn(c.pid, &kept);
    assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP && (status >> 16) == 0);
    assert_int_equal(pc_of(c.pid), (uint64_t)(uintptr_t)step_nop + 1);
    assert_int_equal(kept.n, 0);
    child_kill(&c);
}

/* An instruction that faults ends the step with its own signal, not after retries;
 * the signals sent before it ran are all kept, in order. */
static void test_step_fault_is_the_result(void **state)
{
    (void)state;
    struct child c = child_start();
    seize_stopped(&c);
    set_pc(c.pid, (uint64_t)(uintptr_t)step_push, 0x1000); /* an unmapped stack */
    syscall(SYS_tgkill, c.pid, c.pid, SIGUSR1);
    syscall(SYS_tgkill, c.pid, c.pid, SIGUSR2);

    struct step_signals kept;
    int status = step_insn(c.pid, &kept);
    assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSEGV && (status >> 16) == 0);
    assert_int_equal(pc_of(c.pid), (uint64_t)(uintptr_t)step_push);
    assert_int_equal(kept.n, 2);
    assert_int_equal(kept.info[0].si_signo, SIGUSR1);
    assert_int_equal(kept.info[1].si_signo, SIGUSR2);
    assert_int_equal(kept.info[0].si_code, SI_TKILL);
    child_kill(&c);
}

/* A queued signal kept by a step goes back with its siginfo (the fast path's
 * recorder stops are told apart by theirs); a tgkill'd one as a tgkill. */
static void test_kept_signals_are_resent_with_their_siginfo(void **state)
{
    (void)state;
    struct child c = child_start();
    seize_stopped(&c);
    siginfo_t q = {.si_signo = SIGUSR1, .si_code = SI_QUEUE, .si_errno = 7};
    q.si_pid = getpid();
    q.si_value.sival_int = 42;
    assert_int_equal(syscall(SYS_rt_tgsigqueueinfo, c.pid, c.pid, SIGUSR1, &q), 0);
    syscall(SYS_tgkill, c.pid, c.pid, SIGUSR2);
    set_pc(c.pid, (uint64_t)(uintptr_t)step_nop, 0);
    struct step_signals kept;
    int status = step_insn(c.pid, &kept);
    assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);
    assert_int_equal(kept.n, 2);

    step_signals_resend(c.pid, &kept);
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ptrace(PTRACE_CONT, c.pid, 0, 0), 0);
        assert_int_equal(waitpid(c.pid, &status, __WALL), c.pid);
        assert_true(WIFSTOPPED(status) && (status >> 16) == 0);
        siginfo_t si;
        assert_int_equal(ptrace(PTRACE_GETSIGINFO, c.pid, 0, &si), 0);
        if (si.si_signo == SIGUSR1) {
            assert_int_equal(si.si_code, SI_QUEUE);
            assert_int_equal(si.si_errno, 7);
            assert_int_equal(si.si_value.sival_int, 42);
        } else {
            assert_int_equal(si.si_signo, SIGUSR2);
            assert_int_equal(si.si_code, SI_TKILL);
        }
        seen |= 1 << (si.si_signo == SIGUSR1);
    }
    assert_int_equal(seen, 3);
    child_kill(&c);
}

/* ---- the tracer ------------------------------------------------------------------ */

struct park {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t addr;
    pid_t parked[16];
    int n_parked;
    int hits;          /* of a breakpoint whose handler claims none */
    bool exited;
    int exit_status;
};

static bool is_pt_leaf(const char *name, void *arg)
{
    (void)arg;
    return strcmp(name, "pt_leaf") == 0;
}

/* The threads that hit pt_leaf stay stopped on its first instruction. */
static enum bp_verdict park_stop(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg)
{
    (void)t;
    struct park *p = arg;
    st->regs->rip = st->addr;
    if (ptrace(PTRACE_SETREGS, tid, 0, st->regs) != 0)
        return BP_PASS;
    pthread_mutex_lock(&p->lock);
    if (p->n_parked < 16)
        p->parked[p->n_parked++] = tid;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return BP_PARK;
}

static void park_setup(struct tracer *t, void *arg)
{
    struct park *p = arg;
    assert_int_equal(tracer_add_stop_handler(t, "test", BP_USER_BREAKPOINT, park_stop, p), 0);
    assert_true(bptab_insert(tracer_bptab(t), p->addr, BP_USER_BREAKPOINT));
}

static void nothing(struct tracer *t, void *arg)
{
    (void)t;
    (void)arg;
}

/* The breakpoint goes first: resumed, the threads run pt_leaf's own instruction. */
static void park_release(struct tracer *t, void *arg)
{
    struct park *p = arg;
    assert_true(bptab_remove(tracer_bptab(t), p->addr, BP_USER_BREAKPOINT));
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->n_parked; i++)
        assert_int_equal(tracer_resume_thread(t, p->parked[i]), 0);
    assert_int_equal(tracer_resume_thread(t, p->parked[0]), -1); /* not parked now */
    pthread_mutex_unlock(&p->lock);
}

static void on_exit_cb(void *arg, int status)
{
    struct park *p = arg;
    pthread_mutex_lock(&p->lock);
    p->exited = true;
    p->exit_status = status;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* One letter of /proc/PID/task/TID/stat: 't' is a ptrace stop. */
static char task_state(pid_t pid, pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    assert_non_null(close_paren);
    return close_paren[2];
}

static void wait_cond(struct park *p, bool (*done)(struct park *))
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&p->lock);
    while (!done(p))
        assert_int_equal(pthread_cond_timedwait(&p->cond, &p->lock, &until), 0);
    pthread_mutex_unlock(&p->lock);
}

/* Where the program at path is loaded in pid: its bias. */
static uint64_t module_bias(pid_t pid, const char *path)
{
    struct module *mods;
    size_t nm;
    uint64_t bias = 0;
    bool found = false;
    assert_int_equal(procmem_modules(pid, &mods, &nm), 0);
    for (size_t i = 0; i < nm; i++)
        if (strcmp(mods[i].path, path) == 0) {
            bias = mods[i].bias;
            found = true;
        }
    free(mods);
    assert_true(found);
    return bias;
}

static bool some_parked(struct park *p) { return p->n_parked > 0; }
static bool has_exited(struct park *p) { return p->exited; }

/* patch_torture under a tracer of its own, its threads running, and the runtime
 * address of its pt_leaf, for the tests that put breakpoints there. */
struct torture {
    char dir[32], stop[64];
    int null;
    FILE *out;
    struct tracer *t;
    pid_t pid;
    uint64_t leaf;
};

static void torture_start(struct torture *tt, struct park *p)
{
    char rel[PATH_MAX + 32], path[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/patch_torture", fixture_dir);
    assert_non_null(realpath(rel, path)); /* as /proc/PID/maps names it */
    snprintf(tt->dir, sizeof tt->dir, "/tmp/strobe-bptab-XXXXXX");
    assert_non_null(mkdtemp(tt->dir));
    snprintf(tt->stop, sizeof tt->stop, "%s/stop", tt->dir);
    uint64_t sym = elf_symbol_find(path, is_pt_leaf, NULL);
    assert_true(sym != 0);
    int out[2];
    assert_int_equal(pipe(out), 0);
    tt->null = open("/dev/null", O_RDWR);
    char *argv[] = {path, tt->stop, NULL};
    char *envp[] = {NULL};
    struct tracer_spec spec = {
        .path = path, .argv = argv, .envp = envp, .cwd = tt->dir,
        .stdin_fd = tt->null, .stdout_fd = out[1], .stderr_fd = tt->null,
        .on_main_exit = on_exit_cb, .arg = p,
    };
    struct strobe_error e;
    assert_int_equal(tracer_start(&spec, &tt->t, &tt->pid, &e), 0);
    close(out[1]);
    char line[64];
    tt->out = fdopen(out[0], "r");
    assert_non_null(fgets(line, sizeof line, tt->out)); /* "ready": its threads run */
    assert_string_equal(line, "ready\n");
    tt->leaf = sym + module_bias(tt->pid, path);
}

/* Tells it to stop, and checks that it ended as if never traced: exit 0 and its
 * final line. */
static void torture_finish(struct torture *tt, struct park *p)
{
    FILE *s = fopen(tt->stop, "w");
    assert_non_null(s);
    fclose(s);
    wait_cond(p, has_exited);
    assert_true(WIFEXITED(p->exit_status));
    assert_int_equal(WEXITSTATUS(p->exit_status), 0);
    char line[64];
    assert_non_null(fgets(line, sizeof line, tt->out)); /* "rounds ... checksum C" */
    assert_int_equal(strncmp(line, "rounds ", 7), 0);
    fclose(tt->out);
    close(tt->null);
    tracer_join(tt->t);
    unlink(tt->stop);
    rmdir(tt->dir);
}

static void test_parked_thread_waits_for_resume(void **state)
{
    (void)state;
    struct park p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct torture tt;
    torture_start(&tt, &p);
    struct tracer *t = tt.t;
    struct strobe_error e;
    p.addr = tt.leaf;

    assert_int_equal(tracer_call(t, park_setup, &p, &e), 0);
    wait_cond(&p, some_parked);
    /* Parked: in a ptrace stop, even across another command (which stops and
     * resumes every other thread). */
    assert_int_equal(tracer_call(t, nothing, NULL, &e), 0);
    pthread_mutex_lock(&p.lock);
    pid_t first = p.parked[0];
    pthread_mutex_unlock(&p.lock);
    assert_int_equal(task_state(tt.pid, first), 't');

    assert_int_equal(tracer_call(t, park_release, &p, &e), 0);
    torture_finish(&tt, &p);
}

/* Counts the hits of a breakpoint and claims none of them. */
static enum bp_verdict pass_stop(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg)
{
    (void)t;
    (void)tid;
    (void)st;
    struct park *p = arg;
    pthread_mutex_lock(&p->lock);
    p->hits++;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return BP_PASS;
}

static void pass_setup(struct tracer *t, void *arg)
{
    struct park *p = arg;
    assert_int_equal(tracer_add_stop_handler(t, "test", BP_USER_BREAKPOINT, pass_stop, p), 0);
    assert_true(bptab_insert(tracer_bptab(t), p->addr, BP_USER_BREAKPOINT));
}

static void pass_remove(struct tracer *t, void *arg)
{
    struct park *p = arg;
    assert_true(bptab_remove(tracer_bptab(t), p->addr, BP_USER_BREAKPOINT));
}

static bool many_hits(struct park *p) { return p->hits >= 200; }

/* Our int3 that no owner claims is not the program's trap: the program runs its
 * own instruction there (8 threads hit it) and ends as if it had never been. */
static void test_unclaimed_trap_runs_the_instruction(void **state)
{
    (void)state;
    struct park p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct torture tt;
    torture_start(&tt, &p);
    struct tracer *t = tt.t;
    struct strobe_error e;
    p.addr = tt.leaf;

    assert_int_equal(tracer_call(t, pass_setup, &p, &e), 0);
    wait_cond(&p, many_hits);
    assert_int_equal(tracer_call(t, pass_remove, &p, &e), 0);
    torture_finish(&tt, &p);
}

struct state_probe {
    pid_t pid;
    char state;
};

static void probe_main_thread(struct tracer *t, void *arg)
{
    (void)t;
    struct state_probe *sp = arg;
    sp->state = task_state(sp->pid, sp->pid);
}

/* A thread other than the main one execs while commands stop the program again and
 * again: the old main thread ends (PTRACE_EVENT_EXIT) while the exec waits for it,
 * so a command must not wait for either in turn. Then the thread that exec'd is
 * the new image's main thread, stopped by commands like any other. */
static void test_exec_by_thread_during_commands(void **state)
{
    (void)state;
    char rel[PATH_MAX + 32], path[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/exec_thread", fixture_dir);
    assert_non_null(realpath(rel, path));
    struct park p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    int out[2], in[2];
    /* Close-on-exec: the program must not keep the write end of its own stdin. */
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    int null = open("/dev/null", O_RDWR);
    char *argv[] = {path, NULL};
    char *envp[] = {NULL};
    struct tracer_spec spec = {
        .path = path, .argv = argv, .envp = envp, .cwd = "/",
        .stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = null,
        .on_main_exit = on_exit_cb, .arg = &p,
    };
    struct tracer *t;
    pid_t pid;
    struct strobe_error e;
    assert_int_equal(tracer_start(&spec, &t, &pid, &e), 0);
    close(out[1]);
    close(in[0]);
    char line[64];
    FILE *f = fdopen(out[0], "r");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "ready\n");

    assert_int_equal(write(in[1], "x", 1), 1);
    for (int i = 0; i < 300; i++)
        assert_int_equal(tracer_call(t, nothing, NULL, &e), 0);
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "exec'd\n");
    struct state_probe probe = {.pid = pid};
    assert_int_equal(tracer_call(t, probe_main_thread, &probe, &e), 0);
    assert_int_equal(probe.state, 't');

    close(in[1]);
    wait_cond(&p, has_exited);
    assert_true(WIFEXITED(p.exit_status));
    assert_int_equal(WEXITSTATUS(p.exit_status), 0);
    fclose(f);
    close(null);
    tracer_join(t);
}

int main(void)
{
    find_fixture_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_references_share_one_saved_byte),
        cmocka_unit_test(test_program_int3_is_refused),
        cmocka_unit_test(test_read_shows_program_bytes),
        cmocka_unit_test(test_rewind_after_removal),
        cmocka_unit_test(test_patch_writes_every_process_and_yields_to_int3s),
        cmocka_unit_test(test_insert_only_skips_older_children),
        cmocka_unit_test(test_step_after_interrupt_runs_the_instruction),
        cmocka_unit_test(test_step_fault_is_the_result),
        cmocka_unit_test(test_kept_signals_are_resent_with_their_siginfo),
        cmocka_unit_test(test_parked_thread_waits_for_resume),
        cmocka_unit_test(test_unclaimed_trap_runs_the_instruction),
        cmocka_unit_test(test_exec_by_thread_during_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
