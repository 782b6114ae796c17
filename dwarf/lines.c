/*
 * lines.c - the line tables of an ELF file for breakpoints and stepping (lines.h):
 * source line to addresses, the end of a function's prologue, the rows of one
 * function, the line of one address. The files are openfiles.c's open files
 * (dwarf_internal.h), used under its mutex; libdw keeps each CU's decoded line table.
 *
 * Resolving FILE:LINE reads every CU's line table once per call: the rows of the files
 * that match are kept, each tagged with its CU's file entry (the file's absolute path
 * and how well it matched), and the best match decides which are used. Function
 * instances and names come from the scopes at each address (dw_scopes_at), so they
 * agree with dw_frame_sites.
 */
#include "dwarf/lines.h"

#include <dwarf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_internal.h"

enum {
    MAX_NEAR_NAMES = 8,   /* file names suggested when none matches */
    MAX_DEPTH = 64,       /* DIE nesting followed looking for functions */
};

/* How a line-table file matches the file asked for: the best kind found decides. */
enum match { MATCH_NONE, MATCH_BASENAME, MATCH_SUFFIX, MATCH_EXACT };

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool is_stmt(Dwarf_Line *l)
{
    bool flag = false;
    dwarf_linebeginstatement(l, &flag);
    return flag;
}

static bool ends_sequence(Dwarf_Line *l)
{
    bool flag = false;
    dwarf_lineendsequence(l, &flag);
    return flag;
}

/* The absolute, normalized path of line-table file name of cu; name itself
 * normalized when there is no compilation directory to make it absolute. */
static char *file_path(Dwarf_Die *cu, const char *name)
{
    char *abs = dw_cu_absolute_path(cu, name);
    if (!abs) {
        abs = xstrdup(name ? name : "?");
        dw_normalize_path(abs);
    }
    return abs;
}

static enum match match_file(const char *abs, const char *want)
{
    if (strcmp(abs, want) == 0)
        return MATCH_EXACT;
    size_t la = strlen(abs), lw = strlen(want);
    if (want[0] != '/' && la > lw && abs[la - lw - 1] == '/' && strcmp(abs + la - lw, want) == 0)
        return MATCH_SUFFIX;
    return strcmp(base_name(abs), base_name(want)) == 0 ? MATCH_BASENAME : MATCH_NONE;
}

/* ---- the rows of the matching files ---- */

/* One file of one CU's line table that some row names. */
struct entry {
    char *abs;
    enum match match;
    Dwarf_Off cu;
};

/* One is_stmt row of a matching file. */
struct row {
    uint64_t addr;
    int line;
    size_t entry;
};

struct collection {
    const char *want;       /* the file asked for, normalized */
    struct entry *entries;
    size_t n_entries, cap_entries;
    struct row *rows;       /* after collect: only the best match's, by line then address */
    size_t n_rows, cap_rows;
    enum match best;
};

static size_t add_entry(struct collection *c, char *abs, enum match m, Dwarf_Off cu)
{
    if (c->n_entries == c->cap_entries) {
        c->cap_entries = c->cap_entries ? 2 * c->cap_entries : 64;
        c->entries = xrealloc(c->entries, c->cap_entries * sizeof *c->entries);
    }
    c->entries[c->n_entries] = (struct entry){abs, m, cu};
    if (m > c->best)
        c->best = m;
    return c->n_entries++;
}

static void add_row(struct collection *c, uint64_t addr, int line, size_t entry)
{
    if (c->n_rows == c->cap_rows) {
        c->cap_rows = c->cap_rows ? 2 * c->cap_rows : 256;
        c->rows = xrealloc(c->rows, c->cap_rows * sizeof *c->rows);
    }
    c->rows[c->n_rows++] = (struct row){addr, line, entry};
}

