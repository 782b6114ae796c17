/*
 * globals.c - global and static variables by name (globals.h). It owns one name
 * table per ELF file, built by one walk of the file's DIEs on first use, with the
 * file kept open so that the types of the variables looked up are converted from
 * their DIEs (types.c) into the table's arena on demand.
 *
 * The walk enters namespaces (their names prefix what they hold), functions and
 * their lexical blocks (a variable there is taken only when it lives at a fixed
 * address: a static; the function's name prefixes it), and no type: a class
 * static's definition is a variable outside its class whose DW_AT_specification
 * points at the declaration inside, which gives the name and the scopes. A
 * declaration is taken only when it carries a constant (C++ constexpr members and
 * namespace constants are declarations with DW_AT_const_value).
 */
#include "dwarf/globals.h"

#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strdist.h"
#include "dwarf/dwarf_internal.h"

enum { MAX_DEPTH = 64 };

struct entry {
    const char *name;        /* qualified */
    const char *last;        /* its last component, inside name */
    Dwarf_Off die;
    enum dw_global_where where;
    uint64_t addr;
    const unsigned char *bytes;
    size_t len;
    uint64_t word;           /* a constant given as a number: bytes points here */
};

struct table {
    struct table *next;
    char *path;
    struct stat st;          /* identity: dev, ino, size, mtime */
    bool stale;              /* the file changed on disk since */
    int fd;
    Elf *elf;
    Dwarf *dw;               /* NULL: no DWARF, no entries */
    struct arena arena;      /* names and converted types */
    struct type_conv *tc;
    struct entry *e;
    size_t n, cap;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table *tables;

/* ---- building a table ---- */

static void add(struct table *t, const struct entry *e)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->e = realloc(t->e, t->cap * sizeof *t->e);
        if (!t->e)
            abort();
    }
    struct entry *slot = &t->e[t->n++];
    *slot = *e;
    const char *sep = strrchr(slot->name, ':');
    slot->last = sep ? sep + 1 : slot->name;
}

/* The address of a location that is one DW_OP_addr or DW_OP_addrx: a static. */
static bool static_address(Dwarf_Attribute *at, uint64_t *addr)
{
    Dwarf_Op *ops;
    size_t n;
    if (dwarf_getlocation(at, &ops, &n) != 0 || n != 1)
        return false;
    if (ops[0].atom == DW_OP_addr) {
        *addr = ops[0].number;
        return true;
    }
    Dwarf_Attribute res;
    Dwarf_Addr a;
    if ((ops[0].atom == DW_OP_addrx || ops[0].atom == DW_OP_GNU_addr_index) &&
        dwarf_getlocation_attr(at, &ops[0], &res) == 0 && dwarf_formaddr(&res, &a) == 0) {
        *addr = a;
        return true;
    }
    return false;
}

static bool is_thread_local(Dwarf_Attribute *at)
{
    Dwarf_Op *ops;
    size_t n;
    if (dwarf_getlocation(at, &ops, &n) != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (ops[i].atom == DW_OP_form_tls_address || ops[i].atom == DW_OP_GNU_push_tls_address)
            return true;
    return false;
}

/* Where variable die lives; false when it is not a global or static (a local of a
 * function: in_function). */
static bool classify(Dwarf_Die *die, bool in_function, struct entry *e)
{
    Dwarf_Attribute at;
    if (dwarf_attr_integrate(die, DW_AT_location, &at)) {
        if (static_address(&at, &e->addr))
            e->where = DWG_MEMORY;
        else if (is_thread_local(&at))
            e->where = DWG_THREAD_LOCAL;
        else if (in_function)
            return false;
        else
            e->where = DWG_UNSUPPORTED;
        return true;
    }
    if (in_function)
        return false;
    struct dw_frame_ctx none = {0};
    struct dw_loc l = {0};
    dw_locate(&none, die, &l); /* no DW_AT_location: only DW_AT_const_value is read */
    if (l.kind == DW_LOC_BYTES) {
        e->where = DWG_CONSTANT;
        e->bytes = l.bytes;
        e->len = l.len;
    } else if (l.kind == DW_LOC_VALUE) {
        e->where = DWG_CONSTANT;
        e->word = l.v;
        e->len = sizeof e->word;
    } else {
        e->where = DWG_OPTIMIZED_OUT;
    }
    return true;
}

static void add_variable(struct table *t, Dwarf_Die *die, const char *prefix, bool in_function)
{
    Dwarf_Attribute at;
    bool flag = false;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &at));
    dwarf_formflag(dwarf_attr_integrate(die, DW_AT_artificial, &at), &flag);
    if (!name || flag)
        return;
    flag = false;
    dwarf_formflag(dwarf_attr(die, DW_AT_declaration, &at), &flag);
    if (flag && !dwarf_hasattr(die, DW_AT_const_value))
        return; /* extern declarations: the definition is elsewhere */
    struct entry e = {.die = dwarf_dieoffset(die)};
    if (!classify(die, in_function, &e))
        return;
    Dwarf_Die spec;
    if (dwarf_attr(die, DW_AT_specification, &at) && dwarf_formref_die(&at, &spec)) {
        struct strbuf sb = {0};
        dw_append_scopes(&sb, &spec);
        sb_puts(&sb, name);
        e.name = arena_strdup(&t->arena, sb.oom ? name : sb.buf);
        sb_free(&sb);
    } else {
        e.name = arena_printf(&t->arena, "%s%s", prefix, name);
    }
    add(t, &e);
}

