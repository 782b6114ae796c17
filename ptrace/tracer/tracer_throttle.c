/*
 * tracer_throttle.c - the code changes sampling asks for (hooks_tick: a sampled
 * function's int3 replaced by its counting jump, or back at the end of a back-off),
 * made under one stop of every thread of the space, after a hit throttled a
 * function or when a back-off ends. The re-arm timer (SIG_KICK to the tracer thread,
 * which interrupts the loop's waitpid) stays armed while anything is left to do.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ptrace/hooks/hooks.h"
#include "ptrace/tracer/tracer_internal.h"

/* The timer fires SIG_KICK at the tracer thread itself (SIGEV_THREAD_ID). */
void tracer_throttle_timer_create(struct tracer *t)
{
    struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIG_KICK};
    sev._sigev_un._tid = t->thread_tid;
    t->has_timer = timer_create(CLOCK_MONOTONIC, &sev, &t->rearm_timer) == 0;
}

void tracer_throttle_timer_delete(struct tracer *t)
{
    if (t->has_timer)
        timer_delete(t->rearm_timer);
}

/* Arms the re-arm timer to fire in ms unless it fires sooner already. It then
 * fires again every REARM_RETRY_MS until tracer_throttle_tick() finds nothing left to re-arm: a
 * kick that lands while the tracer is not in the loop's waitpid (holding, or
 * stepping) interrupts nothing and is lost, the next one is not. */
static void arm_timer(struct tracer *t, int ms)
{
    if (ms < 0 || !t->has_timer)
        return;
    struct itimerspec cur;
    int64_t want = (int64_t)ms * 1000000;
    if (timer_gettime(t->rearm_timer, &cur) == 0) {
        int64_t left = (int64_t)cur.it_value.tv_sec * 1000000000 + cur.it_value.tv_nsec;
        if (left > 0 && left <= want)
            return;
    }
    struct itimerspec its = {
        .it_value = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L},
        .it_interval = {.tv_nsec = REARM_RETRY_MS * 1000000L},
    };
    timer_settime(t->rearm_timer, 0, &its, NULL);
}

/* Applies the throttle changes of the hooks of the space of pid (hooks_tick) under
 * one stop of all its threads, when there are any at time now. */
static void patch_throttled(struct tracer *t, pid_t pid, int64_t now)
{
    struct space *sp = tracer_tracees_space_by_pid(t, pid);
    if (!sp || !sp->hooks || !hooks_patch_due(sp->hooks, now))
        return;
    struct held hd;
    tracer_hold(t, sp, 0, &hd);
    sp = tracer_tracees_space_by_pid(t, pid);
    int ms = sp && sp->hooks ? hooks_tick(sp->hooks) : -1;
    tracer_hold_release(t, &hd);
    arm_timer(t, ms);
}

/* Drains the fast path's records of every space (hooks.h, "Fast path"); whether
 * any space records through it. */
static bool drain_fast(struct tracer *t)
{
    bool active = false;
    if (t->main.hooks && hooks_fast_active(t->main.hooks)) {
        hooks_fast_drain(t->main.hooks);
        active = true;
    }
    for (int i = 0; i < t->n_images; i++)
        if (t->images[i].hooks && hooks_fast_active(t->images[i].hooks)) {
            hooks_fast_drain(t->images[i].hooks);
            active = true;
        }
    return active;
}

void tracer_throttle_fast_timer(struct tracer *t)
{
    if (t->fast_timer_on)
        return;
    bool active = t->main.hooks && hooks_fast_active(t->main.hooks);
    for (int i = 0; i < t->n_images && !active; i++)
        active = t->images[i].hooks && hooks_fast_active(t->images[i].hooks);
    if (active) {
        t->fast_timer_on = true;
        arm_timer(t, FAST_DRAIN_MS);
    }
}

/* Patches what is due at time now in every space (now 0: only the functions hits
 * throttled), and drains the fast path's rings. The timer stops once no space has
 * anything left to do. */
void tracer_throttle_tick(struct tracer *t, int64_t now)
{
    pid_t pids[MAX_IMAGES + 1];
    int n = 0;
    pids[n++] = t->main.pid;
    for (int i = 0; i < t->n_images; i++)
        pids[n++] = t->images[i].pid;
    for (int i = 0; i < n; i++)
        patch_throttled(t, pids[i], now);
    if (!now || !t->has_timer)
        return;
    t->fast_timer_on = drain_fast(t);
    if (t->fast_timer_on)
        arm_timer(t, FAST_DRAIN_MS);
    bool scheduled = t->fast_timer_on ||
                     (t->main.hooks && hooks_patch_due(t->main.hooks, INT64_MAX));
    for (int i = 0; i < t->n_images && !scheduled; i++)
        scheduled = t->images[i].hooks && hooks_patch_due(t->images[i].hooks, INT64_MAX);
    if (!scheduled) {
        struct itimerspec off = {0};
        timer_settime(t->rearm_timer, 0, &off, NULL);
    }
}
