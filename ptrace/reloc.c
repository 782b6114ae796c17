/*
 * reloc.c - relocation of displaced instructions with capstone. See reloc.h.
 *
 * Capstone 4 cannot decode some AVX-512/CET instructions found in libc; those, and
 * conditional branches and loops (rare as a function's first instruction), take
 * the single-step path.
 */
#include "ptrace/reloc.h"

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
    bool rip_relative = false;
    for (int i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
            rip_relative = true;
    if (rip_relative) {
        if (x->encoding.disp_offset == 0 || x->encoding.disp_size != 4) {
            single_step(out, "RIP-relative operand without a 32-bit displacement");
            return;
        }
        int64_t target = (int64_t)next + x->disp;
        int64_t disp = target - (int64_t)(slot_at + insn->size);
        if (disp != (int32_t)disp) {
            single_step(out, "RIP-relative target out of reach of the scratch area");
            return;
        }
        int32_t d32 = (int32_t)disp;
        memcpy(out->slot + x->encoding.disp_offset, &d32, 4);
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
