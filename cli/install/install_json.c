/*
 * install_json.c - the JSON text merge of `strobe install`: a tolerant scanner of
 * JSON with comments and trailing commas that finds members by their byte offsets,
 * and the edits that insert, replace and remove one member. See install_json.h.
 */
#include "cli/install/install_json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define MAX_DEPTH 256

struct scan {
    const char *s;
    size_t n, i;
    const char *err; /* what is wrong at err_at, NULL while all is well */
    size_t err_at;
};

struct member {
    size_t key, key_end;     /* the key with its quotes */
    size_t value, value_end; /* the value's text */
    size_t comma;            /* the comma after the value, or SIZE_MAX */
};

struct object {
    size_t open, close; /* offsets of '{' and '}' */
    struct member *m;
    size_t count;
};

static bool fail(struct scan *sc, const char *what)
{
    if (!sc->err) {
        sc->err = what;
        sc->err_at = sc->i;
    }
    return false;
}

/* Skips whitespace and comments. */
static bool skip_space(struct scan *sc)
{
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            sc->i++;
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '/') {
            while (sc->i < sc->n && sc->s[sc->i] != '\n')
                sc->i++;
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '*') {
            const char *end = memmem(sc->s + sc->i + 2, sc->n - sc->i - 2, "*/", 2);
            if (!end)
                return fail(sc, "a comment is not closed");
            sc->i = (size_t)(end - sc->s) + 2;
        } else {
            break;
        }
    }
    return true;
}

static bool scan_string(struct scan *sc)
{
    for (sc->i++; sc->i < sc->n; sc->i++) {
        char c = sc->s[sc->i];
        if (c == '\\')
            sc->i++;
        else if (c == '"') {
            sc->i++;
            return true;
        } else if (c == '\n')
            break;
    }
    return fail(sc, "a string is not closed");
}

static bool scan_value(struct scan *sc, int depth);

/* Scans the object at sc->i; with o, records its members. */
static bool scan_object(struct scan *sc, int depth, struct object *o)
{
    size_t open = sc->i++, cap = 0;
    if (o)
        *o = (struct object){.open = open};
    for (;;) {
        if (!skip_space(sc))
            return false;
        if (sc->i >= sc->n)
            return fail(sc, "an object is not closed");
        if (sc->s[sc->i] == '}')
            break;
        if (sc->s[sc->i] != '"')
            return fail(sc, "expected a member name in double quotes");
        struct member m = {.key = sc->i, .comma = SIZE_MAX};
        if (!scan_string(sc))
            return false;
        m.key_end = sc->i;
        if (!skip_space(sc))
            return false;
        if (sc->i >= sc->n || sc->s[sc->i] != ':')
            return fail(sc, "expected ':' after a member name");
        sc->i++;
        if (!skip_space(sc))
            return false;
        m.value = sc->i;
        if (!scan_value(sc, depth + 1))
            return false;
        m.value_end = sc->i;
        if (!skip_space(sc))
            return false;
        bool more = sc->i < sc->n && sc->s[sc->i] == ',';
        if (more)
            m.comma = sc->i++;
        if (o) {
            if (o->count == cap) {
                cap = cap ? cap * 2 : 16;
                struct member *grown = realloc(o->m, cap * sizeof *grown);
                if (!grown)
                    return fail(sc, "out of memory");
                o->m = grown;
            }
            o->m[o->count++] = m;
        }
        if (!more) {
            if (!skip_space(sc))
                return false;
            if (sc->i >= sc->n || sc->s[sc->i] != '}')
                return fail(sc, "expected ',' or '}' after a member");
            break;
        }
    }
    if (o)
        o->close = sc->i;
    sc->i++;
    return true;
}

static bool scan_array(struct scan *sc, int depth)
{
    sc->i++;
    for (;;) {
        if (!skip_space(sc))
            return false;
        if (sc->i >= sc->n)
            return fail(sc, "an array is not closed");
        if (sc->s[sc->i] == ']')
            break;
        if (!scan_value(sc, depth + 1) || !skip_space(sc))
            return false;
        if (sc->i < sc->n && sc->s[sc->i] == ',') {
            sc->i++;
            continue;
        }
        if (sc->i >= sc->n || sc->s[sc->i] != ']')
            return fail(sc, "expected ',' or ']' in an array");
        break;
    }
    sc->i++;
    return true;
}

static bool scan_value(struct scan *sc, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(sc, "values are nested too deeply");
    if (sc->i >= sc->n)
        return fail(sc, "expected a value");
    char c = sc->s[sc->i];
    if (c == '{')
        return scan_object(sc, depth, NULL);
    if (c == '[')
        return scan_array(sc, depth);
    if (c == '"')
        return scan_string(sc);
    size_t start = sc->i;
    while (sc->i < sc->n && strchr("+-.0123456789abcdefghijklmnopqrstuvwxyzE", sc->s[sc->i]))
        sc->i++;
    if (sc->i == start)
        return fail(sc, "expected a value");
    return true;
}

