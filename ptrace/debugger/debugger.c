/*
 * debugger.c - stop-and-step for one target (debugger.h).
 *
 * Pauses: a thread that pauses is parked by the tracer (it stays in its ptrace stop)
 * and recorded in the pause registry with the registers it stopped with; resuming it
 * removes the record first, so a waiter never sees a thread as paused that runs.
 */
#include "ptrace/debugger/debugger.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/cond.h"
#include "base/event.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "ptrace/debugger/bpset.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/debugger/pauses.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/debugger/stepper.h"
#include "ptrace/proc/unwind.h"

#define STAGED_MAX (BREAKPOINTS_MAX + LOGPOINTS_MAX)
#define ENTRY_WAIT_MS 30000

struct staged {
    struct collector_breakpoint bp;   /* strings owned */
};

struct debugger {
    struct debugger_config cfg;
    char *project_root;
    struct bpset *bps;
    struct stepper *steps;
    struct pauses *pauses;
    pthread_mutex_t lock;             /* staged, failed, entry_done */
    pthread_cond_t entry_cond;
    struct staged staged[STAGED_MAX];
    int n_staged;
    bool entry_done;
    struct collector_bp_info failed[STAGED_MAX]; /* staged ones that bound nowhere */
    int n_failed;
    struct collector_bp_info *bound; /* how each staged one bound at the entry point
                                        (n_staged of them, failures included) */
    unsigned all_stops;               /* tracer thread: all-stops so far (resume_fn) */
};

static void paused_changed(void *arg)
{
    struct debugger *d = arg;
    if (d->cfg.paused)
        d->cfg.paused(d->cfg.arg);
}

/* ---- pauses ---- */

static void push_pause_event(struct debugger *d, const struct collector_pause *p)
{
    static const char *const reasons[] = {
        [PAUSE_BREAKPOINT] = "breakpoint", [PAUSE_STEP] = "step",
        [PAUSE_REQUEST] = "pause", [PAUSE_ALL_STOP] = "allStop",
    };
    char why[32] = "";
    if (p->reason == PAUSE_BREAKPOINT)
        snprintf(why, sizeof why, " (breakpoint %d)", p->breakpoint_id);
    char text[640];
    snprintf(text, sizeof text, "thread %d paused at %s:%d in %s%s", (int)p->tid,
             p->file[0] ? p->file : "?", p->line, p->function[0] ? p->function : "?", why);
    struct strbuf data = {0};
    sb_printf(&data, "{\"reason\":\"%s\"", reasons[p->reason]);
    if (p->breakpoint_id)
        sb_printf(&data, ",\"breakpointId\":%d", p->breakpoint_id);
    sb_puts(&data, ",\"file\":");
    sb_json_string(&data, p->file);
    sb_printf(&data, ",\"line\":%d,\"function\":", p->line);
    sb_json_string(&data, p->function);
    if (p->return_value[0])
        sb_printf(&data, ",\"returnValue\":%s", p->return_value);
    sb_puts(&data, "}");
    struct event ev = event_sink_init(&d->cfg.sink, EV_PAUSE, mono_ns());
    ev.pid = p->pid;
    ev.tid = p->tid;
    char tname[32]; /* read at the stop: the name the thread has now */
    procmem_thread_name(p->tid, tname, sizeof tname);
    ev.thread_name = tname[0] ? tname : NULL;
    ev.text = text;
    ev.data = data.buf;
    ev.function = p->function[0] ? p->function : NULL;
    ev.source_file = p->file[0] ? p->file : NULL;
    ev.line = p->line;
    event_sink_push(&d->cfg.sink, &ev);
    sb_free(&data);
}

