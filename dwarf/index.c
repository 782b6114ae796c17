/*
 * index.c - builds the function index of one ELF file (dwarf.h) with libelf/libdw,
 * and owns the arena every index lives in.
 *
 * The build has three passes, so that the costly work is done once per address:
 * 1. Walk every CU's DIE tree (into namespaces, classes, Rust modules and function
 *    bodies) and note each DW_TAG_subprogram that has code: entry address, DIE offset
 *    and the enclosing scope names. Declarations are skipped; abstract roots that only
 *    exist inlined (DW_AT_inline, no code) are noted apart.
 * 2. Sort by entry and keep one DIE per address (a C++ binary has many DIEs for one
 *    address: discarded template copies point at the kept one), then read each kept
 *    one: name from the demangled linkage name (DW_AT_linkage_name, or
 *    DW_AT_MIPS_linkage_name, through abstract_origin/specification), else the scope
 *    names joined with "::" plus DW_AT_name; declaration file (from the file table of
 *    the CU's line table header, not its line program) and line; parameters and
 *    return type through types.c.
 * Passes 1 and 2 run on two threads when .debug_info is large (these machines have two
 * cores): each takes half of the CUs through its own Elf/Dwarf handles, arena and type
 * converter; naming (demangling) is then split in halves as well.
 * 3. Add the ELF .symtab/.dynsym functions at addresses DWARF does not cover, and
 *    record the other symbol names at an address as aliases.
 * When the file itself has no DWARF, the build-id debug file under /usr/lib/debug is
 * used for DWARF (and its symbol table) when installed.
 */
#include "dwarf/dwarf_internal.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strmap.h"
#include "base/u64map.h"

/* ---- the index object ---- */

struct index_impl {
    struct dw_index pub; /* first: a dw_index pointer is an index_impl pointer */
    struct arena arena;
};

void dw_index_free(const struct dw_index *ix)
{
    if (!ix)
        return;
    struct arena a = ((const struct index_impl *)ix)->arena;
    arena_free(&a); /* the index itself lives in its arena */
}

/* ---- ELF ---- */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

/* Opens path as ELF; on failure e set (NULL: not told) and -1. */
static int open_elf(const char *path, int *fd, Elf **elf, struct strobe_error *e)
{
    pthread_once(&elf_once, elf_init);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        err_set(e, ERR_NO_DEBUG_SYMBOLS, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
        err_set(e, ERR_NO_DEBUG_SYMBOLS, "%s is not an ELF file", path);
        elf_end(*elf);
        close(*fd);
        return -1;
    }
    return 0;
}

static void build_id_hex(Elf *elf, char out[41])
{
    const void *id;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
    out[0] = '\0';
    for (ssize_t i = 0; i < n && i < 20; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *)id)[i]);
}

int dw_elf_build_id(const char *path, char out[41], struct strobe_error *e)
{
    int fd;
    Elf *elf;
    if (open_elf(path, &fd, &elf, e) != 0)
        return -1;
    build_id_hex(elf, out);
    elf_end(elf);
    close(fd);
    return 0;
}

/* ---- the workers ---- */

struct cand {
    uint64_t entry;
    Dwarf_Off off;
    Dwarf_Die die;
    const char *prefix; /* enclosing scopes "a::b", NULL at top level */
    int worker;         /* whose Dwarf handle die belongs to */
    Dwarf_Die owner;    /* the enclosing class, when there is one */
    bool has_owner;
};

/* A function whose name waits for the demangling pass. */
struct pending {
    struct dw_function *f;
    const char *link;   /* linkage name in the DWARF string table, or NULL */
    const char *dwname; /* DW_AT_name, for functions without a mangled name */
    const char *prefix;
};

struct scope {
    struct scope *up;
    const char *name;
    const char *full; /* built on first use */
    Dwarf_Die die;
    bool is_type;     /* a class/struct/union: lends its declaration to artificial
                         members such as a lambda's operator() */
};

/* The DWARF sections read directly (little-endian files only, else all NULL). */
struct sections {
    const unsigned char *line, *line_str, *str;
    size_t n_line, n_line_str, n_str;
};

/* One thread's share of the DWARF passes: a contiguous range of CUs, read through
 * its own Elf and Dwarf handles (libdw takes a lock on every abbreviation lookup, so
 * two threads on one handle would contend), converted into its own arena and types. */
struct worker {
    int id;
    Elf *elf;           /* own handle, ended with the worker unless it is the file's */
    Dwarf *dw;
    struct arena own;   /* worker 0 allocates in the index's arena directly */
    struct arena *a;
    struct type_conv *tc;
    Dwarf_Off cu_lo, cu_hi; /* CU offsets [cu_lo, cu_hi) */
    size_t n_cus;
    struct cand *c;     /* subprograms with code, sorted by entry then offset */
    size_t n, cap;
    struct cand *inl;   /* inlined-only candidates (entry unused) */
    size_t n_inl, cap_inl;
    struct u64map origins; /* DIE offset + 1 of every abstract root with code somewhere */
    struct sections sec;
    struct u64map tables; /* Dwarf_CU -> struct file_table */
    struct u64map files;  /* libdw file name -> absolute path, when a table is unreadable */
    Dwarf_Die *params;  /* scratch for read_params */
    size_t cap_params;
    /* phase 2 input: the kept candidates, each read by its own worker */
    const struct cand *kept;
    size_t n_kept;
    struct dw_function *fs;
    struct pending *pend;
};

static void push_cand(struct cand **v, size_t *n, size_t *cap, struct cand c)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v)
            abort();
    }
    (*v)[(*n)++] = c;
}

/* ---- pass 1: the DIE walk ---- */

