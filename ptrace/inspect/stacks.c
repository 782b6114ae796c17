/*
 * stacks.c - every thread's stack, now. See stacks.h.
 *
 * One tracer_call holds every thread of the main image, tracer_each_thread the
 * other images' too; each thread is then read as crash.c reads a crashing one:
 * traced frames get their real return addresses back for the unwind, and their
 * trampolines after it (hooks_unwind_thread), the stack unwinds from CFI and
 * symbolize.h names it, and the innermost frame of the program's own code gets its
 * locals. Nothing else is written to the target. A thread waiting on a mutex or a
 * condvar gets the variable it waits on named, as C names it, from DWARF: a global
 * (dwarf/globals.h, dw_global_at), else a variable of its own frames pointing to it.
 *
 * What a thread was doing before the interrupt comes from its registers: a thread
 * interrupted inside a blocking system call stops with orig_rax = the call and rax
 * = one of the kernel's restart codes (the call restarts when it resumes), and its
 * arguments are still in rdi, rsi... /proc says only "tracing stop" by then.
 *
 * What it waits for is read from glibc's own structures (x86-64, glibc 2.3x):
 *  - pthread_mutex_lock parks in futex(&mutex->__lock, FUTEX_WAIT): rdi is the
 *    mutex, whose __owner (the holder's tid) is the int at offset 8;
 *  - pthread_join waits on the joined thread's tid field (struct pthread) until the
 *    kernel clears it at the thread's exit: the word holds the joined tid;
 *  - pthread_cond_wait waits on __g_signals[g], at offset 40 or 44 of the condvar
 *    (8-aligned), which gives back the condvar's address;
 *  - Rust's std Mutex parks in futex(&state) from Mutex::lock_contended: rdi is the
 *    mutex, whose owner is recorded nowhere.
 */
#include "ptrace/inspect/stacks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/procstat.h"
#include "base/strbuf.h"
#include "dwarf/frame.h"
#include "dwarf/globals.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/proc/symbolize.h"
#include "ptrace/proc/unwind.h"

#define MAX_STEPS 4096
#define FUTEX_CMD(op) ((op) & 0x7f)  /* without FUTEX_PRIVATE_FLAG, CLOCK_REALTIME */
#define FUTEX_WAIT_OP 0
#define FUTEX_WAIT_BITSET_OP 9
#define FUTEX_LOCK_PI_OP 6
#define FUTEX_LOCK_PI2_OP 13
#define COND_G_SIGNALS 40            /* offsetof(struct __pthread_cond_s, __g_signals) */
#define MUTEX_OWNER 8                /* offsetof(struct __pthread_mutex_s, __owner) */

struct snapshot {
    const struct collector_stacks_request *req;
    struct collector_stacks *out;
    size_t cap;
    bool oom;
    pid_t tgid;                      /* the process memfd and ms belong to */
    int memfd;
    struct modules ms;
};

static const char *syscall_name(long nr)
{
    switch (nr) {
    case SYS_read: return "read";
    case SYS_write: return "write";
    case SYS_readv: return "readv";
    case SYS_writev: return "writev";
    case SYS_pread64: return "pread64";
    case SYS_pwrite64: return "pwrite64";
    case SYS_open: return "open";
    case SYS_openat: return "openat";
    case SYS_poll: return "poll";
    case SYS_ppoll: return "ppoll";
    case SYS_select: return "select";
    case SYS_pselect6: return "pselect6";
    case SYS_epoll_wait: return "epoll_wait";
    case SYS_epoll_pwait: return "epoll_pwait";
    case SYS_nanosleep: return "nanosleep";
    case SYS_clock_nanosleep: return "clock_nanosleep";
    case SYS_restart_syscall: return "restart_syscall"; /* a timed wait interrupted before */
    case SYS_futex: return "futex";
    case SYS_accept: return "accept";
    case SYS_accept4: return "accept4";
    case SYS_connect: return "connect";
    case SYS_recvfrom: return "recvfrom";
    case SYS_recvmsg: return "recvmsg";
    case SYS_sendto: return "sendto";
    case SYS_sendmsg: return "sendmsg";
    case SYS_wait4: return "wait4";
    case SYS_waitid: return "waitid";
    case SYS_pause: return "pause";
    case SYS_rt_sigsuspend: return "rt_sigsuspend";
    case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
    case SYS_flock: return "flock";
    case SYS_fcntl: return "fcntl";
    case SYS_msgrcv: return "msgrcv";
    case SYS_semop: return "semop";
    case SYS_semtimedop: return "semtimedop";
    default: return NULL;
    }
}

