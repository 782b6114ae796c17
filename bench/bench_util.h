/*
 * bench_util.h - what the daemon-driving benchmarks share: a clock, medians, tool
 * calls that abort the benchmark on error, and the connection to the daemon.
 * Header-only because each benchmark is one executable.
 */
#ifndef STROBE_BENCH_UTIL_H
#define STROBE_BENCH_UTIL_H

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v and returns its median. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Sorts v and prints a Markdown row: what, runs, median, p95 (ms). */
static inline void report_row(const char *what, double *v, int n)
{
    double med = median(v, n);
    printf("| %s | %d | %.2f | %.2f |\n", what, n, med, v[(n * 95) / 100]);
}

extern char **environ;

/* Starts argv (found in PATH) with stdout and stderr on /dev/null; exits the
 * benchmark when it cannot. */
static inline pid_t bench_spawn_quiet(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench: cannot run %s\n", argv[0]);
        exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* Runs argv to its end with stdout and stderr on /dev/null; ms. */
static inline double bench_run_quiet(char *const argv[])
{
    double t0 = now_ms();
    waitpid(bench_spawn_quiet(argv), NULL, 0);
    return now_ms() - t0;
}

/* The result of a tool call; exits the benchmark on any error. */
/* Runs argv with stdout to a pipe (stderr to /dev/null); returns the elapsed_ns=
 * figure the program printed (a fixture timing its own loop). Exits when none. */
static inline double bench_run_elapsed(char *const argv[])
{
    int p[2];
    if (pipe(p) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(p[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    char buf[65536];
    size_t len = 0;
    ssize_t n;
    while ((n = read(p[0], buf + len, sizeof buf - 1 - len)) > 0 && len < sizeof buf - 1)
        len += (size_t)n;
    buf[len] = '\0';
    close(p[0]);
    waitpid(pid, NULL, 0);
    const char *e = strstr(buf, "elapsed_ns=");
    if (!e) {
        fprintf(stderr, "bench: no elapsed_ns from %s\n", argv[0]);
        exit(1);
    }
    return atof(e + 11);
}

static inline cJSON *bench_tool(struct rpc_client *c, const char *name, cJSON *args)
{
    char err[1024];
    cJSON *value = rpc_call_tool(c, name, args, err, sizeof err);
    if (!value) {
        fprintf(stderr, "bench: %s\n", err);
        exit(1);
    }
    return value;
}

/* Runs the shell command cmd and returns the number after the last "key " its
 * output has (key "ops_per_second": a program's own report), or -1 when it printed
 * none or failed. */
static inline double bench_popen_number(const char *cmd, const char *key)
{
    FILE *f = popen(cmd, "r");
    char line[256];
    double v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, key);
        if (p && p[n] == ' ')
            v = atof(p + n + 1);
    }
    if (f && pclose(f) != 0)
        v = -1;
    return v;
}

/* Polls debug_session status of session sid every 50 ms until it no longer runs;
 * returns that status (the caller deletes it). */
static inline cJSON *bench_wait_ended(struct rpc_client *c, const char *sid)
{
    for (;;) {
        usleep(50000);
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "action", "status");
        cJSON_AddStringToObject(req, "sessionId", sid);
        cJSON *res = bench_tool(c, "debug_session", req);
        if (strcmp(cJSON_GetObjectItem(res, "status")->valuestring, "running") != 0)
            return res;
        cJSON_Delete(res);
    }
}

/* The calls of a status's topFunctions, added up. */
static inline double bench_top_calls(const cJSON *status)
{
    double n = 0;
    const cJSON *fn;
    cJSON_ArrayForEach(fn, cJSON_GetObjectItem(status, "topFunctions")) {
        const cJSON *v = cJSON_GetObjectItem(fn, "calls");
        n += cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
    return n;
}

/* The text of the first stdout event of session sid containing needle (among its
 * first 500), or NULL; the caller frees it. */
static inline char *bench_stdout_with(struct rpc_client *c, const char *sid, const char *needle)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_AddStringToObject(args, "eventType", "stdout");
    cJSON_AddNumberToObject(args, "limit", 500);
    cJSON *res = bench_tool(c, "debug_query", args);
    char *out = NULL;
    cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItem(res, "events")) {
        cJSON *t = cJSON_GetObjectItem(ev, "text");
        if (cJSON_IsString(t) && strstr(t->valuestring, needle)) {
            out = strdup(t->valuestring);
            break;
        }
    }
    cJSON_Delete(res);
    return out;
}

