/*
 * crash.c - crash capture on the tracer thread. See crash.h.
 *
 * The event is built in one pass: unwind (ptrace/proc/unwind.h), name the frames
 * (ptrace/proc/symbolize.h: module, function index, inlined calls; shared with the stacks
 * snapshot, stacks.c), read variables with dwarf/frame.h, then write JSON. Everything is
 * read while the thread is stopped. What is written to the target: the int3 of the Rust
 * panic breakpoint, and for a thread inside traced functions its real return addresses in
 * place of the trampolines (hooks_prepare_unwind), so that its stack unwinds; the exits of
 * those frames are then reported as unwound.
 *
 * The fields of the event's data JSON are the crash schema that core/crash_payload.h
 * owns and documents: a field added here is added there, with how readers show it.
 */
#include "ptrace/tracer/crash.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/failure_text.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/elfinfo.h"
#include "dwarf/frame.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/proc/fnsym.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/proc/symbolize.h"
#include "ptrace/proc/unwind.h"

#define KEEP_HEAD 48
#define KEEP_TAIL 8
#define MAX_STEPS 50000
#define FRAMES_WITH_ARGS 16
#define ABORT_MSG_MAX 4096

/* Per-process counters (crash limit, repeated-fault suppression). */
struct proc_state {
    pid_t tgid;
    int crashes;
    pid_t last_tid;
    uint64_t last_pc;
    int last_sig;
};

struct crash {
    struct crash_config cfg;
    struct proc_state *procs;
    size_t n_procs, cap_procs;
    int total;
};

struct crash *crash_new(const struct crash_config *cfg)
{
    struct crash *c = calloc(1, sizeof *c);
    if (c)
        c->cfg = *cfg;
    return c;
}

void crash_free(struct crash *c)
{
    if (!c)
        return;
    free(c->procs);
    free(c);
}

int crash_count(const struct crash *c) { return c ? c->total : 0; }

static struct proc_state *proc_state(struct crash *c, pid_t tgid)
{
    for (size_t i = 0; i < c->n_procs; i++)
        if (c->procs[i].tgid == tgid)
            return &c->procs[i];
    if (c->n_procs == c->cap_procs) {
        size_t cap = c->cap_procs ? 2 * c->cap_procs : 8;
        struct proc_state *p = realloc(c->procs, cap * sizeof *p);
        if (!p)
            return NULL;
        c->procs = p;
        c->cap_procs = cap;
    }
    c->procs[c->n_procs] = (struct proc_state){.tgid = tgid};
    return &c->procs[c->n_procs++];
}

/* ---- the Rust panic breakpoint ------------------------------------------------ */

/* Rust's panic entry: "rust_panic" (unmangled in older toolchains) or
 * "__rustc::rust_panic" / "std::panicking::rust_panic" mangled. */
static bool is_rust_panic(const char *name, void *arg)
{
    (void)arg;
    if (strcmp(name, "rust_panic") == 0)
        return true;
    if (!strstr(name, "10rust_panic"))
        return false;
    char *d = dw_demangle(name, false);
    bool yes = d && (strcmp(d, "__rustc::rust_panic") == 0 ||
                     strcmp(d, "std::panicking::rust_panic") == 0);
    free(d);
    return yes;
}

void crash_on_exec(struct crash *c, pid_t pid, struct bptab *b)
{
    if (!c)
        return;
    char link[64], exe[4096];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    uint64_t sym = elf_symbol_find(exe, is_rust_panic, NULL);
    if (!sym)
        return;
    struct module *mods;
    size_t nm;
    if (procmem_modules(pid, &mods, &nm) != 0)
        return;
    uint64_t bias = 0;
    bool found = false;
    for (size_t i = 0; i < nm && !found; i++)
        if (strcmp(mods[i].path, exe) == 0) {
            bias = mods[i].bias;
            found = true;
        }
    free(mods);
    if (found)
        bptab_insert(b, sym + bias, BP_PANIC);
}

void crash_on_process_exit(struct crash *c, pid_t pid)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_procs; i++)
        if (c->procs[i].tgid == pid) {
            c->procs[i] = c->procs[--c->n_procs];
            break;
        }
}

