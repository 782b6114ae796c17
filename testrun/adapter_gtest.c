/*
 * adapter_gtest.c - GoogleTest binaries (debug_test's `command`): recognized by
 * the bytes GoogleTest links into them, run with a JSON report file, and read from
 * that report (each failure's "FILE:LINE\nmessage"), with the text GoogleTest
 * prints on stdout for what the report lacks (a skip's reason, each test's own
 * output) and for everything when the binary died before writing the report.
 */
#include "testrun/adapter.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testrun/tsuggest.h"

#define PROBE_CHUNK (1 << 20)
#define PROBE_MAX (128L << 20)   /* bytes of a binary read before giving up */
#define REPORT_MAX (64L << 20)

/* Strings only a GoogleTest binary has: the --gtest_output flag's help and symbol
 * (libgtest.a linked in), or a reference to testing::Test (libgtest.so). */
static const char *const MARKERS[] = {"gtest_output", "_ZN7testing4Test", NULL};

/* ---- detection --------------------------------------------------------------- */

/* The file that runs for command's first word: a path (relative to the project
 * root) or a name looked up in PATH. */
static bool resolve(const char *project_root, const char *word, char *path, size_t size)
{
    if (strchr(word, '/')) {
        int n = word[0] == '/' ? snprintf(path, size, "%s", word)
                               : snprintf(path, size, "%s/%s", project_root, word);
        return n > 0 && (size_t)n < size;
    }
    const char *dirs = getenv("PATH");
    while (dirs && *dirs) {
        size_t len = strcspn(dirs, ":");
        int n = snprintf(path, size, "%.*s/%s", (int)len, dirs, word);
        if (n > 0 && (size_t)n < size && access(path, X_OK) == 0)
            return true;
        dirs += len + (dirs[len] == ':');
    }
    return false;
}

static bool has_marker(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t keep = 0;
    for (const char *const *m = MARKERS; *m; m++)
        if (strlen(*m) > keep)
            keep = strlen(*m);
    char *buf = malloc(PROBE_CHUNK + keep);
    bool found = false;
    size_t carry = 0;
    long total = 0;
    while (buf && !found && total < PROBE_MAX) {
        size_t n = fread(buf + carry, 1, PROBE_CHUNK, f);
        if (n == 0)
            break;
        total += (long)n;
        size_t have = carry + n;
        for (const char *const *m = MARKERS; *m && !found; m++)
            found = memmem(buf, have, *m, strlen(*m)) != NULL;
        /* A marker may straddle two chunks: keep the tail. */
        carry = have < keep ? have : keep;
        memmove(buf, buf + have - carry, carry);
    }
    free(buf);
    fclose(f);
    return found;
}

static int gtest_detect(const char *project_root, const char *command)
{
    if (!command)
        return 0;
    struct test_command c = {0};
    char path[PATH_MAX];
    bool yes = tcmd_split(&c, command) == 0 && c.argc > 0 &&
               resolve(project_root, c.argv[0], path, sizeof path) && has_marker(path);
    tcmd_free(&c);
    return yes ? 90 : 0;
}

/* ---- the command ------------------------------------------------------------- */

/* A name with a '.' is a whole test (Suite.Name) and a name with a wildcard or a
 * ':' is a GoogleTest filter already: both go as they are; anything else is a
 * substring of the full name. GoogleTest has no notion of test levels: the plan's
 * level is ignored. */
static int gtest_command(const struct test_plan *plan, struct test_command *out,
                         struct strobe_error *e)
{
    if (!plan->command)
        return err_set(e, ERR_VALIDATION, "framework gtest needs `command`: the path of "
                       "the GoogleTest binary to run (build it first).");
    if (tcmd_split(out, plan->command) != 0 || out->argc == 0)
        return err_set(e, ERR_VALIDATION, "command '%s' has an unclosed quote or no words.",
                       plan->command);
    if (plan->test) {
        if (strpbrk(plan->test, ".*?:-"))
            tcmd_arg(out, "--gtest_filter=%s", plan->test);
        else
            tcmd_arg(out, "--gtest_filter=*%s*", plan->test);
    }
    if (plan->work_dir) {
        char *report = NULL;
        if (asprintf(&report, "%s/gtest.json", plan->work_dir) < 0)
            return err_set(e, ERR_VALIDATION, "out of memory");
        tcmd_arg(out, "--gtest_output=json:%s", report);
        out->report_path = report;
    }
    if (out->too_long)
        return err_set(e, ERR_VALIDATION, "the GoogleTest command has too many arguments.");
    return 0;
}

/* ---- stdout ------------------------------------------------------------------ */

/* The line [line, line+len) as "[ TAG ] rest": the tag's text ("RUN", "OK",
 * "FAILED", "SKIPPED") in tag, and the test name in name (up to the first space or
 * comma: "Inst/Suite.Name/0, where GetParam() = 4 (0 ms)"). */
