/*
 * unwind.c - remote unwinding of a stopped thread. See unwind.h.
 *
 * Two unwinders, one result. libdw's (dwfl_getthread_frames) leads: on Debian 12,
 * libunwind 1.6.2 loses the frames above a call to a function that never returns
 * in Rust code (a panic's stack jumped from parse_input straight to lang_start,
 * dropping main), where libdw walks the whole chain. libunwind-ptrace takes over
 * when libdw cannot attach or yields fewer than two frames. Its accessors are
 * libunwind-ptrace's except memory reads, which go through the /proc/PID/mem fd of
 * the process; libunwind passes its own context to access_mem, so the fd travels in
 * a thread-local (unwinding only happens on the tracer thread, synchronously).
 *
 * Frames are collected the same way from both: the innermost keep_head, and a ring
 * of the outermost keep_tail.
 */
#include "ptrace/proc/unwind.h"

#include <elfutils/libdwfl.h>
#include <libunwind-ptrace.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "ptrace/proc/procmem.h"

/* Callee-saved registers survive a call; caller frames know them (and rsp, rip). */
static const int callee_saved[] = {3, 6, 7, 12, 13, 14, 15, 16};

struct collector {
    struct unwind_result *out;
    size_t keep_head, keep_tail, max_steps;
    struct unwind_frame *prev; /* the frame whose cfa the next frame's sp is */
    pid_t tid;
};

static void frame0_regs(pid_t tid, struct unwind_frame *f)
{
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, tid, 0, &r) != 0)
        return;
    const uint64_t v[UNWIND_NREGS] = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp,
                                      r.r8,  r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15,
                                      r.rip};
    memcpy(f->regs, v, sizeof v);
    f->known = (1u << UNWIND_NREGS) - 1;
}

/* Keeps frame f (pc, sp and, for callers, registers already set). False once
 * max_steps frames were seen. */
static bool collect(struct collector *c, struct unwind_frame *f)
{
    struct unwind_result *out = c->out;
    if (out->total == 0)
        frame0_regs(c->tid, f);
    if (c->prev)
        c->prev->cfa = f->sp;
    struct unwind_frame *slot = NULL;
    if (out->total < c->keep_head)
        slot = &out->frames[out->total];
    else if (c->keep_tail)
        slot = &out->frames[c->keep_head + (out->total - c->keep_head) % c->keep_tail];
    if (slot)
        *slot = *f;
    c->prev = slot;
    out->total++;
    if (out->total >= c->max_steps) {
        out->truncated = true;
        return false;
    }
    return true;
}

/* Puts the tail ring in outward order and sets n and head. */
static void finish(struct collector *c)
{
    struct unwind_result *out = c->out;
    out->head = out->total < c->keep_head ? out->total : c->keep_head;
    size_t in_tail = out->total > c->keep_head ? out->total - c->keep_head : 0;
    if (in_tail > c->keep_tail && c->keep_tail == 0) {
        in_tail = 0;
    } else if (in_tail > c->keep_tail) {
        struct unwind_frame *tail = out->frames + c->keep_head;
        size_t start = in_tail % c->keep_tail;
        struct unwind_frame *tmp = malloc(c->keep_tail * sizeof *tmp);
        if (tmp) {
            for (size_t i = 0; i < c->keep_tail; i++)
                tmp[i] = tail[(start + i) % c->keep_tail];
            memcpy(tail, tmp, c->keep_tail * sizeof *tmp);
            free(tmp);
        }
        in_tail = c->keep_tail;
    }
    out->n = out->head + in_tail;
}

static void reset(struct collector *c)
{
    c->out->total = 0;
    c->out->truncated = false;
    c->prev = NULL;
}

/* ---- libdw -------------------------------------------------------------------- */

static char *no_debuginfo_path;
static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &no_debuginfo_path,
};

static int dwfl_frame_cb(Dwfl_Frame *state, void *arg)
{
    struct collector *c = arg;
    struct unwind_frame f = {0};
    bool activation;
    if (!dwfl_frame_pc(state, &f.pc, &activation) || f.pc == 0)
        return DWARF_CB_ABORT;
    Dwarf_Word v;
    if (dwfl_frame_reg(state, 7, &v) == 0)
        f.sp = v;
    for (size_t i = 0; c->out->total > 0 && i < sizeof callee_saved / sizeof *callee_saved; i++)
        if (dwfl_frame_reg(state, (unsigned)callee_saved[i], &v) == 0) {
            f.regs[callee_saved[i]] = v;
            f.known |= 1u << callee_saved[i];
        }
    f.regs[16] = f.pc;
    f.known |= 1u << 16;
    return collect(c, &f) ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void unwind_dwfl(pid_t tgid, struct collector *c)
{
    Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
    if (!dwfl)
        return;
    if (dwfl_linux_proc_report(dwfl, tgid) == 0 && dwfl_report_end(dwfl, NULL, NULL) == 0 &&
        dwfl_linux_proc_attach(dwfl, tgid, true) == 0)
        dwfl_getthread_frames(dwfl, c->tid, dwfl_frame_cb, c);
    dwfl_end(dwfl);
}

/* ---- libunwind --------------------------------------------------------------- */

static __thread int current_memfd = -1;

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
                      void *arg)
{
    (void)as;
    (void)arg;
    if (write)
        return -UNW_EINVAL;
    return procmem_read(current_memfd, addr, val, sizeof *val) ? 0 : -UNW_EINVAL;
}