/* ---- signal facts -------------------------------------------------------------- */

static bool is_crash_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
           sig == SIGABRT || sig == SIGSYS || sig == SIGTRAP;
}

static const char *code_name(int sig, int code)
{
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_KERNEL: return "SI_KERNEL";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    default: break;
    }
    switch (sig) {
    case SIGSEGV:
        return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR"
             : code == SEGV_BNDERR ? "SEGV_BNDERR" : code == SEGV_PKUERR ? "SEGV_PKUERR" : NULL;
    case SIGBUS:
        return code == BUS_ADRALN ? "BUS_ADRALN" : code == BUS_ADRERR ? "BUS_ADRERR"
             : code == BUS_OBJERR ? "BUS_OBJERR" : NULL;
    case SIGFPE: {
        static const char *const n[] = {NULL, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV",
                                        "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES",
                                        "FPE_FLTINV", "FPE_FLTSUB"};
        return code > 0 && code < 9 ? n[code] : NULL;
    }
    case SIGILL: {
        static const char *const n[] = {NULL, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR",
                                        "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG",
                                        "ILL_COPROC", "ILL_BADSTK"};
        return code > 0 && code < 9 ? n[code] : NULL;
    }
    case SIGTRAP:
        return code == TRAP_BRKPT ? "TRAP_BRKPT" : code == TRAP_TRACE ? "TRAP_TRACE" : NULL;
    default:
        return NULL;
    }
}

static bool has_fault_address(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

/* Whether the process has its own handler for sig (SigCgt in /proc/PID/status). */
static bool handler_installed(pid_t tgid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tgid);
    FILE *f = fopen(path, "re");
    unsigned long long mask = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return sig >= 1 && sig <= 64 && (mask >> (sig - 1)) & 1;
}

static bool name_is(const char *name, void *want) { return strcmp(name, want) == 0; }

/* glibc's __abort_msg: a pointer to {uint32 size; char msg[]} that assert and the
 * library's fatal error reports set before calling abort. */
static bool abort_message(const struct modules *ms, int memfd, char *out, size_t cap)
{
    for (size_t i = 0; i < ms->n; i++) {
        const char *base = strrchr(ms->m[i].path, '/');
        if (!base || strncmp(base + 1, "libc.so", 7) != 0)
            continue;
        uint64_t sym = elf_symbol_find(ms->m[i].path, name_is, "__abort_msg");
        uint64_t ptr = 0;
        uint32_t size = 0;
        if (!sym || !procmem_read(memfd, sym + ms->m[i].bias, &ptr, sizeof ptr) || !ptr ||
            !procmem_read(memfd, ptr, &size, sizeof size) || size <= 4)
            return false;
        size_t n = size - 4 < cap - 1 ? size - 4 : cap - 1;
        while (n > 0 && !procmem_read(memfd, ptr + 4, out, n))
            n /= 2;
        out[n] = '\0';
        size_t len = strlen(out);
        while (len && (out[len - 1] == '\n'))
            out[--len] = '\0';
        return len > 0;
    }
    return false;
}

/* ---- JSON ------------------------------------------------------------------------ */

static void hex(struct strbuf *sb, uint64_t v)
{
    sb_printf(sb, "\"0x%llx\"", (unsigned long long)v);
}

static void write_registers(struct strbuf *sb, const struct user_regs_struct *r)
{
    const struct { const char *name; unsigned long long v; } regs[] = {
        {"rip", r->rip}, {"rsp", r->rsp}, {"rbp", r->rbp}, {"rax", r->rax},
        {"rbx", r->rbx}, {"rcx", r->rcx}, {"rdx", r->rdx}, {"rsi", r->rsi},
        {"rdi", r->rdi}, {"r8", r->r8},   {"r9", r->r9},   {"r10", r->r10},
        {"r11", r->r11}, {"r12", r->r12}, {"r13", r->r13}, {"r14", r->r14},
        {"r15", r->r15}, {"eflags", r->eflags}, {"fs_base", r->fs_base},
    };
    sb_puts(sb, ",\"registers\":{");
    for (size_t i = 0; i < sizeof regs / sizeof *regs; i++) {
        sb_printf(sb, "%s\"%s\":", i ? "," : "", regs[i].name);
        hex(sb, regs[i].v);
    }
    sb_puts(sb, "}");
}

