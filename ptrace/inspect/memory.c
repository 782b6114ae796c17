/*
 * memory.c - reads and writes of a running target's memory (memory.h). Each target
 * is resolved on its own (a variable through varres.h, an address with its type
 * hint), so one bad target costs only its own answer. Nothing stops the program:
 * reads and writes go through /proc/PID/mem (pread, pwrite) while it runs. A value
 * is therefore read at one instant, and a write races with the program's own writes
 * to the same variable: the program may overwrite it at once, which the read-back
 * value then shows. The debug registers do not see a write through /proc/PID/mem:
 * each write is told to the data watchpoints (hwwatch_note_write), so that a hit
 * after it shows the debugger's value as the old one.
 */
#include "ptrace/inspect/memory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptrace/vars/encode.h"
#include "ptrace/proc/procmem.h"
#include "ptrace/vars/varres.h"
#include "ptrace/watch/hwwatch.h"

enum { WRITE_MAX = 4096 }; /* bytes of one written value (a char array at most) */

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

/* Where target tg is, into v; its label and type into r. */
static int locate(struct varres_process *p, const struct collector_mem_target *tg,
                  struct varres *v, struct collector_mem_result *r, struct strobe_error *e)
{
    if (tg->variable) {
        r->target = dup_or_die(tg->variable);
        if (varres_resolve_in(p, tg->variable, v, e) != 0)
            return -1;
    } else {
        char label[32];
        snprintf(label, sizeof label, "0x%" PRIx64, tg->address);
        r->target = dup_or_die(label);
        if (tg->hint <= MEMH_NONE || tg->hint > MEMH_BYTES)
            return err_set(e, ERR_VALIDATION, "An address target needs a type.");
        *v = (struct varres){.address = tg->address, .has_address = true, .regno = -1,
                             .type = varres_hint_type(tg->hint),
                             .size = tg->hint == MEMH_BYTES ? tg->size
                                                            : varres_hint_type(tg->hint)->size};
        snprintf(v->type_name, sizeof v->type_name, "%s", memory_hint_name(tg->hint));
    }
    r->address = v->has_address ? v->address : 0;
    r->type = dup_or_die(v->type_name);
    if (v->note[0])
        r->note = dup_or_die(v->note);
    r->size = v->size;
    return 0;
}

static int unreadable(const struct collector_mem_result *r, struct strobe_error *e)
{
    return err_set(e, ERR_MEMORY_UNREADABLE,
                   "%s: the %zu bytes at 0x%" PRIx64 " are not readable (unmapped memory, or "
                   "a stale pointer).", r->target, r->size, r->address);
}

/* The value of v as JSON text into *out. */
static int render(int memfd, const struct varres *v, int depth, bool depth_asked,
                  const struct collector_mem_result *r, char **out, struct strobe_error *e)
{
    struct strbuf sb = {0};
    bool ok = varres_render(procmem_read_ctx, &memfd, v, depth, depth_asked, &sb);
    if (!ok || sb.oom) {
        sb_free(&sb);
        return ok ? err_set(e, ERR_INTERNAL, "out of memory rendering %s", r->target)
                  : unreadable(r, e);
    }
    *out = sb_take(&sb);
    return 0;
}

static int read_target(int memfd, const struct varres *v, const struct collector_mem_target *tg,
                       const struct collector_mem_request *req, struct collector_mem_result *r,
                       struct strobe_error *e)
{
    int depth = req->depth >= 1 && req->depth <= 5 ? req->depth : 1;
    if (tg->hint != MEMH_BYTES)
        return render(memfd, v, depth, req->depth_asked, r, &r->value, e);
    r->bytes = malloc(v->size ? v->size : 1);
    if (!r->bytes)
        return err_set(e, ERR_INTERNAL, "out of memory reading %zu bytes", v->size);
    if (!procmem_read(memfd, v->address, r->bytes, v->size)) {
        free(r->bytes);
        r->bytes = NULL;
        return unreadable(r, e);
    }
    return 0;
}

