/*
 * value_short.c - one-line renderings of value JSON. See value_short.h.
 *
 * A small recursive reader over the JSON text: it writes as it reads and, once the
 * output is at its limit, keeps reading only to find where the value ends.
 */
#include "dwarf/value_short.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026, 3 bytes */
#define STRING_SHOWN 24
#define NESTED_SHOWN 2

struct reader {
    const char *p;
    struct strbuf *out;
    size_t end;   /* out->len beyond which nothing more is written */
    bool cut;     /* the ellipsis was written */
    size_t bonus; /* bytes of addresses written, on top of the limit (put_address) */
};

static void skip_ws(struct reader *r)
{
    while (*r->p && isspace((unsigned char)*r->p))
        r->p++;
}

/* Writes n bytes unless the limit is reached; then the ellipsis, once. */
static void put(struct reader *r, const char *s, size_t n)
{
    if (r->cut)
        return;
    if (r->out->len + n > r->end) {
        sb_puts(r->out, ELLIPSIS);
        r->cut = true;
        return;
    }
    sb_append(r->out, s, n);
}

static void puts_r(struct reader *r, const char *s) { put(r, s, strlen(s)); }

/* Steps over c; false (and stays, even at the end of the text) when it is not next. */
static bool expect(struct reader *r, char c)
{
    if (*r->p != c)
        return false;
    r->p++;
    return true;
}

/* Reads a JSON string's raw text (escapes kept) into [*start, *len); false when the
 * text ends first. */
static bool read_string(struct reader *r, const char **start, size_t *len)
{
    if (*r->p != '"')
        return false;
    *start = ++r->p;
    while (*r->p && *r->p != '"')
        r->p += r->p[0] == '\\' && r->p[1] ? 2 : 1;
    if (!*r->p)
        return false;
    *len = (size_t)(r->p - *start);
    r->p++;
    return true;
}

static bool is_marker(const char *s, size_t n)
{
    return (n > 2 && s[0] == '<' && s[n - 1] == '>') ||
           (n > 2 && s[0] == '0' && s[1] == 'x');
}

static void put_string(struct reader *r, const char *s, size_t n)
{
    if (is_marker(s, n)) {
        put(r, s, n);
        return;
    }
    size_t shown = n < STRING_SHOWN ? n : STRING_SHOWN;
    /* a string longer than the room left shows its start, not just the ellipsis */
    size_t room = r->end > r->out->len ? r->end - r->out->len : 0;
    size_t tail = 2 + strlen(ELLIPSIS); /* both quotes and the ellipsis */
    if (shown + tail > room && room > tail + 4)
        shown = room - tail;
    if (shown < n) {
        while (shown > 0 && ((unsigned char)s[shown] & 0xc0) == 0x80)
            shown--; /* not inside a UTF-8 sequence */
        if (shown > 0 && s[shown - 1] == '\\')
            shown--; /* nor inside an escape */
    }
    puts_r(r, "\"");
    put(r, s, shown);
    puts_r(r, shown < n ? ELLIPSIS "\"" : "\"");
}

static bool value(struct reader *r, int level);

/* The closing character of a container whose opening one was written: after the
 * ellipsis too, which may go past the limit by one byte a level (at most
 * NESTED_SHOWN + 1), so that a cut value still reads as a whole ("t={s=..., …}"). */
static void close_container(struct reader *r, bool opened, const char *close)
{
    if (!r->cut)
        puts_r(r, close);
    else if (opened)
        sb_puts(r->out, close);
}

/* Where next_element stopped in an object or an array. */
enum step {
    STEP_ELEMENT,   /* at the start of an element (after its separating comma) */
    STEP_END,       /* past the closing character */
    STEP_BAD,       /* not JSON: neither the end nor a comma where one is due */
};

/* Steps over blanks, then over close when the container ends here, else over the
 * comma that comes before every element but the first, and the blanks after it. */
static enum step next_element(struct reader *r, char close, bool first)
{
    skip_ws(r);
    if (*r->p == close) {
        r->p++;
        return STEP_END;
    }
    if (!first) {
        if (*r->p != ',')
            return STEP_BAD;
        r->p++;
        skip_ws(r);
    }
    return STEP_ELEMENT;
}

/* Reads one value without writing it; false when the text is not JSON. */
static bool skip_value(struct reader *r, int level)
{
    struct strbuf sink = {0};
    struct reader skip = {.p = r->p, .out = &sink, .end = 0, .cut = true};
    bool ok = value(&skip, level);
    r->p = skip.p;
    sb_free(&sink);
    return ok;
}

/* "@0x55e4c0a1b2a0 " before an object a pointer led to (its "@ptr" key comes first,
 * dwarf/value.c): the address is the evidence of a use-after-free or of two names
 * for one object, so the short form keeps it. Reads ahead without moving r. */
static void put_address(struct reader *r)
{
    const char *p = r->p;
    while (isspace((unsigned char)*p))
        p++;
    if (strncmp(p, "\"@ptr\"", 6) != 0)
        return;
    for (p += 6; isspace((unsigned char)*p) || *p == ':'; p++)
        ;
    if (*p != '"')
        return;
    const char *end = strchr(++p, '"');
    if (!end || end - p > 18 || r->cut)
        return;
    r->end += (size_t)(end - p) + 2; /* on top of the limit: the fields keep their room */
    r->bonus += (size_t)(end - p) + 2;
    puts_r(r, "@");
    put(r, p, (size_t)(end - p));
    puts_r(r, " ");
}