static inline double bench_launch_until(struct rpc_client *c, const char *program,
                                        const char *root, const char *event_type)
{
    double t0 = now_ms();
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "command", program);
    cJSON_AddStringToObject(args, "projectRoot", root);
    cJSON *res = bench_tool(c, "debug_launch", args);
    char sid[128];
    snprintf(sid, sizeof sid, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    cJSON_Delete(res);
    double t1;
    for (;;) {
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "sessionId", sid);
        cJSON_AddStringToObject(args, "eventType", event_type);
        cJSON_AddNumberToObject(args, "limit", 1);
        res = bench_tool(c, "debug_query", args);
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(res, "events"));
        cJSON_Delete(res);
        if (n > 0) {
            t1 = now_ms();
            break;
        }
    }
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "stop");
    cJSON_AddStringToObject(args, "sessionId", sid);
    cJSON_Delete(bench_tool(c, "debug_session", args));
    return t1 - t0;
}

/* Launches program (with the n_args args) under strobe, its directory as the
 * project, and waits until its first stdout line is stored: the session id goes to
 * sid (cap bytes); returns the pid. */
static inline pid_t bench_launch_ready(struct rpc_client *c, const char *program,
                                       const char *const *args, int n_args, char *sid,
                                       size_t cap)
{
    char root[4096];
    snprintf(root, sizeof root, "%s", program);
    *strrchr(root, '/') = '\0';
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "command", program);
    cJSON_AddStringToObject(req, "projectRoot", root);
    cJSON *argv = cJSON_AddArrayToObject(req, "args");
    for (int i = 0; i < n_args; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(args[i]));
    cJSON *res = bench_tool(c, "debug_launch", req);
    snprintf(sid, cap, "%s", cJSON_GetObjectItem(res, "sessionId")->valuestring);
    pid_t pid = (pid_t)cJSON_GetObjectItem(res, "pid")->valuedouble;
    cJSON_Delete(res);
    for (int n = 0; n == 0;) {
        req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "sessionId", sid);
        cJSON_AddStringToObject(req, "eventType", "stdout");
        res = bench_tool(c, "debug_query", req);
        n = cJSON_GetArraySize(cJSON_GetObjectItem(res, "events"));
        cJSON_Delete(res);
    }
    return pid;
}

/* Connects to (starting if needed) the daemon of $STROBE_HOME; exits on failure. */
static inline void bench_connect(struct rpc_client *c, const char *who)
{
    char err[256];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", who, err);
        exit(1);
    }
    rpc_init(c, fd);
    if (rpc_handshake(c, who, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", who, err);
        exit(1);
    }
}

/* The output of child pid read to its end from fd (closed), malloc'd; NULL when it
 * failed or exited non-zero. */
static inline char *bench_read_child(int fd, pid_t pid)
{
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    ssize_t r;
    while (out && (r = read(fd, out + len, cap - len - 1)) > 0)
        if ((len += (size_t)r) + 1 == cap)
            out = realloc(out, cap *= 2);
    close(fd);
    int st;
    waitpid(pid, &st, 0);
    if (!out || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(out);
        return NULL;
    }
    out[len] = '\0';
    return out;
}

/* Deletes session sid (debug_session delete). */
/* {sessionId: sid}: the start of most tools' arguments. */
static inline cJSON *bench_session_args(const char *sid)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionId", sid);
    return args;
}

/* debug_session stop of sid (its program killed, its data deleted). */
static inline void bench_stop_session(struct rpc_client *c, const char *sid)
{
    cJSON *args = bench_session_args(sid);
    cJSON_AddStringToObject(args, "action", "stop");
    cJSON_Delete(bench_tool(c, "debug_session", args));
}

static inline void bench_delete_session(struct rpc_client *c, const char *sid)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "action", "delete");
    cJSON_AddStringToObject(req, "sessionId", sid);
    cJSON_Delete(bench_tool(c, "debug_session", req));
}

/* Stops the daemon whose pid file is pid_file (SIGTERM, up to 5 s for it to go). */
static inline void bench_stop_daemon(const char *pid_file)
{
    FILE *f = fopen(pid_file, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    if (pid > 0) {
        kill(pid, SIGTERM);
        for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
            usleep(10000);
    }
}

/* Makes root (a mkdtemp template, changed in place) a private project: its
 * .strobe and the daemon's STROBE_HOME (root/home, set in the environment), both
 * 0700. False when mkdtemp fails (errno says why). */
static inline bool bench_private_root(char *root)
{
    if (!mkdtemp(root))
        return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/.strobe", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/home", root);
    mkdir(path, 0700);
    setenv("STROBE_HOME", path, 1);
    return true;
}

/* A benchmark's private root (mkdtemp'd): the daemon of root/home stopped and the
 * tree removed; who names the benchmark in the message when it cannot be. */
static inline void bench_remove_root(const char *root, const char *who)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/home/strobe.pid", root);
    bench_stop_daemon(path);
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    if (system(path) != 0)
        fprintf(stderr, "%s: could not remove %s\n", who, root);
}

/* Writes json as the settings of the project at root (root/.strobe exists);
 * false when it cannot. */
static inline bool bench_project_settings(const char *root, const char *json)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.strobe/settings.json", root);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fprintf(f, "%s\n", json);
    return fclose(f) == 0;
}

#endif
