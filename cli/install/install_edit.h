/*
 * install_edit.h - one text edit of a configuration file, the unit every format of
 * `strobe install` computes (install_json.c, install_block.c) and its driver
 * (install.c) applies or prints. A user's file is never re-serialized: an edit
 * deletes `del` bytes at `at` and puts `ins` there, so every other byte stays.
 */
#ifndef STROBE_INSTALL_EDIT_H
#define STROBE_INSTALL_EDIT_H

#include <stddef.h>

struct splice {
    size_t at, del; /* the bytes replaced */
    char *ins;      /* their replacement (malloc'd, may be ""), NULL when no edit */
};

enum edit_result {
    EDIT_ERROR = -1, /* the text does not parse: err says where, nothing to apply */
    EDIT_NONE = 0,   /* already as asked */
    EDIT_CHANGE = 1, /* apply *sp */
};

/* Returns text with sp applied (malloc'd, NUL-terminated), its length in *out_len. */
char *splice_apply(const char *text, size_t len, const struct splice *sp, size_t *out_len);
void splice_free(struct splice *sp);

#endif
