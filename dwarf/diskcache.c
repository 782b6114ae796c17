/*
 * diskcache.c - the on-disk copy of function indexes, so that a second launch of the
 * same binary (a new daemon, or after dw_cache_clear) loads its index in one read
 * instead of walking its DWARF again, which takes seconds for a large C++ program or
 * libc with debug info.
 *
 * One file per indexed ELF file, named after what identifies its content: build-id
 * (or a hash of the absolute path when there is none), size, mtime in nanoseconds and
 * the format version, so a changed binary or a new format simply misses. The file is
 * little-endian: a header (magic, version, table sizes, payload size, FNV-1a 64 of the
 * payload) and then fixed-size records in tables that refer to each other by uint32
 * index and to a strings blob by uint32 offset (NONE for NULL). Types form a graph
 * with cycles (a struct holding a pointer to itself), hence indexes, not nesting.
 *
 * The directory belongs to the user but a file in it is still input: a load checks
 * the size of every table against the header and the file, the checksum, and every
 * index and string offset before building a single pointer, so a truncated, corrupt
 * or foreign file is rejected (and then rebuilt and overwritten), never trusted.
 * Writes go to a temporary file renamed into place, so readers never see half a file.
 * Every failure is silent: the cache is an optimization, the build is the truth.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf_internal.h"
#include "base/hash.h"
#include "base/lineio.h"
#include "base/strmap.h"
#include "base/u64map.h"

#define MAGIC "STRBIDX1"
#define VERSION 3u
#define SYSTEM_HEADER_BIT 0x10000u /* in a type's kind word */
#define NONE 0xFFFFFFFFu

/* Record sizes in the file (fields packed, little-endian). */
enum {
    HEADER_SIZE = 8 + 4 + 4 + 8 + 8 + 9 * 4,
    SCALARS_SIZE = 41 + 1 + 1,                  /* build_id, has_dwarf, is_pie */
    TYPE_SIZE = 4 + 4 + 8 + 4 + 8 + 4 + 4 + 4 + 4,
    MEMBER_SIZE = 4 + 8 + 4 + 4 + 4,
    ENUMERATOR_SIZE = 4 + 8,
    PARAM_SIZE = 4 + 4,
    FUNCTION_SIZE = 8 + 8 + 4 * 4 + 4 + 4 + 4 + 4 + 1 + 1 + 4 + 4 + 8,
    NAME_SIZE = 4,                              /* aliases and inlined_only */
};

/* The tables in payload order; counts[] in the header follows it (strings in bytes). */
enum { T_STRINGS, T_TYPES, T_MEMBERS, T_ENUMS, T_PARAMS, T_FUNCS, T_ALIASES, T_INLINED,
       T_COUNT };
static const size_t rec_size[T_COUNT] = {1, TYPE_SIZE, MEMBER_SIZE, ENUMERATOR_SIZE,
                                         PARAM_SIZE, FUNCTION_SIZE, NAME_SIZE, NAME_SIZE};

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char cache_dir[PATH_MAX]; /* "" = no disk cache */

void dw_cache_set_dir(const char *dir)
{
    char copy[PATH_MAX] = "";
    if (dir) {
        struct stat st;
        if (strlen(dir) >= sizeof copy - 64) /* room for a file name */
            return;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return;
        /* lstat: a symlink could point anywhere, someone else's dir could be read by them. */
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            return;
        strcpy(copy, dir);
    }
    pthread_mutex_lock(&dir_lock);
    memcpy(cache_dir, copy, sizeof copy);
    pthread_mutex_unlock(&dir_lock);
}

/* The cache file of path into out; false when there is no cache dir. */
static bool file_name(const char *path, const char *build_id, const struct stat *st,
                      char out[PATH_MAX], char dir[PATH_MAX])
{
    pthread_mutex_lock(&dir_lock);
    memcpy(dir, cache_dir, PATH_MAX);
    pthread_mutex_unlock(&dir_lock);
    if (!dir[0])
        return false;
    char key[41];
    if (build_id[0]) {
        snprintf(key, sizeof key, "%s", build_id);
    } else { /* the absolute path, so that "./a.out" and "/x/a.out" share the file */
        char *abs = realpath(path, NULL);
        const char *p = abs ? abs : path;
        snprintf(key, sizeof key, "p%016llx", (unsigned long long)fnv1a(p, strlen(p)));
        free(abs);
    }
    unsigned long long ns = (unsigned long long)st->st_mtim.tv_sec * 1000000000ull +
                            (unsigned long long)st->st_mtim.tv_nsec;
    int n = snprintf(out, PATH_MAX, "%s/%s-%llu-%llu.v%u.idx", dir, key,
                     (unsigned long long)st->st_size, ns, VERSION);
    return n > 0 && n < PATH_MAX;
}

