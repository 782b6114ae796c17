/*
 * fuzz_mcp.c - libFuzzer target of the daemon's JSON-RPC/MCP layer (mcp/server.h):
 * each input is one request line, handled in-process by mcp_handle_line() on a new,
 * initialized connection, as the daemon's connection thread would. Every tool's
 * handler, its argument validation and the engine calls behind it run against a
 * real store (a database in a temporary $STROBE_HOME, opened once) with no collector
 * registered: a debug_launch fails before anything is spawned, so nothing is traced.
 * The store holds one ended session, SESSION, with an event of each kind, which the
 * seeds query; an input that deletes it gets it back for the next one.
 *
 * The check: every answer is one line of valid UTF-8 JSON (parsed by cJSON, checked
 * by a UTF-8 decoder of its own here, not mcp's), and a tool's result carries its
 * structured content as JSON text too.
 * debug_test's action "run" is not fed through: it starts the project's test command.
 *
 * Run: `make fuzz` (FUZZ_SECONDS per target); seeds in fuzz/corpus/mcp/.
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/event.h"
#include "base/ring.h"
#include "core/session.h"
#include "testrun/testrun.h"
#include "mcp/server.h"
#include "store/store.h"

#define SESSION "fuzz-2026-01-01-10h00"

static struct store *store;
static char home[] = "/tmp/strobe-fuzz-mcp-XXXXXX";

static const char INITIALIZE[] =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
    "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
    "\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}";
static const char INITIALIZED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

static void remove_home(void)
{
    char cmd[sizeof home + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_mcp: could not remove %s\n", home);
}

/* Stores SESSION: an exited program that printed, was traced, logged and polled. */
static void store_session(void)
{
    struct session_row r = {.id = SESSION, .binary_path = "/src/app", .project_root = "/src",
                            .command_line = "[\"/src/app\",\"-v\"]", .pid = 100,
                            .started_at_ms = 1767261600000, .status = "running"};
    struct strobe_error err;
    if (store_session_create(store, &r, &err) != 0) {
        fprintf(stderr, "fuzz_mcp: cannot store a session: %s\n", err.msg);
        abort();
    }
    struct ring *ring = ring_create(1 << 16);
    store_attach_ring(store, ring, 0);
    struct event e = event_init(r.key, EV_STDOUT, 1000);
    e.pid = e.tid = 100;
    e.text = "ready on port 8080";
    ring_push(ring, &e, store_wake, store);
    e = event_init(r.key, EV_STDERR, 2000);
    e.text = "warning: retrying \xc3\xa9";
    ring_push(ring, &e, store_wake, store);
    e = event_init(r.key, EV_FUNCTION_ENTER, 3000);
    e.pid = e.tid = 100;
    e.thread_name = "worker";
    e.seq = 1;
    e.function = e.function_raw = "parse_config";
    e.source_file = "/src/config.c";
    e.line = 12;
    e.arguments = "[{\"name\":\"path\",\"value\":\"/etc/app.conf\"},{\"name\":\"n\",\"value\":3}]";
    ring_push(ring, &e, store_wake, store);
    e.type = EV_FUNCTION_EXIT;
    e.ts_ns = 4000;
    e.seq = 2;
    e.parent_seq = 1;
    e.arguments = NULL;
    e.return_value = "-1";
    e.duration_ns = 1000;
    ring_push(ring, &e, store_wake, store);
    e = event_init(r.key, EV_VARIABLE_SNAPSHOT, 5000);
    e.data = "{\"variables\":[{\"name\":\"cfg.retries\",\"value\":5}]}";
    ring_push(ring, &e, store_wake, store);
    e = event_init(r.key, EV_LOGPOINT, 6000);
    e.text = "n=3";
    e.data = "{\"breakpointId\":1,\"file\":\"/src/config.c\",\"line\":14}";
    ring_push(ring, &e, store_wake, store);
    e = event_init(r.key, EV_PROCESS_EXIT, 7000);
    e.pid = 100;
    e.text = "process 100 exited with code 3";
    e.data = "{\"exitCode\":3}";
    ring_push(ring, &e, store_wake, store);
    store_sync(store);
    store_release_ring(store, ring);
    if (store_session_finish(store, r.key, "exited", 1767261601000, true, 3, NULL) != 0)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!mkdtemp(home))
        abort();
    atexit(remove_home);
    setenv("STROBE_HOME", home, 1);
    char path[sizeof home + 32];
    snprintf(path, sizeof path, "%s/strobe.db", home);
    struct strobe_error err;
    store = store_open(path, &err);
    if (!store) {
        fprintf(stderr, "fuzz_mcp: cannot open %s: %s\n", path, err.msg);
        abort();
    }
    snprintf(path, sizeof path, "%s/settings.json", home);
    sessions_init(store, path);
    snprintf(path, sizeof path, "%s/tests", home);
    testruns_init(store, path);
    store_session();
    return 0;
}

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n)
            return false;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

