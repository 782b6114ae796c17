/*
 * abi.h - where a function's arguments and return value live under the System V
 * x86-64 psABI, given its DWARF signature and the registers at entry / after return,
 * written as JSON with dwarf/value.h. Pure: the tracer captures the registers and
 * provides the memory reader.
 *
 * Classification (psABI 3.2.3), as implemented:
 * - bool, char, integers (1..8 bytes), enums, pointers, references: INTEGER, one
 *   general register (rdi, rsi, rdx, rcx, r8, r9 for arguments; rax, rdx for return
 *   values). __int128 (16-byte integer): two general registers, or memory.
 * - float, double: SSE, the low 4/8 bytes of the next xmm register (xmm0..7 for
 *   arguments; xmm0, xmm1 for returns). _Float128 (16-byte float named "*128*"): one
 *   whole xmm register.
 * - long double (x87, 16 bytes): memory for arguments; returned in st(0).
 * - struct/union up to 16 bytes: each eightbyte is INTEGER if any integer-like field
 *   (or bit field) overlaps it, else SSE; a long double field makes it X87 (returned in
 *   st(0) when it is the only content, memory otherwise). A field that is not at a
 *   multiple of its natural alignment makes the whole object MEMORY. The object goes in
 *   registers only if all the registers it needs are still free; otherwise it goes on
 *   the stack and the registers stay free for later arguments.
 * - Anything larger than 16 bytes: MEMORY. Empty structs take nothing.
 * - A MEMORY-class return value: the caller passes its address in rdi (arguments
 *   shift by one register) and the callee returns it in rax.
 * - Stack arguments start at rsp+8 at function entry (rsp points at the return
 *   address); each starts at a multiple of 8 bytes, or of 16 for types whose natural
 *   alignment is 16 (long double, __int128, _Float128, structs holding them).
 * - A parameter with no type (NULL or void) is assumed to take one general register;
 *   its value is null.
 *
 * Known limits: the type model carries no alignment attribute nor C++ calling
 * convention, so over-aligned types (alignas(32)) and C++ classes that are not
 * trivially copyable (passed by invisible reference: std::string by value) are
 * classified as plain structs and read from the wrong place. Variadic functions: only
 * the named parameters are written. __m128/__m256 vectors and complex types are not
 * in the type model.
 */
#ifndef STROBE_ABI_H
#define STROBE_ABI_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/value.h"

/* Registers the tracer captures (PTRACE_GETREGS and PTRACE_GETFPREGS: xmm from
 * user_fpregs_struct.xmm_space, st0 from its st_space[0..3]). */
struct abi_regs {
    uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, rsp;
    uint8_t xmm[8][16];
    uint8_t st0[16];   /* x87 st(0) as 80-bit extended (first 10 bytes) */
};

/* Writes the arguments at function entry as a JSON array of {"name", "value"}, one
 * per parameter of f in order (name null when unnamed): [] when f has none. The
 * output budget (o->max_output) is shared: each argument may write what is left
 * divided by the arguments still to write, so one that needs less passes the rest on. */
void abi_args_json(struct strbuf *out, const struct dw_function *f, const struct abi_regs *r,
                   mem_read_fn rd, void *ctx, const struct value_opts *o);

/* Writes the return value of type ret (NULL or void: null) right after the function
 * returned (registers at the return address). hidden_ret_ptr is rdi saved at entry
 * when abi_returns_in_memory(ret); 0 falls back to rax, which holds the same address.
 * A long double comes from st0. */
void abi_return_json(struct strbuf *out, const struct dw_type *ret, const struct abi_regs *r,
                     uint64_t hidden_ret_ptr, mem_read_fn rd, void *ctx,
                     const struct value_opts *o);

/* Whether a function returning ret takes a hidden result pointer in rdi (the tracer
 * saves rdi at entry for abi_return_json). */
bool abi_returns_in_memory(const struct dw_type *ret);

#endif
