/*
 * hooks_calls.c - a traced call's events, however it was seen: at its int3 and
 * return trampoline (hooks_trap.c) or in the fast path's records (fast_drain.c).
 * The function_enter event (arguments, call site, short renderings, trace watches)
 * and the frame that matches its return; the function_exit event (return value) and
 * the frames a longjmp or an exception unwound.
 */
#include <string.h>

#include "base/strbuf.h"
#include "base/u64map.h"
#include "dwarf/abi.h"
#include "dwarf/value.h"
#include "dwarf/value_short.h"
#include "ptrace/hooks/hooks_internal.h"
#include "ptrace/proc/callsite.h"
#include "ptrace/proc/fnsym.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/vars/twatch.h"

enum exit_kind { EXIT_RETURN, EXIT_UNWOUND };

static void push_event(struct hooks *h, struct event *ev)
{
    event_sink_push(&h->cfg.sink, ev);
}

static void fill_location(struct event *ev, const struct hook *k, const struct thread *t)
{
    ev->pid = t->tgid;
    ev->tid = t->tid;
    ev->thread_name = t->name[0] ? t->name : NULL;
    ev->function = hooks_state_function_name(k);
    ev->function_raw = hooks_state_function_raw(k);
    ev->source_file = k->fn->decl_file;
    ev->line = k->fn->decl_line;
    ev->sampled = k->sampled;
}

/* The event's data with the watch values of k's function (read through mem) added:
 * fixed (members without braces) first; returns fallback when no watch applies. */
static const char *watch_data(struct hooks *h, struct thread *t, struct hook *k,
                              const struct hk_mem *mem, const char *fixed,
                              const char *fallback)
{
    if (!h->cfg.watches)
        return fallback;
    h->render.data.len = 0;
    if (h->render.data.buf)
        h->render.data.buf[0] = '\0';
    sb_puts(&h->render.data, "{");
    if (fixed) {
        sb_puts(&h->render.data, fixed);
        sb_puts(&h->render.data, ",");
    }
    if (!twatch_render(h->cfg.watches, k->fn, &k->wcache, t->tgid, t->memfd, mem->rd,
                       mem->ctx, &h->render.data))
        return fallback;
    sb_puts(&h->render.data, "}");
    return h->render.data.oom ? fallback : h->render.data.buf;
}

/* The short rendering of value JSON (value_short.h) as the data member key, after
 * the members fixed (without braces; NULL: none), in h->render.brief (the member text) and
 * h->render.brief_obj (an object of them); false when memory ran out. The rendering is
 * built in h->render.brief_text, emptied here: a traced call allocates nothing for it. */
static bool brief_member(struct hooks *h, const char *fixed, const char *key,
                         const char *json, bool args)
{
    struct strbuf *text = &h->render.brief_text;
    text->len = 0;
    text->oom = false; /* as a new buffer would be: one failed call spoils no other */
    if (text->buf)
        text->buf[0] = '\0';
    if (args)
        value_short_args(text, json, VALUE_SHORT_LIMIT);
    else
        value_short(text, json, VALUE_SHORT_LIMIT);
    h->render.brief.len = h->render.brief_obj.len = 0;
    if (fixed)
        sb_printf(&h->render.brief, "%s,", fixed);
    sb_printf(&h->render.brief, "\"%s\":", key);
    sb_json_string(&h->render.brief, text->buf ? text->buf : "");
    sb_puts(&h->render.brief_obj, "{");
    sb_puts(&h->render.brief_obj, h->render.brief.buf ? h->render.brief.buf : "");
    sb_puts(&h->render.brief_obj, "}");
    return !text->oom && !h->render.brief.oom && !h->render.brief_obj.oom;
}

/* An enter event's data: its call site (callsite.h), the arguments' short rendering
 * and k's watch values. */