static int line_of(const char *s, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at; i++)
        line += s[i] == '\n';
    return line;
}

static bool key_is(const char *s, const struct member *m, const char *key)
{
    size_t n = strlen(key);
    return m->key_end - m->key == n + 2 && memcmp(s + m->key + 1, key, n) == 0;
}

static struct member *find(const char *s, struct object *o, const char *key)
{
    for (size_t i = 0; i < o->count; i++)
        if (key_is(s, &o->m[i], key))
            return &o->m[i];
    return NULL;
}

/* Leading whitespace of the line holding offset at. */
static void line_indent(const char *s, size_t at, struct strbuf *out)
{
    size_t b = at;
    while (b > 0 && s[b - 1] != '\n')
        b--;
    size_t e = b;
    while (e < at && (s[e] == ' ' || s[e] == '\t'))
        e++;
    sb_append(out, s + b, e - b);
}

/* The file's indentation step: that of the top-level object's first member. */
static void indent_unit(const char *s, const struct object *top, struct strbuf *out)
{
    if (top->count) {
        struct strbuf outer = {0}, inner = {0};
        line_indent(s, top->open, &outer);
        line_indent(s, top->m[0].key, &inner);
        bool own_line = memchr(s + top->open, '\n', top->m[0].key - top->open) != NULL;
        if (own_line && inner.len > outer.len)
            sb_append(out, inner.buf + outer.len, inner.len - outer.len);
        sb_free(&outer);
        sb_free(&inner);
    }
    if (!out->len)
        sb_puts(out, "  ");
}

/* Parses the whole document; *top gets the top-level object's members. */
static bool parse_top(struct scan *sc, struct object *top)
{
    if (!skip_space(sc))
        return false;
    if (sc->i >= sc->n || sc->s[sc->i] != '{')
        return fail(sc, "the top level is not a JSON object");
    if (!scan_object(sc, 0, top) || !skip_space(sc))
        return false;
    if (sc->i < sc->n)
        return fail(sc, "there is text after the top-level object");
    return true;
}

static bool parse_object_at(struct scan *sc, size_t at, struct object *o)
{
    sc->i = at;
    return scan_object(sc, 0, o);
}

static enum edit_result report(struct scan *sc, char *err, size_t errlen)
{
    snprintf(err, errlen, "line %d: %s", line_of(sc->s, sc->err_at), sc->err);
    return EDIT_ERROR;
}

/* The splice that puts member text `mtext` first in object o. */
static void insert_first(const char *s, const struct object *o, const char *unit,
                         const char *mtext, struct splice *sp)
{
    struct strbuf ind = {0}, ins = {0};
    line_indent(s, o->open, &ind);
    size_t interior = o->close - o->open - 1;
    bool newline_after = memchr(s + o->open + 1, '\n', interior) != NULL;
    if (o->count && !newline_after) {
        sb_printf(&ins, "%s, ", mtext); /* an object on one line stays on one line */
    } else {
        sb_printf(&ins, "\n%s%s%s", ind.buf ? ind.buf : "", unit, mtext);
        if (o->count)
            sb_puts(&ins, ",");
        else if (interior == 0)
            sb_printf(&ins, "\n%s", ind.buf ? ind.buf : "");
    }
    sp->at = o->open + 1;
    sp->del = 0;
    sp->ins = sb_take(&ins);
    sb_free(&ind);
}

enum edit_result jsonc_set(const char *text, size_t len, const char *parent, const char *key,
                           const char *value, struct splice *sp, char *err, size_t errlen)
{
    *sp = (struct splice){0};
    struct scan sc = {.s = text, .n = len};
    if (!skip_space(&sc))
        return report(&sc, err, errlen);
    if (sc.i == len) { /* empty: a new document */
        size_t new_len;
        struct splice whole = {.at = 0, .del = len, .ins = (char *)"{}\n"};
        char *doc = splice_apply(text, len, &whole, &new_len);
        struct splice inner;
        enum edit_result r = jsonc_set(doc, new_len, parent, key, value, &inner, err, errlen);
        if (r == EDIT_CHANGE) {
            sp->ins = splice_apply(doc, new_len, &inner, &new_len);
            sp->del = len;
        }
        splice_free(&inner);
        free(doc);
        return r;
    }
    sc.i = 0;
    struct object top = {0}, par = {0};
    enum edit_result r = EDIT_ERROR;
    struct strbuf unit = {0}, mtext = {0}, ind = {0};
    if (!parse_top(&sc, &top)) {
        r = report(&sc, err, errlen);
        goto out;
    }
    indent_unit(text, &top, &unit);
    struct member *pm = find(text, &top, parent);
    if (!pm) {
        line_indent(text, top.open, &ind);
        bool one_line = top.count && !memchr(text + top.open, '\n', top.m[0].key - top.open);
        if (one_line)
            sb_printf(&mtext, "\"%s\": {\"%s\": %s}", parent, key, value);
        else
            sb_printf(&mtext, "\"%s\": {\n%s%s%s\"%s\": %s\n%s%s}", parent,
                      ind.len ? ind.buf : "", unit.buf, unit.buf, key, value,
                      ind.len ? ind.buf : "", unit.buf);
        insert_first(text, &top, unit.buf, mtext.buf, sp);
        r = EDIT_CHANGE;
        goto out;
    }
    if (text[pm->value] != '{') {
        snprintf(err, errlen, "line %d: \"%s\" is not an object", line_of(text, pm->value),
                 parent);
        goto out;
    }
    parse_object_at(&sc, pm->value, &par);
    struct member *km = find(text, &par, key);
    if (km) {
        size_t n = strlen(value);
        if (km->value_end - km->value == n && memcmp(text + km->value, value, n) == 0) {
            r = EDIT_NONE;
            goto out;
        }
        *sp = (struct splice){.at = km->value, .del = km->value_end - km->value,
                              .ins = strdup(value)};
        r = EDIT_CHANGE;
        goto out;
    }
    sb_printf(&mtext, "\"%s\": %s", key, value);
    insert_first(text, &par, unit.buf, mtext.buf, sp);
    r = EDIT_CHANGE;
out:
    free(top.m);
    free(par.m);
    sb_free(&unit);
    sb_free(&mtext);
    sb_free(&ind);
    return r;
}

