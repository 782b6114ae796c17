/*
 * frame.c - the DWARF view of one frame (frame.h): its source sites with the inlined
 * calls, its variables with their values, and where one variable lives. It owns a
 * small cache of open ELF/DWARF files (each with the types converted from it, so a
 * type is converted once), which the line tables (lines.c) share through
 * dwarf_internal.h; evaluating where each variable lives is location.c's business.
 *
 * The scopes at an address are the DIEs that physically contain it, found by walking
 * the DIE tree of its CU: innermost first, lexical blocks and inlined subroutines, up
 * to the first DW_TAG_subprogram, the out-of-line function whose frame this is.
 * libdw's dwarf_getscopes does not serve: from an inlined subroutine it goes on into
 * the abstract origin's scopes (skipping the caller), and (0.188) it does not look
 * inside namespaces, so it finds no Rust function and no C++ lambda.
 *
 * The inlined copy of a function lists its parameters and variables as concrete DIEs
 * pointing at the abstract ones (DW_AT_abstract_origin), not always in declaration
 * order (gcc writes a callee's parameters in the order it evaluated them): the
 * variables of a scope are sorted by the offset of their abstract DIE.
 *
 * One mutex guards the cache and is held for a whole call, values read included (and
 * for a whole call of lines.c): libdw handles and the type converter are not meant for
 * concurrent use, and calls are rare (one per frame of a crash, one per breakpoint
 * set). At most MAX_FILES files stay open, the most recently
 * used.
 */
#include "dwarf/frame.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf_internal.h"
#include "dwarf/varpath.h"

enum {
    MAX_FILES = 16,     /* open files kept */
    MAX_DEPTH = 64,     /* DIE nesting followed */
    MAX_VARS = 64,      /* entries of one JSON array before "(N more)" */
};

/* ---- the file cache ---- */

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
    struct cu_functions *cus; /* function tables of the CUs looked into */
    struct interned *strings; /* in arena: the declaration files handed out */
};

/* One string kept in a file's arena, handed out once per distinct text. */
struct interned {
    struct interned *next;
    const char *text;
};

/* The address ranges of every function DIE with code in one CU, sorted by start:
 * a lookup then walks one function's subtree instead of the whole CU (Rust's std is
 * a few CUs of tens of thousands of DIEs: 3 ms a walk, 24 frames a panic). */
struct fn_range {
    uint64_t lo, hi;
    Dwarf_Off die;
};

struct cu_functions {
    Dwarf_Off cu;
    struct fn_range *r;
    size_t n, cap;
    struct cu_functions *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dw_file *files; /* most recently used first */

/* DWARF from the build-id debug file under /usr/lib/debug, for a file without any (as
 * the function index does). Its CFI stays the one of the file itself. */
static void open_debug_file(struct dw_file *f)
{
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(f->elf, &bits);
    if (n < 2 || n > 64)
        return;
    const unsigned char *id = bits;
    char path[200];
    int len = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
    for (ssize_t i = 1; i < n; i++)
        len += snprintf(path + len, sizeof path - (size_t)len, "%02x", id[i]);
    snprintf(path + len, sizeof path - (size_t)len, ".debug");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
    if (!dw) {
        elf_end(elf);
        close(fd);
        return;
    }
    f->dfd = fd;
    f->delf = elf;
    f->dw = dw;
}

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

static struct dw_file *file_open(const char *path, const struct stat *st)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, elf_init);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        elf_end(elf);
        close(fd);
        return NULL;
    }
    struct dw_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path)))
        abort();
    f->st = *st;
    f->fd = fd;
    f->dfd = -1;
    f->elf = elf;
    f->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    if (!f->dw)
        open_debug_file(f);
    f->eh_cfi = dwarf_getcfi_elf(elf);
    f->tc = type_conv_new(&f->arena);
    return f;
}

