/*
 * globals.h - the global and static variables of one ELF file (an executable or a
 * shared library), found by name in its DWARF: variables of a compilation unit,
 * C++ namespace variables ("app::net::port"), class statics ("Registry::instances"),
 * statics inside functions ("next_id::last_id", the function qualified as the index
 * names it: "app::next_id::last_id"), with their link-time address, their type and
 * where they are declared. Constants (DW_AT_const_value) come with their bytes;
 * thread-locals and variables the optimizer removed are found too, marked so.
 *
 * Each file's name table is built on first use and kept, with the file open and the
 * types converted from it, until dw_frame_cache_clear() (frame.h): a struct dw_type
 * handed out stays valid until then, even when the file changes on disk (a changed
 * file gets a new table; the old one is kept until the clear). Any thread may call
 * in: one mutex serializes the calls.
 */
#ifndef STROBE_GLOBALS_H
#define STROBE_GLOBALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/dwarf.h"

enum dw_global_where {
    DWG_MEMORY,         /* at addr */
    DWG_CONSTANT,       /* no storage: its value is bytes */
    DWG_THREAD_LOCAL,   /* one copy per thread (no single address) */
    DWG_OPTIMIZED_OUT,  /* declared, but no location: removed by the optimizer */
    DWG_UNSUPPORTED,    /* a location this module does not evaluate */
};

struct dw_global {
    const char *name;             /* qualified, as matched: "app::net::port" */
    enum dw_global_where where;
    uint64_t addr;                /* DWG_MEMORY: link-time address (add the bias) */
    const unsigned char *bytes;   /* DWG_CONSTANT: the value, len bytes */
    size_t len;
    const struct dw_type *type;   /* never NULL (the unknown type when DWARF has none) */
    const char *decl_file;        /* as DWARF spells it; NULL when unknown */
    int decl_line;                /* 0 when unknown */
    const char *symbol;           /* an external variable's ELF symbol name (the
                                     linkage name in C++), NULL for a static: the
                                     name the dynamic linker may bind elsewhere */
};

enum dw_global_match {
    DWG_NONE,           /* no variable of that name */
    DWG_FOUND,
    DWG_AMBIGUOUS,      /* a partial name several variables end with: out is one */
};

/* The variable called name in the ELF file at path: the one whose qualified name is
 * name, else the only one whose qualified name ends with "::" name ("last_id" and
 * "next_id::last_id" both find "app::next_id::last_id"). Where several variables share
 * the name (a declaration and its definition, a static of the same name in two
 * files), the first with an address wins. DWG_NONE too when the file cannot be read
 * or has no DWARF. */
enum dw_global_match dw_global_find(const char *path, const char *name, struct dw_global *out);

/* The variable of the ELF file at path whose bytes hold link-time address addr (a
 * runtime address minus the file's load bias): the variable at a fixed address
 * starting nearest below addr, when addr is within its type's size. false when none
 * (a heap or stack address, a symbol without DWARF, a type of unknown size). The
 * member at addr is dw_member_path(out->type, addr - out->addr) (varpath.h). */
bool dw_global_at(const char *path, uint64_t addr, struct dw_global *out);

/* The data object symbol called name in the ELF file at path: its link-time address
 * and size. dynamic: in the dynamic symbol table only (what the dynamic linker binds:
 * a library's global used by the executable lives in the executable's copy, a copy
 * relocation, while the library's own stays as it was loaded; so a variable found in a
 * library is looked up there in the executable first); else in .symtab, then
 * .dynsym (a variable of a file without debug info). false when there is none. */
bool dw_symbol_find(const char *path, const char *name, bool dynamic, uint64_t *addr,
                    uint64_t *size);

/* The names of the file's variables nearest to name (edit distance, on the whole
 * qualified name or on its last component; a partial name matching several
 * variables finds them all at distance 0), merged into near, which keeps the
 * DW_NEAR_MAX nearest seen so far (zero it before the first file). */
#define DW_NEAR_MAX 3
struct dw_near {
    int n;
    int distance[DW_NEAR_MAX];
    char name[DW_NEAR_MAX][128];
};
void dw_global_near(const char *path, const char *name, struct dw_near *near);

#endif
