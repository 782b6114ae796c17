/*
 * fastcode.c - the fast path's entry and return trampolines, as bytes. See
 * fastcode.h for their layout; reloc.c relocates the displaced instructions.
 */
#include "ptrace/hooks/fastcode.h"

#include <stdio.h>
#include <string.h>

#include "ptrace/hooks/fast_abi.h"

#define FRAME 200 /* the entry trampoline's stack: struct fast_saved and alignment */

_Static_assert(sizeof(struct fast_saved) <= FRAME && (FRAME + 8) % 16 == 0,
               "the entry trampoline's frame");
_Static_assert(sizeof(struct fast_ret_saved) == 48, "the return trampoline's frame");

struct emit {
    uint8_t *p;
    size_t n;
};

static void bytes(struct emit *e, const uint8_t *b, size_t n)
{
    memcpy(e->p + e->n, b, n);
    e->n += n;
}

static void imm(struct emit *e, uint64_t v, size_t n)
{
    memcpy(e->p + e->n, &v, n); /* little-endian */
    e->n += n;
}

/* An instruction with a [rsp+disp] operand: prefix bytes (REX included), then
 * ModRM with reg and SIB 0x24, disp8 or disp32. */
static void rsp_op(struct emit *e, const uint8_t *prefix, size_t n, unsigned reg,
                   uint32_t disp)
{
    bytes(e, prefix, n);
    bool short_disp = disp < 128;
    e->p[e->n++] = (uint8_t)((short_disp ? 0x44 : 0x84) | (reg & 7) << 3);
    e->p[e->n++] = 0x24;
    imm(e, disp, short_disp ? 1 : 4);
}

/* mov [rsp+disp], r64 (store) or mov r64, [rsp+disp] (load); reg is the register's
 * number (8..15: r8..r15). */
static void mov_rsp(struct emit *e, bool store, unsigned reg, uint32_t disp)
{
    uint8_t op[2] = {(uint8_t)(0x48 | (reg >= 8 ? 4 : 0)), store ? 0x89 : 0x8B};
    rsp_op(e, op, 2, reg, disp);
}

/* movdqu [rsp+disp], xmm (store) or movdqu xmm, [rsp+disp] (load), xmm0..7. */
static void movdqu_rsp(struct emit *e, bool store, unsigned xmm, uint32_t disp)
{
    uint8_t op[3] = {0xF3, 0x0F, store ? 0x7F : 0x6F};
    rsp_op(e, op, 3, xmm, disp);
}

static void movabs(struct emit *e, unsigned reg, uint64_t v) /* rax..rdi only */
{
    e->p[e->n++] = 0x48;
    e->p[e->n++] = (uint8_t)(0xB8 + reg);
    imm(e, v, 8);
}

enum { RAX = 0, RCX = 1, RDX = 2, RSI = 6, RDI = 7, R8 = 8, R9 = 9, R10 = 10, R11 = 11 };

/* Where the entry trampoline keeps r11, past struct fast_saved. */
#define R11_SLOT 192
/* The return trampoline's frame: struct fast_ret_saved, the caller-saved registers
 * the return does not define, and the return address's old slot. */
static const unsigned ret_kept[7] = {RCX, RSI, RDI, R8, R9, R10, R11};
#define RET_KEPT_OFF 48
#define RET_SLOT (RET_KEPT_OFF + 8 * 7)
#define RET_FRAME (RET_SLOT + 8)

_Static_assert(sizeof(struct fast_saved) == R11_SLOT && R11_SLOT + 8 <= FRAME,
               "r11's place in the entry trampoline's frame");
_Static_assert(RET_FRAME % 16 == 0, "the return trampoline's call is 16-byte aligned");

/* struct fast_saved's integer registers, in its order. */
static const unsigned saved_regs[8] = {RDI, RSI, RDX, RCX, R8, R9, RAX, R10};