/* ---- writing ---- */

struct buf {
    unsigned char *p;
    size_t n, cap;
    bool failed; /* out of memory: the file is not written */
};

static unsigned char *grow(struct buf *b, size_t n)
{
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap - b->n < n)
            cap *= 2;
        unsigned char *p = b->failed ? NULL : realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    unsigned char *at = b->p + b->n;
    b->n += n;
    return at;
}

static void put(struct buf *b, uint64_t v, size_t bytes)
{
    unsigned char *at = grow(b, bytes);
    for (size_t i = 0; at && i < bytes; i++)
        at[i] = (unsigned char)(v >> (8 * i));
}
static void put32(struct buf *b, uint32_t v) { put(b, v, 4); }
static void put64(struct buf *b, uint64_t v) { put(b, v, 8); }

/* Open-addressing map from a key (a type pointer, or a string by content) to a uint32. */
struct writer {
    struct buf t[T_COUNT];
    struct strmap strs;           /* string -> offset in the strings blob */
    struct u64map types;          /* dw_type address -> its index + 1 */
    const struct dw_type **order; /* types by index: the walk's work list */
    size_t n_order, cap_order;
    bool failed;
};

/* The strings-blob offset of s, each distinct string stored once. */
static uint32_t str_off(struct writer *w, const char *s)
{
    if (!s)
        return NONE;
    size_t n = strlen(s);
    uint64_t h = strmap_hash(s, n);
    int64_t off = strmap_get(&w->strs, s, n, h);
    if (off >= 0)
        return (uint32_t)off;
    if (w->t[T_STRINGS].n + n + 1 >= NONE ||
        strmap_put(&w->strs, s, n, h, (int64_t)w->t[T_STRINGS].n) != 0) {
        w->failed = true;
        return NONE;
    }
    uint32_t at_off = (uint32_t)w->t[T_STRINGS].n;
    unsigned char *at = grow(&w->t[T_STRINGS], n + 1);
    if (at)
        memcpy(at, s, n + 1);
    return at_off;
}

/* The index of type t, queued for writing the first time it is seen. */
static uint32_t type_idx(struct writer *w, const struct dw_type *t)
{
    if (!t)
        return NONE;
    uintptr_t known = (uintptr_t)u64map_get(&w->types, (uint64_t)(uintptr_t)t);
    if (known)
        return (uint32_t)(known - 1);
    if (w->n_order == w->cap_order) {
        size_t cap = w->cap_order ? w->cap_order * 2 : 256;
        const struct dw_type **o = realloc(w->order, cap * sizeof *o);
        if (!o) {
            w->failed = true;
            return NONE;
        }
        w->order = o;
        w->cap_order = cap;
    }
    if (u64map_put(&w->types, (uint64_t)(uintptr_t)t, (void *)(uintptr_t)(w->n_order + 1)) != 0) {
        w->failed = true;
        return NONE;
    }
    w->order[w->n_order++] = t;
    return (uint32_t)(w->n_order - 1);
}

