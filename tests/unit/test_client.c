/*
 * test_client.c - unit tests of the client side: the line reader and writer of
 * cli/client.c over real sockets (partial reads and writes, long and overlong
 * lines, a last line without newline), the blocking JSON-RPC exchange, connecting
 * with no daemon, strobectl's argument parsing (cli/ctl/verbs/ctl_args.c), its renderers
 * (cli/render/render.c) and its crash reports (cli/render/crash_report.c) from hand-written
 * answers and crash events.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/client.h"
#include "cli/render/crash_report.h"
#include "cli/ctl/verbs/ctl_args.h"
#include "tests/unit/ctl_parse.h"
#include "cli/render/render.h"

/* ---- a writer thread feeding one end of a socketpair ------------------------------- */

struct feed {
    int fd;
    const char *data;
    size_t len;
    size_t chunk;     /* bytes per write(); the reader sees partial lines */
    bool close_after;
};

static void *feed_main(void *arg)
{
    struct feed *f = arg;
    for (size_t off = 0; off < f->len; off += f->chunk) {
        size_t n = f->len - off < f->chunk ? f->len - off : f->chunk;
        assert_int_equal(write_all(f->fd, f->data + off, n), 0);
    }
    if (f->close_after)
        close(f->fd);
    return NULL;
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* ---- line reader ------------------------------------------------------------------- */

static void test_lines_in_small_pieces(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    const char input[] = "first\n\nsecond line\r\n{\"a\":1}\nlast without newline";
    struct feed f = { sv[1], input, sizeof input - 1, 3, true };
    pthread_t t;
    pthread_create(&t, NULL, feed_main, &f);

    struct line_reader r;
    lr_init(&r, sv[0], 100);
    char *line;
    size_t len;
    const char *want[] = { "first", "", "second line\r", "{\"a\":1}", "last without newline" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
        assert_int_equal(len, strlen(want[i]));
        assert_string_equal(line, want[i]);
    }
    assert_int_equal(lr_read_line(&r, &line, &len), LR_EOF);
    assert_int_equal(lr_read_line(&r, &line, &len), LR_EOF);
    pthread_join(t, NULL);
    lr_free(&r);
    close(sv[0]);
}

/* A 3 MiB line, as a large response would be, arriving in odd-sized pieces. */
static void test_long_line_grows_buffer(void **state)
{
    (void)state;
    size_t big = 3 * 1024 * 1024;
    char *input = malloc(big + 16);
    for (size_t i = 0; i < big; i++)
        input[i] = (char)('a' + i % 26);
    memcpy(input + big, "\nnext\n", 6);
    int sv[2];
    pair(sv);
    struct feed f = { sv[1], input, big + 6, 77777, true };
    pthread_t t;
    pthread_create(&t, NULL, feed_main, &f);

    struct line_reader r;
    lr_init(&r, sv[0], CLIENT_MAX_RESPONSE_LINE);
    char *line;
    size_t len;
    assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
    assert_int_equal(len, big);
    assert_memory_equal(line, input, big);
    assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
    assert_string_equal(line, "next");
    assert_int_equal(lr_read_line(&r, &line, &len), LR_EOF);
    pthread_join(t, NULL);
    lr_free(&r);
    close(sv[0]);
    free(input);
}

/* Over max: reported once, skipped to its newline, the next line is intact, both
 * when the whole line is buffered and when it arrives piece by piece. */
static void test_overlong_line_dropped(void **state)
{
    (void)state;
    for (size_t chunk = 7; chunk <= 4096; chunk *= 585) {
        char input[1024];
        int n = snprintf(input, sizeof input, "ok\n%0200d\nexact-16-bytes!!\nafter\n", 5);
        int sv[2];
        pair(sv);
        struct feed f = { sv[1], input, (size_t)n, chunk, true };
        pthread_t t;
        pthread_create(&t, NULL, feed_main, &f);

        struct line_reader r;
        lr_init(&r, sv[0], 16);
        char *line;
        size_t len;
        assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
        assert_string_equal(line, "ok");
        assert_int_equal(lr_read_line(&r, &line, &len), LR_TOO_LONG);
        assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
        assert_string_equal(line, "exact-16-bytes!!");
        assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
        assert_string_equal(line, "after");
        assert_int_equal(lr_read_line(&r, &line, &len), LR_EOF);
        pthread_join(t, NULL);
        lr_free(&r);
        close(sv[0]);
    }
}

/* lr_next() never reads: without data it asks for lr_fill(). */
static void test_next_without_data(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    struct line_reader r;
    lr_init(&r, sv[0], 64);
    char *line;
    size_t len;
    assert_int_equal(lr_next(&r, &line, &len), LR_AGAIN);
    assert_int_equal(write_line(sv[1], "a", 1), 0);
    assert_int_equal(write_all(sv[1], "b", 1), 0);
    assert_true(lr_fill(&r) > 0);
    assert_int_equal(lr_next(&r, &line, &len), LR_LINE);
    assert_string_equal(line, "a");
    assert_int_equal(lr_next(&r, &line, &len), LR_AGAIN);
    close(sv[1]);
    assert_int_equal(lr_fill(&r), 0);
    assert_int_equal(lr_next(&r, &line, &len), LR_LINE);
    assert_string_equal(line, "b");
    assert_int_equal(lr_next(&r, &line, &len), LR_EOF);
    lr_free(&r);
    close(sv[0]);
}

/* ---- writing ------------------------------------------------------------------------- */

struct drain {
    int fd;
    size_t got;
    unsigned sum;
};

static void *drain_main(void *arg)
{
    struct drain *d = arg;
    char buf[1000];
    ssize_t n;
    while ((n = read(d->fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            d->sum += (unsigned char)buf[i];
        d->got += (size_t)n;
    }
    return NULL;
}

/* 8 MiB through a socket buffer far smaller: write_all() finishes the partial
 * writes. */
static void test_write_all_large(void **state)
{
    (void)state;
    size_t big = 8 * 1024 * 1024;
    char *data = malloc(big);
    unsigned sum = 0;
    for (size_t i = 0; i < big; i++) {
        data[i] = (char)(i * 7);
        sum += (unsigned char)data[i];
    }
    int sv[2];
    pair(sv);
    struct drain d = { .fd = sv[0] };
    pthread_t t;
    pthread_create(&t, NULL, drain_main, &d);
    assert_int_equal(write_line(sv[1], data, big), 0);
    close(sv[1]);
    pthread_join(t, NULL);
    assert_int_equal(d.got, big + 1);
    assert_int_equal(d.sum, sum + '\n');
    close(sv[0]);
    free(data);
}

/* ---- JSON-RPC -------------------------------------------------------------------------- */

/* A fake daemon: reads one request, then answers with noise before the match. */
static void *fake_server(void *arg)
{
    int fd = *(int *)arg;
    struct line_reader r;
    lr_init(&r, fd, CLIENT_MAX_REQUEST_LINE);
    char *line;
    size_t len;
    assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
    cJSON *req = cJSON_Parse(line);
    assert_string_equal(cJSON_GetObjectItem(req, "method")->valuestring, "tools/list");
    assert_string_equal(cJSON_GetObjectItem(req, "jsonrpc")->valuestring, "2.0");
    int id = cJSON_GetObjectItem(req, "id")->valueint;
    cJSON_Delete(req);
    char out[512];
    int n = snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"id\":%d}\n"
                     "not json at all\n"
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"wrong\":true}}\n"
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"tools\":[]}}\n",
                     id, id + 100, id);
    assert_int_equal(write_all(fd, out, (size_t)n), 0);
    /* The second request gets no answer: the connection closes. */
    assert_int_equal(lr_read_line(&r, &line, &len), LR_LINE);
    lr_free(&r);
    close(fd);
    return NULL;
}

static void test_rpc_request_matches_id(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    pthread_t t;
    pthread_create(&t, NULL, fake_server, &sv[1]);
    struct rpc_client c;
    rpc_init(&c, sv[0]);
    char err[256];
    cJSON *resp = rpc_request(&c, "tools/list", NULL, err, sizeof err);
    assert_non_null(resp);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(resp, "result"), "tools"));
    cJSON_Delete(resp);
    resp = rpc_request(&c, "ping", cJSON_CreateObject(), err, sizeof err);
    assert_null(resp);
    assert_non_null(strstr(err, "closed the connection before answering ping"));
    assert_int_equal(c.failure, RPC_FAIL_CONNECTION);
    pthread_join(t, NULL);
    rpc_close(&c);
}