static const char *scope_prefix(struct worker *w, struct scope *s)
{
    if (!s)
        return NULL;
    if (!s->full) {
        const char *up = scope_prefix(w, s->up);
        const char *name = s->name ? s->name : "(anonymous namespace)";
        s->full = up ? arena_printf(w->a, "%s::%s", up, name) : arena_strdup(w->a, name);
    }
    return s->full;
}

static void note_subprogram(struct worker *w, Dwarf_Die *die, struct scope *sc)
{
    if (dwarf_hasattr(die, DW_AT_declaration))
        return;
    Dwarf_Addr entry;
    if (dwarf_entrypc(die, &entry) != 0) {
        Dwarf_Addr base, end;
        if (!dwarf_hasattr(die, DW_AT_ranges) || dwarf_ranges(die, 0, &base, &entry, &end) <= 0) {
            if (dwarf_hasattr(die, DW_AT_inline))
                push_cand(&w->inl, &w->n_inl, &w->cap_inl,
                          (struct cand){.off = dwarf_dieoffset(die), .die = *die,
                                        .prefix = scope_prefix(w, sc), .worker = w->id});
            return;
        }
    }
    if (entry == 0 || entry >= (Dwarf_Addr)-2) /* discarded copies: 0 or a tombstone */
        return;
    Dwarf_Attribute at;
    Dwarf_Die origin;
    if (dwarf_attr(die, DW_AT_abstract_origin, &at) && dwarf_formref_die(&at, &origin))
        if (u64map_put(&w->origins, dwarf_dieoffset(&origin) + 1, (void *)1) != 0)
            abort();
    struct cand c = {.entry = entry, .off = dwarf_dieoffset(die), .die = *die,
                     .prefix = scope_prefix(w, sc), .worker = w->id};
    if (sc && sc->is_type) {
        c.owner = sc->die;
        c.has_owner = true;
    }
    push_cand(&w->c, &w->n, &w->cap, c);
}

static void walk(struct worker *w, Dwarf_Die *parent, struct scope *sc, bool c_cu, int depth)
{
    Dwarf_Die die;
    if (depth > 64 || dwarf_child(parent, &die) != 0)
        return;
    do {
        int tag = dwarf_tag(&die);
        switch (tag) {
        case DW_TAG_subprogram:
            note_subprogram(w, &die, sc);
            /* a body may hold nested functions and local classes */
            __attribute__((fallthrough));
        case DW_TAG_lexical_block:
            walk(w, &die, sc, c_cu, depth + 1);
            break;
        case DW_TAG_structure_type:
        case DW_TAG_class_type:
        case DW_TAG_union_type:
            if (c_cu)
                break;
            /* fall through */
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_interface_type: {
            struct scope inner = {sc, dwarf_diename(&die), NULL, die,
                                  tag != DW_TAG_namespace && tag != DW_TAG_module};
            if (!inner.name && tag != DW_TAG_namespace)
                inner.name = "(anonymous)";
            walk(w, &die, &inner, c_cu, depth + 1);
            break;
        }
        default:
            break;
        }
    } while (dwarf_siblingof(&die, &die) == 0);
}

