/*
 * abi.c - System V x86-64 argument and return value locations. See abi.h for the
 * classification rules this implements.
 *
 * A type is classified into up to two eightbyte classes (or MEMORY); the argument
 * walk then hands out general and xmm registers in order, copies the eightbytes of a
 * register-passed value into a local buffer and lets value.c render it, or renders a
 * stack-passed value from its address.
 */
#include "dwarf/abi.h"

#include <string.h>

enum abi_class { CLASS_NONE, CLASS_INTEGER, CLASS_SSE, CLASS_SSEUP, CLASS_X87, CLASS_X87UP,
                 CLASS_MEMORY };

enum { NESTING_MAX = 64, INT_ARG_REGS = 6, SSE_ARG_REGS = 8 };

struct classes {
    bool memory;            /* passed / returned in memory */
    int n;                  /* eightbytes (0 for an empty object) */
    enum abi_class eb[2];
};

static bool is_x87(const struct dw_type *t)
{
    return t->kind == DWT_FLOAT && t->size > 8 && !(t->name && strstr(t->name, "128"));
}

static bool is_float128(const struct dw_type *t)
{
    return t->kind == DWT_FLOAT && t->size == 16 && t->name && strstr(t->name, "128");
}

static uint64_t scalar_size(const struct dw_type *t)
{
    bool pointer_like = t->kind == DWT_POINTER || t->kind == DWT_REFERENCE;
    return pointer_like && t->size == 0 ? 8 : t->size;
}

static uint64_t natural_align(const struct dw_type *t, int nesting)
{
    if (!t || nesting > NESTING_MAX)
        return 1;
    switch (t->kind) {
    case DWT_STRUCT:
    case DWT_UNION: {
        uint64_t align = 1;
        for (size_t i = 0; i < t->n_members; i++) {
            uint64_t a = natural_align(t->members[i].type, nesting + 1);
            align = a > align ? a : align;
        }
        return align;
    }
    case DWT_ARRAY:
        return natural_align(t->target, nesting + 1);
    case DWT_VOID:
    case DWT_FUNCTION:
        return 1;
    default: {
        uint64_t size = scalar_size(t);
        if (is_x87(t))
            return 16;
        return size && size <= 16 && (size & (size - 1)) == 0 ? size : 1;
    }
    }
}

static enum abi_class merge(enum abi_class a, enum abi_class b)
{
    if (a == b || b == CLASS_NONE)
        return a;
    if (a == CLASS_NONE)
        return b;
    if (a == CLASS_MEMORY || b == CLASS_MEMORY)
        return CLASS_MEMORY;
    if (a == CLASS_INTEGER || b == CLASS_INTEGER)
        return CLASS_INTEGER;
    if (a == CLASS_X87 || a == CLASS_X87UP || b == CLASS_X87 || b == CLASS_X87UP)
        return CLASS_MEMORY;
    return CLASS_SSE;
}

/* Marks the eightbytes holding bits [first_bit, first_bit + n_bits) as INTEGER. */
static bool mark_integer_bits(enum abi_class eb[2], uint64_t first_bit, uint64_t n_bits)
{
    if (n_bits == 0)
        return true;
    uint64_t last_bit = first_bit + n_bits - 1;
    if (last_bit >= 128 || last_bit < first_bit)
        return false;
    for (uint64_t i = first_bit / 64; i <= last_bit / 64; i++)
        eb[i] = merge(eb[i], CLASS_INTEGER);
    return true;
}

/* Merges the classes of a t at byte off into eb; false means MEMORY. */
static bool classify_at(const struct dw_type *t, uint64_t off, enum abi_class eb[2], int nesting)
{
    if (!t || nesting > NESTING_MAX)
        return false;
    switch (t->kind) {
    case DWT_STRUCT:
    case DWT_UNION:
        for (size_t i = 0; i < t->n_members; i++) {
            const struct dw_member *m = &t->members[i];
            uint64_t moff = off + m->offset;
            if (moff < off || moff >= 16)
                return false;
            bool ok = m->bit_size ? mark_integer_bits(eb, moff * 8 + m->bit_offset, m->bit_size)
                                  : classify_at(m->type, moff, eb, nesting + 1);
            if (!ok)
                return false;
        }
        return true;
    case DWT_ARRAY: {
        uint64_t esize = t->target ? t->target->size : 0;
        for (uint64_t i = 0; esize && i < t->count; i++) {
            uint64_t eoff = off + i * esize;
            if (eoff >= 16 || !classify_at(t->target, eoff, eb, nesting + 1))
                return false;
        }
        return true;
    }
    case DWT_VOID:
    case DWT_FUNCTION:
        return false;
    default:
        break;
    }
    uint64_t size = scalar_size(t);
    if (size == 0)
        return true;
    if (off % natural_align(t, nesting) != 0 || off + size > 16)
        return false;
    if (is_x87(t)) {
        eb[0] = merge(eb[0], CLASS_X87);
        eb[1] = merge(eb[1], CLASS_X87UP);
    } else if (is_float128(t)) {
        eb[0] = merge(eb[0], CLASS_SSE);
        eb[1] = merge(eb[1], CLASS_SSEUP);
    } else if (t->kind == DWT_FLOAT) {
        eb[off / 8] = merge(eb[off / 8], size <= 8 ? CLASS_SSE : CLASS_MEMORY);
    } else {
        return mark_integer_bits(eb, off * 8, size * 8);
    }
    return true;
}