/* An error with id null answers the one request in flight; no answer at all is given
 * up on after answer_timeout_ms, naming the request; text that is not UTF-8 is not
 * sent. */
static void test_rpc_request_null_id_timeout_and_bad_text(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    struct rpc_client c;
    rpc_init(&c, sv[0]);
    c.answer_timeout_ms = 100;
    static const char null_error[] =
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n";
    assert_int_equal(write_all(sv[1], null_error, strlen(null_error)), 0);
    char err[512];
    cJSON *resp = rpc_request(&c, "ping", NULL, err, sizeof err);
    assert_non_null(resp);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(resp, "error"), "code")->valueint,
                     -32700);
    cJSON_Delete(resp);

    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", "debug_query");
    assert_null(rpc_request(&c, "tools/call", params, err, sizeof err));
    assert_int_equal(c.failure, RPC_FAIL_TIMEOUT);
    assert_string_equal(err, "the strobe daemon did not answer debug_query within 0.1 s: it "
                        "may be stuck; daemon.log in $STROBE_HOME (default ~/.strobe) says "
                        "what it did, and `kill $(cat ~/.strobe/strobe.pid)` ends it");

    params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "command", "/tmp/t\xFF");
    assert_null(rpc_request(&c, "debug_launch", params, err, sizeof err));
    assert_int_equal(c.failure, RPC_FAIL_INPUT);
    assert_non_null(strstr(err, "cannot send debug_launch: byte 0xFF at offset "));
    /* the two requests sent, nothing of the third */
    char buf[4096];
    ssize_t n = read(sv[1], buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "\"ping\""));
    assert_non_null(strstr(buf, "\"debug_query\""));
    assert_null(strstr(buf, "debug_launch"));
    close(sv[1]);
    rpc_close(&c);
}

