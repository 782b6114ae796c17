/*
 * dwarf_internal.h - private declarations shared by the files of dwarf/: the arena
 * that owns every byte of one index (so freeing an index is one call), the index
 * builder (index.c) that cache.c calls, and the DWARF type converter (types.c) that
 * the builder calls for parameter and return types, and the on-disk cache that cache.c
 * tries before building; the cache of open files (openfiles.c) with the scopes at an
 * address (scopes.c) and the names of the sites (sites.c), which the frame inspector
 * (frame.c) and lines.c use; and the location evaluator (location.c). The arena itself
 * is base/arena.h. Nothing outside dwarf/ includes it.
 */
#ifndef STROBE_DWARF_INTERNAL_H
#define STROBE_DWARF_INTERNAL_H

#include <elfutils/libdw.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/frame.h"
#include "dwarf/value.h"

/* Builds the index of the ELF file at path (the cache's miss path). NULL with e set
 * as dw_index_get's when the file cannot be read or is not ELF. */
struct dw_index *dw_index_build(const char *path, struct strobe_error *e);
/* Frees an index returned by dw_index_build, everything included. */
void dw_index_free(const struct dw_index *ix);
/* The hex GNU build-id of the ELF file at path ("" when it has none) into out.
 * 0, or -1 with e set as dw_index_get's when the file cannot be read or is not ELF. */
int dw_elf_build_id(const char *path, char out[41], struct strobe_error *e);

/* Both demanglings of sym at the cost of about one: *plain without the parameter list
 * (as dw_demangle(sym, false)) and *full with it (as dw_demangle(sym, true), NULL
 * when only the first succeeds). false, both NULL, when sym is not mangled. The
 * caller frees both. */
bool dw_demangle_both(const char *sym, char **plain, char **full);

/* Name and path normalizations the index and the frame inspector (sites.c) share,
 * so a function has one name and a file one path whichever found it:
 * dw_unwrap_inherent_impl turns Rust v0's "<crate::Type>::method" into the legacy
 * "crate::Type::method" (not "<A as Trait>::m"), in place; dw_normalize_path removes
 * "." and "dir/.." segments lexically, in place. */
void dw_unwrap_inherent_impl(char *name);
void dw_normalize_path(char *p);

/* Names of DIEs, as the frame inspector (sites.c) and the variable lookup
 * (globals.c) write them. dw_append_scopes appends "name::" for each namespace and
 * class around die, outermost first ("(anonymous namespace)::" for an unnamed one).
 * dw_die_function_name is the name of a subprogram or inlined subroutine DIE: its
 * demangled linkage name without parameters, else its DW_AT_name qualified by the
 * namespaces and classes around its declaration; the caller frees it. */
void dw_append_scopes(struct strbuf *sb, Dwarf_Die *die);
char *dw_die_function_name(Dwarf_Die *fn);

/* How deep the walks over a CU's DIE tree follow its nesting. */
enum { DW_DIE_DEPTH_MAX = 64 };

/* The cache of open ELF files (openfiles.c), which the frame inspector and the line
 * tables (lines.c) share so that no file is opened twice. One mutex serializes every
 * use: take it with dw_files_lock around dw_file_get and everything done with what it
 * returns, which is valid until dw_files_unlock. */
struct dw_file {
    struct dw_file *next;
    char *path;
    struct stat st;     /* identity: dev, ino, size, mtime */
    int fd, dfd;        /* dfd: the separate debug file, -1 when none */
    Elf *elf, *delf;
    Dwarf *dw;          /* NULL when there is no DWARF */
    Dwarf_CFI *eh_cfi;  /* elf's .eh_frame, NULL when none */
    struct arena arena; /* the converted types */
    struct type_conv *tc;
    struct cu_functions *cus; /* function tables of the CUs looked into (scopes.c) */
    struct interned *strings; /* in arena: the declaration files handed out (frame.c) */
};
void dw_files_lock(void);
void dw_files_unlock(void);
/* The open file at path, made the most recently used; NULL when it cannot be read or
 * is not ELF. */
struct dw_file *dw_file_get(const char *path);
/* Its DWARF (its own, else the build-id debug file's); NULL when it has none. */
Dwarf *dw_file_dwarf(const struct dw_file *f);

/* The scopes at an address (scopes.c). */

/* The CU whose code holds link-time address pc; false when none. */
bool dw_cu_at(Dwarf *dw, uint64_t pc, Dwarf_Die *cu);
/* The end of die's DW_AT_abstract_origin chain (and DW_AT_specification's when
 * with_spec): the DIE that declares what die is a copy or a definition of. */
Dwarf_Die dw_die_origin(Dwarf_Die *die, bool with_spec);
/* The string of die's attribute name, through DW_AT_abstract_origin and
 * DW_AT_specification; NULL when it has none. */
const char *dw_attr_string(Dwarf_Die *die, int name);

