/*
 * jsproj.c - the parts of the jest, vitest and mocha adapters that are about
 * JavaScript projects rather than one framework (jsproj.h): package.json and
 * config files for detection, node_modules/.bin for the command, JS stack traces
 * for where a test failed, and the JSON report jest and vitest both write.
 */
#include "testrun/jsproj.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define REPORT_MAX (256L * 1024 * 1024)

static const char *const FW_NAMES[] = {[JS_JEST] = "jest", [JS_VITEST] = "vitest",
                                       [JS_MOCHA] = "mocha"};
#define FW_COUNT 3

/* The config files each framework looks for first in its root directory. */
static const char *const CONFIG_FILES[FW_COUNT][10] = {
    [JS_JEST] = {"jest.config.js", "jest.config.ts", "jest.config.mjs", "jest.config.cjs",
                 "jest.config.mts", "jest.config.cts", "jest.config.json", NULL},
    [JS_VITEST] = {"vitest.config.js", "vitest.config.ts", "vitest.config.mjs",
                   "vitest.config.cjs", "vitest.config.mts", "vitest.config.cts", NULL},
    [JS_MOCHA] = {".mocharc.js", ".mocharc.cjs", ".mocharc.mjs", ".mocharc.json",
                  ".mocharc.jsonc", ".mocharc.yaml", ".mocharc.yml", NULL},
};

char *js_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && n <= REPORT_MAX && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n + 1);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else if (buf) {
                buf[n] = '\0';
                if (len)
                    *len = (size_t)n;
            }
        }
    }
    fclose(f);
    return buf;
}

/* Whether text has word as a whole word ("npx jest --ci" has "jest"; "vitest" does
 * not have "test"). */
static bool has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text ? strstr(text, word) : NULL; p; p = strstr(p + 1, word)) {
        bool before = p == text || !isalnum((unsigned char)p[-1]);
        bool after = !isalnum((unsigned char)p[n]) && p[n] != '-';
        if (before && after)
            return true;
    }
    return false;
}

static bool has_dependency(const cJSON *pkg, const char *name)
{
    static const char *const SECTIONS[] = {"devDependencies", "dependencies"};
    for (size_t i = 0; i < sizeof SECTIONS / sizeof *SECTIONS; i++)
        if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pkg, SECTIONS[i]),
                                             name))
            return true;
    return false;
}

/* What names fw as the project's runner: its config file (or its key in
 * package.json, where jest and mocha also read their config), the test script, or
 * the agent's command. */
static bool claims(const char *root, const cJSON *pkg, const char *command,
                   enum js_framework fw)
{
    for (const char *const *f = CONFIG_FILES[fw]; *f; f++)
        if (test_has_file(root, *f))
            return true;
    if (fw != JS_VITEST && cJSON_GetObjectItemCaseSensitive(pkg, FW_NAMES[fw]))
        return true;
    const char *script = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pkg, "scripts"), "test"));
    return has_word(script, FW_NAMES[fw]) || has_word(command, FW_NAMES[fw]);
}

int js_detect(const char *project_root, const char *command, enum js_framework fw,
              int confidence)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/package.json", project_root);
    char *text = js_read_file(path, NULL);
    cJSON *pkg = text ? cJSON_Parse(text) : NULL;
    free(text);
    int score = 0;
    bool mine = claims(project_root, pkg, command, fw);
    bool dep = has_dependency(pkg, FW_NAMES[fw]);
    bool other = false;
    for (int i = 0; i < FW_COUNT; i++)
        if (i != (int)fw && claims(project_root, pkg, command, (enum js_framework)i))
            other = true;
    if (mine)
        score = confidence;
    else if (other)
        score = dep ? 40 : 0;
    else if (dep)
        score = confidence - 10;
    cJSON_Delete(pkg);
    return score;
}

/* The framework's executable in root/node_modules/.bin or the nearest parent's
 * (npm installs a workspace's tools at its top); malloc'd, NULL when none. */
static char *find_bin(const char *root, const char *bin)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", root) >= (int)sizeof dir)
        return NULL;
    for (;;) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            dir[--n] = '\0';
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/node_modules/.bin/%s", strcmp(dir, "/") ? dir : "",
                     bin) < (int)sizeof path && access(path, X_OK) == 0)
            return strdup(path);
        char *slash = strrchr(dir, '/');
        if (!slash || strcmp(dir, "/") == 0)
            return NULL;
        slash[slash == dir ? 1 : 0] = '\0';
    }
}

