/*
 * render_break.c - breakpoint tables and pause, exit and wait reports for
 * strobectl's break, breakpoints, delete, continue, next, step, finish, pause and
 * until. See render_break.h. Source files are shown by their base names.
 */
#include "cli/render/render_break.h"

#include <stdlib.h>
#include <string.h>

#include "cli/json_view.h"
#include "cli/render/render.h"

/* path's base name; "?" for NULL. */
static const char *base_name(const char *path)
{
    if (!path)
        return "?";
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* v as one line: a string as is (quoted when quote), anything else as compact JSON.
 * The caller frees. */
static char *text_of(const cJSON *v, bool quote)
{
    if (!v)
        return strdup("?");
    if (cJSON_IsString(v) && !quote)
        return strdup(v->valuestring);
    char *s = cJSON_PrintUnformatted(v);
    return s ? s : strdup("?");
}

/* ---- breakpoints ------------------------------------------------------------------ */

/* "calc.c:42 in compute" from where[0], else the spec as given ("parse_config",
 * "calc.c:42"); "+N more" for further locations. The caller frees. */
static char *where_text(const cJSON *b)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    const cJSON *w = cJSON_GetArrayItem(json_get(b, "where"), 0);
    if (w && json_str(w, "file"))
        fprintf(f, "%s:%lld", base_name(json_str(w, "file")), json_num(w, "line"));
    else if (json_str(b, "file"))
        fprintf(f, "%s:%lld", json_str(b, "file"), json_num(b, "line"));
    if (w && json_str(w, "function"))
        fprintf(f, "%s%s", ftell(f) ? " in " : "", json_str(w, "function"));
    else if (!w && json_str(b, "function"))
        fputs(json_str(b, "function"), f);
    if (json_num(b, "locations") > 1)
        fprintf(f, " +%lld more", json_num(b, "locations") - 1);
    fclose(f);
    return s;
}

/* "n > 3, from hit 5, once, all-stop, log \"n={n}\"", or "-". The caller frees. */
static char *condition_text(const cJSON *b)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    const char *sep = "";
    if (json_str(b, "condition")) {
        fputs(json_str(b, "condition"), f);
        sep = ", ";
    }
    if (json_num(b, "hitCount") > 1) {
        fprintf(f, "%sfrom hit %lld", sep, json_num(b, "hitCount"));
        sep = ", ";
    }
    static const char *const flags[][2] = { { "oneShot", "once" }, { "allStop", "all-stop" } };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (cJSON_IsTrue(json_get(b, flags[i][0]))) {
            fprintf(f, "%s%s", sep, flags[i][1]);
            sep = ", ";
        }
    if (json_get(b, "message")) {
        char *m = text_of(json_get(b, "message"), true);
        fprintf(f, "%slog %s", sep, m ? m : "?");
        free(m);
        sep = ", ";
    }
    if (!*sep)
        fputc('-', f);
    fclose(f);
    return s;
}

/* The notes of breakpoint b: a moved line, the engine's note, condition errors. */
static void render_bp_notes(FILE *out, const cJSON *b)
{
    long long id = json_num(b, "id");
    const cJSON *w = cJSON_GetArrayItem(json_get(b, "where"), 0);
    if (json_has_num(b, "movedFrom"))
        fprintf(out, "breakpoint %lld: line %lld has no code; moved to line %lld\n", id,
                json_num(b, "movedFrom"), w ? json_num(w, "line") : json_num(b, "line"));
    if (json_str(b, "note"))
        fprintf(out, "breakpoint %lld: %s\n", id, json_str(b, "note"));
    if (json_str(b, "lastConditionError"))
        fprintf(out, "breakpoint %lld: the condition failed to evaluate %lld time(s), "
                     "last: %s\n", id, json_num(b, "conditionErrors"),
                json_str(b, "lastConditionError"));
}

void render_breakpoints(FILE *out, const cJSON *r)
{
    const cJSON *v;
    if (cJSON_GetArraySize(json_get(r, "removed")) > 0) {
        fputs("deleted breakpoint", out);
        const char *sep = cJSON_GetArraySize(json_get(r, "removed")) > 1 ? "s " : " ";
        cJSON_ArrayForEach(v, json_get(r, "removed")) {
            char *t = text_of(v, false);
            fprintf(out, "%s%s", sep, t ? t : "?");
            free(t);
            sep = ", ";
        }
        fputc('\n', out);
    }
    const cJSON *bps = json_get(r, "breakpoints");
    int n = cJSON_GetArraySize(bps);
    if (n == 0) {
        fputs("no breakpoints\n", out);
    } else {
        char **where = calloc((size_t)n, sizeof *where);
        int i = 0, wide = (int)strlen("WHERE");
        if (!where)
            return;
        cJSON_ArrayForEach(v, bps) {
            where[i] = where_text(v);
            if (where[i] && (int)strlen(where[i]) > wide)
                wide = (int)strlen(where[i]);
            i++;
        }
        fprintf(out, "%-4s %-10s %-*s %5s  %s\n", "ID", "KIND", wide, "WHERE", "HITS",
                "CONDITION");
        i = 0;
        cJSON_ArrayForEach(v, bps) {
            char *cond = condition_text(v);
            fprintf(out, "%-4lld %-10s %-*s %5lld  %s\n", json_num(v, "id"),
                    json_str(v, "kind") ? json_str(v, "kind") : "?", wide,
                    where[i] ? where[i] : "?", json_num(v, "hits"), cond ? cond : "?");
            free(cond);
            free(where[i++]);
        }
        free(where);
    }
    if (cJSON_IsTrue(json_get(r, "staged")))
        fputs("staged for the next launch\n", out);
    cJSON_ArrayForEach(v, bps)
        render_bp_notes(out, v);
}