/* A value frame 0 keeps in a register: written there. */
static int write_register(int memfd, struct varres *v, const unsigned char *bytes,
                          struct memory_frame *frame, struct collector_mem_result *r,
                          struct strobe_error *e)
{
    uint64_t value = 0;
    if (render(memfd, v, 1, false, r, &r->old_value, e) != 0)
        return -1;
    memcpy(&value, bytes, v->size < sizeof value ? v->size : sizeof value);
    if (frame->set_register(frame->arg, frame->f.tid, v->regno, value, e) != 0)
        return -1;
    memcpy(v->bytes, &value, sizeof value);
    return render(memfd, v, 1, false, r, &r->value, e);
}

/* A write of the debugger's, told to the data watchpoints on the tracer thread. */
struct written {
    pid_t pid;
    uint64_t addr;
    const void *bytes;
    size_t len;
};

static void note_write(struct tracer *t, void *arg)
{
    const struct written *w = arg;
    hwwatch_note_write(tracer_hwwatch(t), w->pid, w->addr, w->bytes, w->len);
}

static int write_target(struct tracer *t, pid_t pid, int memfd, struct varres *v, const struct collector_mem_target *tg,
                        const struct collector_value *val, struct memory_frame *frame,
                        struct collector_mem_result *r, struct strobe_error *e)
{
    unsigned char bytes[WRITE_MAX];
    if (tg->hint == MEMH_BYTES)
        return err_set(e, ERR_VALIDATION, "%s: a write needs a typed target (i8 ... u64, f32, "
                       "f64, pointer), not bytes.", r->target);
    if (!v->has_address && v->regno >= 0 && frame && frame->set_register && v->size <= 8) {
        if (encode_value(v->type, r->target, val, bytes, sizeof bytes, e) != 0)
            return -1;
        return write_register(memfd, v, bytes, frame, r, e);
    }
    if (!v->has_address)
        return err_set(e, ERR_VARIABLE_UNAVAILABLE,
                       "%s is a constant: the program has no storage for it to write.",
                       r->target);
    if (encode_value(v->type, r->target, val, bytes, sizeof bytes, e) != 0 ||
        render(memfd, v, 1, false, r, &r->old_value, e) != 0)
        return -1;
    if (!procmem_write(memfd, v->address, bytes, v->size))
        return err_set(e, ERR_MEMORY_UNWRITABLE, "%s: the %zu bytes at 0x%" PRIx64 " cannot "
                       "be written (%s).", r->target, v->size, v->address, strerror(errno));
    struct written done = {pid, v->address, bytes, v->size};
    struct strobe_error ignored = {0}; /* a process gone since: no watch to tell */
    tracer_read(t, note_write, &done, &ignored);
    return render(memfd, v, 1, false, r, &r->value, e);
}

int memory_access(struct tracer *t, const struct collector_mem_request *req,
                  struct memory_frame *frame, struct collector_mem_result *out,
                  struct strobe_error *e)
{
    pid_t pid = frame ? frame->f.pid : req->pid ? req->pid : tracer_pid(t);
    if (!tracer_has_process(t, pid))
        return req->pid ? err_set(e, ERR_VALIDATION, "pid %d is not a live process of this "
                                  "session.", (int)pid)
                        : err_set(e, ERR_PROCESS_EXITED, "The program (pid %d) has exited.",
                                  (int)pid);
    int memfd = procmem_open(pid);
    if (memfd < 0)
        return err_set(e, ERR_PROCESS_EXITED, "Process %d has exited.", (int)pid);
    struct varres_process p;
    if (frame)
        framevars_open(&p, &frame->f, memfd);
    else
        varres_process_open(&p, pid, memfd);
    for (int i = 0; i < req->n_targets; i++) {
        const struct collector_mem_target *tg = &req->targets[i];
        struct collector_mem_result *r = &out[i];
        struct strobe_error te = {0};
        struct varres v;
        *r = (struct collector_mem_result){0};
        if (locate(&p, tg, &v, r, &te) == 0) {
            if (req->values)
                write_target(t, pid, memfd, &v, tg, &req->values[i], frame, r, &te);
            else
                read_target(memfd, &v, tg, req, r, &te);
        }
        if (te.code != ERR_NONE) {
            r->error = te.code;
            r->error_message = dup_or_die(te.msg);
            free(r->value);
            r->value = NULL;
        }
    }
    varres_process_close(&p);
    close(memfd);
    return 0;
}
