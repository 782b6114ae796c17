/*
 * location.c - where a variable of a stopped frame lives (dwarf_internal.h,
 * dw_locate): its DWARF location expression at the frame's pc, evaluated against the
 * frame's registers, its frame base (DW_AT_frame_base) and its canonical frame
 * address (the caller's stack pointer when the unwinder knows it, else computed from
 * the file's CFI). The result is an address, a register, a computed value, the bytes
 * of a constant, "optimized out", or a reason it cannot be had; frame.c turns it into
 * a typed value.
 *
 * Supported: the stack machine's arithmetic (div and mod included), comparison and
 * stack operations, DW_OP_addr/addrx
 * (plus the load bias), DW_OP_reg*, DW_OP_breg*, DW_OP_fbreg, DW_OP_call_frame_cfa,
 * DW_OP_deref(_size), DW_OP_stack_value, DW_OP_implicit_value, location lists and
 * DW_AT_const_value. Pieces, entry values, typed and TLS operations and branches are
 * reported by name as unavailable.
 */
#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_internal.h"

enum {
    STACK_MAX = 64,     /* DWARF expression stack */
    N_REGS = 17,        /* struct dw_regs */
};

static bool fail(struct dw_loc *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct dw_loc *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->why, sizeof l->why, fmt, ap);
    va_end(ap);
    l->kind = DW_LOC_FAIL;
    return false;
}

/* Operations that may appear in locations and that this evaluator does not do. */
static bool unsupported(struct dw_loc *l, unsigned atom)
{
    static const struct {
        unsigned atom;
        const char *name;
    } names[] = {
        {DW_OP_piece, "DW_OP_piece"},
        {DW_OP_bit_piece, "DW_OP_bit_piece"},
        {DW_OP_entry_value, "DW_OP_entry_value"},
        {DW_OP_GNU_entry_value, "DW_OP_GNU_entry_value"},
        {DW_OP_implicit_pointer, "DW_OP_implicit_pointer"},
        {DW_OP_GNU_implicit_pointer, "DW_OP_GNU_implicit_pointer"},
        {DW_OP_GNU_parameter_ref, "DW_OP_GNU_parameter_ref"},
        {DW_OP_regval_type, "DW_OP_regval_type"},
        {DW_OP_GNU_regval_type, "DW_OP_GNU_regval_type"},
        {DW_OP_deref_type, "DW_OP_deref_type"},
        {DW_OP_GNU_deref_type, "DW_OP_GNU_deref_type"},
        {DW_OP_const_type, "DW_OP_const_type"},
        {DW_OP_GNU_const_type, "DW_OP_GNU_const_type"},
        {DW_OP_convert, "DW_OP_convert"},
        {DW_OP_GNU_convert, "DW_OP_GNU_convert"},
        {DW_OP_reinterpret, "DW_OP_reinterpret"},
        {DW_OP_form_tls_address, "DW_OP_form_tls_address"},
        {DW_OP_GNU_push_tls_address, "DW_OP_GNU_push_tls_address"},
        {DW_OP_push_object_address, "DW_OP_push_object_address"},
        {DW_OP_call2, "DW_OP_call2"},
        {DW_OP_call4, "DW_OP_call4"},
        {DW_OP_call_ref, "DW_OP_call_ref"},
        {DW_OP_bra, "DW_OP_bra"},
        {DW_OP_skip, "DW_OP_skip"},
        {DW_OP_constx, "DW_OP_constx"},
    };
    if (atom == DW_OP_entry_value || atom == DW_OP_GNU_entry_value)
        return fail(l, "known only at the entry (DW_OP_entry_value): read it in the caller, "
                       "frame 1"); /* within DW_LOC_WHY_MAX */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].atom == atom)
            return fail(l, "%s", names[i].name);
    return fail(l, "DW_OP_0x%02x", atom);
}