/* The members of an object, after its "{". */
static bool object(struct reader *r, int level)
{
    bool shown_any = false;
    const char *opaque = NULL;
    size_t opaque_len = 0;
    put_address(r);
    size_t open_at = r->out->len;
    puts_r(r, level > NESTED_SHOWN ? "{" ELLIPSIS "}" : "{");
    bool opened = !r->cut;
    for (bool first = true;; first = false) {
        enum step step = next_element(r, '}', first);
        if (step == STEP_END)
            break;
        if (step == STEP_BAD)
            return false;
        const char *key;
        size_t key_len;
        if (!read_string(r, &key, &key_len))
            return false;
        skip_ws(r);
        if (!expect(r, ':'))
            return false;
        skip_ws(r);
        /* the meta keys stay out (@ptr, @bytes, @see) but a container's size and
         * elements (value_std.c), which are its value */
        bool shown_meta = (key_len == 5 && strncmp(key, "@size", 5) == 0) ||
                          (key_len == 9 && strncmp(key, "@elements", 9) == 0);
        bool hidden = key_len && key[0] == '@' && !shown_meta;
        bool is_opaque = key_len == 7 && strncmp(key, "@opaque", 7) == 0;
        if (is_opaque && *r->p == '"') {
            if (!read_string(r, &opaque, &opaque_len))
                return false;
            continue;
        }
        if (hidden || level > NESTED_SHOWN) {
            if (!skip_value(r, level + 1))
                return false;
            continue;
        }
        if (shown_any)
            puts_r(r, ", ");
        shown_any = true;
        put(r, key + shown_meta, key_len - shown_meta);
        puts_r(r, "=");
        if (!value(r, level + 1))
            return false;
    }
    if (level > NESTED_SHOWN)
        return true;
    if (opaque && !shown_any && !r->cut) { /* only the opaque text: no braces */
        r->out->len = open_at;
        r->out->buf[open_at] = '\0';
        put(r, opaque, opaque_len);
        return true;
    }
    close_container(r, opened, "}");
    return true;
}

static bool array(struct reader *r, int level)
{
    puts_r(r, level > NESTED_SHOWN ? "[" ELLIPSIS "]" : "[");
    bool opened = !r->cut;
    for (bool first = true;; first = false) {
        enum step step = next_element(r, ']', first);
        if (step == STEP_END)
            break;
        if (step == STEP_BAD)
            return false;
        if (level > NESTED_SHOWN) {
            if (!skip_value(r, level + 1))
                return false;
            continue;
        }
        if (!first)
            puts_r(r, ", ");
        if (!value(r, level + 1))
            return false;
    }
    if (level <= NESTED_SHOWN)
        close_container(r, opened, "]");
    return true;
}

static bool value(struct reader *r, int level)
{
    skip_ws(r);
    if (level > 64)
        return false;
    const char *s;
    size_t n;
    switch (*r->p) {
    case '{':
        r->p++;
        return object(r, level);
    case '[':
        r->p++;
        return array(r, level);
    case '"':
        if (!read_string(r, &s, &n))
            return false;
        put_string(r, s, n);
        return true;
    default:
        s = r->p;
        while (*r->p && !strchr(",}] \t\r\n", *r->p))
            r->p++;
        if (r->p == s)
            return false;
        put(r, s, (size_t)(r->p - s));
        return true;
    }
}

void value_short(struct strbuf *out, const char *json, size_t limit)
{
    struct reader r = {.p = json ? json : "null", .out = out, .end = out->len + limit};
    value(&r, 0);
}

void value_short_args(struct strbuf *out, const char *json, size_t limit)
{
    struct reader r = {.p = json ? json : "[]", .out = out};
    size_t start = out->len, n_args = 0;
    for (const char *p = r.p; (p = strstr(p, "{\"name\":")) != NULL; p++)
        n_args++; /* exact: inside a string value its quotes would be escaped */
    skip_ws(&r);
    if (!expect(&r, '['))
        return;
    for (size_t i = 0;; i++) {
        skip_ws(&r);
        if (*r.p == ',')
            r.p++, skip_ws(&r);
        if (*r.p != '{')
            return;
        r.p++;
        size_t used = out->len - start - r.bonus;
        size_t left = used < limit ? limit - used : 0;
        size_t share = n_args > i ? left / (n_args - i) : left;
        r.cut = false;
        if (i)
            sb_puts(out, ", ");
        r.end = out->len + share;
        /* {"name":N,"value":V} */
        const char *key, *name = NULL;
        size_t key_len, name_len = 0;
        for (bool first = true;; first = false) {
            enum step step = next_element(&r, '}', first);
            if (step == STEP_END)
                break;
            if (step == STEP_BAD)
                return;
            if (!read_string(&r, &key, &key_len))
                return;
            skip_ws(&r);
            if (!expect(&r, ':'))
                return;
            skip_ws(&r);
            if (key_len == 4 && strncmp(key, "name", 4) == 0 && *r.p == '"') {
                if (!read_string(&r, &name, &name_len))
                    return;
            } else if (key_len == 5 && strncmp(key, "value", 5) == 0) {
                put(&r, name ? name : "?", name ? name_len : 1);
                puts_r(&r, "=");
                if (!value(&r, 0))
                    return;
            } else if (!skip_value(&r, 0)) {
                return;
            }
        }
    }
}
