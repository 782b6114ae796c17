/*
 * reloc.c - relocation of displaced instructions with capstone. See reloc.h.
 *
 * Capstone 4 cannot decode some AVX-512/CET instructions found in libc; those, and
 * conditional branches and loops (rare as a function's first instruction), take
 * the single-step path.
 */
#include "ptrace/patch/reloc.h"

#include <capstone/capstone.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static csh handle;
static bool handle_ok;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* a csh is not thread-safe */

static void open_capstone(void)
{
    handle_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &handle) == CS_ERR_OK &&
                cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
}

static void single_step(struct reloc *out, const char *why)
{
    out->kind = RELOC_SINGLE_STEP;
    snprintf(out->why, sizeof out->why, "%s", why);
}

/* Appends `jmp rel32` to dest, or `jmp [rip+0]; .quad dest` when out of range. */
static void append_jump(struct reloc *out, uint64_t from, uint64_t dest)
{
    int64_t rel = (int64_t)(dest - (from + 5));
    uint8_t *p = out->slot + out->slot_len;
    if (rel == (int32_t)rel) {
        p[0] = 0xE9;
        int32_t r32 = (int32_t)rel;
        memcpy(p + 1, &r32, 4);
        out->slot_len += 5;
    } else {
        static const uint8_t abs_jmp[6] = {0xFF, 0x25, 0, 0, 0, 0};
        memcpy(p, abs_jmp, 6);
        memcpy(p + 6, &dest, 8);
        out->slot_len += 14;
    }
}

static bool is_relative_branch(const cs_insn *insn)
{
    const cs_detail *d = insn->detail;
    for (int i = 0; i < d->groups_count; i++)
        if (d->groups[i] == CS_GRP_BRANCH_RELATIVE)
            return true;
    return false;
}

/* The copy of insn (from at) placed at dest_at, in copy[]: a RIP-relative operand
 * gets its displacement fixed up. NULL, or why the copy cannot work there. */
static const char *fix_rip(const cs_insn *insn, uint64_t at, uint64_t dest_at, uint8_t *copy)
{
    const cs_x86 *x = &insn->detail->x86;
    bool rip_relative = false;
    for (int i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
            rip_relative = true;
    if (!rip_relative)
        return NULL;
    if (x->encoding.disp_offset == 0 || x->encoding.disp_size != 4)
        return "RIP-relative operand without a 32-bit displacement";
    int64_t target = (int64_t)(at + insn->size) + x->disp;
    int64_t disp = target - (int64_t)(dest_at + insn->size);
    if (disp != (int32_t)disp)
        return "RIP-relative target out of reach of the scratch area";
    int32_t d32 = (int32_t)disp;
    memcpy(copy + x->encoding.disp_offset, &d32, 4);
    return NULL;
}

static void plan(const cs_insn *insn, uint64_t at, uint64_t slot_at, struct reloc *out)
{
    const cs_x86 *x = &insn->detail->x86;
    out->insn_len = (uint8_t)insn->size;
    uint64_t next = at + insn->size;
    if (is_relative_branch(insn)) {
        bool imm = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;
        if (imm && insn->id == X86_INS_JMP) {
            out->kind = RELOC_EMULATE_JMP;
            out->target = (uint64_t)x->operands[0].imm;
        } else if (imm && insn->id == X86_INS_CALL) {
            out->kind = RELOC_EMULATE_CALL;
            out->target = (uint64_t)x->operands[0].imm;
        } else {
            single_step(out, "conditional or loop branch");
        }
        return;
    }
    memcpy(out->slot, insn->bytes, insn->size);
    out->slot_len = (uint8_t)insn->size;
    const char *why = fix_rip(insn, at, slot_at, out->slot);
    if (why) {
        single_step(out, why);
        return;
    }
    if (insn->id == X86_INS_RET || insn->id == X86_INS_RETF || insn->id == X86_INS_SYSCALL) {
        /* ret needs no jump back; syscall may restart at RIP-2, which must be the
         * original location. */
        if (insn->id != X86_INS_RET)
            single_step(out, "syscall or far return");
        else
            out->kind = RELOC_OUT_OF_LINE;
        return;
    }
    append_jump(out, slot_at + out->slot_len, next);
    out->kind = RELOC_OUT_OF_LINE;
}

void reloc_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t slot_at,
                struct reloc *out)
{
    memset(out, 0, sizeof *out);
    out->insn_len = 1;
    pthread_once(&once, open_capstone);
    if (!handle_ok) {
        single_step(out, "capstone is unavailable");
        return;
    }
    pthread_mutex_lock(&lock);
    cs_insn *insn = NULL;
    size_t n = cs_disasm(handle, code, len, at, 1, &insn);
    if (n == 1)
        plan(insn, at, slot_at, out);
    else
        single_step(out, "capstone cannot decode the instruction");
    if (insn)
        cs_free(insn, n);
    pthread_mutex_unlock(&lock);
}

