/*
 * install_edit.c - applying one text edit of `strobe install`. See install_edit.h.
 */
#include "cli/install/install_edit.h"

#include <stdlib.h>
#include <string.h>

char *splice_apply(const char *text, size_t len, const struct splice *sp, size_t *out_len)
{
    size_t ins = strlen(sp->ins);
    size_t n = len - sp->del + ins;
    char *out = malloc(n + 1);
    if (!out)
        abort();
    memcpy(out, text, sp->at);
    memcpy(out + sp->at, sp->ins, ins);
    memcpy(out + sp->at + ins, text + sp->at + sp->del, len - sp->at - sp->del);
    out[n] = '\0';
    *out_len = n;
    return out;
}

void splice_free(struct splice *sp)
{
    free(sp->ins);
    sp->ins = NULL;
}
