/*
 * tracer_tracees.c - what the tracer owns, and the events that change it: the
 * processes (the main one and its forks, for tracer_kill and tracer_has_process),
 * every thread's record (struct tthread), the address spaces (struct space: the
 * main image, and each child that exec'd another program), and what fork, vfork,
 * clone, exec, PTRACE_EVENT_EXIT and the end of a tracee do to them.
 *
 * Threads other than group leaders are not processes. A child that exec'd gets a
 * space of its own, armed at its entry point; the main process exec'ing starts its
 * space over. A child process's end is a process_exit event; the main process's end
 * goes to the session (on_main_exit).
 */
#include <elf.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "base/clock.h"
#include "base/event.h"
#include "base/log.h"
#include "base/u64map.h"
#include "ptrace/patch/bptab.h"
#include "ptrace/patch/step.h"
#include "ptrace/tracer/crash.h"
#include "ptrace/hooks/hooks.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/tracer/tracer_internal.h"

/* ---- processes ------------------------------------------------------------------- */

void tracer_tracees_procs_add(struct tracer *t, pid_t pid)
{
    pthread_mutex_lock(&t->lock);
    if (t->n_procs < MAX_PROCS)
        t->procs[t->n_procs++] = pid;
    /* A child forked while the kill went out was not in the list then: left alone it
     * would keep the tracer (and the stop waiting for it) from ever ending. */
    if (t->killing)
        kill(pid, SIGKILL);
    pthread_mutex_unlock(&t->lock);
}

/* Whether pid was one of the processes (not a mere thread). */
bool tracer_tracees_procs_remove(struct tracer *t, pid_t pid)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs && !found; i++)
        if (t->procs[i] == pid) {
            t->procs[i] = t->procs[--t->n_procs];
            found = true;
        }
    pthread_mutex_unlock(&t->lock);
    return found;
}

bool tracer_has_process(struct tracer *t, pid_t pid)
{
    bool found = false;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n_procs && !found; i++)
        found = t->procs[i] == pid;
    pthread_mutex_unlock(&t->lock);
    return found;
}

void tracer_kill(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    t->killing = true;
    for (int i = 0; i < t->n_procs; i++)
        kill(t->procs[i], SIGKILL);
    pthread_mutex_unlock(&t->lock);
}

/* ---- threads ------------------------------------------------------------------- */

/* A tid list of tracer_hold's, traps' parked threads and unclaimed tracees: kept here,
 * below every file that fills one. */
void tracer_tracees_held_add(struct held *hd, pid_t tid)
{
    if (hd->n == hd->cap) {
        size_t cap = hd->cap ? 2 * hd->cap : 16;
        pid_t *p = realloc(hd->tids, cap * sizeof *p);
        if (!p)
            return;
        hd->tids = p;
        hd->cap = cap;
    }
    hd->tids[hd->n++] = tid;
}

struct tthread *tracer_tracees_thread_add(struct tracer *t, pid_t tid, pid_t tgid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th)
        return th;
    th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    *th = (struct tthread){.tid = tid, .tgid = tgid, .state = TS_RUNNING, .pending = -1};
    if (u64map_put(&t->threads, (uint64_t)tid, th) != 0) {
        free(th);
        return NULL;
    }
    return th;
}

/* A thread's record; one that stops before its creator's clone event was seen is
 * added here. */
struct tthread *tracer_tracees_thread_of(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    return th ? th : tracer_tracees_thread_add(t, tid, procmem_tgid(tid));
}

static void thread_drop(struct tracer *t, pid_t tid)
{
    struct tthread *th = u64map_del(&t->threads, (uint64_t)tid);
    if (th && t->debugger.thread_gone)
        t->debugger.thread_gone(t, tid, t->debugger.arg);
    free(th);
}

/* Resumes tid from a stop, delivering sig: a thread being stepped steps on. */
void tracer_tracees_cont(struct tracer *t, pid_t tid, int sig)
{
    struct tthread *th = u64map_get(&t->threads, (uint64_t)tid);
    if (th && th->stepping)
        step_resume(tid, sig);
    else
        ptrace(PTRACE_CONT, tid, 0, (void *)(uintptr_t)sig);
}