/* The rows of one CU: each file the rows name becomes an entry on first use. */
static void collect_cu(struct collection *c, Dwarf_Die *cu)
{
    Dwarf_Lines *lines;
    Dwarf_Files *files;
    size_t n_lines, n_files;
    if (dwarf_getsrclines(cu, &lines, &n_lines) != 0 ||
        dwarf_getsrcfiles(cu, &files, &n_files) != 0 || n_files == 0)
        return;
    size_t *entry_of = malloc(n_files * sizeof *entry_of);
    if (!entry_of)
        abort();
    for (size_t i = 0; i < n_files; i++)
        entry_of[i] = SIZE_MAX;
    for (size_t i = 0; i < n_lines; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Files *fs;
        size_t idx;
        Dwarf_Addr addr;
        int line;
        if (!l || ends_sequence(l) || dwarf_line_file(l, &fs, &idx) != 0 || fs != files ||
            idx >= n_files || dwarf_lineaddr(l, &addr) != 0 || dwarf_lineno(l, &line) != 0)
            continue;
        if (entry_of[idx] == SIZE_MAX) {
            char *abs = file_path(cu, dwarf_filesrc(files, idx, NULL, NULL));
            entry_of[idx] = add_entry(c, abs, match_file(abs, c->want),
                                      dwarf_dieoffset(cu));
        }
        if (c->entries[entry_of[idx]].match != MATCH_NONE && is_stmt(l))
            add_row(c, addr, line, entry_of[idx]);
    }
    free(entry_of);
}

static int cmp_row(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Every CU's rows; then only the best match's rows stay, sorted by line and address. */
static void collect(struct collection *c, Dwarf *dw)
{
    Dwarf_Off off = 0, next;
    size_t hsize;
    Dwarf_Die cu;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        if (dwarf_offdie(dw, off + hsize, &cu))
            collect_cu(c, &cu);
        off = next;
    }
    size_t kept = 0;
    for (size_t i = 0; i < c->n_rows; i++)
        if (c->entries[c->rows[i].entry].match == c->best)
            c->rows[kept++] = c->rows[i];
    c->n_rows = kept;
    if (kept > 1)
        qsort(c->rows, kept, sizeof *c->rows, cmp_row);
}

static void collection_free(struct collection *c)
{
    for (size_t i = 0; i < c->n_entries; i++)
        free(c->entries[i].abs);
    free(c->entries);
    free(c->rows);
}

/* ---- function instances ---- */

/* The function instance holding addr: the innermost subprogram or inlined subroutine.
 * false when no function covers addr. */
static bool instance_at(struct dw_file *f, uint64_t addr, Dwarf_Die *inst, bool *inlined)
{
    struct dw_scopes s;
    if (!dw_scopes_at(f, addr, &s))
        return false;
    for (size_t i = 0; i <= s.fn; i++) {
        int tag = dwarf_tag(&s.dies[i]);
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            *inst = s.dies[i];
            *inlined = tag == DW_TAG_inlined_subroutine;
            break;
        }
    }
    free(s.dies);
    return true;
}

/* The DIE offset of the function addr's instance is a copy of (its abstract origin,
 * or itself); 0 when no function covers addr. */
static Dwarf_Off function_key_at(struct dw_file *f, uint64_t addr)
{
    Dwarf_Die inst;
    bool inlined;
    if (!instance_at(f, addr, &inst, &inlined))
        return 0;
    Dwarf_Die origin = dw_die_origin(&inst, false);
    return dwarf_dieoffset(&origin);
}

/* ---- binding a line ---- */

