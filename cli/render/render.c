/*
 * render.c - the text forms of the daemon's answers. See render.h.
 *
 * The formats are strobectl's output, which its tests compare byte for byte: a
 * change here is a change of strobectl.
 */
#include "cli/render/render.h"

#include "cli/render/render_hint.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/json_view.h"

void render_json(FILE *out, const cJSON *v)
{
    char *s = cJSON_Print(v);
    if (s) {
        fputs(s, out);
        fputc('\n', out);
    }
    free(s);
}

/* "2026-02-05 14:32:07" from a Unix time in ms (seconds are accepted too). */
static void format_time(double t, char *out, size_t outlen)
{
    if (t <= 0) {
        snprintf(out, outlen, "-");
        return;
    }
    time_t secs = (time_t)(t > 1e11 ? t / 1000 : t);
    struct tm tm;
    localtime_r(&secs, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", &tm);
}

/* A value as one line of text: scalars as themselves, arrays joined with ", ",
 * objects as "k v, k v". Caller frees. */
static char *scalar_text(const char *key, const cJSON *v)
{
    char *out = NULL;
    if (cJSON_IsString(v))
        return strdup(v->valuestring);
    if (cJSON_IsBool(v))
        return strdup(cJSON_IsTrue(v) ? "yes" : "no");
    if (cJSON_IsNull(v))
        return strdup("-");
    if (cJSON_IsNumber(v)) {
        char buf[64];
        size_t klen = key ? strlen(key) : 0;
        if (klen > 2 && strcmp(key + klen - 2, "At") == 0) /* startedAt, endedAt */
            format_time(v->valuedouble, buf, sizeof buf);
        else if (v->valuedouble > -1e18 && v->valuedouble < 1e18 &&
                 v->valuedouble == (double)(long long)v->valuedouble)
            snprintf(buf, sizeof buf, "%lld", (long long)v->valuedouble);
        else
            snprintf(buf, sizeof buf, "%g", v->valuedouble);
        return strdup(buf);
    }
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (!f)
            return NULL;
        const cJSON *c;
        bool first = true;
        cJSON_ArrayForEach(c, v)
        {
            char *t = (cJSON_IsArray(c) || cJSON_IsObject(c)) ? cJSON_PrintUnformatted(c)
                                                              : scalar_text(NULL, c);
            fprintf(f, "%s%s%s%s", first ? "" : ", ", c->string ? c->string : "",
                    c->string ? " " : "", t ? t : "?");
            free(t);
            first = false;
        }
        if (first)
            fputs("(none)", f);
        fclose(f);
        return out;
    }
    return strdup("?");
}

/* Every member as an aligned "key: value" line. */
void render_fields(FILE *out, const cJSON *o)
{
    int width = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, o)
    {
        int n = (int)strlen(c->string);
        if (n > width)
            width = n;
    }
    cJSON_ArrayForEach(c, o)
    {
        /* The daemon's next steps name MCP calls: cut out, or the line dropped. */
        int keep = cJSON_IsString(c) ? (int)render_advice_cut(c->valuestring) : -1;
        if (keep == 0 || strcmp(c->string, "hint") == 0 || strcmp(c->string, "nextSteps") == 0)
            continue;
        char *t = keep > 0 ? strndup(c->valuestring, (size_t)keep) : scalar_text(c->string, c);
        fprintf(out, "%s:%*s %s\n", c->string, width - (int)strlen(c->string), "",
                t ? t : "?");
        free(t);
    }
}

void render_launch(FILE *out, const cJSON *r)
{
    fprintf(out, "session %s pid %lld\n",
            json_str(r, "sessionId") ? json_str(r, "sessionId") : "?", json_num(r, "pid"));
    const cJSON *w;
    cJSON_ArrayForEach(w, json_get(r, "warnings"))
        if (cJSON_IsString(w))
            fprintf(out, "warning: %s\n", w->valuestring);
    if (json_has_num(r, "pendingPatternsApplied"))
        fprintf(out, "pending patterns applied: %lld\n",
                json_num(r, "pendingPatternsApplied"));
    if (json_has_num(r, "pendingWatchesApplied"))
        fprintf(out, "pending watches applied: %lld\n", json_num(r, "pendingWatchesApplied"));
    /* The daemon's nextSteps speak MCP (--json keeps them); these speak shell. */
    const char *sid = json_str(r, "sessionId");
    if (sid)
        fprintf(out, "next: its output, whether it ended, its calls (when output is not "
                "enough):\n"
                "  strobectl query %s --type stderr\n"
                "  strobectl status %s\n"
                "  strobectl trace %s --add 'PATTERN'\n", sid, sid, sid);
}