static bool status_line(const char *line, size_t len, char *tag, size_t tag_size, char *name,
                        size_t name_size)
{
    if (len < 13 || line[0] != '[' || line[11] != ']' || line[12] != ' ')
        return false;
    const char *t = line + 1, *tend = line + 11;
    while (t < tend && *t == ' ')
        t++;
    while (tend > t && tend[-1] == ' ')
        tend--;
    size_t tn = (size_t)(tend - t), nn = 0;
    const char *n = line + 13;
    while (n + nn < line + len && n[nn] != ' ' && n[nn] != ',')
        nn++;
    if (tn == 0 || tn >= tag_size || nn == 0 || nn >= name_size)
        return false;
    memcpy(tag, t, tn);
    tag[tn] = '\0';
    memcpy(name, n, nn);
    name[nn] = '\0';
    return true;
}

/* The test whose RUN line was seen last, until its verdict. */
struct gtest_live {
    char current[512];
};

static void *gtest_live_open(void)
{
    return calloc(1, sizeof(struct gtest_live));
}

static void gtest_live_close(void *state)
{
    free(state);
}

static void gtest_live_line(void *state, struct test_live *lv, int stream, const char *line,
                            size_t len, bool partial)
{
    struct gtest_live *st = state;
    char tag[16], name[512];
    (void)partial;
    if (stream != 1 || !st)
        return;
    if (len > 22 && memcmp(line, "[==========] Running ", 21) == 0) {
        test_live_phase(lv, TEST_PHASE_RUNNING);
        return;
    }
    if (!status_line(line, len, tag, sizeof tag, name, sizeof name))
        return;
    if (strcmp(tag, "RUN") == 0) {
        snprintf(st->current, sizeof st->current, "%s", name);
        test_live_started(lv, name);
        return;
    }
    /* The summary at the end lists failed tests again: only the running one's
     * verdict counts. */
    if (strcmp(name, st->current) != 0)
        return;
    if (strcmp(tag, "OK") == 0)
        test_live_finished(lv, name, TEST_PASSED);
    else if (strcmp(tag, "FAILED") == 0)
        test_live_finished(lv, name, TEST_FAILED);
    else if (strcmp(tag, "SKIPPED") == 0)
        test_live_finished(lv, name, TEST_SKIPPED);
    else
        return;
    st->current[0] = '\0';
}

/* What a test printed between its RUN line and its verdict. */
struct block {
    char name[512];
    char tag[16];          /* its verdict, "" when none came */
    const char *text;      /* inside the output */
    size_t len;
};

/* Every test's block in stdout, in order. *n_out gets the count; NULL when memory
 * runs out (or there are none: *n_out is then 0). */
static struct block *read_blocks(const char *out, size_t out_len, size_t *n_out)
{
    struct block *b = NULL;
    size_t n = 0, cap = 0;
    const char *p = out, *end = out + out_len, *line;
    size_t len;
    struct block *open = NULL;
    while (test_next_line(&p, end, &line, &len)) {
        char tag[16], name[512];
        if (!status_line(line, len, tag, sizeof tag, name, sizeof name)) {
            continue;
        }
        if (strcmp(tag, "RUN") == 0) {
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                struct block *nb = realloc(b, cap * sizeof *nb);
                if (!nb) {
                    free(b);
                    *n_out = 0;
                    return NULL;
                }
                b = nb;
            }
            open = &b[n++];
            *open = (struct block){.text = p, .len = 0};
            snprintf(open->name, sizeof open->name, "%s", name);
            continue;
        }
        if (open && strcmp(name, open->name) == 0) {
            open->len = (size_t)(line - open->text);
            snprintf(open->tag, sizeof open->tag, "%s", tag);
            open = NULL;
        }
    }
    if (open)
        open->len = (size_t)(end - open->text);
    *n_out = n;
    return b;
}

static struct block *find_block(struct block *b, size_t n, const char *name)
{
    for (size_t i = n; i-- > 0;)
        if (strcmp(b[i].name, name) == 0)
            return &b[i];
    return NULL;
}

