/*
 * frame.h - what DWARF says about one frame of a stopped program, for the crash
 * reporter: the source sites at an address (file, line, and the chain of inlined
 * calls that led there), and the parameters and local variables in scope there with
 * their values as JSON text.
 *
 * Addresses are the ELF file's own (link-time) addresses: subtract the load bias of
 * the running process. The module never touches a process: registers come in a
 * struct dw_regs and memory through a mem_read_fn (value.h), so it is testable with
 * fakes. Each ELF file is opened once and kept open, with the types converted from
 * its DWARF, until dw_frame_cache_clear(); a file whose size, inode or mtime changed is
 * opened again. Any thread may call in: one mutex serializes the calls.
 */
#ifndef STROBE_FRAME_H
#define STROBE_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "dwarf/value.h"

/* Register values of one frame, by DWARF register number (x86-64 psABI: 0 rax, 1 rdx,
 * 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip). */
struct dw_regs {
    uint64_t val[17];
    uint32_t known; /* bit i: val[i] is valid (an outer frame only knows the
                       callee-saved registers, rsp and rip) */
    uint64_t cfa;   /* canonical frame address when the caller knows it; 0: computed
                       from the file's CFI (.eh_frame, else .debug_frame) at pc and the
                       known registers, when a variable needs it */
};

/* One source-level frame. */
struct dw_site {
    char *function; /* qualified, as dw_function.name: "ns::Class::method", "main",
                       "crate::module::function" (Rust, hash stripped) */
    char *file;     /* absolute and normalized when DWARF gives a path, else NULL */
    int line, column; /* 0 when unknown */
    bool inlined;   /* an inlined call inside the next site */
};

/* The source sites at link-time address pc of the ELF file at path, innermost first:
 * sites[0] is the function whose code holds pc (the inlined callee when pc is in
 * inlined code) with the file, line and column of pc in the line table; each next one
 * is its caller, with the file and line of the inlined call (DW_AT_call_file,
 * DW_AT_call_line), up to and including the out-of-line function, whose site has
 * inlined false. The out-of-line function is named as the function index names it
 * (dw_index_get, which builds the index on first use); inlined ones from their DIEs:
 * the demangled linkage name, else DW_AT_name qualified by the enclosing namespaces
 * and classes. Writes at most max sites (the innermost ones) and returns how many; 0
 * when no DWARF function covers pc or the file cannot be read. Pass pc - 1 for a
 * return address, so that pc is in the call. Free the strings with dw_sites_free. */
size_t dw_frame_sites(const char *path, uint64_t pc, struct dw_site *sites, size_t max);
void dw_sites_free(struct dw_site *sites, size_t n);

/* Appends to params and to locals one JSON array each, of the variables in scope at
 * link-time address pc of the ELF file at path:
 *   [{"name":"head","type":"struct node *","value":...}, ...]
 * The scopes are those that contain pc: lexical blocks, inlined calls, then the
 * out-of-line function. params has the formal parameters of every function scope
 * (the innermost inlined callee's first, the out-of-line function's last); locals the
 * other variables (statics included), innermost scope first; within one scope the
 * order is the declaration order. Unnamed, artificial (except parameters such as
 * "this") and extern-declaration variables are left out.
 *
 * "type" is the dw_type name (dwarf.h: "int", "struct node *", "std::string";
 * qualifiers stripped); a type without one is "(anonymous struct)", "(anonymous
 * union)", "(anonymous enum)" or "?"; no type at all is "void". "value" follows
 * value.h with o's limits (NULL: defaults) applying to each value, memory read through
 * rd/ctx; bias (runtime minus link-time address) is added to DW_OP_addr/addrx. A
 * variable without a location at pc is "<optimized out>"; one whose location cannot be
 * evaluated is "<unavailable: REASON>": "register 6 not saved" (not known in regs),
 * "DW_OP_piece" (an operation this module does not evaluate: pieces, entry values,
 * TLS, typed stack...), "no CFA", "memory at 0x... unreadable", and so on. Evaluated:
 * DW_OP_addr, addrx, lit*, const*, fbreg (frame base from the function's
 * DW_AT_frame_base: DW_OP_call_frame_cfa, a register, ...), breg*, bregx, reg*, regx,
 * plus_uconst, arithmetic and stack operations, deref, deref_size, stack_value,
 * implicit_value, call_frame_cfa; and DW_AT_const_value.
 *
 * Each array holds at most 64 variables, and none more once its text passed 4 times
 * max_output (64 KiB by default); the rest are counted in a last entry
 * {"name":"...","value":"(N more)"}. Returns 0, or -1 with both arrays "[]" when no
 * DWARF function covers pc or the file cannot be read. regs NULL: no register known. */
int dw_frame_vars_json(struct strbuf *params, struct strbuf *locals, const char *path,
                       uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                       mem_read_fn rd, void *ctx, const struct value_opts *o);

/* Closes every cached file and drops the variable tables of dwarf/globals.h (tests,
 * and the daemon at exit for valgrind). */
void dw_frame_cache_clear(void);

#endif