/* A thread interrupted in a timed wait (by a signal, or by an earlier snapshot's
 * stop) resumes it through restart_syscall, which names nothing: the call it waits in
 * is the one its innermost frame makes, when that is a libc wrapper of a restartable
 * call (the name in static storage, NULL otherwise). */
static const char *restarted_call(const struct collector_thread *th)
{
    static const char *const restartable[] = {"clock_nanosleep", "nanosleep", "poll",
                                              "ppoll", "select", "pselect6", "epoll_wait",
                                              "epoll_pwait", "futex"};
    const char *fn = th->n_frames ? th->frames[0].function : NULL;
    for (size_t i = 0; fn && i < sizeof restartable / sizeof *restartable; i++)
        if (strcmp(fn, restartable[i]) == 0)
            return restartable[i];
    return NULL;
}

/* Whether the thread was inside a system call when it was interrupted: rax holds
 * the kernel's ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND or ERESTART_RESTARTBLOCK. */
static bool in_syscall(const struct user_regs_struct *r)
{
    long rax = (long)r->rax;
    return (long)r->orig_rax >= 0 && (rax == -512 || rax == -513 || rax == -514 ||
                                      rax == -516);
}

/* Whether the system call r is blocked in has a deadline (its arguments say so:
 * a timeout pointer that is not NULL, a timeout that is not negative). */
static bool call_has_deadline(const struct user_regs_struct *r)
{
    switch ((long)r->orig_rax) {
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_restart_syscall: /* only calls with a timeout are restarted this way */
        return true;
    case SYS_futex:
    case SYS_rt_sigtimedwait:
    case SYS_epoll_pwait2:
        return r->r10 != 0;
    case SYS_poll:
        return (int)r->rdx >= 0;
    case SYS_ppoll:
        return r->rdx != 0;
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
        return (int)r->r10 >= 0;
    case SYS_select:
    case SYS_pselect6:
        return r->r8 != 0;
    default:
        return false;
    }
}

/* The state /proc shows, for threads not in a ptrace stop (blocked in vfork,
 * exiting). */
static void read_state(pid_t tgid, pid_t tid, char *out, size_t cap)
{
    char buf[512];
    snprintf(out, cap, "unknown");
    const char *p = procstat_fields(tgid, tid, buf, sizeof buf);
    if (!p || !p[0] || !p[1])
        return;
    switch (p[1]) {
    case 'R': snprintf(out, cap, "running"); break;
    case 'S': snprintf(out, cap, "sleeping"); break;
    case 'D': snprintf(out, cap, "disk sleep"); break;
    case 'Z': snprintf(out, cap, "zombie"); break;
    case 'T': case 't': snprintf(out, cap, "stopped"); break;
    case 'X': snprintf(out, cap, "dead"); break;
    default: break;
    }
}

static bool frame_named(const struct shown_frame *f, const char *const *subs, size_t n)
{
    for (size_t k = 0; f->function && k < n; k++)
        if (strstr(f->function, subs[k]))
            return true;
    return false;
}

/* What a thread blocked in futex() waits for, from the library frames above the
 * program's own (frames [0, own)). */