/* "a=1 b.c=2 x=<CODE>": values (an object) then errors ("CODE: sentence" strings). */
static void render_values(FILE *out, const cJSON *values, const cJSON *errors)
{
    const cJSON *v;
    int n = 0;
    cJSON_ArrayForEach(v, values) {
        char *s = cJSON_PrintUnformatted(v);
        fprintf(out, "%s%s=%s", n++ ? " " : "", v->string ? v->string : "?", s ? s : "?");
        free(s);
    }
    cJSON_ArrayForEach(v, errors) {
        const char *msg = cJSON_IsString(v) ? v->valuestring : "?";
        const char *colon = strchr(msg, ':');
        fprintf(out, "%s%s=<%.*s>", n++ ? " " : "", v->string ? v->string : "?",
                colon ? (int)(colon - msg) : (int)strlen(msg), msg);
    }
}

/* JSON text of v (a string as is); the caller frees. */
static char *value_text(const cJSON *v)
{
    if (!v)
        return strdup("?");
    if (cJSON_IsString(v))
        return strdup(v->valuestring);
    char *s = cJSON_PrintUnformatted(v);
    return s ? s : strdup("?");
}

/* A data watchpoint's hit: "cfg.max_retries 3 -> 0 by parse_name (config.c:42)". */
static void render_watch_hit(FILE *out, const cJSON *e, bool verbose)
{
    static const char *const names[] = {"label", "variable", "target", "address", NULL};
    const char *what = NULL;
    for (int i = 0; names[i] && !what; i++)
        what = json_str(e, names[i]);
    fprintf(out, " %s", what ? what : "?");
    const cJSON *old = json_get(e, "oldValue"), *new = json_get(e, "newValue");
    if (!new)
        new = json_get(e, "value");
    if (old || new) {
        char *o = value_text(old), *n = value_text(new);
        if (old)
            fprintf(out, " %s -> %s", o, n);
        else
            fprintf(out, " = %s", n);
        free(o);
        free(n);
    }
    const char *fn = json_str(e, "function");
    const cJSON *frames = json_get(e, "frames");
    if (!fn && frames) {
        const cJSON *f0 = cJSON_GetArrayItem(frames, 0);
        if (cJSON_IsString(f0))
            fprintf(out, " at %s", f0->valuestring);
        else if (json_str(f0, "function"))
            fn = json_str(f0, "function");
    }
    if (fn) {
        fprintf(out, " by %s", fn);
        const char *file = json_str(e, "sourceFile");
        if (file) {
            const char *base = strrchr(file, '/');
            fprintf(out, " (%s", verbose || !base ? file : base + 1);
            if (json_num(e, "line") > 0)
                fprintf(out, ":%lld", json_num(e, "line"));
            fputc(')', out);
        }
    }
    if (json_has_num(e, "tid"))
        fprintf(out, " [tid %lld]", json_num(e, "tid"));
    if (!old && !new && json_str(e, "text"))
        fprintf(out, " %s", json_str(e, "text"));
}

