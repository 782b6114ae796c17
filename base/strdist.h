/*
 * strdist.h - how far apart two names are (Levenshtein distance), for "did you
 * mean" suggestions: an unknown global variable (dwarf/globals.c), an unknown
 * strobectl verb (cli/ctl/verbs/ctl_verbs.c).
 */
#ifndef STROBE_STRDIST_H
#define STROBE_STRDIST_H

/* Only this many leading characters of each name are compared. */
#define STRDIST_MAXLEN 127

/* The number of single-character insertions, deletions and substitutions that turn
 * a into b, or cap + 1 as soon as it is sure to exceed cap (cap >= 0). */
int str_distance(const char *a, const char *b, int cap);

#endif