static void classify_wait(struct collector_thread *th, const struct user_regs_struct *r,
                          const struct symbolized *sy, size_t own, int memfd)
{
    static const char *const lock[] = {"mutex_lock", "lll_lock_wait", "mutex_timedlock",
                                       "mutex_clocklock"};
    /* Rust's std mutex: a bare futex word that records no owner */
    static const char *const owner_unknown[] = {"Mutex::lock_contended"};
    static const char *const join[] = {"pthread_join", "clockjoin", "timedjoin"};
    static const char *const cond[] = {"cond_wait", "cond_timedwait", "cond_clockwait"};
    int op = FUTEX_CMD((int)r->rsi);
    if (r->orig_rax != SYS_futex || (op != FUTEX_WAIT_OP && op != FUTEX_WAIT_BITSET_OP &&
                                     op != FUTEX_LOCK_PI_OP && op != FUTEX_LOCK_PI2_OP))
        return;
    uint64_t word = r->rdi;
    th->wait = WAIT_FUTEX;
    th->wait_address = word;
    for (size_t i = 0; i < own && i < sy->n; i++) {
        const struct shown_frame *f = &sy->frames[i];
        int v = 0;
        if (frame_named(f, owner_unknown, sizeof owner_unknown / sizeof *owner_unknown)) {
            th->wait = WAIT_MUTEX;
            return;
        }
        if (frame_named(f, lock, sizeof lock / sizeof *lock)) {
            th->wait = WAIT_MUTEX;
            if (procmem_read(memfd, word + MUTEX_OWNER, &v, sizeof v) && v > 0)
                th->wait_owner = v;
            return;
        }
        if (frame_named(f, join, sizeof join / sizeof *join)) {
            th->wait = WAIT_JOIN;
            if (procmem_read(memfd, word, &v, sizeof v) && v > 0)
                th->wait_owner = v;
            return;
        }
        if (frame_named(f, cond, sizeof cond / sizeof *cond)) {
            th->wait = WAIT_CONDVAR;
            th->wait_address = (word - COND_G_SIGNALS) % 8 == 0 ? word - COND_G_SIGNALS
                                                                : word - COND_G_SIGNALS - 4;
            return;
        }
    }
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Names what th waits on (th->wait_variable): a global, else a variable of the
 * program's own frames, innermost first (at most NAME_FRAMES of them), that holds the
 * object or points to it (a heap object reached through a parameter). */
static void name_wait(struct snapshot *s, struct collector_thread *th,
                      const struct unwind_result *uw, const struct symbolized *sy)
{
    enum { NAME_FRAMES = 8 };
    if ((th->wait != WAIT_MUTEX && th->wait != WAIT_CONDVAR) || !th->wait_address)
        return;
    th->wait_variable = symbolize_module_global_at(&s->ms, th->wait_address);
    size_t first = th->own_frame >= 0 ? (size_t)th->own_frame : 0;
    for (size_t i = first, tried = 0; !th->wait_variable && i < sy->n && tried < NAME_FRAMES;
         i++) {
        const struct shown_frame *f = &sy->frames[i];
        if (!f->file || !f->mod || symbolize_is_runtime_frame(f))
            continue;
        tried++;
        struct dw_regs regs;
        struct strbuf sb = {0};
        symbolize_frame_regs(&uw->frames[f->phys], &regs);
        if (dw_frame_var_at(f->mod->path, f->lookup_pc, f->mod->bias, &regs,
                            procmem_read_ctx, &s->memfd, th->wait_address, &sb) && !sb.oom)
            th->wait_variable = sb_take(&sb);
        sb_free(&sb);
    }
}

/* The frames of th from sy, at most STACKS_MAX_FRAMES, with arguments and locals as
 * the request asks. */
static void fill_frames(struct snapshot *s, struct collector_thread *th,
                        const struct unwind_result *uw, const struct symbolized *sy)
{
    size_t own = symbolize_own_frame(sy);
    bool has_own = own < sy->n && sy->frames[own].file &&
                   !symbolize_is_runtime_frame(&sy->frames[own]);
    size_t n = sy->n < STACKS_MAX_FRAMES ? sy->n : STACKS_MAX_FRAMES;
    th->frames = calloc(n ? n : 1, sizeof *th->frames);
    if (!th->frames) {
        s->oom = true;
        return;
    }
    th->own_frame = has_own && own < n ? (int)own : -1;
    th->omitted_frames = sy->n - n + (uw->total - uw->n);
    /* A struct several frames point to is written once, in the innermost of them;
     * the others refer to it ({"@ptr", "@see": "frame N"}), as crashes do. */
    struct value_refs refs = {0};
    char where[VALUE_REF_WHERE_MAX];
    struct value_opts vo = {.max_depth = 2, .max_output = 2048, .refs = &refs};
    for (size_t i = 0; i < n; i++) {
        const struct shown_frame *f = &sy->frames[i];
        struct collector_frame *cf = &th->frames[th->n_frames++];
        const char *pub = symbolize_public_name(f);
        cf->function = dup_or_null(pub);
        cf->function_raw = pub != f->function ? dup_or_null(f->function) : NULL;
        cf->file = dup_or_null(f->file);
        cf->line = f->line;
        cf->pc = uw->frames[f->phys].pc;
        cf->inlined = f->inlined;
        cf->system = symbolize_is_runtime_frame(f);
        bool locals = s->req->locals && (int)i == th->own_frame && f->mod;
        /* The own frame's arguments come with its locals: what a hang's reader
         * wants first (gdb's bt shows them). */
        bool args = (s->req->arguments || locals) && f->file && f->mod &&
                    f->outermost_site && !f->inlined && !symbolize_is_runtime_frame(f);
        if (!args && !locals)
            continue;
        struct dw_regs regs;
        symbolize_frame_regs(&uw->frames[f->phys], &regs);
        snprintf(where, sizeof where, "frame %zu", i);
        refs.where = where;
        struct strbuf params = {0}, vars = {0};
        if (dw_frame_vars_json(&params, &vars, f->mod->path, f->lookup_pc, f->mod->bias,
                               &regs, procmem_read_ctx, &s->memfd, &vo) == 0) {
            if (args)
                cf->arguments = strdup(params.len ? params.buf : "[]");
            if (locals)
                th->locals = strdup(vars.len ? vars.buf : "[]");
        }
        sb_free(&params);
        sb_free(&vars);
    }
    value_refs_free(&refs);
}

static bool wanted(const struct collector_stacks_request *req, pid_t tid, pid_t tgid)
{
    if (req->pid && req->pid != tgid)
        return false;
    if (req->n_tids == 0)
        return true;
    for (int i = 0; i < req->n_tids; i++)
        if (req->tids[i] == tid)
            return true;
    return false;
}

/* The process's memory and modules, opened once for its threads (they come in
 * process order). */
static void switch_process(struct snapshot *s, pid_t tgid)
{
    if (s->tgid == tgid)
        return;
    if (s->memfd >= 0)
        close(s->memfd);
    free(s->ms.m);
    s->ms = (struct modules){0};
    s->tgid = tgid;
    s->memfd = procmem_open(tgid);
    procmem_modules(tgid, &s->ms.m, &s->ms.n);
    procmem_vdso(tgid, &s->ms.vdso_start, &s->ms.vdso_end);
}

static void one_thread(pid_t tid, pid_t tgid, bool stopped, struct hooks *h, void *arg)
{
    struct snapshot *s = arg;
    if (s->oom || !wanted(s->req, tid, tgid))
        return;
    struct collector_stacks *out = s->out;
    if (out->n_threads == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct collector_thread *p = realloc(out->threads, cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return;
        }
        out->threads = p;
        s->cap = cap;
    }
    struct collector_thread *th = &out->threads[out->n_threads++];
    *th = (struct collector_thread){.tid = tid, .pid = tgid, .syscall_nr = -1,
                                    .own_frame = -1};
    procmem_thread_name(tid, th->name, sizeof th->name);
    struct user_regs_struct regs;
    if (stopped)
        hooks_leave_trampolines(h, tid);
    if (!stopped || ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0) {
        read_state(tgid, tid, th->state, sizeof th->state);
        return;
    }
    th->thread_pointer = regs.fs_base;
    bool blocked = in_syscall(&regs);
    snprintf(th->state, sizeof th->state, blocked ? "sleeping" : "running");
    if (blocked) {
        th->syscall_nr = (int)regs.orig_rax;
        th->syscall_name = syscall_name((long)regs.orig_rax);
        th->wait_timed = call_has_deadline(&regs);
    }
    switch_process(s, tgid);
    struct unwind_result uw;
    bool unwound = hooks_unwind_thread(h, tid, s->memfd, &regs, STACKS_MAX_FRAMES, MAX_STEPS,
                                       &uw) == 0;
    struct symbolized sy = {0};
    if (unwound)
        symbolize(&uw, &s->ms, &sy);
    if (sy.n) {
        fill_frames(s, th, &uw, &sy);
        if (blocked && regs.orig_rax == SYS_restart_syscall && restarted_call(th))
            th->syscall_name = restarted_call(th);
        if (blocked) {
            classify_wait(th, &regs, &sy, th->own_frame >= 0 ? (size_t)th->own_frame : sy.n,
                          s->memfd);
            name_wait(s, th, &uw, &sy);
        }
    }
    symbolize_free(&sy);
    if (unwound)
        unwind_result_free(&uw);
}

/* Builds the variable tables (dwarf/globals.h) of the program and its own libraries
 * before the threads are stopped, as symbolize_preload does for the code: a wait's
 * variable is then named without holding the program for the DWARF walk. */
static void preload_globals(pid_t pid)
{
    struct modules ms = {0};
    struct dw_global g;
    if (procmem_modules(pid, &ms.m, &ms.n) != 0)
        return;
    for (size_t i = 0; i < ms.n; i++)
        if (!procmem_system_path(ms.m[i].path))
            dw_global_at(ms.m[i].path, 0, &g);
    free(ms.m);
}

static void snapshot_all(struct tracer *t, void *arg)
{
    tracer_each_thread(t, one_thread, arg);
}

int stacks_snapshot(struct tracer *t, const struct collector_stacks_request *req,
                    struct collector_stacks *out, struct strobe_error *e)
{
    *out = (struct collector_stacks){0};
    struct snapshot s = {.req = req, .out = out, .memfd = -1};
    symbolize_preload(req->pid ? req->pid : tracer_pid(t));
    preload_globals(req->pid ? req->pid : tracer_pid(t));
    int64_t t0 = mono_ns();
    int rc = tracer_call(t, snapshot_all, &s, e);
    out->stopped_ns = mono_ns() - t0;
    if (s.memfd >= 0)
        close(s.memfd);
    free(s.ms.m);
    if (rc == 0 && s.oom)
        rc = err_set(e, ERR_INTERNAL, "out of memory reading the threads' stacks");
    if (rc != 0) {
        collector_stacks_free(out);
        return -1;
    }
    log_info("pid %d: stacks of %zu thread(s) read; the program was held at most %.2f ms",
             (int)tracer_pid(t), out->n_threads, (double)out->stopped_ns / 1e6);
    return 0;
}

/* ---- processes we do not trace ---------------------------------------------- */

/* Attaches tid and waits for it to stop; *sig gets a signal whose delivery the stop
 * intercepted (0: none), to hand back at the detach. false when it cannot be held
 * (gone, already traced, not ours). */
static bool hold_thread(pid_t tid, int *sig)
{
    *sig = 0;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
        return false;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
        ptrace(PTRACE_DETACH, tid, 0, 0);
        return false;
    }
    for (;;) {
        int status;
        pid_t w = waitpid(tid, &status, __WALL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w != tid || !WIFSTOPPED(status))
            return false;     /* it exited (the kernel detached it) */
        if ((status >> 16) == PTRACE_EVENT_STOP)
            return true;
        /* A signal on its way: keep it for the detach; the interrupt still comes. */
        *sig = WSTOPSIG(status);
        if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || ptrace(PTRACE_CONT, tid, 0, 0) != 0)
            return true;      /* stopped here all the same: read it as it is */
    }
}