static void set_message(struct dw_line_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_message(struct dw_line_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

static int cmp_loc(const void *x, const void *y)
{
    const struct dw_line_loc *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The rows of line, [*first, *end) in c->rows; false when there are none. */
static bool rows_of_line(const struct collection *c, int line, size_t *first, size_t *end)
{
    size_t lo = 0, hi = c->n_rows;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->rows[mid].line < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = *end = lo;
    while (*end < c->n_rows && c->rows[*end].line == line)
        (*end)++;
    return *end > *first;
}

/* Binds the rows [first, end) of one line: the lowest address of each function
 * instance (rows are sorted by address, so the first one seen). */
static void bind_rows(struct dw_file *f, const char *path, const struct collection *c,
                      size_t first, size_t end, struct dw_line_result *r)
{
    size_t n = end - first;
    Dwarf_Off *seen = malloc(n * sizeof *seen);
    r->locs = calloc(n, sizeof *r->locs);
    if (!seen || !r->locs)
        abort();
    for (size_t i = first; i < end; i++) {
        const struct row *row = &c->rows[i];
        Dwarf_Die inst;
        bool inlined = false;
        bool found = instance_at(f, row->addr, &inst, &inlined);
        Dwarf_Off key = found ? dwarf_dieoffset(&inst) : 0;
        bool dup = false;
        for (size_t k = 0; k < r->n_locs && !dup; k++)
            dup = seen[k] == key || r->locs[k].addr == row->addr;
        if (dup)
            continue;
        seen[r->n_locs] = key;
        r->locs[r->n_locs++] = (struct dw_line_loc){
            .addr = row->addr,
            .function = !found ? NULL
                        : inlined ? dw_die_function_name(&inst)
                                  : dw_outofline_function_name(&inst, path),
            .inlined = inlined,
            .file = xstrdup(c->entries[row->entry].abs),
            .line = row->line,
        };
    }
    free(seen);
    if (r->n_locs > 1)
        qsort(r->locs, r->n_locs, sizeof *r->locs, cmp_loc);
    r->line = c->rows[first].line;
}

/* ---- lines without code ---- */

/* The function declared last at or before a line of the wanted file. */
struct decl {
    Dwarf_Die die;   /* its declaring DIE: the abstract one of inlined code */
    int line;        /* its DW_AT_decl_line; 0: none found */
};

/* Looks among the subprograms under parent that are neither declarations nor concrete
 * copies of another DIE, entering namespaces and classes. */
static void find_decl(const struct collection *c, Dwarf_Die *cu, Dwarf_Die *parent, int line,
                      struct decl *best, int depth)
{
    Dwarf_Die d;
    if (depth > MAX_DEPTH || dwarf_child(parent, &d) != 0)
        return;
    do {
        int tag = dwarf_tag(&d);
        int decl_line;
        const char *decl_file;
        if (tag == DW_TAG_subprogram && !dwarf_hasattr(&d, DW_AT_declaration) &&
            !dwarf_hasattr(&d, DW_AT_abstract_origin) && dwarf_decl_line(&d, &decl_line) == 0 &&
            decl_line <= line && decl_line > best->line && (decl_file = dwarf_decl_file(&d))) {
            char *abs = file_path(cu, decl_file);
            if (match_file(abs, c->want) == c->best)
                *best = (struct decl){d, decl_line};
            free(abs);
        }
        if (tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
            tag == DW_TAG_structure_type || tag == DW_TAG_union_type)
            find_decl(c, cu, &d, line, best, depth + 1);
    } while (dwarf_siblingof(&d, &d) == 0);
}

/* The function line is in as far as declarations tell: the one declared last at or
 * before it, in the CUs whose line tables name the wanted file. */
static struct decl enclosing_function(Dwarf *dw, const struct collection *c, int line)
{
    struct decl best = {.line = 0};
    for (size_t i = 0; i < c->n_entries; i++) {
        bool done = c->entries[i].match != c->best;
        for (size_t k = 0; k < i && !done; k++)
            done = c->entries[k].match == c->best && c->entries[k].cu == c->entries[i].cu;
        Dwarf_Die cu;
        if (!done && dwarf_offdie(dw, c->entries[i].cu, &cu))
            find_decl(c, &cu, &cu, line, &best, 0);
    }
    return best;
}

/* The rows of the smallest line after line that has a row in function key (any
 * instance of it), or in any function when key is 0; false when there is none. */
static bool next_line(struct dw_file *f, const struct collection *c, int line, Dwarf_Off key,
                      size_t *first, size_t *end)
{
    size_t i;
    rows_of_line(c, line + 1, &i, end);
    for (; i < c->n_rows; i++)
        if (!key || function_key_at(f, c->rows[i].addr) == key)
            return rows_of_line(c, c->rows[i].line, first, end);
    return false;
}

/* Whether function fn (a declaring DIE) has code: out of line, or rows of the wanted
 * file from its declaration up to line. */
static bool has_code(struct dw_file *f, const struct collection *c, struct decl *fn, int line)
{
    Dwarf_Addr lo, base, hi;
    if (dwarf_lowpc(&fn->die, &lo) == 0 ||
        dwarf_ranges(&fn->die, 0, &base, &lo, &hi) > 0)
        return true;
    Dwarf_Off key = dwarf_dieoffset(&fn->die);
    size_t i, end;
    rows_of_line(c, fn->line, &i, &end);
    for (; i < c->n_rows && c->rows[i].line < line; i++)
        if (function_key_at(f, c->rows[i].addr) == key)
            return true;
    return false;
}

/* line has no row: binds a later one (lines.h says which) or says why not. */
static void bind_later(struct dw_file *f, Dwarf *dw, const char *path, const char *file,
                       const struct collection *c, int line, struct dw_line_result *r)
{
    struct decl fn = enclosing_function(dw, c, line);
    Dwarf_Off key = fn.line ? dwarf_dieoffset(&fn.die) : 0;
    size_t first, end;
    bool found = key && next_line(f, c, line, key, &first, &end);
    if (!found && key && !has_code(f, c, &fn, line)) {
        char *name = dw_die_function_name(&fn.die);
        r->status = DWL_NO_CODE;
        set_message(r,
                    "line %d of %s is in function %s, which the compiler inlined everywhere "
                    "or never called",
                    line, file, name);
        free(name);
        return;
    }
    if (!found && !next_line(f, c, line, 0, &first, &end)) {
        r->status = DWL_NO_CODE;
        if (c->n_rows)
            set_message(r, "%s has no code at or after line %d; its last line with code is %d",
                        file, line, c->rows[c->n_rows - 1].line);
        else
            set_message(r, "%s has no code", file);
        return;
    }
    bind_rows(f, path, c, first, end, r);
    r->status = DWL_MOVED;
    set_message(r, "line %d of %s has no code; bound to line %d, the next line that has code",
                line, file, r->line);
}

/* ---- no such file ---- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev = malloc((lb + 1) * sizeof *prev), *cur = malloc((lb + 1) * sizeof *cur);
    if (!prev || !cur)
        abort();
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[lb];
    free(prev);
    free(cur);
    return d;
}

struct near_name {
    const char *name;
    size_t distance;
};

static int cmp_near(const void *x, const void *y)
{
    const struct near_name *a = x, *b = y;
    if (a->distance != b->distance)
        return a->distance < b->distance ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void no_file(const char *path, const char *file, const struct collection *c,
                    struct dw_line_result *r)
{
    r->status = DWL_NO_FILE;
    struct near_name *near = calloc(c->n_entries + 1, sizeof *near);
    if (!near)
        abort();
    size_t n = 0;
    const char *want = base_name(c->want);
    for (size_t i = 0; i < c->n_entries; i++) {
        const char *name = base_name(c->entries[i].abs);
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++)
            dup = strcmp(near[k].name, name) == 0;
        if (!dup)
            near[n++] = (struct near_name){name, edit_distance(want, name)};
    }
    qsort(near, n, sizeof *near, cmp_near);
    int len = snprintf(r->message, sizeof r->message,
                       "no file matching '%s' in the debug info of %s", file, path);
    for (size_t i = 0; i < n && i < MAX_NEAR_NAMES && len > 0 && (size_t)len < sizeof r->message;
         i++)
        len += snprintf(r->message + len, sizeof r->message - (size_t)len, "%s%s%s",
                        i ? ", " : "; its source files include: ", near[i].name,
                        i + 1 == MAX_NEAR_NAMES && n > MAX_NEAR_NAMES ? ", ..." : "");
    free(near);
}

int dw_line_resolve(const char *path, const char *file, int line, struct dw_line_result *out)
{
    *out = (struct dw_line_result){.status = DWL_NO_FILE, .line = line};
    char *want = xstrdup(file);
    dw_normalize_path(want);
    int rc = 0;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    Dwarf *dw = f ? dw_file_dwarf(f) : NULL;
    if (!f) {
        set_message(out, "cannot read %s as an ELF file", path);
        rc = -1;
    } else if (!dw) {
        set_message(out, "%s has no debug info (DWARF)", path);
    } else {
        struct collection c = {.want = want};
        collect(&c, dw);
        size_t first, end;
        if (c.best == MATCH_NONE || !*want) {
            no_file(path, file, &c, out);
        } else if (rows_of_line(&c, line, &first, &end)) {
            bind_rows(f, path, &c, first, end, out);
            out->status = DWL_OK;
        } else {
            bind_later(f, dw, path, file, &c, line, out);
        }
        collection_free(&c);
    }
    dw_files_unlock();
    free(want);
    return rc;
}

void dw_line_result_free(struct dw_line_result *r)
{
    for (size_t i = 0; i < r->n_locs; i++) {
        free(r->locs[i].function);
        free(r->locs[i].file);
    }
    free(r->locs);
    r->locs = NULL;
    r->n_locs = 0;
}

/* ---- one function's rows ---- */

/* The out-of-line function holding pc and the CU it is in; false when none. */
static bool function_at(struct dw_file *f, uint64_t pc, Dwarf_Die *fn, Dwarf_Die *cu)
{
    struct dw_scopes s;
    if (!dw_scopes_at(f, pc, &s))
        return false;
    *fn = s.dies[s.fn];
    *cu = s.cu;
    free(s.dies);
    return true;
}

/* The range of fn holding pc; false when none does. */
static bool range_at(Dwarf_Die *fn, uint64_t pc, struct dw_addr_range *r)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(fn, off, &base, &lo, &hi)) > 0)
        if (lo <= pc && pc < hi) {
            *r = (struct dw_addr_range){lo, hi};
            return true;
        }
    return false;
}