static void write_payload(struct writer *w, const struct dw_index *ix, struct buf *scalars)
{
    unsigned char *bid = grow(scalars, 41);
    if (bid)
        memcpy(bid, ix->build_id, 41);
    put(scalars, ix->has_dwarf, 1);
    put(scalars, ix->is_pie, 1);

    for (size_t i = 0; i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        struct buf *b = &w->t[T_FUNCS];
        put64(b, f->entry);
        put64(b, f->end);
        put32(b, str_off(w, f->name));
        put32(b, str_off(w, f->demangled));
        put32(b, str_off(w, f->linkage_name));
        put32(b, str_off(w, f->decl_file));
        put32(b, (uint32_t)f->decl_line);
        put32(b, type_idx(w, f->return_type));
        put32(b, (uint32_t)(w->t[T_PARAMS].n / PARAM_SIZE));
        put32(b, (uint32_t)f->n_params);
        put(b, f->has_dwarf, 1);
        put(b, f->variadic, 1);
        put32(b, (uint32_t)(w->t[T_ALIASES].n / NAME_SIZE));
        put32(b, (uint32_t)f->n_aliases);
        put64(b, f->ifunc_slot);
        for (size_t k = 0; k < f->n_params; k++) {
            put32(&w->t[T_PARAMS], str_off(w, f->params[k].name));
            put32(&w->t[T_PARAMS], type_idx(w, f->params[k].type));
        }
        for (size_t k = 0; k < f->n_aliases; k++)
            put32(&w->t[T_ALIASES], str_off(w, f->aliases[k]));
    }
    for (size_t i = 0; i < ix->n_inlined_only; i++)
        put32(&w->t[T_INLINED], str_off(w, ix->inlined_only[i]));

    /* order grows while it is walked: every reachable type gets written once. */
    for (size_t i = 0; i < w->n_order && !w->failed; i++) {
        const struct dw_type *t = w->order[i];
        struct buf *b = &w->t[T_TYPES];
        put32(b, (uint32_t)t->kind | (t->system_header ? SYSTEM_HEADER_BIT : 0));
        put32(b, str_off(w, t->name));
        put64(b, t->size);
        put32(b, type_idx(w, t->target));
        put64(b, t->count);
        put32(b, (uint32_t)(w->t[T_MEMBERS].n / MEMBER_SIZE));
        put32(b, (uint32_t)t->n_members);
        put32(b, (uint32_t)(w->t[T_ENUMS].n / ENUMERATOR_SIZE));
        put32(b, (uint32_t)t->n_enumerators);
        for (size_t k = 0; k < t->n_members; k++) {
            const struct dw_member *m = &t->members[k];
            struct buf *mb = &w->t[T_MEMBERS];
            put32(mb, str_off(w, m->name));
            put64(mb, m->offset);
            put32(mb, m->bit_size);
            put32(mb, m->bit_offset);
            put32(mb, type_idx(w, m->type));
        }
        for (size_t k = 0; k < t->n_enumerators; k++) {
            put32(&w->t[T_ENUMS], str_off(w, t->enumerators[k].name));
            put64(&w->t[T_ENUMS], (uint64_t)t->enumerators[k].value);
        }
    }
}

void dw_disk_store(const char *path, const struct stat *st, const struct dw_index *ix)
{
    char file[PATH_MAX], dir[PATH_MAX];
    if (!file_name(path, ix->build_id, st, file, dir))
        return;
    struct writer w = {0};
    struct buf scalars = {0}, head = {0};
    write_payload(&w, ix, &scalars);

    bool ok = !w.failed && !scalars.failed;
    uint64_t h = fnv1a(scalars.p, scalars.n), payload = scalars.n;
    for (int i = 0; i < T_COUNT && ok; i++) {
        /* FNV-1a runs byte by byte, so hashing table by table equals hashing the whole. */
        const unsigned char *b = w.t[i].p;
        for (size_t k = 0; k < w.t[i].n; k++)
            h = (h ^ b[k]) * 0x100000001b3ull;
        payload += w.t[i].n;
        ok = !w.t[i].failed && w.t[i].n / rec_size[i] < NONE;
    }
    if (ok) {
        unsigned char *m = grow(&head, 8);
        if (m)
            memcpy(m, MAGIC, 8);
        put32(&head, VERSION);
        put32(&head, HEADER_SIZE);
        put64(&head, payload);
        put64(&head, h);
        for (int i = 0; i < T_COUNT; i++)
            put32(&head, (uint32_t)(w.t[i].n / rec_size[i]));
        put32(&head, 0); /* reserved */
        ok = !head.failed && head.n == HEADER_SIZE;
    }
    char tmp[PATH_MAX];
    int fd = -1;
    if (ok && snprintf(tmp, sizeof tmp, "%s/.idx-XXXXXX", dir) < (int)sizeof tmp)
        fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
    if (fd >= 0) {
        ok = write_all(fd, head.p, head.n) == 0 && write_all(fd, scalars.p, scalars.n) == 0;
        for (int i = 0; i < T_COUNT && ok; i++)
            ok = write_all(fd, w.t[i].p, w.t[i].n) == 0;
        if (close(fd) != 0 || !ok || rename(tmp, file) != 0)
            unlink(tmp);
    }
    for (int i = 0; i < T_COUNT; i++)
        free(w.t[i].p);
    strmap_clear(&w.strs);
    u64map_free(&w.types);
    free(w.order);
    free(scalars.p);
    free(head.p);
}

/* ---- loading ---- */

struct reader {
    const unsigned char *p, *end;
};

static uint64_t get(struct reader *r, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    return v;
}
static uint32_t get32(struct reader *r) { return (uint32_t)get(r, 4); }
static uint64_t get64(struct reader *r) { return get(r, 8); }