/* rpc_call_tool: the structured result, or the engine's error as "CODE: sentence". */
static void test_rpc_call_tool_results_and_errors(void **state)
{
    (void)state;
    static const char answers[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":{\"n\":3}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"isError\":true,"
        "\"content\":[{\"type\":\"text\",\"text\":\"{}\"}],\"structuredContent\":"
        "{\"error\":{\"code\":\"PROCESS_EXITED\",\"message\":\"It has exited.\"}}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":\"no such tool\"}}\n";
    int sv[2];
    pair(sv);
    /* the server end stays open: the client's requests must not meet a closed peer */
    struct feed f = {sv[1], answers, sizeof answers - 1, 64, false};
    pthread_t t;
    pthread_create(&t, NULL, feed_main, &f);
    struct rpc_client c;
    rpc_init(&c, sv[0]);
    char err[256];
    cJSON *v = rpc_call_tool(&c, "debug_query", cJSON_CreateObject(), err, sizeof err);
    assert_non_null(v);
    assert_int_equal(cJSON_GetObjectItem(v, "n")->valueint, 3);
    cJSON_Delete(v);
    assert_null(rpc_call_tool(&c, "debug_session", cJSON_CreateObject(), err, sizeof err));
    assert_string_equal(err, "PROCESS_EXITED: It has exited.");
    assert_null(rpc_call_tool(&c, "nosuch", cJSON_CreateObject(), err, sizeof err));
    assert_string_equal(err, "nosuch: no such tool");
    pthread_join(t, NULL);
    rpc_close(&c);
    close(sv[1]);
}

static void test_connect_without_daemon(void **state)
{
    (void)state;
    char dir[] = "/tmp/strobe-test-client-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("STROBE_HOME", dir, 1);
    char err[512];
    assert_int_equal(client_connect(false, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot connect to the strobe daemon"));
    assert_non_null(strstr(err, dir));
    rmdir(dir);
}

/* ---- strobectl arguments ------------------------------------------------------------- */


/* Asserts that the arguments print as this compact JSON. */
static void assert_args(const struct ctl_cmd *c, const char *json)
{
    char *s = cJSON_PrintUnformatted(c->args);
    assert_string_equal(s, json);
    free(s);
}

static void test_ctl_launch(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "launch", "./app", "arg1", "--json", NULL), 0);
    assert_int_equal(c.kind, CTL_LAUNCH);
    assert_string_equal(c.tool, "debug_launch");
    assert_false(c.json); /* after PROGRAM, everything is the program's */
    /* the program runs in the caller's directory, as from a shell */
    assert_args(&c, "{\"command\":\"/home/u/proj/app\",\"projectRoot\":\"/home/u/proj\","
                    "\"cwd\":\"/home/u/proj\",\"args\":[\"arg1\",\"--json\"]}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "--json", "launch", "--env", "A=1", "--env=B=x=y",
                           "--cwd", "run", "--project-root", "/src", "build/app", "--",
                           "-v", "--", NULL), 0);
    assert_true(c.json);
    assert_args(&c, "{\"env\":{\"A\":\"1\",\"B\":\"x=y\"},\"cwd\":\"/home/u/proj/run\","
                    "\"projectRoot\":\"/src\",\"command\":\"/home/u/proj/build/app\","
                    "\"args\":[\"-v\",\"--\"]}");
    ctl_cmd_free(&c);

    /* A bare name is left to the daemon's PATH search; `--` before PROGRAM. */
    assert_int_equal(parse(&c, err, "launch", "--json", "--", "ls", NULL), 0);
    assert_true(c.json);
    assert_args(&c, "{\"command\":\"ls\",\"projectRoot\":\"/home/u/proj\","
                    "\"cwd\":\"/home/u/proj\",\"args\":[]}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "launch", "--env", "NOEQUALS", "x", NULL), -1);
    assert_non_null(strstr(err, "KEY=VALUE"));
    assert_non_null(strstr(c.usage, "strobectl launch"));
    assert_null(c.args);
    assert_int_equal(parse(&c, err, "launch", "--cwd", NULL), -1);
    assert_string_equal(err, "--cwd needs a value");
    assert_int_equal(parse(&c, err, "launch", NULL), -1);
    assert_string_equal(err, "launch needs a PROGRAM");
    assert_int_equal(parse(&c, err, "launch", "--bogus", "x", NULL), -1);
    assert_string_equal(err, "unknown option --bogus");
}

static void test_ctl_query(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "query", "--type", "stderr", "s-1", "--function", "foo",
                           "--function-regex", "^f", "--file", "a.c", "--pid", "42",
                           "--thread", "main", "--since", "-5s", "--until", "1000",
                           "--min-duration", "500", "--limit", "10", "--offset", "20",
                           "--after", "77", "--verbose", "--json", NULL), 0);
    assert_int_equal(c.kind, CTL_QUERY);
    assert_true(c.json);
    assert_args(&c, "{\"eventType\":\"stderr\",\"function\":{\"contains\":\"foo\","
                    "\"matches\":\"^f\"},\"sourceFile\":{\"contains\":\"a.c\"},\"pid\":42,"
                    "\"threadName\":{\"contains\":\"main\"},\"timeFrom\":\"-5s\","
                    "\"timeTo\":1000,\"minDurationNs\":500,\"limit\":10,\"offset\":20,"
                    "\"afterEventId\":\"77\",\"verbose\":true,\"sessionId\":\"s-1\"}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "query", "s", "--function-equals", "main",
                           "--since=-500ms", "--limit=5", NULL), 0);
    assert_args(&c, "{\"function\":{\"equals\":\"main\"},\"timeFrom\":\"-500ms\","
                    "\"limit\":5,\"sessionId\":\"s\"}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "query", "s", "--limit", "ten", NULL), -1);
    assert_string_equal(err, "--limit needs a whole number, not 'ten'");
    assert_int_equal(parse(&c, err, "query", "s", "--pid", "12x", NULL), -1);
    assert_string_equal(err, "--pid needs a whole number, not '12x'");
    assert_int_equal(parse(&c, err, "query", "s", "--offset", "-1", NULL), -1);
    assert_non_null(strstr(err, "--offset must be between 0 and"));
    assert_int_equal(parse(&c, err, "query", "s", "--limit", "99999999999999999999", NULL),
                     -1);
    assert_int_equal(parse(&c, err, "query", NULL), -1);
    assert_string_equal(err, "query needs a SESSION id");
    assert_int_equal(parse(&c, err, "query", "a", "b", NULL), -1);
    assert_string_equal(err, "unexpected argument 'b'");
    assert_int_equal(parse(&c, err, "query", "a", "--verbose=yes", NULL), -1);
    assert_string_equal(err, "--verbose takes no value");
}