enum insn_flow reloc_insn_flow(const uint8_t *code, size_t len, uint64_t at, size_t *insn_len)
{
    pthread_once(&once, open_capstone);
    if (!handle_ok)
        return INSN_UNKNOWN;
    enum insn_flow flow = INSN_UNKNOWN;
    pthread_mutex_lock(&lock);
    cs_insn *insn = NULL;
    size_t n = cs_disasm(handle, code, len, at, 1, &insn);
    if (n == 1) {
        *insn_len = insn->size;
        flow = INSN_OTHER;
        if (cs_insn_group(handle, insn, CS_GRP_CALL))
            flow = INSN_CALL;
        else if (cs_insn_group(handle, insn, CS_GRP_RET))
            flow = INSN_RET;
    }
    if (insn)
        cs_free(insn, n);
    pthread_mutex_unlock(&lock);
    return flow;
}

/* ---- the counting jump -------------------------------------------------------- */

static bool changes_flow(const cs_insn *insn)
{
    static const uint8_t groups[] = {CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT,
                                     CS_GRP_IRET, CS_GRP_BRANCH_RELATIVE};
    for (size_t i = 0; i < sizeof groups; i++)
        if (cs_insn_group(handle, insn, groups[i]))
            return true;
    return insn->id == X86_INS_SYSCALL || insn->id == X86_INS_SYSENTER;
}

/* A direct branch of insn to a target inside (at, at + n): the jump would land
 * inside its own rel32. */
static bool branches_into(const cs_insn *insn, uint64_t at, size_t n)
{
    if (!cs_insn_group(handle, insn, CS_GRP_BRANCH_RELATIVE))
        return false;
    const cs_x86 *x = &insn->detail->x86;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
        return false;
    uint64_t target = (uint64_t)x->operands[0].imm;
    return target > at && target < at + n;
}

static void put_rel32(uint8_t *p, uint64_t from_end, uint64_t dest)
{
    int32_t r = (int32_t)(int64_t)(dest - from_end);
    memcpy(p, &r, 4);
}

#define CALL_EMULATION_LEN 25 /* relocate_branch's form of a call */

/* A direct jmp, jcc or call among the displaced instructions, rewritten for the
 * trampoline at out (address out_at): a jump in its rel32 form to the same target;
 * a call, when it is the last displaced instruction (last), as a push of its own
 * return address (the original code right after it, past the patch: the callee
 * returns there, and unwinders see the real caller) and a jmp. Its length, or 0
 * when it is none of these, its target lies in the displaced bytes [at, at + n) (a
 * loop back onto the patch) or out of rel32 reach. */
static size_t relocate_branch(const cs_insn *insn, uint64_t at, size_t n, bool last,
                              uint8_t *out, uint64_t out_at)
{
    const cs_x86 *x = &insn->detail->x86;
    if (!cs_insn_group(handle, insn, CS_GRP_BRANCH_RELATIVE) || x->op_count != 1 ||
        x->operands[0].type != X86_OP_IMM)
        return 0;
    uint64_t target = (uint64_t)x->operands[0].imm;
    if (target >= at && target < at + n)
        return 0;
    const uint8_t *b = insn->bytes;
    size_t len;
    if (b[0] == 0xE8 && last) {                     /* call rel32 */
        static const uint8_t lea_rsp[5] = {0x48, 0x8D, 0x64, 0x24, 0xF8}; /* no flags */
        uint64_t ret = insn->address + insn->size;
        uint32_t lo = (uint32_t)ret, hi = (uint32_t)(ret >> 32);
        memcpy(out, lea_rsp, 5);
        out[5] = 0xC7, out[6] = 0x04, out[7] = 0x24; /* mov dword [rsp], lo */
        memcpy(out + 8, &lo, 4);
        out[12] = 0xC7, out[13] = 0x44, out[14] = 0x24, out[15] = 0x04; /* [rsp+4], hi */
        memcpy(out + 16, &hi, 4);
        out[20] = 0xE9;
        len = CALL_EMULATION_LEN;
    } else if (b[0] == 0xEB || b[0] == 0xE9) {     /* jmp rel8 / rel32 */
        out[0] = 0xE9;
        len = 5;
    } else if (b[0] >= 0x70 && b[0] <= 0x7F) {     /* jcc rel8 */
        out[0] = 0x0F;
        out[1] = (uint8_t)(0x80 + (b[0] - 0x70));
        len = 6;
    } else if (b[0] == 0x0F && b[1] >= 0x80 && b[1] <= 0x8F) { /* jcc rel32 */
        out[0] = 0x0F;
        out[1] = b[1];
        len = 6;
    } else {
        return 0;                                  /* loop, jrcxz, prefixed forms */
    }
    int64_t rel = (int64_t)target - (int64_t)(out_at + len);
    if (rel != (int32_t)rel)
        return 0;
    put_rel32(out + len - 4, out_at + len, target);
    return len;
}

