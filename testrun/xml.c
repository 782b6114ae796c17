/*
 * xml.c - the expat reader of xml.h: one parser per document, a text buffer per
 * open element (up to XML_DEPTH_MAX levels; deeper elements are reported with no
 * text), and a sticky error once expat refuses the input.
 */
#include "testrun/xml.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define XML_DEPTH_MAX 64

struct xml_reader {
    XML_Parser p;
    struct xml_callbacks cb;
    int depth;                         /* elements open */
    struct strbuf text[XML_DEPTH_MAX]; /* the text of each open element */
    bool failed;
    char error[160];
};

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct xml_reader *x = ud;
    if (x->depth < XML_DEPTH_MAX)
        x->text[x->depth].len = 0;
    if (x->cb.start)
        x->cb.start(x->cb.ud, name, attrs, x->depth);
    x->depth++;
}

static void on_end(void *ud, const XML_Char *name)
{
    struct xml_reader *x = ud;
    x->depth--;
    const char *text = "";
    size_t len = 0;
    if (x->depth < XML_DEPTH_MAX && x->text[x->depth].buf) {
        text = x->text[x->depth].buf;
        len = x->text[x->depth].len;
    }
    if (x->cb.end)
        x->cb.end(x->cb.ud, name, text, len, x->depth);
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    struct xml_reader *x = ud;
    int d = x->depth - 1;
    if (d < 0 || d >= XML_DEPTH_MAX || len <= 0)
        return;
    struct strbuf *sb = &x->text[d];
    size_t room = sb->len < XML_TEXT_MAX ? XML_TEXT_MAX - sb->len : 0;
    sb_append(sb, s, (size_t)len < room ? (size_t)len : room);
}

struct xml_reader *xml_open(const struct xml_callbacks *cb)
{
    struct xml_reader *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->p = XML_ParserCreate(NULL);
    if (!x->p) {
        free(x);
        return NULL;
    }
    x->cb = *cb;
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, on_start, on_end);
    XML_SetCharacterDataHandler(x->p, on_text);
    return x;
}

int xml_feed(struct xml_reader *x, const char *buf, size_t len, bool last)
{
    if (x->failed)
        return -1;
    /* expat takes an int length: long input goes in slices. */
    do {
        size_t n = len > (1u << 30) ? (1u << 30) : len;
        bool final = last && n == len;
        if (XML_Parse(x->p, buf, (int)n, final) != XML_STATUS_OK) {
            x->failed = true;
            snprintf(x->error, sizeof x->error, "line %lu: %s",
                     (unsigned long)XML_GetCurrentLineNumber(x->p),
                     XML_ErrorString(XML_GetErrorCode(x->p)));
            return -1;
        }
        buf += n;
        len -= n;
    } while (len > 0);
    for (int i = 0; i < XML_DEPTH_MAX; i++)
        if (x->text[i].oom) {
            x->failed = true;
            snprintf(x->error, sizeof x->error, "out of memory");
            return -1;
        }
    return 0;
}

const char *xml_error(const struct xml_reader *x)
{
    return x->error;
}

void xml_close(struct xml_reader *x)
{
    if (!x)
        return;
    XML_ParserFree(x->p);
    for (int i = 0; i < XML_DEPTH_MAX; i++)
        sb_free(&x->text[i]);
    free(x);
}

int xml_parse(const char *buf, size_t len, const struct xml_callbacks *cb, char *err,
              size_t errlen)
{
    struct xml_reader *x = xml_open(cb);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = xml_feed(x, buf, len, true);
    if (rc != 0)
        snprintf(err, errlen, "%s", x->error);
    xml_close(x);
    return rc;
}

const char *xml_attr(const char **attrs, const char *name)
{
    for (; attrs && attrs[0]; attrs += 2)
        if (strcmp(attrs[0], name) == 0)
            return attrs[1];
    return NULL;
}