static void describe_pc(struct collector_pause *p)
{
    struct module *mods = NULL;
    size_t n = 0;
    if (procmem_modules(p->pid, &mods, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (p->pc >= mods[i].start && p->pc < mods[i].end) {
            pauses_describe_site(p, mods[i].path, mods[i].bias);
            break;
        }
    free(mods);
}

static void record_pause(struct debugger *d, pid_t tid, pid_t tgid,
                         enum collector_pause_reason why, int bp_id,
                         const struct user_regs_struct *regs, const char *ret, const char *note)
{
    struct collector_pause p = {.tid = tid, .pid = tgid, .reason = why,
                                .breakpoint_id = bp_id, .pc = regs->rip};
    snprintf(p.return_value, sizeof p.return_value, "%s", ret ? ret : "");
    snprintf(p.note, sizeof p.note, "%s", note ? note : "");
    describe_pc(&p);
    push_pause_event(d, &p);
    pauses_add(d->pauses, &p, regs);
}

struct all_stop {
    struct debugger *d;
    struct tracer *t;
    enum collector_pause_reason reason;
    int parked;                  /* threads stopped by this all-stop */
};

static void park_one(pid_t tid, pid_t tgid, void *arg)
{
    struct all_stop *as = arg;
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, 0, &regs) != 0)
        return;
    stepper_cancel(as->d->steps, as->t, tid);
    record_pause(as->d, tid, tgid, as->reason, 0, &regs, NULL, NULL);
    as->parked++;
}

static void bp_pause(void *arg, struct tracer *t, pid_t tid, pid_t tgid, int bp_id,
                     const struct user_regs_struct *regs, bool all_stop)
{
    struct debugger *d = arg;
    stepper_cancel(d->steps, t, tid);
    pauses_batch(d->pauses, true);
    record_pause(d, tid, tgid, PAUSE_BREAKPOINT, bp_id, regs, NULL, NULL);
    if (all_stop) {
        struct all_stop as = {d, t, PAUSE_ALL_STOP, 0};
        d->all_stops++;
        tracer_park_all(t, tid, park_one, &as);
    }
    pauses_batch(d->pauses, false);
}

static void step_ended(void *arg, struct tracer *t, pid_t tid,
                       const struct user_regs_struct *regs, const char *ret, const char *note)
{
    struct debugger *d = arg;
    int bp = bpset_step_landed(d->bps, t, tid, regs);
    record_pause(d, tid, tracer_tgid(t, tid), bp ? PAUSE_BREAKPOINT : PAUSE_STEP, bp, regs, ret,
                 note);
}

/* A step that ends with the thread running on has no stop to report: the daemon log
 * says why (the agent's wait ends with the program's exit or its timeout). */
static void step_released(void *arg, pid_t tid, const char *note)
{
    (void)arg;
    log_info("thread %d runs on after its step: %s", (int)tid, note);
}

static void stepped(struct tracer *t, pid_t tid, struct user_regs_struct *regs, void *arg)
{
    struct debugger *d = arg;
    stepper_stepped(d->steps, t, tid, regs);
}

static void parked_late(struct tracer *t, pid_t tid, void *arg)
{
    struct all_stop as = {arg, t, PAUSE_ALL_STOP, 0};
    park_one(tid, tracer_tgid(t, tid), &as);
}

static void thread_gone(struct tracer *t, pid_t tid, void *arg)
{
    (void)t;
    struct debugger *d = arg;
    stepper_thread_gone(d->steps, tid);
    pauses_remove(d->pauses, tid);
}

/* ---- life ---- */

struct debugger *debugger_new(const struct debugger_config *cfg)
{
    struct debugger *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->cfg = *cfg;
    d->project_root = cfg->project_root ? strdup(cfg->project_root) : NULL;
    struct bpset_config bc = {.sink = cfg->sink, .project_root = d->project_root,
                              .pause = bp_pause, .arg = d};
    struct stepper_config sc = {.ended = step_ended, .released = step_released, .arg = d};
    d->bps = bpset_new(&bc);
    d->steps = stepper_new(&sc);
    d->pauses = pauses_new(paused_changed, d);
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->entry_cond, NULL);
    d->entry_done = true;
    if (!d->bps || !d->steps || !d->pauses) {
        debugger_free(d);
        return NULL;
    }
    return d;
}

static void staged_free(struct staged *s)
{
    free((char *)s->bp.function);
    free((char *)s->bp.file);
    free((char *)s->bp.condition);
    free((char *)s->bp.message);
}

void debugger_free(struct debugger *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n_staged; i++)
        staged_free(&d->staged[i]);
    free(d->bound);
    bpset_free(d->bps);
    stepper_free(d->steps);
    pauses_free(d->pauses);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->entry_cond);
    free(d->project_root);
    free(d);
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

