/*
 * test_mcp.c - unit tests of the protocol layer: JSON-RPC framing, the MCP
 * lifecycle, tools/list, and the argument validation every tool does before it
 * reaches the engine. Nothing here needs a daemon or a database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/server.h"
#include "mcp/tools.h"

static cJSON *call(struct mcp_conn *c, const char *line)
{
    char *out = mcp_handle_line(c, line, strlen(line));
    if (!out)
        return NULL;
    cJSON *v = cJSON_Parse(out);
    free(out);
    assert_non_null(v);
    return v;
}

static int error_code(const cJSON *resp)
{
    const cJSON *err = cJSON_GetObjectItem(resp, "error");
    assert_non_null(err);
    return cJSON_GetObjectItem(err, "code")->valueint;
}

static void expect_error(struct mcp_conn *c, const char *line, int code)
{
    cJSON *r = call(c, line);
    assert_non_null(r);
    assert_int_equal(error_code(r), code);
    cJSON_Delete(r);
}

static struct mcp_conn *initialized(void)
{
    struct mcp_conn *c = mcp_conn_new(NULL);
    cJSON *r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                       "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    const cJSON *res = cJSON_GetObjectItem(r, "result");
    assert_string_equal(cJSON_GetObjectItem(res, "protocolVersion")->valuestring, "2025-03-26");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(res, "serverInfo"), "name")->valuestring,
        "strobe");
    cJSON_Delete(r);
    assert_null(call(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    return c;
}

/* The isError result of a tools/call: returns "CODE: ..." text (caller frees). */
static char *tool_error(struct mcp_conn *c, const char *line)
{
    cJSON *r = call(c, line);
    const cJSON *res = cJSON_GetObjectItem(r, "result");
    assert_non_null(res);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")));
    const cJSON *content = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), 0);
    char *text = strdup(cJSON_GetObjectItem(content, "text")->valuestring);
    const cJSON *err = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "structuredContent"),
                                           "error");
    assert_non_null(strstr(text, cJSON_GetObjectItem(err, "code")->valuestring));
    cJSON_Delete(r);
    return text;
}

static void expect_tool_error(struct mcp_conn *c, const char *line, const char *code,
                              const char *words)
{
    char *text = tool_error(c, line);
    assert_int_equal(strncmp(text, code, strlen(code)), 0);
    if (!strstr(text, words))
        fail_msg("'%s' does not contain '%s'", text, words);
    free(text);
}

static void test_framing_errors(void **state)
{
    (void)state;
    struct mcp_conn *c = mcp_conn_new(NULL);
    expect_error(c, "{not json", -32700);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}", -32700);
    expect_error(c, "[1,2]", -32600);
    expect_error(c, "42", -32600);
    expect_error(c, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1}", -32600);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}", -32601);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", -32602);
    /* blank lines are ignored, not errors */
    assert_null(call(c, "   "));
    mcp_conn_free(c);
}

static void test_lifecycle(void **state)
{
    (void)state;
    struct mcp_conn *c = mcp_conn_new(NULL);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", -32002);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"debug_query\"}}", -32002);
    cJSON *r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "p");
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(r, "result")));
    cJSON_Delete(r);
    /* an unknown version gets our newest */
    r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                "{\"protocolVersion\":\"1999-01-01\"}}");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "protocolVersion")->valuestring,
        "2025-06-18");
    cJSON_Delete(r);
    mcp_conn_free(c);
}

/* tools/list shows mcp/tools.json as it is, byte for byte, in the shape it had when
 * the catalog was C strings: the names below in this order, each tool {name,
 * description, inputSchema}, each schema an object schema that refuses unknown
 * fields (as args_only does) and requires only fields it has; the unknown-tool
 * error names the same tools. */