/* Frame numbers count the frames left out between the head and the tail. */
static size_t shown_index(const struct unwind_result *uw, const struct symbolized *s, size_t i)
{
    return i + (s->frames[i].phys >= uw->head ? uw->total - uw->n : 0);
}

static void write_frames(struct strbuf *sb, const struct unwind_result *uw,
                         const struct symbolized *s, size_t crash_idx, int memfd,
                         const struct modules *ms, struct strbuf *locals)
{
    /* A struct several frames point to is written in the first (innermost) of them;
     * the others refer to it ({"@ptr", "@see": "frame N"}). */
    struct value_refs refs = {0};
    char where[VALUE_REF_WHERE_MAX];
    struct value_opts vo = {.max_depth = 2, .max_output = 2048, .refs = &refs,
                            .symbolize = fnsym_name_in_modules, .symbolize_ctx = (void *)ms};
    sb_puts(sb, ",\"frames\":[");
    size_t with_args = 0, omitted = uw->total - uw->n;
    for (size_t i = 0; i < s->n; i++) {
        const struct shown_frame *f = &s->frames[i];
        const struct unwind_frame *uf = &uw->frames[f->phys];
        if (omitted && f->phys == uw->head && (i == 0 || s->frames[i - 1].phys != f->phys))
            sb_printf(sb, ",{\"omittedFrames\":%zu}", omitted);
        sb_printf(sb, "%s{\"index\":%zu,\"function\":", i ? "," : "", shown_index(uw, s, i));
        const char *pub = symbolize_public_name(f);
        if (pub)
            sb_json_string(sb, pub);
        else
            sb_puts(sb, "null");
        if (pub != f->function) { /* as stacks show it (symbolize.h) */
            sb_puts(sb, ",\"functionRaw\":");
            sb_json_string(sb, f->function);
        }
        if (f->file) {
            sb_puts(sb, ",\"file\":");
            sb_json_string(sb, f->file);
            sb_printf(sb, ",\"line\":%d", f->line);
        }
        sb_puts(sb, ",\"pc\":");
        hex(sb, uf->pc);
        if (f->mod) {
            sb_puts(sb, ",\"module\":");
            sb_json_string(sb, f->mod->path);
        }
        if (f->mod && !f->function) /* for addr2line on a build with symbols */
            sb_printf(sb, ",\"moduleAddress\":\"0x%llx\"", (unsigned long long)f->lookup_pc);
        if (f->inlined)
            sb_puts(sb, ",\"inlined\":true");
        /* Arguments belong to the out-of-line function of the physical frame. */
        /* Runtime frames (libc, the C++ and Rust runtimes, sanitizers) keep their
         * names and lines but not their arguments: noise for the reader. */
        bool want_vars = f->file && f->mod && (i == crash_idx ||
                         (f->outermost_site && !f->inlined && with_args < FRAMES_WITH_ARGS &&
                          !symbolize_is_runtime_frame(f)));
        if (want_vars) {
            struct dw_regs regs;
            symbolize_frame_regs(uf, &regs);
            struct strbuf params = {0}, vars = {0};
            snprintf(where, sizeof where, "frame %zu", shown_index(uw, s, i));
            refs.where = where;
            if (dw_frame_vars_json(&params, &vars, f->mod->path, f->lookup_pc, f->mod->bias,
                                   &regs, procmem_read_ctx, &memfd, &vo) == 0) {
                if (f->outermost_site && !f->inlined) {
                    sb_puts(sb, ",\"arguments\":");
                    sb_puts(sb, params.len ? params.buf : "[]");
                    with_args++;
                }
                if (i == crash_idx) {
                    sb_puts(locals, vars.len ? vars.buf : "[]");
                    if (!(f->outermost_site && !f->inlined)) {
                        sb_puts(sb, ",\"arguments\":");
                        sb_puts(sb, params.len ? params.buf : "[]");
                    }
                }
            }
            sb_free(&params);
            sb_free(&vars);
        }
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]");
    value_refs_free(&refs);
}