static void file_close(struct dw_file *f)
{
    while (f->cus) {
        struct cu_functions *next = f->cus->next;
        free(f->cus->r);
        free(f->cus);
        f->cus = next;
    }
    type_conv_free(f->tc);
    arena_free(&f->arena);
    if (f->eh_cfi)
        dwarf_cfi_end(f->eh_cfi);
    if (f->dw)
        dwarf_end(f->dw);
    if (f->delf) {
        elf_end(f->delf);
        close(f->dfd);
    }
    elf_end(f->elf);
    close(f->fd);
    free(f->path);
    free(f);
}

void dw_files_lock(void)
{
    pthread_mutex_lock(&lock);
}

void dw_files_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

Dwarf *dw_file_dwarf(const struct dw_file *f)
{
    return f->dw;
}

/* Reopened when it changed on disk; the most recently used MAX_FILES stay open. */
struct dw_file *dw_file_get(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    struct dw_file **pp, *f = NULL;
    for (pp = &files; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->path, path) == 0) {
            f = *pp;
            *pp = f->next;
            break;
        }
    if (f && (f->st.st_dev != st.st_dev || f->st.st_ino != st.st_ino ||
              f->st.st_size != st.st_size || f->st.st_mtim.tv_sec != st.st_mtim.tv_sec ||
              f->st.st_mtim.tv_nsec != st.st_mtim.tv_nsec)) {
        file_close(f);
        f = NULL;
    }
    if (!f && !(f = file_open(path, &st)))
        return NULL;
    f->next = files;
    files = f;
    size_t kept = 0;
    for (pp = &files; *pp && ++kept <= MAX_FILES; pp = &(*pp)->next)
        ;
    while (*pp) {
        struct dw_file *old = *pp;
        *pp = old->next;
        file_close(old);
    }
    return f;
}

void dw_frame_cache_clear(void)
{
    dw_globals_cache_clear();
    pthread_mutex_lock(&lock);
    struct dw_file *f = files;
    files = NULL;
    pthread_mutex_unlock(&lock);
    while (f) {
        struct dw_file *next = f->next;
        file_close(f);
        f = next;
    }
}

/* ---- the scopes at an address ---- */

/* Some producers write no .debug_aranges: then each CU is asked. */
bool dw_cu_at(Dwarf *dw, uint64_t pc, Dwarf_Die *cu)
{
    if (dwarf_addrdie(dw, pc, cu))
        return true;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        if (dwarf_offdie(dw, off + hsize, cu) && dwarf_haspc(cu, pc) > 0)
            return true;
        off = next;
    }
    return false;
}

static void push_die(struct dw_scopes *c, Dwarf_Die *d)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->dies = realloc(c->dies, c->cap * sizeof *c->dies);
        if (!c->dies)
            abort();
    }
    c->dies[c->n++] = *d;
}

/* Searches the children of parent for the innermost DIE of code holding pc, and on
 * the way back appends it and the scopes of code around it to c (innermost first).
 * Besides the scopes holding pc it descends into namespaces, modules, classes and,
 * for the local classes they hold (a lambda's operator() is defined in a class in the
 * function that writes it), into functions and blocks that do not hold pc. */
static bool find_pc(Dwarf_Die *parent, uint64_t pc, struct dw_scopes *c, int depth)
{
    Dwarf_Die d;
    if (depth > MAX_DEPTH || dwarf_child(parent, &d) != 0)
        return false;
    do {
        switch (dwarf_tag(&d)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&d, pc) > 0) {
                find_pc(&d, pc, c, depth + 1);
                push_die(c, &d);
                return true;
            }
            /* fall through */
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            if (find_pc(&d, pc, c, depth + 1))
                return true;
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&d, &d) == 0);
    return false;
}

static void add_ranges(struct cu_functions *t, Dwarf_Die *fn)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(fn, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 64;
            t->r = realloc(t->r, t->cap * sizeof *t->r);
            if (!t->r)
                abort();
        }
        t->r[t->n++] = (struct fn_range){lo, hi, dwarf_dieoffset(fn)};
    }
}