/* ---- debug_continue ------------------------------------------------------------------ */

/* "  name = value" for each {name, type, value} of vars, under heading. */
static void render_vars(FILE *out, const char *heading, const cJSON *vars)
{
    if (cJSON_GetArraySize(vars) == 0)
        return;
    fprintf(out, "%s:\n", heading);
    const cJSON *v;
    cJSON_ArrayForEach(v, vars) {
        char *val = text_of(json_get(v, "value"), true);
        fprintf(out, "  %s = %s\n", json_str(v, "name") ? json_str(v, "name") : "?",
                val ? val : "?");
        free(val);
    }
}

static void render_paused(FILE *out, const cJSON *r)
{
    fprintf(out, "Thread %lld paused", json_num(r, "threadId"));
    if (json_str(r, "file"))
        fprintf(out, " at %s:%lld", base_name(json_str(r, "file")), json_num(r, "line"));
    if (json_str(r, "function"))
        fprintf(out, " in %s", json_str(r, "function"));
    const char *reason = json_str(r, "reason");
    if (reason && strcmp(reason, "breakpoint") == 0 && json_has_num(r, "breakpointId"))
        fprintf(out, " (breakpoint %lld)", json_num(r, "breakpointId"));
    else if (reason)
        fprintf(out, " (%s)", strcmp(reason, "allStop") == 0 ? "all-stop" : reason);
    fputc('\n', out);
    if (json_get(r, "returnValue")) {
        char *rv = text_of(json_get(r, "returnValue"), true);
        fprintf(out, "returned %s\n", rv ? rv : "?");
        free(rv);
    }
    const cJSON *f;
    int i = 0;
    cJSON_ArrayForEach(f, json_get(r, "frames")) {
        fprintf(out, "#%d %s", i++, json_str(f, "function") ? json_str(f, "function") : "??");
        if (json_str(f, "file"))
            fprintf(out, " (%s:%lld)", base_name(json_str(f, "file")), json_num(f, "line"));
        fputc('\n', out);
    }
    render_vars(out, "arguments", json_get(r, "arguments"));
    render_vars(out, "locals", json_get(r, "locals"));
    if (cJSON_IsTrue(json_get(r, "conditionMet")))
        fputs("condition met\n", out);
    if (json_num(r, "pausedThreads") > 1)
        fprintf(out, "%lld threads paused\n", json_num(r, "pausedThreads"));
}

/* running: an until's condition met, or the timeout. Returns true for the latter. */
static bool render_running(FILE *out, const cJSON *r)
{
    if (cJSON_IsTrue(json_get(r, "conditionMet"))) {
        fputs("condition met: ", out);
        if (json_get(r, "event")) {
            render_event(out, json_get(r, "event"), false);
        } else {
            char *t = text_of(json_get(r, "values"), false);
            fprintf(out, "%s\n", t ? t : "?");
            free(t);
        }
        return false;
    }
    fprintf(out, "still running after %lld ms: %lld events", json_num(r, "waitedMs"),
            json_num(r, "eventsMeanwhile"));
    const cJSON *lines = json_get(r, "outputMeanwhile");
    int n = cJSON_GetArraySize(lines);
    if (n == 1) {
        char *t = text_of(cJSON_GetArrayItem(lines, 0), false);
        fprintf(out, ", last output: %s", t ? t : "?");
        free(t);
    } else if (n > 1) {
        fputs(", last output:", out);
        const cJSON *l;
        cJSON_ArrayForEach(l, lines) {
            char *t = text_of(l, false);
            fprintf(out, "\n  %s", t ? t : "?");
            free(t);
        }
    }
    fputc('\n', out);
    if (cJSON_IsFalse(json_get(r, "conditionMet")))
        fputs("condition not met\n", out);
    return true;
}

bool render_stop(FILE *out, const cJSON *r)
{
    const char *state = json_str(r, "state");
    if (state && strcmp(state, "paused") == 0) {
        render_paused(out, r);
    } else if (state && strcmp(state, "exited") == 0) {
        if (cJSON_IsTrue(json_get(r, "conditionMet")) && json_get(r, "event")) {
            fputs("condition met: ", out); /* the awaited event, then the end */
            render_event(out, json_get(r, "event"), false);
        }
        const cJSON *sig = json_get(r, "signal");
        if (sig && !cJSON_IsNull(sig)) {
            char *t = text_of(sig, false);
            fprintf(out, "program killed by %s%s\n", cJSON_IsNumber(sig) ? "signal " : "",
                    t ? t : "?");
            free(t);
        } else {
            fprintf(out, "program exited with code %lld\n", json_num(r, "exitCode"));
        }
    } else if (state && strcmp(state, "running") == 0) {
        return render_running(out, r);
    } else {
        render_fields(out, r);
    }
    return false;
}