static int cmp_cand(const void *x, const void *y)
{
    const struct cand *a = x, *b = y;
    if (a->entry != b->entry)
        return a->entry < b->entry ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

static void *walk_worker(void *arg)
{
    struct worker *w = arg;
    Dwarf_Off off = w->cu_lo, next;
    size_t hsize;
    while (off < w->cu_hi && dwarf_nextcu(w->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(w->dw, off + hsize, &cu)) {
            w->n_cus++;
            int lang = dwarf_srclang(&cu);
            bool c_cu = lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
                        lang == DW_LANG_C11;
            walk(w, &cu, NULL, c_cu, 0);
        }
        off = next;
    }
    if (w->n > 1) /* qsort must not be given NULL, even for 0 elements */
        qsort(w->c, w->n, sizeof *w->c, cmp_cand);
    return NULL;
}

/* ---- declaration files ---- */

/* The file table of one line table header, read without decoding its line program
 * (libdw's dwarf_decl_file decodes the whole program of the CU first, a third of an
 * index build). Entries are indexed by DW_AT_decl_file; abs is built on first use. */
struct file_table {
    size_t n;
    struct file_entry {
        const char *name, *dir; /* as in the header; dir NULL when none */
        const char *abs;
    } *e;
    bool unreadable; /* ask libdw instead */
};

/* A bounded little-endian reader: reading past end sets bad and yields zeros. */
struct reader {
    const unsigned char *p, *end;
    bool bad;
};

static uint64_t rd_fixed(struct reader *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        r->p = r->end;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static uint64_t rd_uleb(struct reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (r->p >= r->end) {
            r->bad = true;
            return 0;
        }
        unsigned char byte = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
}

static const char *rd_cstr(struct reader *r)
{
    const unsigned char *nul = r->p < r->end ? memchr(r->p, 0, (size_t)(r->end - r->p)) : NULL;
    if (!nul) {
        r->bad = true;
        r->p = r->end;
        return NULL;
    }
    const char *s = (const char *)r->p;
    r->p = nul + 1;
    return s;
}

/* The NUL-terminated string at off in a string section, or NULL when out of bounds. */
static const char *str_at(const unsigned char *sec, size_t n, uint64_t off)
{
    return sec && off < n && memchr(sec + off, 0, n - off) ? (const char *)sec + off : NULL;
}

/* One DWARF 5 directory or file entry in the format fmt (nfmt pairs of content type
 * and form): its path and directory index. false when unreadable. */
static bool read_entry(struct reader *r, const struct sections *s, const uint64_t *fmt,
                       size_t nfmt, size_t offsz, const char **path, uint64_t *dir)
{
    *path = NULL;
    *dir = 0;
    for (size_t i = 0; i < nfmt; i++) {
        uint64_t v = 0;
        const char *str = NULL;
        switch (fmt[2 * i + 1]) {
        case DW_FORM_string:
            str = rd_cstr(r);
            break;
        case DW_FORM_line_strp:
            str = str_at(s->line_str, s->n_line_str, rd_fixed(r, offsz));
            break;
        case DW_FORM_strp:
            str = str_at(s->str, s->n_str, rd_fixed(r, offsz));
            break;
        case DW_FORM_udata:
            v = rd_uleb(r);
            break;
        case DW_FORM_data1:
        case DW_FORM_data2:
        case DW_FORM_data4:
        case DW_FORM_data8:
            v = rd_fixed(r, fmt[2 * i + 1] == DW_FORM_data1   ? 1
                            : fmt[2 * i + 1] == DW_FORM_data2 ? 2
                            : fmt[2 * i + 1] == DW_FORM_data4 ? 4
                                                              : 8);
            break;
        case DW_FORM_data16:
            rd_fixed(r, 16);
            break;
        case DW_FORM_block: {
            uint64_t len = rd_uleb(r);
            if (len > (uint64_t)(r->end - r->p))
                return false;
            r->p += len;
            break;
        }
        default: /* strx and others: not used by compilers for line tables */
            return false;
        }
        if (fmt[2 * i] == DW_LNCT_path)
            *path = str;
        else if (fmt[2 * i] == DW_LNCT_directory_index)
            *dir = v;
    }
    return !r->bad && *path;
}

/* An entry format of a DWARF 5 header into fmt (up to 16 pairs); its count, or -1. */
static int read_format(struct reader *r, uint64_t fmt[32])
{
    unsigned n = (unsigned)rd_fixed(r, 1);
    if (n > 16)
        return -1;
    for (unsigned i = 0; i < 2 * n; i++)
        fmt[i] = rd_uleb(r);
    return r->bad ? -1 : (int)n;
}

/* Parses the header of the line table at off into t (entries in w's arena). */
static bool read_file_table(struct worker *w, uint64_t off, const char *comp_dir,
                            struct file_table *t)
{
    const struct sections *s = &w->sec;
    if (!s->line || off >= s->n_line)
        return false;
    struct reader r = {s->line + off, s->line + s->n_line, false};
    size_t offsz = 4;
    uint64_t len = rd_fixed(&r, 4);
    if (len == 0xffffffff) {
        offsz = 8;
        len = rd_fixed(&r, 8);
    }
    if (r.bad || len > (uint64_t)(r.end - r.p))
        return false;
    r.end = r.p + len;
    unsigned version = (unsigned)rd_fixed(&r, 2);
    if (version < 2 || version > 5)
        return false;
    if (version == 5)
        rd_fixed(&r, 2); /* address and segment selector sizes */
    uint64_t hlen = rd_fixed(&r, offsz);
    if (r.bad || hlen > (uint64_t)(r.end - r.p))
        return false;
    r.end = r.p + hlen;
    /* minimum_instruction_length, [maximum_operations_per_instruction],
     * default_is_stmt, line_base, line_range */
    rd_fixed(&r, version >= 4 ? 5 : 4);
    unsigned opcode_base = (unsigned)rd_fixed(&r, 1);
    rd_fixed(&r, opcode_base ? opcode_base - 1 : 0);
    if (r.bad)
        return false;

    /* directories, then files: name and directory index */
    const char **dirs = NULL;
    size_t n_dirs = 0;
    bool ok = false;
    if (version < 5) {
        size_t cap = (size_t)(r.end - r.p) + 1; /* each entry takes at least a byte */
        dirs = malloc(cap * sizeof *dirs);
        t->e = arena_alloc(w->a, (cap + 1) * sizeof *t->e);
        if (!dirs)
            abort();
        dirs[n_dirs++] = comp_dir; /* index 0 is the compilation directory */
        for (const char *d; (d = rd_cstr(&r)) && *d;)
            dirs[n_dirs++] = d;
        t->n = 1; /* file indexes start at 1 */
        for (const char *f; !r.bad && (f = rd_cstr(&r)) && *f;) {
            uint64_t d = rd_uleb(&r);
            rd_uleb(&r); /* mtime */
            rd_uleb(&r); /* length */
            t->e[t->n++] = (struct file_entry){f, d < n_dirs ? dirs[d] : NULL, NULL};
        }
        ok = !r.bad;
    } else {
        uint64_t fmt[32];
        int nfmt = read_format(&r, fmt);
        uint64_t count = nfmt < 0 ? 0 : rd_uleb(&r);
        if (nfmt < 0 || r.bad || count > (uint64_t)(r.end - r.p))
            goto out;
        dirs = malloc((count + 1) * sizeof *dirs);
        if (!dirs)
            abort();
        for (uint64_t i = 0; i < count; i++) {
            uint64_t unused;
            if (!read_entry(&r, s, fmt, (size_t)nfmt, offsz, &dirs[n_dirs++], &unused))
                goto out;
        }
        nfmt = read_format(&r, fmt);
        count = nfmt < 0 ? 0 : rd_uleb(&r);
        if (nfmt < 0 || r.bad || count > (uint64_t)(r.end - r.p))
            goto out;
        t->e = arena_alloc(w->a, (count + 1) * sizeof *t->e);
        for (uint64_t i = 0; i < count; i++) {
            const char *f;
            uint64_t d;
            if (!read_entry(&r, s, fmt, (size_t)nfmt, offsz, &f, &d))
                goto out;
            t->e[t->n++] = (struct file_entry){f, d < n_dirs ? dirs[d] : NULL, NULL};
        }
        ok = true;
    }
out:
    free(dirs);
    return ok;
}

static struct file_table *file_table(struct worker *w, Dwarf_CU *cu)
{
    struct file_table *t = u64map_get(&w->tables, (uint64_t)(uintptr_t)cu);
    if (t)
        return t;
    t = arena_alloc(w->a, sizeof *t);
    Dwarf_Die cudie;
    Dwarf_Attribute at;
    Dwarf_Word off;
    t->unreadable = !dwarf_cu_die(cu, &cudie, NULL, NULL, NULL, NULL, NULL, NULL) ||
                    dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &at), &off) != 0 ||
                    !read_file_table(w, off, dw_attr_string(&cudie, DW_AT_comp_dir), t);
    if (u64map_put(&w->tables, (uint64_t)(uintptr_t)cu, t) != 0)
        abort(); /* as arena_alloc: an index build does not survive ENOMEM */
    return t;
}

