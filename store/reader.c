/*
 * reader.c - reader connections (store_reader_open/close, struct store_reader in
 * store_internal.h): each is one read-only connection of its own, used by one thread
 * at a time, with strobe_text_match() registered on it, the SQL function through
 * which query.c's "matches" text filter runs the query's regex (base/regex.h, with
 * its budgets) inside SQLite.
 */
#include "store/store_internal.h"

#include <stdlib.h>

#include "base/regex.h"

/* strobe_text_match(text): 1 when the running query's text regex matches text, 0
 * when not (NULL text included); an SQL error when the match is over budget or no
 * query is running. */
static void text_match_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct store_reader *r = sqlite3_user_data(ctx);
    if (!r->text_re) {
        sqlite3_result_error(ctx, "strobe_text_match outside a text query", -1);
        return;
    }
    const char *text = (const char *)sqlite3_value_text(argv[0]);
    if (!text) {
        sqlite3_result_int(ctx, 0);
        return;
    }
    int m = regex_match(r->text_re, text, (size_t)sqlite3_value_bytes(argv[0]), &r->text_why);
    if (m < 0) {
        r->text_over_budget = true;
        sqlite3_result_error(ctx, "the text pattern is too costly", -1);
        return;
    }
    sqlite3_result_int(ctx, m);
}

struct store_reader *store_reader_open(struct store *s, struct strobe_error *e)
{
    struct store_reader *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, ERR_INTERNAL, "out of memory opening a reader");
        return NULL;
    }
    r->s = s;
    r->db = st_connect(s->path, false, e);
    if (!r->db || st_exec(r->db, "PRAGMA query_only=1", e) < 0) {
        store_reader_close(r);
        return NULL;
    }
    if (sqlite3_create_function(r->db, "strobe_text_match", 1, SQLITE_UTF8, r, text_match_fn,
                                NULL, NULL) != SQLITE_OK) {
        st_fail_db(e, r->db, "cannot register the text filter");
        store_reader_close(r);
        return NULL;
    }
    return r;
}

void store_reader_close(struct store_reader *r)
{
    if (!r)
        return;
    sqlite3_close(r->db);
    free(r);
}