static void test_tools_list(void **state)
{
    (void)state;
    if (tools_catalog_error())
        fail_msg("mcp/tools.json: %s", tools_catalog_error());
    struct mcp_conn *c = initialized();
    cJSON *r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    const cJSON *res = cJSON_GetObjectItem(r, "result");
    cJSON *data = cJSON_Parse(tools_json);
    char *shown = cJSON_PrintUnformatted(res), *listed = cJSON_PrintUnformatted(data);
    assert_int_equal(strncmp(shown, "{\"tools\":", 9), 0);
    assert_int_equal(strlen(shown), 9 + strlen(listed) + 1);
    assert_memory_equal(shown + 9, listed, strlen(listed));
    free(shown);
    free(listed);
    cJSON_Delete(data);

    const cJSON *tools = cJSON_GetObjectItem(res, "tools");
    const char *names[] = {"debug_launch", "debug_trace", "debug_query", "debug_session",
                           "debug_memory", "debug_breakpoint", "debug_continue", "debug_test",
                           "debug_test_status"};
    int n = (int)(sizeof names / sizeof *names);
    assert_int_equal(cJSON_GetArraySize(tools), n);
    char joined[512] = "";
    for (int i = 0; i < n; i++) {
        const cJSON *t = cJSON_GetArrayItem(tools, i);
        assert_int_equal(cJSON_GetArraySize(t), 3);
        assert_string_equal(t->child->string, "name");
        assert_string_equal(t->child->next->string, "description");
        assert_string_equal(t->child->next->next->string, "inputSchema");
        assert_string_equal(cJSON_GetObjectItem(t, "name")->valuestring, names[i]);
        assert_true(strlen(cJSON_GetObjectItem(t, "description")->valuestring) > 80);
        const cJSON *schema = cJSON_GetObjectItem(t, "inputSchema");
        assert_string_equal(cJSON_GetObjectItem(schema, "type")->valuestring, "object");
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(schema, "additionalProperties")));
        const cJSON *props = cJSON_GetObjectItem(schema, "properties"), *req;
        cJSON_ArrayForEach(req, cJSON_GetObjectItem(schema, "required"))
            assert_non_null(cJSON_GetObjectItem(props, req->valuestring));
        assert_non_null(tools_find(names[i]));
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s",
                 i ? ", " : "", names[i]);
    }
    assert_string_equal(tools_names(), joined);
    assert_null(tools_find("debug_nope"));
    cJSON_Delete(r);
    mcp_conn_free(c);
}

/* The built-in catalog with edit applied to its parsed tree, checked by
 * tools_catalog_parse: NULL, or why not. */
static char *check_edited(void (*edit)(cJSON *tools))
{
    static char why[256];
    cJSON *tools = cJSON_Parse(tools_json);
    edit(tools);
    char *text = cJSON_PrintUnformatted(tools);
    cJSON_Delete(tools);
    why[0] = '\0';
    cJSON *parsed = tools_catalog_parse(text, why, sizeof why);
    free(text);
    if (parsed) {
        cJSON_Delete(parsed);
        return NULL;
    }
    return why;
}

static void edit_none(cJSON *tools) { (void)tools; }
static void edit_drop_last(cJSON *tools) { cJSON_DeleteItemFromArray(tools, 8); }
static void edit_rename(cJSON *tools)
{
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(tools, 2), "name"),
                         "debug_nope");
}
static void edit_twice(cJSON *tools)
{
    cJSON_AddItemToArray(tools, cJSON_Duplicate(cJSON_GetArrayItem(tools, 0), true));
}
static void edit_no_schema(cJSON *tools)
{
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(tools, 1), "inputSchema");
}

/* A catalog that disagrees with the handler table is refused, and says how. */
static void test_catalog_check(void **state)
{
    (void)state;
    const char *why_not = check_edited(edit_none);
    if (why_not)
        fail_msg("the catalog itself: %s", why_not);
    assert_non_null(strstr(check_edited(edit_drop_last),
                           "the handler of debug_test_status has no entry"));
    assert_non_null(strstr(check_edited(edit_rename), "debug_nope has no handler"));
    assert_non_null(strstr(check_edited(edit_twice), "lists debug_launch twice"));
    assert_non_null(strstr(check_edited(edit_no_schema), "tool 1 of the catalog needs"));
    char why[256];
    assert_null(tools_catalog_parse("{\"tools\":[]}", why, sizeof why));
    assert_non_null(strstr(why, "not parse as a JSON array"));
    assert_null(tools_catalog_parse("[{\"name\":", why, sizeof why));
}

static void test_tool_call_errors(void **state)
{
    (void)state;
    struct mcp_conn *c = initialized();
    cJSON *r = call(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
                       "{\"name\":\"debug_nope\",\"arguments\":{}}}");
    assert_int_equal(error_code(r), -32602);
    const cJSON *data = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "data");
    assert_string_equal(cJSON_GetObjectItem(data, "code")->valuestring, "UNKNOWN_TOOL");
    cJSON_Delete(r);
    expect_error(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{}}",
                 -32602);