static int by_number(const struct dirent **a, const struct dirent **b)
{
    return atoi((*a)->d_name) - atoi((*b)->d_name);
}

int stacks_snapshot_pids(const pid_t *pids, int n_pids,
                         const struct collector_stacks_request *req,
                         struct collector_stacks *out, struct strobe_error *e)
{
    *out = (struct collector_stacks){0};
    struct snapshot s = {.req = req, .out = out, .memfd = -1};
    int64_t t0 = mono_ns();
    int seen = 0;
    for (int i = 0; i < n_pids && !s.oom; i++) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)pids[i]);
        struct dirent **tasks;
        int n = scandir(dir, &tasks, NULL, by_number);
        if (n < 0)
            continue;
        seen++;
        symbolize_preload(pids[i]);
        for (int k = 0; k < n; k++) {
            pid_t tid = atoi(tasks[k]->d_name);
            free(tasks[k]);
            if (tid <= 0 || s.oom)
                continue;
            int sig;
            bool held = hold_thread(tid, &sig);
            one_thread(tid, pids[i], held, NULL, &s);
            if (held)
                ptrace(PTRACE_DETACH, tid, 0, sig);
        }
        free(tasks);
    }
    out->stopped_ns = mono_ns() - t0;
    if (s.memfd >= 0)
        close(s.memfd);
    free(s.ms.m);
    if (s.oom) {
        collector_stacks_free(out);
        return err_set(e, ERR_INTERNAL, "out of memory reading the threads' stacks");
    }
    if (seen == 0)
        return err_set(e, ERR_PROCESS_EXITED, "the processes have exited.");
    return 0;
}
