/*
 * watchset.c - the native collector's watch slots. See watchset.h.
 *
 * Everything runs on the tracer thread (tracer_call): the variable is resolved
 * there too, so that the pointers on its way are read with the program stopped,
 * and the watch is armed before any thread runs again. A watch armed in the main
 * process (pid 0 or its own pid) covers its forked children alive now as well;
 * the processes forked later get it from hwwatch_on_fork.
 */
#include "ptrace/debugger/watchset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/vars/varres.h"

#define MAX_WATCH_PROCS 256

static const struct dw_type *unsigned_of(size_t size)
{
    switch (size) {
    case 1: return varres_hint_type(MEMH_U8);
    case 2: return varres_hint_type(MEMH_U16);
    case 4: return varres_hint_type(MEMH_U32);
    default: return varres_hint_type(MEMH_U64);
    }
}

static bool valid_size(size_t n) { return n == 1 || n == 2 || n == 4 || n == 8; }

/* ---- arming -------------------------------------------------------------------------- */

struct set_call {
    const struct collector_watch_request *req;
    struct collector_watch_info *out;
    struct strobe_error err;
    int rc;
};

struct proc_scan {
    pid_t pid;                    /* the process asked for */
    bool with_forks;              /* the main process: its live forks too */
    struct hooks *main_hooks;
    pid_t pids[MAX_WATCH_PROCS];
    int n;
    bool found;
};

static void collect_procs(pid_t tid, pid_t tgid, bool stopped, struct hooks *h, void *arg)
{
    (void)tid, (void)stopped;
    struct proc_scan *s = arg;
    bool in = tgid == s->pid || (s->with_forks && h && h == s->main_hooks);
    if (tgid == s->pid)
        s->found = true;
    if (!in)
        return;
    for (int i = 0; i < s->n; i++)
        if (s->pids[i] == tgid)
            return;
    if (s->n < MAX_WATCH_PROCS)
        s->pids[s->n++] = tgid;
}

struct sync_scan {
    struct hwwatch *w;
    pid_t first_pid;              /* the thread whose error decides */
    int first_err;
};

static void sync_thread(pid_t tid, pid_t tgid, bool stopped, struct hooks *h, void *arg)
{
    (void)h;
    struct sync_scan *s = arg;
    if (!stopped)
        return; /* blocked in vfork or exiting: registers at its next stop */
    int err = hwwatch_on_stop(s->w, tid, tgid);
    if (tid == s->first_pid)
        s->first_err = err;
}

/* The sentence of WATCH_TOO_LARGE for a variable of type t at addr. */
static void too_large(const char *expr, const struct dw_type *t, const char *type_name,
                      uint64_t addr, size_t size, struct strobe_error *e)
{
    struct strbuf sb = {0};
    const struct dw_type *u = t;
    if (u && (u->kind == DWT_STRUCT || u->kind == DWT_UNION) && u->n_members) {
        sb_puts(&sb, " Watch one of its fields instead:");
        size_t shown = 0;
        for (size_t i = 0; i < u->n_members && shown < 6; i++) {
            const struct dw_member *m = &u->members[i];
            if (!m->name)
                continue;
            sb_printf(&sb, "%s %s.%s (%s, %llu bytes at 0x%llx)", shown ? "," : "", expr,
                      m->name, m->type && m->type->name ? m->type->name : "?",
                      (unsigned long long)(m->type ? m->type->size : 0),
                      (unsigned long long)(addr + m->offset));
            shown++;
        }
        if (u->n_members > shown)
            sb_printf(&sb, " (%zu more)", u->n_members - shown);
        sb_puts(&sb, ";");
    } else if (u && u->kind == DWT_ARRAY && u->target && u->target->size) {
        sb_printf(&sb, " Watch one element instead: %s[0] (%s, %llu bytes at 0x%llx);", expr,
                  u->target->name ? u->target->name : "?",
                  (unsigned long long)u->target->size, (unsigned long long)addr);
    }
    err_set(e, ERR_WATCH_TOO_LARGE, "%s is %zu bytes (%s); a hardware watch covers at most "
            "8 aligned bytes.%s or give size 1, 2, 4 or 8 to watch its first bytes at 0x%llx.",
            expr, size, type_name, sb.buf ? sb.buf : "", (unsigned long long)addr);
    sb_free(&sb);
}

static int misaligned(const char *label, uint64_t addr, size_t size, struct strobe_error *e)
{
    size_t smaller = size;
    while (smaller > 1 && addr % smaller)
        smaller /= 2;
    return err_set(e, ERR_VALIDATION, "%s at 0x%llx is not %zu-byte aligned: x86 debug "
                   "registers watch 1, 2, 4 or 8 bytes at an address aligned to that size. "
                   "Watch size %zu at 0x%llx instead (the aligned part that holds its first "
                   "byte), or the field that matters.", label, (unsigned long long)addr,
                   size, smaller, (unsigned long long)addr);
}

