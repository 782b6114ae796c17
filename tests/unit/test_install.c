/*
 * test_install.c - unit tests of the text edits of `strobe install`: the JSON(C)
 * member merge of cli/install/install_json.c (into empty objects, objects with members,
 * with comments and trailing commas, one-line objects, a missing parent, replacing
 * a member, refusing malformed text with its line) and the marker blocks of
 * cli/install/install_block.c (TOML and markdown); every install is undone byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/install/install_block.h"
#include "cli/install/install_json.h"

#define V "{\"command\": \"/bin/strobe\", \"args\": [\"mcp\"]}"

/* Applies jsonc_set, checks a second set changes nothing and that jsonc_remove gives
 * back text; returns the installed text (caller frees). */
static char *set_and_undo(const char *text, const char *parent)
{
    struct splice sp;
    char err[256] = "";
    size_t n, m;
    enum edit_result r = jsonc_set(text, strlen(text), parent, "strobe", V, &sp, err,
                                   sizeof err);
    assert_int_equal(r, EDIT_CHANGE);
    char *after = splice_apply(text, strlen(text), &sp, &n);
    splice_free(&sp);
    assert_int_equal(jsonc_set(after, n, parent, "strobe", V, &sp, err, sizeof err), EDIT_NONE);
    assert_int_equal(jsonc_remove(after, n, parent, "strobe", &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *back = splice_apply(after, n, &sp, &m);
    splice_free(&sp);
    assert_string_equal(back, text);
    free(back);
    return after;
}

static void json_empty_object(void **state)
{
    (void)state;
    char *t = set_and_undo("{\"mcpServers\": {}}\n", "mcpServers");
    assert_string_equal(t, "{\"mcpServers\": {\n  \"strobe\": " V "\n}}\n");
    free(t);
    t = set_and_undo("{}\n", "mcpServers");
    assert_string_equal(t, "{\n  \"mcpServers\": {\n    \"strobe\": " V "\n  }\n}\n");
    free(t);
    t = set_and_undo("{ }", "servers");
    assert_string_equal(t, "{\n  \"servers\": {\n    \"strobe\": " V "\n  } }");
    free(t);
}

static void json_object_with_members(void **state)
{
    (void)state;
    const char *in = "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n"
                     "        \"other\": {\"command\": \"x\"}\n    }\n}\n";
    char *t = set_and_undo(in, "mcpServers");
    assert_string_equal(t, "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n"
                           "        \"strobe\": " V ",\n"
                           "        \"other\": {\"command\": \"x\"}\n    }\n}\n");
    free(t);
    /* no parent yet: created first, at the file's own indentation */
    t = set_and_undo("{\n\t\"theme\": \"dark\"\n}\n", "mcp");
    assert_string_equal(t, "{\n\t\"mcp\": {\n\t\t\"strobe\": " V "\n\t},\n"
                           "\t\"theme\": \"dark\"\n}\n");
    free(t);
    /* a one-line object stays on one line */
    t = set_and_undo("{\"numStartups\": 3, \"projects\": {}}", "mcpServers");
    assert_string_equal(t, "{\"mcpServers\": {\"strobe\": " V "}, \"numStartups\": 3, "
                           "\"projects\": {}}");
    free(t);
}

static void json_comments_and_trailing_commas(void **state)
{
    (void)state;
    const char *in = "// user settings\n{\n  /* servers: { } */\n  \"servers\": {\n"
                     "    \"a\": {\"url\": \"http://x/}//\"}, // trailing\n  },\n"
                     "  \"x\": [1, 2,],\n}\n";
    char *t = set_and_undo(in, "servers");
    assert_non_null(strstr(t, "\"servers\": {\n    \"strobe\": " V ",\n    \"a\""));
    free(t);
}

static void json_replace_member(void **state)
{
    (void)state;
    const char *in = "{\"mcpServers\": {\"strobe\": {\"command\": \"/old/strobe\"}, \"b\": 1}}";
    struct splice sp;
    char err[256];
    size_t n;
    assert_int_equal(jsonc_set(in, strlen(in), "mcpServers", "strobe", V, &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *t = splice_apply(in, strlen(in), &sp, &n);
    splice_free(&sp);
    assert_string_equal(t, "{\"mcpServers\": {\"strobe\": " V ", \"b\": 1}}");
    /* removing a member install did not create removes just that member */
    assert_int_equal(jsonc_remove(t, n, "mcpServers", "strobe", &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *r = splice_apply(t, n, &sp, &n);
    splice_free(&sp);
    assert_string_equal(r, "{\"mcpServers\": {\"b\": 1}}");
    assert_int_equal(jsonc_remove(r, n, "mcpServers", "strobe", &sp, err, sizeof err),
                     EDIT_NONE);
    free(t);
    free(r);
}

static void json_empty_document(void **state)
{
    (void)state;
    struct splice sp;
    char err[256];
    size_t n;
    assert_int_equal(jsonc_set(" \n", 2, "mcpServers", "strobe", V, &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *t = splice_apply(" \n", 2, &sp, &n);
    splice_free(&sp);
    assert_string_equal(t, "{\n  \"mcpServers\": {\n    \"strobe\": " V "\n  }\n}\n");
    free(t);
}

static void expect_error(const char *text, const char *parent, const char *what)
{
    struct splice sp;
    char err[256] = "";
    assert_int_equal(jsonc_set(text, strlen(text), parent, "strobe", V, &sp, err, sizeof err),
                     EDIT_ERROR);
    assert_null(sp.ins);
    if (!strstr(err, what))
        fail_msg("error '%s' does not say '%s'", err, what);
    assert_int_equal(jsonc_remove(text, strlen(text), parent, "strobe", &sp, err, sizeof err),
                     strcmp(what, "is not an object") ? EDIT_ERROR : EDIT_NONE);
}

static void json_malformed_refused(void **state)
{
    (void)state;
    expect_error("{\n  \"a\": 1,,\n}", "mcpServers", "line 2: expected a member name");
    expect_error("{\n\n /* open", "mcpServers", "line 3: a comment is not closed");
    expect_error("[1, 2]", "mcpServers", "line 1: the top level is not a JSON object");
    expect_error("{\"a\": \"x}", "mcpServers", "a string is not closed");
    expect_error("{\"a\": 1} {}", "mcpServers", "text after the top-level object");
    expect_error("{\"a\": 1", "mcpServers", "expected ',' or '}' after a member");
    expect_error("{\"a\": {", "mcpServers", "an object is not closed");
    expect_error("{\n\"mcpServers\": [1]}", "mcpServers", "is not an object");
}

#define B "# strobe:begin"
#define E "# strobe:end"
#define BODY "[mcp_servers.strobe]\ncommand = \"/bin/strobe\"\n"

static void block_roundtrip(const char *text, const char *want)
{
    struct splice sp;
    char err[256];
    size_t n, m;
    assert_int_equal(block_set(text, strlen(text), B, E, BODY, &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *after = splice_apply(text, strlen(text), &sp, &n);
    splice_free(&sp);
    assert_string_equal(after, want);
    assert_int_equal(block_set(after, n, B, E, BODY, &sp, err, sizeof err), EDIT_NONE);
    assert_int_equal(block_remove(after, n, B, E, &sp, err, sizeof err), EDIT_CHANGE);
    char *back = splice_apply(after, n, &sp, &m);
    splice_free(&sp);
    assert_string_equal(back, text);
    assert_int_equal(block_remove(back, m, B, E, &sp, err, sizeof err), EDIT_NONE);
    free(after);
    free(back);
}

static void block_append_and_remove(void **state)
{
    (void)state;
    block_roundtrip("", B "\n" BODY E "\n");
    block_roundtrip("model = \"o3\"\n", "model = \"o3\"\n\n" B "\n" BODY E "\n");
    block_roundtrip("model = \"o3\"", "model = \"o3\"\n" B "\n" BODY E "\n");
    block_roundtrip("a\n\n", "a\n\n\n" B "\n" BODY E "\n");
    block_roundtrip("<!-- notes -->\n# Mine\n", "<!-- notes -->\n# Mine\n\n" B "\n" BODY E "\n");
}

static void block_replace_and_errors(void **state)
{
    (void)state;
    const char *old = "x = 1\n\n" B "\n[mcp_servers.strobe]\ncommand = \"/old\"\n" E "\ny = 2\n";
    struct splice sp;
    char err[256];
    size_t n;
    assert_int_equal(block_set(old, strlen(old), B, E, BODY, &sp, err, sizeof err),
                     EDIT_CHANGE);
    char *t = splice_apply(old, strlen(old), &sp, &n);
    splice_free(&sp);
    assert_string_equal(t, "x = 1\n\n" B "\n" BODY E "\ny = 2\n");
    free(t);
    const char *half = "a\n" B "\nb\n";
    assert_int_equal(block_set(half, strlen(half), B, E, BODY, &sp, err, sizeof err),
                     EDIT_ERROR);
    assert_non_null(strstr(err, "line 2"));
    assert_int_equal(block_remove(half, strlen(half), B, E, &sp, err, sizeof err), EDIT_ERROR);
    assert_int_equal(block_find_line(old, strlen(old), "[mcp_servers.strobe]"), 4);
    assert_int_equal(block_find_line(old, strlen(old), "[other]"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_empty_object),
        cmocka_unit_test(json_object_with_members),
        cmocka_unit_test(json_comments_and_trailing_commas),
        cmocka_unit_test(json_replace_member),
        cmocka_unit_test(json_empty_document),
        cmocka_unit_test(json_malformed_refused),
        cmocka_unit_test(block_append_and_remove),
        cmocka_unit_test(block_replace_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