/* ---- address spaces -------------------------------------------------------------- */

/* The space process tgid belongs to, or NULL. */
struct space *tracer_tracees_space_of_process(struct tracer *t, pid_t tgid)
{
    if (t->main.bp && bptab_has_process(t->main.bp, tgid))
        return &t->main;
    for (int i = 0; i < t->n_images; i++)
        if (bptab_has_process(t->images[i].bp, tgid))
            return &t->images[i];
    return NULL;
}

struct space *tracer_tracees_space_of(struct tracer *t, pid_t tid)
{
    struct tthread *th = tracer_tracees_thread_of(t, tid);
    return th ? tracer_tracees_space_of_process(t, th->tgid) : NULL;
}

/* The space whose image process pid exec'd (spaces move when one is dropped: find
 * them again after anything that may reap). */
struct space *tracer_tracees_space_by_pid(struct tracer *t, pid_t pid)
{
    if (pid == t->main.pid)
        return &t->main;
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid)
            return &t->images[i];
    return NULL;
}

static struct hooks *make_hooks(struct tracer *t, pid_t pid, struct bptab *bp)
{
    if (!t->spec.sink.ring)
        return NULL;
    struct hooks_config cfg = {
        .pid = pid, .sink = t->spec.sink, .tuning = t->spec.tuning, .seq = &t->seq,
        .bp = bp, .watches = pid == t->main_pid ? t->spec.watches : NULL,
        .output = t->output,
    };
    struct hooks *h = hooks_new(&cfg);
    if (h)
        hooks_adopt(h, pid);
    return h;
}

/* A fresh space for the image process pid just exec'd. False if out of memory. */
bool tracer_tracees_space_init(struct tracer *t, struct space *sp, pid_t pid)
{
    *sp = (struct space){.pid = pid, .bp = bptab_new()};
    if (!sp->bp || !bptab_add_process(sp->bp, pid)) {
        bptab_free(sp->bp);
        sp->bp = NULL;
        return false;
    }
    sp->hooks = make_hooks(t, pid, sp->bp);
    return true;
}

void tracer_tracees_space_free(struct space *sp)
{
    hooks_free(sp->hooks);
    bptab_free(sp->bp);
    sp->hooks = NULL;
    sp->bp = NULL;
}

void tracer_tracees_image_drop(struct tracer *t, pid_t pid)
{
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].pid == pid) {
            tracer_tracees_space_free(&t->images[i]);
            t->images[i] = t->images[--t->n_images];
            return;
        }
}

/* ---- events --------------------------------------------------------------------------- */

/* PTRACE_EVENT_EXIT of tid: the thread runs no more code; it resumes to end. */
void tracer_tracees_on_exit_event(struct tracer *t, pid_t tid)
{
    /* What it wrote is read now, before anyone can see it gone: a parent's waitpid
     * returns once the tracer has reaped the child, and the parent's next line could
     * otherwise be read in the same turn as the child's last one, and stamped first. */
    if (t->spec.drain_output)
        t->spec.drain_output(t->spec.arg);
    crash_on_exit_event(t->crash, tid);
    struct tthread *th = tracer_tracees_thread_of(t, tid);
    struct space *sp = th ? tracer_tracees_space_of_process(t, th->tgid) : NULL;
    if (sp && sp->hooks)
        hooks_on_exit_event(sp->hooks, tid); /* counters read while memory is there */
    if (th) {
        /* Not held any more, even if it was: a held thread that is killed leaves
         * its stop, and the stop it had pending is moot. */
        th->exiting = true;
        th->state = TS_RUNNING;
        th->pending = -1;
    }
    ptrace(PTRACE_CONT, tid, 0, 0);
}

/* An int3 on the entry point of sp's process: reached once the dynamic loader has
 * mapped every library, before any code of the program runs. */
void tracer_tracees_arm_entry(struct space *sp)
{
    uint64_t entry = procmem_auxv(sp->pid, AT_ENTRY);
    if (entry && bptab_insert(sp->bp, entry, BP_ENTRY))
        sp->entry = entry;
    else
        log_warn("pid %d: cannot stop at the entry point; pending patterns are armed late",
                 sp->pid);
}

