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
 *    names joined with "::" plus DW_AT_name; declaration file and line; parameters and
 *    return type through types.c.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- arena ---- */

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

#define ARENA_CHUNK (256 * 1024)

void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
        struct arena_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc)
            abort();
        nc->used = 0;
        nc->cap = cap;
        if (c && cap != ARENA_CHUNK) { /* a big block: keep bumping in the current chunk */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = arena_alloc(a, n > 0 ? (size_t)n + 1 : 1);
    va_start(ap, fmt);
    vsnprintf(d, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    return d;
}

/* Moves every chunk of from into a (the arena of a worker thread into the index's). */
static void arena_splice(struct arena *a, struct arena *from)
{
    struct arena_chunk *tail = from->head;
    if (!tail)
        return;
    while (tail->next)
        tail = tail->next;
    if (a->head) { /* behind a's head, which stays the chunk being bumped */
        tail->next = a->head->next;
        a->head->next = from->head;
    } else {
        a->head = from->head;
    }
    from->head = NULL;
}

void arena_free(struct arena *a)
{
    for (struct arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
}

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

/* ---- small hash maps: pointer -> pointer, and a string set ---- */

struct pmap {
    struct pslot {
        const void *key;
        void *val;
    } *s;
    size_t cap, used;
};

static size_t hash_ptr(const void *p)
{
    return (size_t)(((uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 17);
}

static size_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

/* The slot of key (a string when strs), or the empty slot where it would go. */
static struct pslot *pmap_slot(struct pmap *m, const void *key, bool strs)
{
    size_t i = (strs ? hash_str(key) : hash_ptr(key)) & (m->cap - 1);
    while (m->s[i].key && (strs ? strcmp(m->s[i].key, key) != 0 : m->s[i].key != key))
        i = (i + 1) & (m->cap - 1);
    return &m->s[i];
}

static struct pslot *pmap_get(struct pmap *m, const void *key, bool strs)
{
    if (2 * (m->used + 1) > m->cap) {
        struct pmap old = *m;
        m->cap = m->cap ? 2 * m->cap : 256;
        m->s = calloc(m->cap, sizeof *m->s);
        if (!m->s)
            abort();
        for (size_t i = 0; i < old.cap; i++)
            if (old.s[i].key)
                *pmap_slot(m, old.s[i].key, strs) = old.s[i];
        free(old.s);
    }
    struct pslot *s = pmap_slot(m, key, strs);
    if (!s->key) {
        s->key = key;
        m->used++;
    }
    return s;
}

/* ---- ELF ---- */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

/* Opens path as ELF; on failure a sentence in err and -1. */
static int open_elf(const char *path, int *fd, Elf **elf, char *err, size_t errlen)
{
    pthread_once(&elf_once, elf_init);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
        snprintf(err, errlen, "%s is not an ELF file", path);
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

int dw_elf_build_id(const char *path, char out[41], char *err, size_t errlen)
{
    int fd;
    Elf *elf;
    if (open_elf(path, &fd, &elf, err, errlen) != 0)
        return -1;
    build_id_hex(elf, out);
    elf_end(elf);
    close(fd);
    return 0;
}

/* ---- pass 1: the DIE walk ---- */

struct cand {
    uint64_t entry;
    Dwarf_Off off;
    Dwarf_Die die;
    const char *prefix; /* enclosing scopes "a::b", NULL at top level */
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
};

struct build {
    struct arena *a;
    Dwarf *dw;
    struct type_conv *tc;
    struct cand *c;
    size_t n, cap;
    struct cand *inl; /* inlined-only candidates (entry unused) */
    size_t n_inl, cap_inl;
    struct pmap files; /* libdw file name pointer -> absolute path in the arena */
    struct pmap origins; /* DIE offset + 1 of every abstract root with code somewhere */
    struct pending *pend;
    size_t n_pend;
    Dwarf_Die *params; /* scratch for read_params */
    size_t cap_params;
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

static const char *scope_prefix(struct build *b, struct scope *s)
{
    if (!s)
        return NULL;
    if (!s->full) {
        const char *up = scope_prefix(b, s->up);
        const char *name = s->name ? s->name : "(anonymous namespace)";
        s->full = up ? arena_printf(b->a, "%s::%s", up, name) : arena_strdup(b->a, name);
    }
    return s->full;
}

static void note_subprogram(struct build *b, Dwarf_Die *die, struct scope *sc)
{
    if (dwarf_hasattr(die, DW_AT_declaration))
        return;
    Dwarf_Addr entry;
    if (dwarf_entrypc(die, &entry) != 0) {
        Dwarf_Addr base, end;
        if (!dwarf_hasattr(die, DW_AT_ranges) || dwarf_ranges(die, 0, &base, &entry, &end) <= 0) {
            if (dwarf_hasattr(die, DW_AT_inline))
                push_cand(&b->inl, &b->n_inl, &b->cap_inl,
                          (struct cand){0, dwarf_dieoffset(die), *die, scope_prefix(b, sc)});
            return;
        }
    }
    if (entry == 0 || entry >= (Dwarf_Addr)-2) /* discarded copies: 0 or a tombstone */
        return;
    Dwarf_Attribute at;
    Dwarf_Die origin;
    if (dwarf_attr(die, DW_AT_abstract_origin, &at) && dwarf_formref_die(&at, &origin))
        pmap_get(&b->origins, (void *)(uintptr_t)(dwarf_dieoffset(&origin) + 1), false);
    push_cand(&b->c, &b->n, &b->cap,
              (struct cand){entry, dwarf_dieoffset(die), *die, scope_prefix(b, sc)});
}

static void walk(struct build *b, Dwarf_Die *parent, struct scope *sc, bool c_cu, int depth)
{
    Dwarf_Die die;
    if (depth > 64 || dwarf_child(parent, &die) != 0)
        return;
    do {
        int tag = dwarf_tag(&die);
        switch (tag) {
        case DW_TAG_subprogram:
            note_subprogram(b, &die, sc);
            /* a body may hold nested functions and local classes */
            __attribute__((fallthrough));
        case DW_TAG_lexical_block:
            walk(b, &die, sc, c_cu, depth + 1);
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
            struct scope inner = {sc, dwarf_diename(&die), NULL};
            if (!inner.name && tag != DW_TAG_namespace)
                inner.name = "(anonymous)";
            walk(b, &die, &inner, c_cu, depth + 1);
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

/* ---- pass 2: reading the kept DIEs ---- */

static const char *attr_string(Dwarf_Die *die, int name)
{
    Dwarf_Attribute at;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &at));
}

static const char *linkage_name(Dwarf_Die *die)
{
    const char *s = attr_string(die, DW_AT_linkage_name);
    return s ? s : attr_string(die, DW_AT_MIPS_linkage_name);
}

/* Lexically removes "." and "dir/.." segments from a path, in place. */
static void normalize_path(char *p)
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

static const char *decl_file(struct build *b, Dwarf_Die *die)
{
    const char *f = dwarf_decl_file(die);
    if (!f)
        return NULL;
    struct pslot *s = pmap_get(&b->files, f, false);
    if (s->val)
        return s->val;
    char *abs;
    Dwarf_Die cu;
    const char *dir = f[0] != '/' && dwarf_diecu(die, &cu, NULL, NULL)
                          ? attr_string(&cu, DW_AT_comp_dir)
                          : NULL;
    abs = dir ? arena_printf(b->a, "%s/%s", dir, f) : arena_strdup(b->a, f);
    normalize_path(abs);
    return s->val = abs;
}

/* Parameters and the variadic flag, from die's children or, when it lists none, from
 * the first DIE of its abstract_origin/specification chain that does. */
static void read_params(struct build *b, Dwarf_Die *die, struct dw_function *f)
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
                if (n == b->cap_params) {
                    b->cap_params = b->cap_params ? 2 * b->cap_params : 16;
                    b->params = realloc(b->params, b->cap_params * sizeof *b->params);
                    if (!b->params)
                        abort();
                }
                b->params[n++] = c;
            } while (dwarf_siblingof(&c, &c) == 0);
        Dwarf_Attribute at;
        if (n || f->variadic ||
            !(dwarf_attr(&owner, DW_AT_abstract_origin, &at) ||
              dwarf_attr(&owner, DW_AT_specification, &at)) ||
            !dwarf_formref_die(&at, &owner))
            break;
    }
    struct dw_param *ps = n ? arena_alloc(b->a, n * sizeof *ps) : NULL;
    for (size_t i = 0; i < n; i++) {
        Dwarf_Die *p = &b->params[i];
        const char *name = attr_string(p, DW_AT_name);
        Dwarf_Attribute at;
        bool artificial = false;
        dwarf_formflag(dwarf_attr_integrate(p, DW_AT_artificial, &at), &artificial);
        ps[i].name = name ? arena_strdup(b->a, name) : artificial && i == 0 ? "this" : NULL;
        ps[i].type = type_conv_of(b->tc, p);
        if (!ps[i].type)
            ps[i].type = type_conv_unknown(b->tc);
    }
    f->params = ps;
    f->n_params = n;
}

/* Rust v0 writes an inherent method as "<crate::Type>::method" where the legacy scheme
 * writes "crate::Type::method": unwrap the brackets (not "<A as Trait>::m") in place so
 * one pattern matches both. */
static void unwrap_inherent_impl(char *name)
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
        unwrap_inherent_impl(plain);
    return plain;
}

/* Names f after the mangled symbol raw: name, demangled form, linkage name. Also
 * used for a DWARF function without a linkage name when its ELF symbol is mangled:
 * the symbol has the scopes DWARF lacks ("main::{lambda(int)#1}::operator()").
 * false when raw is not mangled. */
static bool adopt_symbol_name(struct arena *a, struct dw_function *f, const char *raw)
{
    char *plain = plain_name(raw);
    if (!plain)
        return false;
    char *full = dw_demangle(raw, true);
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

static void defer_name(struct build *b, Dwarf_Die *die, const char *prefix, struct dw_function *f)
{
    b->pend[b->n_pend++] = (struct pending){f, linkage_name(die), attr_string(die, DW_AT_name), prefix};
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
static void resolve_names(struct build *b)
{
    size_t half = b->n_pend >= 4096 ? b->n_pend / 2 : 0;
    struct name_job job = {b->pend + half, b->n_pend - half, {0}};
    pthread_t t;
    bool threaded = half && pthread_create(&t, NULL, name_worker, &job) == 0;
    for (size_t i = 0; i < (threaded ? half : b->n_pend); i++)
        resolve_name(b->a, &b->pend[i]);
    if (threaded) {
        pthread_join(t, NULL);
        arena_splice(b->a, &job.arena);
    }
    b->n_pend = 0;
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

/* Everything but the name, which defer_name leaves to resolve_names. */
static void read_function(struct build *b, struct cand *c, struct dw_function *f)
{
    Dwarf_Die die = c->die;
    f->entry = c->entry;
    f->has_dwarf = true;
    f->end = function_end(&die, c->entry);
    defer_name(b, &die, c->prefix, f);
    f->decl_file = decl_file(b, &die);
    int line;
    f->decl_line = dwarf_decl_line(&die, &line) == 0 ? line : 0;
    f->return_type = type_conv_of(b->tc, &die);
    read_params(b, &die, f);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Names of the inlined-only roots that no function in fs[0..n) has, sorted, unique.
 * Roots with an out-of-line copy in their own CU (a concrete DIE whose
 * abstract_origin is the root) are dropped before the costly naming. */
static void inlined_only(struct build *b, const struct dw_function *fs, size_t n,
                         struct dw_index *ix)
{
    struct dw_function *tmp = calloc(b->n_inl ? b->n_inl : 1, sizeof *tmp);
    b->pend = realloc(b->pend, (b->n_inl ? b->n_inl : 1) * sizeof *b->pend);
    if (!tmp || !b->pend)
        abort();
    for (size_t i = 0; i < b->n_inl; i++) {
        void *key = (void *)(uintptr_t)(b->inl[i].off + 1);
        if (!b->origins.cap || !pmap_slot(&b->origins, key, false)->key)
            defer_name(b, &b->inl[i].die, b->inl[i].prefix, &tmp[b->n_pend]);
    }
    size_t m = b->n_pend;
    resolve_names(b);
    struct pmap names = {0}; /* inlined names; val set: has code, or already listed */
    bool lens[4096] = {0};   /* lengths of those names: a cheap first test */
    for (size_t i = 0; i < m; i++) {
        pmap_get(&names, tmp[i].name, true);
        lens[strlen(tmp[i].name) & 4095] = true;
    }
    for (size_t i = 0; i < n && m; i++) {
        if (!lens[strlen(fs[i].name) & 4095])
            continue;
        struct pslot *s = pmap_slot(&names, fs[i].name, true);
        if (s->key)
            s->val = (void *)1;
    }
    const char **out = arena_alloc(b->a, (m ? m : 1) * sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        struct pslot *s = pmap_slot(&names, tmp[i].name, true);
        if (!s->val)
            out[k++] = tmp[i].name;
        s->val = (void *)1;
    }
    free(names.s);
    free(tmp);
    qsort(out, k, sizeof *out, cmp_str);
    ix->inlined_only = out;
    ix->n_inlined_only = k;
}

/* Walks every CU of dw; fills fs with one function per address (sorted). *n_cus
 * counts the compile units. */
static size_t index_dwarf(struct build *b, struct dw_function **fs_out, size_t *n_cus)
{
    Dwarf_Off off = 0, next;
    size_t hsize;
    *n_cus = 0;
    while (dwarf_nextcu(b->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(b->dw, off + hsize, &cu)) {
            ++*n_cus;
            int lang = dwarf_srclang(&cu);
            bool c_cu = lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
                        lang == DW_LANG_C11;
            walk(b, &cu, NULL, c_cu, 0);
        }
        off = next;
    }
    qsort(b->c, b->n, sizeof *b->c, cmp_cand);
    size_t kept = 0;
    for (size_t i = 0; i < b->n; i++)
        if (kept == 0 || b->c[kept - 1].entry != b->c[i].entry)
            b->c[kept++] = b->c[i];
    struct dw_function *fs = kept ? arena_alloc(b->a, kept * sizeof *fs) : NULL;
    b->pend = malloc((kept ? kept : 1) * sizeof *b->pend);
    if (!b->pend)
        abort();
    for (size_t i = 0; i < kept; i++)
        read_function(b, &b->c[i], &fs[i]);
    resolve_names(b);
    *fs_out = fs;
    return kept;
}

/* ---- pass 3: ELF symbols ---- */

struct sym {
    uint64_t addr, size;
    const char *name; /* in the ELF string table */
    size_t len;
    int rank;         /* lower is preferred as the function's name */
};

struct syms {
    struct sym *v;
    size_t n, cap;
};

static void collect_syms(Elf *elf, struct syms *out)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
            !sh.sh_entsize)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t count = data ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
                !sym.st_value || !sym.st_size || sym.st_shndx == SHN_UNDEF)
                continue;
            const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
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
            out->v[out->n++] = (struct sym){sym.st_value, sym.st_size, name, strlen(name), rank};
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
static const char *sym_name(struct build *b, const char *raw)
{
    char *d = plain_name(raw);
    if (!d)
        return arena_strdup(b->a, raw);
    const char *s = arena_strdup(b->a, d);
    free(d);
    return s;
}

/* Turns the sorted symbols into aliases of the DWARF functions fs[0..n) and into
 * symbol-only functions (returned, sorted) at the other addresses. */
static size_t index_symbols(struct build *b, struct syms *ss, struct dw_function *fs, size_t n,
                            struct dw_function **out)
{
    qsort(ss->v, ss->n, sizeof *ss->v, cmp_sym);
    size_t groups = 0;
    for (size_t i = 0; i < ss->n; i++)
        groups += i == 0 || ss->v[i].addr != ss->v[i - 1].addr;
    struct dw_function *so = groups ? arena_alloc(b->a, groups * sizeof *so) : NULL;
    size_t k = 0;
    const char *names[64];
    for (size_t i = 0, j; i < ss->n; i = j) {
        for (j = i + 1; j < ss->n && ss->v[j].addr == ss->v[i].addr; j++)
            ;
        struct dw_function *f = (struct dw_function *)find_entry(fs, n, ss->v[i].addr);
        size_t nn = 0;
        if (f && !f->linkage_name) /* e.g. a lambda, a static C++ function */
            for (size_t s = i; s < j; s++)
                if (adopt_symbol_name(b->a, f, ss->v[s].name))
                    break;
        if (!f) {
            f = &so[k++];
            const struct sym *best = &ss->v[i];
            f->entry = best->addr;
            f->end = best->addr + best->size;
            if (!adopt_symbol_name(b->a, f, best->name))
                f->name = f->demangled = arena_strdup(b->a, best->name);
        }
        for (size_t s = i; s < j && nn < 64; s++) {
            const char *raw = ss->v[s].name;
            /* a mangled alias of a mangled function is a constructor/destructor clone
             * (C1/C2): it demangles to the same name */
            if ((f->linkage_name && (strcmp(raw, f->linkage_name) == 0 ||
                                     (raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')))) ||
                strcmp(raw, f->name) == 0)
                continue;
            const char *name = sym_name(b, raw);
            bool dup = strcmp(name, f->name) == 0;
            for (size_t m = 0; m < nn && !dup; m++)
                dup = strcmp(names[m], name) == 0;
            if (!dup)
                names[nn++] = name;
        }
        if (nn) {
            const char **al = arena_alloc(b->a, nn * sizeof *al);
            memcpy(al, names, nn * sizeof *al);
            f->aliases = al;
            f->n_aliases = nn;
        }
    }
    *out = so;
    return k;
}

/* ---- the build ---- */

struct dw_index *dw_index_build(const char *path, char *err, size_t errlen)
{
    int fd, dfd = -1;
    Elf *elf, *delf = NULL;
    if (open_elf(path, &fd, &elf, err, errlen) != 0)
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
        char dpath[128], derr[64];
        snprintf(dpath, sizeof dpath, "/usr/lib/debug/.build-id/%.2s/%s.debug", ix->build_id,
                 ix->build_id + 2);
        if (access(dpath, R_OK) == 0 && open_elf(dpath, &dfd, &delf, derr, sizeof derr) == 0)
            dw = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
    }
    struct build b = {.a = &a, .dw = dw};
    struct dw_function *fs = NULL, *so = NULL;
    size_t n = 0, n_cus = 0;
    if (dw) {
        b.tc = type_conv_new(&a);
        n = index_dwarf(&b, &fs, &n_cus);
        inlined_only(&b, fs, n, ix);
    }
    ix->has_dwarf = n_cus > 0;
    struct syms ss = {0};
    collect_syms(elf, &ss);
    if (delf)
        collect_syms(delf, &ss);
    size_t n_so = index_symbols(&b, &ss, fs, n, &so);

    struct dw_function *all = n + n_so ? arena_alloc(&a, (n + n_so) * sizeof *all) : NULL;
    for (size_t i = 0, j = 0, k = 0; k < n + n_so; k++)
        all[k] = j == n_so || (i < n && fs[i].entry < so[j].entry) ? fs[i++] : so[j++];
    ix->functions = all;
    ix->n_functions = n + n_so;

    free(ss.v);
    free(b.c);
    free(b.inl);
    free(b.files.s);
    free(b.origins.s);
    free(b.pend);
    free(b.params);
    type_conv_free(b.tc);
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