static void fill_info(struct hwwatch *w, const struct hwwatch_info *in, pid_t value_pid,
                      struct collector_watch_info *out)
{
    *out = (struct collector_watch_info){.id = in->id, .pid = in->spec.pid,
                                         .address = in->spec.address,
                                         .size = in->spec.size,
                                         .readwrite = in->spec.readwrite, .hits = in->hits,
                                         .set_ns = in->set_ns, .work_ns = in->work_ns,
                                         .ended = !in->active};
    snprintf(out->label, sizeof out->label, "%s", in->spec.label);
    snprintf(out->type, sizeof out->type, "%s", in->spec.type_name);
    snprintf(out->ended_reason, sizeof out->ended_reason, "%s", in->ended);
    if (in->active)
        hwwatch_value(w, in->id, value_pid ? value_pid : in->spec.pid, out->value,
                      sizeof out->value);
}

static int resolve(const struct collector_watch_request *req, pid_t pid, int memfd,
                   struct hwwatch_spec *spec, struct strobe_error *e)
{
    size_t natural;
    const struct dw_type *type;
    if (req->variable) {
        struct varres vr;
        if (varres_resolve(pid, memfd, req->variable, &vr, e) != 0)
            return -1;
        if (!vr.has_address)
            return err_set(e, ERR_VARIABLE_UNAVAILABLE, "%s is a constant (it has no address "
                           "in memory), so nothing can write it.", req->variable);
        snprintf(spec->label, sizeof spec->label, "%s", req->variable);
        spec->address = vr.address;
        natural = vr.size;
        type = vr.type;
        snprintf(spec->type_name, sizeof spec->type_name, "%s", vr.type_name);
        if (!req->size && natural > 8) {
            too_large(req->variable, vr.type, vr.type_name, vr.address, natural, e);
            return -1;
        }
        if (req->size && req->size > natural)
            return err_set(e, ERR_VALIDATION, "size %zu is larger than %s itself (%zu bytes, "
                           "%s).", req->size, req->variable, natural, vr.type_name);
    } else {
        snprintf(spec->label, sizeof spec->label, "0x%llx",
                 (unsigned long long)req->address);
        spec->address = req->address;
        const struct dw_type *h = req->hint != MEMH_BYTES ? varres_hint_type(req->hint)
                                                          : NULL;
        natural = req->size ? req->size : h ? h->size : 0;
        if (!natural)
            return err_set(e, ERR_VALIDATION, "an address watch needs a size (1, 2, 4 or 8) "
                           "or a type (i32, u64, f64, pointer, ...).");
        if (natural > 8)
            return err_set(e, ERR_WATCH_TOO_LARGE, "%zu bytes at %s: a hardware watch covers "
                           "at most 8 aligned bytes; watch the 1, 2, 4 or 8 bytes that "
                           "matter (one field's address).", natural, spec->label);
        if (h && req->size && req->size != h->size)
            return err_set(e, ERR_VALIDATION, "type %s is %llu bytes but size is %zu.",
                           h->name, (unsigned long long)h->size, req->size);
        type = h;
        snprintf(spec->type_name, sizeof spec->type_name, "%s",
                 h ? h->name : unsigned_of(natural)->name);
    }
    size_t size = req->size ? req->size : natural;
    if (!valid_size(size))
        return err_set(e, ERR_VALIDATION, "%s is %zu bytes: a hardware watch is 1, 2, 4 or 8 "
                       "bytes; give size 1, 2, 4 or 8.", spec->label, size);
    if (spec->address % size)
        return misaligned(spec->label, spec->address, size, e);
    unsigned char probe[8];
    if (!procmem_read(memfd, spec->address, probe, size))
        return err_set(e, ERR_MEMORY_UNREADABLE, "%s: 0x%llx is not mapped in process %d "
                       "(nothing can be watched there).", spec->label,
                       (unsigned long long)spec->address, (int)pid);
    if (!type || type->size != size) {
        type = unsigned_of(size);
        if (req->variable && size != natural)
            snprintf(spec->type_name, sizeof spec->type_name, "%s (first %zu bytes of %s)",
                     type->name, size, req->variable);
    }
    spec->type = type;
    spec->size = size;
    spec->readwrite = req->readwrite;
    spec->pid = pid;
    return 0;
}