/* Lexically removes "." and "dir/.." segments from a path, in place. */
void dw_normalize_path(char *p)
{
    bool absolute = p[0] == '/';
    char *out = p;
    for (char *in = p; *in;) {
        if (*in == '/') {
            in++;
            continue;
        }
        char *seg = in;
        while (*in && *in != '/')
            in++;
        size_t len = (size_t)(in - seg);
        if (len == 1 && seg[0] == '.')
            continue;
        if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (out > p && *--out != '/')
                ;
            continue;
        }
        if (out > p || absolute)
            *out++ = '/';
        memmove(out, seg, len);
        out += len;
    }
    if (out == p && absolute)
        *out++ = '/';
    *out = '\0';
}

/* f (from libdw, or a header entry joined with its directory) made absolute with the
 * compilation directory of die's CU, and normalized. */
static char *absolute_path(struct worker *w, Dwarf_Die *die, const char *dir, const char *f)
{
    char *abs = dir && f[0] != '/' ? arena_printf(w->a, "%s/%s", dir, f) : arena_strdup(w->a, f);
    Dwarf_Die cu;
    const char *comp_dir = abs[0] != '/' && dwarf_diecu(die, &cu, NULL, NULL)
                               ? dw_attr_string(&cu, DW_AT_comp_dir)
                               : NULL;
    if (comp_dir)
        abs = arena_printf(w->a, "%s/%s", comp_dir, abs);
    dw_normalize_path(abs);
    return abs;
}

static const char *decl_file(struct worker *w, Dwarf_Die *die)
{
    Dwarf_Attribute at;
    Dwarf_Word idx;
    if (dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_file, &at), &idx) != 0)
        return NULL;
    struct file_table *t = file_table(w, at.cu);
    if (!t->unreadable) {
        if (idx >= t->n || !t->e[idx].name)
            return NULL;
        struct file_entry *e = &t->e[idx];
        return e->abs ? e->abs : (e->abs = absolute_path(w, die, e->dir, e->name));
    }
    const char *f = dwarf_decl_file(die);
    if (!f)
        return NULL;
    const char *abs = u64map_get(&w->files, (uint64_t)(uintptr_t)f);
    if (!abs && (abs = absolute_path(w, die, NULL, f)) &&
        u64map_put(&w->files, (uint64_t)(uintptr_t)f, (void *)abs) != 0)
        abort();
    return abs;
}

/* ---- pass 2: reading the kept DIEs ---- */

static const char *linkage_name(Dwarf_Die *die)
{
    const char *s = dw_attr_string(die, DW_AT_linkage_name);
    return s ? s : dw_attr_string(die, DW_AT_MIPS_linkage_name);
}

/* Parameters and the variadic flag, from die's children or, when it lists none, from
 * the first DIE of its abstract_origin/specification chain that does. */
static void read_params(struct worker *w, Dwarf_Die *die, struct dw_function *f)
{
    Dwarf_Die owner = *die, c;
    size_t n = 0;
    for (int hops = 0; hops < 8; hops++) {
        if (dwarf_child(&owner, &c) == 0)
            do {
                int tag = dwarf_tag(&c);
                if (tag == DW_TAG_unspecified_parameters)
                    f->variadic = true;
                if (tag != DW_TAG_formal_parameter)
                    continue;
                if (n == w->cap_params) {
                    w->cap_params = w->cap_params ? 2 * w->cap_params : 16;
                    w->params = realloc(w->params, w->cap_params * sizeof *w->params);
                    if (!w->params)
                        abort();
                }
                w->params[n++] = c;
            } while (dwarf_siblingof(&c, &c) == 0);
        Dwarf_Attribute at;
        if (n || f->variadic ||
            !(dwarf_attr(&owner, DW_AT_abstract_origin, &at) ||
              dwarf_attr(&owner, DW_AT_specification, &at)) ||
            !dwarf_formref_die(&at, &owner))
            break;
    }
    struct dw_param *ps = n ? arena_alloc(w->a, n * sizeof *ps) : NULL;
    for (size_t i = 0; i < n; i++) {
        Dwarf_Die *p = &w->params[i];
        const char *name = dw_attr_string(p, DW_AT_name);
        Dwarf_Attribute at;
        bool artificial = false;
        dwarf_formflag(dwarf_attr_integrate(p, DW_AT_artificial, &at), &artificial);
        ps[i].name = name ? arena_strdup(w->a, name) : artificial && i == 0 ? "this" : NULL;
        ps[i].type = type_conv_of(w->tc, p);
        if (!ps[i].type)
            ps[i].type = type_conv_unknown(w->tc);
    }
    f->params = ps;
    f->n_params = n;
}

