/*
 * render_test.c - progress lines and outcome reports of debug_test runs for
 * strobectl's test command. See render_test.h. A stuck test's threads go through
 * render_stacks (render.h), so they read as `strobectl stacks` prints a live
 * program's.
 */
#include "cli/render/render_test.h"

#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/render/render.h"

/* A millisecond count in seconds. */
static double seconds(long long ms)
{
    return (double)ms / 1000.0;
}

/* text with every line prefixed by indent. */
static void indented(FILE *out, const char *indent, const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");
        fprintf(out, "%s%.*s\n", indent, (int)n, text);
        text += n + (text[n] == '\n');
    }
}

/* "  suggested traces: a::**, @file:b.c" when the array has any. */
static void render_traces(FILE *out, const cJSON *traces)
{
    if (cJSON_GetArraySize(traces) == 0)
        return;
    fputs("  suggested traces:", out);
    const char *sep = " ";
    const cJSON *t;
    cJSON_ArrayForEach(t, traces)
        if (cJSON_IsString(t)) {
            fprintf(out, "%s%s", sep, t->valuestring);
            sep = ", ";
        }
    fputc('\n', out);
}

/* ---- progress ----------------------------------------------------------------- */

/* s cut to its first width UTF-8 characters, in place. */
static void cut_to(char *s, int width)
{
    int chars = 0;
    for (char *p = s; *p; p++)
        if (((unsigned char)*p & 0xC0) != 0x80 && chars++ == width) {
            *p = '\0';
            return;
        }
}

void render_test_progress(FILE *out, const cJSON *answer, int width)
{
    const cJSON *p = json_get(answer, "progress");
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        return;
    fprintf(f, "[%.1f s] ", seconds(json_num(p, "elapsedMs")));
    for (const char *ph = json_str(p, "phase") ? json_str(p, "phase") : "running"; *ph; ph++)
        fputc(*ph == '_' ? ' ' : *ph, f);
    fprintf(f, ": %lld passed, %lld failed, %lld skipped", json_num(p, "passed"),
            json_num(p, "failed"), json_num(p, "skipped"));
    const char *current = json_str(p, "currentTest");
    if (current) {
        fprintf(f, "; %s %.1f s", current, seconds(json_num(p, "currentTestElapsedMs")));
        if (json_has_num(p, "currentTestBaselineMs"))
            fprintf(f, " (usually %.1f s)", seconds(json_num(p, "currentTestBaselineMs")));
    }
    const cJSON *w = cJSON_GetArrayItem(json_get(p, "warnings"), 0);
    if (w) {
        fputs("; may be stuck", f);
        const char *name = json_str(w, "testName");
        if (name && (!current || strcmp(name, current) != 0))
            fprintf(f, ": %s", name);
        fprintf(f, " (silent %.1f s)", seconds(json_num(w, "idleMs")));
        if (json_str(w, "diagnosis"))
            fprintf(f, ": %s", json_str(w, "diagnosis"));
    }
    fclose(f);
    if (line) {
        for (char *c = line; *c; c++)
            if (*c == '\n' || *c == '\r' || *c == '\t')
                *c = ' ';  /* one line, whatever a test name holds */
        if (width > 0)
            cut_to(line, width);
        fputs(line, out);
    }
    free(line);
}

/* ---- the outcome -------------------------------------------------------------- */

static void render_header(FILE *out, const cJSON *r)
{
    const cJSON *s = json_get(r, "summary");
    fprintf(out, "%s: %lld passed, %lld failed, %lld skipped, %lld stuck in %.1f s\n",
            json_str(r, "framework") ? json_str(r, "framework") : "?",
            json_num(s, "passed"), json_num(s, "failed"), json_num(s, "skipped"),
            json_num(s, "stuck"), seconds(json_num(s, "durationMs")));
    if (json_str(r, "note"))
        fprintf(out, "note: %s\n", json_str(r, "note"));
    if (json_str(r, "timedOut"))
        fprintf(out, "timed out: %s\n", json_str(r, "timedOut"));
}

static void render_build_errors(FILE *out, const cJSON *errors)
{
    fputs("\nbuild failed:\n", out);
    const cJSON *d;
    cJSON_ArrayForEach(d, errors) {
        fputs("  ", out);
        if (json_str(d, "file")) {
            fputs(json_str(d, "file"), out);
            if (json_has_num(d, "line"))
                fprintf(out, ":%lld", json_num(d, "line"));
            if (json_has_num(d, "column"))
                fprintf(out, ":%lld", json_num(d, "column"));
            fputs(": ", out);
        }
        const char *m = json_str(d, "message") ? json_str(d, "message") : "?";
        size_t first = strcspn(m, "\n");
        fprintf(out, "%.*s\n", (int)first, m);
        if (m[first])
            indented(out, "      ", m + first + 1);
    }
}