static bool reg_value(const struct dw_frame_ctx *e, uint64_t reg, uint64_t *v, struct dw_loc *l)
{
    if (reg < N_REGS && e->regs && (e->regs->known >> reg & 1)) {
        *v = e->regs->val[reg];
        return true;
    }
    return fail(l, "register %" PRIu64 " not saved", reg);
}

/* The word a location stands for when used as an address (frame base, CFA): the
 * address of a memory location, the content of a register, a computed value. */
bool dw_loc_word(const struct dw_frame_ctx *e, struct dw_loc *l, uint64_t *v)
{
    switch (l->kind) {
    case DW_LOC_MEM:
    case DW_LOC_VALUE:
        *v = l->v;
        return true;
    case DW_LOC_REG:
        return reg_value(e, l->v, v, l);
    case DW_LOC_FAIL:
        return false;
    default:
        return fail(l, "no address");
    }
}

static bool eval_ops(struct dw_frame_ctx *e, Dwarf_Attribute *attr, const Dwarf_Op *ops, size_t n,
                     struct dw_loc *l);

static bool frame_base(struct dw_frame_ctx *e, uint64_t *v, struct dw_loc *l)
{
    if (e->fb_state == 0) {
        e->fb_state = -1;
        snprintf(e->fb_why, sizeof e->fb_why, "no frame base");
        Dwarf_Attribute at;
        Dwarf_Op *ops;
        size_t nops;
        struct dw_loc fl = {0};
        if (dwarf_attr_integrate(e->fn, DW_AT_frame_base, &at) &&
            dwarf_getlocation_addr(&at, e->pc, &ops, &nops, 1) == 1 && nops > 0) {
            if (eval_ops(e, &at, ops, nops, &fl) && dw_loc_word(e, &fl, &e->fb))
                e->fb_state = 1;
            else
                snprintf(e->fb_why, sizeof e->fb_why, "%s", fl.why);
        }
    }
    if (e->fb_state < 0)
        return fail(l, "%s", e->fb_why);
    *v = e->fb;
    return true;
}

/* The CFA: the caller's, else from the CFI of the file at pc (.eh_frame first). */
static bool frame_cfa(struct dw_frame_ctx *e, uint64_t *v, struct dw_loc *l)
{
    if (e->regs && e->regs->cfa) {
        *v = e->regs->cfa;
        return true;
    }
    if (e->cfa_state == 0) {
        e->cfa_state = -1;
        snprintf(e->cfa_why, sizeof e->cfa_why, "no CFA");
        Dwarf_CFI *cfis[2] = {e->cfi[0], e->cfi[1]};
        for (int i = 0; i < 2; i++) {
            Dwarf_Frame *fr;
            if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], e->pc, &fr) != 0)
                continue;
            Dwarf_Op *ops;
            size_t nops;
            struct dw_loc cl = {0};
            if (dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops > 0 &&
                eval_ops(e, NULL, ops, nops, &cl) && dw_loc_word(e, &cl, &e->cfa))
                e->cfa_state = 1;
            else if (cl.kind == DW_LOC_FAIL)
                snprintf(e->cfa_why, sizeof e->cfa_why, "%s", cl.why);
            free(fr);
            break;
        }
    }
    if (e->cfa_state < 0)
        return fail(l, "%s", e->cfa_why);
    *v = e->cfa;
    return true;
}

/* Evaluates a location expression into l. attr is the attribute it came from, which
 * DW_OP_implicit_value and DW_OP_addrx need; NULL for a CFA rule. */