/* Every function with code under parent, where find_pc would look for one. */
static void collect_functions(struct cu_functions *t, Dwarf_Die *parent, int depth)
{
    Dwarf_Die d;
    if (depth > MAX_DEPTH || dwarf_child(parent, &d) != 0)
        return;
    do {
        switch (dwarf_tag(&d)) {
        case DW_TAG_subprogram:
            /* Local classes of a function hold functions of their own. */
            add_ranges(t, &d);
            /* fall through */
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            collect_functions(t, &d, depth + 1);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&d, &d) == 0);
}

static int range_cmp(const void *a, const void *b)
{
    const struct fn_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct cu_functions *cu_functions(struct dw_file *f, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (struct cu_functions *t = f->cus; t; t = t->next)
        if (t->cu == off)
            return t;
    struct cu_functions *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->cu = off;
    collect_functions(t, cu, 0);
    if (t->n > 1)
        qsort(t->r, t->n, sizeof *t->r, range_cmp);
    t->next = f->cus;
    f->cus = t;
    return t;
}

/* The smallest function range holding pc (ranges nest when a function's DIE holds
 * another's, never otherwise). */
static const struct fn_range *function_at(const struct cu_functions *t, uint64_t pc)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* first range starting after pc */
        size_t mid = (lo + hi) / 2;
        if (t->r[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct fn_range *best = NULL;
    for (size_t i = lo; i-- > 0;)
        if (pc < t->r[i].hi && (!best || t->r[i].hi - t->r[i].lo < best->hi - best->lo))
            best = &t->r[i];
    return best;
}

bool dw_scopes_at(struct dw_file *f, uint64_t pc, struct dw_scopes *c)
{
    *c = (struct dw_scopes){0};
    if (!f->dw || !dw_cu_at(f->dw, pc, &c->cu))
        return false;
    const struct fn_range *r = function_at(cu_functions(f, &c->cu), pc);
    Dwarf_Die fn;
    if (!r || !dwarf_offdie(f->dw, r->die, &fn))
        return false;
    find_pc(&fn, pc, c, 1);
    push_die(c, &fn);
    c->fn = c->n - 1;
    return true;
}

static const char *attr_string(Dwarf_Die *die, int name)
{
    Dwarf_Attribute at;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &at));
}

Dwarf_Die dw_die_origin(Dwarf_Die *die, bool with_spec)
{
    Dwarf_Die d = *die;
    Dwarf_Attribute at;
    for (int hops = 0; hops < 8; hops++)
        if (!(dwarf_attr(&d, DW_AT_abstract_origin, &at) ||
              (with_spec && dwarf_attr(&d, DW_AT_specification, &at))) ||
            !dwarf_formref_die(&at, &d))
            break;
    return d;
}

/* ---- names and files of the sites ---- */

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
    for (int depth = 0; depth < MAX_DEPTH && dwarf_child(&parent, &d) == 0; depth++) {
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
    const char *link = attr_string(fn, DW_AT_linkage_name);
    if (!link)
        link = attr_string(fn, DW_AT_MIPS_linkage_name);
    char *plain = link ? dw_demangle(link, false) : NULL;
    if (plain) {
        if (link[1] == 'R')
            dw_unwrap_inherent_impl(plain);
        return plain;
    }
    const char *name = attr_string(fn, DW_AT_name);
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
    char err[256];
    const struct dw_index *ix = dw_index_get(path, err, sizeof err);
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
        const char *dir = attr_string(cu, DW_AT_comp_dir);
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
static void site_of_pc(Dwarf_Die *cu, uint64_t pc, struct dw_site *s)
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
    pthread_mutex_lock(&lock);
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
                site_of_pc(&c.cu, pc, s);
            callee = d;
        }
        free(c.dies);
    }
    pthread_mutex_unlock(&lock);
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

/* One call's state: where variables are read from (location.c) and what they are
 * rendered with. */
struct eval {
    struct dw_file *f;
    struct dw_frame_ctx loc;
    const struct value_opts *o;
    struct member {
        Dwarf_Die die;
        Dwarf_Off key;          /* offset of the abstract DIE: declaration order */
        bool param;
    } *members;                 /* scratch: the variables of one scope */
    size_t cap_members;
    /* The line of pc when no inlined call holds it (0: unknown), and its file: a
     * variable of the function declared below it is not in scope yet. */
    int pc_line;
    char *pc_file;
};