static void do_set(struct tracer *t, void *arg)
{
    struct set_call *c = arg;
    const struct collector_watch_request *req = c->req;
    struct strobe_error *e = &c->err;
    c->rc = -1;
    struct hwwatch *w = tracer_hwwatch(t);
    if (!w) {
        err_set(e, ERR_WATCH_FAILED, "this session records no events, so watches cannot "
                "record their hits.");
        return;
    }
    pid_t main = tracer_pid(t);
    pid_t pid = req->pid ? req->pid : main;
    struct proc_scan *ps = calloc(1, sizeof *ps);
    if (!ps) {
        err_set(e, ERR_INTERNAL, "out of memory arming a watch");
        return;
    }
    *ps = (struct proc_scan){.pid = pid, .with_forks = pid == main,
                             .main_hooks = tracer_hooks(t)};
    tracer_each_thread(t, collect_procs, ps);
    if (!ps->found) {
        err_set(e, ERR_VALIDATION, "pid %d is not a live process of this session.", (int)pid);
        free(ps);
        return;
    }
    int memfd = procmem_open(pid);
    struct hwwatch_spec spec = {0};
    if (memfd < 0) {
        err_set(e, ERR_PROCESS_EXITED, "process %d cannot be read any more (it is exiting).",
                (int)pid);
    } else if (resolve(req, pid, memfd, &spec, e) != 0) {
        /* e says why */
    } else if (!hwwatch_traps_work()) {
        err_set(e, ERR_WATCH_UNSUPPORTED, "this machine never raises the x86 debug "
                "registers' traps (a hypervisor that accepts them and ignores them), so "
                "a watch on %s would see no write.", spec.label);
    } else {
        int id = hwwatch_arm(w, &spec, ps->pids, ps->n, e);
        if (id > 0) {
            struct sync_scan ss = {.w = w, .first_pid = pid};
            tracer_each_thread(t, sync_thread, &ss);
            struct hwwatch_info info;
            if (ss.first_err && ss.first_err != ESRCH) {
                hwwatch_disarm(w, id, &info);
                struct sync_scan undo = {.w = w};
                tracer_each_thread(t, sync_thread, &undo);
                err_set(e, ERR_WATCH_FAILED, "the kernel refused the debug register for %s "
                        "at 0x%llx (%zu bytes): %s.", spec.label,
                        (unsigned long long)spec.address, spec.size,
                        strerror(ss.first_err));
            } else {
                struct hwwatch_info all[HWWATCH_SLOTS + HWWATCH_ENDED_KEPT];
                int m = hwwatch_list(w, all, HWWATCH_SLOTS + HWWATCH_ENDED_KEPT);
                for (int i = 0; i < m; i++)
                    if (all[i].id == id)
                        fill_info(w, &all[i], pid, c->out);
                c->rc = 0;
            }
        }
    }
    if (memfd >= 0)
        close(memfd);
    free(ps);
}

int watchset_set(struct tracer *t, const struct collector_watch_request *req,
                 struct collector_watch_info *out, struct strobe_error *e)
{
    struct set_call c = {.req = req, .out = out, .rc = -1};
    if (tracer_call(t, do_set, &c, e) != 0)
        return -1;
    if (c.rc != 0 && e)
        *e = c.err;
    return c.rc;
}

/* ---- clearing and listing ------------------------------------------------------------- */

struct clear_call {
    int id;
    bool found;
};

static void do_clear(struct tracer *t, void *arg)
{
    struct clear_call *c = arg;
    struct hwwatch *w = tracer_hwwatch(t);
    struct hwwatch_info info;
    if (!w || !hwwatch_disarm(w, c->id, &info))
        return;
    c->found = true;
    struct sync_scan ss = {.w = w};
    tracer_each_thread(t, sync_thread, &ss);
}

int watchset_clear(struct tracer *t, int id, struct strobe_error *e)
{
    struct clear_call c = {.id = id};
    if (tracer_call(t, do_clear, &c, e) != 0)
        return -1;
    if (!c.found)
        return err_set(e, ERR_VALIDATION, "there is no watch %d in this session.", id);
    return 0;
}

struct list_call {
    struct collector_watch_info *out;
    int max, n;
};

static void do_list(struct tracer *t, void *arg)
{
    struct list_call *c = arg;
    struct hwwatch *w = tracer_hwwatch(t);
    if (!w)
        return;
    struct hwwatch_info all[HWWATCH_SLOTS + HWWATCH_ENDED_KEPT];
    c->n = hwwatch_list(w, all, HWWATCH_SLOTS + HWWATCH_ENDED_KEPT);
    for (int i = 0; i < c->n && i < c->max; i++)
        fill_info(w, &all[i], 0, &c->out[i]);
}

int watchset_list(struct tracer *t, struct collector_watch_info *out, int max)
{
    struct list_call c = {.out = out, .max = max};
    if (tracer_call(t, do_list, &c, NULL) != 0)
        return 0;
    return c.n;
}
