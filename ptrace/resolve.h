/*
 * resolve.h - the native collector's trace patterns and the functions they hook
 * (the set_patterns and describe of ptrace/native.h, and what arms patterns when a
 * program reaches its entry point or execs).
 *
 * The pattern set lives here, not in the engine: the tracer thread reads it, under
 * a lock of its own, at every entry point and exec, and a change that fails on the
 * program rolls it back; the engine keeps only what needs no program (syntax checks
 * and the pending set, core/patterns.h) and sees patterns through trace_result.
 *
 * Resolution: the modules mapped in the target (/proc/PID/maps) are indexed
 * (dwarf/, cached), every function is tested against every active pattern, and the
 * set of functions to hook is compared with the hooked set: the difference is armed
 * and disarmed on the tracer thread in one tracer_call(). Removing a pattern keeps
 * functions another active pattern still matches, because the set is recomputed.
 *
 * Scope: a pattern with wildcards or '@' matches functions of the program and of
 * libraries outside the system directories (/lib, /usr/lib, ...): `*` must not hook
 * all of libc. A pattern without wildcards names a function exactly and matches in
 * every module, so `malloc` or `SSL_read` can be traced.
 */
#ifndef STROBE_RESOLVE_H
#define STROBE_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "core/collector.h"

struct trace;
struct tracer;

#define TRACE_MAX_HOOKS 20000

struct trace *resolve_new(const char *project_root);
void resolve_free(struct trace *tr);

/* Adds and removes patterns (already syntax-checked), sets the serialization
 * depth (0 = unchanged), and brings the hooks of the running target in line. */
int resolve_update(struct trace *tr, struct tracer *t, const char *const *add, int n_add,
                   const char *const *remove, int n_remove, int depth,
                   struct trace_result *res, struct strobe_error *e);

/* The patterns and what each did when last applied (per_pattern, warnings), once
 * preloaded ones are armed; hooked is 0 and status says the process has ended (the
 * one other use: debug_launch reads per_pattern of the patterns armed at entry). */
void resolve_describe(struct trace *tr, struct trace_result *res);

/* Stages patterns and the serialization depth before the target runs (pending
 * patterns at launch). Returns the number of patterns. */
int resolve_preload(struct trace *tr, const char *const *patterns, int n, int depth,
                    bool depth_asked);
/* tracer_spec.on_entry for a session with preloaded patterns: arms them. */
void resolve_on_entry(void *trace, struct tracer *t);
/* The program will never reach its entry point (it died first): updates stop
 * waiting for the preloaded patterns. */
void resolve_entry_passed(struct trace *tr);

/* Tracer thread: the main process exec'd another program; what was armed is gone
 * (resolve_on_entry arms the patterns again at its entry point). */
void resolve_main_exec(struct trace *tr);

/* Tracer thread: child process pid exec'd another program and stands at its entry
 * point; arms the session's current patterns in it through h. Later updates reach
 * it too (resolve_update brings every such image to the new patterns). */
struct hooks;
void resolve_on_image(struct trace *tr, pid_t pid, struct hooks *h);

#endif