void render_event(FILE *out, const cJSON *e, bool verbose)
{
    const char *type = json_str(e, "eventType") ? json_str(e, "eventType") : "?";
    const char *text = json_str(e, "text");
    fprintf(out, "[%10.3f ms] %-7s", (double)json_num(e, "timestampNs") / 1e6, type);
    if (strcmp(type, "variable_snapshot") == 0 && json_get(e, "values")) {
        fputc(' ', out);
        render_values(out, json_get(e, "values"), json_get(e, "errors"));
    } else if (strcmp(type, "watch_hit") == 0) {
        render_watch_hit(out, e, verbose);
    } else if (strncmp(type, "function_", 9) == 0 || (strcmp(type, "crash") == 0 && !text)) {
        const char *fn = json_str(e, "function");
        const char *file = json_str(e, "sourceFile");
        fprintf(out, " %s", fn ? fn : "?");
        if (file) {
            const char *base = strrchr(file, '/');
            fprintf(out, " (%s", verbose || !base ? file : base + 1);
            if (json_num(e, "line") > 0)
                fprintf(out, ":%lld", json_num(e, "line"));
            fputc(')', out);
        }
        if (json_has_num(e, "durationNs") && json_num(e, "durationNs") >= 0)
            fprintf(out, " took %.3f ms", (double)json_num(e, "durationNs") / 1e6);
        static const char *const extras[][2] = { { "arguments", "args=" },
                                                 { "returnValue", "=> " } };
        for (size_t i = 0; i < 2; i++) {
            const cJSON *v = json_get(e, extras[i][0]);
            if (!v || cJSON_IsNull(v))
                continue;
            char *s = cJSON_PrintUnformatted(v);
            fprintf(out, " %s%s", extras[i][1], s ? s : "?");
            free(s);
        }
        /* Summary events carry one-line renderings instead of the values. */
        if (!json_get(e, "arguments") && json_str(e, "argsShort"))
            fprintf(out, " with %s", json_str(e, "argsShort"));
        if (!json_get(e, "returnValue") && json_str(e, "retShort"))
            fprintf(out, " => %s", json_str(e, "retShort"));
        if (json_get(e, "watchValues")) {
            fputs(" [", out);
            render_values(out, json_get(e, "watchValues"), NULL);
            fputc(']', out);
        }
    } else if (text) {
        fprintf(out, " %s", text);
    } else if (strcmp(type, "process_exit") == 0) {
        if (json_str(e, "signal"))
            fprintf(out, " killed by %s", json_str(e, "signal"));
        else
            fprintf(out, " exited with code %lld", json_num(e, "exitCode"));
    } else if (json_get(e, "data")) {
        char *s = cJSON_PrintUnformatted(json_get(e, "data"));
        fprintf(out, " %s", s ? s : "?");
        free(s);
    }
    if (verbose && json_has_num(e, "pid")) {
        fprintf(out, "  {pid %lld", json_num(e, "pid"));
        if (json_str(e, "threadName"))
            fprintf(out, ", thread %s", json_str(e, "threadName"));
        else if (json_has_num(e, "threadId"))
            fprintf(out, ", tid %lld", json_num(e, "threadId"));
        fputc('}', out);
    }
    fputc('\n', out);
}

void render_query(FILE *out, const cJSON *r, const cJSON *args, const char *after_flag,
                  const char *offset_flag)
{
    bool verbose = cJSON_IsTrue(json_get(args, "verbose"));
    const cJSON *e;
    long long n = 0;
    cJSON_ArrayForEach(e, json_get(r, "events"))
    {
        render_event(out, e, verbose);
        n++;
    }
    fprintf(out, "%lld of %lld events", n, json_num(r, "totalCount"));
    if (cJSON_IsTrue(json_get(r, "hasMore"))) {
        if (json_get(args, "afterEventId"))
            fprintf(out, " (more: %s %s)", after_flag,
                    json_str(r, "lastEventId") ? json_str(r, "lastEventId") : "?");
        else
            fprintf(out, " (more: %s %lld)", offset_flag, json_num(args, "offset") + n);
    }
    fputc('\n', out);
    if (cJSON_IsString(json_get(r, "truncated")))
        fprintf(out, "%s\n", json_str(r, "truncated"));
    if (json_get(r, "pids")) {
        char *s = scalar_text(NULL, json_get(r, "pids"));
        fprintf(out, "pids: %s\n", s ? s : "?");
        free(s);
    }
}

void render_store_notes(FILE *out, const cJSON *r)
{
    if (json_str(r, "storeFull"))
        fprintf(out, "strobectl: note: %s\n", json_str(r, "storeFull"));
    const char *aside = json_str(json_get(r, "storeSetAside"), "note");
    if (aside)
        fprintf(out, "strobectl: note: %s\n", aside);
}

