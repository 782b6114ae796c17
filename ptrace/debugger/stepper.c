/*
 * stepper.c - source-level steps (stepper.h). A step is a small state machine per
 * thread: STEPPING (single instructions, looking at each new pc) or RUNNING_TO a
 * temporary breakpoint (a call's return, a callee's body, the frame's return).
 */
#include "ptrace/debugger/stepper.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/lines.h"
#include "dwarf/value.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/patch/reloc.h"
#include "ptrace/proc/unwind.h"

#define MAX_STEPS 16                  /* threads stepping at once */
#define MAX_INSNS 2000000             /* single-steps one line may take */

enum step_target {
    TO_NONE,
    TO_CALL_RETURN,   /* a call stepped over (or a callee without line info) returned:
                         stepping goes on */
    TO_CALLEE_BODY,   /* step-into: the callee's first line after its prologue */
    TO_FRAME_RETURN,  /* step-out: the caller, with the return value */
};

struct step {
    bool used;
    pid_t tid, tgid;
    enum collector_resume how;
    int memfd;                        /* /proc/tgid/mem, for the step's life */
    struct module *mods;              /* of tgid, read at the start (and again when a pc
                                         falls outside them) */
    size_t n_mods;
    const struct module *mod;         /* the module of the stepped function */
    struct dw_func_lines lines;       /* its rows (link-time) */
    bool has_lines;
    int start_line;
    bool last_was_call, last_was_ret;
    uint64_t call_sp;                 /* rsp before the call stepped into */
    enum step_target to;
    uint64_t temp;                    /* the temporary breakpoint (runtime), 0: none */
    uint64_t temp_sp;                 /* it counts when rsp == temp_sp (or any rsp: 0) */
    const struct dw_type *ret_type;   /* step-out: what the function returns */
    long insns;
};

struct stepper {
    struct stepper_config cfg;
    struct step steps[MAX_STEPS];
};

struct stepper *stepper_new(const struct stepper_config *cfg)
{
    struct stepper *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    for (int i = 0; i < MAX_STEPS; i++)
        s->steps[i].memfd = -1;
    return s;
}

static void step_clear(struct step *st)
{
    if (st->has_lines)
        dw_func_lines_free(&st->lines);
    free(st->mods);
    if (st->memfd >= 0)
        close(st->memfd);
    *st = (struct step){.memfd = -1};
}

void stepper_free(struct stepper *s)
{
    if (!s)
        return;
    for (int i = 0; i < MAX_STEPS; i++)
        if (s->steps[i].used)
            step_clear(&s->steps[i]);
    free(s);
}

static struct step *find(struct stepper *s, pid_t tid)
{
    for (int i = 0; i < MAX_STEPS; i++)
        if (s->steps[i].used && s->steps[i].tid == tid)
            return &s->steps[i];
    return NULL;
}

bool stepper_active(const struct stepper *s, pid_t tid)
{
    return find((struct stepper *)s, tid) != NULL;
}

static const struct module *module_at(struct step *st, uint64_t pc)
{
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < st->n_mods; i++)
            if (pc >= st->mods[i].start && pc < st->mods[i].end)
                return &st->mods[i];
        if (pass == 0) { /* a library loaded since the step began */
            uint64_t own = st->mod ? st->mod - st->mods : 0;
            bool had = st->mod != NULL;
            free(st->mods);
            st->mods = NULL;
            st->n_mods = 0;
            st->mod = NULL;
            if (procmem_modules(st->tgid, &st->mods, &st->n_mods) != 0)
                return NULL;
            if (had && own < st->n_mods)
                st->mod = &st->mods[own];
        }
    }
    return NULL;
}

/* ---- temporary breakpoints ---- */

struct temp_op {
    struct tracer *t;
    uint64_t addr;
    bool insert;
    bool ok;
};

static void temp_apply(void *arg)
{
    struct temp_op *op = arg;
    struct bptab *bp = tracer_bptab(op->t);
    op->ok = op->insert ? bptab_insert(bp, op->addr, BP_STEP) : bptab_remove(bp, op->addr, BP_STEP);
}

static bool set_temp(struct tracer *t, struct step *st, uint64_t addr, uint64_t sp,
                     enum step_target to)
{
    struct temp_op op = {t, addr, true, false};
    tracer_with_space_held(t, st->tid, temp_apply, &op);
    if (!op.ok)
        return false;
    st->temp = addr;
    st->temp_sp = sp;
    st->to = to;
    return true;
}