#define CALL(tool, args) "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":" \
                         "{\"name\":\"" tool "\",\"arguments\":" args "}}"
    expect_tool_error(c, CALL("debug_launch", "[]"), "VALIDATION_ERROR", "must be an object");
    expect_tool_error(c, CALL("debug_launch", "{\"projectRoot\":\"/tmp\"}"),
                      "VALIDATION_ERROR", "'command' is required");
    expect_tool_error(c, CALL("debug_launch", "{\"command\":5,\"projectRoot\":\"/tmp\"}"),
                      "VALIDATION_ERROR", "'command' must be a string, not a number");
    expect_tool_error(c, CALL("debug_launch", "{\"command\":\"x\",\"projectRoot\":\"/tmp\","
                              "\"args\":[\"a\",1]}"), "VALIDATION_ERROR", "'args[1]'");
    expect_tool_error(c, CALL("debug_launch", "{\"command\":\"x\",\"projectRoot\":\"/tmp\","
                              "\"env\":{\"A\":1}}"), "VALIDATION_ERROR", "'env.A'");
    expect_tool_error(c, CALL("debug_launch", "{\"command\":\"x\",\"projectroot\":\"/tmp\"}"),
                      "VALIDATION_ERROR", "did you mean 'projectRoot'");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"explode\"}"),
                      "VALIDATION_ERROR", "'action' must be one of");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"status\"}"),
                      "VALIDATION_ERROR", "'sessionId' is required");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"stop\",\"sessionId\":\"s\","
                              "\"retain\":\"yes\"}"), "VALIDATION_ERROR", "'retain'");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"stacks\"}"),
                      "VALIDATION_ERROR", "'sessionId' is required");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"stacks\",\"sessionId\":\"s\","
                              "\"tids\":[1,\"2\"]}"), "VALIDATION_ERROR", "'tids'");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"stacks\",\"sessionId\":\"s\","
                              "\"verbose\":1}"), "VALIDATION_ERROR", "'verbose'");
    expect_tool_error(c, CALL("debug_session", "{\"action\":\"status\",\"sessionId\":\"s\","
                              "\"pid\":1}"), "VALIDATION_ERROR", "applies to action 'stacks'");
    expect_tool_error(c, CALL("debug_query", "{}"), "VALIDATION_ERROR", "'sessionId'");
    expect_tool_error(c, CALL("debug_query", "{\"sessionId\":\"s\",\"limt\":5}"),
                      "VALIDATION_ERROR", "did you mean 'limit'");
    expect_tool_error(c, CALL("debug_trace", "{\"add\":[\"@bogus\"]}"),
                      "INVALID_PATTERN", "@bogus");
    expect_tool_error(c, CALL("debug_trace", "{\"serializationDepth\":11}"),
                      "VALIDATION_ERROR", "between 1 and 10");
    expect_tool_error(c, CALL("debug_memory", "{\"targets\":[{\"variable\":\"g\"}]}"),
                      "VALIDATION_ERROR", "'sessionId' is required");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"targets\":[]}"),
                      "VALIDATION_ERROR", "'targets' is empty");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"targets\":["
                              "{\"address\":\"0x10\"}]}"), "VALIDATION_ERROR",
                      "needs a type with its address");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"targets\":["
                              "{\"address\":\"0x10\",\"type\":\"bytes\"}]}"),
                      "VALIDATION_ERROR", "type bytes needs a size");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"targets\":["
                              "{\"variable\":\"g\",\"address\":\"0x10\"}]}"),
                      "VALIDATION_ERROR", "has both variable and address");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"action\":\"write\","
                              "\"targets\":[{\"variable\":\"g\"}]}"),
                      "VALIDATION_ERROR", "targets[0].value must be");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"depth\":6,"
                              "\"targets\":[{\"variable\":\"g\"}]}"),
                      "VALIDATION_ERROR", "'depth'");
    expect_tool_error(c, CALL("debug_memory", "{\"sessionId\":\"s\",\"targets\":[{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"},{\"variable\":\"g\"},{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"},{\"variable\":\"g\"},{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"},{\"variable\":\"g\"},{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"},{\"variable\":\"g\"},{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"},{\"variable\":\"g\"},{\"variable"
                              "\":\"g\"},{\"variable\":\"g\"}]}"),
                      "LIMIT_EXCEEDED", "17 targets given; one call takes at most 16");
    mcp_conn_free(c);
}

static void test_trace_pending_mode(void **state)
{
    (void)state;
    struct mcp_conn *c = initialized();
    cJSON *r = call(c, CALL("debug_trace", "{\"add\":[\"auth::*\",\"@usercode\"]}"));
    const cJSON *sc = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "structuredContent");
    assert_string_equal(cJSON_GetObjectItem(sc, "mode")->valuestring, "pending");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sc, "activePatterns")), 2);
    assert_int_equal(cJSON_GetObjectItem(sc, "hookedFunctions")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(sc, "eventLimit")->valueint, 200000);
    assert_non_null(strstr(cJSON_GetObjectItem(sc, "status")->valuestring, "next debug_launch"));
    cJSON_Delete(r);
    r = call(c, CALL("debug_trace", "{\"remove\":[\"auth::*\",\"@usercode\"]}"));
    sc = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "structuredContent");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sc, "activePatterns")), 0);
    cJSON_Delete(r);
    mcp_conn_free(c);
}

/* 40 threads of 64 frames with long names: far over the budget. The two threads of
 * the deadlock keep every frame; the idle ones are cut first. */
