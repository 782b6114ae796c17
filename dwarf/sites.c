/*
 * sites.c - the source sites of one frame (frame.h, dw_frame_sites): the function
 * holding an address and the chain of inlined calls that led there, each with its
 * file, line and column; and the names and absolute paths of DIEs that the line
 * tables (lines.c) and the variable lookup (globals.c) write the same way.
 */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_internal.h"

static char *take(struct strbuf *sb)
{
    char *s = sb->oom ? NULL : sb_take(sb);
    if (!s)
        abort();
    return s;
}

/* Found by descending from die's CU into the child whose subtree holds die's offset
 * (the last one that starts at or before it, since a subtree ends where the next
 * sibling starts). */
void dw_append_scopes(struct strbuf *sb, Dwarf_Die *die)
{
    Dwarf_Die parent, d, best;
    Dwarf_Off target = dwarf_dieoffset(die);
    if (!dwarf_diecu(die, &parent, NULL, NULL))
        return;
    for (int depth = 0; depth < DW_DIE_DEPTH_MAX && dwarf_child(&parent, &d) == 0; depth++) {
        bool found = false;
        do {
            if (dwarf_dieoffset(&d) > target)
                break;
            best = d;
            found = true;
        } while (dwarf_siblingof(&d, &d) == 0);
        if (!found || dwarf_dieoffset(&best) == target)
            return;
        int tag = dwarf_tag(&best);
        if (tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
            tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
            tag == DW_TAG_interface_type) {
            const char *name = dwarf_diename(&best);
            sb_puts(sb, name ? name
                         : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                   : "(anonymous)");
            sb_puts(sb, "::");
        }
        parent = best;
    }
}

char *dw_die_function_name(Dwarf_Die *fn)
{
    const char *link = dw_attr_string(fn, DW_AT_linkage_name);
    if (!link)
        link = dw_attr_string(fn, DW_AT_MIPS_linkage_name);
    char *plain = link ? dw_demangle(link, false) : NULL;
    if (plain) {
        if (link[1] == 'R')
            dw_unwrap_inherent_impl(plain);
        return plain;
    }
    const char *name = dw_attr_string(fn, DW_AT_name);
    struct strbuf sb = {0};
    Dwarf_Die decl = dw_die_origin(fn, true);
    if (name)
        dw_append_scopes(&sb, &decl);
    sb_puts(&sb, name ? name : link ? link : "(anonymous)");
    return take(&sb);
}

/* The index also takes names from the ELF symbols, e.g.
 * "main::{lambda(int)#1}::operator()". */
char *dw_outofline_function_name(Dwarf_Die *fn, const char *path)
{
    const struct dw_index *ix = dw_index_get(path, NULL);
    Dwarf_Addr entry, base, end;
    if (ix && (dwarf_entrypc(fn, &entry) == 0 || dwarf_ranges(fn, 0, &base, &entry, &end) > 0)) {
        const struct dw_function *f = dw_function_at(ix, entry);
        if (f && f->entry == entry) {
            char *s = strdup(f->name);
            if (!s)
                abort();
            return s;
        }
    }
    return dw_die_function_name(fn);
}

char *dw_cu_absolute_path(Dwarf_Die *cu, const char *name)
{
    if (!name)
        return NULL;
    struct strbuf sb = {0};
    if (name[0] != '/') {
        const char *dir = dw_attr_string(cu, DW_AT_comp_dir);
        if (!dir || dir[0] != '/')
            return NULL;
        sb_puts(&sb, dir);
        sb_puts(&sb, "/");
    }
    sb_puts(&sb, name);
    char *p = take(&sb);
    dw_normalize_path(p);
    return p;
}

/* The file, line and column of pc in the line table of cu. */
void dw_site_of_pc(Dwarf_Die *cu, uint64_t pc, struct dw_site *s)
{
    Dwarf_Line *l = dwarf_getsrc_die(cu, pc);
    if (!l)
        return;
    dwarf_lineno(l, &s->line);
    dwarf_linecol(l, &s->column);
    s->file = dw_cu_absolute_path(cu, dwarf_linesrc(l, NULL, NULL));
}

/* The file, line and column of the call that inlined the subroutine inl. */
static void site_of_call(Dwarf_Die *inl, struct dw_site *s)
{
    Dwarf_Attribute at;
    Dwarf_Word line, col, idx;
    Dwarf_Die cu;
    Dwarf_Files *fs;
    size_t nfs;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &at), &line) == 0)
        s->line = (int)line;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &at), &col) == 0)
        s->column = (int)col;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &at), &idx) == 0 &&
        dwarf_diecu(inl, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &fs, &nfs) == 0 && idx < nfs)
        s->file = dw_cu_absolute_path(&cu, dwarf_filesrc(fs, idx, NULL, NULL));
}

size_t dw_frame_sites(const char *path, uint64_t pc, struct dw_site *sites, size_t max)
{
    size_t n = 0;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && max && dw_scopes_at(f, pc, &c)) {
        Dwarf_Die *callee = NULL;
        for (size_t i = 0; i <= c.fn && n < max; i++) {
            Dwarf_Die *d = &c.dies[i];
            int tag = dwarf_tag(d);
            if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
                continue;
            struct dw_site *s = &sites[n++];
            *s = (struct dw_site){.inlined = tag == DW_TAG_inlined_subroutine};
            s->function =
                i == c.fn ? dw_outofline_function_name(d, path) : dw_die_function_name(d);
            if (callee)
                site_of_call(callee, s);
            else
                dw_site_of_pc(&c.cu, pc, s);
            callee = d;
        }
        free(c.dies);
    }
    dw_files_unlock();
    return n;
}

void dw_sites_free(struct dw_site *sites, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(sites[i].function);
        free(sites[i].file);
        sites[i].function = sites[i].file = NULL;
    }
}