static void drop_temp(struct tracer *t, struct step *st)
{
    if (!st->temp)
        return;
    struct temp_op op = {t, st->temp, false, false};
    tracer_with_space_held(t, st->tid, temp_apply, &op);
    st->temp = 0;
    st->to = TO_NONE;
}

/* ---- ends ---- */

static void end_here(struct stepper *s, struct tracer *t, struct step *st,
                     const struct user_regs_struct *regs, const char *ret, const char *note)
{
    pid_t tid = st->tid;
    drop_temp(t, st);
    step_clear(st);
    tracer_park(t, tid);
    s->cfg.ended(s->cfg.arg, t, tid, regs, ret, note);
}

static void release(struct stepper *s, struct tracer *t, struct step *st, const char *note)
{
    pid_t tid = st->tid;
    drop_temp(t, st);
    step_clear(st);
    s->cfg.released(s->cfg.arg, tid, note);
    tracer_resume_thread(t, tid);
}

/* The row of st's function holding link-time address pc, or NULL. */
static const struct dw_line_row *row_at(const struct step *st, uint64_t pc)
{
    const struct dw_line_row *best = NULL;
    for (size_t i = 0; i < st->lines.n_rows && st->lines.rows[i].addr <= pc; i++)
        best = &st->lines.rows[i];
    return best;
}

static bool in_function(const struct step *st, uint64_t link_pc)
{
    for (size_t i = 0; st->has_lines && i < st->lines.n_ranges; i++)
        if (link_pc >= st->lines.ranges[i].lo && link_pc < st->lines.ranges[i].hi)
            return true;
    return false;
}

/* Whether pc is in code a step stops in: the program's own, with a line table. A
 * system library counts as without, even when its debug info is installed: steps
 * go over libc's functions and out of main into the exit, as an agent wants. */
static bool has_line_info(const struct module *m, uint64_t pc)
{
    struct dw_func_lines fl;
    if (!m || procmem_system_path(m->path) ||
        dw_function_lines(m->path, pc - m->bias, &fl) != 0)
        return false;
    bool rows = fl.n_rows > 0;
    dw_func_lines_free(&fl);
    return rows;
}

/* ---- stepping ---- */

static enum insn_flow decode(struct tracer *t, struct step *st, uint64_t pc, size_t *len)
{
    uint8_t code[16];
    int memfd = st->memfd;
    bool ok = memfd >= 0 && bptab_read(tracer_bptab(t), memfd, pc, code, sizeof code);
    return ok ? reloc_insn_flow(code, sizeof code, pc, len) : INSN_UNKNOWN;
}

/* Before a return: a traced function returns into its trace trampoline (hooks.h),
 * outside every module, where the step would lose its way. The thread's traced
 * frames get their real return addresses back (their exits are recorded as unwound),
 * so the return lands in the caller. */
static void real_return(struct tracer *t, struct step *st, const struct user_regs_struct *regs)
{
    uint64_t ret = 0;
    int memfd = st->memfd;
    bool ok = memfd >= 0 && procmem_read(memfd, regs->rsp, &ret, sizeof ret);
    struct hooks *h = tracer_hooks(t);
    if (!ok || !h || module_at(st, ret))
        return;
    uint64_t pc = regs->rip;
    hooks_prepare_unwind(h, st->tid, &pc);
}

/* One more move from where tid stands (stopped, regs): over a call at full speed,
 * else one instruction. */
static void advance(struct stepper *s, struct tracer *t, struct step *st,
                    const struct user_regs_struct *regs)
{
    size_t len = 0;
    enum insn_flow flow = decode(t, st, regs->rip, &len);
    st->last_was_call = flow == INSN_CALL;
    st->last_was_ret = flow == INSN_RET;
    if (flow == INSN_CALL && st->how == RESUME_STEP_OVER) {
        if (set_temp(t, st, regs->rip + len, regs->rsp, TO_CALL_RETURN)) {
            tracer_resume_thread(t, st->tid);
            return;
        }
    }
    if (flow == INSN_CALL)
        st->call_sp = regs->rsp;
    if (flow == INSN_RET)
        real_return(t, st, regs);
    if (++st->insns > MAX_INSNS) {
        char note[128];
        snprintf(note, sizeof note, "the line did not end within %d instructions: stopped "
                 "where it was", MAX_INSNS);
        end_here(s, t, st, regs, "", note);
        return;
    }
    if (tracer_step(t, st->tid) != 0)
        release(s, t, st, "the thread could not be stepped");
}