static void test_ctl_sessions_and_trace(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "sessions", NULL), 0);
    assert_string_equal(c.tool, "debug_session");
    assert_args(&c, "{\"action\":\"list\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "sessions", "x", NULL), -1);

    assert_int_equal(parse(&c, err, "stop", "s1", "--retain", NULL), 0);
    assert_args(&c, "{\"action\":\"stop\",\"retain\":true,\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "status", "s1", NULL), 0);
    assert_args(&c, "{\"action\":\"status\",\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "delete", NULL), -1);
    assert_string_equal(err, "delete needs a SESSION id");
    assert_int_equal(parse(&c, err, "status", "s1", "--retain", NULL), -1);

    assert_int_equal(parse(&c, err, "trace", "--add", "foo::*", "s1", "--add", "@usercode",
                           "--remove", "bar", "--project-root", "sub", NULL), 0);
    assert_string_equal(c.tool, "debug_trace");
    assert_args(&c, "{\"add\":[\"foo::*\",\"@usercode\"],\"remove\":[\"bar\"],"
                    "\"projectRoot\":\"/home/u/proj/sub\",\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "trace", "--add", "x", NULL), 0);
    assert_args(&c, "{\"add\":[\"x\"]}");
    ctl_cmd_free(&c);
}

static void test_ctl_misc(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "--version", NULL), 0);
    assert_int_equal(c.kind, CTL_VERSION);
    assert_int_equal(parse(&c, err, "--help", NULL), 0);
    assert_int_equal(c.kind, CTL_HELP);
    assert_int_equal(parse(&c, err, NULL), -1);
    assert_string_equal(err, "no verb given; strobectl --help lists them");
    assert_int_equal(parse(&c, err, "frobnicate", NULL), -1);
    assert_string_equal(err, "unknown verb 'frobnicate'; strobectl --help lists them");
    assert_int_equal(parse(&c, err, "--frob", NULL), -1);

    assert_int_equal(parse(&c, err, "tools", "--json", NULL), 0);
    assert_int_equal(c.kind, CTL_TOOLS);
    assert_true(c.json);
    assert_null(c.args);
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "call", "debug_query", "{\"sessionId\":\"s\"}", NULL),
                     0);
    assert_string_equal(c.tool, "debug_query");
    assert_args(&c, "{\"sessionId\":\"s\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "call", "x", NULL), 0);
    assert_args(&c, "{}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "call", "x", "[1]", NULL), -1);
    assert_int_equal(parse(&c, err, "call", "x", "{bad", NULL), -1);
    assert_int_equal(parse(&c, err, "call", NULL), -1);
}

static void test_ctl_crash(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "crash", "s1", NULL), 0);
    assert_int_equal(c.kind, CTL_CRASH);
    assert_string_equal(c.tool, "debug_query");
    assert_false(c.full_paths || c.registers || c.json);
    assert_args(&c, "{\"eventType\":\"crash\",\"verbose\":true,\"limit\":500,"
                    "\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "crash", "--pid=42", "--registers", "s1", "--json",
                           "--full-paths", "--pid", "43", NULL), 0);
    assert_true(c.full_paths && c.registers && c.json);
    assert_args(&c, "{\"eventType\":\"crash\",\"verbose\":true,\"limit\":500,\"pid\":43,"
                    "\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "crash", NULL), -1);
    assert_string_equal(err, "crash needs a SESSION id");
    assert_non_null(strstr(c.usage, "strobectl crash SESSION"));
    assert_int_equal(parse(&c, err, "crash", "s1", "s2", NULL), -1);
    assert_string_equal(err, "unexpected argument 's2'");
    assert_int_equal(parse(&c, err, "crash", "s1", "--pid", "0", NULL), -1);
    assert_int_equal(parse(&c, err, "crash", "s1", "--registers=yes", NULL), -1);
    assert_string_equal(err, "--registers takes no value");
    assert_int_equal(parse(&c, err, "crash", "s1", "--type", "stdout", NULL), -1);
    assert_string_equal(err, "unknown option --type");
}

static void test_ctl_stacks(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "stacks", "s1", NULL), 0);
    assert_int_equal(c.kind, CTL_STACKS);
    assert_string_equal(c.tool, "debug_session");
    assert_args(&c, "{\"action\":\"stacks\",\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "stacks", "--pid", "42", "s1", "--json", NULL), 0);
    assert_true(c.json);
    assert_args(&c, "{\"action\":\"stacks\",\"pid\":42,\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "stacks", NULL), -1);
    assert_string_equal(err, "stacks needs a SESSION id");
    assert_non_null(strstr(c.usage, "strobectl stacks SESSION"));
    assert_int_equal(parse(&c, err, "stacks", "s1", "s2", NULL), -1);
    assert_int_equal(parse(&c, err, "stacks", "s1", "--pid", "0", NULL), -1);
    assert_int_equal(parse(&c, err, "stacks", "s1", "--full-paths", NULL), -1);
}

static void test_ctl_memory(void **state)
{
    (void)state;
    struct ctl_cmd c;
    char err[256];
    assert_int_equal(parse(&c, err, "memory", "read", "s1", "g", "cfg.x", "--address",
                           "0x10", "--type", "u8", "--depth", "2", NULL), 0);
    assert_int_equal(c.kind, CTL_MEM_READ);
    assert_string_equal(c.tool, "debug_memory");
    assert_args(&c, "{\"targets\":[{\"variable\":\"g\"},{\"variable\":\"cfg.x\"},"
                    "{\"address\":\"0x10\",\"type\":\"u8\"}],\"action\":\"read\","
                    "\"depth\":2,\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", "write", "s1", "a=3", "b=-2.5", "c=RED",
                           "d=true", "e=0x10", NULL), 0);
    assert_int_equal(c.kind, CTL_MEM_WRITE);
    assert_args(&c, "{\"targets\":[{\"variable\":\"a\",\"value\":3},"
                    "{\"variable\":\"b\",\"value\":-2.5},{\"variable\":\"c\",\"value\":"
                    "\"RED\"},{\"variable\":\"d\",\"value\":true},{\"variable\":\"e\","
                    "\"value\":\"0x10\"}],\"action\":\"write\",\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", "poll", "s1", "g", "--interval", "100",
                           "--duration", "2000", NULL), 0);
    assert_int_equal(c.kind, CTL_MEM_POLL);
    assert_args(&c, "{\"targets\":[{\"variable\":\"g\"}],\"action\":\"read\","
                    "\"poll\":{\"intervalMs\":100,\"durationMs\":2000},"
                    "\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", "poll", "s1", "g", NULL), -1);
    assert_non_null(strstr(c.usage, "memory poll SESSION"));
    assert_int_equal(parse(&c, err, "memory", NULL), -1);
    assert_int_equal(parse(&c, err, "memory", "write", "s1", "=3", NULL), -1);

    assert_int_equal(parse(&c, err, "watch", "s1", "cfg.max_retries", "--access",
                           "readwrite", NULL), 0);
    assert_int_equal(c.kind, CTL_WATCH);
    assert_args(&c, "{\"action\":\"watch\",\"access\":\"readwrite\",\"sessionId\":"
                    "\"s1\",\"variable\":\"cfg.max_retries\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "watch", "s1", "--address", "0x10", "--size", "4",
                           NULL), 0);
    assert_args(&c, "{\"action\":\"watch\",\"address\":\"0x10\",\"size\":4,"
                    "\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "unwatch", "s1", "all", NULL), 0);
    assert_args(&c, "{\"action\":\"unwatch\",\"sessionId\":\"s1\",\"watchId\":\"*\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "unwatch", "s1", "3", NULL), 0);
    assert_args(&c, "{\"action\":\"unwatch\",\"sessionId\":\"s1\",\"watchId\":3}");
    ctl_cmd_free(&c);

    assert_int_equal(parse(&c, err, "trace", "s1", "--watch", "g@ns::*", "--watch", "h",
                           "--unwatch", "old", NULL), 0);
    assert_args(&c, "{\"watches\":{\"add\":[{\"variable\":\"g\",\"on\":[\"ns::*\"]},"
                    "{\"variable\":\"h\"}],\"remove\":[\"old\"]},\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", "s1", "cfg.retries", "--depth", "3",
                           "--address", "0x10:i32", "--address", "0x20:bytes:64", NULL), 0);
    assert_int_equal(c.kind, CTL_MEMORY);
    assert_string_equal(c.tool, "debug_memory");
    assert_args(&c, "{\"targets\":[{\"variable\":\"cfg.retries\"},{\"address\":\"0x10\","
                    "\"type\":\"i32\"},{\"address\":\"0x20\",\"type\":\"bytes\",\"size\":64}],"
                    "\"depth\":3,\"sessionId\":\"s1\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", "s1", "--set", "g_int=-7", "--set",
                           "g_bool=false", "--set", "g_name=a=b", "--pid", "42", NULL), 0);
    assert_args(&c, "{\"targets\":[{\"variable\":\"g_int\",\"value\":\"-7\"},"
                    "{\"variable\":\"g_bool\",\"value\":false},{\"variable\":\"g_name\","
                    "\"value\":\"a=b\"}],\"pid\":42,\"sessionId\":\"s1\",\"action\":\"write\"}");
    ctl_cmd_free(&c);
    assert_int_equal(parse(&c, err, "memory", NULL), -1);
    assert_string_equal(err, "memory needs a SESSION id");
    assert_non_null(strstr(c.usage, "strobectl memory SESSION"));
    assert_int_equal(parse(&c, err, "memory", "s1", NULL), -1);
    assert_string_equal(err, "memory needs a VARIABLE, --address or --set");
    assert_int_equal(parse(&c, err, "memory", "s1", "x", "--set", "y=1", NULL), -1);
    assert_string_equal(err, "memory reads or writes (--set), not both at once");
    assert_int_equal(parse(&c, err, "memory", "s1", "--set", "y", NULL), -1);
    assert_string_equal(err, "--set needs VARIABLE=VALUE, not 'y'");
    assert_int_equal(parse(&c, err, "memory", "s1", "--address", "0x10", NULL), -1);
    assert_string_equal(err, "--address needs ADDR:TYPE or ADDR:bytes:SIZE, not '0x10'");
    assert_int_equal(parse(&c, err, "memory", "s1", "--address", "0x10:bytes:x", NULL), -1);
    assert_int_equal(parse(&c, err, "memory", "s1", "x", "--depth", "6", NULL), -1);
    assert_int_equal(parse(&c, err, "memory", "s1", "--set", "y=1", "--depth", "2", NULL), -1);
    assert_string_equal(err, "--depth goes with reads, not --set");
}