/* ---- capture ---------------------------------------------------------------------- */

enum crash_kind { KIND_SIGNAL, KIND_ASSERTION, KIND_EXCEPTION, KIND_PANIC, KIND_SANITIZER };

static const char *kind_name(enum crash_kind k)
{
    static const char *const n[] = {"signal", "assertion", "uncaught_exception", "panic",
                                    "sanitizer"};
    return n[k];
}

static const char *basename_of(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* What a SIGABRT was: an assertion (glibc left its message), an uncaught C++
 * exception (std::terminate on the stack), a Rust panic built with panic=abort. */
static enum crash_kind classify_abort(const struct symbolized *sy, const struct modules *ms,
                                      int memfd, char *abort_msg, size_t cap,
                                      struct assertion_info *as)
{
    static const char *const terminate[] = {"std::terminate", "__cxxabiv1::__terminate",
                                            "__gnu_cxx::__verbose_terminate_handler"};
    static const char *const panic[] = {"__rustc::rust_panic", "rust_panic",
                                        "std::panicking::rust_panic"};
    if (abort_message(ms, memfd, abort_msg, cap) && failure_parse_assertion(abort_msg, as))
        return KIND_ASSERTION;
    if (symbolize_any_frame_named(sy, terminate, 3))
        return KIND_EXCEPTION;
    if (symbolize_any_frame_named(sy, panic, 3))
        return KIND_PANIC;
    return KIND_SIGNAL;
}

/* The signal's members of the data object, and its headline ("SIGSEGV
 * (SEGV_MAPERR) at address 0x0"). */
static void describe_signal(struct strbuf *d, struct strbuf *headline, const siginfo_t *si,
                            const struct user_regs_struct *regs, pid_t tgid)
{
    int sig = si->si_signo;
    const char *abbrev = sigabbrev_np(sig);
    char signame[32];
    snprintf(signame, sizeof signame, "SIG%s", abbrev ? abbrev : "UNKNOWN");
    const char *code = code_name(sig, si->si_code);
    uint64_t fa = (uint64_t)(uintptr_t)si->si_addr;
    sb_printf(d, ",\"signal\":\"%s\",\"signalNumber\":%d", signame, sig);
    sb_puts(headline, signame);
    if (code) {
        sb_printf(d, ",\"signalCode\":\"%s\"", code);
        sb_printf(headline, " (%s)", code);
    }
    /* si_code <= 0: sent by kill, tgkill or sigqueue (si_addr means nothing, si_pid
     * and si_uid are the sender's); SI_KERNEL: the kernel gave no address (a general
     * protection fault, e.g. a non-canonical pointer). */
    bool sent = si->si_code <= 0;
    if (sent) {
        sb_printf(d, ",\"sender\":{\"pid\":%d,\"uid\":%u%s}", (int)si->si_pid,
                  (unsigned)si->si_uid, si->si_pid == tgid ? ",\"self\":true" : "");
        if (has_fault_address(sig))
            sb_printf(headline, " sent by pid %d%s", (int)si->si_pid,
                      si->si_pid == tgid ? " (itself)" : "");
    } else if (has_fault_address(sig) && si->si_code != SI_KERNEL) {
        sb_puts(d, ",\"faultAddress\":");
        hex(d, fa);
        sb_printf(headline, " at address 0x%llx", (unsigned long long)fa);
    }
    /* A fault next to the stack pointer is the guard page below the stack. */
    if (sig == SIGSEGV && !sent && (si->si_code == SEGV_MAPERR || si->si_code == SEGV_ACCERR) &&
        (fa > regs->rsp ? fa - regs->rsp : regs->rsp - fa) < 65536)
        sb_puts(d, ",\"stackOverflow\":true");
    if (handler_installed(tgid, sig))
        sb_puts(d, ",\"handlerInstalled\":true");
}

static void describe_assertion(struct strbuf *d, const struct assertion_info *as)
{
    sb_puts(d, ",\"assertion\":{\"expression\":");
    sb_json_string(d, as->expression);
    sb_puts(d, ",\"file\":");
    sb_json_string(d, as->file);
    sb_printf(d, ",\"line\":%d,\"function\":", as->line);
    sb_json_string(d, as->function);
    sb_puts(d, "}");
}

/* Records one crash of thread tid. si is NULL for failures without a signal. */
static void capture(struct crash *c, pid_t tid, enum crash_kind kind, const siginfo_t *si)
{
    pid_t tgid = procmem_tgid(tid);
    struct proc_state *ps = proc_state(c, tgid);
    struct user_regs_struct regs;
    if (!ps || ps->crashes >= CRASH_MAX_PER_PROCESS ||
        ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return;
    int sig = si ? si->si_signo : 0;
    if (si && ps->last_tid == tid && ps->last_pc == regs.rip && ps->last_sig == sig)
        return; /* the same fault again: a handler returned without fixing it */
    ps->last_tid = tid;
    ps->last_pc = regs.rip;
    ps->last_sig = sig;
    ps->crashes++;
    c->total++;

    int64_t t_stop = mono_ns();
    /* A fault in a relocated instruction is reported (and unwound) at the
     * function's own address; the thread's real registers are put back after.
     * Preparing drains the fast path's records, its writes to the output among
     * them, before the output is settled: a line written before a call keeps its
     * place before it (core/output.h, "Followed writes"). */
    uint64_t pc = regs.rip;
    if (c->cfg.prepare_unwind)
        c->cfg.prepare_unwind(c->cfg.prepare_arg, tid, &pc);
    struct user_regs_struct shown = regs;
    shown.rip = pc;
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &shown);
    if (c->cfg.settle_output)
        c->cfg.settle_output(c->cfg.arg);
    int64_t ts = mono_ns() - c->cfg.sink.t0_ns;
    int memfd = procmem_open(tgid);
    struct modules ms = {0};
    procmem_modules(tgid, &ms.m, &ms.n);
    procmem_vdso(tgid, &ms.vdso_start, &ms.vdso_end);
    struct unwind_result uw;
    bool unwound = unwind_thread(tid, memfd, KEEP_HEAD, KEEP_TAIL, MAX_STEPS, &uw) == 0;
    struct symbolized sy = {0};
    if (unwound)
        symbolize(&uw, &ms, &sy);
    if (pc != regs.rip)
        ptrace(PTRACE_SETREGS, tid, 0, &regs);
    size_t ci = symbolize_own_frame(&sy);
    char abort_msg[ABORT_MSG_MAX] = "";
    struct assertion_info as;
    if (sig == SIGABRT)
        kind = classify_abort(&sy, &ms, memfd, abort_msg, sizeof abort_msg, &as);

    struct strbuf d = {0}, locals = {0}, headline = {0};
    sb_printf(&d, "{\"kind\":\"%s\"", kind_name(kind));
    if (si)
        describe_signal(&d, &headline, si, &regs, tgid);
    static const char *const headlines[] = {
        [KIND_ASSERTION] = "assertion failed", [KIND_EXCEPTION] = "uncaught C++ exception",
        [KIND_PANIC] = "Rust panic", [KIND_SANITIZER] = "sanitizer report"};
    if (kind == KIND_ASSERTION) {
        describe_assertion(&d, &as);
        headline.len = 0;
        sb_printf(&headline, "assertion `%s' failed", as.expression);
    } else if (kind != KIND_SIGNAL) {
        headline.len = 0;
        sb_puts(&headline, headlines[kind]);
    }
    if (abort_msg[0]) {
        sb_puts(&d, ",\"abortMessage\":");
        sb_json_string(&d, abort_msg);
    }
    if (sy.n) {
        write_frames(&d, &uw, &sy, ci, memfd, &ms, &locals);
        if (uw.total > uw.n || uw.truncated)
            sb_printf(&d, ",\"framesTotal\":%zu%s", uw.total,
                      uw.truncated ? ",\"framesTotalIsLowerBound\":true" : "");
        sb_printf(&d, ",\"crashFrame\":%zu,\"locals\":%s", shown_index(&uw, &sy, ci),
                  locals.len ? locals.buf : "[]");
        if (!sy.frames[ci].file)
            sb_puts(&d, ",\"note\":\"No frame of this program has debug info: functions "
                        "and lines come from symbols only and locals cannot be read. Rebuild "
                        "with -g (a debug build) to get them.\"");
    }
    write_registers(&d, &shown);
    sb_puts(&d, "}");

    const struct shown_frame *top = sy.n ? &sy.frames[ci] : NULL;
    if (top && top->function)
        sb_printf(&headline, " in %s", top->function);
    if (top && top->function && top->file)
        sb_printf(&headline, " (%s:%d)", basename_of(top->file), top->line);
    char tname[32];
    procmem_thread_name(tid, tname, sizeof tname);
    struct event ev = event_init(c->cfg.sink.session_key, EV_CRASH, ts);
    ev.pid = tgid;
    ev.tid = tid;
    ev.thread_name = tname[0] ? tname : NULL;
    ev.function = top ? top->function : NULL;
    ev.source_file = top ? top->file : NULL;
    ev.line = top ? top->line : 0;
    ev.text = headline.len ? headline.buf : kind_name(kind);
    ev.data = d.buf;
    event_sink_push(&c->cfg.sink, &ev);
    log_info("pid %d: crash recorded in %.2f ms: %s", (int)tgid,
             (double)(mono_ns() - t_stop) / 1e6, ev.text);

    sb_free(&d);
    sb_free(&locals);
    sb_free(&headline);
    symbolize_free(&sy);
    if (unwound)
        unwind_result_free(&uw);
    free(ms.m);
    if (memfd >= 0)
        close(memfd);
}

void crash_on_signal(struct crash *c, pid_t tid, int sig)
{
    if (!c || !is_crash_signal(sig))
        return;
    siginfo_t si;
    if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0)
        return;
    capture(c, tid, KIND_SIGNAL, &si);
}