static const char *enter_data(struct hooks *h, struct thread *t, struct hook *k,
                              const struct hk_mem *mem, uint64_t ret, const char *args)
{
    struct process *p = u64map_get(&h->procs, (uint64_t)t->tgid);
    const char *fixed = p && ret ? callsite_members(&p->sites, t->tgid, ret) : NULL;
    if (args && k->fn->n_params > 0 && brief_member(h, fixed, "argsShort", args, true))
        return watch_data(h, t, k, mem, h->render.brief.buf, h->render.brief_obj.buf);
    if (!fixed)
        return watch_data(h, t, k, mem, NULL, NULL);
    h->render.site.len = 0;
    if (h->render.site.buf)
        h->render.site.buf[0] = '\0';
    sb_printf(&h->render.site, "{%s}", fixed);
    return watch_data(h, t, k, mem, fixed, h->render.site.oom ? NULL : h->render.site.buf);
}

/* Whether the events of k made from live memory teach its capture program: a
 * fast-path function (its calls at its int3, before its jump or after a sample). */
bool hooks_calls_learns(const struct hooks *h, const struct hook *k)
{
    return k->role == HOOK_TRACE && k->fast && h->fast && h->cfg.tuning.fast;
}

/* emit_exit, its memory read through mem. */
static void emit_exit_read(struct hooks *h, struct thread *t, const struct frame *f,
                           const struct abi_regs *a, enum exit_kind kind, int64_t now,
                           const struct hk_mem *mem)
{
    struct event ev = event_sink_init(&h->cfg.sink, EV_FUNCTION_EXIT, now);
    fill_location(&ev, f->hook, t);
    ev.seq = ++*h->seq;
    ev.parent_seq = f->seq;
    ev.duration_ns = now - f->t_enter;
    /* The data every such exit has, [unwound][in progress]: as an object, and as
     * members for watch_data to put before the watch values. */
    static const char *const objects[2][2] = {
        {NULL, "{\"inProgress\":true}"},
        {"{\"unwound\":true}", "{\"unwound\":true,\"inProgress\":true}"},
    };
    static const char *const members[2][2] = {
        {NULL, "\"inProgress\":true"},
        {"\"unwound\":true", "\"unwound\":true,\"inProgress\":true"},
    };
    if (f->silent)
        return;
    bool unwound = kind == EXIT_UNWOUND || !a;
    const char *fixed = members[unwound][f->in_progress];
    ev.data = objects[unwound][f->in_progress];
    if (!unwound) {
        h->render.ret.len = 0;
        if (h->render.ret.buf)
            h->render.ret.buf[0] = '\0';
        /* An adopted frame's struct-return address is rax at the return (SysV). */
        uint64_t hidden = f->in_progress ? a->rax : f->hidden_ret;
        fnsym_use(h->render.fnsym, t->tgid);
        abi_return_json(&h->render.ret, f->hook->fn->return_type, a, hidden, mem->rd, mem->ctx,
                        &h->render.vopts);
        ev.return_value = h->render.ret.oom ? NULL : h->render.ret.buf;
        if (ev.return_value && f->hook->fn->return_type &&
            brief_member(h, fixed, "retShort", ev.return_value, false)) {
            ev.data = h->render.brief_obj.buf;
            fixed = h->render.brief.buf;
        }
    }
    ev.data = watch_data(h, t, f->hook, mem, fixed, ev.data);
    push_event(h, &ev);
}

/* The exit event of frame f of t: returned with the registers a, or unwound (a
 * NULL); mem reads its memory (NULL or another function's: live, learned when f's
 * function learns). */
static void emit_exit(struct hooks *h, struct thread *t, const struct frame *f,
                      const struct abi_regs *a, enum exit_kind kind, int64_t now,
                      const struct hk_mem *mem)
{
    if (mem && mem->k == f->hook) {
        emit_exit_read(h, t, f, a, kind, now, mem);
    } else if (!mem && a && kind == EXIT_RETURN && !f->silent && hooks_calls_learns(h, f->hook)) {
        struct hk_mem learn;
        fast_learn_begin(h, f->hook, true, a, f->rsp, t->memfd, &learn);
        emit_exit_read(h, t, f, a, kind, now, &learn);
        fast_learn_end(h, f->hook, true);
    } else {
        struct hk_mem live = {procmem_read_ctx, &t->memfd, f->hook};
        emit_exit_read(h, t, f, a, kind, now, &live);
    }
}