void render_sessions(FILE *out, const cJSON *r)
{
    const cJSON *list = json_get(r, "sessions");
    int n = cJSON_GetArraySize(list);
    if (n == 0) {
        fputs("no sessions\n", out);
        return;
    }
    struct row { char status[64], pid[24], started[32]; const char *id, *bin; };
    struct row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows)
        return;
    int w_id = 7, w_status = 6, w_pid = 3;
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, list)
    {
        struct row *rw = &rows[i++];
        rw->id = json_str(s, "sessionId") ? json_str(s, "sessionId") : "?";
        rw->bin = json_str(s, "binaryPath") ? json_str(s, "binaryPath") : "?";
        const char *st = json_str(s, "status") ? json_str(s, "status") : "?";
        if (json_str(s, "signal"))
            snprintf(rw->status, sizeof rw->status, "%s(%s)", st, json_str(s, "signal"));
        else if (json_has_num(s, "exitCode"))
            snprintf(rw->status, sizeof rw->status, "%s(%lld)", st, json_num(s, "exitCode"));
        else
            snprintf(rw->status, sizeof rw->status, "%s", st);
        if (cJSON_IsTrue(json_get(s, "retained")))
            strncat(rw->status, ",retained", sizeof rw->status - strlen(rw->status) - 1);
        snprintf(rw->pid, sizeof rw->pid, "%lld", json_num(s, "pid"));
        const cJSON *t = json_get(s, "startedAt");
        format_time(cJSON_IsNumber(t) ? t->valuedouble : 0, rw->started,
                    sizeof rw->started);
        if ((int)strlen(rw->id) > w_id)
            w_id = (int)strlen(rw->id);
        if ((int)strlen(rw->status) > w_status)
            w_status = (int)strlen(rw->status);
        if ((int)strlen(rw->pid) > w_pid)
            w_pid = (int)strlen(rw->pid);
    }
    fprintf(out, "%-*s  %-*s  %*s  %-19s  %s\n", w_id, "SESSION", w_status, "STATUS", w_pid,
            "PID", "STARTED", "BINARY");
    for (i = 0; i < n; i++)
        fprintf(out, "%-*s  %-*s  %*s  %-19s  %s\n", w_id, rows[i].id, w_status,
                rows[i].status, w_pid, rows[i].pid, rows[i].started, rows[i].bin);
    free(rows);
}

void render_stopped(FILE *out, const cJSON *r)
{
    fprintf(out, "stopped %s: %lld events collected, data %s\n",
            json_str(r, "sessionId") ? json_str(r, "sessionId") : "?",
            json_num(r, "eventsCollected"),
            cJSON_IsTrue(json_get(r, "retained")) ? "retained" : "deleted");
}

void render_deleted(FILE *out, const cJSON *r)
{
    fprintf(out, "deleted %s\n", json_str(r, "sessionId") ? json_str(r, "sessionId") : "?");
}

void render_tools(FILE *out, const cJSON *r)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(r, "tools"))
        if (json_str(t, "name")) {
            fputs(json_str(t, "name"), out);
            fputc('\n', out);
        }
}

/* " waiting for mutex g_table.lock (0x…) held by TID" (without a variable: " waiting
 * for mutex 0x… held by TID") and the like, from a thread's wait (a stuck
 * test's threads name the owner without the address: " waiting for mutex held by
 * TID"). */
static void render_wait(FILE *out, const cJSON *w)
{
    const char *kind = json_str(w, "kind"), *addr = json_str(w, "address");
    if (!kind)
        return;
    if (strcmp(kind, "join") == 0) {
        if (json_has_num(w, "joinedTid"))
            fprintf(out, ", waiting for thread %lld to end (pthread_join)",
                    json_num(w, "joinedTid"));
        else
            fputs(", waiting in pthread_join", out);
        return;
    }
    const char *what = strcmp(kind, "mutex") == 0     ? "mutex"
                       : strcmp(kind, "condvar") == 0 ? "condition variable"
                                                      : "futex";
    fprintf(out, ", waiting for %s", what);
    if (json_str(w, "variable") && addr)
        fprintf(out, " %s (%s)", json_str(w, "variable"), addr);
    else if (addr)
        fprintf(out, " %s", addr);
    if (json_has_num(w, "ownerTid"))
        fprintf(out, " held by %lld", json_num(w, "ownerTid"));
}