/* PTRACE_EVENT_EXEC of pid: the old image and its breakpoints are gone. The main
 * process starts over with a fresh space (the session re-arms at its entry point);
 * a child becomes a space of its own, armed at its entry point. */
void tracer_tracees_on_exec(struct tracer *t, pid_t pid)
{
    /* A thread other than the leader exec'd: it took the leader's tid and the
     * kernel reports no exit for its old one. */
    unsigned long former = 0;
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) == 0 && (pid_t)former != pid) {
        thread_drop(t, (pid_t)former);
        hwwatch_on_exit(t->hw, (pid_t)former, false);
    }
    hwwatch_on_exec(t->hw, pid);
    /* pid's record was the old leader's, which was exiting: it is now the thread
     * that exec'd, the one thread of the new image. */
    struct tthread *th = tracer_tracees_thread_of(t, pid);
    if (th) {
        th->tgid = pid;
        th->exiting = false;
        th->in_vfork = false;
    }
    if (pid == t->main_pid) {
        tracer_tracees_space_free(&t->main);
        for (int i = 0; i < t->n_images; i++)
            if (t->images[i].hooks)
                hooks_forget_process(t->images[i].hooks, pid);
        if (!tracer_tracees_space_init(t, &t->main, pid))
            return;
        crash_on_exec(t->crash, pid, t->main.bp);
        if (!t->main.hooks)
            return;
        if (t->spec.on_main_exec)
            t->spec.on_main_exec(t->spec.arg);
        if (t->spec.on_entry)
            tracer_tracees_arm_entry(&t->main);
        return;
    }
    struct space *old = tracer_tracees_space_of_process(t, pid);
    if (old && old->pid != pid) {
        bptab_drop_process(old->bp, pid);
        if (old->hooks)
            hooks_forget_process(old->hooks, pid);
    }
    tracer_tracees_image_drop(t, pid);
    if (t->n_images == MAX_IMAGES) {
        log_warn("pid %d: more than %d exec'd processes; this one is not traced", pid,
                 MAX_IMAGES);
        return;
    }
    struct space *sp = &t->images[t->n_images];
    if (!tracer_tracees_space_init(t, sp, pid))
        return;
    crash_on_exec(t->crash, pid, sp->bp);
    if (!sp->hooks) {
        tracer_tracees_space_free(sp);
        return;
    }
    t->n_images++;
    tracer_tracees_arm_entry(sp);
}

struct tthread *tracer_tracees_on_new(struct tracer *t, pid_t pid, int event)
{
    unsigned long msg = 0;
    if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) != 0)
        return NULL;
    pid_t child = (pid_t)msg;
    bool new_process = event != PTRACE_EVENT_CLONE;
    struct tthread *parent = tracer_tracees_thread_of(t, pid);
    pid_t parent_tgid = parent ? parent->tgid : procmem_tgid(pid);
    struct tthread *born = tracer_tracees_thread_add(t, child, new_process ? child : parent_tgid);
    struct tthread *waiting = born && born->state == TS_UNCLAIMED ? born : NULL;
    if (parent && event == PTRACE_EVENT_VFORK)
        parent->in_vfork = true;
    if (t->pinned)
        sched_setaffinity(child, sizeof t->original_cpus, &t->original_cpus);
    struct space *sp = tracer_tracees_space_of_process(t, parent_tgid);
    if (new_process) {
        tracer_tracees_procs_add(t, child);
        hwwatch_on_fork(t->hw, parent_tgid, child);
        if (sp)
            bptab_add_process(sp->bp, child);
    }
    if (sp && sp->hooks)
        hooks_on_clone(sp->hooks, pid, child, new_process, event == PTRACE_EVENT_VFORK);
    return waiting;
}

