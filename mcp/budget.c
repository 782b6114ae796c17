/*
 * budget.c - every tool answer within answers.maxBytes (default 16 KB): the last step
 * before an answer leaves the server. See budget.h.
 *
 * The tools cut their own answers first, where they know what matters and how to get
 * the rest (debug_query pages with offset and afterEventId, stacks drop the least
 * telling threads' frames, test runs list failures first). This is the net under
 * them: what is still too big is cut here, blindly but visibly. The largest part
 * goes first, as it is where the bytes are: an array or object loses its last
 * members, a long string its tail; each cut is named in the `truncated` sentence so
 * the agent knows what it is not seeing and can ask for it alone.
 */
#include "mcp/budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/session.h"
#include "core/settings.h"

/* A cut node's path is named in the sentence up to this many of them. */
#define CUTS_NAMED 4
#define PATH_MAX_LEN 96
/* Strings shorter than this are never cut (names, ids, small values). */
#define STRING_CUT_MIN 256

size_t tool_answer_budget(void)
{
    struct settings s;
    sessions_settings(NULL, &s);
    return (size_t)s.answers_max_bytes;
}

size_t tool_json_size(const cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    size_t n = s ? strlen(s) : 0;
    free(s);
    return n;
}

struct heaviest {
    cJSON *node;
    size_t size;
    char path[PATH_MAX_LEN];
};

static void child_path(char *out, const char *parent, const cJSON *child, int index)
{
    if (child->string)
        snprintf(out, PATH_MAX_LEN, "%s%s%s", parent, *parent ? "." : "", child->string);
    else
        snprintf(out, PATH_MAX_LEN, "%s[%d]", parent, index);
}

/* The largest node that can be made smaller: a container of two members or more,
 * or a long string. The walk goes down the heaviest branch only: the cut belongs
 * where the bytes are, and a small sibling is never worth cutting first. */
static void find_heaviest(cJSON *node, const char *path, struct heaviest *h)
{
    size_t size = tool_json_size(node);
    bool cuttable = (cJSON_IsString(node) && size > STRING_CUT_MIN) ||
                    ((cJSON_IsArray(node) || cJSON_IsObject(node)) && node->child &&
                     node->child->next);
    if (cuttable && size > h->size) {
        h->node = node;
        h->size = size;
        snprintf(h->path, sizeof h->path, "%s", *path ? path : "(the answer)");
    }
    cJSON *big = NULL;
    size_t big_size = 0;
    int i = 0, big_i = 0;
    for (cJSON *c = (cJSON_IsArray(node) || cJSON_IsObject(node)) ? node->child : NULL; c;
         c = c->next, i++) {
        size_t cs = tool_json_size(c);
        if (cs > big_size) {
            big = c;
            big_size = cs;
            big_i = i;
        }
    }
    /* A child holding most of the bytes is the better cut: it keeps its siblings. */
    if (big && big_size * 2 > size) {
        char p[PATH_MAX_LEN];
        child_path(p, path, big, big_i);
        h->size = 0;
        find_heaviest(big, p, h);
    }
}

/* Cuts node by about excess bytes; a sentence fragment saying what went into what. */
static void cut(cJSON *node, size_t excess, const char *path, char *what, size_t cap)
{
    if (cJSON_IsString(node)) {
        size_t len = strlen(node->valuestring);
        size_t keep = len > excess + 64 ? len - excess - 64 : 0;
        while (keep > 0 && ((unsigned char)node->valuestring[keep] & 0xC0) == 0x80)
            keep--; /* never split a UTF-8 sequence */
        char *s = malloc(keep + 48);
        if (!s)
            return;
        memcpy(s, node->valuestring, keep);
        snprintf(s + keep, 48, "...(%zu more bytes)", len - keep);
        cJSON_SetValuestring(node, s);
        free(s);
        snprintf(what, cap, "%s (text cut)", path);
        return;
    }
    int n = cJSON_GetArraySize(node), dropped = 0;
    size_t freed = 0;
    while (n - dropped > 1 && freed < excess) {
        cJSON *last = cJSON_GetArrayItem(node, n - dropped - 1);
        freed += tool_json_size(last) + 1;
        cJSON_Delete(cJSON_DetachItemViaPointer(node, last));
        dropped++;
    }
    snprintf(what, cap, "%s (last %d of %d %s left out)", path, dropped, n,
             cJSON_IsArray(node) ? "items" : "fields");
}

void tool_answer_fit(cJSON *answer, size_t budget)
{
    if (tool_json_size(answer) <= budget)
        return;
    char named[CUTS_NAMED][PATH_MAX_LEN + 48];
    int cuts = 0;
    /* Room for the sentence added at the end. */
    size_t target = budget > 2048 ? budget - 1200 : budget / 2;
    size_t size;
    for (int round = 0; round < 64 && (size = tool_json_size(answer)) > target; round++) {
        struct heaviest h = {0};
        find_heaviest(answer, "", &h);
        if (!h.node)
            break;
        char what[sizeof named[0]];
        cut(h.node, size - target, h.path, what, sizeof what);
        if (cuts < CUTS_NAMED)
            memcpy(named[cuts], what, sizeof what);
        cuts++;
    }
    if (!cuts)
        return;
    char sentence[1024];
    int len = snprintf(sentence, sizeof sentence, "Answer cut to fit %zu KB (setting "
                       "answers.maxBytes): ", budget / 1024);
    for (int i = 0; i < cuts && i < CUTS_NAMED && len < (int)sizeof sentence; i++)
        len += snprintf(sentence + len, sizeof sentence - len, "%s%s", i ? "; " : "",
                        named[i]);
    if (len < (int)sizeof sentence && cuts > CUTS_NAMED)
        len += snprintf(sentence + len, sizeof sentence - len, "; %d more cuts",
                        cuts - CUTS_NAMED);
    if (len < (int)sizeof sentence)
        snprintf(sentence + len, sizeof sentence - len, ". Ask for the cut part alone "
                 "(a narrower filter, one thread, one variable, no verbose), or raise "
                 "answers.maxBytes in $STROBE_HOME/settings.json.");
    cJSON *old = cJSON_GetObjectItemCaseSensitive(answer, "truncated");
    if (cJSON_IsString(old)) {
        size_t n = strlen(old->valuestring) + strlen(sentence) + 2;
        char *both = malloc(n);
        if (both) {
            snprintf(both, n, "%s %s", old->valuestring, sentence);
            cJSON_SetValuestring(old, both);
            free(both);
        }
    } else if (old) {
        cJSON_ReplaceItemInObjectCaseSensitive(answer, "truncated",
                                               cJSON_CreateString(sentence));
    } else {
        cJSON_AddStringToObject(answer, "truncated", sentence);
    }
}