/* The report of a parsed event, with flags. Caller frees. */
static char *report(const char *event_json, unsigned flags)
{
    cJSON *e = cJSON_Parse(event_json);
    assert_non_null(e);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    crash_report_print(f, e, "app-1", flags);
    fclose(f);
    cJSON_Delete(e);
    return text;
}

/* A SIGSEGV as the daemon stores it: frames with and without source, an inlined
 * one, a long argument, cut frames, locals of frame 1, registers, last events. */
static const char segv_event[] =
    "{\"id\":\"9\",\"timestampNs\":5000,\"eventType\":\"crash\",\"pid\":7,\"threadId\":8,"
    "\"function\":\"get\",\"sourceFile\":\"/src/app/node.c\",\"line\":31,"
    "\"text\":\"SIGSEGV (SEGV_MAPERR) at address 0x0 in get (node.c:31)\","
    "\"kind\":\"signal\",\"signal\":\"SIGSEGV\",\"signalNumber\":11,"
    "\"signalCode\":\"SEGV_MAPERR\",\"faultAddress\":\"0x0\",\"handlerInstalled\":true,"
    "\"frames\":["
    "{\"index\":0,\"function\":\"get\",\"file\":\"/src/app/node.c\",\"line\":31,"
    "\"pc\":\"0x1139\",\"module\":\"/src/app/app\",\"inlined\":true,"
    "\"arguments\":[{\"name\":\"n\",\"type\":\"struct node *\",\"value\":null}]},"
    "{\"index\":1,\"function\":\"walk\",\"file\":\"/src/app/node.c\",\"line\":40,"
    "\"pc\":\"0x1139\",\"module\":\"/src/app/app\",\"arguments\":["
    "{\"name\":\"name\",\"type\":\"const char *\",\"value\":"
    "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"},"
    "{\"name\":\"depth\",\"type\":\"int\",\"value\":2}]},"
    "{\"index\":2,\"function\":\"__libc_start_call_main\",\"pc\":\"0x7f0000029d90\","
    "\"module\":\"/usr/lib/x86_64-linux-gnu/libc.so.6\",\"arguments\":[]},"
    "{\"index\":3,\"pc\":\"0x7f0000029e40\","
    "\"module\":\"/usr/lib/x86_64-linux-gnu/libc.so.6\"}],"
    "\"framesTotal\":6,\"crashFrame\":1,"
    "\"locals\":[{\"name\":\"count\",\"type\":\"int\",\"value\":3},"
    "{\"name\":\"ratio\",\"type\":\"double\",\"value\":0.75},"
    "{\"name\":\"label\",\"type\":\"char[16]\",\"value\":\"widget\"},"
    "{\"name\":\"origin\",\"type\":\"struct point\",\"value\":{\"x\":4,\"y\":-2}}],"
    "\"registers\":{\"rip\":\"0x1139\",\"rsp\":\"0x7ffc0000\",\"rax\":\"0x0\","
    "\"rbx\":\"0x1\",\"eflags\":\"0x10246\"},"
    "\"lastEventIds\":[\"5\",\"6\"]}";