static bool eval_ops(struct dw_frame_ctx *e, Dwarf_Attribute *attr, const Dwarf_Op *ops, size_t n,
                     struct dw_loc *l)
{
    uint64_t st[STACK_MAX], v = 0;
    size_t sp = 0;
    for (size_t i = 0; i < n; i++) {
        const Dwarf_Op *op = &ops[i];
        unsigned a = op->atom;
        bool last = i + 1 == n;
        size_t need = 0; /* operands the operation pops */
        switch (a) {
        case DW_OP_plus_uconst: case DW_OP_neg: case DW_OP_not: case DW_OP_deref:
        case DW_OP_deref_size: case DW_OP_dup: case DW_OP_drop: case DW_OP_stack_value:
        case DW_OP_abs:
            need = 1;
            break;
        case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
        case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_swap:
        case DW_OP_over: case DW_OP_div: case DW_OP_mod: case DW_OP_eq: case DW_OP_ne:
        case DW_OP_lt: case DW_OP_gt: case DW_OP_le: case DW_OP_ge:
            need = 2;
            break;
        case DW_OP_rot:
            need = 3;
            break;
        case DW_OP_pick:
            need = (size_t)op->number + 1;
            break;
        }
        if (sp < need)
            return fail(l, "malformed location");
        if (sp == STACK_MAX)
            return fail(l, "location too deep");
        uint64_t x = sp ? st[sp - 1] : 0, y = sp > 1 ? st[sp - 2] : 0;
        if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
            st[sp++] = a - DW_OP_lit0;
        } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
            if (!reg_value(e, a - DW_OP_breg0, &v, l))
                return false;
            st[sp++] = v + op->number;
        } else if ((a >= DW_OP_reg0 && a <= DW_OP_reg31) || a == DW_OP_regx) {
            if (!last)
                return unsupported(l, ops[i + 1].atom);
            l->kind = DW_LOC_REG;
            l->v = a == DW_OP_regx ? op->number : a - DW_OP_reg0;
            return true;
        } else {
            switch (a) {
            case DW_OP_addr:
                st[sp++] = op->number + e->bias;
                break;
            case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
            case DW_OP_constu: case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s:
            case DW_OP_const8s: case DW_OP_consts:
                st[sp++] = op->number; /* libdw sign-extends the signed ones */
                break;
            case DW_OP_fbreg:
                if (!frame_base(e, &v, l))
                    return false;
                st[sp++] = v + op->number;
                break;
            case DW_OP_addrx:
            case DW_OP_GNU_addr_index: {
                Dwarf_Attribute r;
                if (!attr || dwarf_getlocation_attr(attr, op, &r) != 0 ||
                    dwarf_formaddr(&r, &v) != 0)
                    return fail(l, "malformed location");
                st[sp++] = v + e->bias;
                break;
            }
            case DW_OP_bregx:
                if (!reg_value(e, op->number, &v, l))
                    return false;
                st[sp++] = v + op->number2;
                break;
            case DW_OP_call_frame_cfa:
                if (!frame_cfa(e, &v, l))
                    return false;
                st[sp++] = v;
                break;
            case DW_OP_plus_uconst: st[sp - 1] = x + op->number; break;
            case DW_OP_neg: st[sp - 1] = -x; break;
            case DW_OP_not: st[sp - 1] = ~x; break;
            case DW_OP_plus: st[--sp - 1] = y + x; break;
            case DW_OP_minus: st[--sp - 1] = y - x; break;
            case DW_OP_mul: st[--sp - 1] = y * x; break;
            case DW_OP_and: st[--sp - 1] = y & x; break;
            case DW_OP_or: st[--sp - 1] = y | x; break;
            case DW_OP_xor: st[--sp - 1] = y ^ x; break;
            case DW_OP_shl: st[--sp - 1] = x < 64 ? y << x : 0; break;
            case DW_OP_shr: st[--sp - 1] = x < 64 ? y >> x : 0; break;
            case DW_OP_shra:
                st[--sp - 1] = (uint64_t)((int64_t)y >> (x < 64 ? x : 63));
                break;
            case DW_OP_abs: st[sp - 1] = (int64_t)x < 0 ? -x : x; break;
            /* div is signed, mod unsigned, as gdb does on DWARF's generic type */
            case DW_OP_div:
                if (x == 0 || ((int64_t)x == -1 && y == (uint64_t)INT64_MIN))
                    return fail(l, "division by zero in the location");
                st[--sp - 1] = (uint64_t)((int64_t)y / (int64_t)x);
                break;
            case DW_OP_mod:
                if (x == 0)
                    return fail(l, "division by zero in the location");
                st[--sp - 1] = y % x;
                break;
            case DW_OP_eq: st[--sp - 1] = y == x; break;
            case DW_OP_ne: st[--sp - 1] = y != x; break;
            case DW_OP_lt: st[--sp - 1] = (int64_t)y < (int64_t)x; break;
            case DW_OP_gt: st[--sp - 1] = (int64_t)y > (int64_t)x; break;
            case DW_OP_le: st[--sp - 1] = (int64_t)y <= (int64_t)x; break;
            case DW_OP_ge: st[--sp - 1] = (int64_t)y >= (int64_t)x; break;
            case DW_OP_rot: /* the top three: x y z -> y z x, top last */
                st[sp - 1] = y, st[sp - 2] = st[sp - 3], st[sp - 3] = x;
                break;
            case DW_OP_pick: st[sp] = st[sp - 1 - op->number], sp++; break;
            case DW_OP_dup: st[sp++] = x; break;
            case DW_OP_drop: sp--; break;
            case DW_OP_swap: st[sp - 1] = y, st[sp - 2] = x; break;
            case DW_OP_over: st[sp++] = y; break;
            case DW_OP_nop: break;
            case DW_OP_deref:
            case DW_OP_deref_size: {
                uint64_t size = a == DW_OP_deref ? 8 : op->number;
                v = 0;
                if (size == 0 || size > 8)
                    return fail(l, "malformed location");
                if (!e->rd(e->ctx, x, &v, size))
                    return fail(l, "memory at 0x%" PRIx64 " unreadable", x);
                st[sp - 1] = v;
                break;
            }
            case DW_OP_stack_value:
                if (!last)
                    return unsupported(l, ops[i + 1].atom);
                l->kind = DW_LOC_VALUE;
                l->v = x;
                return true;
            case DW_OP_implicit_value: {
                Dwarf_Block b;
                if (!attr || dwarf_getlocation_implicit_value(attr, op, &b) != 0)
                    return fail(l, "malformed location");
                if (!last)
                    return unsupported(l, ops[i + 1].atom);
                l->kind = DW_LOC_BYTES;
                l->bytes = b.data;
                l->len = b.length;
                return true;
            }
            default:
                return unsupported(l, a);
            }
        }
    }
    if (!sp)
        return fail(l, "malformed location");
    l->kind = DW_LOC_MEM;
    l->v = st[sp - 1];
    return true;
}

