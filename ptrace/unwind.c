/*
 * unwind.c - remote unwinding of a stopped thread. See unwind.h.
 *
 * The accessors are libunwind-ptrace's (register access, .eh_frame lookup) except
 * memory reads, which go through the /proc/PID/mem fd of the process. libunwind
 * passes the _UPT context, not ours, to access_mem, so the fd travels in a
 * thread-local: unwinding only ever happens on the tracer thread that owns the
 * process, synchronously.
 */
#include "ptrace/unwind.h"

#include <libunwind-ptrace.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "ptrace/procmem.h"

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

/* Callee-saved registers survive a call; caller frames know them (and rsp, rip). */
static const int callee_saved[] = {3, 6, 7, 12, 13, 14, 15, 16};

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

static void caller_regs(unw_cursor_t *c, struct unwind_frame *f)
{
    for (size_t i = 0; i < sizeof callee_saved / sizeof *callee_saved; i++) {
        unw_word_t v;
        if (unw_get_reg(c, callee_saved[i], &v) == 0) {
            f->regs[callee_saved[i]] = v;
            f->known |= 1u << callee_saved[i];
        }
    }
}

int unwind_thread(pid_t tid, int memfd, size_t keep_head, size_t keep_tail,
                  size_t max_steps, struct unwind_result *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = keep_head + keep_tail;
    out->frames = calloc(cap ? cap : 1, sizeof *out->frames);
    if (!out->frames)
        return -1;
    unw_accessors_t acc = _UPT_accessors;
    acc.access_mem = access_mem;
    unw_addr_space_t as = unw_create_addr_space(&acc, 0);
    void *upt = as ? _UPT_create(tid) : NULL;
    unw_cursor_t c;
    if (!upt || unw_init_remote(&c, as, upt) != 0) {
        if (upt)
            _UPT_destroy(upt);
        if (as)
            unw_destroy_addr_space(as);
        return -1;
    }
    current_memfd = memfd;
    /* The tail is a ring of keep_tail frames behind the head. */
    struct unwind_frame *tail = out->frames + keep_head;
    struct unwind_frame *prev = NULL;
    size_t total = 0;
    int step;
    do {
        struct unwind_frame f = {0};
        unw_word_t ip = 0, sp = 0;
        unw_get_reg(&c, UNW_REG_IP, &ip);
        unw_get_reg(&c, UNW_REG_SP, &sp);
        if (ip == 0)
            break;
        f.pc = ip;
        f.sp = sp;
        if (total == 0)
            frame0_regs(tid, &f);
        else
            caller_regs(&c, &f);
        if (prev)
            prev->cfa = sp;
        if (total < keep_head) {
            out->frames[total] = f;
            prev = &out->frames[total];
        } else if (keep_tail) {
            struct unwind_frame *slot = &tail[(total - keep_head) % keep_tail];
            *slot = f;
            prev = slot;
        } else {
            prev = NULL;
        }
        total++;
        if (total >= max_steps) {
            out->truncated = true;
            break;
        }
        step = unw_step(&c);
    } while (step > 0);
    current_memfd = -1;
    _UPT_destroy(upt);
    unw_destroy_addr_space(as);

    out->total = total;
    out->head = total < keep_head ? total : keep_head;
    size_t in_tail = total > keep_head ? total - keep_head : 0;
    if (in_tail > keep_tail) {
        /* Rotate the ring so the tail reads outward in order. */
        size_t start = in_tail % keep_tail;
        struct unwind_frame *tmp = malloc(keep_tail * sizeof *tmp);
        if (tmp) {
            for (size_t i = 0; i < keep_tail; i++)
                tmp[i] = tail[(start + i) % keep_tail];
            memcpy(tail, tmp, keep_tail * sizeof *tmp);
            free(tmp);
        }
        in_tail = keep_tail;
    }
    out->n = out->head + in_tail;
    return total ? 0 : -1;
}

void unwind_result_free(struct unwind_result *r)
{
    free(r->frames);
    memset(r, 0, sizeof *r);
}
