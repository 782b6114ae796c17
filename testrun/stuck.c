/*
 * stuck.c - the stuck-test detector. See stuck.h.
 */
#include "testrun/stuck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define NS_PER_MS 1000000LL

void stuck_init(struct stuck *s, int64_t now_ns)
{
    *s = (struct stuck){.last_output_ns = now_ns, .cpu_pct = -1};
}

void stuck_free(struct stuck *s)
{
    free(s->signature);
    s->signature = NULL;
}

static void forget_stacks(struct stuck *s)
{
    free(s->signature);
    s->signature = NULL;
    s->same = 0;
    s->sleeping = false;
    s->warning[0] = '\0';
}

void stuck_output(struct stuck *s, int64_t now_ns)
{
    s->last_output_ns = now_ns;
    if (s->signature)
        forget_stacks(s);
}

void stuck_cpu(struct stuck *s, int64_t now_ns, int64_t cpu_ns)
{
    if (s->last_sample_ns) {
        int64_t wall = now_ns - s->last_sample_ns;
        int64_t used = cpu_ns - s->last_cpu_ns;
        /* A process that ended takes its CPU time with it: never below zero. */
        s->cpu_pct = wall > 0 ? (int)((used > 0 ? used : 0) * 100 / wall) : -1;
    }
    s->last_sample_ns = now_ns;
    s->last_cpu_ns = cpu_ns;
}

bool stuck_wants_stacks(const struct stuck *s, int64_t now_ns)
{
    return s->cpu_pct >= 0 && now_ns - s->last_output_ns >= STUCK_SILENCE_MS * NS_PER_MS;
}

/* Every thread's frames by function name: what must stay the same. *sleeping: the
 * program waits for a deadline (some thread blocked in a call with one), not for
 * something that may never come (no thread blocked without one). */
static char *signature(const struct collector_stacks *st, bool *sleeping)
{
    struct strbuf sb = {0};
    bool timed = false, untimed = false;
    for (size_t i = 0; i < st->n_threads; i++) {
        const struct collector_thread *th = &st->threads[i];
        sb_printf(&sb, "%d:", (int)th->tid);
        /* Up to two unnamed frames in a row: the unwinder is then in code it cannot
         * name (a JIT's), and what it finds past them differs from one snapshot to
         * the next. One unnamed frame (the vDSO's clock_gettime) is followed by a
         * stack as reliable as any. */
        for (size_t f = 0; f < th->n_frames; f++) {
            const char *fn = th->frames[f].function;
            if (!fn && f + 1 < th->n_frames && !th->frames[f + 1].function)
                break;
            sb_printf(&sb, "%s;", fn ? fn : "?");
        }
        sb_puts(&sb, "\n");
        timed |= th->wait_timed;
        untimed |= th->syscall_nr >= 0 && !th->wait_timed;
    }
    *sleeping = timed && !untimed;
    return sb_take(&sb);
}

enum stuck_verdict stuck_stacks(struct stuck *s, int64_t now_ns,
                                const struct collector_stacks *st, char *diagnosis,
                                size_t cap)
{
    bool sleeping;
    char *sig = signature(st, &sleeping);
    bool cycle = st->diagnosis != NULL;
    s->sleeping = sleeping && !cycle;
    if (s->signature && sig && strcmp(sig, s->signature) == 0) {
        s->same++;
        free(sig);
    } else {
        free(s->signature);
        s->signature = sig;
        s->same = 1;
    }
    int64_t silent_ms = (now_ns - s->last_output_ns) / NS_PER_MS;
    int pct = s->cpu_pct;
    snprintf(s->warning, sizeof s->warning, "no output for %lld s, %d%% CPU, stacks %s",
             (long long)(silent_ms / 1000), pct,
             s->same > 1 ? "unchanged" : "changing");
    if (pct >= STUCK_BUSY_PCT) {
        if (s->same < STUCK_BUSY_SAMPLES)
            return STUCK_NONE;
        snprintf(diagnosis, cap, "Infinite loop: %d%% CPU, identical stacks across %d "
                 "samples %d s apart, no output for %lld s", pct, s->same,
                 STUCK_SAMPLE_MS / 1000, (long long)(silent_ms / 1000));
        return STUCK_LOOP;
    }
    if (pct > STUCK_IDLE_PCT || s->same < STUCK_IDLE_SAMPLES)
        return STUCK_NONE;
    if (s->sleeping && silent_ms < STUCK_SLEEP_MS)
        return STUCK_NONE;
    if (s->sleeping)
        snprintf(diagnosis, cap, "No progress: %d%% CPU, a thread sleeping again and again "
                 "with identical stacks, no output for %lld s", pct,
                 (long long)(silent_ms / 1000));
    else
        snprintf(diagnosis, cap, "Deadlock: %d%% CPU, identical stacks across %d samples "
                 "%d s apart, no output for %lld s%s%s", pct, s->same,
                 STUCK_SAMPLE_MS / 1000, (long long)(silent_ms / 1000), cycle ? "; " : "",
                 cycle ? st->diagnosis : "");
    return STUCK_DEADLOCK;
}