/* Does jsonc_set on text with cut removed give back text? Then cut undoes it. */
static bool undoes_set(const char *text, size_t len, size_t from, size_t to, const char *parent,
                       const char *key, const char *value)
{
    struct splice cut = {.at = from, .del = to - from, .ins = (char *)""}, again;
    size_t cut_len, back_len;
    char *before = splice_apply(text, len, &cut, &cut_len), err[16];
    bool same = false;
    if (jsonc_set(before, cut_len, parent, key, value, &again, err, sizeof err) == EDIT_CHANGE) {
        char *back = splice_apply(before, cut_len, &again, &back_len);
        same = back_len == len && memcmp(back, text, len) == 0;
        free(back);
    }
    splice_free(&again);
    free(before);
    return same;
}

/* Candidate cuts removing member m of object o, the likeliest inverse of set first. */
static size_t cuts(const struct object *o, const struct member *m, size_t out[][2])
{
    size_t n = 0, idx = (size_t)(m - o->m);
    if (idx == 0 && m->comma != SIZE_MAX) {
        out[n][0] = o->open + 1;
        out[n++][1] = m->comma + 1;
    }
    if (o->count == 1) {
        out[n][0] = o->open + 1;
        out[n++][1] = o->close;
        out[n][0] = o->open + 1;
        out[n++][1] = m->value_end;
    }
    if (idx > 0) { /* the general case: the previous value's comma and this member */
        out[n][0] = o->m[idx - 1].value_end;
        out[n++][1] = m->value_end;
    } else if (o->count > 1) {
        out[n][0] = m->key;
        out[n++][1] = o->m[1].key;
    } else if (m->comma != SIZE_MAX) { /* a sole member with a trailing comma */
        out[n][0] = o->open + 1;
        out[n++][1] = m->comma + 1;
    }
    return n;
}

enum edit_result jsonc_remove(const char *text, size_t len, const char *parent,
                              const char *key, struct splice *sp, char *err, size_t errlen)
{
    *sp = (struct splice){0};
    struct scan sc = {.s = text, .n = len};
    struct object top = {0}, par = {0};
    enum edit_result r = EDIT_NONE;
    if (!skip_space(&sc))
        return report(&sc, err, errlen);
    if (sc.i == len)
        return EDIT_NONE;
    sc.i = 0;
    if (!parse_top(&sc, &top)) {
        r = report(&sc, err, errlen);
        goto out;
    }
    struct member *pm = find(text, &top, parent);
    if (!pm || text[pm->value] != '{')
        goto out;
    parse_object_at(&sc, pm->value, &par);
    struct member *km = find(text, &par, key);
    if (!km)
        goto out;
    char *value = strndup(text + km->value, km->value_end - km->value);
    size_t c[4][2], n;
    bool found = false;
    if (par.count == 1) { /* the parent may be set's own */
        n = cuts(&top, pm, c);
        for (size_t i = 0; i < n && !found; i++)
            if ((found = undoes_set(text, len, c[i][0], c[i][1], parent, key, value)))
                *sp = (struct splice){.at = c[i][0], .del = c[i][1] - c[i][0]};
    }
    n = cuts(&par, km, c);
    for (size_t i = 0; i < n && !found; i++)
        if ((found = undoes_set(text, len, c[i][0], c[i][1], parent, key, value)))
            *sp = (struct splice){.at = c[i][0], .del = c[i][1] - c[i][0]};
    if (!found) /* not set's shape (written by hand): the general cut */
        *sp = (struct splice){.at = c[n - 1][0], .del = c[n - 1][1] - c[n - 1][0]};
    sp->ins = strdup("");
    free(value);
    r = EDIT_CHANGE;
out:
    free(top.m);
    free(par.m);
    return r;
}
