/*
 * test_client.c - unit tests of the client side: the line reader and writer of
 * cli/client.c over real sockets (partial reads and writes, long and overlong
 * lines, a last line without newline), the blocking JSON-RPC exchange, connecting
 * with no daemon, and strobectl's argument parsing (cli/ctl_args.c).
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
#include <unistd.h>

#include <cmocka.h>

#include "cli/client.h"
#include "cli/ctl_args.h"

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
    pthread_join(t, NULL);
    rpc_close(&c);
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

/* Parses a NULL-terminated argument list after "strobectl". */
static int parse(struct ctl_cmd *c, char *err, ...)
{
    char *argv[64] = { "strobectl" };
    int argc = 1;
    va_list ap;
    va_start(ap, err);
    char *a;
    while ((a = va_arg(ap, char *)))
        argv[argc++] = a;
    va_end(ap);
    return ctl_parse(argc, argv, "/home/u/proj", c, err, 256);
}

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
    assert_args(&c, "{\"command\":\"/home/u/proj/app\",\"projectRoot\":\"/home/u/proj\","
                    "\"args\":[\"arg1\",\"--json\"]}");
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
    assert_args(&c, "{\"command\":\"ls\",\"projectRoot\":\"/home/u/proj\",\"args\":[]}");
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
    assert_string_equal(err, "no command given");
    assert_int_equal(parse(&c, err, "frobnicate", NULL), -1);
    assert_string_equal(err, "unknown command 'frobnicate'");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_in_small_pieces),
        cmocka_unit_test(test_long_line_grows_buffer),
        cmocka_unit_test(test_overlong_line_dropped),
        cmocka_unit_test(test_next_without_data),
        cmocka_unit_test(test_write_all_large),
        cmocka_unit_test(test_rpc_request_matches_id),
        cmocka_unit_test(test_connect_without_daemon),
        cmocka_unit_test(test_ctl_launch),
        cmocka_unit_test(test_ctl_query),
        cmocka_unit_test(test_ctl_sessions_and_trace),
        cmocka_unit_test(test_ctl_misc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
