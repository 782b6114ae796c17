/*
 * fastcode.h - the machine code of the fast path's trampolines (pure code
 * generation: no ptrace, no I/O). The recorder they call is ptrace/hooks/fastrec/, their
 * contract with it ptrace/hooks/fast_abi.h.
 *
 * Entry trampoline (one per function), reached by the `jmp rel32` written over the
 * function's first bytes, rsp = 8 mod 16 as at any function entry:
 *
 *     sub rsp, 200                       ; 192-byte struct fast_saved at [rsp], r11
 *                                        ; at [rsp+192], the call 16-byte aligned
 *     mov [rsp+0..56], rdi rsi rdx rcx r8 r9 rax r10 ; mov [rsp+192], r11
 *     movdqu [rsp+64+16*i], xmmi         ; i = 0..7, read by the recorder only
 *     movabs rdi, area ; mov rsi, rsp ; mov edx, fn ; lea rcx, [rsp+200]
 *     movabs rax, fast_enter ; call rax
 *     mov rdi rsi rdx rcx r8 r9 rax r10 r11, [rsp+...]
 *     add rsp, 200                       ; flags are dead at a function's entry
 *     <the displaced instructions, relocated> ; jmp <first byte left alone>
 *
 * Every general register comes back as it was, r11 included: with gcc's -fipa-ra
 * (-O2) a caller keeps values in "caller-saved" registers across a call to a
 * function it knows leaves them alone, so no register may change that the
 * function itself does not change. The recorder is built without xmm registers, so
 * they need no restoring.
 *
 * Return trampoline (one per process), reached by a traced function's `ret` to the
 * address fast_enter swapped in (rsp = its entry rsp + 8, 16-byte aligned):
 *
 *     sub rsp, 112                       ; [rsp]: struct fast_ret_saved (48 bytes);
 *                                        ; [rsp+48..103]: rcx rsi rdi r8 r9 r10 r11;
 *                                        ; [rsp+104]: the return address's old slot
 *     mov [rsp], rax ; mov [rsp+8], rdx ; movdqu [rsp+16], xmm0 ; movdqu [rsp+32], xmm1
 *     mov [rsp+48..96], rcx rsi rdi r8 r9 r10 r11
 *     movabs rdi, area ; mov rsi, rsp ; lea rdx, [rsp+104]  ; entry rsp
 *     movabs rax, fast_exit ; call rax   ; the real return address
 *     mov [rsp+104], rax                 ; back into its own slot
 *     mov rax, [rsp] ; mov rdx, [rsp+8] ; movdqu xmm0, [rsp+16] ; movdqu xmm1, [rsp+32]
 *     mov rcx rsi rdi r8 r9 r10 r11, [rsp+48..96]
 *     add rsp, 104 ; ret                 ; rsp as the function's ret left it
 *
 * It gives back every register as the function's return left it (x87 is
 * untouched), for the -fipa-ra reason above.
 */
#ifndef STROBE_FASTCODE_H
#define STROBE_FASTCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptrace/patch/reloc.h"

#define FASTJUMP_LEN COUNTJUMP_LEN /* bytes of the jmp at the function's entry */
#define FASTJUMP_SLOT_SIZE 256     /* bytes of scratch one entry trampoline takes */
#define FASTCODE_RETURN_LEN 158    /* bytes of the return trampoline */

struct fastjump {
    uint8_t patch[FASTJUMP_LEN];       /* the jmp written at the function's entry */
    uint8_t displaced;                 /* bytes of the instructions it covers, >= 5 */
    uint16_t resume;                   /* where in the trampoline its copy of them
                                          starts: past the recording (an int3 stop of
                                          the function resumes there) */
    uint8_t tramp[FASTJUMP_SLOT_SIZE]; /* the entry trampoline */
    size_t tramp_len;
    char why[96];                      /* refused: the reason */
};

/* Plans the entry jump of function fn (its index in the area's fast_fn table) whose
 * whole code is code[0..len), at address at, to a trampoline at tramp_at (within
 * rel32 reach) that calls fast_enter at enter_addr (any address) with the area at
 * area. False (and why) on the refusals of reloc_countjump_plan (reloc.h). */
bool fastcode_jump_plan(const uint8_t *code, size_t len, uint64_t at, uint64_t tramp_at,
                        uint64_t area, uint64_t enter_addr, uint32_t fn, struct fastjump *out);

/* Writes the return trampoline, which calls fast_exit at exit_addr with the area at
 * area, into out[0..cap): its length (FASTCODE_RETURN_LEN), or 0 when cap is too
 * small. The code is position-independent: at, its address, only documents where it
 * goes (a->ret_tramp must be it). */
size_t fastcode_return(uint8_t *out, size_t cap, uint64_t at, uint64_t area,
                       uint64_t exit_addr);

#endif
