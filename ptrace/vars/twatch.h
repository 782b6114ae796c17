/*
 * twatch.h - trace watches of one session (the native collector's trace_watches
 * slot, core/collector.h): the variables whose values go into the function_enter
 * and function_exit events of the traced functions they apply to, as
 * "watchValues" in the event's data.
 *
 * Threads: twatch_update and twatch_list run on request threads; twatch_render on
 * the tracer thread, for each event. Expressions are resolved (ptrace/vars/varres.h)
 * before the set's lock is taken; the lock guards only the swap and the reads of an
 * event, so a trap never waits for a resolution. Expressions that go through a
 * pointer ("a->b", "*p", "p[2]") are resolved again at each read (the pointer may
 * have moved); the others are read at the address found when they were added.
 */
#ifndef STROBE_TWATCH_H
#define STROBE_TWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "core/collector.h"
#include "dwarf/dwarf.h"
#include "dwarf/value.h"

struct twatch_set;

struct twatch_set *twatch_set_new(const char *project_root);
void twatch_set_free(struct twatch_set *ws);

/* The trace_watches slot: resolves add[] in process pid (0: none, e.g. the program
 * is gone: only removals and the listing then). */
int twatch_update(struct twatch_set *ws, pid_t pid, const struct trace_watch_spec *add,
                  int n_add, const char *const *remove, int n_remove,
                  struct trace_watch_result *out, struct strobe_error *e);
void twatch_list(struct twatch_set *ws, struct trace_watch_result *out);

/* Watches given at launch (pending ones): twatch_stage copies them, and
 * twatch_apply_staged adds them one at a time on the tracer thread at the program's
 * entry point (libraries loaded, no code of its own run yet), pid 0 when the program
 * ended before it. Until then twatch_update and twatch_list wait (5 s at most); the
 * failures are their results' warning from then on. */
int twatch_stage(struct twatch_set *ws, const struct trace_watch_spec *w, int n);
void twatch_apply_staged(struct twatch_set *ws, pid_t pid);

/* Tracer thread, at the entry point of the program the main process exec'd: the
 * variable watches are resolved again in it (pid); one that is not found there
 * stays, and its events say why. */
void twatch_rebind(struct twatch_set *ws, pid_t pid);

/* Per traced function: which watches apply, cached until the set changes. */
struct twatch_cache {
    uint32_t mask;
    unsigned gen;                 /* 0: not computed yet */
};

/* Tracer thread, for an event of fn in process pid (memfd its /proc/PID/mem):
 * appends "\"watchValues\":{label:value,...}" to out and returns true when a watch
 * applies to fn; false (nothing appended) otherwise. Cheap when the set is empty.
 * The values are read through rd (the event's memory: live, or as copied at a
 * fast-path call); a watch whose pointers are followed again at every event
 * (rewalk) follows them in memfd's memory as it is now. */
bool twatch_render(struct twatch_set *ws, const struct dw_function *fn,
                   struct twatch_cache *cache, pid_t pid, int memfd, mem_read_fn rd,
                   void *rd_ctx, struct strbuf *out);

/* Whether a watch scoped to on[0..n_on) applies to fn (pure: for tests too). */
bool twatch_applies(const char *const *on, int n_on, const struct dw_function *fn,
                    const char *project_root);


#endif