void dw_locate(struct dw_frame_ctx *e, Dwarf_Die *die, struct dw_loc *l)
{
    Dwarf_Attribute at;
    if (dwarf_attr_integrate(die, DW_AT_location, &at)) {
        Dwarf_Op *ops;
        size_t n;
        int k = dwarf_getlocation_addr(&at, e->pc, &ops, &n, 1);
        if (k < 0)
            fail(l, "%s", dwarf_errmsg(-1));
        else if (k > 0 && n > 0)
            eval_ops(e, &at, ops, n, l);
        return; /* else DW_LOC_NONE: no location at pc */
    }
    if (!dwarf_attr_integrate(die, DW_AT_const_value, &at))
        return;
    Dwarf_Block b;
    Dwarf_Sword s;
    Dwarf_Word u;
    switch (dwarf_whatform(&at)) {
    case DW_FORM_block: case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4:
    case DW_FORM_data16:
        if (dwarf_formblock(&at, &b) == 0) {
            l->kind = DW_LOC_BYTES;
            l->bytes = b.data;
            l->len = b.length;
            return;
        }
        break;
    case DW_FORM_sdata: case DW_FORM_implicit_const:
        if (dwarf_formsdata(&at, &s) == 0) {
            l->kind = DW_LOC_VALUE;
            l->v = (uint64_t)s;
            return;
        }
        break;
    default:
        if (dwarf_formudata(&at, &u) == 0) {
            l->kind = DW_LOC_VALUE;
            l->v = u;
            return;
        }
    }
    fail(l, "DW_AT_const_value in form 0x%x", dwarf_whatform(&at));
}