/* Frames whose return-address slot is at or below the stack pointer of a new call
 * at time now are gone from the real stack: a longjmp or an exception unwound them.
 * A frame entered after now is not (an int3's, pushed before a fast-path record of
 * an earlier call was drained: records wait behind one still being written). */
void hooks_calls_unwind_to(struct hooks *h, struct thread *t, uint64_t rsp, int64_t now)
{
    while (t->depth > 0 && t->frames[t->depth - 1].rsp <= rsp &&
           t->frames[t->depth - 1].t_enter <= now) {
        if (t->frames[t->depth - 1].rsp == rsp && t->frames[t->depth - 1].tail_caller)
            break;
        t->depth--;
        emit_exit(h, t, &t->frames[t->depth], NULL, EXIT_UNWOUND, now, NULL);
    }
}

uint64_t hooks_calls_frame_trampoline(const struct hooks *h, const struct thread *t,
                                      const struct frame *f)
{
    return f->fast ? fastpath_ret_tramp(h)
                   : hooks_areas_trampoline_for(h, hooks_areas_of_thread(h, t), f->hook->addr);
}

/* Call c's real return address: its caller's, when it is a tail call (the caller's
 * frame shares its slot and is marked so). */
static uint64_t call_ret(struct thread *t, const struct hk_call *c)
{
    if (!c->tail || t->depth == 0)
        return c->ret;
    t->frames[t->depth - 1].tail_caller = true;
    return t->frames[t->depth - 1].ret;
}

/* A call of a quiet function that the fast path recorded before it went quiet:
 * no event; its frame, pushed by the recorder, is kept to match its return. */
static struct frame *silent_call(struct hooks *h, struct thread *t, struct hook *k,
                                 const struct hk_call *c)
{
    uint64_t ret = call_ret(t, c);
    hooks_calls_unwind_to(h, t, c->regs->rsp, c->now);
    struct frame *f;
    if (!c->push || !ret || !(f = hooks_state_frame_push(t)))
        return NULL;
    *f = (struct frame){.ret = ret, .rsp = c->regs->rsp, .t_enter = c->now, .hook = k,
                        .fast = c->fast, .silent = true};
    return f;
}

struct frame *hooks_calls_entered(struct hooks *h, struct thread *t, struct hook *k,
                                  const struct hk_call *c)
{
    if (k->quiet || c->silent)
        return silent_call(h, t, k, c);
    k->recorded++;
    sampling_throttle_if_hot(h, k, c->now);
    procmem_thread_name_cached(t->tid, t->name, sizeof t->name, &t->name_read_ns, c->now);
    h->render.args.len = 0;
    if (h->render.args.buf)
        h->render.args.buf[0] = '\0';
    fnsym_use(h->render.fnsym, t->tgid);
    abi_args_json(&h->render.args, k->fn, c->regs, c->mem.rd, c->mem.ctx, &h->render.vopts);
    uint64_t ret = call_ret(t, c);
    hooks_calls_unwind_to(h, t, c->regs->rsp, c->now);
    struct event ev = event_sink_init(&h->cfg.sink, EV_FUNCTION_ENTER, c->now);
    fill_location(&ev, k, t);
    ev.seq = ++*h->seq;
    if (t->depth > 0)
        ev.parent_seq = t->frames[t->depth - 1].seq;
    ev.arguments = h->render.args.oom ? NULL : h->render.args.buf;
    ev.data = enter_data(h, t, k, &c->mem, ret, ev.arguments);
    push_event(h, &ev);
    struct frame *f;
    if (!c->push || !ret || !(f = hooks_state_frame_push(t)))
        return NULL; /* no exit event for this call; the entry stands */
    *f = (struct frame){.ret = ret, .rsp = c->regs->rsp, .hidden_ret = c->regs->rdi,
                        .seq = ev.seq, .t_enter = c->now, .hook = k, .fast = c->fast};
    return f;
}