uint64_t dw_after_prologue(const char *path, uint64_t entry)
{
    uint64_t result = entry;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    Dwarf_Die fn, cu;
    struct dw_addr_range range;
    Dwarf_Lines *lines;
    size_t n;
    if (f && function_at(f, entry, &fn, &cu) && range_at(&fn, entry, &range) &&
        dwarf_getsrclines(&cu, &lines, &n) == 0) {
        uint64_t prologue_end = UINT64_MAX, next_line = UINT64_MAX, next_row = UINT64_MAX;
        int entry_line = 0;
        bool one_entry_line = true;
        Dwarf_Line *at_entry = dwarf_getsrc_die(&cu, entry);
        if (at_entry)
            dwarf_lineno(at_entry, &entry_line);
        for (size_t i = 0; i < n; i++) { /* the lines at entry */
            Dwarf_Line *l = dwarf_onesrcline(lines, i);
            Dwarf_Addr a;
            int ln;
            if (l && !ends_sequence(l) && is_stmt(l) && dwarf_lineaddr(l, &a) == 0 &&
                a == entry && dwarf_lineno(l, &ln) == 0 && ln != entry_line)
                one_entry_line = false;
        }
        for (size_t i = 0; i < n; i++) {
            Dwarf_Line *l = dwarf_onesrcline(lines, i);
            Dwarf_Addr a;
            int ln;
            bool flag = false;
            if (!l || ends_sequence(l) || dwarf_lineaddr(l, &a) != 0 || a < entry ||
                a >= range.hi || dwarf_lineno(l, &ln) != 0)
                continue;
            if (dwarf_lineprologueend(l, &flag) == 0 && flag && a < prologue_end)
                prologue_end = a;
            if (a > entry && is_stmt(l) && ln != entry_line && a < next_line)
                next_line = a;
            if (a > entry && is_stmt(l) && a < next_row)
                next_row = a;
        }
        if (prologue_end != UINT64_MAX)
            result = prologue_end;
        else if (one_entry_line && next_line != UINT64_MAX)
            result = next_line;
        else if (one_entry_line && next_row != UINT64_MAX)
            result = next_row; /* a one-line function: its body is a row of its own */
    }
    dw_files_unlock();
    return result;
}