/* The scopes that physically contain a link-time address: lexical blocks, inlined
 * subroutines and the out-of-line function (scopes.c's header comment says why not
 * dwarf_getscopes). */
struct dw_scopes {
    Dwarf_Die cu;
    Dwarf_Die *dies; /* innermost first */
    size_t n, cap;
    size_t fn;       /* index of the out-of-line function */
};
/* The scopes of pc in f; false when no function covers pc. Free s->dies. */
bool dw_scopes_at(struct dw_file *f, uint64_t pc, struct dw_scopes *s);
/* Frees the function tables of a file's CUs (f->cus), when the file is closed. */
void dw_cu_functions_free(struct cu_functions *t);

/* The sites of a frame (sites.c). */
/* The out-of-line function fn of the file at path as the function index names it,
 * else from its DIE (dw_die_function_name); the caller frees it. */
char *dw_outofline_function_name(Dwarf_Die *fn, const char *path);
/* name (from a line table or a file table of cu) made absolute with the compilation
 * directory of cu and normalized; NULL when it cannot be made absolute. The caller
 * frees it. */
char *dw_cu_absolute_path(Dwarf_Die *cu, const char *name);
/* The file, line and column of link-time address pc in the line table of cu into s
 * (left as they are when the table has no row for pc). */
void dw_site_of_pc(Dwarf_Die *cu, uint64_t pc, struct dw_site *s);

/* Drops the variable tables of globals.c; dw_frame_cache_clear calls it, so the
 * types both hand out live equally long. */
void dw_globals_cache_clear(void);

/* Where a variable of a stopped frame lives (location.c). */
#define DW_LOC_WHY_MAX 96
struct dw_loc {
    enum { DW_LOC_NONE, DW_LOC_MEM, DW_LOC_REG, DW_LOC_VALUE, DW_LOC_BYTES, DW_LOC_FAIL } kind;
    uint64_t v;                 /* MEM: address; REG: register number; VALUE: value */
    const unsigned char *bytes; /* BYTES: the value itself, len bytes */
    size_t len;
    char why[DW_LOC_WHY_MAX];   /* FAIL: why, for "<unavailable: ...>" */
};

/* The frame a location is evaluated in. Fill the first fields and zero the rest:
 * the frame base and the CFA are computed on first use and kept (state 0 not yet,
 * 1 known, -1 unknown with the reason in *_why, also while being computed, so that an
 * expression using itself fails instead of looping). */
struct dw_frame_ctx {
    Dwarf_CFI *cfi[2];          /* .eh_frame and .debug_frame, for the CFA (may be NULL) */
    uint64_t pc, bias;          /* link-time pc; runtime = link-time + bias */
    const struct dw_regs *regs;
    mem_read_fn rd;
    void *ctx;
    Dwarf_Die *fn;              /* the out-of-line function: DW_AT_frame_base */
    int fb_state, cfa_state;
    uint64_t fb, cfa;
    char fb_why[DW_LOC_WHY_MAX], cfa_why[DW_LOC_WHY_MAX];
};

/* Where variable die (DW_AT_location, else DW_AT_const_value) is at e->pc; NONE
 * when it has no location there (optimized out). */
void dw_locate(struct dw_frame_ctx *e, Dwarf_Die *die, struct dw_loc *l);
/* The word location l stands for (the address of MEM, a register's content, a
 * computed value); false with l->why set when it cannot be had. */
bool dw_loc_word(const struct dw_frame_ctx *e, struct dw_loc *l, uint64_t *v);

/* Converts DWARF type DIEs of one Dwarf handle into struct dw_type objects in an
 * arena, each DIE once (cached by DIE offset), so shared types are shared and
 * self-referencing types terminate. Lives for one index build. */
struct type_conv;
struct type_conv *type_conv_new(struct arena *a);
/* The type named by die's DW_AT_type (following DW_AT_abstract_origin and
 * DW_AT_specification); NULL when it has none (void). const/volatile are stripped;
 * a typedef keeps its name and takes everything else from its target. */
const struct dw_type *type_conv_of(struct type_conv *tc, Dwarf_Die *die);
/* The "unknown" type (DWT_VOID, no name): for parameters whose type is missing. */
const struct dw_type *type_conv_unknown(struct type_conv *tc);
void type_conv_free(struct type_conv *tc);

/* The on-disk cache (diskcache.c), keyed by build-id (else path), size and mtime of
 * the file stat()ed as st. dw_disk_load returns the index of path stored there, in
 * memory it puts in *a (free with arena_free, not dw_index_free), or NULL when there
 * is no cache dir or no valid file. dw_disk_store writes ix there, silently failing. */
struct dw_index *dw_disk_load(const char *path, const char *build_id, const struct stat *st,
                              struct arena *a);
void dw_disk_store(const char *path, const struct stat *st, const struct dw_index *ix);

#endif
