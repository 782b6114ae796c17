/*
 * framevars.c - names in a stopped thread's frame (framevars.h): registers by their
 * "$" names, arguments and locals through dwarf/frame.h, then globals (varres.c);
 * condition operands and logpoint values read from them.
 */
#include "ptrace/vars/framevars.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptrace/proc/procmem.h"

/* The registers an expression may name, with their DWARF numbers (-1: none) and
 * where frame 0 keeps them. */
static const struct reg_name {
    const char *name;
    int dwarf;
    size_t offset;
    enum memory_hint hint;
} regs[] = {
#define R(n, d, h) {"$" #n, d, offsetof(struct user_regs_struct, n), h}
    R(rax, 0, MEMH_U64), R(rdx, 1, MEMH_U64), R(rcx, 2, MEMH_U64), R(rbx, 3, MEMH_U64),
    R(rsi, 4, MEMH_U64), R(rdi, 5, MEMH_U64), R(rbp, 6, MEMH_POINTER),
    R(rsp, 7, MEMH_POINTER), R(r8, 8, MEMH_U64), R(r9, 9, MEMH_U64), R(r10, 10, MEMH_U64),
    R(r11, 11, MEMH_U64), R(r12, 12, MEMH_U64), R(r13, 13, MEMH_U64),
    R(r14, 14, MEMH_U64), R(r15, 15, MEMH_U64), R(rip, 16, MEMH_POINTER),
    R(eflags, -1, MEMH_U64),
#undef R
};

static const struct reg_name *reg_named(const char *name)
{
    for (size_t i = 0; i < sizeof regs / sizeof *regs; i++)
        if (strcmp(regs[i].name, name) == 0)
            return &regs[i];
    return NULL;
}

static const struct reg_name *reg_numbered(int dwarf)
{
    for (size_t i = 0; i < sizeof regs / sizeof *regs; i++)
        if (regs[i].dwarf == dwarf)
            return &regs[i];
    return NULL;
}

bool framevars_set_register(struct user_regs_struct *raw, int regno, uint64_t value)
{
    const struct reg_name *r = reg_numbered(regno);
    if (!r)
        return false;
    memcpy((char *)raw + r->offset, &value, sizeof value);
    return true;
}

void framevars_frame0(struct frame_ctx *f, pid_t tid, pid_t pid,
                      const struct user_regs_struct *rs, const struct module *mods,
                      size_t n_mods)
{
    *f = (struct frame_ctx){.tid = tid, .pid = pid, .pc = rs->rip, .has_raw = true,
                            .raw = *rs};
    for (size_t i = 0; i < sizeof regs / sizeof *regs; i++)
        if (regs[i].dwarf >= 0) {
            memcpy(&f->regs.val[regs[i].dwarf], (const char *)rs + regs[i].offset,
                   sizeof(uint64_t));
            f->regs.known |= 1u << regs[i].dwarf;
        }
    struct module *own = NULL;
    size_t n_own = 0;
    if (!mods && procmem_modules(pid, &own, &n_own) == 0) {
        mods = own;
        n_mods = n_own;
    }
    for (size_t i = 0; i < n_mods; i++)
        if (f->pc >= mods[i].start && f->pc < mods[i].end) {
            snprintf(f->module, sizeof f->module, "%s", mods[i].path);
            f->bias = mods[i].bias;
            break;
        }
    free(own);
}

static int register_value(const struct frame_ctx *f, const struct reg_name *r,
                          struct varres *out, struct strobe_error *e)
{
    uint64_t v;
    if (f->has_raw)
        memcpy(&v, (const char *)&f->raw + r->offset, sizeof v);
    else if (r->dwarf >= 0 && (f->regs.known & (1u << r->dwarf)))
        v = f->regs.val[r->dwarf];
    else
        return err_set(e, ERR_VARIABLE_UNAVAILABLE, "%s is not known in this frame: a caller's "
                       "frame only knows the registers its callee saved (read it in frame 0).",
                       r->name);
    varres_set_type(out, varres_hint_type(r->hint));
    memcpy(out->bytes, &v, sizeof v);
    out->regno = f->has_raw ? r->dwarf : -1;
    return 0;
}