/* The part of an entry jump that both kinds share, on the decoded function: the
 * whole instructions the jump displaces copied to tramp[off..] (which sits at
 * tramp_at + off, cap bytes in all), RIP-relative operands fixed up, direct jumps
 * and conditional jumps rewritten with rel32 to their targets, then the jump
 * back. NULL, or why the function cannot take it. */
static const char *plan_entry(const cs_insn *insns, size_t n, size_t len, uint64_t at,
                              uint64_t tramp_at, struct entryjump *ej)
{
    size_t off = ej->off, covered = 0, i, displaced = 0;
    for (i = 0; i < n && displaced < COUNTJUMP_LEN; i++)
        displaced += insns[i].size;
    for (i = 0; i < n && covered < COUNTJUMP_LEN; i++) {
        if (off + CALL_EMULATION_LEN + 5 > ej->cap)
            return "its first instructions are too long for a trampoline";
        if (changes_flow(&insns[i])) {
            bool last = covered + insns[i].size >= COUNTJUMP_LEN;
            size_t blen = relocate_branch(&insns[i], at, displaced, last, ej->tramp + off,
                                          tramp_at + off);
            if (!blen)
                return "a call, a return, an indirect branch or a branch into them in "
                       "its first 5 bytes";
            off += blen;
            covered += insns[i].size;
            continue;
        }
        memcpy(ej->tramp + off, insns[i].bytes, insns[i].size);
        const char *why = fix_rip(&insns[i], insns[i].address, tramp_at + off,
                                  ej->tramp + off);
        if (why)
            return why;
        off += insns[i].size;
        covered += insns[i].size;
    }
    if (covered < COUNTJUMP_LEN)
        return "shorter than 5 bytes";
    if (!n || insns[n - 1].address + insns[n - 1].size < at + len)
        return "capstone cannot decode the whole function";
    for (i = 0; i < n; i++)
        if (branches_into(&insns[i], at, covered))
            return "a branch in the function targets its first 5 bytes";
    int64_t back = (int64_t)(at + covered) - (int64_t)(tramp_at + off + 5);
    int64_t there = (int64_t)tramp_at - (int64_t)(at + COUNTJUMP_LEN);
    if (back != (int32_t)back || there != (int32_t)there)
        return "the scratch area is out of reach of a rel32 jump";
    ej->tramp[off] = 0xE9;
    put_rel32(ej->tramp + off + 1, tramp_at + off + 5, at + covered);
    ej->tramp_len = off + 5;
    ej->displaced = covered;
    ej->patch[0] = 0xE9;
    put_rel32(ej->patch + 1, at + COUNTJUMP_LEN, tramp_at);
    return NULL;
}

const char *reloc_entry_jump(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                             struct entryjump *ej)
{
    pthread_once(&once, open_capstone);
    if (!handle_ok)
        return "capstone is unavailable";
    pthread_mutex_lock(&lock);
    cs_insn *insns = NULL;
    size_t n = cs_disasm(handle, code, len, at, 0, &insns);
    const char *why = plan_entry(insns, n, len, at, tramp_at, ej);
    if (insns)
        cs_free(insns, n);
    pthread_mutex_unlock(&lock);
    return why;
}

bool reloc_countjump_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                          uint64_t counter_at, struct countjump *out)
{
    static const uint8_t lock_incq[4] = {0xF0, 0x48, 0xFF, 0x05}; /* [rip+disp32] */
    memset(out, 0, sizeof *out);
    struct entryjump ej = {.tramp = out->tramp, .off = COUNTJUMP_COUNT_LEN,
                           .cap = COUNTJUMP_SLOT_SIZE};
    const char *why = reloc_entry_jump(code, len, at, tramp_at, &ej);
    int64_t counter = (int64_t)counter_at - (int64_t)(tramp_at + sizeof lock_incq + 4);
    if (!why && counter != (int32_t)counter)
        why = "the scratch area is out of reach of a rel32 jump";
    if (why) {
        memset(out, 0, sizeof *out);
        snprintf(out->why, sizeof out->why, "%s", why);
        return false;
    }
    memcpy(out->tramp, lock_incq, sizeof lock_incq);
    put_rel32(out->tramp + sizeof lock_incq, tramp_at + sizeof lock_incq + 4, counter_at);
    memcpy(out->patch, ej.patch, COUNTJUMP_LEN);
    out->displaced = (uint8_t)ej.displaced;
    out->tramp_len = (uint8_t)ej.tramp_len;
    return true;
}