/* An evaluation of the variables of scopes c at link-time address pc of f. */
static struct eval eval_at(struct dw_file *f, struct dw_scopes *c, uint64_t pc, uint64_t bias,
                           const struct dw_regs *regs, mem_read_fn rd, void *ctx)
{
    return (struct eval){
        .f = f,
        .loc = {.cfi = {f->eh_cfi, dwarf_getcfi(f->dw)}, .pc = pc, .bias = bias,
                .regs = regs, .rd = rd, .ctx = ctx, .fn = &c->dies[c->fn]},
    };
}

/* The value of variable die of type t as JSON. Registers and computed values are
 * rendered from their low t->size bytes (x86-64 is little-endian). */
static void write_value(struct eval *e, struct strbuf *out, Dwarf_Die *die,
                        const struct dw_type *t)
{
    struct dw_loc l = {0};
    uint64_t v;
    dw_locate(&e->loc, die, &l);
    switch (l.kind) {
    case DW_LOC_NONE:
        sb_json_string(out, "<optimized out>");
        return;
    case DW_LOC_MEM:
        value_json_at(out, t, l.v, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_BYTES:
        if (t && t->size > l.len) {
            snprintf(l.why, sizeof l.why, "%zu bytes for a %" PRIu64 "-byte type", l.len,
                     t->size);
            break;
        }
        value_json(out, t, l.bytes, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_REG:
    case DW_LOC_VALUE:
        if (!dw_loc_word(&e->loc, &l, &v))
            break;
        if (t && t->size > sizeof v) {
            snprintf(l.why, sizeof l.why, "%" PRIu64 "-byte value in 8 bytes", t->size);
            break;
        }
        value_json(out, t, &v, e->loc.rd, e->loc.ctx, e->o);
        return;
    case DW_LOC_FAIL:
        break;
    }
    char text[DW_LOC_WHY_MAX + 32];
    snprintf(text, sizeof text, "<unavailable: %s>", l.why);
    sb_json_string(out, text);
}

static const char *type_label(const struct dw_type *t)
{
    if (!t)
        return "void";
    if (t->name)
        return t->name;
    switch (t->kind) {
    case DWT_STRUCT:
        return "(anonymous struct)";
    case DWT_UNION:
        return "(anonymous union)";
    case DWT_ENUM:
        return "(anonymous enum)";
    default:
        return "?";
    }
}

/* ---- the variables ---- */

/* One JSON array being written. */
struct vlist {
    struct strbuf *out;
    size_t start;   /* out->len after "[" */
    size_t budget;  /* bytes of entries before the rest are only counted */
    size_t n, more;
};

/* The line of a variable of the function declared below pc's line in the same file,
 * not static (a static has its value from the start), or 0: C gives it no value
 * there yet, and what its stack slot holds is an earlier call's leftover. */
static int declared_below(struct eval *e, Dwarf_Die *die)
{
    Dwarf_Word line = 0;
    Dwarf_Attribute at;
    Dwarf_Op *ops;
    size_t n_ops;
    if (!e->pc_line || dwarf_tag(die) != DW_TAG_variable ||
        dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_line, &at), &line) != 0 ||
        (int)line <= e->pc_line)
        return 0;
    if (dwarf_getlocation(dwarf_attr_integrate(die, DW_AT_location, &at), &ops, &n_ops) == 0 &&
        n_ops > 0 && (ops[0].atom == DW_OP_addr || ops[0].atom == DW_OP_addrx))
        return 0;
    const char *file = dwarf_decl_file(die);
    const char *a = file ? strrchr(file, '/') : NULL, *b = strrchr(e->pc_file, '/');
    if (!file || strcmp(a ? a + 1 : file, b ? b + 1 : e->pc_file) != 0)
        return 0;
    return (int)line;
}