/* Rust v0 writes an inherent method as "<crate::Type>::method" where the legacy scheme
 * writes "crate::Type::method": unwrap the brackets (not "<A as Trait>::m") in place so
 * one pattern matches both. */
void dw_unwrap_inherent_impl(char *name)
{
    if (name[0] != '<')
        return;
    int depth = 0;
    char *p = name;
    for (; *p; p++) {
        depth += (*p == '<') - (*p == '>');
        if (depth == 1 && strncmp(p, " as ", 4) == 0)
            return;
        if (depth == 0)
            break;
    }
    if (*p != '>' || strncmp(p + 1, "::", 2) != 0)
        return;
    memmove(p, p + 1, strlen(p + 1) + 1);
    memmove(name, name + 1, strlen(name + 1) + 1);
}

/* The name the index shows for a mangled symbol: demangled without parameters. */
static char *plain_name(const char *link)
{
    char *plain = dw_demangle(link, false);
    if (plain && link[1] == 'R')
        dw_unwrap_inherent_impl(plain);
    return plain;
}

/* Names f after the mangled symbol raw: name, demangled form, linkage name. Also
 * used for a DWARF function without a linkage name when its ELF symbol is mangled:
 * the symbol has the scopes DWARF lacks ("main::{lambda(int)#1}::operator()").
 * false when raw is not mangled. */
static bool adopt_symbol_name(struct arena *a, struct dw_function *f, const char *raw)
{
    char *plain, *full;
    if (!dw_demangle_both(raw, &plain, &full))
        return false;
    if (raw[1] == 'R')
        dw_unwrap_inherent_impl(plain);
    f->name = arena_strdup(a, plain);
    f->demangled = full ? arena_strdup(a, full) : f->name;
    f->linkage_name = arena_strdup(a, raw);
    free(plain);
    free(full);
    return true;
}

/* Names p->f: from the demangled linkage name, else scopes + DW_AT_name. */
static void resolve_name(struct arena *a, const struct pending *p)
{
    struct dw_function *f = p->f;
    if (p->link && adopt_symbol_name(a, f, p->link))
        return;
    const char *name = p->dwname ? p->dwname : p->link ? p->link : "(anonymous)";
    f->name = p->prefix ? arena_printf(a, "%s::%s", p->prefix, name) : arena_strdup(a, name);
    f->demangled = f->name;
    f->linkage_name = p->link && strcmp(p->link, name) != 0 ? arena_strdup(a, p->link) : NULL;
}

static struct pending defer_name(Dwarf_Die *die, const char *prefix, struct dw_function *f)
{
    return (struct pending){f, linkage_name(die), dw_attr_string(die, DW_AT_name), prefix};
}

struct name_job {
    const struct pending *p;
    size_t n;
    struct arena arena;
};

static void *name_worker(void *arg)
{
    struct name_job *j = arg;
    for (size_t i = 0; i < j->n; i++)
        resolve_name(&j->arena, &j->p[i]);
    return NULL;
}

/* Demangling is most of the cost of naming: share it with a second thread (these
 * machines have two cores) when there is enough of it. Only libiberty runs there. */
static void resolve_names(struct arena *a, const struct pending *pend, size_t n)
{
    size_t half = n >= 4096 ? n / 2 : 0;
    struct name_job job = {pend + half, n - half, {0}};
    pthread_t t;
    bool threaded = half && pthread_create(&t, NULL, name_worker, &job) == 0;
    for (size_t i = 0; i < (threaded ? half : n); i++)
        resolve_name(a, &pend[i]);
    if (threaded) {
        pthread_join(t, NULL);
        arena_splice(a, &job.arena);
    }
}

static uint64_t function_end(Dwarf_Die *die, uint64_t entry)
{
    Dwarf_Addr hi, base, start, end;
    if (dwarf_highpc(die, &hi) == 0)
        return hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0)
        if (start <= entry && entry < end)
            return end;
    return entry;
}

/* Everything but the name, which *p leaves to resolve_names. */
static void read_function(struct worker *w, const struct cand *c, struct dw_function *f,
                          struct pending *p)
{
    Dwarf_Die die = c->die;
    f->entry = c->entry;
    f->has_dwarf = true;
    f->end = function_end(&die, c->entry);
    *p = defer_name(&die, c->prefix, f);
    f->decl_file = decl_file(w, &die);
    int line;
    f->decl_line = dwarf_decl_line(&die, &line) == 0 ? line : 0;
    if (!f->decl_file && c->has_owner) { /* compiler-made, e.g. a lambda's operator() */
        Dwarf_Die owner = c->owner;
        f->decl_file = decl_file(w, &owner);
        f->decl_line = dwarf_decl_line(&owner, &line) == 0 ? line : 0;
    }
    f->return_type = type_conv_of(w->tc, &die);
    read_params(w, &die, f);
}

static void *read_worker(void *arg)
{
    struct worker *w = arg;
    for (size_t i = 0; i < w->n_kept; i++)
        if (w->kept[i].worker == w->id)
            read_function(w, &w->kept[i], &w->fs[i], &w->pend[i]);
    return NULL;
}

