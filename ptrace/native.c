/*
 * native.c - the native collector's method table (native.h): a thin shell that
 * joins the tracer thread (tracer.h) with the pattern resolution (resolve.h) for
 * one launched program, and owns the DWARF caches for the daemon's lifetime.
 *
 * The tracer's callbacks arrive here with the target as their argument: those that
 * concern patterns go to resolve.c, the main process's end and the output settling
 * go back to the engine through collector_events.
 */
#include "ptrace/native.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dwarf/dwarf.h"
#include "dwarf/elfinfo.h"
#include "dwarf/frame.h"
#include "ptrace/debugger/debugger.h"
#include "ptrace/proc/ifunc.h"
#include "ptrace/inspect/memory.h"
#include "ptrace/resolve.h"
#include "ptrace/inspect/stacks.h"
#include "ptrace/tracer/tracer.h"
#include "ptrace/debugger/watchset.h"
#include "ptrace/vars/twatch.h"

#define NATIVE_RUNTIMES_MAX 8
_Static_assert(TRACER_RUNTIME_NEEDS == ADOPT_NEEDS_MAX, "one list of needed symbols");

struct collector_target {
    struct tracer *tracer;
    struct trace *trace;
    struct collector_events events;
    struct twatch_set *watches;  /* trace watches, read by the main image's hooks */
    struct debugger *debugger;   /* breakpoints, pauses, steps */
    pid_t pid;
    bool exec_rebind;            /* tracer thread: the main process exec'd */
    pthread_mutex_t final_lock;
    struct collector_counts *final; /* the counts when every process had ended */
    struct tracer_runtime runtimes[NATIVE_RUNTIMES_MAX]; /* launch's adopt_rules */
    int n_runtimes;
};

static void native_init(const char *cache_dir)
{
    dw_cache_set_dir(cache_dir);
}

static void native_shutdown(void)
{
    ifunc_forget_all();
    dw_cache_clear();
    dw_frame_cache_clear();
}

/* Any file the kernel can exec runs under ptrace, so the native collector accepts
 * every program (it is the last resort of the registry); what tracing will lack is
 * said before the program runs, since output capture works regardless. */
/* A program that gains privileges at exec (setuid, setgid, file capabilities) does
 * not when a tracer without those privileges traces it: the kernel drops them, so it
 * runs as the user, and may behave differently ("passwd -S" answered otherwise). */
static void warn_privileges(const char *path, struct collector_probe *out)
{
    struct stat st;
    if (geteuid() == 0 || stat(path, &st) != 0)
        return;
    bool setid = (st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
                 (st.st_mode & S_ISGID && st.st_gid != getegid());
    bool caps = getxattr(path, "security.capability", NULL, 0) > 0;
    if ((setid || caps) && out->n_warnings < 2)
        snprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0],
                 "%.200s is %s: traced by a user without those privileges it runs without "
                 "them (the kernel drops them under ptrace), so it may behave differently "
                 "than when run alone. Run strobe as the user it would run as to debug it "
                 "with them.", path, setid ? (st.st_mode & S_ISUID ? "setuid" : "setgid")
                                          : "given file capabilities");
}

static bool native_probe(const char *path, struct collector_probe *out)
{
    warn_privileges(path, out);
    struct elf_facts f;
    if (elf_facts_read(path, &f) != 0)
        return true;
    if (out->n_warnings >= 2)
        return true;
    if (!f.is_elf)
        snprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0],
                 "%.200s is not an ELF executable (a script?): its output is captured, but "
                 "function tracing applies to native programs.", path);
    else if (!f.has_dwarf)
        snprintf(out->warnings[out->n_warnings++], sizeof out->warnings[0],
                 "%.200s has no DWARF debug info: output is captured, but tracing will not "
                 "know argument types or source files. Rebuild with -g (or a debug "
                 "profile) if you need them.", path);
    return true;
}

static void on_entry(void *arg, struct tracer *t)
{
    struct collector_target *ct = arg;
    /* Launch watches first: the patterns armed next record them from their first
     * call. (A no-op after the first entry.) */
    twatch_apply_staged(ct->watches, tracer_pid(t));
    if (ct->exec_rebind) /* another program: its variables are elsewhere */
        twatch_rebind(ct->watches, tracer_pid(t));
    ct->exec_rebind = false;
    debugger_on_entry(ct->debugger, t);
    resolve_on_entry(ct->trace, t);
}

static void on_start(void *arg, struct tracer *t)
{
    struct collector_target *ct = arg;
    debugger_on_start(ct->debugger, t);
}

static void on_main_exec(void *arg)
{
    struct collector_target *ct = arg;
    ct->exec_rebind = true;
    debugger_main_exec(ct->debugger);
    resolve_main_exec(ct->trace);
}

