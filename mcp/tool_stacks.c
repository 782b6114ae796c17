/*
 * tool_stacks.c - debug_session action "stacks": every thread's stack, now
 * (session_stacks), shaped for an agent.
 *
 * The answer stays within a budget like debug_query's: frames read as one string
 * each ("fn (file:line)") unless verbose asks for objects with arguments, and when
 * the JSON still exceeds STACKS_BUDGET the frames of the least telling threads go
 * first (those that wait for nothing, then those whose wait is in no cycle), with
 * a `truncated` sentence saying what was cut.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "mcp/args.h"
#include "mcp/budget.h"
#include "mcp/tools.h"

#define STACKS_BUDGET tool_answer_budget() /* answers.maxBytes, mcp/budget.h */
#define CUT_KEEP 3   /* frames a cut thread keeps: where it is, and its caller or two */

static const char *wait_kind_name(enum collector_wait_kind k)
{
    static const char *const n[] = {[WAIT_MUTEX] = "mutex", [WAIT_JOIN] = "join",
                                    [WAIT_CONDVAR] = "condvar", [WAIT_FUTEX] = "futex"};
    return k > WAIT_NONE && k <= WAIT_FUTEX ? n[k] : NULL;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

void tool_frame_text(const struct collector_frame *f, char *buf, size_t cap)
{
    const char *fn = f->function ? f->function : "??";
    if (f->file)
        snprintf(buf, cap, "%s (%s:%d)", fn, base_name(f->file), f->line);
    else
        snprintf(buf, cap, "%s", fn);
}

void tool_thread_where(const struct collector_thread *th, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    if (th->own_frame >= 0 && (size_t)th->own_frame < th->n_frames) {
        const struct collector_frame *own = &th->frames[th->own_frame];
        char fr[400];
        tool_frame_text(own, fr, sizeof fr);
        len = (size_t)snprintf(buf, cap, "in %s", fr);
        if (th->own_frame > 0 && th->frames[0].function && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, ", inside %s",
                                    th->frames[0].function);
    }
    if (th->wait == WAIT_NONE || len >= cap)
        return;
    len += (size_t)snprintf(buf + len, cap - len, "%swaiting on %s%s%s", len ? ", " : "",
                            wait_kind_name(th->wait) ? wait_kind_name(th->wait) : "a wait",
                            th->wait_variable ? " " : "",
                            th->wait_variable ? th->wait_variable : "");
    if (th->wait_owner > 0 && len < cap)
        snprintf(buf + len, cap - len, " (%s thread %d)",
                 th->wait == WAIT_JOIN ? "joining" : "held by", (int)th->wait_owner);
}

static cJSON *frame_json(const struct collector_frame *f, bool verbose)
{
    const char *fn = f->function ? f->function : "??";
    if (!verbose) {
        char buf[1024];
        tool_frame_text(f, buf, sizeof buf);
        return cJSON_CreateString(buf);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "function", fn);
    if (f->function_raw)
        cJSON_AddStringToObject(o, "functionRaw", f->function_raw);
    if (f->file) {
        cJSON_AddStringToObject(o, "file", f->file);
        cJSON_AddNumberToObject(o, "line", f->line);
    }
    char pc[32];
    snprintf(pc, sizeof pc, "0x%llx", (unsigned long long)f->pc);
    cJSON_AddStringToObject(o, "pc", pc);
    if (f->inlined)
        cJSON_AddTrueToObject(o, "inlined");
    cJSON *args = f->arguments ? cJSON_Parse(f->arguments) : NULL;
    if (args)
        cJSON_AddItemToObject(o, "arguments", args);
    return o;
}

/* One thread; its first keep frames (all: SIZE_MAX). */
static cJSON *thread_json(const struct collector_thread *th, bool verbose, size_t keep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "tid", th->tid);
    cJSON_AddNumberToObject(o, "pid", th->pid);
    cJSON_AddStringToObject(o, "name", th->name);
    cJSON_AddStringToObject(o, "state", th->state);
    if (th->syscall_nr >= 0) {
        char nr[32];
        snprintf(nr, sizeof nr, "syscall %d", th->syscall_nr);
        cJSON_AddStringToObject(o, "syscall", th->syscall_name ? th->syscall_name : nr);
    }
    if (th->wait != WAIT_NONE) {
        cJSON *w = cJSON_AddObjectToObject(o, "wait");
        cJSON_AddStringToObject(w, "kind", wait_kind_name(th->wait));
        char addr[32];
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)th->wait_address);
        cJSON_AddStringToObject(w, "address", addr);
        if (th->wait_variable)
            cJSON_AddStringToObject(w, "variable", th->wait_variable);
        if (th->wait_owner > 0)
            cJSON_AddNumberToObject(w, th->wait == WAIT_JOIN ? "joinedTid" : "ownerTid",
                                    th->wait_owner);
    }
    cJSON *frames = cJSON_AddArrayToObject(o, "frames");
    size_t shown = th->n_frames < keep ? th->n_frames : keep;
    for (size_t i = 0; i < shown; i++)
        cJSON_AddItemToArray(frames, frame_json(&th->frames[i], verbose));
    size_t omitted = th->omitted_frames + (th->n_frames - shown);
    if (omitted)
        cJSON_AddNumberToObject(o, "omittedFrames", (double)omitted);
    if (th->own_frame >= 0 && (size_t)th->own_frame < shown) {
        cJSON_AddNumberToObject(o, "ownFrame", th->own_frame);
        const char *own_args = th->frames[th->own_frame].arguments;
        cJSON *args = !verbose && own_args ? cJSON_Parse(own_args) : NULL;
        if (args) /* verbose shows them in the frame */
            cJSON_AddItemToObject(o, "arguments", args);
        cJSON *locals = th->locals ? cJSON_Parse(th->locals) : NULL;
        if (locals)
            cJSON_AddItemToObject(o, "locals", locals);
    }
    return o;
}

