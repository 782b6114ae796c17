/*
 * junit.c - the JUnit reader of junit.h: xml.h's callbacks collect one <testcase>
 * at a time (its attributes, its first failure, error or skip, its outputs) and
 * hand it to the adapter's callback when it closes.
 */
#include "testrun/junit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testrun/xml.h"

struct junit_state {
    junit_case_fn fn;
    void *ud;
    struct test_report *r;
    bool is_junit;      /* the root was <testsuites> or <testsuite> */
    bool stop;          /* the callback ran out of memory */
    char *suite;
    /* the <testcase> open now */
    bool in_case;
    char *classname, *name, *file, *time, *line, *status, *result;
    char *kind, *message, *type;
    struct strbuf text, out, err;
};

static void set(char **field, const char *value)
{
    test_set_str(field, value, -1);
}

static void case_reset(struct junit_state *s)
{
    char **fields[] = {&s->classname, &s->name, &s->file, &s->time, &s->line,
                       &s->status, &s->result, &s->kind, &s->message, &s->type};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        set(fields[i], NULL);
    sb_free(&s->text);
    sb_free(&s->out);
    sb_free(&s->err);
}

static void on_start(void *ud, const char *el, const char **attrs, int depth)
{
    struct junit_state *s = ud;
    if (depth == 0)
        s->is_junit = strcmp(el, "testsuites") == 0 || strcmp(el, "testsuite") == 0;
    if (!s->is_junit || s->stop)
        return;
    if (strcmp(el, "testsuite") == 0) {
        set(&s->suite, xml_attr(attrs, "name"));
    } else if (strcmp(el, "testcase") == 0) {
        case_reset(s);
        s->in_case = true;
        set(&s->classname, xml_attr(attrs, "classname"));
        set(&s->name, xml_attr(attrs, "name"));
        set(&s->file, xml_attr(attrs, "file"));
        set(&s->line, xml_attr(attrs, "line"));
        set(&s->time, xml_attr(attrs, "time"));
        set(&s->status, xml_attr(attrs, "status"));
        set(&s->result, xml_attr(attrs, "result"));
    } else if (s->in_case && (strcmp(el, "failure") == 0 || strcmp(el, "error") == 0 ||
                              strcmp(el, "skipped") == 0)) {
        /* The first failure or error wins; a skip only when nothing failed. */
        bool failing = strcmp(el, "skipped") != 0;
        if (!s->kind || (failing && strcmp(s->kind, "skipped") == 0)) {
            set(&s->kind, el);
            set(&s->message, xml_attr(attrs, "message"));
            set(&s->type, xml_attr(attrs, "type"));
        }
    }
}

static bool is_one_of(const char *s, const char *a, const char *b)
{
    return s && (strcmp(s, a) == 0 || strcmp(s, b) == 0);
}

static void case_done(struct junit_state *s)
{
    struct junit_case jc = {
        .suite = s->suite,
        .classname = s->classname,
        .name = s->name,
        .file = s->file,
        .line = s->line ? (int)strtol(s->line, NULL, 10) : -1,
        .time = s->time ? strtod(s->time, NULL) : -1,
        .status = s->status,
        .kind = s->kind,
        .message = s->message,
        .type = s->type,
        .text = s->text.len ? s->text.buf : NULL,
        .out = s->out.len ? s->out.buf : NULL,
        .err = s->err.len ? s->err.buf : NULL,
    };
    if (s->kind && strcmp(s->kind, "skipped") != 0)
        jc.result = TEST_FAILED;
    else if (s->kind || is_one_of(s->status, "notrun", "disabled") ||
             is_one_of(s->result, "skipped", "suppressed"))
        jc.result = TEST_SKIPPED;
    else
        jc.result = TEST_PASSED;
    if (s->fn(s->ud, &jc, s->r) != 0)
        s->stop = true;
}

static void on_end(void *ud, const char *el, const char *text, size_t len, int depth)
{
    struct junit_state *s = ud;
    (void)depth;
    if (!s->is_junit || s->stop || !s->in_case)
        return;
    if (strcmp(el, "testcase") == 0) {
        case_done(s);
        case_reset(s);
        s->in_case = false;
    } else if (strcmp(el, "failure") == 0 || strcmp(el, "error") == 0 ||
               strcmp(el, "skipped") == 0) {
        if (len && (!s->kind || strcmp(el, s->kind) == 0)) {
            if (s->text.len)
                sb_puts(&s->text, "\n");
            sb_append(&s->text, text, len);
        }
    } else if (strcmp(el, "system-out") == 0) {
        sb_append(&s->out, text, len);
    } else if (strcmp(el, "system-err") == 0) {
        sb_append(&s->err, text, len);
    }
}

int junit_parse(const char *xml, size_t len, junit_case_fn fn, void *ud,
                struct test_report *r)
{
    struct junit_state s = {.fn = fn, .ud = ud, .r = r};
    struct xml_callbacks cb = {.start = on_start, .end = on_end, .ud = &s};
    char err[160];
    int rc = xml_parse(xml, len, &cb, err, sizeof err);
    if (s.is_junit)
        r->structured = true;
    if (s.stop)
        rc = -1;
    else if (rc != 0 && strcmp(err, "out of memory") == 0)
        rc = -1;
    else if (rc != 0) {
        snprintf(r->note, sizeof r->note, "the JUnit report breaks off (%s): %s", err,
                 s.in_case ? "the test it was writing and any after it are missing"
                           : "tests after that point are missing");
        rc = 1;
    } else if (!s.is_junit) {
        snprintf(r->note, sizeof r->note, "the report is XML but not JUnit");
        rc = 1;
    }
    case_reset(&s);
    free(s.suite);
    return rc;
}

int junit_parse_file(const char *path, junit_case_fn fn, void *ud, struct test_report *r)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return 2;
    struct strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && sb.len <= JUNIT_FILE_MAX)
        sb_append(&sb, buf, n);
    bool too_big = sb.len > JUNIT_FILE_MAX;
    fclose(f);
    if (sb.oom) {
        sb_free(&sb);
        return -1;
    }
    if (sb.len == 0 || too_big) {
        if (too_big)
            snprintf(r->note, sizeof r->note, "the JUnit report %s is larger than %u MiB: "
                     "not read", path, JUNIT_FILE_MAX >> 20);
        sb_free(&sb);
        return 2;
    }
    int rc = junit_parse(sb.buf, sb.len, fn, ud, r);
    sb_free(&sb);
    if (rc == 1 && !r->structured) {
        r->note[0] = '\0';
        return 2;
    }
    return rc;
}

struct test_case *junit_add(const struct junit_case *jc, const char *name,
                            struct test_report *r)
{
    struct test_case *c = test_report_add(r, name, jc->result);
    if (!c)
        return NULL;
    if (jc->time >= 0)
        c->duration_ms = (int64_t)(jc->time * 1000 + 0.5);
    if (jc->out || jc->err) {
        struct strbuf sb = {0};
        if (jc->out)
            sb_puts(&sb, jc->out);
        if (jc->out && jc->err && jc->out[strlen(jc->out) - 1] != '\n')
            sb_puts(&sb, "\n");
        if (jc->err)
            sb_puts(&sb, jc->err);
        if (sb.oom) {
            sb_free(&sb);
            return NULL;
        }
        c->output = sb_take(&sb);
    }
    const char *msg = jc->text && *jc->text ? jc->text : jc->message;
    if (jc->result != TEST_PASSED && msg && *msg) {
        test_set_str(&c->message, msg, -1);
        if (!c->message)
            return NULL;
    }
    return c;
}
