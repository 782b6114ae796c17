/*
 * value.c - typed values as JSON text. See value.h for the rules.
 *
 * A value is located by a span (a local copy of some of the target's bytes, with
 * their address when they came from memory) and an offset in it: nested members and
 * array elements stay in their parent's span, and bytes beyond the local copy are
 * read through the callback, so an object of any size costs one read of at most
 * WINDOW_MAX bytes plus reads for what lies beyond it.
 */
#include "dwarf/value.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/linesplit.h"
#include "dwarf/value_walk.h"

enum {
    NESTING_MAX = 64,   /* recursion guard against looping type graphs */
    WINDOW_MAX = 4096,  /* bytes copied locally when an object is read from memory */
    PAGE = 4096,        /* string reads never cross a multiple of this */
};

#define EXACT_DOUBLE_LIMIT (UINT64_C(1) << 53)

static bool over_budget(const struct walk *w)
{
    return w->out->oom || w->out->len - w->start_len > w->max_output;
}

/* Copies n bytes at offset off of the span: locally when held, else from the
 * target when the span has an address. */
bool value_fetch(const struct walk *w, const struct span *s, uint64_t off, void *buf,
                 uint64_t n)
{
    if (off <= s->len && n <= s->len - off) {
        memcpy(buf, s->bytes + off, n);
        return true;
    }
    if (!s->has_addr || off > UINT64_MAX - s->addr)
        return false;
    return w->rd(w->ctx, s->addr + off, buf, n);
}

static uint64_t load_le(const uint8_t *b, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | b[i];
    return v;
}

void value_put_hex(struct walk *w, const char *prefix, uint64_t addr, const char *suffix)
{
    sb_printf(w->out, "\"%s0x%" PRIx64 "%s\"", prefix, addr, suffix);
}

static void put_unreadable(struct walk *w, const struct span *s, uint64_t off)
{
    if (s->has_addr && off <= UINT64_MAX - s->addr)
        value_put_hex(w, "<unreadable ", s->addr + off, ">");
    else
        sb_puts(w->out, "null");
}

static void put_int64(struct walk *w, int64_t v)
{
    bool exact = v >= -(int64_t)EXACT_DOUBLE_LIMIT && v <= (int64_t)EXACT_DOUBLE_LIMIT;
    sb_printf(w->out, exact ? "%" PRId64 : "\"%" PRId64 "\"", v);
}

static void put_uint64(struct walk *w, uint64_t v)
{
    sb_printf(w->out, v <= EXACT_DOUBLE_LIMIT ? "%" PRIu64 : "\"%" PRIu64 "\"", v);
}