/* The variables under parent. fn is the function whose body this is (NULL outside
 * functions); its name, the prefix of its statics, is made on the first one. */
static void walk(struct table *t, Dwarf_Die *parent, const char *prefix, Dwarf_Die *fn,
                 int depth)
{
    Dwarf_Die d;
    const char *fn_prefix = NULL;
    if (depth > MAX_DEPTH || dwarf_child(parent, &d) != 0)
        return;
    do {
        switch (dwarf_tag(&d)) {
        case DW_TAG_variable:
            if (fn && !fn_prefix) {
                char *name = dw_die_function_name(fn);
                fn_prefix = arena_printf(&t->arena, "%s::", name);
                free(name);
            }
            add_variable(t, &d, fn ? fn_prefix : prefix, fn != NULL);
            break;
        case DW_TAG_namespace: {
            const char *name = dwarf_diename(&d);
            char *inner = arena_printf(&t->arena, "%s%s::", prefix,
                                       name ? name : "(anonymous namespace)");
            walk(t, &d, inner, NULL, depth + 1);
            break;
        }
        case DW_TAG_subprogram:
            if (!dwarf_hasattr(&d, DW_AT_declaration))
                walk(t, &d, prefix, &d, depth + 1);
            break;
        case DW_TAG_lexical_block:
            if (fn)
                walk(t, &d, prefix, fn, depth + 1);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&d, &d) == 0);
}

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

static struct table *table_build(const char *path, const struct stat *st)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, elf_init);
    struct table *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path)))
        abort();
    t->st = *st;
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    t->elf = t->fd >= 0 ? elf_begin(t->fd, ELF_C_READ_MMAP, NULL) : NULL;
    t->dw = t->elf ? dwarf_begin_elf(t->elf, DWARF_C_READ, NULL) : NULL;
    t->tc = type_conv_new(&t->arena);
    Dwarf_Off off = 0, next;
    size_t hsize;
    Dwarf_Die cu;
    while (t->dw && dwarf_nextcu(t->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        if (dwarf_offdie(t->dw, off + hsize, &cu))
            walk(t, &cu, "", NULL, 0);
        off = next;
    }
    return t;
}

static void table_free(struct table *t)
{
    type_conv_free(t->tc);
    arena_free(&t->arena);
    if (t->dw)
        dwarf_end(t->dw);
    elf_end(t->elf);
    if (t->fd >= 0)
        close(t->fd);
    free(t->e);
    free(t->path);
    free(t);
}

/* The current table of the file at path, built when missing or when the file
 * changed; NULL when it cannot be stat()ed. The lock is held. */
static struct table *table_get(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    for (struct table *t = tables; t; t = t->next) {
        if (t->stale || strcmp(t->path, path) != 0)
            continue;
        if (t->st.st_dev == st.st_dev && t->st.st_ino == st.st_ino &&
            t->st.st_size == st.st_size && t->st.st_mtim.tv_sec == st.st_mtim.tv_sec &&
            t->st.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
            return t;
        t->stale = true; /* its types may still be in use */
    }
    struct table *t = table_build(path, &st);
    t->next = tables;
    tables = t;
    return t;
}

void dw_globals_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    struct table *t = tables;
    tables = NULL;
    pthread_mutex_unlock(&lock);
    while (t) {
        struct table *next = t->next;
        table_free(t);
        t = next;
    }
}

/* ---- lookups ---- */

/* Whether qualified name full is name, or ends with "::" name. */
static bool name_matches(const char *full, const char *name, bool *exact)
{
    size_t lf = strlen(full), ln = strlen(name);
    *exact = lf == ln && memcmp(full, name, ln) == 0;
    return *exact || (lf > ln + 2 && memcmp(full + lf - ln, name, ln) == 0 &&
                      full[lf - ln - 1] == ':' && full[lf - ln - 2] == ':');
}

/* Of two entries with the same name, whether a is the better answer. */
static bool better(const struct entry *a, const struct entry *b)
{
    return a->where < b->where; /* memory, then constant, then the unavailable kinds */
}

/* *out from entry e of t, its type converted now; false when its DIE is gone. The
 * lock is held. */