static void unwind_libunwind(int memfd, struct collector *c)
{
    unw_accessors_t acc = _UPT_accessors;
    acc.access_mem = access_mem;
    unw_addr_space_t as = unw_create_addr_space(&acc, 0);
    void *upt = as ? _UPT_create(c->tid) : NULL;
    unw_cursor_t cur;
    if (upt && unw_init_remote(&cur, as, upt) == 0) {
        current_memfd = memfd;
        do {
            struct unwind_frame f = {0};
            unw_word_t ip = 0, sp = 0;
            unw_get_reg(&cur, UNW_REG_IP, &ip);
            unw_get_reg(&cur, UNW_REG_SP, &sp);
            if (ip == 0)
                break;
            f.pc = ip;
            f.sp = sp;
            size_t n_saved = sizeof callee_saved / sizeof *callee_saved;
            for (size_t i = 0; c->out->total > 0 && i < n_saved; i++) {
                unw_word_t v;
                if (unw_get_reg(&cur, callee_saved[i], &v) == 0) {
                    f.regs[callee_saved[i]] = v;
                    f.known |= 1u << callee_saved[i];
                }
            }
            if (!collect(c, &f))
                break;
        } while (unw_step(&cur) > 0);
        current_memfd = -1;
    }
    if (upt)
        _UPT_destroy(upt);
    if (as)
        unw_destroy_addr_space(as);
}

/* Ends a walk: 0, or -1 with out freed when not even one frame was read. */
static int finish_result(struct collector *c, struct unwind_result *out)
{
    finish(c);
    if (out->total)
        return 0;
    free(out->frames);
    memset(out, 0, sizeof *out);
    return -1;
}

int unwind_thread(pid_t tid, int memfd, size_t keep_head, size_t keep_tail,
                  size_t max_steps, struct unwind_result *out)
{
    memset(out, 0, sizeof *out);
    out->frames = calloc(keep_head + keep_tail ? keep_head + keep_tail : 1, sizeof *out->frames);
    if (!out->frames)
        return -1;
    struct collector c = {.out = out, .keep_head = keep_head, .keep_tail = keep_tail,
                          .max_steps = max_steps, .tid = tid};
    unwind_dwfl(procmem_tgid(tid), &c);
    if (out->total < 2) {
        reset(&c);
        unwind_libunwind(memfd, &c);
    }
    return finish_result(&c, out);
}

void unwind_result_free(struct unwind_result *r)
{
    free(r->frames);
    memset(r, 0, sizeof *r);
}

/* ---- a process's unwinder, kept ------------------------------------------------ */

struct unwind_cache {
    pid_t tgid;
    Dwfl *dwfl;               /* reported and attached; NULL until first needed */
};

struct unwind_cache *unwind_cache_new(pid_t tgid)
{
    struct unwind_cache *uc = calloc(1, sizeof *uc);
    if (uc)
        uc->tgid = tgid;
    return uc;
}

void unwind_cache_free(struct unwind_cache *uc)
{
    if (!uc)
        return;
    if (uc->dwfl)
        dwfl_end(uc->dwfl);
    free(uc);
}

/* The cached Dwfl, rebuilt when pc is in no module it knows (a library loaded since). */
static Dwfl *cache_dwfl(struct unwind_cache *uc, uint64_t pc)
{
    if (uc->dwfl && dwfl_addrmodule(uc->dwfl, pc))
        return uc->dwfl;
    if (uc->dwfl)
        dwfl_end(uc->dwfl);
    uc->dwfl = dwfl_begin(&dwfl_callbacks);
    if (uc->dwfl && (dwfl_linux_proc_report(uc->dwfl, uc->tgid) != 0 ||
                     dwfl_report_end(uc->dwfl, NULL, NULL) != 0 ||
                     dwfl_linux_proc_attach(uc->dwfl, uc->tgid, true) != 0)) {
        dwfl_end(uc->dwfl);
        uc->dwfl = NULL;
    }
    return uc->dwfl;
}

int unwind_thread_cached(struct unwind_cache *uc, pid_t tid, int memfd, size_t keep_head,
                         size_t max_steps, struct unwind_result *out)
{
    memset(out, 0, sizeof *out);
    out->frames = calloc(keep_head ? keep_head : 1, sizeof *out->frames);
    if (!out->frames)
        return -1;
    struct collector c = {.out = out, .keep_head = keep_head, .max_steps = max_steps,
                          .tid = tid};
    struct user_regs_struct r;
    Dwfl *d = ptrace(PTRACE_GETREGS, tid, 0, &r) == 0 ? cache_dwfl(uc, r.rip) : NULL;
    if (d)
        dwfl_getthread_frames(d, tid, dwfl_frame_cb, &c);
    if (out->total < 2) {
        reset(&c);
        unwind_libunwind(memfd, &c);
    }
    return finish_result(&c, out);
}

bool unwind_has_cfi(pid_t tgid, uint64_t pc)
{
    Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
    bool found = false;
    if (dwfl && dwfl_linux_proc_report(dwfl, tgid) == 0 &&
        dwfl_report_end(dwfl, NULL, NULL) == 0) {
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
        for (int i = 0; mod && i < 2 && !found; i++) {
            Dwarf_Addr bias = 0;
            Dwarf_CFI *cfi = i == 0 ? dwfl_module_eh_cfi(mod, &bias)
                                    : dwfl_module_dwarf_cfi(mod, &bias);
            Dwarf_Frame *frame = NULL;
            found = cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0;
            free(frame);
        }
    }
    dwfl_end(dwfl);
    return found;
}