/* What a load checks strings and indexes against. */
struct tables {
    const char *blob;
    uint32_t n[T_COUNT];
    bool bad;
};

static const char *str_at(struct tables *tb, uint32_t off)
{
    if (off == NONE)
        return NULL;
    if (off >= tb->n[T_STRINGS] || !memchr(tb->blob + off, 0, tb->n[T_STRINGS] - off)) {
        tb->bad = true;
        return NULL;
    }
    return tb->blob + off;
}

/* first..first+n within table t (its size in records). */
static bool range_ok(struct tables *tb, int t, uint32_t first, uint32_t n)
{
    if (n && (uint64_t)first + n > tb->n[t])
        tb->bad = true;
    return n && !tb->bad;
}

static const struct dw_type *type_at(struct tables *tb, struct dw_type *types, uint32_t i)
{
    if (i == NONE)
        return NULL;
    if (i >= tb->n[T_TYPES]) {
        tb->bad = true;
        return NULL;
    }
    return &types[i];
}

static void *carve(unsigned char **at, size_t n)
{
    void *p = *at;
    *at += (n + 15) & ~(size_t)15;
    return p;
}

static struct dw_index *parse(const unsigned char *data, size_t size, const char *path,
                              const char *build_id, struct arena *a)
{
    if (size < HEADER_SIZE || memcmp(data, MAGIC, 8) != 0)
        return NULL;
    struct reader r = {data + 8, data + size};
    struct tables tb = {0};
    if (get32(&r) != VERSION || get32(&r) != HEADER_SIZE)
        return NULL;
    uint64_t payload = get64(&r), sum = get64(&r);
    uint64_t want = SCALARS_SIZE;
    for (int i = 0; i < T_COUNT; i++) {
        tb.n[i] = get32(&r);
        want += (uint64_t)tb.n[i] * rec_size[i]; /* < 2^38 each: no overflow */
    }
    if (payload != want || payload != size - HEADER_SIZE)
        return NULL;
    if (fnv1a(data + HEADER_SIZE, size - HEADER_SIZE) != sum)
        return NULL;

    r.p = data + HEADER_SIZE;
    const unsigned char *scalars = r.p;
    r.p += SCALARS_SIZE;
    tb.blob = (const char *)r.p;
    r.p += tb.n[T_STRINGS];
    if (memchr(scalars, 0, 41) == NULL || strcmp((const char *)scalars, build_id) != 0)
        return NULL; /* a foreign file under this name */

    /* Every count is now bounded by the file size, so this allocation is too. */
    size_t sizes[] = {
        sizeof(struct dw_index), strlen(path) + 1, tb.n[T_STRINGS],
        (size_t)tb.n[T_TYPES] * sizeof(struct dw_type),
        (size_t)tb.n[T_MEMBERS] * sizeof(struct dw_member),
        (size_t)tb.n[T_ENUMS] * sizeof(struct dw_enumerator),
        (size_t)tb.n[T_PARAMS] * sizeof(struct dw_param),
        (size_t)tb.n[T_FUNCS] * sizeof(struct dw_function),
        (size_t)tb.n[T_ALIASES] * sizeof(char *), (size_t)tb.n[T_INLINED] * sizeof(char *),
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        total += (sizes[i] + 15) & ~(size_t)15;
    struct arena mem = {0};
    unsigned char *at = arena_alloc(&mem, total);
    struct dw_index *ix = carve(&at, sizes[0]);
    ix->path = memcpy(carve(&at, sizes[1]), path, sizes[1]);
    char *blob = memcpy(carve(&at, sizes[2]), tb.blob, sizes[2]);
    struct dw_type *types = carve(&at, sizes[3]);
    struct dw_member *members = carve(&at, sizes[4]);
    struct dw_enumerator *enums = carve(&at, sizes[5]);
    struct dw_param *params = carve(&at, sizes[6]);
    struct dw_function *funcs = carve(&at, sizes[7]);
    const char **aliases = carve(&at, sizes[8]);
    const char **inlined = carve(&at, sizes[9]);
    tb.blob = blob; /* pointers go into the copy, which the index owns */

    memcpy(ix->build_id, scalars, 41);
    ix->has_dwarf = scalars[41] != 0;
    ix->is_pie = scalars[42] != 0;
    for (uint32_t i = 0; i < tb.n[T_TYPES] && !tb.bad; i++) {
        struct dw_type *t = &types[i];
        uint32_t kind = get32(&r);
        t->system_header = kind & SYSTEM_HEADER_BIT;
        kind &= ~SYSTEM_HEADER_BIT;
        if (kind > DWT_FUNCTION)
            tb.bad = true;
        t->kind = (enum dw_type_kind)kind;
        t->name = str_at(&tb, get32(&r));
        t->size = get64(&r);
        t->target = type_at(&tb, types, get32(&r));
        t->count = get64(&r);
        uint32_t mf = get32(&r), mn = get32(&r), ef = get32(&r), en = get32(&r);
        if (range_ok(&tb, T_MEMBERS, mf, mn)) {
            t->members = &members[mf];
            t->n_members = mn;
        }
        if (range_ok(&tb, T_ENUMS, ef, en)) {
            t->enumerators = &enums[ef];
            t->n_enumerators = en;
        }
    }
    for (uint32_t i = 0; i < tb.n[T_MEMBERS] && !tb.bad; i++) {
        members[i].name = str_at(&tb, get32(&r));
        members[i].offset = get64(&r);
        members[i].bit_size = get32(&r);
        members[i].bit_offset = get32(&r);
        members[i].type = type_at(&tb, types, get32(&r));
    }
    for (uint32_t i = 0; i < tb.n[T_ENUMS] && !tb.bad; i++) {
        enums[i].name = str_at(&tb, get32(&r));
        enums[i].value = (int64_t)get64(&r);
    }
    for (uint32_t i = 0; i < tb.n[T_PARAMS] && !tb.bad; i++) {
        params[i].name = str_at(&tb, get32(&r));
        params[i].type = type_at(&tb, types, get32(&r));
    }
    for (uint32_t i = 0; i < tb.n[T_FUNCS] && !tb.bad; i++) {
        struct dw_function *f = &funcs[i];
        f->entry = get64(&r);
        f->end = get64(&r);
        f->name = str_at(&tb, get32(&r));
        f->demangled = str_at(&tb, get32(&r));
        f->linkage_name = str_at(&tb, get32(&r));
        f->decl_file = str_at(&tb, get32(&r));
        f->decl_line = (int)get32(&r);
        f->return_type = type_at(&tb, types, get32(&r));
        uint32_t pf = get32(&r), pn = get32(&r);
        f->has_dwarf = get(&r, 1) != 0;
        f->variadic = get(&r, 1) != 0;
        uint32_t af = get32(&r), an = get32(&r);
        f->ifunc_slot = get64(&r);
        if (range_ok(&tb, T_PARAMS, pf, pn)) {
            f->params = &params[pf];
            f->n_params = pn;
        }
        if (range_ok(&tb, T_ALIASES, af, an)) {
            f->aliases = &aliases[af];
            f->n_aliases = an;
        }
        /* Every function has a name and callers compare it without a NULL check. */
        if (!f->name || !f->demangled || (i && f->entry <= funcs[i - 1].entry))
            tb.bad = true;
    }
    for (uint32_t i = 0; i < tb.n[T_ALIASES] && !tb.bad; i++)
        if (!(aliases[i] = str_at(&tb, get32(&r))))
            tb.bad = true;
    for (uint32_t i = 0; i < tb.n[T_INLINED] && !tb.bad; i++)
        if (!(inlined[i] = str_at(&tb, get32(&r))) ||
            (i && strcmp(inlined[i - 1], inlined[i]) >= 0))
            tb.bad = true; /* unsorted would break dw_is_inlined_only's bsearch */
    if (tb.bad || r.p != r.end) {
        arena_free(&mem);
        return NULL;
    }
    ix->functions = tb.n[T_FUNCS] ? funcs : NULL;
    ix->n_functions = tb.n[T_FUNCS];
    ix->inlined_only = tb.n[T_INLINED] ? inlined : NULL;
    ix->n_inlined_only = tb.n[T_INLINED];
    *a = mem;
    return ix;
}

struct dw_index *dw_disk_load(const char *path, const char *build_id, const struct stat *st,
                              struct arena *a)
{
    char file[PATH_MAX], dir[PATH_MAX];
    if (!file_name(path, build_id, st, file, dir))
        return NULL;
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat fst;
    unsigned char *data = NULL;
    size_t n = 0;
    if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size > 0 &&
        (data = malloc((size_t)fst.st_size))) {
        while (n < (size_t)fst.st_size) {
            ssize_t k = read(fd, data + n, (size_t)fst.st_size - n);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            n += (size_t)k;
        }
    }
    close(fd);
    struct dw_index *ix = data && n == (size_t)fst.st_size
                              ? parse(data, n, path, build_id, a) : NULL;
    free(data);
    return ix;
}