static void write_var(struct eval *e, struct vlist *vl, Dwarf_Die *die)
{
    if (vl->n == MAX_VARS || vl->out->len - vl->start >= vl->budget) {
        vl->more++;
        return;
    }
    const struct dw_type *t = type_conv_of(e->f->tc, die);
    sb_puts(vl->out, vl->n++ ? ",{\"name\":" : "{\"name\":");
    sb_json_string(vl->out, attr_string(die, DW_AT_name));
    sb_puts(vl->out, ",\"type\":");
    sb_json_string(vl->out, type_label(t));
    sb_puts(vl->out, ",\"value\":");
    int below = declared_below(e, die);
    if (below)
        sb_printf(vl->out, "\"<not declared yet: line %d, below this one>\"", below);
    else
        write_value(e, vl->out, die, t);
    sb_puts(vl->out, "}");
}

static int cmp_member(const void *x, const void *y)
{
    const struct member *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* The parameters and variables declared directly in scope, in declaration order, into
 * e->members; returns how many. */
static size_t scope_members(struct eval *e, Dwarf_Die *scope)
{
    size_t n = 0;
    Dwarf_Die c;
    if (dwarf_child(scope, &c) == 0)
        do {
            int tag = dwarf_tag(&c);
            Dwarf_Attribute at;
            bool artificial = false;
            if ((tag != DW_TAG_formal_parameter && tag != DW_TAG_variable) ||
                !attr_string(&c, DW_AT_name) || dwarf_hasattr_integrate(&c, DW_AT_declaration))
                continue;
            dwarf_formflag(dwarf_attr_integrate(&c, DW_AT_artificial, &at), &artificial);
            if (artificial && tag == DW_TAG_variable)
                continue;
            if (n == e->cap_members) {
                e->cap_members = e->cap_members ? 2 * e->cap_members : 32;
                e->members = realloc(e->members, e->cap_members * sizeof *e->members);
                if (!e->members)
                    abort();
            }
            Dwarf_Die origin = dw_die_origin(&c, false);
            e->members[n++] = (struct member){c, dwarf_dieoffset(&origin),
                                              tag == DW_TAG_formal_parameter};
        } while (dwarf_siblingof(&c, &c) == 0);
    if (n > 1)
        qsort(e->members, n, sizeof *e->members, cmp_member);
    return n;
}

static void scope_vars(struct eval *e, Dwarf_Die *scope, struct vlist *params,
                       struct vlist *locals)
{
    size_t n = scope_members(e, scope);
    for (size_t i = 0; i < n; i++)
        write_var(e, e->members[i].param ? params : locals, &e->members[i].die);
}

static void vlist_end(struct vlist *vl)
{
    if (vl->more)
        sb_printf(vl->out, "%s{\"name\":\"...\",\"value\":\"(%zu more)\"}", vl->n ? "," : "",
                  vl->more);
    sb_puts(vl->out, "]");
}

int dw_frame_vars_json(struct strbuf *params, struct strbuf *locals, const char *path,
                       uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                       mem_read_fn rd, void *ctx, const struct value_opts *o)
{
    size_t budget = 4 * (o && o->max_output ? o->max_output : VALUE_DEFAULT_MAX_OUTPUT);
    sb_puts(params, "[");
    sb_puts(locals, "[");
    struct vlist pl = {params, params->len, budget, 0, 0};
    struct vlist ll = {locals, locals->len, budget, 0, 0};
    int rc = -1;
    pthread_mutex_lock(&lock);
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        e.o = o;
        struct dw_site here = {0};
        bool inlined = false;
        for (size_t i = 0; i < c.fn; i++)
            inlined |= dwarf_tag(&c.dies[i]) == DW_TAG_inlined_subroutine;
        if (!inlined)
            site_of_pc(&c.cu, pc, &here);
        e.pc_line = here.file ? here.line : 0;
        e.pc_file = here.file;
        for (size_t i = 0; i <= c.fn; i++)
            scope_vars(&e, &c.dies[i], &pl, &ll);
        free(here.file);
        free(e.members);
        free(c.dies);
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    vlist_end(&pl);
    vlist_end(&ll);
    return rc;
}

/* ---- one variable's place ---- */

/* The copy of text kept in f's arena (one per distinct text, so repeated lookups do
 * not grow it). */
static const char *intern(struct dw_file *f, const char *text)
{
    for (struct interned *i = f->strings; i; i = i->next)
        if (strcmp(i->text, text) == 0)
            return i->text;
    struct interned *i = arena_alloc(&f->arena, sizeof *i);
    i->text = arena_strdup(&f->arena, text);
    i->next = f->strings;
    f->strings = i;
    return i->text;
}

/* The declaration file of die, absolute when DWARF gives a path. */
static const char *decl_file_of(struct dw_file *f, Dwarf_Die *die)
{
    const char *name = dwarf_decl_file(die);
    Dwarf_Die cu;
    if (!name || !dwarf_diecu(die, &cu, NULL, NULL))
        return NULL;
    char *abs = dw_cu_absolute_path(&cu, name);
    const char *kept = intern(f, abs ? abs : name);
    free(abs);
    return kept;
}

/* Reports where variable die is; 0, or -1 with the reason in err. */
static int place_of(struct eval *e, Dwarf_Die *die, struct dw_var_where *out, char *err,
                    size_t errlen)
{
    struct dw_loc l = {0};
    dw_locate(&e->loc, die, &l);
    switch (l.kind) {
    case DW_LOC_NONE:
        snprintf(err, errlen, "optimized out at this point");
        return -1;
    case DW_LOC_MEM:
        out->kind = DWV_MEMORY;
        out->address = l.v;
        return 0;
    case DW_LOC_REG:
        out->kind = DWV_REGISTER;
        out->regno = (int)l.v;
        return 0;
    case DW_LOC_VALUE:
        if (out->type->size > sizeof l.v) {
            snprintf(err, errlen, "%" PRIu64 "-byte value in 8 bytes", out->type->size);
            return -1;
        }
        out->kind = DWV_VALUE;
        out->n_bytes = out->type->size ? out->type->size : sizeof l.v;
        for (size_t i = 0; i < sizeof l.v; i++)
            out->bytes[i] = (unsigned char)(l.v >> (8 * i));
        return 0;
    case DW_LOC_BYTES:
        if (l.len > sizeof out->bytes) {
            snprintf(err, errlen, "a %zu-byte constant (at most %zu bytes are reported)", l.len,
                     sizeof out->bytes);
            return -1;
        }
        out->kind = DWV_VALUE;
        out->n_bytes = l.len;
        memcpy(out->bytes, l.bytes, l.len);
        return 0;
    case DW_LOC_FAIL:
        break;
    }
    snprintf(err, errlen, "%s", l.why);
    return -1;
}

enum { MAX_LISTED = 16 }; /* names listed when a variable is not in scope */

/* Adds name to the list in sb unless listed already; counts it in *n. */
static void list_name(struct strbuf *sb, const char **listed, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n && i < MAX_LISTED; i++)
        if (strcmp(listed[i], name) == 0)
            return;
    if (*n < MAX_LISTED) {
        sb_puts(sb, *n ? ", " : "in scope here: ");
        sb_puts(sb, name);
        listed[*n] = name;
    } else if (*n == MAX_LISTED) {
        sb_puts(sb, ", ...");
    }
    (*n)++;
}