int debugger_stage(struct debugger *d, const struct collector_breakpoint *bps, int n)
{
    for (int i = 0; i < n && d->n_staged < STAGED_MAX; i++) {
        struct collector_breakpoint b = bps[i];
        b.function = dup_opt(b.function);
        b.file = dup_opt(b.file);
        b.condition = dup_opt(b.condition);
        b.message = dup_opt(b.message);
        d->staged[d->n_staged++] = (struct staged){b};
    }
    d->entry_done = d->n_staged == 0;
    return d->n_staged;
}

void debugger_on_start(struct debugger *d, struct tracer *t)
{
    tracer_add_stop_handler(t, "steps", BP_STEP, stepper_on_trap, d->steps);
    tracer_add_stop_handler(t, "breakpoints", BP_USER_BREAKPOINT, bpset_on_trap, d->bps);
    struct tracer_debugger td = {.stepped = stepped, .parked = parked_late,
                                 .thread_gone = thread_gone, .arg = d};
    tracer_set_debugger(t, &td);
}

static void entry_done(struct debugger *d)
{
    pthread_mutex_lock(&d->lock);
    d->entry_done = true;
    pthread_cond_broadcast(&d->entry_cond);
    pthread_mutex_unlock(&d->lock);
}

void debugger_on_entry(struct debugger *d, struct tracer *t)
{
    if (d->entry_done) { /* a later program of the main process: everything again */
        bpset_rebind(d->bps, t);
        return;
    }
    struct collector_bp_info *bound = calloc((size_t)d->n_staged, sizeof *bound);
    for (int i = 0; i < d->n_staged; i++) {
        struct strobe_error e = {0};
        struct collector_bp_info info;
        struct bp_resolved *r = bpset_resolve(d->bps, tracer_pid(t), &d->staged[i].bp, &e);
        if (r && bpset_arm(d->bps, t, r, &info, &e) == 0) {
            if (bound)
                bound[i] = info;
            continue;
        }
        pthread_mutex_lock(&d->lock);
        struct collector_bp_info *f = &d->failed[d->n_failed++];
        collector_bp_info_init(f, &d->staged[i].bp);
        snprintf(f->note, sizeof f->note, "%s: %.480s", err_code_name(e.code), e.msg);
        if (bound)
            bound[i] = *f;
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&d->lock);
    d->bound = bound;
    pthread_mutex_unlock(&d->lock);
    entry_done(d);
}

void debugger_main_exec(struct debugger *d)
{
    bpset_forget_addresses(d->bps);
}

void debugger_entry_passed(struct debugger *d)
{
    pthread_mutex_lock(&d->lock);
    if (!d->entry_done)
        for (int i = 0; i < d->n_staged; i++) {
            struct collector_bp_info *f = &d->failed[d->n_failed++];
            collector_bp_info_init(f, &d->staged[i].bp);
            snprintf(f->note, sizeof f->note, "PROCESS_EXITED: the program ended before its "
                     "entry point, where breakpoints bind.");
        }
    pthread_mutex_unlock(&d->lock);
    entry_done(d);
}

static void wait_entry(struct debugger *d)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ENTRY_WAIT_MS / 1000;
    pthread_mutex_lock(&d->lock);
    while (!d->entry_done &&
           pthread_cond_timedwait(&d->entry_cond, &d->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&d->lock);
}

/* ---- breakpoints ---- */

struct arm_call {
    struct debugger *d;
    struct bp_resolved *r;
    struct collector_bp_info *info;
    struct strobe_error *e;
    int id;
    int rc;
};

static void arm_fn(struct tracer *t, void *arg)
{
    struct arm_call *c = arg;
    c->rc = bpset_arm(c->d->bps, t, c->r, c->info, c->e);
    c->r = NULL;
}

int debugger_breakpoint_set(struct debugger *d, struct tracer *t,
                            const struct collector_breakpoint *bp,
                            struct collector_bp_info *out, struct strobe_error *e)
{
    wait_entry(d);
    if (tracer_finished(t))
        return err_set(e, ERR_PROCESS_EXITED, "The program has exited.");
    struct bp_resolved *r = bpset_resolve(d->bps, tracer_pid(t), bp, e);
    if (!r)
        return -1;
    struct arm_call c = {d, r, out, e, 0, -1};
    if (tracer_call(t, arm_fn, &c, e) != 0) {
        bpset_resolved_free(c.r);
        return -1;
    }
    return c.rc;
}