/* Adds the ranges of the inlined subroutines under parent (not of nested functions,
 * whose code is not parent's). */
static void inlined_ranges(Dwarf_Die *parent, struct dw_addr_range **r, size_t *n, size_t *cap,
                           int depth)
{
    Dwarf_Die d;
    if (depth > MAX_DEPTH || dwarf_child(parent, &d) != 0)
        return;
    do {
        int tag = dwarf_tag(&d);
        if (tag == DW_TAG_inlined_subroutine) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&d, off, &base, &lo, &hi)) > 0) {
                if (*n == *cap) {
                    *cap = *cap ? 2 * *cap : 16;
                    *r = xrealloc(*r, *cap * sizeof **r);
                }
                (*r)[(*n)++] = (struct dw_addr_range){lo, hi};
            }
        }
        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
            tag == DW_TAG_try_block || tag == DW_TAG_catch_block)
            inlined_ranges(&d, r, n, cap, depth + 1);
    } while (dwarf_siblingof(&d, &d) == 0);
}

static bool in_ranges(const struct dw_addr_range *r, size_t n, uint64_t addr)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].lo <= addr && addr < r[i].hi)
            return true;
    return false;
}

static int cmp_range(const void *x, const void *y)
{
    const struct dw_addr_range *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sorting keeps rows at one address in table order: the index breaks ties. */
struct indexed_row {
    struct dw_line_row row;
    size_t index;
};

static int cmp_indexed_row(const void *x, const void *y)
{
    const struct indexed_row *a = x, *b = y;
    if (a->row.addr != b->row.addr)
        return a->row.addr < b->row.addr ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The line table's name of each file of a struct dw_func_lines being filled. */
struct file_names {
    const char **names;
    size_t cap;
};

/* The copy of line-table file name's absolute path that out keeps (each name once). */
static const char *row_file(struct dw_func_lines *out, struct file_names *fns, Dwarf_Die *cu,
                            const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < out->n_files; i++)
        if (fns->names[i] == name)
            return out->files[i];
    if (out->n_files == fns->cap) {
        fns->cap = fns->cap ? 2 * fns->cap : 8;
        out->files = xrealloc(out->files, fns->cap * sizeof *out->files);
        fns->names = xrealloc(fns->names, fns->cap * sizeof *fns->names);
    }
    fns->names[out->n_files] = name;
    out->files[out->n_files] = file_path(cu, name);
    return out->files[out->n_files++];
}

/* The rows of fn's ranges from its CU's line table into out. */
static void function_rows(Dwarf_Die *fn, Dwarf_Die *cu, Dwarf_Lines *lines, size_t n,
                          struct dw_func_lines *out)
{
    struct dw_addr_range *inl = NULL;
    size_t n_inl = 0, cap_inl = 0, cap_rows = 0;
    inlined_ranges(fn, &inl, &n_inl, &cap_inl, 0);
    struct indexed_row *rows = NULL;
    struct file_names fns = {0};
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        int ln = 0;
        if (!l || ends_sequence(l) || dwarf_lineaddr(l, &a) != 0 ||
            !in_ranges(out->ranges, out->n_ranges, a))
            continue;
        dwarf_lineno(l, &ln);
        if (out->n_rows == cap_rows) {
            cap_rows = cap_rows ? 2 * cap_rows : 64;
            rows = xrealloc(rows, cap_rows * sizeof *rows);
        }
        const char *file = row_file(out, &fns, cu, dwarf_linesrc(l, NULL, NULL));
        rows[out->n_rows] = (struct indexed_row){
            {a, ln, file, is_stmt(l), in_ranges(inl, n_inl, a)}, out->n_rows};
        out->n_rows++;
    }
    if (out->n_rows > 1)
        qsort(rows, out->n_rows, sizeof *rows, cmp_indexed_row);
    out->rows = calloc(out->n_rows + 1, sizeof *out->rows);
    if (!out->rows)
        abort();
    for (size_t i = 0; i < out->n_rows; i++)
        out->rows[i] = rows[i].row;
    free(rows);
    free(fns.names);
    free(inl);
}