int js_command(const struct test_plan *plan, const char *bin, const char *const *prefix_args,
               struct test_command *out, struct strobe_error *e)
{
    if (plan->command) {
        if (tcmd_split(out, plan->command) != 0 || out->argc == 0)
            return err_set(e, ERR_VALIDATION, "command '%s' has an unclosed quote or no "
                           "words.", plan->command);
        /* "npm test": the options that follow are the script's, after "--" */
        const char *base = strrchr(out->argv[0], '/');
        base = base ? base + 1 : out->argv[0];
        bool dashes = false;
        for (int i = 1; i < out->argc; i++)
            dashes |= strcmp(out->argv[i], "--") == 0;
        if (!dashes && (strcmp(base, "npm") == 0 || strcmp(base, "pnpm") == 0 ||
                        strcmp(base, "yarn") == 0))
            tcmd_arg(out, "--");
    } else if (plan->work_dir) {
        char *path = find_bin(plan->project_root, bin);
        if (!path)
            return err_set(e, ERR_COMMAND_NOT_FOUND, "%s is not installed in %s/node_modules "
                           "or a parent's (npm package %s: `npm install --save-dev %s`, or "
                           "`npm ci` when package-lock.json lists it).", bin,
                           plan->project_root, bin, bin);
        tcmd_arg(out, "%s", path);
        free(path);
    } else {
        tcmd_arg(out, "npx");
        tcmd_arg(out, "%s", bin);
    }
    for (const char *const *a = prefix_args; a && *a; a++)
        tcmd_arg(out, "%s", *a);
    return 0;
}

char *js_regex_literal(const char *name)
{
    struct strbuf sb = {0};
    for (const char *p = name; *p; p++) {
        if (strchr("\\^$.|?*+()[]{}/", *p))
            sb_puts(&sb, "\\");
        sb_append(&sb, p, 1);
    }
    return sb_take(&sb);
}

char *js_relative(const char *path, const char *project_root)
{
    size_t n = project_root ? strlen(project_root) : 0;
    while (n > 1 && project_root[n - 1] == '/')
        n--;
    if (n && strncmp(path, project_root, n) == 0 && path[n] == '/')
        return strdup(path + n + 1);
    return strdup(path);
}

/* A stack frame's location, "at f (LOC)" or "at LOC", as path and line; false
 * for frames outside the project's code. */
static bool frame_location(const char *s, size_t n, char *path, size_t pathlen, int *line)
{
    if (n && s[n - 1] == ')') {
        const char *open = NULL;
        for (const char *p = s; p < s + n; p++)
            if (*p == '(')
                open = p;
        if (!open)
            return false;
        n = (size_t)(s + n - 1 - (open + 1));
        s = open + 1;
    }
    if (n >= 7 && memcmp(s, "file://", 7) == 0) {
        s += 7;
        n -= 7;
    }
    /* PATH:LINE:COLUMN or PATH:LINE */
    long nums[2] = {0, 0};
    int k = 0;
    size_t end = n;
    while (k < 2) {
        size_t d = end;
        while (d > 0 && isdigit((unsigned char)s[d - 1]))
            d--;
        if (d == end || d == 0 || s[d - 1] != ':')
            break;
        nums[k++] = strtol(s + d, NULL, 10);
        end = d - 1;
    }
    if (k == 0 || end == 0 || end >= pathlen)
        return false;
    memcpy(path, s, end);
    path[end] = '\0';
    if (strncmp(path, "node:", 5) == 0 || path[0] == '<' || strstr(path, "/node_modules/") ||
        strncmp(path, "node_modules/", 13) == 0 || !strchr(path, '.'))
        return false;
    long l = k == 2 ? nums[1] : nums[0];
    if (l <= 0 || l > INT_MAX)
        return false;
    *line = (int)l;
    return true;
}

void js_split_error(const char *text, const char *project_root, char **message, char **file,
                    int *line)
{
    const char *stack = NULL;
    bool located = false;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *t = p;
        while (t < p + n && (*t == ' ' || *t == '\t'))
            t++;
        if ((size_t)(p + n - t) > 3 && memcmp(t, "at ", 3) == 0) {
            if (!stack)
                stack = p;
            char path[PATH_MAX];
            int l = 0;
            if (!located && frame_location(t + 3, (size_t)(p + n - t - 3), path, sizeof path, &l)) {
                free(*file);
                *file = js_relative(path, project_root);
                *line = l;
                located = true;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    size_t mlen = stack ? (size_t)(stack - text) : strlen(text);
    while (mlen > 0 && isspace((unsigned char)text[mlen - 1]))
        mlen--;
    test_set_str(message, text, (long)mlen);
}

static enum test_status jest_status(const char *s)
{
    if (s && strcmp(s, "passed") == 0)
        return TEST_PASSED;
    if (s && strcmp(s, "failed") == 0)
        return TEST_FAILED;
    return TEST_SKIPPED; /* pending, skipped, todo, disabled */
}

static void add_case(const cJSON *a, const char *suite_file, const char *root,
                     struct test_report *r)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "fullName"));
    if (!name)
        name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "title"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "status"));
    struct test_case *c = test_report_add(r, name, jest_status(status));
    if (!c)
        return;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "duration");
    if (cJSON_IsNumber(d))
        c->duration_ms = (int64_t)(d->valuedouble + 0.5);
    struct strbuf msg = {0};
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(a, "failureMessages")) {
        if (!cJSON_IsString(m))
            continue;
        char *text = NULL, *file = NULL;
        int line = 0;
        js_split_error(m->valuestring, root, &text, &file, &line);
        if (!c->file && file) {
            c->file = file;
            c->line = line;
        } else {
            free(file);
        }
        if (msg.len)
            sb_puts(&msg, "\n\n");
        sb_puts(&msg, text ? text : "");
        free(text);
    }
    if (msg.len)
        c->message = sb_take(&msg);
    sb_free(&msg);
    if (!c->file && suite_file)
        c->file = js_relative(suite_file, root);
}