static void put_uint128(struct walk *w, unsigned __int128 v, bool negative)
{
    if (!negative && v <= EXACT_DOUBLE_LIMIT) {
        put_uint64(w, (uint64_t)v);
        return;
    }
    if (negative && v <= EXACT_DOUBLE_LIMIT) {
        put_int64(w, -(int64_t)v);
        return;
    }
    char digits[41];
    size_t n = sizeof digits;
    digits[--n] = '\0';
    do {
        digits[--n] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    if (negative)
        digits[--n] = '-';
    sb_printf(w->out, "\"%s\"", digits + n);
}

/* Shortest decimal that reads back as the same float or double. */
static void put_double(struct walk *w, double d, bool single)
{
    if (isnan(d)) {
        sb_puts(w->out, "\"NaN\"");
        return;
    }
    if (isinf(d)) {
        sb_puts(w->out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return;
    }
    char text[40];
    for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++) {
        snprintf(text, sizeof text, "%.*g", prec, d);
        double back = strtod(text, NULL);
        if (single ? (float)back == (float)d : back == d)
            break;
    }
    sb_puts(w->out, text);
}

/* The double nearest to mantissa * 2^(exponent - 16383 - 63): the common form of x87
 * extended and IEEE binary128 (15-bit exponent, bias 16383) once the mantissa is
 * reduced to 64 bits with the integer bit explicit. Exponent 0x7fff is Inf/NaN. */
static double extended_to_double(bool negative, int exponent, uint64_t mantissa,
                                 bool fraction_zero)
{
    double d;
    if (exponent == 0x7fff)
        d = fraction_zero ? INFINITY : NAN;
    else
        d = ldexp((double)mantissa, (exponent ? exponent : 1) - 16383 - 63);
    return negative ? -d : d;
}

static double x87_to_double(const uint8_t b[10])
{
    uint64_t mantissa = load_le(b, 8);
    unsigned se = (unsigned)load_le(b + 8, 2);
    return extended_to_double(se >> 15, (int)(se & 0x7fff), mantissa, (mantissa << 1) == 0);
}

static double binary128_to_double(const uint8_t b[16])
{
    uint64_t lo = load_le(b, 8), hi = load_le(b + 8, 8);
    int exponent = (int)(hi >> 48 & 0x7fff);
    uint64_t fraction_hi = hi & ((UINT64_C(1) << 48) - 1);
    uint64_t mantissa = (exponent ? UINT64_C(1) << 63 : 0) | fraction_hi << 15 | lo >> 49;
    return extended_to_double(hi >> 63, exponent, mantissa, fraction_hi == 0 && lo == 0);
}

static void emit_bytes(struct walk *w, const struct dw_type *t, const struct span *s,
                       uint64_t off)
{
    if (t->size == 0) {
        sb_puts(w->out, "null");
        return;
    }
    uint8_t b[BYTES_SHOWN];
    size_t n = t->size < BYTES_SHOWN ? (size_t)t->size : BYTES_SHOWN;
    if (!value_fetch(w, s, off, b, n)) {
        put_unreadable(w, s, off);
        return;
    }
    sb_puts(w->out, "\"<bytes ");
    for (size_t i = 0; i < n; i++)
        sb_printf(w->out, "%02x", b[i]);
    sb_puts(w->out, t->size > BYTES_SHOWN ? "...>\"" : ">\"");
}

static void emit_float(struct walk *w, const struct dw_type *t, const struct span *s,
                       uint64_t off)
{
    uint8_t b[16];
    bool is_binary128 = t->size == 16 && t->name && strstr(t->name, "128");
    if (t->size != 4 && t->size != 8 && t->size != 10 && t->size != 12 && t->size != 16) {
        emit_bytes(w, t, s, off);
        return;
    }
    if (!value_fetch(w, s, off, b, t->size)) {
        put_unreadable(w, s, off);
        return;
    }
    if (t->size == 4) {
        float f;
        memcpy(&f, b, 4);
        put_double(w, f, true);
    } else if (t->size == 8) {
        double d;
        memcpy(&d, b, 8);
        put_double(w, d, false);
    } else {
        put_double(w, is_binary128 ? binary128_to_double(b) : x87_to_double(b), false);
    }
}

static bool char_is_unsigned(const struct dw_type *t)
{
    return t->name && (strstr(t->name, "unsigned") ||
                       (strncmp(t->name, "char", 4) == 0 && t->name[4] >= '0' &&
                        t->name[4] <= '9'));
}

bool value_int_signed(const struct dw_type *t)
{
    switch (t->kind) {
    case DWT_SIGNED: return true;
    case DWT_CHAR: return !char_is_unsigned(t);
    case DWT_ENUM:
        return !t->target || (t->target->kind != DWT_UNSIGNED && t->target->kind != DWT_BOOL &&
                              !(t->target->kind == DWT_CHAR && char_is_unsigned(t->target)));
    default: return false;
    }
}

/* A character code as a one-character JSON string when printable. */
static bool put_printable_char(struct walk *w, uint64_t code, size_t size)
{
    bool printable = size == 1 ? code >= 0x20 && code < 0x7f
                               : code >= 0x20 && !(code >= 0x7f && code < 0xa0) &&
                                     code < 0x110000 && !(code >= 0xd800 && code < 0xe000);
    if (!printable)
        return false;
    char utf8[5] = {0};
    if (code < 0x80) {
        utf8[0] = (char)code;
    } else if (code < 0x800) {
        utf8[0] = (char)(0xc0 | code >> 6);
        utf8[1] = (char)(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
        utf8[0] = (char)(0xe0 | code >> 12);
        utf8[1] = (char)(0x80 | (code >> 6 & 0x3f));
        utf8[2] = (char)(0x80 | (code & 0x3f));
    } else {
        utf8[0] = (char)(0xf0 | code >> 18);
        utf8[1] = (char)(0x80 | (code >> 12 & 0x3f));
        utf8[2] = (char)(0x80 | (code >> 6 & 0x3f));
        utf8[3] = (char)(0x80 | (code & 0x3f));
    }
    sb_json_string(w->out, utf8);
    return true;
}

/* An integer-like value (bool, integer, char, enum) of the given width in bits,
 * raw holding its bits in the low end. */
static void put_intlike(struct walk *w, const struct dw_type *t, uint64_t raw, unsigned bits)
{
    uint64_t mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    raw &= mask;
    bool is_signed = value_int_signed(t);
    int64_t sval = (int64_t)raw;
    if (is_signed && bits < 64 && (raw >> (bits - 1) & 1))
        sval = (int64_t)(raw | ~mask);
    switch (t->kind) {
    case DWT_BOOL:
        sb_puts(w->out, raw ? "true" : "false");
        return;
    case DWT_CHAR:
        if (!(is_signed && sval < 0) && put_printable_char(w, raw, t->size))
            return;
        break;
    case DWT_ENUM:
        for (size_t i = 0; i < t->n_enumerators; i++)
            if (((uint64_t)t->enumerators[i].value & mask) == raw && t->enumerators[i].name) {
                sb_json_string(w->out, t->enumerators[i].name);
                return;
            }
        break;
    default:
        break;
    }
    if (is_signed)
        put_int64(w, sval);
    else
        put_uint64(w, raw);
}

static void emit_int(struct walk *w, const struct dw_type *t, const struct span *s,
                     uint64_t off)
{
    uint8_t b[16];
    if (t->size == 0 || (t->size > 8 && !(t->size == 16 && t->kind != DWT_ENUM))) {
        emit_bytes(w, t, s, off);
        return;
    }
    if (!value_fetch(w, s, off, b, t->size)) {
        put_unreadable(w, s, off);
        return;
    }
    if (t->size <= 8) {
        put_intlike(w, t, load_le(b, t->size), (unsigned)t->size * 8);
        return;
    }
    unsigned __int128 v = (unsigned __int128)load_le(b + 8, 8) << 64 | load_le(b, 8);
    bool negative = value_int_signed(t) && (v >> 127);
    if (t->kind == DWT_BOOL)
        sb_puts(w->out, v ? "true" : "false");
    else
        put_uint128(w, negative ? -v : v, negative);
}

/* A bit field: bit_size bits starting bit_offset bits after byte off (LSB first). */
static void emit_bitfield(struct walk *w, const struct dw_type *t, const struct span *s,
                          uint64_t off, uint32_t bit_offset, uint32_t bit_size)
{
    if (!t || bit_size > 64 || !(t->kind == DWT_BOOL || t->kind == DWT_SIGNED ||
                                  t->kind == DWT_UNSIGNED || t->kind == DWT_CHAR ||
                                  t->kind == DWT_ENUM)) {
        sb_puts(w->out, "null");
        return;
    }
    uint64_t first = off + bit_offset / 8;
    unsigned shift = bit_offset % 8;
    size_t n = (shift + bit_size + 7) / 8;
    uint8_t b[9] = {0};
    if (first < off || !value_fetch(w, s, first, b, n)) {
        put_unreadable(w, s, first);
        return;
    }
    uint64_t raw = load_le(b, n < 8 ? n : 8) >> shift;
    if (n == 9)
        raw |= (uint64_t)b[8] << (64 - shift);
    put_intlike(w, t, raw, bit_size);
}

void value_put_text(struct walk *w, const char *bytes, size_t n, bool truncated)
{
    static const char marker[] = "...(truncated)";
    char local[4 * 1024 + sizeof marker]; /* the default 1 KiB string, escaped */
    size_t need = 4 * n + sizeof marker;
    char *clean = need <= sizeof local ? local : malloc(need);
    if (!clean) {
        sb_puts(w->out, "null");
        return;
    }
    size_t len = utf8_sanitize(bytes, n, clean);
    if (truncated)
        memcpy(clean + len, marker, sizeof marker);
    sb_json_string(w->out, clean);
    if (clean != local)
        free(clean);
}

/* The NUL-terminated string at addr: chunks that start small, double, and never
 * cross a page boundary, so the read stops exactly where readable memory ends. */
static void emit_cstring(struct walk *w, uint64_t addr)
{
    size_t want = w->max_string + 1; /* one more byte tells whether it was cut */
    char local[1024 + 1];             /* the default max_string needs no allocation */
    char *buf = want <= sizeof local ? local : malloc(want);
    if (!buf) {
        sb_puts(w->out, "null");
        return;
    }
    size_t got = 0, chunk = 64;
    const char *nul = NULL;
    while (got < want && !nul) {
        size_t to_page_end = PAGE - (size_t)((addr + got) % PAGE);
        size_t n = want - got;
        n = n < chunk ? n : chunk;
        n = n < to_page_end ? n : to_page_end;
        if (addr + got < addr || !w->rd(w->ctx, addr + got, buf + got, n))
            break;
        nul = memchr(buf + got, '\0', n);
        got += n;
        chunk = chunk < PAGE ? chunk * 2 : PAGE;
    }
    if (nul)
        value_put_text(w, buf, (size_t)(nul - buf), false);
    else if (got == 0)
        value_put_hex(w, "<unreadable ", addr, ">");
    else
        value_put_text(w, buf, got < w->max_string ? got : w->max_string, true);
    if (buf != local)
        free(buf);
}

static void emit_char_array(struct walk *w, const struct dw_type *t, const struct span *s,
                            uint64_t off)
{
    if (t->count == 0) {
        if (s->has_addr)
            emit_cstring(w, s->addr + off);
        else
            sb_puts(w->out, "\"\"");
        return;
    }
    size_t n = t->count < w->max_string ? (size_t)t->count : w->max_string;
    char local[1024];
    char *buf = n <= sizeof local ? local : malloc(n);
    if (!buf) {
        sb_puts(w->out, "null");
        return;
    }
    if (!value_fetch(w, s, off, buf, n)) {
        put_unreadable(w, s, off);
    } else {
        const char *nul = memchr(buf, '\0', n);
        value_put_text(w, buf, nul ? (size_t)(nul - buf) : n, !nul && t->count > n);
    }
    if (buf != local)
        free(buf);
}

/* The depth marker of a struct or union beyond the depth shown: "<struct point>",
 * "<struct node at 0x...>" (addr), "<struct order[16]>" (count: an array of them). */
static void put_struct_marker(struct walk *w, const struct dw_type *t, const uint64_t *addr,
                              uint64_t count)
{
    const char *name = t->name ? t->name : "(anonymous)";
    static const char *const keywords[] = {"struct ", "union ", "class "};
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (strncmp(name, keywords[i], strlen(keywords[i])) == 0)
            name += strlen(keywords[i]);
    char text[320]; /* a longer name is cut: a marker only has to be recognizable */
    int n = snprintf(text, sizeof text, "<%s %.256s", t->kind == DWT_UNION ? "union" : "struct",
                     name);
    if (addr)
        snprintf(text + n, sizeof text - (size_t)n, " at 0x%" PRIx64 ">", *addr);
    else if (count)
        snprintf(text + n, sizeof text - (size_t)n, "[%" PRIu64 "]>", count);
    else
        snprintf(text + n, sizeof text - (size_t)n, ">");
    sb_json_string(w->out, text);
}

/* Whether a struct or union at depth is shown by its marker, not its members. */
static bool beyond_depth(const struct walk *w, const struct dw_type *t, int depth)
{
    return depth >= w->max_depth || (depth > 0 && !w->depth_asked && value_is_large(t));
}

static void emit_array(struct walk *w, const struct dw_type *t, const struct span *s,
                       uint64_t off, int depth)
{
    const struct dw_type *elem = t->target;
    if (elem && elem->kind == DWT_CHAR && elem->size == 1) {
        emit_char_array(w, t, s, off);
        return;
    }
    /* Elements that would each be a depth marker make one for the array:
     * "<struct order[16]>", not sixteen "<struct order>". */
    if (elem && (elem->kind == DWT_STRUCT || elem->kind == DWT_UNION) &&
        !elem->system_header && t->count > 1 && beyond_depth(w, elem, depth)) {
        put_struct_marker(w, elem, NULL, t->count);
        return;
    }
    sb_puts(w->out, "[");
    uint64_t shown = 0;
    uint64_t esize = elem ? elem->size : 0;
    for (; elem && shown < t->count && shown < w->max_array && !over_budget(w); shown++) {
        uint64_t eoff;
        if (__builtin_mul_overflow(shown, esize, &eoff) ||
            __builtin_add_overflow(eoff, off, &eoff))
            break;
        if (shown)
            sb_puts(w->out, ",");
        value_emit(w, elem, s, eoff, depth);
    }
    if (shown < t->count)
        sb_printf(w->out, "%s\"...(%" PRIu64 " more)\"", shown ? "," : "", t->count - shown);
    sb_puts(w->out, "]");
}

/* Writes the members of the struct/union at off as "key":value pairs (after a comma
 * unless *first). Returns false when the budget cut them short (a "..." entry was
 * written), so that enclosing inlined members stop too. */
static bool emit_members(struct walk *w, const struct dw_type *t, const struct span *s,
                         uint64_t off, int depth, bool *first)
{
    /* A union is shown by its first member: the others are the same bytes. */
    bool condensed = t->kind == DWT_UNION && t->n_members > 1 && !w->unions_whole;
    size_t n_shown = condensed ? 1 : t->n_members;
    for (size_t i = 0; i < n_shown; i++) {
        const struct dw_member *m = &t->members[i];
        if (over_budget(w)) {
            sb_printf(w->out, "%s\"...\":\"(%zu more)\"", *first ? "" : ",", t->n_members - i);
            *first = false;
            return false;
        }
        uint64_t moff = off + m->offset;
        if (moff < off)
            continue;
        if (!m->name) {
            bool aggregate = m->type && (m->type->kind == DWT_STRUCT ||
                                         m->type->kind == DWT_UNION);
            if (!aggregate)
                continue;
            if (w->nesting >= NESTING_MAX)
                continue;
            w->nesting++;
            bool complete = emit_members(w, m->type, s, moff, depth, first);
            w->nesting--;
            if (!complete)
                return false;
            continue;
        }
        sb_puts(w->out, *first ? "" : ",");
        *first = false;
        sb_json_string(w->out, m->name);
        sb_puts(w->out, ":");
        if (m->bit_size)
            emit_bitfield(w, m->type, s, moff, m->bit_offset, m->bit_size);
        else
            value_emit(w, m->type, s, moff, depth);
    }
    return true;
}

/* The object at off, or the by-value depth marker; ptr adds the "@ptr" key. */
static void emit_struct(struct walk *w, const struct dw_type *t, const struct span *s,
                        uint64_t off, int depth, const uint64_t *ptr)
{
    if (value_emit_std(w, t, s, off, depth))
        return;
    if (beyond_depth(w, t, depth)) {
        put_struct_marker(w, t, ptr, 0);
        return;
    }
    if (value_is_opaque(w, t)) {
        uint64_t at = s->has_addr ? s->addr + off : 0;
        value_emit_opaque(w, t, s, off, ptr ? ptr : s->has_addr ? &at : NULL);
        return;
    }
    bool first = true;
    sb_puts(w->out, "{");
    if (ptr) {
        sb_puts(w->out, "\"@ptr\":");
        value_put_hex(w, "", *ptr, "");
        first = false;
    }
    if (t->kind == DWT_UNION && t->n_members > 1 && !w->unions_whole)
        value_put_union_bytes(w, t, s, off, &first);
    emit_members(w, t, s, off, depth + 1, &first);
    sb_puts(w->out, "}");
}

/* Reads the object of type t at addr into a window and writes it; a struct/union is
 * on the path meanwhile. with_ptr: a struct gets the "@ptr" key. */
static void emit_object_at(struct walk *w, const struct dw_type *t, uint64_t addr,
                           int depth, bool with_ptr)
{
    size_t n = t->size < WINDOW_MAX ? (size_t)t->size : WINDOW_MAX;
    uint8_t window[WINDOW_MAX]; /* on the stack: no allocation per traced call */
    if (n && !w->rd(w->ctx, addr, window, n)) {
        value_put_hex(w, "<unreadable ", addr, ">");
        return;
    }
    struct span s = {.bytes = window, .len = n, .addr = addr, .has_addr = true};
    bool aggregate = t->kind == DWT_STRUCT || t->kind == DWT_UNION;
    bool on_path = aggregate && w->n_path < PATH_MAX_LEN;
    if (on_path)
        w->path[w->n_path++] = addr;
    if (aggregate && with_ptr)
        emit_struct(w, t, &s, 0, depth, &addr);
    else
        value_emit(w, t, &s, 0, depth);
    if (on_path)
        w->n_path--;
}

/* A pointer or reference to a complete struct/union at addr. */
static void follow_struct(struct walk *w, const struct dw_type *t, uint64_t addr, int depth)
{
    for (int i = 0; i < w->n_path; i++)
        if (w->path[i] == addr) {
            value_put_hex(w, "<cycle ", addr, ">");
            return;
        }
    const struct value_ref *seen = value_ref_find(w, addr);
    if (beyond_depth(w, t, depth)) {
        put_struct_marker(w, t, &addr, 0);
    } else if (seen) {
        sb_printf(w->out, "{\"@ptr\":\"0x%" PRIx64 "\",\"@see\":", addr);
        sb_json_string(w->out, seen->where);
        sb_puts(w->out, "}");
    } else {
        if (!value_is_opaque(w, t))
            value_ref_add(w, addr);
        emit_object_at(w, t, addr, depth, true);
    }
}

static void emit_pointer(struct walk *w, const struct dw_type *t, const struct span *s,
                         uint64_t off, int depth)
{
    uint8_t b[8];
    size_t size = t->size ? (size_t)t->size : 8;
    if (size > 8) {
        emit_bytes(w, t, s, off);
        return;
    }
    if (!value_fetch(w, s, off, b, size)) {
        put_unreadable(w, s, off);
        return;
    }
    uint64_t addr = load_le(b, size);
    const struct dw_type *target = t->target;
    bool to_aggregate = target && (target->kind == DWT_STRUCT || target->kind == DWT_UNION) &&
                        target->size > 0;
    if (addr == 0)
        sb_puts(w->out, "null");
    else if (to_aggregate)
        follow_struct(w, target, addr, depth);
    else if (t->kind == DWT_REFERENCE && target && target->size > 0)
        emit_object_at(w, target, addr, depth, false);
    else if (t->kind == DWT_POINTER && target && target->kind == DWT_CHAR && target->size == 1)
        emit_cstring(w, addr);
    else if (target && target->kind == DWT_FUNCTION && w->symbolize)
        value_emit_symbol(w, addr);
    else
        value_put_hex(w, "", addr, "");
}

void value_emit(struct walk *w, const struct dw_type *t, const struct span *s, uint64_t off,
                int depth)
{
    if (!t) {
        sb_puts(w->out, "null");
        return;
    }
    if (w->nesting >= NESTING_MAX) {
        sb_puts(w->out, "\"<too deep>\"");
        return;
    }
    w->nesting++;
    switch (t->kind) {
    case DWT_BOOL:
    case DWT_SIGNED:
    case DWT_UNSIGNED:
    case DWT_CHAR:
    case DWT_ENUM:
        emit_int(w, t, s, off);
        break;
    case DWT_FLOAT:
        emit_float(w, t, s, off);
        break;
    case DWT_POINTER:
    case DWT_REFERENCE:
        emit_pointer(w, t, s, off, depth);
        break;
    case DWT_STRUCT:
    case DWT_UNION:
        emit_struct(w, t, s, off, depth, NULL);
        break;
    case DWT_ARRAY:
        emit_array(w, t, s, off, depth);
        break;
    case DWT_VOID:
    case DWT_FUNCTION:
    default:
        emit_bytes(w, t, s, off);
        break;
    }
    w->nesting--;
}

static void walk_init(struct walk *w, struct strbuf *out, mem_read_fn rd, void *ctx,
                      const struct value_opts *o, const struct dw_type *t)
{
    *w = (struct walk){.out = out, .rd = rd, .ctx = ctx, .start_len = out->len};
    int depth = o && o->max_depth ? o->max_depth : VALUE_DEFAULT_DEPTH;
    w->depth_asked = o && o->depth_asked;
    w->unions_whole = w->depth_asked || (o && o->unions_whole);
    if (!w->depth_asked && value_is_large(t))
        depth = 1;
    w->max_depth = depth < 1 ? 1 : depth > 10 ? 10 : depth;
    if (o) {
        w->symbolize = o->symbolize;
        w->symbolize_ctx = o->symbolize_ctx;
        w->refs = o->refs;
    }
    w->max_string = o && o->max_string ? o->max_string : VALUE_DEFAULT_MAX_STRING;
    w->max_array = o && o->max_array ? o->max_array : VALUE_DEFAULT_MAX_ARRAY;
    w->max_output = o && o->max_output ? o->max_output : VALUE_DEFAULT_MAX_OUTPUT;
}

void value_json(struct strbuf *out, const struct dw_type *t, const void *bytes,
                mem_read_fn rd, void *ctx, const struct value_opts *o)
{
    struct walk w;
    walk_init(&w, out, rd, ctx, o, t);
    struct span s = {.bytes = bytes, .len = t ? t->size : 0};
    value_emit(&w, t, &s, 0, 0);
}

void value_json_at(struct strbuf *out, const struct dw_type *t, uint64_t addr,
                   mem_read_fn rd, void *ctx, const struct value_opts *o)
{
    struct walk w;
    walk_init(&w, out, rd, ctx, o, t);
    if (!t)
        sb_puts(out, "null");
    else
        emit_object_at(&w, t, addr, 0, false);
}
