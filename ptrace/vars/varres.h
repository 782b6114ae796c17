/*
 * varres.h - program data named the way C names it, found in a live process: the
 * one place ptrace/ turns "cfg.max_retries", "head->next->value", "table[3].name",
 * "*p", "ns::g_state" or "worker::counter" (a static inside function worker) into
 * an address and a DWARF type. The roots are the globals and statics of the
 * executable and of every library it has loaded (dwarf/ finds them by name); the
 * pointers on the way are read from the process as it is now, without stopping it.
 * debug_memory (read, write, watch), poll and trace watches all resolve through it.
 */
#ifndef STROBE_VARRES_H
#define STROBE_VARRES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "core/collector.h"
#include "dwarf/dwarf.h"
#include "dwarf/value.h"

/* Where an expression's value lives now. */
struct varres {
    uint64_t address;             /* runtime address (0 when has_address is false) */
    bool has_address;             /* false: a constant (DW_AT_const_value) in bytes */
    const struct dw_type *type;   /* never NULL; lives as long as the daemon's DWARF
                                     caches (dw_cache_clear / dw_frame_cache_clear) */
    char type_name[128];          /* "int", "struct config", "char [16]" */
    size_t size;                  /* bytes of the value */
    unsigned char bytes[16];      /* the constant, when !has_address */
    int regno;                    /* !has_address: the DWARF register of a paused
                                     frame the value lives in (writes go there); -1:
                                     a constant */
    char module[PATH_MAX];        /* the ELF file whose debug info defines the root
                                     variable (a library's global may live in the
                                     executable: see dw_symbol_find) */
    const char *decl_file;        /* where the root variable is declared (NULL when
                                     unknown), as long as type lives */
    int decl_line;
    char note[384];               /* "" or what the agent should know about the value:
                                     an index past an array's end (read anyway, as C
                                     does) and the variable whose bytes are there */
};

/* An expression taken apart: stars leading '*'s, then root (a name, "::" allowed),
 * then steps applied left to right (the stars after all steps, as in C). A step's
 * name points into the parsed text (not NUL-terminated: name_len); end is the offset
 * in the text just past the step, for messages ("'head->next' is NULL"). */
#define VARRES_MAX_STEPS 64
struct varres_expr {
    int stars;
    char root[MEMORY_EXPR_MAX + 1];
    size_t root_start, root_end; /* offsets of the root in the text */
    int n_steps;
    struct varres_step {
        enum { VS_MEMBER, VS_ARROW, VS_INDEX } kind; /* .name ->name [index] */
        const char *name;        /* VS_INDEX: a variable whose value is the index, or
                                    NULL (index) */
        size_t name_len;
        uint64_t index;
        size_t end;
    } steps[VARRES_MAX_STEPS];
};

/* Parses expr (spaces between tokens allowed); 0, or -1 with BAD_EXPRESSION naming
 * the column and what was expected, or the limits (length, dereferences counted as
 * stars and arrows). */
int varres_parse(const char *expr, struct varres_expr *out, struct strobe_error *e);

/* The type an address target of hint h is read as: numbers of the hint's size,
 * pointers shown in hex, MEMH_BYTES a sizeless "bytes"; NULL for MEMH_NONE. Static:
 * lives as long as the program. The one table of hint types in ptrace/. */
const struct dw_type *varres_hint_type(enum memory_hint h);

/* Resolves expr (at most MEMORY_EXPR_MAX characters of C: identifiers with ::, .,
 * ->, [N], a leading *; at most MEMORY_MAX_DEREFS dereferences) in process pid,
 * reading pointers through memfd (procmem_open). 0, or -1 with:
 *   VARIABLE_NOT_FOUND   no global or static of that name ("did you mean ..."
 *                        names up to 3 near names);
 *   VARIABLE_UNAVAILABLE it exists but has no address: optimized out,
 *                        thread-local, kept in a register; or it is only an ELF
 *                        symbol, without debug info (the sentence gives its address
 *                        and size to read it raw);
 *   BAD_EXPRESSION       syntax, no such member (the sentence lists the members),
 *                        indexing a non-array, "->" on a non-pointer, too many
 *                        dereferences, index out of a fixed array's bounds;
 *   MEMORY_UNREADABLE    a pointer on the way is NULL or unreadable (named). */
int varres_resolve(pid_t pid, int memfd, const char *expr, struct varres *out,
                   struct strobe_error *e);

/* One process for several expressions (a request's targets, a poll's samples): its
 * loaded modules are read once, on the first expression, and kept until
 * varres_process_close, so a library loaded meanwhile is seen by the next one. */
struct module;
/* A frame's own names, asked before the globals: 0 found (out filled: an address,
 * or a value in bytes with the register it came from in regno), 1 no such name in
 * the frame, -1 it is there but unreadable (e says why). */
typedef int (*varres_frame_fn)(void *ctx, const char *name, struct varres *out,
                               struct strobe_error *e);
struct varres_process {
    pid_t pid;
    int memfd;
    struct module *mods;          /* the executable first; NULL until needed */
    size_t n_mods;
    varres_frame_fn frame;        /* NULL: globals only (varres_process_open) */
    void *frame_ctx;
};
void varres_process_open(struct varres_process *p, pid_t pid, int memfd);
void varres_process_close(struct varres_process *p);
/* varres_resolve in p's process, with its modules read once. */
int varres_resolve_in(struct varres_process *p, const char *expr, struct varres *out,
                      struct strobe_error *e);

/* Whether struct or union t has a member named name (inside an anonymous member or
 * a base class too): a name C++ finds through `this`. */
bool varres_has_member(const struct dw_type *t, const char *name);

/* Sets v's type, size and type_name to t's. */
void varres_set_type(struct varres *v, const struct dw_type *t);

/* Appends v's value as JSON text (dwarf/value.h rules; structs depth levels deep,
 * 1-5) read through rd (procmem_read_ctx and a memfd: live). false when its bytes
 * cannot be read (the text then says "<unreadable 0x...>"). */
bool varres_render(mem_read_fn rd, void *rd_ctx, const struct varres *v, int depth,
                   bool depth_asked, struct strbuf *json);

#endif