static void test_crash_report_signal(void **state)
{
    (void)state;
    char *t = report(segv_event, 0);
    assert_string_equal(t,
        "session app-1, pid 7, thread 8: SIGSEGV (SEGV_MAPERR) at address 0x0 in get "
        "(node.c:31)\n"
        "the program has its own SIGSEGV handler\n"
        "#0  get (n=null) at node.c:31 [inlined]\n"
        "#1  walk (name=\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9...,"
        " depth=2) at node.c:40\n"
        "#2  __libc_start_call_main () from libc.so.6\n"
        "#3  0x7f0000029e40 in ?? () from libc.so.6\n"
        "... 2 more frames\n"
        "locals of #1 walk:\n"
        "  count = 3\n"
        "  ratio = 0.75\n"
        "  label = \"widget\"\n"
        "  origin = {\"x\":4,\"y\":-2}\n"
        "last events before the crash: 5, 6\n");
    free(t);

    t = report(segv_event, CRASH_REPORT_FULL_PATHS | CRASH_REPORT_REGISTERS);
    assert_non_null(strstr(t, "#0  get (n=null) at /src/app/node.c:31 [inlined]\n"));
    assert_non_null(strstr(t, "#3  0x7f0000029e40 in ?? () from "
                              "/usr/lib/x86_64-linux-gnu/libc.so.6\n"));
    assert_non_null(strstr(t, "  origin = {\"x\":4,\"y\":-2}\n"
                              "registers:\n"
                              "  rip    0x1139              rsp    0x7ffc0000          "
                              "rax    0x0                 rbx    0x1\n"
                              "  eflags 0x10246\n"
                              "last events"));
    free(t);
}

/* The language-level details, a summary composed without "text", no frames, an
 * empty locals list, registers asked for but not recorded. */
static void test_crash_report_details(void **state)
{
    (void)state;
    char *t = report(
        "{\"pid\":7,\"kind\":\"assertion\",\"signal\":\"SIGABRT\",\"signalCode\":\"SI_TKILL\","
        "\"function\":\"check\",\"sourceFile\":\"/src/a.c\",\"line\":12,"
        "\"assertion\":{\"expression\":\"count > 0\",\"file\":\"/src/a.c\",\"line\":12,"
        "\"function\":\"check\"},\"abortMessage\":\"a: a.c:12: check: Assertion failed.\","
        "\"frames\":[],\"crashFrame\":0,\"locals\":[]}", CRASH_REPORT_REGISTERS);
    assert_string_equal(t,
        "session app-1, pid 7: SIGABRT (SI_TKILL) in check (a.c:12)\n"
        "assertion failed: count > 0 in check at a.c:12\n"
        "locals: none\n"
        "registers: not recorded\n");
    free(t);

    t = report("{\"kind\":\"uncaught_exception\",\"signal\":\"SIGABRT\","
               "\"abortMessage\":\"terminate called\\nsecond line\\n\","
               "\"exception\":{\"type\":\"std::runtime_error\",\"what\":\"config\\nmissing\"},"
               "\"stackOverflow\":true}", 0);
    assert_string_equal(t,
        "session app-1: SIGABRT\n"
        "stack overflow\n"
        "abort message: terminate called\n"
        "  second line\n"
        "uncaught exception: std::runtime_error\n"
        "  what(): config\n"
        "  missing\n");
    free(t);

    t = report("{\"pid\":3,\"threadId\":4,\"kind\":\"panic\",\"function\":\"app::parse\","
               "\"panic\":{\"message\":\"bad input: 7\",\"file\":\"src/main.rs\",\"line\":5,"
               "\"column\":9,\"thread\":\"main\"}}", 0);
    assert_string_equal(t,
        "session app-1, pid 3, thread 4: panic in app::parse\n"
        "thread 'main' panicked at src/main.rs:5:9:\n"
        "  bad input: 7\n");
    free(t);

    t = report("{\"kind\":\"sanitizer\",\"sanitizer\":{\"tool\":\"AddressSanitizer\","
               "\"report\":\"heap-buffer-overflow on address 0x6030\",\"summary\":"
               "\"SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:28 in fill\","
               "\"reportEventIds\":[\"12\",\"40\"]}}", 0);
    assert_string_equal(t,
        "session app-1: sanitizer report\n"
        "AddressSanitizer: heap-buffer-overflow on address 0x6030\n"
        "  SUMMARY: AddressSanitizer: heap-buffer-overflow a.c:28 in fill\n"
        "  report in events: 12, 40\n");
    free(t);

    t = report("{}", 0);
    assert_string_equal(t, "session app-1: crash\n");
    free(t);

    /* The innermost and outermost frames kept, the middle cut; arguments of a frame
     * with source not recorded. */
    t = report("{\"text\":\"SIGSEGV\",\"framesTotal\":9,\"frames\":["
               "{\"index\":0,\"function\":\"f\",\"file\":\"/s/a.c\",\"line\":3,"
               "\"arguments\":[]},"
               "{\"index\":1,\"function\":\"f\",\"file\":\"/s/a.c\",\"line\":4},"
               "{\"index\":7,\"function\":\"_start\",\"module\":\"/s/app\"}]}", 0);
    assert_string_equal(t,
        "session app-1: SIGSEGV\n"
        "#0  f () at a.c:3\n"
        "#1  f (...) at a.c:4\n"
        "... 5 more frames\n"
        "#7  _start () from app\n"
        "... 1 more frame\n");
    free(t);
}

/* ---- renderers --------------------------------------------------------------------- */

/* What the renderers write for one answer, as a malloc'd string. */
struct capture {
    char *text;
    size_t len;
    FILE *f;
};

static FILE *capture_start(struct capture *c)
{
    c->text = NULL;
    c->len = 0;
    c->f = open_memstream(&c->text, &c->len);
    assert_non_null(c->f);
    return c->f;
}

static char *capture_end(struct capture *c)
{
    fclose(c->f);
    return c->text;
}