/* Runs fn on both workers, the second in a thread when there are two. */
static void run_workers(struct worker *ws, int n, void *(*fn)(void *))
{
    pthread_t t;
    bool threaded = n > 1 && pthread_create(&t, NULL, fn, &ws[1]) == 0;
    fn(&ws[0]);
    if (threaded)
        pthread_join(t, NULL);
    else if (n > 1)
        fn(&ws[1]);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Names of the inlined-only roots that no function in fs[0..n) has, sorted, unique.
 * Roots with an out-of-line copy (a concrete DIE whose abstract_origin is the root)
 * are dropped before the costly naming. */
static void inlined_only(struct arena *a, struct worker *ws, int nw, const struct dw_function *fs,
                         size_t n, struct dw_index *ix)
{
    size_t n_inl = 0;
    for (int k = 0; k < nw; k++)
        n_inl += ws[k].n_inl;
    struct dw_function *tmp = calloc(n_inl ? n_inl : 1, sizeof *tmp);
    struct pending *pend = malloc((n_inl ? n_inl : 1) * sizeof *pend);
    if (!tmp || !pend)
        abort();
    size_t m = 0;
    for (int k = 0; k < nw; k++)
        for (size_t i = 0; i < ws[k].n_inl; i++) {
            uint64_t key = ws[k].inl[i].off + 1;
            bool has_code = false;
            for (int o = 0; o < nw && !has_code; o++)
                has_code = u64map_get(&ws[o].origins, key) != NULL;
            if (!has_code) {
                pend[m] = defer_name(&ws[k].inl[i].die, ws[k].inl[i].prefix, &tmp[m]);
                m++;
            }
        }
    resolve_names(a, pend, m);
    free(pend);
    struct strmap names = {0}; /* inlined names -> 1: has code, or already listed */
    bool lens[4096] = {0};     /* lengths of those names: a cheap first test */
    for (size_t i = 0; i < m; i++) {
        size_t len = strlen(tmp[i].name);
        uint64_t h = strmap_hash(tmp[i].name, len);
        if (!strmap_ref(&names, tmp[i].name, len, h) &&
            strmap_put(&names, tmp[i].name, len, h, 0) != 0)
            abort();
        lens[len & 4095] = true;
    }
    for (size_t i = 0; i < n && m; i++) {
        size_t len = strlen(fs[i].name);
        if (!lens[len & 4095])
            continue;
        int64_t *v = strmap_ref(&names, fs[i].name, len, strmap_hash(fs[i].name, len));
        if (v)
            *v = 1;
    }
    const char **out = arena_alloc(a, (m ? m : 1) * sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        size_t len = strlen(tmp[i].name);
        int64_t *v = strmap_ref(&names, tmp[i].name, len, strmap_hash(tmp[i].name, len));
        if (!*v)
            out[k++] = tmp[i].name;
        *v = 1;
    }
    strmap_clear(&names);
    free(tmp);
    if (k > 1)
        qsort(out, k, sizeof *out, cmp_str);
    ix->inlined_only = out;
    ix->n_inlined_only = k;
}

/* The contents of the section called name, or NULL. */
static const unsigned char *section(Elf *elf, const char *name, size_t *n)
{
    size_t shstrndx;
    *n = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *sn = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (!sn || strcmp(sn, name) != 0 || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL); /* libdw has decompressed it in place */
        if (!d || !d->d_buf)
            return NULL;
        *n = d->d_size;
        return d->d_buf;
    }
    return NULL;
}

/* Sets up a worker on elf (which it owns when owns_elf) for CUs [lo, hi). */
static bool worker_init(struct worker *w, int id, Elf *elf, Dwarf *dw, struct arena *a,
                        Dwarf_Off lo, Dwarf_Off hi)
{
    w->id = id;
    w->elf = elf;
    w->dw = dw ? dw : dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    if (!w->dw)
        return false;
    w->a = a ? a : &w->own;
    w->tc = type_conv_new(w->a);
    w->cu_lo = lo;
    w->cu_hi = hi;
    const char *ident = elf_getident(elf, NULL);
    if (ident && ident[EI_DATA] == ELFDATA2LSB) {
        w->sec.line = section(elf, ".debug_line", &w->sec.n_line);
        w->sec.line_str = section(elf, ".debug_line_str", &w->sec.n_line_str);
        w->sec.str = section(elf, ".debug_str", &w->sec.n_str);
    }
    return true;
}

static void worker_free(struct worker *w, bool own_handles)
{
    free(w->c);
    free(w->inl);
    u64map_free(&w->origins);
    u64map_free(&w->tables);
    u64map_free(&w->files);
    free(w->params);
    type_conv_free(w->tc);
    if (own_handles) {
        dwarf_end(w->dw);
        elf_end(w->elf);
    }
}

/* Below this much .debug_info a second thread costs more than it saves. */
#define SPLIT_MIN (4u << 20)

/* The CU offset that splits dw's .debug_info closest to its middle, or 0 when the
 * file is too small or has a single CU. */
static Dwarf_Off split_point(Dwarf *dw)
{
    Dwarf_Off off = 0, next, total = 0;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0)
        off = total = next;
    if (total < SPLIT_MIN)
        return 0;
    Dwarf_Off best = 0;
    for (off = 0; dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0; off = next) {
        Dwarf_Off d = next > total / 2 ? next - total / 2 : total / 2 - next;
        Dwarf_Off bd = best > total / 2 ? best - total / 2 : total / 2 - best;
        if (next < total && (best == 0 || d < bd))
            best = next;
    }
    return best;
}

/* Indexes the DWARF of dw (on elf, open on fd): fills fs with one function per
 * address (sorted) and ix->inlined_only; *n_cus counts the compile units. */
static size_t index_dwarf(struct arena *a, Elf *elf, int fd, Dwarf *dw, struct dw_index *ix,
                          struct dw_function **fs_out, size_t *n_cus)
{
    struct worker ws[2] = {{0}};
    Dwarf_Off mid = split_point(dw);
    int nw = 1;
    worker_init(&ws[0], 0, elf, dw, a, 0, mid ? mid : (Dwarf_Off)-1);
    if (mid) {
        Elf *e2 = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (e2 && worker_init(&ws[1], 1, e2, NULL, NULL, mid, (Dwarf_Off)-1))
            nw = 2;
        else if (e2)
            elf_end(e2);
        if (nw == 1)
            ws[0].cu_hi = (Dwarf_Off)-1;
    }
    run_workers(ws, nw, walk_worker);