char *js_error_line(const char *text)
{
    const char *first = NULL;
    size_t first_n = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        const char *colon = memchr(p, ':', n);
        if (colon && colon - p >= 5 && memcmp(colon - 5, "Error", 5) == 0) {
            bool word = true;
            for (const char *q = p; q < colon; q++)
                word = word && (isalnum((unsigned char)*q) || *q == '_');
            if (word)
                return strndup(p, n);
        }
        if (!first && n && strncmp(p, "\xe2\x97\x8f", 3) != 0) {
            first = p;
            first_n = n;
        }
        p = nl ? nl + 1 : NULL;
    }
    return first ? strndup(first, first_n) : strdup("the test file failed to load");
}

/* Babel's position at the end of a SyntaxError line: "... (9:0)". */
static bool babel_position(const char *s, int *line, int *column)
{
    size_t n = strlen(s);
    if (n < 5 || s[n - 1] != ')')
        return false;
    const char *open = strrchr(s, '(');
    return open && sscanf(open, "(%d:%d)", line, column) == 2 && *line > 0;
}

struct load_error {
    char *file, *message;
    int line, column;
};

bool js_parse_jest_json(const char *json, const char *project_root, struct test_report *r)
{
    cJSON *root = cJSON_Parse(json);
    const cJSON *suites = cJSON_GetObjectItemCaseSensitive(root, "testResults");
    if (!cJSON_IsArray(suites)) {
        cJSON_Delete(root);
        return false;
    }
    struct load_error errs[64];
    int n_errs = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, suites) {
        const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "name"));
        const cJSON *cases = cJSON_GetObjectItemCaseSensitive(s, "assertionResults");
        const cJSON *a;
        cJSON_ArrayForEach(a, cases)
            add_case(a, file, project_root, r);
        const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "status"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "message"));
        if (cJSON_GetArraySize(cases) > 0 || !status || strcmp(status, "failed") != 0 ||
            n_errs == (int)(sizeof errs / sizeof *errs))
            continue;
        struct load_error *le = &errs[n_errs++];
        *le = (struct load_error){0};
        le->message = js_error_line(msg ? msg : "");
        if (file && babel_position(le->message, &le->line, &le->column))
            le->file = js_relative(file, project_root);
        else {
            char *unused = NULL;
            js_split_error(msg ? msg : "", project_root, &unused, &le->file, &le->line);
            free(unused);
            if (!le->file && file)
                le->file = js_relative(file, project_root);
        }
    }
    /* A suite that never loaded ran none of its tests: when that is every suite,
     * the run is a build failure; otherwise each such suite counts as one failure. */
    r->build_failed = n_errs > 0 && r->n_cases == 0;
    for (int i = 0; i < n_errs; i++) {
        struct load_error *le = &errs[i];
        if (r->build_failed) {
            test_report_diag(r, le->file, le->line, le->column, le->message);
        } else {
            struct test_case *c = test_report_add(r, le->file ? le->file : "(test file)",
                                                  TEST_FAILED);
            if (c) {
                test_set_str(&c->file, le->file, -1);
                c->line = le->line;
                test_set_str(&c->message, le->message, -1);
            }
        }
        free(le->file);
        free(le->message);
    }
    r->structured = true;
    cJSON_Delete(root);
    return true;
}

void js_drop_filtered(struct test_report *r, const char *test)
{
    if (!test)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < r->n_cases; i++) {
        struct test_case *c = &r->cases[i];
        if (c->status == TEST_SKIPPED && !strstr(c->name, test)) {
            free(c->name);
            free(c->file);
            free(c->message);
            free(c->output);
            continue;
        }
        r->cases[kept++] = *c;
    }
    r->n_cases = kept;
}

int js_suggest_none(const struct test_case *c, char **out, int max)
{
    (void)c;
    (void)out;
    (void)max;
    return 0;
}
