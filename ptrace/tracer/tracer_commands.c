/*
 * tracer_commands.c - how other threads get work done on the tracer thread
 * (tracer_call, tracer_read: one command at a time, a SIG_KICK interrupting the
 * loop's waitpid, run there with the main image's threads held or not), and the
 * walks a command may make over the other images and every thread
 * (tracer_each_image, tracer_each_thread).
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/u64map.h"
#include "ptrace/tracer/tracer_internal.h"

/* Runs the pending command with every thread of the main image held. */
void tracer_commands_run(struct tracer *t)
{
    pthread_mutex_lock(&t->lock);
    bool pending = t->cmd_pending;
    pthread_mutex_unlock(&t->lock);
    if (!pending)
        return;
    bool ran = false;
    if (t->main_alive && !t->cmd_hold) {
        t->cmd_fn(t, t->cmd_arg);
        ran = true;
    } else if (t->main_alive) {
        struct held hd;
        tracer_hold(t, &t->main, 0, &hd);
        if (t->main_alive) {
            t->cmd_fn(t, t->cmd_arg);
            ran = true;
        }
        tracer_hold_release(t, &hd);
    }
    pthread_mutex_lock(&t->lock);
    t->cmd_pending = false;
    t->cmd_ran = ran;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
}

static int call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                bool hold, struct strobe_error *e)
{
    if (pthread_equal(pthread_self(), t->thread)) {
        fn(t, arg);
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    while (t->cmd_pending && !t->finished) /* one command at a time */
        pthread_cond_wait(&t->cmd_done, &t->lock);
    if (t->finished || !t->main_alive) {
        pthread_mutex_unlock(&t->lock);
        return err_set(e, ERR_PROCESS_EXITED, "the target process has exited; its session "
                       "is still queryable but cannot be traced any more.");
    }
    t->cmd_fn = fn;
    t->cmd_arg = arg;
    t->cmd_hold = hold;
    t->cmd_pending = true;
    t->cmd_ran = false;
    while (t->cmd_pending && !t->finished) {
        /* Kick until the tracer has taken the command: a kick that lands just before
         * it blocks in waitpid is lost, the next one is not. */
        syscall(SYS_tgkill, getpid(), t->thread_tid, SIG_KICK);
        struct timespec until = clock_after_ms(CLOCK_REALTIME, 2);
        pthread_cond_timedwait(&t->cmd_done, &t->lock, &until);
    }
    bool ran = t->cmd_ran;
    t->cmd_pending = false;
    pthread_cond_broadcast(&t->cmd_done);
    pthread_mutex_unlock(&t->lock);
    if (!ran)
        return err_set(e, ERR_PROCESS_EXITED, "the target process exited before the change "
                       "could be made; its session is still queryable.");
    return 0;
}

int tracer_call(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e)
{
    return call(t, fn, arg, true, e);
}

int tracer_read(struct tracer *t, void (*fn)(struct tracer *t, void *arg), void *arg,
                struct strobe_error *e)
{
    return call(t, fn, arg, false, e);
}

void tracer_each_image(struct tracer *t, void (*fn)(pid_t pid, struct hooks *h, void *arg),
                       void *arg)
{
    /* Holding may reap, and handling held stops may drop or add images: walk a
     * copy of the pids and find each space again. */
    pid_t pids[MAX_IMAGES];
    int n = t->n_images;
    for (int i = 0; i < n; i++)
        pids[i] = t->images[i].pid;
    for (int i = 0; i < n; i++) {
        struct space *sp = tracer_tracees_space_by_pid(t, pids[i]);
        if (!sp)
            continue;
        struct held hd;
        tracer_hold(t, sp, 0, &hd);
        sp = tracer_tracees_space_by_pid(t, pids[i]);
        if (sp && sp->hooks)
            fn(pids[i], sp->hooks, arg);
        tracer_hold_release(t, &hd);
    }
}

struct thread_scan {
    struct tthread **ths;
    size_t n, cap;
};

static void scan_all(uint64_t key, void *value, void *arg)
{
    (void)key;
    struct thread_scan *s = arg;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        struct tthread **p = realloc(s->ths, cap * sizeof *p);
        if (!p)
            return;
        s->ths = p;
        s->cap = cap;
    }
    s->ths[s->n++] = value;
}

static int by_process_then_tid(const void *a, const void *b)
{
    const struct tthread *x = *(struct tthread *const *)a, *y = *(struct tthread *const *)b;
    if (x->tgid != y->tgid)
        return x->tgid < y->tgid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void tracer_each_thread(struct tracer *t,
                        void (*fn)(pid_t tid, pid_t tgid, bool stopped, struct hooks *h,
                                   void *arg),
                        void *arg)
{
    /* Every image is held at once, so that the snapshot is one instant of the whole
     * program; holding may reap and drop images, hence the pids. */
    pid_t pids[MAX_IMAGES];
    struct held hds[MAX_IMAGES];
    int n = t->n_images;
    for (int i = 0; i < n; i++)
        pids[i] = t->images[i].pid;
    for (int i = 0; i < n; i++) {
        struct space *sp = tracer_tracees_space_by_pid(t, pids[i]);
        hds[i] = (struct held){0};
        if (sp)
            tracer_hold(t, sp, 0, &hds[i]);
    }
    struct thread_scan s = {0};
    u64map_each(&t->threads, scan_all, &s);
    if (s.n)
        qsort(s.ths, s.n, sizeof *s.ths, by_process_then_tid);
    for (size_t i = 0; i < s.n; i++) {
        const struct tthread *th = s.ths[i];
        struct space *sp = tracer_tracees_space_of_process(t, th->tgid);
        bool stopped = th->state != TS_RUNNING && !th->in_vfork && !th->exiting;
        fn(th->tid, th->tgid, stopped, sp ? sp->hooks : NULL, arg);
    }
    free(s.ths);
    for (int i = 0; i < n; i++)
        tracer_hold_release(t, &hds[i]);
}