/* tid entered a function (a call stepped into, or a jump out of the function). */
static void entered(struct stepper *s, struct tracer *t, struct step *st,
                    const struct user_regs_struct *regs)
{
    const struct module *m = module_at(st, regs->rip);
    uint64_t ret = 0;
    int memfd = st->memfd;
    bool ret_ok = memfd >= 0 && procmem_read(memfd, regs->rsp, &ret, sizeof ret);
    if (st->how == RESUME_STEP_INTO && has_line_info(m, regs->rip)) {
        uint64_t body = dw_after_prologue(m->path, regs->rip - m->bias) + m->bias;
        if (body == regs->rip) {
            end_here(s, t, st, regs, "", "");
            return;
        }
        if (set_temp(t, st, body, 0, TO_CALLEE_BODY)) {
            tracer_resume_thread(t, st->tid);
            return;
        }
    }
    /* No line info there (a PLT stub, libc): run it to its return, step on after. */
    if (ret_ok && set_temp(t, st, ret, regs->rsp + 8, TO_CALL_RETURN)) {
        tracer_resume_thread(t, st->tid);
        return;
    }
    end_here(s, t, st, regs, "", "stopped in a function without line info");
}

/* Where tid stands now decides: the step ends, or goes on. */
static void look(struct stepper *s, struct tracer *t, struct step *st,
                 const struct user_regs_struct *regs)
{
    uint64_t pc = regs->rip;
    bool was_call = st->last_was_call, was_ret = st->last_was_ret;
    st->last_was_call = st->last_was_ret = false;
    if (was_call && regs->rsp + 8 == st->call_sp) {
        entered(s, t, st, regs);
        return;
    }
    uint64_t link = st->mod ? pc - st->mod->bias : 0;
    if (was_ret || !st->mod || !in_function(st, link)) {
        const struct module *m = module_at(st, pc);
        if (was_ret && !has_line_info(m, pc)) {
            release(s, t, st, "the function returned into code without line info (main "
                    "returning into the C library): the program runs on");
            return;
        }
        if (was_ret) {
            end_here(s, t, st, regs, "", "returned to the caller");
            return;
        }
        /* A jump out of the function (a tail call, a PLT jump): like a call. */
        entered(s, t, st, regs);
        return;
    }
    const struct dw_line_row *row = row_at(st, link);
    if (row && row->addr == link && row->is_stmt && row->line != 0 &&
        row->line != st->start_line) {
        end_here(s, t, st, regs, "", "");
        return;
    }
    advance(s, t, st, regs);
}

void stepper_stepped(struct stepper *s, struct tracer *t, pid_t tid,
                     struct user_regs_struct *regs)
{
    struct step *st = find(s, tid);
    if (!st) {
        tracer_resume_thread(t, tid);
        return;
    }
    look(s, t, st, regs);
}

/* ---- step-out ---- */

/* rax or xmm0 as the function's return type shows it, into out ("" when void or
 * unknown). */
static void return_value(const struct step *st, pid_t tid, const struct user_regs_struct *regs,
                         char *out, size_t cap)
{
    out[0] = '\0';
    const struct dw_type *rt = st->ret_type;
    if (!rt || rt->size == 0 || rt->size > 8 || rt->kind == DWT_STRUCT ||
        rt->kind == DWT_UNION || rt->kind == DWT_ARRAY)
        return;
    uint64_t bits = regs->rax;
    if (rt->kind == DWT_FLOAT) {
        struct user_fpregs_struct fp;
        if (ptrace(PTRACE_GETFPREGS, tid, 0, &fp) != 0)
            return;
        memcpy(&bits, fp.xmm_space, sizeof bits);
    }
    unsigned char bytes[8];
    memcpy(bytes, &bits, sizeof bytes);
    int memfd = st->memfd;
    struct strbuf sb = {0};
    struct value_opts o = {.max_depth = 1};
    value_json(&sb, rt, bytes, procmem_read_ctx, &memfd, &o);
    if (sb.buf && sb.len < cap)
        snprintf(out, cap, "%s", sb.buf);
    sb_free(&sb);
}

