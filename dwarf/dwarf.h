/*
 * dwarf.h - the function index of one ELF file (an executable or a shared library),
 * built with libdw/libelf: every defined function with its entry address, name,
 * linkage name, demangled name, declaration file and line, parameters and return
 * type. Functions that only have ELF symbols (a library without debug info) are
 * in the index too, without types. Addresses are the file's own (link-time)
 * addresses; add the load bias of a running process to get runtime addresses.
 *
 * An index is immutable once built, so any thread may read it. dw_index_get()
 * caches indexes per (path, build-id, mtime) in memory for the daemon's lifetime, and
 * on disk when dw_cache_set_dir() was called, so a new daemon does not index again.
 */
#ifndef STROBE_DWARF_H
#define STROBE_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

enum dw_type_kind {
    DWT_VOID,      /* also "unknown" */
    DWT_BOOL,
    DWT_SIGNED,    /* int, long, signed char (int8_t), ... */
    DWT_UNSIGNED,  /* unsigned int, unsigned char (uint8_t), ... */
    DWT_CHAR,      /* plain char only (text when printable or pointed to) */
    DWT_FLOAT,     /* float, double, long double: size says which */
    DWT_POINTER,   /* target = pointee (NULL for void *) */
    DWT_REFERENCE, /* C++ & and &&: target = referred type */
    DWT_STRUCT,    /* struct and class */
    DWT_UNION,
    DWT_ENUM,
    DWT_ARRAY,     /* target = element type, count (0 = unknown) */
    DWT_FUNCTION,  /* a function type (pointed to by function pointers) */
};

struct dw_type;

struct dw_member {
    const char *name;        /* NULL for an anonymous member */
    uint64_t offset;         /* bytes from the start of the struct */
    uint32_t bit_size;       /* 0 unless a bit field */
    uint32_t bit_offset;     /* from the start of the byte at offset */
    const struct dw_type *type;
};

struct dw_enumerator {
    const char *name;
    int64_t value;
};

struct dw_type {
    enum dw_type_kind kind;
    const char *name;        /* "int", "struct point", "std::string", NULL if none */
    uint64_t size;           /* bytes; 0 when unknown (void, incomplete) */
    const struct dw_type *target; /* pointer/reference/array element/enum underlying */
    uint64_t count;          /* array elements */
    size_t n_members;
    const struct dw_member *members;      /* struct/union */
    size_t n_enumerators;
    const struct dw_enumerator *enumerators;
    bool system_header;      /* a struct/union declared under /usr/include (glibc's) */
};

struct dw_param {
    const char *name;        /* NULL when unnamed */
    const struct dw_type *type;
};

struct dw_function {
    uint64_t entry;          /* link-time address of the first instruction */
    uint64_t end;            /* one past the last byte; entry when unknown */
    const char *name;        /* qualified, no parameter list: "auth::User::validate",
                                "std::vector<int>::push_back", "main",
                                "myapp::parser::parse" (Rust, hash stripped) */
    const char *demangled;   /* full demangled form with parameters when there are
                                any ("auth::User::validate(int) const"); == name for C */
    const char *linkage_name;/* mangled ("_ZN4auth4User8validateEi"), NULL for C */
    const char *decl_file;   /* absolute path when DWARF has one, else NULL */
    int decl_line;           /* 0 when unknown */
    const struct dw_type *return_type; /* NULL for void or unknown */
    size_t n_params;
    const struct dw_param *params;
    bool has_dwarf;          /* false: from the ELF symbol table only */
    bool variadic;
    /* An IFUNC (STT_GNU_IFUNC: strlen, memcpy in libc): entry is its resolver, which
     * the program never calls. ifunc_slot is the link-time address of the GOT slot an
     * R_X86_64_IRELATIVE of the resolver fills with the variant this CPU runs; 0: not
     * an IFUNC, or none is known. */
    uint64_t ifunc_slot;
    /* Other ELF symbol names at entry, demangled without parameters, unlike name:
     * "puts" and "_IO_puts" share one address in libc. Patterns should match them too. */
    size_t n_aliases;
    const char *const *aliases;
};

struct dw_index {
    const char *path;
    char build_id[41];
    bool has_dwarf;          /* any DWARF at all */
    bool is_pie;             /* ET_DYN: load bias != 0 */
    size_t n_functions;
    const struct dw_function *functions; /* sorted by entry, unique entries */
    /* Functions DWARF describes only as inlined into others (DW_AT_inline, no code of
     * their own, no out-of-line copy): they cannot be traced. Qualified names, sorted. */
    size_t n_inlined_only;
    const char *const *inlined_only;
};

/* The index of the ELF file at path, built on first use and cached. NULL with e
 * (NULL: not told) set to NO_DEBUG_SYMBOLS and a sentence when the file cannot be
 * read or is not ELF. */
const struct dw_index *dw_index_get(const char *path, struct strobe_error *e);

/* The function whose [entry, end) holds addr (link-time address), or NULL. */
const struct dw_function *dw_function_at(const struct dw_index *ix, uint64_t addr);

/* Whether qualified_name (as in dw_function.name) is one of ix->inlined_only: lets
 * the tracer say "the matched function is inlined" instead of "not found". */
bool dw_is_inlined_only(const struct dw_index *ix, const char *qualified_name);

/* Drops every cached index (tests, and the daemon at exit for valgrind). */
void dw_cache_clear(void);

/* Keeps index files in dir too (created 0700 if missing), so a later dw_index_get of
 * the same file, even in another process, loads it instead of reading DWARF. Ignored
 * when dir is a symlink or not owned by the effective user; NULL turns it off (the
 * default). */
void dw_cache_set_dir(const char *dir);

/* Demangles a C++ or Rust (legacy or v0) symbol; NULL when sym is not mangled.
 * With params false, the result has no parameter list (for pattern matching).
 * The caller frees the result. */
char *dw_demangle(const char *sym, bool params);

#endif