static void on_image_entry(void *arg, struct tracer *t, pid_t pid, struct hooks *h)
{
    (void)t;
    struct collector_target *ct = arg;
    resolve_on_image(ct->trace, pid, h);
}

static bool on_adopt(void *arg, int runtime, pid_t pid, char *buf, size_t cap)
{
    struct collector_target *ct = arg;
    return ct->events.adopt(ct->events.arg, runtime, pid, buf, cap);
}

static void on_main_exit(void *arg, int wait_status)
{
    struct collector_target *ct = arg;
    resolve_entry_passed(ct->trace);
    twatch_apply_staged(ct->watches, 0); /* ended before its entry point */
    debugger_entry_passed(ct->debugger);
    ct->events.main_exit(ct->events.arg, wait_status);
}

static void settle_output(void *arg)
{
    struct collector_target *ct = arg;
    ct->events.settle_output(ct->events.arg);
}

static void drain_output(void *arg)
{
    struct collector_target *ct = arg;
    if (ct->events.drain_output)
        ct->events.drain_output(ct->events.arg);
}

static void output_follow(void *arg)
{
    struct collector_target *ct = arg;
    ct->events.output_follow(ct->events.arg);
}

static void output_wrote(void *arg, int stream, const char *prefix, size_t plen, size_t n,
                         int64_t ts_ns)
{
    struct collector_target *ct = arg;
    ct->events.output_wrote(ct->events.arg, stream, prefix, plen, n, ts_ns);
}

static void output_settled(void *arg, int64_t floor_ns, bool writing)
{
    struct collector_target *ct = arg;
    ct->events.output_settled(ct->events.arg, floor_ns, writing);
}

/* On the tracer thread: h's counts and overhead in the collector's words. */
static void fill_counts(struct hooks *h, struct collector_counts *out)
{
    struct hooks_count rows[COUNTS_MAX];
    memset(out, 0, sizeof *out);
    out->n = hooks_counts(h, rows, COUNTS_MAX);
    for (size_t i = 0; i < out->n; i++) {
        struct collector_fn_count *f = &out->fns[i];
        snprintf(f->function, sizeof f->function, "%s", rows[i].function);
        snprintf(f->function_raw, sizeof f->function_raw, "%s",
                 rows[i].function_raw ? rows[i].function_raw : "");
        f->calls = rows[i].calls;
        f->recorded = rows[i].recorded;
        f->sampled = rows[i].sampled;
        f->sampled_since_ns = rows[i].sampled_since;
        f->exact = !rows[i].lost;
        snprintf(f->lost, sizeof f->lost, "%s", rows[i].lost ? rows[i].lost : "");
        snprintf(f->mode, sizeof f->mode, "%s", rows[i].mode);
        f->ring_full = rows[i].ring_full;
    }
    struct hooks_overhead o;
    hooks_overhead(h, &o);
    out->stops = o.stops;
    out->busy_ns = o.busy_ns;
    out->run_ns = o.run_ns;
    out->last_second_busy_ns = o.last_second_busy_ns;
    out->last_second_run_ns = o.last_second_run_ns;
}

static void on_finish(void *arg, struct hooks *h)
{
    struct collector_target *ct = arg;
    struct collector_counts *c = malloc(sizeof *c);
    if (!c)
        return;
    fill_counts(h, c);
    c->final = true;
    pthread_mutex_lock(&ct->final_lock);
    ct->final = c;
    pthread_mutex_unlock(&ct->final_lock);
}

static void counts_now(struct tracer *t, void *arg)
{
    struct hooks *h = tracer_hooks(t);
    if (h)
        fill_counts(h, arg);
}

static int native_counts(struct collector_target *ct, struct collector_counts *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ct->final_lock);
    bool done = ct->final != NULL;
    if (done)
        *out = *ct->final;
    pthread_mutex_unlock(&ct->final_lock);
    struct strobe_error e;
    if (done || tracer_read(ct->tracer, counts_now, out, &e) == 0)
        return 0;
    pthread_mutex_lock(&ct->final_lock); /* it ended meanwhile */
    done = ct->final != NULL;
    if (done)
        *out = *ct->final;
    pthread_mutex_unlock(&ct->final_lock);
    return done ? 0 : -1;
}

static void target_free(struct collector_target *ct)
{
    free(ct->final);
    pthread_mutex_destroy(&ct->final_lock);
    resolve_free(ct->trace);
    twatch_set_free(ct->watches);
    debugger_free(ct->debugger);
    free(ct);
}