static void test_render_query(void **state)
{
    (void)state;
    cJSON *r = cJSON_Parse(
        "{\"events\":["
        "{\"id\":\"1\",\"timestampNs\":1500000,\"eventType\":\"stdout\",\"text\":\"hello\"},"
        "{\"id\":\"2\",\"timestampNs\":2000000,\"eventType\":\"function_exit\","
        "\"function\":\"add\",\"sourceFile\":\"/src/m.c\",\"line\":4,\"durationNs\":1500,"
        "\"returnValue\":3,\"pid\":9,\"threadName\":\"main\"},"
        "{\"id\":\"3\",\"timestampNs\":3000000,\"eventType\":\"process_exit\",\"pid\":9,"
        "\"exitCode\":3}],"
        "\"totalCount\":7,\"hasMore\":true,\"lastEventId\":\"3\",\"pids\":[9,12]}");
    cJSON *args = cJSON_Parse("{\"sessionId\":\"s\",\"offset\":2}");
    struct capture c;
    render_query(capture_start(&c), r, args, "--after", "--offset");
    char *t = capture_end(&c);
    assert_string_equal(t,
                        "[     1.500 ms] stdout  hello\n"
                        "[     2.000 ms] function_exit add (m.c:4) took 0.002 ms => 3\n"
                        "[     3.000 ms] process_exit exited with code 3\n"
                        "3 of 7 events (more: --offset 5)\n"
                        "pids: 9, 12\n");
    free(t);

    /* Polling names its own continuation; verbose shows the process and thread. */
    cJSON_AddStringToObject(args, "afterEventId", "0");
    cJSON_AddTrueToObject(args, "verbose");
    render_query(capture_start(&c), r, args, "after", "offset");
    t = capture_end(&c);
    assert_non_null(strstr(t, "add (/src/m.c:4) took 0.002 ms => 3  {pid 9, thread main}\n"));
    assert_non_null(strstr(t, "3 of 7 events (more: after 3)\n"));
    free(t);
    cJSON_Delete(args);
    cJSON_Delete(r);
}

static void test_render_poll_and_snapshots(void **state)
{
    (void)state;
    struct capture c;
    cJSON *r = cJSON_Parse("{\"polling\":true,\"pollId\":2,\"variableCount\":1,"
                           "\"intervalMs\":100,\"durationMs\":1000,\"expectedSamples\":10,"
                           "\"errors\":[{\"target\":\"n\",\"code\":\"VARIABLE_NOT_FOUND\","
                           "\"error\":\"No n.\"}]}");
    assert_int_equal(render_poll(capture_start(&c), r, "s1"), 1);
    char *t = capture_end(&c);
    assert_string_equal(t, "polling 1 target(s) every 100 ms for 1000 ms (poll 2, 10 samples)\n"
                           "n: VARIABLE_NOT_FOUND: No n. (not sampled)\n"
                           "read the samples: strobectl query s1 --type variable_snapshot\n");
    free(t);
    cJSON_Delete(r);

    r = cJSON_Parse("{\"events\":[{\"id\":\"1\",\"timestampNs\":1000000,\"eventType\":"
                    "\"variable_snapshot\",\"values\":{\"g\":3,\"t\":1.5},\"errors\":"
                    "{\"p->x\":\"MEMORY_UNREADABLE: NULL\"}},{\"id\":\"2\",\"timestampNs\":"
                    "2000000,\"eventType\":\"function_enter\",\"function\":\"f\","
                    "\"watchValues\":{\"g\":4}}],\"totalCount\":2,\"hasMore\":false}");
    cJSON *args = cJSON_Parse("{\"sessionId\":\"s\"}");
    render_query(capture_start(&c), r, args, "--after", "--offset");
    t = capture_end(&c);
    assert_string_equal(t, "[     1.000 ms] variable_snapshot g=3 t=1.5 p->x=<MEMORY_UNREADABLE>\n"
                           "[     2.000 ms] function_enter f [g=4]\n"
                           "2 of 2 events\n");
    free(t);
    cJSON_Delete(args);
    cJSON_Delete(r);
}

static void test_render_stacks(void **state)
{
    (void)state;
    cJSON *r = cJSON_Parse(
        "{\"sessionId\":\"s\",\"diagnosis\":\"deadlock: tid 11 (a) holds M1 (0x10) and "
        "waits for M2 (0x20) held by tid 12 (b), which waits for M1\",\"threads\":["
        "{\"tid\":10,\"pid\":10,\"name\":\"app\",\"state\":\"sleeping\",\"syscall\":"
        "\"futex\",\"wait\":{\"kind\":\"join\",\"address\":\"0x30\",\"joinedTid\":11},"
        "\"frames\":[\"__pthread_clockjoin_ex\",\"main (app.c:9)\"],\"ownFrame\":1},"
        "{\"tid\":11,\"pid\":10,\"name\":\"a\",\"state\":\"sleeping\",\"syscall\":"
        "\"futex\",\"wait\":{\"kind\":\"mutex\",\"address\":\"0x20\",\"ownerTid\":12},"
        "\"frames\":[\"__lll_lock_wait\",\"take (app.c:5)\"],\"ownFrame\":1,"
        "\"locals\":[{\"name\":\"round\",\"type\":\"int\",\"value\":2}],"
        "\"omittedFrames\":3},"
        "{\"tid\":13,\"pid\":10,\"name\":\"c\",\"state\":\"running\",\"frames\":["
        "{\"function\":\"spin\",\"file\":\"/src/app.c\",\"line\":3,\"pc\":\"0x1\"},"
        "{\"function\":\"start_thread\",\"pc\":\"0x2\"}]}]}");
    assert_non_null(r);
    struct capture c;
    render_stacks(capture_start(&c), r);
    char *t = capture_end(&c);
    assert_string_equal(t,
                        "deadlock: tid 11 (a) holds M1 (0x10) and waits for M2 (0x20) held "
                        "by tid 12 (b), which waits for M1\n"
                        "\n"
                        "Thread 10 (app) sleeping in futex, waiting for thread 11 to end "
                        "(pthread_join):\n"
                        "#0 __pthread_clockjoin_ex\n"
                        "#1 main (app.c:9)\n"
                        "\n"
                        "Thread 11 (a) sleeping in futex, waiting for mutex 0x20 held by 12:\n"
                        "#0 __lll_lock_wait\n"
                        "#1 take (app.c:5)\n"
                        "    round = 2\n"
                        "... 3 more frames\n"
                        "\n"
                        "Thread 13 (c) running:\n"
                        "#0 spin (/src/app.c:3)\n"
                        "#1 start_thread\n");
    free(t);
    cJSON_Delete(r);
}