static void start_out(struct stepper *s, struct tracer *t, struct step *st,
                      const struct user_regs_struct *regs)
{
    uint64_t pc = regs->rip;
    struct hooks *h = tracer_hooks(t);
    if (h)
        hooks_unwind_begin(h, st->tid, &pc);
    int memfd = st->memfd;
    struct unwind_result uw = {0};
    bool ok = memfd >= 0 && unwind_thread(st->tid, memfd, 2, 0, 4, &uw) == 0 && uw.n >= 2;
    uint64_t ret = ok ? uw.frames[1].pc : 0, cfa = ok ? uw.frames[1].sp : 0;
    if (ok)
        unwind_result_free(&uw);
    if (h)
        hooks_unwind_end(h, st->tid);
    const struct module *m = module_at(st, pc);
    if (m) {
        const struct dw_index *ix = dw_index_get(m->path, NULL);
        const struct dw_function *f = ix ? dw_function_at(ix, pc - m->bias) : NULL;
        st->ret_type = f ? f->return_type : NULL;
    }
    const struct module *caller = ok ? module_at(st, ret) : NULL;
    if (!ok || !has_line_info(caller, ret)) {
        release(s, t, st, ok ? "the caller has no line info (stepping out of main): the "
                "program runs on to its exit" : "the caller's frame could not be unwound: "
                "the thread runs on");
        return;
    }
    if (!set_temp(t, st, ret, cfa, TO_FRAME_RETURN)) {
        release(s, t, st, "no breakpoint could be set on the return address: the thread "
                "runs on");
        return;
    }
    tracer_resume_thread(t, st->tid);
}

int stepper_start(struct stepper *s, struct tracer *t, pid_t tid, enum collector_resume how,
                  struct strobe_error *e)
{
    struct step *st = find(s, tid);
    if (st)
        step_clear(st);
    for (int i = 0; i < MAX_STEPS && !st; i++)
        if (!s->steps[i].used)
            st = &s->steps[i];
    if (!st)
        return err_set(e, ERR_LIMIT_EXCEEDED, "%d threads are stepping already.", MAX_STEPS);
    struct user_regs_struct regs;
    pid_t tgid = tracer_tgid(t, tid);
    if (!tgid || ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return err_set(e, ERR_PROCESS_EXITED, "Thread %d is gone.", (int)tid);
    *st = (struct step){.used = true, .tid = tid, .tgid = tgid, .how = how,
                        .memfd = procmem_open(tgid)};
    if (procmem_modules(tgid, &st->mods, &st->n_mods) != 0) {
        step_clear(st);
        return err_set(e, ERR_PROCESS_EXITED, "Thread %d is gone.", (int)tid);
    }
    st->mod = module_at(st, regs.rip);
    st->has_lines = st->mod &&
                    dw_function_lines(st->mod->path, regs.rip - st->mod->bias, &st->lines) == 0;
    if (how == RESUME_STEP_OUT || !st->has_lines) {
        /* No line info where it stands: a step there runs to the return. */
        st->how = RESUME_STEP_OUT;
        start_out(s, t, st, &regs);
        return 0;
    }
    const struct dw_line_row *row = row_at(st, regs.rip - st->mod->bias);
    st->start_line = row ? row->line : 0;
    advance(s, t, st, &regs);
    return 0;
}

void stepper_cancel(struct stepper *s, struct tracer *t, pid_t tid)
{
    struct step *st = find(s, tid);
    if (!st)
        return;
    drop_temp(t, st);
    tracer_cancel_step(t, tid);
    step_clear(st);
}

int stepper_cancel_all(struct stepper *s, struct tracer *t)
{
    int n = 0;
    for (int i = 0; i < MAX_STEPS; i++)
        if (s->steps[i].used) {
            stepper_cancel(s, t, s->steps[i].tid);
            n++;
        }
    return n;
}

void stepper_thread_gone(struct stepper *s, pid_t tid)
{
    /* Its temporary breakpoint stays until another step's hit or the image goes: an
     * unused int3 whose hits pass to the program's instruction. */
    struct step *st = find(s, tid);
    if (st)
        step_clear(st);
}

enum bp_verdict stepper_on_trap(struct tracer *t, pid_t tid, struct tracer_stop *st_, void *arg)
{
    struct stepper *s = arg;
    struct step *st = find(s, tid);
    if (!st || st->temp != st_->addr || (st->temp_sp && st_->regs->rsp != st->temp_sp))
        return BP_PASS;
    struct user_regs_struct regs = *st_->regs;
    regs.rip = st_->addr;
    ptrace(PTRACE_SETREGS, tid, 0, &regs);
    enum step_target to = st->to;
    drop_temp(t, st);
    if (to == TO_FRAME_RETURN) {
        char ret[128];
        return_value(st, tid, &regs, ret, sizeof ret);
        end_here(s, t, st, &regs, ret, "");
        return BP_PARK;
    }
    if (to == TO_CALLEE_BODY) {
        end_here(s, t, st, &regs, "", "");
        return BP_PARK;
    }
    st->last_was_call = st->last_was_ret = false;
    look(s, t, st, &regs);
    return BP_RESUMED;
}