int dw_frame_var_find(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                      mem_read_fn rd, void *ctx, const char *name, struct dw_var_where *out,
                      char *err, size_t errlen)
{
    *out = (struct dw_var_where){0};
    if (errlen)
        err[0] = '\0';
    int rc = 1;
    struct strbuf names = {0};
    const char *listed[MAX_LISTED];
    size_t n_listed = 0;
    pthread_mutex_lock(&lock);
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        for (size_t i = 0; i <= c.fn && rc == 1; i++) {
            size_t n = scope_members(&e, &c.dies[i]);
            for (size_t k = 0; k < n && rc == 1; k++) {
                Dwarf_Die *die = &e.members[k].die;
                const char *var = attr_string(die, DW_AT_name);
                if (strcmp(var, name) != 0) {
                    list_name(&names, listed, &n_listed, var);
                    continue;
                }
                const struct dw_type *t = type_conv_of(f->tc, die);
                out->type = t ? t : type_conv_unknown(f->tc);
                out->is_param = e.members[k].param;
                out->decl_file = decl_file_of(f, die);
                dwarf_decl_line(die, &out->decl_line);
                rc = place_of(&e, die, out, err, errlen);
            }
        }
        free(e.members);
        free(c.dies);
    }
    pthread_mutex_unlock(&lock);
    if (rc == 1)
        snprintf(err, errlen, "%s",
                 n_listed && !names.oom ? names.buf : "nothing is in scope here");
    sb_free(&names);
    return rc;
}