int dw_function_lines(const char *path, uint64_t pc, struct dw_func_lines *out)
{
    *out = (struct dw_func_lines){0};
    int rc = -1;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    Dwarf_Die fn, cu;
    struct dw_addr_range at;
    Dwarf_Lines *lines;
    size_t n;
    if (f && function_at(f, pc, &fn, &cu) && range_at(&fn, pc, &at) &&
        dwarf_getsrclines(&cu, &lines, &n) == 0) {
        out->lo = at.lo;
        out->hi = at.hi;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        size_t cap = 0;
        while ((off = dwarf_ranges(&fn, off, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (out->n_ranges == cap) {
                cap = cap ? 2 * cap : 4;
                out->ranges = xrealloc(out->ranges, cap * sizeof *out->ranges);
            }
            out->ranges[out->n_ranges++] = (struct dw_addr_range){lo, hi};
        }
        if (out->n_ranges > 1)
            qsort(out->ranges, out->n_ranges, sizeof *out->ranges, cmp_range);
        function_rows(&fn, &cu, lines, n, out);
        rc = 0;
    }
    dw_files_unlock();
    return rc;
}

void dw_func_lines_free(struct dw_func_lines *f)
{
    for (size_t i = 0; i < f->n_files; i++)
        free(f->files[i]);
    free(f->files);
    free(f->ranges);
    free(f->rows);
    *f = (struct dw_func_lines){0};
}

int dw_line_at(const char *path, uint64_t pc, char **file, int *line)
{
    int rc = -1;
    if (file)
        *file = NULL;
    dw_files_lock();
    struct dw_file *f = dw_file_get(path);
    Dwarf *dw = f ? dw_file_dwarf(f) : NULL;
    Dwarf_Die cu;
    Dwarf_Line *l;
    if (dw && dw_cu_at(dw, pc, &cu) && (l = dwarf_getsrc_die(&cu, pc)) &&
        dwarf_lineno(l, line) == 0) {
        if (file)
            *file = file_path(&cu, dwarf_linesrc(l, NULL, NULL));
        rc = 0;
    }
    dw_files_unlock();
    return rc;
}
