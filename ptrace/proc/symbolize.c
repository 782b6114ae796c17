/*
 * symbolize.c - frame names for unwound stacks. See symbolize.h.
 */
#include "ptrace/proc/symbolize.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/globals.h"
#include "dwarf/varpath.h"
#include "ptrace/proc/match.h"

#define MAX_SITES 8

void symbolize_preload(pid_t pid)
{
    struct modules ms = {0};
    if (procmem_modules(pid, &ms.m, &ms.n) != 0)
        return;
    for (size_t i = 0; i < ms.n; i++) {
        if (!ms.m[i].has_code)
            continue;
        const struct dw_index *ix = dw_index_get(ms.m[i].path, NULL);
        struct dw_site site;
        /* Opens the file's debug info in dwarf/openfiles.c's cache. */
        if (ix && ix->n_functions > 0 &&
            dw_frame_sites(ms.m[i].path, ix->functions[0].entry, &site, 1) > 0)
            dw_sites_free(&site, 1);
    }
    free(ms.m);
}

const struct module *symbolize_module_of(const struct modules *ms, uint64_t pc)
{
    for (size_t i = 0; i < ms->n; i++)
        if (pc >= ms->m[i].start && pc < ms->m[i].end)
            return &ms->m[i];
    return NULL;
}

char *symbolize_module_global_at(const struct modules *ms, uint64_t addr)
{
    const struct module *m = NULL;
    for (size_t i = 0; i < ms->n; i++)
        if (ms->m[i].start <= addr && (!m || ms->m[i].start > m->start))
            m = &ms->m[i];
    struct dw_global g;
    struct strbuf sb = {0};
    if (!m || !dw_global_at(m->path, addr - m->bias, &g))
        return NULL;
    sb_puts(&sb, g.name);
    if (!dw_member_path(g.type, addr - m->bias - g.addr, &sb) || sb.oom) {
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

static bool is_system_path(const char *path)
{
    return strncmp(path, "/lib/", 5) == 0 || strncmp(path, "/usr/lib/", 9) == 0 ||
           strncmp(path, "/lib64/", 7) == 0 || strncmp(path, "/usr/lib64/", 11) == 0;
}

bool symbolize_is_runtime_frame(const struct shown_frame *f)
{
    static const char *const prefixes[] = {
        "std::", "core::", "alloc::", "__rustc::", "rust_", "__rust_", "__asan", "__lsan",
        "__ubsan", "__tsan", "__sanitizer", "__interceptor_", "__cxa_", "__cxxabiv1::",
        "__gnu_cxx::", "_Unwind_", "panic_unwind::", "__assert", "abort", "raise",
    };
    if (f->mod && is_system_path(f->mod->path))
        return true;
    if (f->file && strncmp(f->file, "/rustc/", 7) == 0)
        return true;
    for (size_t i = 0; f->function && i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(f->function, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

void symbolize(const struct unwind_result *uw, const struct modules *ms,
               struct symbolized *out)
{
    memset(out, 0, sizeof *out);
    out->frames = calloc(uw->n * MAX_SITES, sizeof *out->frames);
    out->sites = calloc(uw->n * MAX_SITES, sizeof *out->sites);
    if (!out->frames || !out->sites)
        return;
    for (size_t i = 0; i < uw->n; i++) {
        /* A caller's pc is a return address: the call is the byte before. */
        uint64_t pc = uw->frames[i].pc - (i > 0 ? 1 : 0);
        const struct module *m = symbolize_module_of(ms, pc);
        uint64_t lpc = m ? pc - m->bias : pc;
        struct dw_site *sites = out->sites + out->n_sites;
        size_t ns = m ? dw_frame_sites(m->path, lpc, sites, MAX_SITES) : 0;
        out->n_sites += ns;
        const char *name = !m && pc >= ms->vdso_start && pc < ms->vdso_end ? "[vdso]" : NULL;
        if (m && (ns == 0 || !sites[ns - 1].function)) {
            const struct dw_index *ix = dw_index_get(m->path, NULL);
            const struct dw_function *fn = ix ? dw_function_at(ix, lpc) : NULL;
            name = fn ? fn->name : NULL;
        }
        for (size_t s = 0; s < (ns ? ns : 1); s++) {
            struct shown_frame *f = &out->frames[out->n++];
            f->phys = i;
            f->mod = m;
            f->lookup_pc = lpc;
            f->function = ns && sites[s].function ? sites[s].function : name;
            f->file = ns ? sites[s].file : NULL;
            f->line = ns ? sites[s].line : 0;
            f->inlined = ns ? sites[s].inlined : false;
            f->outermost_site = s + 1 == (ns ? ns : 1);
        }
    }
}

const char *symbolize_public_name(const struct shown_frame *f)
{
    if (!f->function || f->function[0] != '_' || !f->outermost_site || !f->mod)
        return f->function;
    const struct dw_index *ix = dw_index_get(f->mod->path, NULL);
    const struct dw_function *fn = ix ? dw_function_at(ix, f->lookup_pc) : NULL;
    if (!fn)
        return f->function;
    bool same = strcmp(fn->name, f->function) == 0;
    for (size_t i = 0; i < fn->n_aliases && !same; i++)
        same = strcmp(fn->aliases[i], f->function) == 0;
    const char *pub = same ? match_public_name(NULL, fn) : f->function;
    return strspn(pub, "_") < strspn(f->function, "_") ? pub : f->function;
}

void symbolize_free(struct symbolized *s)
{
    if (s->sites)
        dw_sites_free(s->sites, s->n_sites);
    free(s->sites);
    free(s->frames);
}

size_t symbolize_own_frame(const struct symbolized *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->frames[i].file && s->frames[i].line && !symbolize_is_runtime_frame(&s->frames[i]))
            return i;
    for (size_t i = 0; i < s->n; i++)
        if (s->frames[i].file && s->frames[i].line)
            return i;
    return 0;
}

bool symbolize_any_frame_named(const struct symbolized *s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; s->frames[i].function && k < n; k++)
            if (strncmp(s->frames[i].function, names[k], strlen(names[k])) == 0)
                return true;
    return false;
}

void symbolize_frame_regs(const struct unwind_frame *f, struct dw_regs *r)
{
    memset(r, 0, sizeof *r);
    memcpy(r->val, f->regs, sizeof r->val);
    r->known = f->known;
    r->cfa = f->cfa;
}