static int native_launch(const struct collector_launch *req, struct collector_target **out,
                         pid_t *pid, struct strobe_error *e)
{
    struct collector_target *ct = calloc(1, sizeof *ct);
    if (ct)
        pthread_mutex_init(&ct->final_lock, NULL);
    if (!ct || !(ct->trace = resolve_new(req->project_root)) ||
        !(ct->watches = twatch_set_new(req->project_root))) {
        if (ct)
            resolve_free(ct->trace);
        free(ct);
        return err_set(e, ERR_INTERNAL, "out of memory launching %s", req->path);
    }
    ct->events = req->events;
    for (int i = 0; i < req->n_adopt_rules && i < NATIVE_RUNTIMES_MAX; i++) {
        const struct collector_adopt_rule *r = req->adopt_rules[i];
        struct tracer_runtime *tr = &ct->runtimes[ct->n_runtimes++];
        tr->module_hint = r->module_hint;
        memcpy(tr->needs, r->needs, sizeof tr->needs);
        tr->entry = r->entry;
        tr->call = r->call;
    }
    struct debugger_config dc = {.sink = req->sink, .project_root = req->project_root,
                                 .paused = req->events.paused, .arg = req->events.arg};
    if (!(ct->debugger = debugger_new(&dc))) {
        target_free(ct);
        return err_set(e, ERR_INTERNAL, "out of memory launching %s", req->path);
    }
    int n_staged = debugger_stage(ct->debugger, req->breakpoints, req->n_breakpoints);
    int n_preloaded = resolve_preload(ct->trace, req->patterns, req->n_patterns, req->depth,
                                      req->depth_asked);
    if (twatch_stage(ct->watches, req->watches, req->n_watches) != 0) {
        target_free(ct);
        return err_set(e, ERR_INTERNAL, "out of memory launching %s", req->path);
    }
    struct tracer_spec spec = {
        .path = req->path, .argv = req->argv, .envp = req->envp, .cwd = req->cwd,
        .stdin_fd = req->stdin_fd, .stdout_fd = req->stdout_fd, .stderr_fd = req->stderr_fd,
        .on_main_exit = on_main_exit, .on_finish = on_finish, .settle_output = settle_output,
        .drain_output = drain_output,
        .on_main_exec = on_main_exec, .on_image_entry = on_image_entry, .arg = ct,
        .sink = req->sink,
        .tuning = {req->tuning.hot_calls_per_second, req->tuning.capture_exits,
                   req->tuning.pin_cpu, req->tuning.sample_after,
                   req->tuning.overhead_budget_percent, req->tuning.fast},
        .on_entry = on_entry, .on_start = on_start,
        .stop_at_entry = n_preloaded > 0 || req->n_watches > 0 || n_staged > 0,
        .watches = ct->watches,
        .runtimes = ct->runtimes, .n_runtimes = ct->n_runtimes,
        .adopt = req->events.adopt ? on_adopt : NULL,
    };
    spec.tuning.order_output = ct->events.drain_output != NULL;
    if (ct->events.drain_output && ct->events.output_follow && ct->events.output_wrote &&
        ct->events.output_settled) {
        spec.output_follow = output_follow;
        spec.output_wrote = output_wrote;
        spec.output_settled = output_settled;
    }
    if (tracer_start(&spec, &ct->tracer, pid, e) != 0) {
        target_free(ct);
        return -1;
    }
    ct->pid = *pid;
    *out = ct;
    return 0;
}

static int native_set_patterns(struct collector_target *ct, const char *const *add, int n_add,
                               const char *const *remove, int n_remove, int depth,
                               struct trace_result *res, struct strobe_error *e)
{
    return resolve_update(ct->trace, ct->tracer, add, n_add, remove, n_remove, depth, res, e);
}

static void native_describe(struct collector_target *ct, struct trace_result *res)
{
    resolve_describe(ct->trace, res);
}

static void native_kill(struct collector_target *ct)
{
    tracer_kill(ct->tracer);
}

static bool native_finished(struct collector_target *ct)
{
    return tracer_finished(ct->tracer);
}

static int native_stacks(struct collector_target *ct, const struct collector_stacks_request *req,
                         struct collector_stacks *out, struct strobe_error *e)
{
    if (stacks_snapshot(ct->tracer, req, out, e) != 0)
        return -1;
    /* Every thread is stopped for the snapshot; those the debugger holds say so. */
    struct collector_pause ps[64];
    int n = debugger_pauses(ct->debugger, ps, 64);
    for (size_t i = 0; i < out->n_threads; i++)
        for (int k = 0; k < n && k < 64; k++)
            if (out->threads[i].tid == ps[k].tid)
                snprintf(out->threads[i].state, sizeof out->threads[i].state, "paused");
    return 0;
}

static int native_trace_watches(struct collector_target *ct,
                                const struct trace_watch_spec *add, int n_add,
                                const char *const *remove, int n_remove,
                                struct trace_watch_result *out, struct strobe_error *e)
{
    pid_t pid = tracer_finished(ct->tracer) ? 0 : ct->pid;
    return twatch_update(ct->watches, pid, add, n_add, remove, n_remove, out, e);
}