static struct classes classify(const struct dw_type *t)
{
    struct classes c = {.eb = {CLASS_NONE, CLASS_NONE}};
    if (t->size > 16 || !classify_at(t, 0, c.eb, 0)) {
        c.memory = true;
        return c;
    }
    c.n = (int)((scalar_size(t) + 7) / 8);
    for (int i = 0; i < c.n; i++)
        if (c.eb[i] == CLASS_MEMORY)
            c.memory = true;
    if (c.eb[1] == CLASS_X87UP && c.eb[0] != CLASS_X87)
        c.memory = true;
    if (c.eb[0] == CLASS_X87 && c.eb[1] != CLASS_X87UP)
        c.memory = true;
    if (c.eb[1] == CLASS_SSEUP && c.eb[0] != CLASS_SSE)
        c.eb[1] = CLASS_SSE;
    return c;
}

static bool has_type(const struct dw_type *t) { return t && t->kind != DWT_VOID; }

bool abi_returns_in_memory(const struct dw_type *ret)
{
    return has_type(ret) && classify(ret).memory;
}

static int count_class(const struct classes *c, enum abi_class k)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        n += c->eb[i] == k;
    return n;
}

/* Copies the eightbytes of a register-held value into bytes, taking the next
 * general registers from gpr[*next_int] and xmm registers from xmm[*next_sse]. */
static void gather(const struct classes *c, uint8_t bytes[16], const uint64_t *gpr,
                   int *next_int, const uint8_t (*xmm)[16], int *next_sse)
{
    for (int i = 0; i < c->n; i++) {
        switch (c->eb[i]) {
        case CLASS_INTEGER:
            memcpy(bytes + 8 * i, &gpr[(*next_int)++], 8);
            break;
        case CLASS_SSE:
            memcpy(bytes + 8 * i, xmm[(*next_sse)++], 8);
            break;
        case CLASS_SSEUP:
            memcpy(bytes + 8 * i, xmm[*next_sse - 1] + 8, 8);
            break;
        default:
            break;
        }
    }
}

static size_t budget_of(const struct value_opts *o)
{
    return o && o->max_output ? o->max_output : VALUE_DEFAULT_MAX_OUTPUT;
}

void abi_args_json(struct strbuf *out, const struct dw_function *f, const struct abi_regs *r,
                   mem_read_fn rd, void *ctx, const struct value_opts *o)
{
    const uint64_t gpr[INT_ARG_REGS] = {r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9};
    int next_int = abi_returns_in_memory(f->return_type) ? 1 : 0, next_sse = 0;
    uint64_t stack = r->rsp + 8;
    size_t start_len = out->len, budget = budget_of(o);
    struct value_opts each = o ? *o : (struct value_opts){0};

    sb_puts(out, "[");
    for (size_t i = 0; i < f->n_params; i++) {
        const struct dw_param *p = &f->params[i];
        /* A fair share: what is left, split over the arguments still to write, so
         * that one big struct does not take the budget of the others. */
        size_t used = out->len - start_len;
        size_t left = used < budget ? budget - used : 0;
        each.max_output = left / (f->n_params - i) ? left / (f->n_params - i) : 1;
        sb_puts(out, i ? ",{\"name\":" : "{\"name\":");
        if (p->name)
            sb_json_string(out, p->name);
        else
            sb_puts(out, "null");
        sb_puts(out, ",\"value\":");
        if (!has_type(p->type)) {
            if (next_int < INT_ARG_REGS)
                next_int++;
            else
                stack += 8;
            sb_puts(out, "null}");
            continue;
        }
        struct classes c = classify(p->type);
        bool in_regs = !c.memory && count_class(&c, CLASS_X87) == 0 &&
                       next_int + count_class(&c, CLASS_INTEGER) <= INT_ARG_REGS &&
                       next_sse + count_class(&c, CLASS_SSE) <= SSE_ARG_REGS;
        if (in_regs) {
            uint8_t bytes[16] = {0};
            gather(&c, bytes, gpr, &next_int, r->xmm, &next_sse);
            value_json(out, p->type, bytes, rd, ctx, &each);
        } else {
            uint64_t align = natural_align(p->type, 0) >= 16 ? 16 : 8;
            stack = (stack + align - 1) & ~(align - 1);
            value_json_at(out, p->type, stack, rd, ctx, &each);
            stack += (p->type->size + 7) & ~UINT64_C(7);
        }
        sb_puts(out, "}");
    }
    sb_puts(out, "]");
}

void abi_return_json(struct strbuf *out, const struct dw_type *ret, const struct abi_regs *r,
                     uint64_t hidden_ret_ptr, mem_read_fn rd, void *ctx,
                     const struct value_opts *o)
{
    if (!has_type(ret)) {
        sb_puts(out, "null");
        return;
    }
    struct classes c = classify(ret);
    if (c.memory) {
        value_json_at(out, ret, hidden_ret_ptr ? hidden_ret_ptr : r->rax, rd, ctx, o);
    } else if (c.n && c.eb[0] == CLASS_X87) {
        value_json(out, ret, r->st0, rd, ctx, o);
    } else {
        const uint64_t gpr[2] = {r->rax, r->rdx};
        int next_int = 0, next_sse = 0;
        uint8_t bytes[16] = {0};
        gather(&c, bytes, gpr, &next_int, r->xmm, &next_sse);
        value_json(out, ret, bytes, rd, ctx, o);
    }
}