/* ---- the variable that holds or points to an address ---- */

/* The word variable die of pointer type holds, at place w; false when unreadable. */
static bool pointer_value(const struct eval *e, const struct dw_var_where *w, uint64_t *p)
{
    switch (w->kind) {
    case DWV_MEMORY:
        return e->loc.rd(e->loc.ctx, w->address, p, sizeof *p);
    case DWV_REGISTER:
        if (!e->loc.regs || w->regno < 0 || w->regno > 16 ||
            !(e->loc.regs->known & (1u << w->regno)))
            return false;
        *p = e->loc.regs->val[w->regno];
        return true;
    case DWV_VALUE:
        *p = 0;
        memcpy(p, w->bytes, w->n_bytes < sizeof *p ? w->n_bytes : sizeof *p);
        return true;
    }
    return false;
}

/* Appends to out the name of addr inside variable die (at w) when it holds addr or
 * points to an object that does. */
static bool names_address(const struct eval *e, Dwarf_Die *die, const struct dw_var_where *w,
                          uint64_t addr, struct strbuf *out)
{
    const struct dw_type *t = w->type;
    const char *name = attr_string(die, DW_AT_name);
    size_t start = out->len;
    uint64_t p;
    if (w->kind == DWV_MEMORY && addr >= w->address && addr - w->address < t->size) {
        sb_puts(out, name);
        if (dw_member_path(t, addr - w->address, out))
            return true;
    } else if (t->kind == DWT_POINTER && t->target && t->target->size &&
               pointer_value(e, w, &p) && addr >= p && addr - p < t->target->size) {
        struct strbuf path = {0};
        if (dw_member_path(t->target, addr - p, &path)) {
            if (!path.len)
                sb_printf(out, "*%s", name);
            else if (path.buf[0] == '.')
                sb_printf(out, "%s->%s", name, path.buf + 1);
            else
                sb_printf(out, "(*%s)%s", name, path.buf);
            sb_free(&path);
            return true;
        }
        sb_free(&path);
    }
    out->len = start;
    if (out->buf)
        out->buf[start] = '\0';
    return false;
}

bool dw_frame_var_at(const char *path, uint64_t pc, uint64_t bias, const struct dw_regs *regs,
                     mem_read_fn rd, void *ctx, uint64_t addr, struct strbuf *out)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    struct dw_file *f = dw_file_get(path);
    struct dw_scopes c;
    if (f && dw_scopes_at(f, pc, &c)) {
        struct eval e = eval_at(f, &c, pc, bias, regs, rd, ctx);
        for (size_t i = 0; i <= c.fn && !found; i++) {
            size_t n = scope_members(&e, &c.dies[i]);
            for (size_t k = 0; k < n && !found; k++) {
                Dwarf_Die *die = &e.members[k].die;
                const struct dw_type *t = type_conv_of(f->tc, die);
                struct dw_var_where w = {.type = t ? t : type_conv_unknown(f->tc)};
                char err[DW_LOC_WHY_MAX];
                found = place_of(&e, die, &w, err, sizeof err) == 0 &&
                        names_address(&e, die, &w, addr, out);
            }
        }
        free(e.members);
        free(c.dies);
    }
    pthread_mutex_unlock(&lock);
    return found;
}