static void disarm_fn(struct tracer *t, void *arg)
{
    struct arm_call *c = arg;
    c->rc = bpset_disarm(c->d->bps, t, c->id, c->e);
}

static bool drop_failed(struct debugger *d, int id)
{
    bool found = false;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->n_failed; i++)
        if (d->failed[i].id == id) {
            d->failed[i] = d->failed[--d->n_failed];
            found = true;
            break;
        }
    pthread_mutex_unlock(&d->lock);
    return found;
}

int debugger_breakpoint_clear(struct debugger *d, struct tracer *t, int id,
                              struct strobe_error *e)
{
    wait_entry(d);
    if (drop_failed(d, id))
        return 0;
    struct arm_call c = {.d = d, .e = e, .id = id, .rc = -1};
    if (tracer_finished(t)) /* nothing to disarm: the set alone forgets it */
        return bpset_disarm(d->bps, NULL, id, e);
    if (tracer_call(t, disarm_fn, &c, e) != 0)
        return bpset_disarm(d->bps, NULL, id, e);
    return c.rc;
}

int debugger_breakpoint_list(struct debugger *d, struct collector_bp_info *out, int max)
{
    wait_entry(d);
    int n = bpset_list(d->bps, out, max);
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->n_failed; i++) {
        if (n < max)
            out[n] = d->failed[i];
        n++;
    }
    pthread_mutex_unlock(&d->lock);
    return n;
}

int debugger_breakpoints_staged(struct debugger *d, struct collector_bp_info *out, int max)
{
    wait_entry(d);
    pthread_mutex_lock(&d->lock);
    int n = d->bound ? d->n_staged : 0;
    for (int i = 0; i < n && i < max; i++)
        out[i] = d->bound[i];
    if (!d->bound) /* the program ended before its entry point */
        for (int i = 0; i < d->n_failed; i++, n++)
            if (n < max)
                out[n] = d->failed[i];
    pthread_mutex_unlock(&d->lock);
    return n;
}

int debugger_pauses(struct debugger *d, struct collector_pause *out, int max)
{
    return pauses_list(d->pauses, out, max);
}

/* ---- pause and resume ---- */

struct resume_call {
    struct debugger *d;
    pid_t tid;
    enum collector_resume how;
    struct strobe_error *e;
    int rc;
};

static void pause_fn(struct tracer *t, void *arg)
{
    struct resume_call *c = arg;
    struct all_stop as = {c->d, t, PAUSE_REQUEST, 0};
    pauses_batch(c->d->pauses, true);
    tracer_park_all(t, c->tid, park_one, &as);
    pauses_batch(c->d->pauses, false);
    c->rc = as.parked;
}

int debugger_pause(struct debugger *d, struct tracer *t, pid_t pid, struct strobe_error *e)
{
    pid_t target = pid ? pid : tracer_pid(t);
    if (!tracer_has_process(t, target))
        return pid ? err_set(e, ERR_VALIDATION, "pid %d is not a live process of this "
                             "session.", (int)pid)
                   : err_set(e, ERR_PROCESS_EXITED, "The program has exited.");
    struct resume_call c = {d, target, RESUME_CONTINUE, e, -1};
    if (tracer_call(t, pause_fn, &c, e) != 0)
        return -1;
    return c.rc;
}

static void resume_one(struct debugger *d, struct tracer *t, pid_t tid)
{
    stepper_cancel(d->steps, t, tid);
    pauses_remove(d->pauses, tid);
    tracer_resume_thread(t, tid);
}

/* Continues the paused threads among tids. One resumed first may hit an all-stop
 * breakpoint before the others run (its trap handled inside a later resume that
 * holds the image): those not resumed yet then stay paused, for that all-stop. */
static void resume_listed(struct debugger *d, struct tracer *t, const pid_t *tids, int n)
{
    pid_t paused[256];
    int n_paused = pauses_tids(d->pauses, paused, 256);
    unsigned all_stops = d->all_stops;
    for (int i = 0; i < n && d->all_stops == all_stops; i++)
        for (int k = 0; k < n_paused && k < 256; k++)
            if (paused[k] == tids[i]) {
                resume_one(d, t, tids[i]);
                break;
            }
}

struct resume_many_call {
    struct debugger *d;
    const pid_t *tids;
    int n;
};