/* path relative to the project root when it is inside it. */
static const char *relative(const char *path, const char *root)
{
    size_t n = root ? strlen(root) : 0;
    if (n && strncmp(path, root, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

/* A block's "FILE:LINE: Skipped\nREASON": the reason. */
static void skip_reason(struct test_case *c, const struct block *b)
{
    const char *s = memmem(b->text, b->len, ": Skipped\n", 10);
    if (!s)
        return;
    s += 10;
    size_t n = b->len - (size_t)(s - b->text);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        n--;
    if (n)
        test_set_str(&c->message, s, (long)n);
}

/* ---- the report file ---------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    struct strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && sb.len < (size_t)REPORT_MAX)
        sb_append(&sb, buf, n);
    fclose(f);
    return sb.len ? sb_take(&sb) : (sb_free(&sb), NULL);
}

/* "0.012s" -> 12 */
static int64_t seconds_ms(const char *s)
{
    return s ? (int64_t)(strtod(s, NULL) * 1000.0 + 0.5) : -1;
}

/* One test of the report. The first failure's "FILE:LINE" is where it failed; every
 * failure's text goes into the message. */
static int report_case(const cJSON *suite, const cJSON *t, const struct test_output *o,
                       struct block *blocks, size_t n_blocks, struct test_report *out)
{
    const char *sname = cJSON_GetStringValue(cJSON_GetObjectItem(suite, "name"));
    const char *tname = cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"));
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(t, "status"));
    const char *result = cJSON_GetStringValue(cJSON_GetObjectItem(t, "result"));
    const cJSON *failures = cJSON_GetObjectItem(t, "failures");
    if (!sname || !tname)
        return 0;
    enum test_status st = TEST_PASSED;
    if (cJSON_GetArraySize(failures) > 0)
        st = TEST_FAILED;
    else if ((result && strcmp(result, "SKIPPED") == 0) ||
             (status && strcmp(status, "NOTRUN") == 0))
        st = TEST_SKIPPED;
    char name[1024];
    snprintf(name, sizeof name, "%s.%s", sname, tname);
    struct test_case *c = test_report_add(out, name, st);
    if (!c)
        return -1;
    c->duration_ms = seconds_ms(cJSON_GetStringValue(cJSON_GetObjectItem(t, "time")));
    const char *file = cJSON_GetStringValue(cJSON_GetObjectItem(t, "file"));
    const cJSON *line = cJSON_GetObjectItem(t, "line");
    if (file) {
        test_set_str(&c->file, relative(file, o->plan->project_root), -1);
        c->line = cJSON_IsNumber(line) ? line->valueint : 0;
    }
    struct block *b = find_block(blocks, n_blocks, name);
    if (b && b->len)
        test_set_str(&c->output, b->text, (long)b->len);
    if (st == TEST_SKIPPED) {
        if (b)
            skip_reason(c, b);
        else if (status && strcmp(status, "NOTRUN") == 0)
            test_set_str(&c->message, "disabled", -1);
        return 0;
    }
    if (st != TEST_FAILED)
        return 0;
    struct strbuf msg = {0};
    const cJSON *f;
    bool located = false;
    cJSON_ArrayForEach(f, failures) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(f, "failure"));
        if (!text)
            continue;
        const char *nl = strchr(text, '\n');
        const char *colon = nl ? memrchr(text, ':', (size_t)(nl - text)) : NULL;
        if (!located && colon && colon > text) {
            char *end;
            long l = strtol(colon + 1, &end, 10);
            if (end == nl && l > 0) {
                char *path = strndup(text, (size_t)(colon - text));
                if (path)
                    test_set_str(&c->file, relative(path, o->plan->project_root), -1);
                free(path);
                c->line = (int)l;
                located = true;
            }
        }
        if (msg.len)
            sb_puts(&msg, "\n\n");
        sb_puts(&msg, colon && nl ? nl + 1 : text);
    }
    c->message = msg.len ? sb_take(&msg) : (sb_free(&msg), strdup("failed"));
    return 0;
}

static int parse_report(const cJSON *root, const struct test_output *o, struct block *blocks,
                        size_t n_blocks, struct test_report *out)
{
    const cJSON *suite;
    cJSON_ArrayForEach(suite, cJSON_GetObjectItem(root, "testsuites")) {
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(suite, "testsuite"))
            if (report_case(suite, t, o, blocks, n_blocks, out) != 0)
                return -1;
    }
    return 0;
}

/* A failure in the text: "FILE:LINE: Failure" then its message. */
static void text_failure(struct test_case *c, const struct block *b, const char *root)
{
    const char *p = b->text, *end = b->text + b->len, *line;
    size_t len;
    struct strbuf msg = {0};
    bool in_failure = false;
    while (test_next_line(&p, end, &line, &len)) {
        if (len > 9 && memcmp(line + len - 9, ": Failure", 9) == 0) {
            const char *colon = memrchr(line, ':', len - 9);
            if (!c->file && colon) {
                char *path = strndup(line, (size_t)(colon - line));
                if (path)
                    test_set_str(&c->file, relative(path, root), -1);
                free(path);
                c->line = atoi(colon + 1);
            }
            if (msg.len)
                sb_puts(&msg, "\n");
            in_failure = true;
            continue;
        }
        if (in_failure) {
            sb_append(&msg, line, len);
            sb_puts(&msg, "\n");
        }
    }
    while (msg.len && msg.buf[msg.len - 1] == '\n')
        msg.buf[--msg.len] = '\0';
    if (msg.len)
        c->message = sb_take(&msg);
    else
        sb_free(&msg);
}