    /* merge the sorted candidates, one per address: a C++ binary has many DIEs for one
     * address (discarded template copies point at the kept one); the lowest offset wins */
    size_t total = ws[0].n + (nw > 1 ? ws[1].n : 0), kept = 0;
    struct cand *c = malloc((total ? total : 1) * sizeof *c);
    if (!c)
        abort();
    for (size_t i = 0, j = 0; i < ws[0].n || (nw > 1 && j < ws[1].n);) {
        bool left = nw == 1 || j == ws[1].n ||
                    (i < ws[0].n && cmp_cand(&ws[0].c[i], &ws[1].c[j]) < 0);
        const struct cand *x = left ? &ws[0].c[i++] : &ws[1].c[j++];
        if (kept == 0 || c[kept - 1].entry != x->entry)
            c[kept++] = *x;
    }
    struct dw_function *fs = kept ? arena_alloc(a, kept * sizeof *fs) : NULL;
    struct pending *pend = malloc((kept ? kept : 1) * sizeof *pend);
    if (!pend)
        abort();
    for (int k = 0; k < nw; k++) {
        ws[k].kept = c;
        ws[k].n_kept = kept;
        ws[k].fs = fs;
        ws[k].pend = pend;
    }
    run_workers(ws, nw, read_worker);
    resolve_names(a, pend, kept);
    inlined_only(a, ws, nw, fs, kept, ix);

    *n_cus = 0;
    for (int k = 0; k < nw; k++) {
        *n_cus += ws[k].n_cus;
        arena_splice(a, &ws[k].own);
        worker_free(&ws[k], k > 0);
    }
    free(c);
    free(pend);
    *fs_out = fs;
    return kept;
}

/* ---- pass 3: ELF symbols ---- */

struct sym {
    uint64_t addr, size;
    const char *name; /* in the ELF string table */
    size_t len;
    int rank;         /* lower is preferred as the function's name */
    bool ifunc;       /* STT_GNU_IFUNC: addr is the resolver */
};

/* An R_X86_64_IRELATIVE: the GOT slot at slot receives what the resolver at
 * resolver returns (the dynamic linker calls it before the program starts). */
struct irelative {
    uint64_t resolver, slot;
};

struct syms {
    struct sym *v;
    size_t n, cap;
    struct irelative *irel; /* sorted by resolver */
    size_t n_irel, cap_irel;
};

static int cmp_irelative(const void *x, const void *y)
{
    const struct irelative *a = x, *b = y;
    return a->resolver < b->resolver ? -1 : a->resolver > b->resolver;
}

/* The IRELATIVE relocations of elf (its .rela.plt and .rela.dyn) into out->irel. */
static void collect_irelative(Elf *elf, struct syms *out)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t count = data ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < count; i++) {
            GElf_Rela r;
            if (!gelf_getrela(data, (int)i, &r) ||
                GELF_R_TYPE(r.r_info) != R_X86_64_IRELATIVE)
                continue;
            if (out->n_irel == out->cap_irel) {
                out->cap_irel = out->cap_irel ? 2 * out->cap_irel : 64;
                out->irel = realloc(out->irel, out->cap_irel * sizeof *out->irel);
                if (!out->irel)
                    abort();
            }
            out->irel[out->n_irel++] = (struct irelative){(uint64_t)r.r_addend, r.r_offset};
        }
    }
    if (out->n_irel > 1)
        qsort(out->irel, out->n_irel, sizeof *out->irel, cmp_irelative);
}

/* The GOT slot the resolver at addr fills, or 0. */
static uint64_t irelative_slot(const struct syms *ss, uint64_t addr)
{
    struct irelative key = {addr, 0};
    const struct irelative *r = ss->n_irel ? bsearch(&key, ss->irel, ss->n_irel,
                                                     sizeof key, cmp_irelative) : NULL;
    return r ? r->slot : 0;
}

static void collect_syms(Elf *elf, struct syms *out)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
            !sh.sh_entsize)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        /* the string table read directly: elf_strptr validates every string first */
        Elf_Data *strs = elf_getdata(elf_getscn(elf, sh.sh_link), NULL);
        size_t count = data ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym))
                continue;
            int type = GELF_ST_TYPE(sym.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_value || !sym.st_size ||
                sym.st_shndx == SHN_UNDEF)
                continue;
            const char *name = strs && strs->d_buf ? str_at(strs->d_buf, strs->d_size, sym.st_name)
                                                   : elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!name || !*name)
                continue;
            int bind = GELF_ST_BIND(sym.st_info);
            int rank = (name[0] == '_') * 4 + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
            if (out->n == out->cap) {
                out->cap = out->cap ? 2 * out->cap : 1024;
                out->v = realloc(out->v, out->cap * sizeof *out->v);
                if (!out->v)
                    abort();
            }
            out->v[out->n++] = (struct sym){sym.st_value, sym.st_size, name, strlen(name), rank,
                                            type == STT_GNU_IFUNC};
        }
    }
}

static int cmp_sym(const void *x, const void *y)
{
    const struct sym *a = x, *b = y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return strcmp(a->name, b->name);
}

static const struct dw_function *find_entry(const struct dw_function *fs, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fs[mid].entry < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && fs[lo].entry == addr ? &fs[lo] : NULL;
}

/* The symbol's name as the index shows it: demangled without parameters, or raw. */
static const char *sym_name(struct arena *a, const char *raw)
{
    char *d = plain_name(raw);
    if (!d)
        return arena_strdup(a, raw);
    const char *s = arena_strdup(a, d);
    free(d);
    return s;
}

