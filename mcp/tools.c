/*
 * tools.c - the tool catalog and the handler table behind it. The catalog is data,
 * mcp/tools.json (each tool's name, description and input schema, as tools/list
 * shows them, in that order), built into the binary by mcp/tools_json.S; this file
 * pairs each name with its handler. The descriptions are the agent's manual: they
 * teach the output-first workflow of spec 003 (launch clean, read stderr/stdout,
 * only then add traces) and say what each field does, since the agent sees nothing
 * else.
 *
 * The catalog is parsed once, on first use, and checked against the handler table.
 * A mismatch is a broken build, not a state to serve: tests/unit/test_mcp.c fails
 * and the daemon refuses to start (strobe.c), so the answers below never meet it.
 */
#include "mcp/tools.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"

/*
 * The tools. To add one:
 *   1. write its handler, `cJSON *tool_debug_x(struct tool_ctx *, const cJSON *args,
 *      struct strobe_error *)`, in mcp/tool_x.c: check args with mcp/args.h (reject
 *      unknown fields with args_only), call the engine (core/), return the result
 *      object or NULL with e set;
 *   2. declare it in mcp/tools.h;
 *   3. add its entry to mcp/tools.json: name, description (what it does and when to
 *      use it: the agent reads nothing else) and inputSchema (additionalProperties
 *      false), where tools/list is to show it; and its row here, name and handler.
 *      The whole list stays within 16 KiB (tests/e2e/test_protocol.py): say each
 *      fact once, in the tool's description or in a field's, never in both;
 *   4. when the engine can fail in a new way for it, give the next step a row in
 *      mcp/hints.c (the dispatcher, mcp/server.c, appends it to every tool's
 *      error), never a sentence in core/;
 *   5. document it in docs/PROTOCOL.md and man/strobe-tools.7, and test it in
 *      tests/unit/test_mcp.c (the catalog) and tests/e2e/ (the behaviour).
 */
static const struct tool_def handlers[] = {
    {"debug_launch", tool_debug_launch},
    {"debug_trace", tool_debug_trace},
    {"debug_query", tool_debug_query},
    {"debug_session", tool_debug_session},
    {"debug_memory", tool_debug_memory},
    {"debug_breakpoint", tool_debug_breakpoint},
    {"debug_continue", tool_debug_continue},
    {"debug_test", tool_debug_test},
    {"debug_test_status", tool_debug_test_status},
};
#define N_HANDLERS (sizeof handlers / sizeof handlers[0])

/* mcp/tools.json as parsed by catalog_load. */
static struct {
    cJSON *tools;    /* tools/list's "tools"; NULL when the catalog fails its check */
    char *names;     /* "debug_launch, debug_trace, ..." in catalog order */
    char error[256]; /* why it failed */
} catalog;
static pthread_once_t catalog_once = PTHREAD_ONCE_INIT;

const struct tool_def *tools_find(const char *name)
{
    for (size_t i = 0; i < N_HANDLERS; i++)
        if (strcmp(handlers[i].name, name) == 0)
            return &handlers[i];
    return NULL;
}

/* The handler row of tool t of a catalog, or NULL with why set when t is not a
 * tool object or has no handler. */
static const struct tool_def *catalog_row(const cJSON *t, int i, char *why, size_t cap)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (!cJSON_IsString(name) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "description")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "inputSchema"))) {
        snprintf(why, cap, "tool %d of the catalog needs a name and a description "
                 "(strings) and an inputSchema (an object)", i);
        return NULL;
    }
    const struct tool_def *row = tools_find(name->valuestring);
    if (!row)
        snprintf(why, cap, "the catalog's tool %.64s has no handler in mcp/tools.c",
                 name->valuestring);
    return row;
}

cJSON *tools_catalog_parse(const char *text, char *why, size_t cap)
{
    cJSON *tools = cJSON_Parse(text);
    bool seen[N_HANDLERS] = {false};
    if (!cJSON_IsArray(tools)) {
        snprintf(why, cap, "the catalog does not parse as a JSON array");
        goto broken;
    }
    int i = 0;
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const struct tool_def *row = catalog_row(t, i, why, cap);
        if (!row)
            goto broken;
        if (seen[row - handlers]) {
            snprintf(why, cap, "the catalog lists %s twice", row->name);
            goto broken;
        }
        seen[row - handlers] = true;
    }
    for (size_t h = 0; h < N_HANDLERS; h++)
        if (!seen[h]) {
            snprintf(why, cap, "the handler of %s has no entry in the catalog",
                     handlers[h].name);
            goto broken;
        }
    return tools;
broken:
    cJSON_Delete(tools);
    return NULL;
}

static void catalog_load(void)
{
    catalog.tools = tools_catalog_parse(tools_json, catalog.error, sizeof catalog.error);
    struct strbuf sb = {0};
    for (const cJSON *t = catalog.tools ? catalog.tools->child : NULL; t; t = t->next)
        sb_printf(&sb, "%s%s", sb.len ? ", " : "",
                  cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring);
    catalog.names = sb_take(&sb);
}

const char *tools_catalog_error(void)
{
    pthread_once(&catalog_once, catalog_load);
    return catalog.tools ? NULL : catalog.error;
}

const char *tools_names(void)
{
    pthread_once(&catalog_once, catalog_load);
    return catalog.names ? catalog.names : "";
}

cJSON *tools_list(void)
{
    pthread_once(&catalog_once, catalog_load);
    cJSON *res = cJSON_CreateObject();
    cJSON_AddItemToObject(res, "tools", cJSON_Duplicate(catalog.tools, true));
    return res;
}
