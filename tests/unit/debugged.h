/*
 * debugged.h - a fixture program under a real tracer with the debugger on it
 * (ptrace/debugger/debugger.h), wired as ptrace/native.c wires it: the stop handlers
 * at the tracer's start, staged breakpoints bound at the entry point, the old
 * program's addresses forgotten when the main process execs (and every breakpoint
 * bound again at the new entry point), pauses waking the test. For test_bpset.c and test_stepper.c: setting breakpoints, waiting for the
 * next pause, reading a paused frame's variables, resuming and stepping. A test's
 * struct debugged is static and its test has traced_teardown (traced.h). Include
 * after <cmocka.h> and fixtures.h.
 */
#ifndef STROBE_TEST_DEBUGGED_H
#define STROBE_TEST_DEBUGGED_H

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "ptrace/debugger/debugger.h"
#include "ptrace/vars/framevars.h"
#include "traced.h"

struct debugged {
    struct traced tr;
    struct debugger *d;
    int64_t seen_seq;           /* the newest pause dbg_next_pause returned */
};

static inline void dbg_on_start(void *arg, struct tracer *t)
{
    struct debugged *g = arg;
    debugger_on_start(g->d, t);
}

static inline void dbg_main_exec(void *arg)
{
    struct debugged *g = arg;
    debugger_main_exec(g->d);
}

static inline void dbg_free(void *arg)
{
    debugger_free(arg);
}

static inline void dbg_on_entry(void *arg, struct tracer *t)
{
    struct debugged *g = arg;
    debugger_on_entry(g->d, t);
}

/* Starts fixture name (args as traced_launch) with the breakpoints staged (n of them,
 * bound at the entry point). */
static inline void dbg_start(struct debugged *g, const char *name, const char *const *args,
                             const struct collector_breakpoint *staged, int n)
{
    memset(g, 0, sizeof *g);
    traced_init(&g->tr);
    struct debugger_config dc = {.sink = traced_sink(&g->tr), .paused = traced_notify,
                                 .arg = &g->tr};
    g->d = debugger_new(&dc);
    assert_non_null(g->d);
    g->tr.on_end = dbg_free;
    g->tr.on_end_arg = g->d;
    if (n)
        assert_int_equal(debugger_stage(g->d, staged, n), n);
    struct traced_hooks h = {.on_start = dbg_on_start, .on_entry = dbg_on_entry,
                             .on_main_exec = dbg_main_exec, .stop_at_entry = n > 0,
                             .arg = g};
    traced_launch(&g->tr, name, args, &h);
}

/* Ends the program and its tracer, then frees the debugger. */
static inline void dbg_end(struct debugged *g)
{
    traced_end(&g->tr);
}

/* Sets bp; fails the test when it is refused. */
static inline void dbg_set(struct debugged *g, const struct collector_breakpoint *bp,
                           struct collector_bp_info *info)
{
    struct strobe_error e = {0};
    int rc = debugger_breakpoint_set(g->d, g->tr.t, bp, info, &e);
    if (rc != 0)
        fail_msg("breakpoint %d refused: %s: %s", bp->id, err_code_name(e.code), e.msg);
}

/* The info of breakpoint id as listed now; fails when it is not listed. */
static inline struct collector_bp_info dbg_info(struct debugged *g, int id)
{
    struct collector_bp_info all[8];
    int n = debugger_breakpoint_list(g->d, all, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (all[i].id == id)
            return all[i];
    fail_msg("breakpoint %d is not listed", id);
    return all[0];
}

struct dbg_pause_want {
    struct debugged *g;
    struct collector_pause *out;
};

static inline bool dbg_has_new_pause(void *arg)
{
    struct dbg_pause_want *w = arg;
    struct collector_pause ps[16];
    int n = debugger_pauses(w->g->d, ps, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (ps[i].seq > w->g->seen_seq) {
            *w->out = ps[i];
            return true;
        }
    return false;
}

/* Waits for a pause newer than the last one this returned. */
static inline struct collector_pause dbg_next_pause(struct debugged *g)
{
    struct collector_pause p = {0};
    struct dbg_pause_want w = {g, &p};
    traced_wait(&g->tr, dbg_has_new_pause, &w, "a pause");
    g->seen_seq = p.seq;
    return p;
}

/* How many threads are paused now. */
static inline int dbg_paused(struct debugged *g)
{
    struct collector_pause ps[16];
    return debugger_pauses(g->d, ps, 16);
}

/* Expression expr in frame `frame` of paused thread tid, as a logpoint shows it. */
static inline void dbg_value(struct debugged *g, pid_t tid, int frame, const char *expr,
                             char *out, size_t cap)
{
    struct frame_ctx f;
    struct strobe_error e = {0};
    if (debugger_frame(g->d, g->tr.t, tid, frame, &f, &e) != 0)
        fail_msg("frame %d of thread %d: %s", frame, (int)tid, e.msg);
    int memfd = procmem_open(f.pid);
    assert_true(memfd >= 0);
    struct varres_process p;
    framevars_open(&p, &f, memfd);
    struct strbuf sb = {0};
    framevars_render(&p, expr, &sb);
    snprintf(out, cap, "%s", sb.buf ? sb.buf : "");
    sb_free(&sb);
    varres_process_close(&p);
    close(memfd);
}

/* An integer expression of a paused frame. */
static inline long dbg_long(struct debugged *g, pid_t tid, int frame, const char *expr)
{
    char v[256], *end;
    dbg_value(g, tid, frame, expr, v, sizeof v);
    long n = strtol(v, &end, 10);
    if (!v[0] || *end)
        fail_msg("%s in frame %d is \"%s\", not an integer", expr, frame, v);
    return n;
}

static inline void dbg_resume(struct debugged *g, pid_t tid, enum collector_resume how)
{
    struct strobe_error e = {0};
    int rc = debugger_resume(g->d, g->tr.t, tid, how, &e);
    if (rc != 0)
        fail_msg("resume of thread %d: %s: %s", (int)tid, err_code_name(e.code), e.msg);
}

/* Resumes paused thread tid (how) and waits for the pause that follows, which must
 * be tid's: the next hit of a breakpoint after a continue, the end of a step. */
static inline struct collector_pause dbg_resume_to_pause(struct debugged *g, pid_t tid,
                                                         enum collector_resume how)
{
    dbg_resume(g, tid, how);
    struct collector_pause p = dbg_next_pause(g);
    assert_int_equal(p.tid, tid);
    return p;
}

/* The byte at addr in the program (an int3 of ours shows as 0xCC). */
static inline uint8_t dbg_byte(struct debugged *g, uint64_t addr)
{
    int fd = procmem_open(g->tr.pid);
    uint8_t b = 0;
    assert_true(fd >= 0);
    assert_true(procmem_read(fd, addr, &b, 1));
    close(fd);
    return b;
}

#endif
