/*
 * elfinfo.h - what an executable file offers the debugger before it runs: is it
 * ELF at all, and does it carry DWARF (in itself, or in a separate debug file found
 * by build-id under /usr/lib/debug). debug_launch uses it to warn early that
 * function tracing will need a -g build, while output capture works regardless.
 */
#ifndef STROBE_ELFINFO_H
#define STROBE_ELFINFO_H

#include <stdbool.h>
#include <stdint.h>

struct elf_facts {
    bool is_elf;
    bool has_dwarf;          /* .debug_info here or in the build-id debug file */
    char build_id[41];       /* hex, "" when absent */
};

/* 0 with *out filled, -1 when the file cannot be read (errno set). A file that is
 * not ELF (a #! script) is not an error: is_elf is false. */
int elf_facts_read(const char *path, struct elf_facts *out);

/* The link-time value of the first symbol (.symtab, then .dynsym; functions and
 * data alike) whose name satisfies want(name, arg): how the crash reporter finds
 * glibc's __abort_msg and Rust's rust_panic without building a whole index.
 * 0 when none does or the file cannot be read. */
uint64_t elf_symbol_find(const char *path, bool (*want)(const char *name, void *arg),
                         void *arg);

#endif