/* An item of obj whose key is key in any case: cJSON's lookup ignores case, so
 * the server may read any of them. */
static bool any_key_is(const cJSON *obj, const char *key, cJSON_bool (*pred)(const cJSON *const))
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
        if (it->string && strcasecmp(it->string, key) == 0 && pred(it))
            return true;
    return false;
}

static cJSON_bool names_debug_test(const cJSON *const v)
{
    return cJSON_IsString(v) && strcasecmp(v->valuestring, "debug_test") == 0;
}

static cJSON_bool not_status(const cJSON *const v)
{
    return !cJSON_IsString(v) || strcmp(v->valuestring, "status") != 0;
}

static cJSON_bool runs_tests(const cJSON *const args)
{
    return !cJSON_IsObject(args) || !any_key_is(args, "action", cJSON_IsString) ||
           any_key_is(args, "action", not_status);
}

/* A tools/call of debug_test that may start a test run. */
static bool starts_test_run(const char *line, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(line, len);
    bool yes = false;
    const cJSON *params = cJSON_IsObject(root) ? cJSON_GetObjectItem(root, "params") : NULL;
    if (cJSON_IsObject(params) && any_key_is(params, "name", names_debug_test))
        yes = !any_key_is(params, "arguments", cJSON_IsObject) ||
              any_key_is(params, "arguments", runs_tests);
    cJSON_Delete(root);
    return yes;
}

static void check_answer(char *out)
{
    if (!out)
        return;
    size_t n = strlen(out);
    if (!utf8_valid((const unsigned char *)out, n) || memchr(out, '\n', n)) {
        fprintf(stderr, "fuzz_mcp: answer is not one line of UTF-8: %s\n", out);
        abort();
    }
    cJSON *v = cJSON_ParseWithLength(out, n);
    if (!cJSON_IsObject(v)) {
        fprintf(stderr, "fuzz_mcp: answer is not a JSON object: %s\n", out);
        abort();
    }
    /* A tool's result is its structured content again, as JSON text. */
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(v, "result");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(res, "content");
    if (cJSON_HasObjectItem(res, "structuredContent") &&
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"))) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, 0),
                                                             "text");
        cJSON *inner = cJSON_IsString(text) ? cJSON_Parse(text->valuestring) : NULL;
        if (!cJSON_IsObject(inner)) {
            fprintf(stderr, "fuzz_mcp: a result's text is not JSON: %s\n", out);
            abort();
        }
        cJSON_Delete(inner);
    }
    cJSON_Delete(v);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* One line, as mcp_serve() splits them. */
    const char *line = (const char *)data;
    const char *nl = memchr(line, '\n', size);
    size_t len = nl ? (size_t)(nl - line) : size;
    if (len > 64 * 1024 || starts_test_run(line, len))
        return -1;
    struct mcp_conn *c = mcp_conn_new(store);
    check_answer(mcp_handle_line(c, INITIALIZE, sizeof INITIALIZE - 1));
    if (mcp_handle_line(c, INITIALIZED, sizeof INITIALIZED - 1))
        abort();
    check_answer(mcp_handle_line(c, line, len));
    mcp_conn_free(c);
    if (store_session_id_taken(store, SESSION) == 0)
        store_session();
    return 0;
}