static void test_render_memory(void **state)
{
    (void)state;
    cJSON *r = cJSON_Parse(
        "{\"results\":[{\"target\":\"cfg\",\"address\":\"0x10\",\"type\":\"struct config\","
        "\"size\":8,\"value\":{\"retries\":3,\"name\":\"cfg\"}},"
        "{\"target\":\"kMax\",\"type\":\"int\",\"size\":4,\"value\":64},"
        "{\"target\":\"g_int\",\"address\":\"0x20\",\"type\":\"int\",\"size\":4,"
        "\"oldValue\":-42,\"value\":7},"
        "{\"target\":\"0x30\",\"address\":\"0x30\",\"type\":\"bytes\",\"size\":4,"
        "\"file\":\"/h/memory/a.bin\",\"preview\":\"00 01 02 03\"},"
        "{\"target\":\"nope\",\"error\":{\"code\":\"VARIABLE_NOT_FOUND\",\"message\":"
        "\"No global.\"}}],\"truncated\":\"1 value(s) were cut.\"}");
    assert_non_null(r);
    struct capture c;
    render_memory(capture_start(&c), r);
    char *t = capture_end(&c);
    assert_string_equal(t,
                        "cfg = {\"retries\":3,\"name\":\"cfg\"} (struct config at 0x10)\n"
                        "kMax = 64 (int)\n"
                        "g_int: -42 -> 7 (int at 0x20)\n"
                        "0x30: 4 bytes at 0x30 saved to /h/memory/a.bin\n"
                        "    00 01 02 03\n"
                        "nope: VARIABLE_NOT_FOUND: No global.\n"
                        "\n"
                        "1 value(s) were cut.\n");
    free(t);
    cJSON_Delete(r);
}

static void test_render_sessions_and_results(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    cJSON *r = cJSON_Parse(
        "{\"sessions\":["
        "{\"sessionId\":\"app-2026-01-01-10h00\",\"status\":\"crashed\",\"signal\":\"SIGSEGV\","
        "\"pid\":41,\"startedAt\":1767261600000,\"binaryPath\":\"/bin/app\",\"retained\":true},"
        "{\"sessionId\":\"b-1\",\"status\":\"running\",\"pid\":7,\"binaryPath\":\"/bin/b\"}]}");
    struct capture c;
    render_sessions(capture_start(&c), r);
    char *t = capture_end(&c);
    assert_string_equal(t,
                        "SESSION               STATUS                     PID  STARTED"
                        "              BINARY\n"
                        "app-2026-01-01-10h00  crashed(SIGSEGV),retained   41  2026-01-01 "
                        "10:00:00  /bin/app\n"
                        "b-1                   running                      7  -"
                        "                    /bin/b\n");
    free(t);
    cJSON_Delete(r);

    r = cJSON_Parse("{\"sessions\":[]}");
    render_sessions(capture_start(&c), r);
    t = capture_end(&c);
    assert_string_equal(t, "no sessions\n");
    free(t);
    cJSON_Delete(r);

    r = cJSON_Parse("{\"sessionId\":\"s-1\",\"eventsCollected\":12,\"retained\":true}");
    render_stopped(capture_start(&c), r);
    t = capture_end(&c);
    assert_string_equal(t, "stopped s-1: 12 events collected, data retained\n");
    free(t);
    render_deleted(capture_start(&c), r);
    t = capture_end(&c);
    assert_string_equal(t, "deleted s-1\n");
    free(t);
    cJSON_Delete(r);

    r = cJSON_Parse("{\"status\":\"exited\",\"exitCode\":3,\"retained\":false,"
                    "\"endedAt\":null,\"pids\":[1,2],\"eventCounts\":{\"stdout\":2}}");
    render_fields(capture_start(&c), r);
    t = capture_end(&c);
    assert_string_equal(t,
                        "status:      exited\n"
                        "exitCode:    3\n"
                        "retained:    no\n"
                        "endedAt:     -\n"
                        "pids:        1, 2\n"
                        "eventCounts: stdout 2\n");
    free(t);
    cJSON_Delete(r);

    r = cJSON_Parse("{\"tools\":[{\"name\":\"debug_launch\"},{\"name\":\"debug_query\"}]}");
    render_tools(capture_start(&c), r);
    t = capture_end(&c);
    assert_string_equal(t, "debug_launch\ndebug_query\n");
    free(t);
    cJSON_Delete(r);
}

static void test_crash_report_all(void **state)
{
    (void)state;
    cJSON *none = cJSON_CreateArray();
    struct capture c;
    crash_report_print_all(capture_start(&c), none, "app-1", 42, 0);
    char *t = capture_end(&c);
    assert_string_equal(t, "no crash recorded in session app-1 for pid 42\n");
    free(t);
    crash_report_print_all(capture_start(&c), none, "app-1", 0, 0);
    t = capture_end(&c);
    assert_string_equal(t, "no crash recorded in session app-1\n");
    free(t);
    cJSON_Delete(none);

    cJSON *two = cJSON_Parse("[{\"pid\":1,\"text\":\"first\"},{\"pid\":2,\"text\":\"second\"}]");
    crash_report_print_all(capture_start(&c), two, "app-1", 0, 0);
    t = capture_end(&c);
    assert_string_equal(t, "session app-1, pid 1: first\n"
                           "\n"
                           "session app-1, pid 2: second\n");
    free(t);
    cJSON_Delete(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_in_small_pieces),
        cmocka_unit_test(test_long_line_grows_buffer),
        cmocka_unit_test(test_overlong_line_dropped),
        cmocka_unit_test(test_next_without_data),
        cmocka_unit_test(test_write_all_large),
        cmocka_unit_test(test_rpc_request_matches_id),
        cmocka_unit_test(test_rpc_request_null_id_timeout_and_bad_text),
        cmocka_unit_test(test_rpc_call_tool_results_and_errors),
        cmocka_unit_test(test_connect_without_daemon),
        cmocka_unit_test(test_ctl_launch),
        cmocka_unit_test(test_ctl_query),
        cmocka_unit_test(test_ctl_sessions_and_trace),
        cmocka_unit_test(test_ctl_misc),
        cmocka_unit_test(test_ctl_crash),
        cmocka_unit_test(test_ctl_stacks),
        cmocka_unit_test(test_ctl_memory),
        cmocka_unit_test(test_render_poll_and_snapshots),
        cmocka_unit_test(test_crash_report_signal),
        cmocka_unit_test(test_crash_report_details),
        cmocka_unit_test(test_render_query),
        cmocka_unit_test(test_render_stacks),
        cmocka_unit_test(test_render_memory),
        cmocka_unit_test(test_render_sessions_and_results),
        cmocka_unit_test(test_crash_report_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