void render_stacks(FILE *out, const cJSON *r)
{
    if (json_str(r, "diagnosis"))
        fprintf(out, "%s\n\n", json_str(r, "diagnosis"));
    const cJSON *t;
    bool first = true;
    cJSON_ArrayForEach(t, json_get(r, "threads"))
    {
        if (!first)
            fputc('\n', out);
        first = false;
        fprintf(out, "Thread %lld (%s) %s", json_num(t, "tid"),
                json_str(t, "name") ? json_str(t, "name") : "?",
                json_str(t, "state") ? json_str(t, "state") : "?");
        if (json_str(t, "syscall"))
            fprintf(out, " in %s", json_str(t, "syscall"));
        render_wait(out, json_get(t, "wait"));
        fputs(":\n", out);
        const cJSON *f;
        int i = 0;
        long long own = json_has_num(t, "ownFrame") ? json_num(t, "ownFrame") : -1;
        cJSON_ArrayForEach(f, json_get(t, "frames"))
        {
            if (cJSON_IsString(f))
                fprintf(out, "#%d %s\n", i, f->valuestring);
            else if (json_str(f, "file"))
                fprintf(out, "#%d %s (%s:%lld)\n", i, json_str(f, "function"),
                        json_str(f, "file"), json_num(f, "line"));
            else
                fprintf(out, "#%d %s\n", i, json_str(f, "function"));
            static const char *const own_vars[] = {"arguments", "locals"};
            for (size_t k = 0; i == own && k < 2; k++) {
                const cJSON *v;
                cJSON_ArrayForEach(v, json_get(t, own_vars[k]))
                {
                    char *val = cJSON_PrintUnformatted(json_get(v, "value"));
                    fprintf(out, "    %s = %s\n", json_str(v, "name"), val ? val : "?");
                    free(val);
                }
            }
            i++;
        }
        if (json_has_num(t, "omittedFrames"))
            fprintf(out, "... %lld more frames\n", json_num(t, "omittedFrames"));
    }
    if (json_str(r, "truncated"))
        fprintf(out, "\n%s\n", json_str(r, "truncated"));
}

/* "CODE: sentence" of a failed target: error may be a string (with "code" beside
 * it) or an object {code, message}. NULL when the target did not fail. */
static bool target_error(const cJSON *t, const char **code, const char **msg)
{
    const cJSON *err = json_get(t, "error");
    if (!err || cJSON_IsNull(err))
        return false;
    if (cJSON_IsObject(err)) {
        *code = json_str(err, "code");
        *msg = json_str(err, "message");
    } else {
        *code = json_str(t, "code");
        *msg = cJSON_IsString(err) ? err->valuestring : NULL;
    }
    if (!*code)
        *code = "ERROR";
    if (!*msg)
        *msg = "";
    return true;
}

int render_poll(FILE *out, const cJSON *r, const char *session_id)
{
    fprintf(out, "polling %lld target(s) every %lld ms for %lld ms (poll %lld, %lld "
            "samples)\n", json_num(r, "variableCount"), json_num(r, "intervalMs"),
            json_num(r, "durationMs"), json_num(r, "pollId"), json_num(r, "expectedSamples"));
    int failed = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(r, "errors")) {
        const char *code, *msg;
        if (!target_error(t, &code, &msg)) {
            code = json_str(t, "code") ? json_str(t, "code") : "ERROR";
            msg = "";
        }
        fprintf(out, "%s: %s: %s (not sampled)\n",
                json_str(t, "target") ? json_str(t, "target") : "?", code, msg);
        failed++;
    }
    fprintf(out, "read the samples: strobectl query %s --type variable_snapshot\n",
            session_id ? session_id : "SESSION");
    return failed;
}

/* " (TYPE at ADDR)", or " (TYPE)" for a value with no address. */
static void render_where(FILE *out, const cJSON *t)
{
    if (json_str(t, "address"))
        fprintf(out, " (%s at %s)", json_str(t, "type") ? json_str(t, "type") : "?",
                json_str(t, "address"));
    else if (json_str(t, "type"))
        fprintf(out, " (%s)", json_str(t, "type"));
}

void render_memory(FILE *out, const cJSON *r)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(r, "results"))
    {
        const char *target = json_str(t, "target") ? json_str(t, "target") : "?";
        const cJSON *err = json_get(t, "error");
        if (err) {
            fprintf(out, "%s: %s: %s\n", target, json_str(err, "code") ? json_str(err, "code")
                                                                        : "?",
                    json_str(err, "message") ? json_str(err, "message") : "?");
            continue;
        }
        if (json_str(t, "file")) {
            fprintf(out, "%s: %lld bytes at %s saved to %s\n    %s\n", target,
                    json_num(t, "size"), json_str(t, "address") ? json_str(t, "address") : "?",
                    json_str(t, "file"), json_str(t, "preview") ? json_str(t, "preview") : "");
            continue;
        }
        char *value = cJSON_PrintUnformatted(json_get(t, "value"));
        char *old = json_get(t, "oldValue") ? cJSON_PrintUnformatted(json_get(t, "oldValue"))
                                            : NULL;
        if (old)
            fprintf(out, "%s: %s -> %s", target, old, value ? value : "?");
        else
            fprintf(out, "%s = %s", target, value ? value : "?");
        render_where(out, t);
        fputc('\n', out);
        free(value);
        free(old);
    }
    if (json_str(r, "truncated"))
        fprintf(out, "\n%s\n", json_str(r, "truncated"));
}