static int frame_lookup(void *ctx, const char *name, struct varres *out,
                        struct strobe_error *e)
{
    struct frame_ctx *f = ctx;
    if (name[0] == '$') {
        const struct reg_name *r = reg_named(name);
        if (!r)
            return err_set(e, ERR_VARIABLE_NOT_FOUND, "%s is not a register: $rax, $rbx, $rcx, "
                           "$rdx, $rsi, $rdi, $rbp, $rsp, $r8 ... $r15, $rip, $eflags.", name);
        return register_value(f, r, out, e);
    }
    if (!f->module[0])
        return 1;
    struct dw_var_where w;
    struct strobe_error why;
    uint64_t link_pc = f->pc - f->bias - (f->outer ? 1 : 0);
    int rc = dw_frame_var_find(f->module, link_pc, f->bias, &f->regs, procmem_read_ctx,
                               &f->memfd, name, &w, &why);
    if (rc > 0)
        return 1;
    if (rc < 0)
        return err_set(e, why.code, "'%s' of this frame: %s", name, why.msg);
    varres_set_type(out, w.type);
    out->decl_file = w.decl_file;
    out->decl_line = w.decl_line;
    snprintf(out->module, sizeof out->module, "%s", f->module);
    switch (w.kind) {
    case DWV_MEMORY:
        out->address = w.address;
        out->has_address = true;
        break;
    case DWV_REGISTER: {
        const struct reg_name *r = reg_numbered(w.regno);
        if (!r)
            return err_set(e, ERR_VARIABLE_UNAVAILABLE, "'%s' is kept in register %d, which "
                           "cannot be read here.", name, w.regno);
        if (register_value(f, r, out, e) != 0)
            return -1;
        varres_set_type(out, w.type);
        break;
    }
    case DWV_VALUE:
        memcpy(out->bytes, w.bytes, w.n_bytes < sizeof out->bytes ? w.n_bytes : sizeof out->bytes);
        out->regno = -1;
        break;
    }
    return 0;
}

void framevars_open(struct varres_process *p, struct frame_ctx *f, int memfd)
{
    varres_process_open(p, f->pid, memfd);
    f->memfd = memfd;
    p->frame = frame_lookup;
    p->frame_ctx = f;
}

/* ---- values for conditions and messages ---- */

static bool read_value(const struct varres_process *p, const struct varres *v, void *buf,
                       size_t len)
{
    if (!v->has_address) {
        memcpy(buf, v->bytes, len <= sizeof v->bytes ? len : sizeof v->bytes);
        return true;
    }
    return procmem_read(p->memfd, v->address, buf, len);
}

static int cond_string(const struct varres_process *p, uint64_t addr, size_t max,
                       struct cond_value *out, struct strobe_error *e)
{
    static __thread char text[8][COND_STRING_READ + 1];
    static __thread unsigned next;
    char *buf = text[next++ % 8];
    size_t n = 0;
    /* Byte runs up to the first NUL, stopping at the end of readable memory. */
    while (n < max) {
        size_t chunk = max - n < 64 ? max - n : 64;
        if (!procmem_read(p->memfd, addr + n, buf + n, chunk)) {
            if (chunk == 1 || !procmem_read(p->memfd, addr + n, buf + n, 1)) {
                if (n == 0)
                    return err_set(e, ERR_BAD_EXPRESSION,
                                   "the string at 0x%" PRIx64 " is unreadable", addr);
                break;
            }
            chunk = 1;
        }
        void *nul = memchr(buf + n, '\0', chunk);
        if (nul) {
            n = (size_t)((char *)nul - buf);
            break;
        }
        n += chunk;
    }
    buf[n] = '\0';
    *out = (struct cond_value){.kind = COND_STRING, .s = buf, .len = n};
    return 0;
}