static void test_stacks_budget(void **state)
{
    (void)state;
    struct collector_stacks st = {0};
    st.n_threads = 40;
    st.threads = calloc(st.n_threads, sizeof *st.threads);
    assert_non_null(st.threads);
    for (size_t i = 0; i < st.n_threads; i++) {
        struct collector_thread *th = &st.threads[i];
        *th = (struct collector_thread){.tid = 1000 + (pid_t)i, .pid = 1000, .syscall_nr = -1,
                                        .own_frame = -1};
        snprintf(th->name, sizeof th->name, "t%zu", i);
        snprintf(th->state, sizeof th->state, "running");
        th->n_frames = STACKS_MAX_FRAMES;
        th->frames = calloc(th->n_frames, sizeof *th->frames);
        assert_non_null(th->frames);
        for (size_t k = 0; k < th->n_frames; k++) {
            th->frames[k].function = strdup("a_rather_long_function_name_for_the_budget");
            th->frames[k].file = strdup("/src/project/module/file.c");
            th->frames[k].line = (int)k + 1;
        }
    }
    st.threads[7].wait = st.threads[9].wait = WAIT_MUTEX;
    st.threads[7].wait_owner = 1009;
    st.threads[9].wait_owner = 1007;
    st.threads[7].wait_address = 0x10;
    st.threads[9].wait_address = 0x20;
    collector_stacks_diagnose(&st);
    assert_non_null(st.diagnosis);

    cJSON *o = tool_stacks_json("s", &st, false);
    assert_non_null(o);
    char *text = cJSON_PrintUnformatted(o);
    assert_true(strlen(text) <= 16 * 1024);
    free(text);
    const cJSON *tr = cJSON_GetObjectItem(o, "truncated");
    assert_true(cJSON_IsString(tr));
    assert_non_null(strstr(tr->valuestring, "38 thread(s)"));
    const cJSON *threads = cJSON_GetObjectItem(o, "threads");
    assert_int_equal(cJSON_GetArraySize(threads), 40);
    const cJSON *t0 = cJSON_GetArrayItem(threads, 0), *t7 = cJSON_GetArrayItem(threads, 7);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(t0, "frames")) <= 3);
    assert_int_equal(cJSON_GetObjectItem(t0, "omittedFrames")->valueint,
                     STACKS_MAX_FRAMES - cJSON_GetArraySize(cJSON_GetObjectItem(t0, "frames")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t7, "frames")), STACKS_MAX_FRAMES);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(t7, "frames"), 0)->valuestring,
                        "a_rather_long_function_name_for_the_budget (file.c:1)");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(t7, "wait"), "address")
                            ->valuestring, "0x10");
    cJSON_Delete(o);

    /* Within the budget: nothing cut. */
    st.n_threads = 2;
    o = tool_stacks_json("s", &st, false);
    assert_null(cJSON_GetObjectItem(o, "truncated"));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "threads"), 0),
                                    "omittedFrames"));
    cJSON_Delete(o);
    st.n_threads = 40;
    collector_stacks_free(&st);
}

/* debug_query's summary of a watch_hit keeps label, values and where; verbose keeps all. */
static void test_watch_hit_shape(void **state)
{
    (void)state;
    const char *data = "{\"watchId\":1,\"label\":\"g.x\",\"address\":\"0x10\",\"size\":4,"
                       "\"oldValue\":3,\"newValue\":7,\"changed\":true,\"hits\":2,"
                       "\"frames\":[{\"function\":\"f\"}],\"ownFrame\":0}";
    cJSON *ev = cJSON_Parse(data);
    tool_watch_hit_shape(ev, 42, false);
    assert_null(cJSON_GetObjectItem(ev, "frames"));
    assert_null(cJSON_GetObjectItem(ev, "ownFrame"));
    assert_null(cJSON_GetObjectItem(ev, "address"));
    assert_int_equal(cJSON_GetObjectItem(ev, "threadId")->valueint, 42);
    assert_int_equal(cJSON_GetObjectItem(ev, "oldValue")->valueint, 3);
    assert_int_equal(cJSON_GetObjectItem(ev, "newValue")->valueint, 7);
    assert_string_equal(cJSON_GetObjectItem(ev, "label")->valuestring, "g.x");
    cJSON_Delete(ev);
    ev = cJSON_Parse(data);
    tool_watch_hit_shape(ev, 42, true);
    assert_non_null(cJSON_GetObjectItem(ev, "frames"));
    assert_non_null(cJSON_GetObjectItem(ev, "address"));
    cJSON_Delete(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framing_errors),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_tools_list),
        cmocka_unit_test(test_catalog_check),
        cmocka_unit_test(test_tool_call_errors),
        cmocka_unit_test(test_trace_pending_mode),
        cmocka_unit_test(test_stacks_budget),
        cmocka_unit_test(test_watch_hit_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