static int set_register(void *arg, pid_t tid, int regno, uint64_t value,
                        struct strobe_error *e)
{
    struct collector_target *ct = arg;
    return debugger_set_register(ct->debugger, ct->tracer, tid, regno, value, e);
}

static int native_memory(struct collector_target *ct, const struct collector_mem_request *req,
                         struct collector_mem_result *out, struct strobe_error *e)
{
    if (!req->tid)
        return memory_access(ct->tracer, req, NULL, out, e);
    struct memory_frame mf = {.set_register = req->frame == 0 ? set_register : NULL,
                              .arg = ct};
    if (debugger_frame(ct->debugger, ct->tracer, req->tid, req->frame, &mf.f, e) != 0)
        return -1;
    return memory_access(ct->tracer, req, &mf, out, e);
}

static int native_breakpoint_set(struct collector_target *ct,
                                 const struct collector_breakpoint *bp,
                                 struct collector_bp_info *out, struct strobe_error *e)
{
    return debugger_breakpoint_set(ct->debugger, ct->tracer, bp, out, e);
}

static int native_breakpoint_clear(struct collector_target *ct, int id, struct strobe_error *e)
{
    return debugger_breakpoint_clear(ct->debugger, ct->tracer, id, e);
}

static int native_breakpoint_list(struct collector_target *ct, struct collector_bp_info *out,
                                  int max)
{
    return debugger_breakpoint_list(ct->debugger, out, max);
}

static int native_breakpoints_staged(struct collector_target *ct,
                                     struct collector_bp_info *out, int max)
{
    return debugger_breakpoints_staged(ct->debugger, out, max);
}

static int native_pauses(struct collector_target *ct, struct collector_pause *out, int max)
{
    return debugger_pauses(ct->debugger, out, max);
}

static int native_pause(struct collector_target *ct, pid_t pid, struct strobe_error *e)
{
    return debugger_pause(ct->debugger, ct->tracer, pid, e);
}

static int native_resume(struct collector_target *ct, pid_t tid, enum collector_resume how,
                         struct strobe_error *e)
{
    return debugger_resume(ct->debugger, ct->tracer, tid, how, e);
}

static int native_resume_many(struct collector_target *ct, const pid_t *tids, int n,
                              struct strobe_error *e)
{
    return debugger_resume_many(ct->debugger, ct->tracer, tids, n, e);
}

static int native_evaluate(struct collector_target *ct, pid_t pid, const char *condition,
                           bool *result, char *values, size_t cap, struct strobe_error *e)
{
    return debugger_evaluate(ct->tracer, pid, condition, result, values, cap, e);
}

static int native_watch_set(struct collector_target *ct,
                            const struct collector_watch_request *w,
                            struct collector_watch_info *out, struct strobe_error *e)
{
    return watchset_set(ct->tracer, w, out, e);
}

static int native_watch_clear(struct collector_target *ct, int id, struct strobe_error *e)
{
    return watchset_clear(ct->tracer, id, e);
}

static int native_watch_list(struct collector_target *ct, struct collector_watch_info *out,
                             int max)
{
    return watchset_list(ct->tracer, out, max);
}

static void native_join(struct collector_target *ct)
{
    tracer_join(ct->tracer);
    target_free(ct);
}

static void set_mode(struct tracer *t, void *arg)
{
    tracer_set_fast(t, *(bool *)arg);
}

static int native_trace_mode(struct collector_target *ct, bool fast, struct strobe_error *e)
{
    return tracer_call(ct->tracer, set_mode, &fast, e);
}

const struct collector_methods native_collector = {
    .name = "native",
    .language = "native code (C, C++, Rust)",
    .init = native_init,
    .shutdown = native_shutdown,
    .probe = native_probe,
    .launch = native_launch,
    .set_patterns = native_set_patterns,
    .describe = native_describe,
    .counts = native_counts,
    .kill = native_kill,
    .finished = native_finished,
    .join = native_join,
    .memory = native_memory,
    .stacks = native_stacks,
    .stacks_of = stacks_snapshot_pids,
    .watch_set = native_watch_set,
    .watch_clear = native_watch_clear,
    .watch_list = native_watch_list,
    .trace_watches = native_trace_watches,
    .breakpoint_set = native_breakpoint_set,
    .breakpoint_clear = native_breakpoint_clear,
    .breakpoint_list = native_breakpoint_list,
    .breakpoints_staged = native_breakpoints_staged,
    .pauses = native_pauses,
    .pause = native_pause,
    .resume = native_resume,
    .resume_many = native_resume_many,
    .trace_mode = native_trace_mode,
    .evaluate = native_evaluate,
};