static void resume_many_fn(struct tracer *t, void *arg)
{
    struct resume_many_call *c = arg;
    resume_listed(c->d, t, c->tids, c->n);
}

int debugger_resume_many(struct debugger *d, struct tracer *t, const pid_t *tids, int n,
                         struct strobe_error *e)
{
    if (tracer_finished(t))
        return err_set(e, ERR_PROCESS_EXITED, "The program has exited.");
    struct resume_many_call c = {d, tids, n};
    return tracer_call(t, resume_many_fn, &c, e);
}

static void resume_fn(struct tracer *t, void *arg)
{
    struct resume_call *c = arg;
    struct debugger *d = c->d;
    pid_t tids[256];
    /* Continuing everything lets threads in the middle of a step run on too. */
    int stepping = c->how == RESUME_CONTINUE && !c->tid ? stepper_cancel_all(d->steps, t) : 0;
    int n = pauses_tids(d->pauses, tids, 256);
    if (n == 0) {
        c->rc = stepping ? 0 : err_set(c->e, ERR_NOT_PAUSED, "No thread is paused.");
        return;
    }
    bool paused = false;
    for (int i = 0; i < n && i < 256; i++)
        paused |= tids[i] == c->tid;
    if (c->tid && !paused) {
        struct strbuf list = {0};
        for (int i = 0; i < n && i < 8; i++)
            sb_printf(&list, "%s%d", i ? ", " : "", (int)tids[i]);
        c->rc = err_set(c->e, ERR_THREAD_NOT_PAUSED, "Thread %d is not paused; the paused "
                        "thread%s: %s%s.", (int)c->tid, n > 1 ? "s are" : " is",
                        list.buf ? list.buf : "", n > 8 ? ", ..." : "");
        sb_free(&list);
        return;
    }
    c->rc = 0;
    if (c->how == RESUME_CONTINUE) {
        resume_listed(d, t, c->tid ? &c->tid : tids, c->tid ? 1 : n);
        return;
    }
    pid_t tid = c->tid ? c->tid : pauses_selected(d->pauses);
    pauses_remove(d->pauses, tid);
    c->rc = stepper_start(d->steps, t, tid, c->how, c->e);
    if (c->rc != 0)
        tracer_resume_thread(t, tid);
}

int debugger_resume(struct debugger *d, struct tracer *t, pid_t tid, enum collector_resume how,
                    struct strobe_error *e)
{
    if (tracer_finished(t))
        return err_set(e, ERR_PROCESS_EXITED, "The program has exited.");
    struct resume_call c = {d, tid, how, e, -1};
    if (tracer_call(t, resume_fn, &c, e) != 0)
        return -1;
    return c.rc;
}

/* ---- conditions over globals ---- */

int debugger_evaluate(struct tracer *t, pid_t pid, const char *condition, bool *result,
                      char *values, size_t cap, struct strobe_error *e)
{
    pid_t target = pid ? pid : tracer_pid(t);
    struct strobe_error ce = {0};
    struct cond *c = cond_parse(condition, &ce);
    if (!c)
        return err_set(e, ERR_BAD_EXPRESSION, "condition %s", ce.msg);
    int memfd = tracer_has_process(t, target) ? procmem_open(target) : -1;
    if (memfd < 0) {
        cond_free(c);
        return err_set(e, ERR_PROCESS_EXITED, "The program has exited.");
    }
    struct varres_process p;
    varres_process_open(&p, target, memfd);
    int rc = cond_eval(c, framevars_cond_resolve, &p, result, &ce);
    if (rc != 0) {
        /* A path that did not resolve has its own code; else the condition itself is
         * at fault (a string compared with a number): BAD_EXPRESSION, as when it does
         * not parse. */
        bool own = ce.code == ERR_VALIDATION || ce.code == ERR_NONE;
        err_set(e, own ? ERR_BAD_EXPRESSION : ce.code, "%s", ce.msg);
    } else if (values && cap) {
        struct strbuf sb = {0};
        const char *const *paths;
        size_t n = cond_paths(c, &paths);
        for (size_t i = 0; i < n; i++) {
            sb_printf(&sb, "%s%s=", i ? ", " : "", paths[i]);
            framevars_render(&p, paths[i], &sb);
        }
        snprintf(values, cap, "%s", sb.buf ? sb.buf : "");
        sb_free(&sb);
    }
    varres_process_close(&p);
    close(memfd);
    cond_free(c);
    return rc;
}

