/*
 * frame.h - what DWARF says about one frame of a stopped program, for the crash
 * reporter and the breakpoint engine: the source sites at an address (file, line, and
 * the chain of inlined calls that led there), the parameters and local variables in
 * scope there with their values as JSON text, and where one of them lives.
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
 * variable declared below the line of pc (same file, not static, pc not in inlined
 * code) is "<not declared yet: line N, below this one>": C gives it no value there, and
 * its stack slot holds an earlier call's leftovers. A
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

/* Where one variable of a frame lives (dw_frame_var_find), for watchpoints, condition
 * expressions and assignments: a place rather than a rendered value. */
enum dw_var_kind {
    DWV_MEMORY,    /* at address */
    DWV_REGISTER,  /* in register regno, whole (the value is its low type->size bytes) */
    DWV_VALUE,     /* nowhere: computed (DW_OP_stack_value), a DW_OP_implicit_value or a
                      DW_AT_const_value; the value is bytes */
};

struct dw_var_where {
    enum dw_var_kind kind;
    uint64_t address;          /* DWV_MEMORY: runtime address (bias included) */
    int regno;                 /* DWV_REGISTER: DWARF register number, as struct dw_regs
                                  numbers them (17-32 are xmm0-15, which it does not hold) */
    unsigned char bytes[16];   /* DWV_VALUE: the value, little-endian */
    size_t n_bytes;            /* DWV_VALUE: bytes used: a computed value its type's size
                                  (8 when the type's is unknown), a constant its own */
    const struct dw_type *type;/* as dw_frame_vars_json converts it; never NULL (an unknown
                                  or void type is DWT_VOID); valid until the file's cache
                                  entry goes (dw_frame_cache_clear, or the file changed) */
    bool is_param;             /* a formal parameter, else a local (statics included) */
    const char *decl_file;     /* absolute when DWARF gives a path; NULL when unknown;
                                  lives as type does */
    int decl_line;             /* 0 when unknown */
};

/* Finds the variable called name in scope at link-time address pc of the ELF file at
 * path, with dw_frame_vars_json's scopes and filters: the scopes holding pc innermost
 * first (a block's variable shadows the function's, an inlined callee's hides its
 * caller's), parameters and locals alike, unnamed, artificial non-parameter and
 * extern-declaration variables left out. Its location is evaluated as
 * dw_frame_vars_json evaluates it (regs, rd/ctx for DW_OP_deref, bias added to
 * DW_OP_addr/addrx) and reported as a place in *out.
 *
 * Returns 0 when found and located; 1 when no such variable is in scope at pc, with
 * err (NULL: not told) VARIABLE_NOT_FOUND and "in scope here: a, b, c" (at most 16
 * names, innermost first, ", ..." when there are more; "nothing is in scope here" when
 * none, also when no DWARF function covers pc or the file cannot be read); -1 when it
 * is in scope but cannot be located, with err VARIABLE_UNAVAILABLE and "optimized out
 * at this point" (no location at pc), or the evaluator's reason as
 * dw_frame_vars_json shows it inside "<unavailable: ...>": "register 6 not saved",
 * "DW_OP_piece" (a variable split in pieces has no single place), "no CFA", "16-byte
 * value in 8 bytes", ...; or "a 24-byte constant (at most 16 bytes are reported)".
 * err is zeroed on success. */
int dw_frame_var_find(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                      mem_read_fn rd, void *ctx, const char *name, struct dw_var_where *out,
                      struct strobe_error *err);

/* Names runtime address addr by a variable in scope at link-time address pc of the
 * ELF file at path (dw_frame_var_find's scopes and filters, innermost first, located
 * as it locates them): one whose own bytes hold addr ("buf[2]", "st.mu"), or a
 * pointer whose pointee, by its type's size, does ("t->lock", "*m", "(*rows)[1]"),
 * with the member path of varpath.h. Appends the name to out and returns true for the
 * first that does; false, out unchanged, when none does. */
bool dw_frame_var_at(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                     mem_read_fn rd, void *ctx, uint64_t addr, struct strbuf *out);

/* Closes every cached file and drops the variable tables of dwarf/globals.h (tests,
 * and the daemon at exit for valgrind). */
void dw_frame_cache_clear(void);

#endif
