/*
 * xml.h - XML for the test adapters, read with expat: a report given whole (a
 * JUnit file, a reporter's complete stdout) or fed piece by piece as it arrives (a
 * reporter streaming to stdout, read for live progress). The caller sees each
 * element's start with its attributes and its end with the text directly inside it
 * (character data of its children is theirs), and the depth of both.
 *
 * A document that breaks off (a killed run) or goes wrong (a test printing into the
 * reporter's stream) stops the reader at that point: everything before it has been
 * delivered, and xml_error() says where and why. Expat never loads external
 * entities and caps entity expansion, so a report cannot reach outside itself.
 */
#ifndef STROBE_TESTRUN_XML_H
#define STROBE_TESTRUN_XML_H

#include <stdbool.h>
#include <stddef.h>

#define XML_TEXT_MAX (1 << 20)   /* text kept per element; the rest is dropped */

struct xml_callbacks {
    /* An element begins. attrs: name, value, name, value, ..., NULL. depth 0 is
     * the root element. */
    void (*start)(void *ud, const char *name, const char **attrs, int depth);
    /* It ends. text: its own character data (NUL-terminated, len bytes; at most
     * XML_TEXT_MAX). */
    void (*end)(void *ud, const char *name, const char *text, size_t len, int depth);
    void *ud;
};

struct xml_reader;

/* A reader for one document; NULL when memory runs out. */
struct xml_reader *xml_open(const struct xml_callbacks *cb);
/* Parses the next len bytes; last: the document ends with them. 0, or -1 once the
 * document is malformed (or memory ran out): then every later feed returns -1
 * without calling back. */
int xml_feed(struct xml_reader *x, const char *buf, size_t len, bool last);
/* Why the reader stopped ("line 12: mismatched tag"), "" when it did not. */
const char *xml_error(const struct xml_reader *x);
void xml_close(struct xml_reader *x);

/* A whole document: 0 when it is complete and well formed, else -1 with the
 * reason in err (the callbacks have seen everything before the fault). */
int xml_parse(const char *buf, size_t len, const struct xml_callbacks *cb, char *err,
              size_t errlen);

/* The value of attribute name in attrs, NULL when absent. */
const char *xml_attr(const char **attrs, const char *name);

#endif
