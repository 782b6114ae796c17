/*
 * progress.c - the waiting line of strobectl: a thread that sleeps on a condition
 * variable until the answer comes (progress_stop) or it is time to redraw. See
 * progress.h.
 */
#include "cli/render/progress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct progress {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;  /* signalled by progress_stop */
    bool stop;
    bool drawn;           /* the line is on the terminal */
    const char *what;
    struct timespec start; /* CLOCK_MONOTONIC */
};

/* t plus ms milliseconds. */
static struct timespec after_ms(struct timespec t, long ms)
{
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void *progress_main(void *arg)
{
    struct progress *p = arg;
    pthread_mutex_lock(&p->lock);
    struct timespec next = after_ms(p->start, PROGRESS_DELAY_MS);
    while (!p->stop) {
        if (pthread_cond_timedwait(&p->cond, &p->lock, &next) == 0 || p->stop)
            continue;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec < next.tv_sec ||
            (now.tv_sec == next.tv_sec && now.tv_nsec < next.tv_nsec))
            continue; /* woken early for no reason */
        long secs = (long)(now.tv_sec - p->start.tv_sec);
        fprintf(stderr, "\rstrobectl: %s ... %lds\033[K", p->what, secs);
        fflush(stderr);
        p->drawn = true;
        next = after_ms(p->start, (secs + 1) * 1000L);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct progress *progress_start(const char *what)
{
    if (!what || !isatty(STDERR_FILENO))
        return NULL;
    struct progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&p->lock, NULL);
    p->what = what;
    clock_gettime(CLOCK_MONOTONIC, &p->start);
    if (pthread_create(&p->thread, NULL, progress_main, p) != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void progress_stop(struct progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