enum bp_verdict crash_on_trap(struct crash *c, pid_t tid, struct user_regs_struct *regs,
                              unsigned owners)
{
    if (!c)
        return BP_PASS;
    regs->rip--;
    if (ptrace(PTRACE_SETREGS, tid, 0, regs) != 0)
        return BP_PASS;
    capture(c, tid, KIND_PANIC, NULL);
    /* The breakpoint stays: a later panic (another thread, or after catch_unwind)
     * is recorded too. Another owner of the address resumes the thread its way;
     * else the tracer steps the original instruction. */
    if (owners & ~BP_OWNER_BIT(BP_PANIC)) {
        regs->rip++;
        ptrace(PTRACE_SETREGS, tid, 0, regs);
        return BP_PASS;
    }
    return BP_STEP_OVER;
}

static bool is_sanitizer_runtime(const struct module *m)
{
    static const char *const names[] = {"libasan", "libubsan", "libtsan", "liblsan",
                                        "libhwasan"};
    const char *base = m ? basename_of(m->path) : "";
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strncmp(base, names[i], strlen(names[i])) == 0)
            return true;
    return false;
}

void crash_on_exit_event(struct crash *c, pid_t tid)
{
    unsigned long status = 0;
    struct user_regs_struct regs;
    if (!c || ptrace(PTRACE_GETEVENTMSG, tid, 0, &status) != 0 || !WIFEXITED((int)status) ||
        WEXITSTATUS((int)status) == 0 || ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return;
    /* A sanitizer's Die() makes the exit system call itself, from inside its
     * runtime; a program's own exit(1) goes through libc's _exit even when the
     * runtime intercepts it. */
    struct modules ms = {0};
    if (procmem_modules(procmem_tgid(tid), &ms.m, &ms.n) != 0)
        return;
    bool dying_in_runtime = is_sanitizer_runtime(symbolize_module_of(&ms, regs.rip));
    free(ms.m);
    if (dying_in_runtime)
        capture(c, tid, KIND_SANITIZER, NULL);
}