/* Turns the sorted symbols into aliases of the DWARF functions fs[0..n) and into
 * symbol-only functions (returned, sorted) at the other addresses. */
static size_t index_symbols(struct arena *a, struct syms *ss, struct dw_function *fs, size_t n,
                            struct dw_function **out)
{
    if (ss->n > 1) /* a stripped file has no symbols: v is NULL */
        qsort(ss->v, ss->n, sizeof *ss->v, cmp_sym);
    size_t groups = 0;
    for (size_t i = 0; i < ss->n; i++)
        groups += i == 0 || ss->v[i].addr != ss->v[i - 1].addr;
    struct dw_function *so = groups ? arena_alloc(a, groups * sizeof *so) : NULL;
    size_t k = 0;
    const char *names[64];
    for (size_t i = 0, j; i < ss->n; i = j) {
        for (j = i + 1; j < ss->n && ss->v[j].addr == ss->v[i].addr; j++)
            ;
        struct dw_function *f = (struct dw_function *)find_entry(fs, n, ss->v[i].addr);
        size_t nn = 0;
        if (f && !f->linkage_name) /* e.g. a lambda, a static C++ function */
            for (size_t s = i; s < j; s++)
                if (adopt_symbol_name(a, f, ss->v[s].name))
                    break;
        if (!f) {
            f = &so[k++];
            const struct sym *best = &ss->v[i];
            f->entry = best->addr;
            f->end = best->addr + best->size;
            if (!adopt_symbol_name(a, f, best->name))
                f->name = f->demangled = arena_strdup(a, best->name);
        }
        for (size_t s = i; s < j && !f->ifunc_slot; s++)
            if (ss->v[s].ifunc)
                f->ifunc_slot = irelative_slot(ss, f->entry);
        for (size_t s = i; s < j && nn < 64; s++) {
            const char *raw = ss->v[s].name;
            /* a mangled alias of a mangled function is a constructor/destructor clone
             * (C1/C2): it demangles to the same name */
            if ((f->linkage_name && (strcmp(raw, f->linkage_name) == 0 ||
                                     (raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')))) ||
                strcmp(raw, f->name) == 0)
                continue;
            const char *name = sym_name(a, raw);
            bool dup = strcmp(name, f->name) == 0;
            for (size_t m = 0; m < nn && !dup; m++)
                dup = strcmp(names[m], name) == 0;
            if (!dup)
                names[nn++] = name;
        }
        if (nn) {
            const char **al = arena_alloc(a, nn * sizeof *al);
            memcpy(al, names, nn * sizeof *al);
            f->aliases = al;
            f->n_aliases = nn;
        }
    }
    *out = so;
    return k;
}

/* ---- the build ---- */

struct dw_index *dw_index_build(const char *path, struct strobe_error *e)
{
    int fd, dfd = -1;
    Elf *elf, *delf = NULL;
    if (open_elf(path, &fd, &elf, e) != 0)
        return NULL;
    struct arena a = {0};
    struct index_impl *impl = arena_alloc(&a, sizeof *impl);
    struct dw_index *ix = &impl->pub;
    ix->path = arena_strdup(&a, path);
    build_id_hex(elf, impl->pub.build_id);
    GElf_Ehdr eh;
    ix->is_pie = gelf_getehdr(elf, &eh) && eh.e_type == ET_DYN;

    Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
    if (!dw && ix->build_id[0]) {
        char dpath[128];
        snprintf(dpath, sizeof dpath, "/usr/lib/debug/.build-id/%.2s/%s.debug", ix->build_id,
                 ix->build_id + 2);
        if (access(dpath, R_OK) == 0 && open_elf(dpath, &dfd, &delf, NULL) == 0)
            dw = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
    }
    struct dw_function *fs = NULL, *so = NULL;
    size_t n = 0, n_cus = 0;
    if (dw)
        n = index_dwarf(&a, delf ? delf : elf, delf ? dfd : fd, dw, ix, &fs, &n_cus);
    ix->has_dwarf = n_cus > 0;
    struct syms ss = {0};
    collect_syms(elf, &ss);
    if (delf)
        collect_syms(delf, &ss);
    collect_irelative(elf, &ss);
    size_t n_so = index_symbols(&a, &ss, fs, n, &so);

    struct dw_function *all = fs; /* usually DWARF covers every symbol: nothing to merge */
    if (n_so) {
        all = arena_alloc(&a, (n + n_so) * sizeof *all);
        for (size_t i = 0, j = 0, k = 0; k < n + n_so; k++)
            all[k] = j == n_so || (i < n && fs[i].entry < so[j].entry) ? fs[i++] : so[j++];
    }
    ix->functions = all;
    ix->n_functions = n + n_so;

    free(ss.v);
    free(ss.irel);
    if (dw)
        dwarf_end(dw);
    if (delf) {
        elf_end(delf);
        close(dfd);
    }
    elf_end(elf);
    close(fd);
    impl->arena = a;
    return ix;
}

/* ---- queries ---- */

const struct dw_function *dw_function_at(const struct dw_index *ix, uint64_t addr)
{
    if (!ix)
        return NULL;
    size_t lo = 0, hi = ix->n_functions; /* first function with entry > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->functions[mid].entry <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct dw_function *f = &ix->functions[lo - 1];
    return addr < f->end || addr == f->entry ? f : NULL;
}

bool dw_is_inlined_only(const struct dw_index *ix, const char *qualified_name)
{
    return ix && qualified_name && ix->n_inlined_only &&
           bsearch(&qualified_name, ix->inlined_only, ix->n_inlined_only,
                   sizeof *ix->inlined_only, cmp_str) != NULL;
}