void hooks_calls_learn(struct hooks *h, struct thread *t, struct hook *k, const struct abi_regs *a,
                       bool exit)
{
    struct hk_mem mem;
    fast_learn_begin(h, k, exit, a, a->rsp, t->memfd, &mem);
    fnsym_use(h->render.fnsym, t->tgid);
    h->render.args.len = h->render.ret.len = 0;
    if (exit)
        abi_return_json(&h->render.ret, k->fn->return_type, a, a->rax, mem.rd, mem.ctx,
                        &h->render.vopts);
    else
        abi_args_json(&h->render.args, k->fn, a, mem.rd, mem.ctx, &h->render.vopts);
    watch_data(h, t, k, &mem, NULL, NULL);
    fast_learn_end(h, k, exit);
}

/* hooks_calls_returned on frames all entered before now. */
static uint64_t call_returned(struct hooks *h, struct thread *t, uint64_t entry_rsp,
                              const struct abi_regs *a, int64_t now, const struct hk_mem *mem)
{
    uint64_t rsp = entry_rsp + 8;
    int match = -1;
    for (int i = t->depth - 1; i >= 0; i--)
        if (t->frames[i].rsp == entry_rsp && !t->frames[i].detached) {
            match = i;
            break;
        }
    /* A frame whose real return address went back on the stack (a stacks snapshot
     * or a crash report's unwind) after the function had already returned to the
     * trampoline (the thread's trap was pending while it was held): its return is
     * still this one. */
    for (int i = t->depth - 1; i >= 0 && match < 0; i--)
        if (t->frames[i].rsp == entry_rsp)
            match = i;
    /* No exact frame (a function that moved its own return address): the outermost
     * frame already below the stack pointer is the one that returned. */
    for (int i = t->depth - 1; i >= 0 && match < 0; i--)
        if (!t->frames[i].detached && t->frames[i].rsp < rsp &&
            (i == 0 || t->frames[i - 1].rsp >= rsp))
            match = i;
    if (match < 0)
        return 0; /* not a frame of ours: cannot know where to return */
    procmem_thread_name_cached(t->tid, t->name, sizeof t->name, &t->name_read_ns, now);
    for (int i = t->depth - 1; i > match; i--)
        emit_exit(h, t, &t->frames[i], NULL, EXIT_UNWOUND, now, NULL);
    /* The callee of a tail call returns for its callers too. */
    int bottom = match;
    while (bottom > 0 && t->frames[bottom - 1].rsp == entry_rsp &&
           t->frames[bottom - 1].tail_caller)
        bottom--;
    for (int i = match; i >= bottom; i--)
        emit_exit(h, t, &t->frames[i], a, EXIT_RETURN, now, mem);
    t->depth = bottom;
    return t->frames[bottom].ret;
}

uint64_t hooks_calls_returned(struct hooks *h, struct thread *t, uint64_t entry_rsp,
                              const struct abi_regs *a, int64_t now, const struct hk_mem *mem)
{
    /* Frames entered after now (int3 frames pushed before this fast-path record was
     * drained) are on top: they stay, and the return is matched below them. */
    int top = t->depth;
    while (top > 0 && t->frames[top - 1].t_enter > now)
        top--;
    int newer = t->depth - top;
    t->depth = top;
    uint64_t ret = call_returned(h, t, entry_rsp, a, now, mem);
    if (newer) {
        memmove(&t->frames[t->depth], &t->frames[top], (size_t)newer * sizeof *t->frames);
        t->depth += newer;
    }
    return ret;
}
