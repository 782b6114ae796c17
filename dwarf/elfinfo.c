/*
 * elfinfo.c - ELF facts with libelf. See elfinfo.h.
 */
#include "dwarf/elfinfo.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool has_debug_info(Elf *elf)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return false;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name && (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0) &&
            sh.sh_type != SHT_NOBITS && sh.sh_size > 0)
            return true;
    }
    return false;
}

static void read_build_id(Elf *elf, char *out)
{
    out[0] = '\0';
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nh;
        while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
                memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0)
                continue;
            const unsigned char *id = (const unsigned char *)data->d_buf + desc_off;
            size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;
            for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", id[i]);
            return;
        }
    }
}

static bool separate_debug_file_exists(const char *build_id)
{
    if (strlen(build_id) < 4)
        return false;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id,
             build_id + 2);
    return access(path, R_OK) == 0;
}

int elf_facts_read(const char *path, struct elf_facts *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    if (elf && elf_kind(elf) == ELF_K_ELF) {
        out->is_elf = true;
        out->has_dwarf = has_debug_info(elf);
        read_build_id(elf, out->build_id);
        if (!out->has_dwarf)
            out->has_dwarf = separate_debug_file_exists(out->build_id);
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return 0;
}

static uint64_t find_in_table(Elf *elf, Elf64_Word type,
                              bool (*want)(const char *name, void *arg), void *arg)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || sh.sh_entsize == 0)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 1; data && i < n; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
                sym.st_value == 0)
                continue;
            const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name && *name && want(name, arg))
                return sym.st_value;
        }
    }
    return 0;
}

uint64_t elf_symbol_find(const char *path, bool (*want)(const char *name, void *arg),
                         void *arg)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    uint64_t value = 0;
    if (elf && elf_kind(elf) == ELF_K_ELF) {
        value = find_in_table(elf, SHT_SYMTAB, want, arg);
        if (!value)
            value = find_in_table(elf, SHT_DYNSYM, want, arg);
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return value;
}