void tracer_tracees_resume_claimed(struct tracer *t, struct tthread *th)
{
    pthread_mutex_lock(&t->lock);
    bool killing = t->killing;
    pthread_mutex_unlock(&t->lock);
    if (killing) /* orphaned by the kill (its creator died forking it): it goes too */
        kill(th->tid, SIGKILL);
    th->state = TS_RUNNING;
    hwwatch_on_stop(t->hw, th->tid, th->tgid); /* a new tracee has no debug registers */
    tracer_tracees_cont(t, th->tid, 0);
}

/* The initial stop of an auto-attached tracee is PTRACE_EVENT_STOP with SIGTRAP;
 * a tracee the tracer knows was announced by its creator's event already. */
bool tracer_tracees_first_stop(struct tracer *t, pid_t tid, int status)
{
    if ((status >> 16) != PTRACE_EVENT_STOP || WSTOPSIG(status) != SIGTRAP ||
        u64map_get(&t->threads, (uint64_t)tid))
        return false;
    pid_t tgid = procmem_tgid(tid);
    struct tthread *th = tracer_tracees_thread_add(t, tid, tgid);
    if (!th)
        return false;
    th->state = TS_UNCLAIMED;
    th->creator = tgid != tid ? tgid : procmem_parent(tid);
    if (tgid == tid && !tracer_has_process(t, th->creator)) {
        /* Its creator is gone (killed while it forked: the child went to the
         * reaper) and its fork event will never come: nobody would claim it, and
         * the tracer would wait for it for ever. It is the program's still. */
        tracer_tracees_procs_add(t, tid);
        tracer_tracees_resume_claimed(t, th);
    }
    return true;
}

struct unclaimed_scan {
    pid_t creator;
    struct held found;
};

static void scan_unclaimed(uint64_t key, void *value, void *arg)
{
    (void)key;
    const struct tthread *th = value;
    struct unclaimed_scan *s = arg;
    if (th->state == TS_UNCLAIMED && th->creator == s->creator)
        tracer_tracees_held_add(&s->found, th->tid);
}

void tracer_tracees_release_unclaimed(struct tracer *t, pid_t tgid)
{
    struct unclaimed_scan s = {.creator = tgid};
    u64map_each(&t->threads, scan_unclaimed, &s);
    for (size_t i = 0; i < s.found.n; i++) {
        struct tthread *th = u64map_get(&t->threads, (uint64_t)s.found.tids[i]);
        if (th)
            tracer_tracees_resume_claimed(t, th);
    }
    free(s.found.tids);
}

/* A child process ended: its process_exit event (the main process's comes from the
 * session, behind the last of its output). */
static void record_child_exit(struct tracer *t, pid_t pid, int status)
{
    if (!t->spec.sink.ring)
        return;
    char text[128], data[96];
    event_describe_exit(pid, status, false, text, sizeof text, data, sizeof data);
    if (t->spec.drain_output)
        t->spec.drain_output(t->spec.arg);
    struct event ev = event_sink_init(&t->spec.sink, EV_PROCESS_EXIT, mono_ns());
    ev.pid = pid;
    ev.tid = pid;
    ev.text = text;
    ev.data = data;
    event_sink_push(&t->spec.sink, &ev);
}

/* A tracee is gone: a thread, a child process or the main process. Threads other
 * than a group leader are not in procs. */
void tracer_tracees_reap(struct tracer *t, pid_t pid, int status)
{
    bool process = tracer_tracees_procs_remove(t, pid);
    /* No record is made for a tid that is gone already. */
    struct tthread *th = u64map_get(&t->threads, (uint64_t)pid);
    struct space *sp = tracer_tracees_space_of_process(t, th ? th->tgid : pid);
    if (sp && sp->hooks)
        hooks_on_exit(sp->hooks, pid);
    thread_drop(t, pid);
    hwwatch_on_exit(t->hw, pid, process);
    if (process) {
        if (sp)
            bptab_drop_process(sp->bp, pid);
        crash_on_process_exit(t->crash, pid);
        tracer_tracees_image_drop(t, pid);
        tracer_tracees_release_unclaimed(t, pid);
    }
    if (pid == t->main_pid) {
        t->main_alive = false;
        if (t->spec.on_main_exit)
            t->spec.on_main_exit(t->spec.arg, status);
    } else if (process) {
        record_child_exit(t, pid, status);
    }
}