/* ---- frames of paused threads ---- */

struct frame_call {
    struct debugger *d;
    pid_t tid;
    int frame;
    struct frame_ctx *f;
    struct strobe_error *e;
    int regno;
    uint64_t value;
    int rc;
};

static void frame_fn(struct tracer *t, void *arg)
{
    struct frame_call *c = arg;
    pid_t tgid = tracer_tgid(t, c->tid);
    uint64_t pc = c->f->pc;
    struct hooks *h = tracer_hooks(t);
    if (h)
        hooks_unwind_begin(h, c->tid, &pc);
    int memfd = procmem_open(tgid);
    struct unwind_result uw = {0};
    bool ok = memfd >= 0 &&
              unwind_thread(c->tid, memfd, (size_t)c->frame + 1, 0, 256, &uw) == 0;
    if (h)
        hooks_unwind_end(h, c->tid);
    if (memfd >= 0)
        close(memfd);
    if (!ok || uw.n <= (size_t)c->frame) {
        c->rc = err_set(c->e, ERR_VALIDATION, "Thread %d has %zu frames: frame %d does not "
                        "exist.", (int)c->tid, ok ? uw.n : 0, c->frame);
        if (ok)
            unwind_result_free(&uw);
        return;
    }
    const struct unwind_frame *fr = &uw.frames[c->frame];
    struct frame_ctx *f = c->f;
    f->pc = fr->pc;
    f->outer = true;
    f->has_raw = false;
    f->regs = (struct dw_regs){0};
    for (int i = 0; i < UNWIND_NREGS && i < 17; i++)
        if (fr->known & (1u << i)) {
            f->regs.val[i] = fr->regs[i];
            f->regs.known |= 1u << i;
        }
    f->regs.cfa = fr->cfa;
    unwind_result_free(&uw);
    c->rc = 0;
}

int debugger_frame(struct debugger *d, struct tracer *t, pid_t tid, int frame,
                   struct frame_ctx *f, struct strobe_error *e)
{
    struct collector_pause p;
    struct user_regs_struct regs;
    if (!pauses_get(d->pauses, tid, &p, &regs))
        return err_set(e, ERR_THREAD_NOT_PAUSED, "Thread %d is not paused: a frame's variables "
                       "are read while its thread is paused.", (int)tid);
    framevars_frame0(f, tid, p.pid, &regs, NULL, 0);
    if (frame == 0)
        return 0;
    struct frame_call c = {d, tid, frame, f, e, 0, 0, -1};
    if (tracer_call(t, frame_fn, &c, e) != 0)
        return -1;
    if (c.rc == 0) {
        /* The module of the caller's pc. */
        struct frame_ctx outer = *f;
        struct user_regs_struct fake = regs;
        fake.rip = outer.pc;
        framevars_frame0(f, tid, p.pid, &fake, NULL, 0);
        f->regs = outer.regs;
        f->outer = true;
        f->has_raw = false;
    }
    return c.rc;
}

static void set_register_fn(struct tracer *t, void *arg)
{
    struct frame_call *c = arg;
    (void)t;
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, c->tid, 0, &regs) != 0 ||
        !framevars_set_register(&regs, c->regno, c->value) ||
        ptrace(PTRACE_SETREGS, c->tid, 0, &regs) != 0) {
        c->rc = err_set(c->e, ERR_MEMORY_UNWRITABLE, "Register %d of thread %d cannot be "
                        "written.", c->regno, (int)c->tid);
        return;
    }
    pauses_set_regs(c->d->pauses, c->tid, &regs);
    c->rc = 0;
}

int debugger_set_register(struct debugger *d, struct tracer *t, pid_t tid, int regno,
                          uint64_t value, struct strobe_error *e)
{
    if (!pauses_get(d->pauses, tid, NULL, NULL))
        return err_set(e, ERR_THREAD_NOT_PAUSED, "Thread %d is not paused.", (int)tid);
    struct frame_call c = {.d = d, .tid = tid, .e = e, .regno = regno, .value = value,
                           .rc = -1};
    if (tracer_call(t, set_register_fn, &c, e) != 0)
        return -1;
    return c.rc;
}