static void render_failure(FILE *out, const cJSON *f)
{
    fprintf(out, "\nFAILED %s", json_str(f, "name") ? json_str(f, "name") : "?");
    if (json_str(f, "file")) {
        fprintf(out, " (%s", json_str(f, "file"));
        if (json_has_num(f, "line"))
            fprintf(out, ":%lld", json_num(f, "line"));
        fputc(')', out);
    }
    fputc('\n', out);
    if (json_str(f, "message"))
        indented(out, "    ", json_str(f, "message"));
    if (cJSON_IsTrue(json_get(f, "messageTruncated")))
        fputs("    ... (cut here: the whole message is in the details file)\n", out);
    if (json_str(f, "rerun"))
        fprintf(out, "  rerun: %s\n", json_str(f, "rerun"));
    render_traces(out, json_get(f, "suggestedTraces"));
}

/* A stuck test's thread in the shape render_stacks reads: its wait as an object,
 * its stack as frames. */
static cJSON *stacks_thread(const cJSON *t)
{
    cJSON *o = cJSON_CreateObject();
    static const char *const same[] = { "tid", "name", "state", "syscall", "omittedFrames" };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (json_get(t, same[i]))
            cJSON_AddItemToObject(o, same[i], cJSON_Duplicate(json_get(t, same[i]), true));
    if (json_has_num(t, "waitsForTid") || json_has_num(t, "lockOwnerTid")) {
        bool join = json_has_num(t, "waitsForTid");
        cJSON *w = cJSON_AddObjectToObject(o, "wait");
        cJSON_AddStringToObject(w, "kind", join ? "join" : "mutex");
        cJSON_AddNumberToObject(w, join ? "joinedTid" : "ownerTid",
                                (double)json_num(t, join ? "waitsForTid" : "lockOwnerTid"));
    }
    if (json_get(t, "stack"))
        cJSON_AddItemToObject(o, "frames", cJSON_Duplicate(json_get(t, "stack"), true));
    return o;
}

static void render_stuck(FILE *out, const cJSON *s)
{
    const char *name = json_str(s, "name");
    fprintf(out, "\nSTUCK%s%s after %.1f s: %s\n", name && *name ? " " : "",
            name && *name ? name : "", seconds(json_num(s, "elapsedMs")),
            json_str(s, "diagnosis") ? json_str(s, "diagnosis") : "?");
    cJSON *view = cJSON_CreateObject();
    cJSON *threads = cJSON_AddArrayToObject(view, "threads");
    const cJSON *t;
    cJSON_ArrayForEach(t, json_get(s, "threads"))
        cJSON_AddItemToArray(threads, stacks_thread(t));
    if (cJSON_GetArraySize(threads) > 0) {
        fputc('\n', out);
        render_stacks(out, view);
    }
    cJSON_Delete(view);
    if (json_num(s, "omittedThreads") > 0)
        fprintf(out, "... %lld more threads (in the details file)\n",
                json_num(s, "omittedThreads"));
    if (json_str(s, "runtimeStacks")) {
        fputs("the runtime's own stacks:\n", out);
        indented(out, "    ", json_str(s, "runtimeStacks"));
        if (cJSON_IsTrue(json_get(s, "runtimeStacksTruncated")))
            fputs("    ... (cut here: the rest is in the details file)\n", out);
    }
    /* apart from the last thread's frames */
    if (cJSON_GetArraySize(json_get(s, "threads")) > 0 &&
        cJSON_GetArraySize(json_get(s, "suggestedTraces")) > 0)
        fputc('\n', out);
    render_traces(out, json_get(s, "suggestedTraces"));
}

void render_test_result(FILE *out, const cJSON *answer)
{
    const cJSON *r = json_get(answer, "result");
    render_header(out, r);
    if (json_get(r, "buildErrors"))
        render_build_errors(out, json_get(r, "buildErrors"));
    const cJSON *v;
    cJSON_ArrayForEach(v, json_get(r, "failures"))
        render_failure(out, v);
    if (json_str(r, "truncated"))
        fprintf(out, "\n%s\n", json_str(r, "truncated"));
    cJSON_ArrayForEach(v, json_get(r, "stuck"))
        render_stuck(out, v);
    if (cJSON_IsTrue(json_get(r, "noTests"))) {
        const cJSON *p = json_get(r, "project");
        fprintf(out, "\nno tests ran (language: %s, build system: %s)\n",
                json_str(p, "language") ? json_str(p, "language") : "?",
                json_str(p, "buildSystem") ? json_str(p, "buildSystem") : "?");
        if (json_str(r, "hint"))
            fprintf(out, "hint: %s\n", json_str(r, "hint"));
    }
    if (json_str(r, "outputTail")) {
        fputs("\nthe end of the output:\n", out);
        indented(out, "    ", json_str(r, "outputTail"));
    }
    if (json_str(answer, "sessionId") || json_str(r, "details"))
        fputc('\n', out);
    if (json_str(answer, "sessionId"))
        fprintf(out, "session %s: strobectl query %s\n", json_str(answer, "sessionId"),
                json_str(answer, "sessionId"));
    if (json_str(r, "details"))
        fprintf(out, "details: %s\n", json_str(r, "details"));
}

bool render_test_failed(const cJSON *answer)
{
    const cJSON *r = json_get(answer, "result");
    const cJSON *s = json_get(r, "summary");
    if (!r)
        return false;
    return json_num(s, "failed") > 0 || json_num(s, "stuck") > 0 ||
           json_get(r, "buildErrors") || json_get(r, "timedOut") ||
           (json_num(r, "exitCode") != 0 && !cJSON_IsTrue(json_get(r, "noTests")));
}
