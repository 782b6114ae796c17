/*
 * pauses.h - the paused threads of one target: who is stopped, where and why, and
 * the registers each stopped with. The tracer thread adds and removes pauses (a
 * breakpoint hit, a step's end, a pause request, a thread gone); any thread reads
 * them (debug_session status, debug_continue waiting for the next stop), under the
 * registry's lock. Every change calls the `changed` callback, which wakes waiters.
 */
#ifndef STROBE_PAUSES_H
#define STROBE_PAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/user.h>

#include "core/collector.h"

struct pauses;

struct pauses *pauses_new(void (*changed)(void *arg), void *arg);
void pauses_free(struct pauses *ps);

/* Tracer thread: records thread p->tid as paused with regs (its pc at the
 * instruction it will run next), numbering the pause (p->seq is set). A thread
 * paused already has its pause replaced. */
void pauses_add(struct pauses *ps, struct collector_pause *p,
                const struct user_regs_struct *regs);
/* Tracer thread: pauses recorded between begin and end notify once, at the end, so
 * a waiter woken by the notification never sees half of an all-stop (pauses_list
 * read meanwhile, unprompted, may). */
void pauses_batch(struct pauses *ps, bool begin);
/* Tracer thread: the thread runs again or is gone. False if it was not paused. */
bool pauses_remove(struct pauses *ps, pid_t tid);
/* Tracer thread: its registers changed (a register write). */
void pauses_set_regs(struct pauses *ps, pid_t tid, const struct user_regs_struct *regs);

/* Any thread: up to max pauses, oldest first; returns how many there are. */
int pauses_list(struct pauses *ps, struct collector_pause *out, int max);
/* Any thread: the pause of tid (regs may be NULL). False if tid is not paused. */
bool pauses_get(struct pauses *ps, pid_t tid, struct collector_pause *out,
                struct user_regs_struct *regs);
/* Any thread: the tids paused, up to max; returns how many there are. */
int pauses_tids(struct pauses *ps, pid_t *out, int max);
/* Any thread: the selected paused thread (collector_pause_better), 0 when none. */
pid_t pauses_selected(struct pauses *ps);

/* Fills p's function, file and line for pc in the ELF file module (load bias):
 * the innermost source site (an inlined callee's when pc is in inlined code). */
void pauses_describe_site(struct collector_pause *p, const char *module, uint64_t bias);

#endif