/* The entry trampoline's own code, up to the displaced instructions. */
static size_t entry_code(uint8_t *out, uint64_t area, uint64_t enter_addr, uint32_t fn)
{
    static const uint8_t sub_rsp[3] = {0x48, 0x81, 0xEC}, add_rsp[3] = {0x48, 0x81, 0xC4};
    static const uint8_t mov_rsi_rsp[3] = {0x48, 0x89, 0xE6}, call_rax[2] = {0xFF, 0xD0};
    static const uint8_t lea_rcx[2] = {0x48, 0x8D};
    struct emit e = {out, 0};
    bytes(&e, sub_rsp, 3);
    imm(&e, FRAME, 4);
    for (unsigned i = 0; i < 8; i++)
        mov_rsp(&e, true, saved_regs[i], 8 * i);
    mov_rsp(&e, true, R11, R11_SLOT);
    for (unsigned i = 0; i < 8; i++)
        movdqu_rsp(&e, true, i, (uint32_t)offsetof(struct fast_saved, xmm) + 16 * i);
    movabs(&e, RDI, area);
    bytes(&e, mov_rsi_rsp, 3);
    e.p[e.n++] = 0xBA; /* mov edx, imm32 */
    imm(&e, fn, 4);
    rsp_op(&e, lea_rcx, 2, RCX, FRAME); /* the return address's slot */
    movabs(&e, RAX, enter_addr);
    bytes(&e, call_rax, 2);
    for (unsigned i = 0; i < 8; i++)
        mov_rsp(&e, false, saved_regs[i], 8 * i);
    mov_rsp(&e, false, R11, R11_SLOT);
    bytes(&e, add_rsp, 3);
    imm(&e, FRAME, 4);
    return e.n;
}

bool fastcode_jump_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                        uint64_t area, uint64_t enter_addr, uint32_t fn, struct fastjump *out)
{
    memset(out, 0, sizeof *out);
    struct entryjump ej = {.tramp = out->tramp, .cap = FASTJUMP_SLOT_SIZE};
    ej.off = entry_code(out->tramp, area, enter_addr, fn);
    const char *why = reloc_entry_jump(code, len, at, tramp_at, &ej);
    if (why) {
        memset(out, 0, sizeof *out);
        snprintf(out->why, sizeof out->why, "%s", why);
        return false;
    }
    memcpy(out->patch, ej.patch, FASTJUMP_LEN);
    out->displaced = (uint8_t)ej.displaced;
    out->resume = (uint16_t)ej.off;
    out->tramp_len = ej.tramp_len;
    return true;
}

size_t fastcode_return(uint8_t *out, size_t cap, uint64_t at, uint64_t area,
                       uint64_t exit_addr)
{
    (void)at; /* position-independent: see fastcode.h */
    static const uint8_t sub_rsp[4] = {0x48, 0x83, 0xEC, RET_FRAME};
    static const uint8_t add_rsp[4] = {0x48, 0x83, 0xC4, RET_SLOT};
    static const uint8_t mov_rsi_rsp[3] = {0x48, 0x89, 0xE6}, call_rax[2] = {0xFF, 0xD0};
    static const uint8_t lea_rdx[2] = {0x48, 0x8D};
    uint8_t buf[FASTCODE_RETURN_LEN + 16];
    struct emit e = {buf, 0};
    bytes(&e, sub_rsp, 4);
    mov_rsp(&e, true, RAX, 0);
    mov_rsp(&e, true, RDX, 8);
    movdqu_rsp(&e, true, 0, 16);
    movdqu_rsp(&e, true, 1, 32);
    for (unsigned i = 0; i < 7; i++)
        mov_rsp(&e, true, ret_kept[i], RET_KEPT_OFF + 8 * i);
    movabs(&e, RDI, area);
    bytes(&e, mov_rsi_rsp, 3);
    rsp_op(&e, lea_rdx, 2, RDX, RET_SLOT); /* entry rsp: where the return address was */
    movabs(&e, RAX, exit_addr);
    bytes(&e, call_rax, 2);
    mov_rsp(&e, true, RAX, RET_SLOT);
    mov_rsp(&e, false, RAX, 0);
    mov_rsp(&e, false, RDX, 8);
    movdqu_rsp(&e, false, 0, 16);
    movdqu_rsp(&e, false, 1, 32);
    for (unsigned i = 0; i < 7; i++)
        mov_rsp(&e, false, ret_kept[i], RET_KEPT_OFF + 8 * i);
    bytes(&e, add_rsp, 4);
    e.p[e.n++] = 0xC3;
    if (e.n > cap)
        return 0;
    memcpy(out, buf, e.n);
    return e.n;
}