static bool describe(struct table *t, const struct entry *e, struct dw_global *out)
{
    Dwarf_Die die;
    if (!t->dw || !dwarf_offdie(t->dw, e->die, &die))
        return false;
    const struct dw_type *type = type_conv_of(t->tc, &die);
    int line = 0;
    bool external = false;
    Dwarf_Attribute at;
    dwarf_decl_line(&die, &line);
    dwarf_formflag(dwarf_attr_integrate(&die, DW_AT_external, &at), &external);
    const char *symbol = dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_linkage_name,
                                                               &at));
    *out = (struct dw_global){
        .name = e->name, .where = e->where, .addr = e->addr,
        .bytes = e->bytes ? e->bytes : (const unsigned char *)&e->word,
        .len = e->len, .type = type ? type : type_conv_unknown(t->tc),
        .decl_file = dwarf_decl_file(&die), .decl_line = line,
        .symbol = !external ? NULL : symbol ? symbol : dwarf_diename(&die),
    };
    return true;
}

enum dw_global_match dw_global_find(const char *path, const char *name, struct dw_global *out)
{
    enum dw_global_match m;
    pthread_mutex_lock(&lock);
    struct table *t = table_get(path);
    const struct entry *exact = NULL, *partial = NULL;
    bool several = false; /* partial matches of different names */
    for (size_t i = 0; t && i < t->n; i++) {
        const struct entry *e = &t->e[i];
        bool is_exact;
        if (!name_matches(e->name, name, &is_exact))
            continue;
        if (is_exact) {
            if (!exact || better(e, exact))
                exact = e;
        } else if (!partial) {
            partial = e;
        } else if (strcmp(e->name, partial->name) != 0) {
            several = true;
        } else if (better(e, partial)) {
            partial = e;
        }
    }
    const struct entry *best = exact ? exact : partial;
    m = !best ? DWG_NONE : !exact && several ? DWG_AMBIGUOUS : DWG_FOUND;
    if (!best || !describe(t, best, out))
        m = DWG_NONE;
    pthread_mutex_unlock(&lock);
    return m;
}

bool dw_global_at(const char *path, uint64_t addr, struct dw_global *out)
{
    pthread_mutex_lock(&lock);
    struct table *t = table_get(path);
    const struct entry *below = NULL; /* the variable starting nearest below addr */
    for (size_t i = 0; t && i < t->n; i++) {
        const struct entry *e = &t->e[i];
        if (e->where == DWG_MEMORY && e->addr <= addr && (!below || e->addr > below->addr))
            below = e;
    }
    bool found = below && describe(t, below, out) && addr - out->addr < out->type->size;
    pthread_mutex_unlock(&lock);
    return found;
}

/* Searches the symbol table section of type kind of t for the object name. */
static bool symbol_in(struct table *t, Elf64_Word kind, const char *name, uint64_t *addr,
                      uint64_t *size)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(t->elf, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == kind && sh.sh_entsize) {
            Elf_Data *d = elf_getdata(scn, NULL);
            size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
            GElf_Sym sym;
            for (size_t i = 1; i < n; i++) {
                const char *s = gelf_getsym(d, (int)i, &sym)
                                    ? elf_strptr(t->elf, sh.sh_link, sym.st_name) : NULL;
                if (s && GELF_ST_TYPE(sym.st_info) == STT_OBJECT &&
                    sym.st_shndx != SHN_UNDEF && strcmp(s, name) == 0) {
                    *addr = sym.st_value;
                    *size = sym.st_size;
                    return true;
                }
            }
        }
    return false;
}

bool dw_symbol_find(const char *path, const char *name, bool dynamic, uint64_t *addr,
                    uint64_t *size)
{
    pthread_mutex_lock(&lock);
    struct table *t = table_get(path);
    bool found = t && t->elf &&
                 ((!dynamic && symbol_in(t, SHT_SYMTAB, name, addr, size)) ||
                  symbol_in(t, SHT_DYNSYM, name, addr, size));
    pthread_mutex_unlock(&lock);
    return found;
}

static void near_add(struct dw_near *near, const char *name, int d)
{
    for (int i = 0; i < near->n; i++)
        if (strcmp(near->name[i], name) == 0)
            return;
    int at = near->n;
    while (at > 0 && near->distance[at - 1] > d)
        at--;
    if (at == DW_NEAR_MAX)
        return;
    int last = near->n < DW_NEAR_MAX ? near->n++ : DW_NEAR_MAX - 1;
    for (int i = last; i > at; i--) {
        near->distance[i] = near->distance[i - 1];
        memcpy(near->name[i], near->name[i - 1], sizeof near->name[i]);
    }
    near->distance[at] = d;
    snprintf(near->name[at], sizeof near->name[at], "%s", name);
}

void dw_global_near(const char *path, const char *name, struct dw_near *near)
{
    const char *sep = strrchr(name, ':');
    const char *last = sep ? sep + 1 : name;
    int cap = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
    pthread_mutex_lock(&lock);
    struct table *t = table_get(path);
    for (size_t i = 0; t && i < t->n; i++) {
        const struct entry *e = &t->e[i];
        bool exact;
        int d = name_matches(e->name, name, &exact) ? 0 : str_distance(e->name, name, cap);
        int dl = str_distance(e->last, last, cap);
        if (dl < d)
            d = dl;
        if (d <= cap)
            near_add(near, e->name, d);
    }
    pthread_mutex_unlock(&lock);
}