int framevars_cond_resolve(void *ctx, const char *path, struct cond_value *out,
                           struct strobe_error *e)
{
    struct varres_process *p = ctx;
    struct varres v;
    if (varres_resolve_in(p, path, &v, e) != 0)
        return -1;
    const struct dw_type *t = v.type;
    unsigned char b[16] = {0};
    size_t size = v.size;
    bool char_target = t->target && t->target->kind == DWT_CHAR;
    if (t->kind == DWT_ARRAY && char_target) {
        if (!v.has_address)
            return err_set(e, ERR_BAD_EXPRESSION, "'%s' has no address", path);
        size_t max = t->count && t->count < COND_STRING_READ ? t->count : COND_STRING_READ;
        return cond_string(p, v.address, max, out, e);
    }
    if (t->kind == DWT_STRUCT || t->kind == DWT_UNION || t->kind == DWT_ARRAY ||
        size == 0 || size > sizeof b)
        return err_set(e, ERR_BAD_EXPRESSION, "'%s' is %s: compare one of its members or "
                       "elements", path, v.type_name);
    if (!read_value(p, &v, b, size))
        return err_set(e, ERR_BAD_EXPRESSION, "'%s' at 0x%" PRIx64 " is unreadable", path,
                       v.address);
    if (t->kind == DWT_FLOAT) {
        double d = 0;
        if (size == 4) {
            float x;
            memcpy(&x, b, 4);
            d = x;
        } else if (size == 8) {
            memcpy(&d, b, 8);
        } else {
            long double x;
            memcpy(&x, b, sizeof x < sizeof b ? sizeof x : sizeof b);
            d = (double)x;
        }
        *out = (struct cond_value){.kind = COND_FLOAT, .f = d};
        return 0;
    }
    uint64_t u = 0;
    memcpy(&u, b, size < 8 ? size : 8);
    if (t->kind == DWT_POINTER || t->kind == DWT_REFERENCE) {
        if (char_target && t->kind == DWT_POINTER) {
            if (!u) {
                *out = (struct cond_value){.kind = COND_STRING, .s = NULL};
                return 0;
            }
            return cond_string(p, u, COND_STRING_READ, out, e);
        }
        *out = (struct cond_value){.kind = COND_UINT, .u = u};
        return 0;
    }
    if (value_int_signed(t) && size < 8) {
        unsigned shift = (unsigned)(64 - 8 * size);
        int64_t i = (int64_t)(u << shift) >> shift;
        *out = (struct cond_value){.kind = COND_INT, .i = i};
    } else if (value_int_signed(t)) {
        *out = (struct cond_value){.kind = COND_INT, .i = (int64_t)u};
    } else {
        *out = (struct cond_value){.kind = COND_UINT, .u = u};
    }
    return 0;
}

void framevars_render(struct varres_process *p, const char *expr, struct strbuf *out)
{
    struct varres v;
    struct strobe_error e = {0};
    if (varres_resolve_in(p, expr, &v, &e) != 0) {
        sb_printf(out, "<error: %s>", e.msg);
        return;
    }
    const struct dw_type *t = v.type;
    bool plain_pointer = (t->kind == DWT_POINTER || t->kind == DWT_REFERENCE) &&
                         !(t->target && t->target->kind == DWT_CHAR);
    uint64_t ptr = 0;
    if (plain_pointer && v.size == sizeof ptr &&
        (v.has_address ? procmem_read(p->memfd, v.address, &ptr, sizeof ptr)
                       : (memcpy(&ptr, v.bytes, sizeof ptr), true))) {
        /* A pointer reads as its address in a message (what one greps for), not as
         * the struct it points to. */
        sb_printf(out, "0x%" PRIx64, ptr);
        return;
    }
    struct strbuf json = {0};
    varres_render(procmem_read_ctx, &p->memfd, &v, 1, false, &json);
    const char *s = json.buf ? json.buf : "";
    size_t len = json.len;
    /* A string reads as itself in a message: its JSON quotes go (escapes stay). */
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"')
        sb_append(out, s + 1, len - 2);
    else
        sb_append(out, s, len);
    sb_free(&json);
}