/* No report: the verdicts from stdout, and a test without one is the one that was
 * running when the binary died. */
static int parse_text(const struct test_output *o, struct block *blocks, size_t n_blocks,
                      struct test_report *out)
{
    for (size_t i = 0; i < n_blocks; i++) {
        const struct block *b = &blocks[i];
        enum test_status st = strcmp(b->tag, "OK") == 0        ? TEST_PASSED
                              : strcmp(b->tag, "SKIPPED") == 0 ? TEST_SKIPPED
                                                               : TEST_FAILED;
        struct test_case *c = test_report_add(out, b->name, st);
        if (!c)
            return -1;
        if (b->len)
            test_set_str(&c->output, b->text, (long)b->len);
        if (st == TEST_SKIPPED)
            skip_reason(c, b);
        if (st != TEST_FAILED)
            continue;
        text_failure(c, b, o->plan->project_root);
        if (!b->tag[0]) {
            char why[160];
            if (o->stuck)
                snprintf(why, sizeof why, "killed by Strobe: stuck (see `stuck` for its "
                         "threads' stacks)");
            else if (o->exit_code < 0)
                snprintf(why, sizeof why, "the test binary was killed by a signal while "
                         "this test ran");
            else
                snprintf(why, sizeof why, "the test binary exited with code %d while this "
                         "test ran", o->exit_code);
            test_set_str(&c->message, why, -1);
        } else if (!c->message) {
            test_set_str(&c->message, "failed", -1);
        }
    }
    return 0;
}

static int gtest_parse(const struct test_output *o, struct test_report *out)
{
    size_t n_blocks = 0;
    struct block *blocks = read_blocks(o->out, o->out_len, &n_blocks);
    char *text = read_file(o->report_path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    int rc;
    if (root) {
        out->structured = true;
        rc = parse_report(root, o, blocks, n_blocks, out);
        cJSON_Delete(root);
    } else {
        rc = parse_text(o, blocks, n_blocks, out);
        if (out->n_cases)
            snprintf(out->note, sizeof out->note, "no JSON report (the binary ended before "
                     "writing it, or the command lacks --gtest_output): results read from "
                     "its text output");
    }
    free(blocks);
    return rc;
}

/* ---- suggestions --------------------------------------------------------------- */

static bool is_test_file(const char *base)
{
    return strstr(base, "test") || strstr(base, "Test");
}

/* A failure outside the tests names its file. One inside them names the code under
 * test as the test's names suggest (suite StackTest -> classes Stack*: Stack*::**,
 * file stack_test.cpp -> stack.cpp, or stack.hpp where that is the one there) and
 * the functions its failed check called, which GoogleTest writes on the message's
 * lines ("  s.pop()" -> **::pop). */
static int gtest_suggest(const struct test_case *c, char **out, int max)
{
    int n = 0;
    char pattern[600];
    const char *base = c->file ? strrchr(c->file, '/') : NULL;
    base = base ? base + 1 : c->file;
    if (base && !is_test_file(base) && strlen(base) < 512) {
        snprintf(pattern, sizeof pattern, "@file:%s", base);
        test_suggest_add(out, &n, max, pattern);
        return n;
    }
    const char *dot = c->name ? strchr(c->name, '.') : NULL;
    if (dot) {
        const char *suite = c->name, *slash = memchr(suite, '/', (size_t)(dot - suite));
        if (slash)
            suite = slash + 1; /* Inst/Suite.Name/0 */
        int len = (int)(dot - suite);
        if (len > 4 && strncmp(dot - 4, "Test", 4) == 0)
            len -= 4;
        if (len > 0 && len < 512) { /* suite Lru: class LruCache as well as Lru */
            snprintf(pattern, sizeof pattern, "%.*s*::**", len, suite);
            test_suggest_add(out, &n, max, pattern);
        }
    }
    n = tsuggest_file(c, out, n, max);
    for (const char *l = c->message; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, "    Which is: ", 14) != 0)
            n = tsuggest_calls(l, out, n, max);
    return n;
}

const struct test_adapter test_adapter_gtest = {
    .name = "gtest",
    .display = "GoogleTest",
    .language = "c++",
    .build_system = "unknown",
    .program = NULL,
    .provides = NULL,
    .detect = gtest_detect,
    .command = gtest_command,
    .live_open = gtest_live_open,
    .live_line = gtest_live_line,
    .live_close = gtest_live_close,
    .parse = gtest_parse,
    .suggest = gtest_suggest,
    .no_tests_hint = "No tests ran. GoogleTest binaries run TEST() and TEST_F() cases: "
                     "build the test binary and pass its path as `command`.",
};