/* How much a thread tells: a wait in a cycle (the diagnosis names its tid) > any
 * other wait > none. Cuts go from the least. */
static int interest(const struct collector_stacks *st, const struct collector_thread *th)
{
    char tid[32];
    snprintf(tid, sizeof tid, "tid %d ", (int)th->tid);
    if (st->diagnosis && strstr(st->diagnosis, tid))
        return 2;
    return th->wait != WAIT_NONE;
}

cJSON *tool_stacks_json(const char *id, const struct collector_stacks *st, bool verbose)
{
    size_t n = st->n_threads;
    size_t *keep = malloc((n ? n : 1) * sizeof *keep);
    if (!keep)
        return NULL;
    for (size_t i = 0; i < n; i++)
        keep[i] = SIZE_MAX;
    cJSON *o = NULL;
    size_t cut = 0;
    /* Cut by interest level, then all frames of that level's threads, until it fits. */
    for (int pass = 0;; pass++) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "sessionId", id);
        if (st->diagnosis)
            cJSON_AddStringToObject(o, "diagnosis", st->diagnosis);
        cJSON *pids = cJSON_AddArrayToObject(o, "pids");
        for (size_t i = 0; i < n; i++)
            if (i == 0 || st->threads[i].pid != st->threads[i - 1].pid)
                cJSON_AddItemToArray(pids, cJSON_CreateNumber(st->threads[i].pid));
        cJSON_AddNumberToObject(o, "stoppedMs", (double)(st->stopped_ns / 10000) / 100.0);
        cJSON *threads = cJSON_AddArrayToObject(o, "threads");
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(threads, thread_json(&st->threads[i], verbose, keep[i]));
        if (pass == 6 || tool_json_size(o) <= STACKS_BUDGET)
            break;
        int level = pass / 2;
        size_t to = pass % 2 == 0 ? CUT_KEEP : 0;
        for (size_t i = 0; i < n; i++)
            if (interest(st, &st->threads[i]) == level && st->threads[i].n_frames > to &&
                keep[i] > to) {
                cut += keep[i] == SIZE_MAX;
                keep[i] = to;
            }
    }
    if (cut) {
        char msg[400];
        snprintf(msg, sizeof msg, "The answer exceeded %d KB: the frames of %zu thread(s) "
                 "were cut, those waiting for nothing first (omittedFrames counts them). "
                 "Ask for fewer threads with tids or pid to see them whole.",
                 (int)(STACKS_BUDGET / 1024), cut);
        cJSON_AddStringToObject(o, "truncated", msg);
    }
    free(keep);
    return o;
}

cJSON *tool_session_stacks(const cJSON *args, const char *id, struct strobe_error *e)
{
    int64_t pid = 0;
    bool has_pid = false, locals = true, verbose = false;
    if (args_int(args, "pid", 1, INT32_MAX, &pid, &has_pid, e) != 0 ||
        args_bool(args, "verbose", &verbose, e) != 0)
        return NULL;
    if (cJSON_GetObjectItemCaseSensitive(args, "locals") &&
        args_bool(args, "locals", &locals, e) != 0)
        return NULL;
    pid_t tids[STACKS_MAX_TIDS];
    int n_tids = 0;
    const cJSON *jt = cJSON_GetObjectItemCaseSensitive(args, "tids");
    if (jt) {
        if (!cJSON_IsArray(jt) || cJSON_GetArraySize(jt) > STACKS_MAX_TIDS) {
            err_set(e, ERR_VALIDATION, "'tids' must be an array of at most %d thread ids.",
                    STACKS_MAX_TIDS);
            return NULL;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, jt) {
            double v = cJSON_IsNumber(it) ? it->valuedouble : 0;
            if (!(v >= 1 && v <= INT32_MAX) || v != (double)(int)v) {
                err_set(e, ERR_VALIDATION, "'tids' must hold positive integers (thread "
                        "ids).");
                return NULL;
            }
            tids[n_tids++] = (pid_t)v;
        }
    }
    struct collector_stacks_request req = {.pid = (pid_t)pid, .tids = tids,
                                           .n_tids = n_tids, .locals = locals,
                                           .arguments = verbose};
    struct collector_stacks st;
    if (session_stacks(id, &req, &st, e) != 0)
        return NULL;
    cJSON *o = tool_stacks_json(id, &st, verbose);
    collector_stacks_free(&st);
    if (!o)
        err_set(e, ERR_INTERNAL, "out of memory shaping the threads' stacks");
    return o;
}
