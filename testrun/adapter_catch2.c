/*
 * adapter_catch2.c - Catch2 v2 test binaries (`command`, required): recognized by
 * a string every Catch2 v2 binary carries, run with the XML reporter on stdout
 * (`-r xml -d yes`), whose <TestCase> and <OverallResult> elements give live
 * progress as they stream and whose failed <Expression>, <Exception>, <Failure>
 * and <FatalErrorCondition> elements give each failure's file, line and text.
 *
 * Skips: Catch2 v2 has no SKIP. Hidden tests ("[.]", "[!hide]") are not run and
 * appear nowhere in the report, so they cannot be counted. What v2 does have is a
 * known failure, "[!mayfail]": its failed checks do not fail the run; such a test
 * that failed is reported as skipped (like pytest's xfail), with its failure text
 * as the reason. A "[!mayfail]" test that passed is passed.
 */
#include "testrun/adapter.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testrun/tsuggest.h"
#include "testrun/xml.h"

/* In Catch2 v2's --help text, compiled into every binary; not in gtest's. */
static const char MARKER[] = "A Catch2 test executable";
#define PROBE_MAX (256u << 20)
#define PROBE_CHUNK (1u << 20)
#define SECTIONS_MAX 8

/* ---- detection --------------------------------------------------------------- */

/* The program the command runs: its first word, relative to project_root when it
 * has a slash, else looked up in PATH. */
static bool resolve_program(const char *project_root, const char *command, char *out,
                            size_t outlen)
{
    struct test_command c = {0};
    bool ok = tcmd_split(&c, command) == 0 && c.argc > 0;
    if (ok) {
        const char *w = c.argv[0];
        if (w[0] == '/') {
            ok = snprintf(out, outlen, "%s", w) < (int)outlen;
        } else if (strchr(w, '/')) {
            ok = snprintf(out, outlen, "%s/%s", project_root, w) < (int)outlen;
        } else {
            ok = false;
            const char *path = getenv("PATH");
            for (const char *p = path; p && *p && !ok;) {
                const char *colon = strchrnul(p, ':');
                if (snprintf(out, outlen, "%.*s/%s", (int)(colon - p), p, w) <
                        (int)outlen &&
                    access(out, X_OK) == 0)
                    ok = true;
                p = *colon ? colon + 1 : colon;
            }
        }
    }
    tcmd_free(&c);
    return ok;
}

/* Whether the file holds MARKER, read in chunks (the marker may straddle two). */
static bool file_has_marker(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char *buf = NULL;
    bool found = false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (buf = malloc(PROBE_CHUNK))) {
        size_t keep = 0, total = 0;
        ssize_t n;
        while (!found && total < PROBE_MAX &&
               (n = read(fd, buf + keep, PROBE_CHUNK - keep)) > 0) {
            size_t have = keep + (size_t)n;
            found = memmem(buf, have, MARKER, sizeof MARKER - 1) != NULL;
            keep = sizeof MARKER - 2;
            memmove(buf, buf + have - keep, keep);
            total += (size_t)n;
        }
    }
    free(buf);
    close(fd);
    return found;
}

static int catch2_detect(const char *project_root, const char *command)
{
    char path[PATH_MAX];
    if (!command || !resolve_program(project_root, command, path, sizeof path))
        return 0;
    return file_has_marker(path) ? 85 : 0;
}

/* ---- command ----------------------------------------------------------------- */

/* A Catch2 test spec matching exactly the test named name: the characters the
 * spec syntax gives a meaning (",", "[", "]", "\"", "~", "*", "\\") escaped, and a
 * leading "-", which would make the word an option. */
static void name_spec(const char *name, struct strbuf *sb)
{
    for (const char *p = name; *p; p++) {
        if (strchr(",[]\"~*\\", *p) || (p == name && *p == '-'))
            sb_puts(sb, "\\");
        sb_append(sb, p, 1);
    }
}

static int catch2_command(const struct test_plan *plan, struct test_command *out,
                          struct strobe_error *e)
{
    if (!plan->command)
        return err_set(e, ERR_VALIDATION, "Catch2 needs the test binary: pass its path as "
                       "`command` (build it first).");
    if (tcmd_split(out, plan->command) != 0 || out->argc == 0)
        return err_set(e, ERR_VALIDATION, "command '%s' has an unclosed quote or no words.",
                       plan->command);
    if (plan->work_dir) {
        tcmd_arg(out, "-r");
        tcmd_arg(out, "xml");
        tcmd_arg(out, "-d");
        tcmd_arg(out, "yes");
    }
    if (plan->test) {
        struct strbuf sb = {0};
        name_spec(plan->test, &sb);
        tcmd_arg(out, "%s", sb.buf ? sb.buf : "");
        sb_free(&sb);
    } else if (plan->level == TEST_LEVEL_UNIT) {
        tcmd_arg(out, "[unit]");
    } else if (plan->level == TEST_LEVEL_INTEGRATION) {
        tcmd_arg(out, "[integration]");
    } else if (plan->level == TEST_LEVEL_E2E) {
        tcmd_arg(out, "[e2e]");
    }
    return 0;
}

/* ---- the XML reporter's stream ------------------------------------------------ */

/* What the reporter said of the <TestCase> open now; shared by the live parser
 * (which only reports starts and ends) and parse() (which keeps everything). */
struct c2 {
    struct test_live *lv;    /* live: where progress goes; NULL in parse() */
    struct test_report *r;   /* parse(): where cases go; NULL live */
    bool running;            /* a test case was seen: the phase is RUNNING */
    bool complete;           /* the root element closed: the report is whole */
    bool oom;

    bool in_case;
    char *name, *file;
    int line;
    bool mayfail;
    bool result_seen, success;
    double seconds;
    int failures;
    char *fail_file;
    int fail_line;
    struct strbuf msg, infos, output;
    char *sections[SECTIONS_MAX]; /* the outermost open sections' names */
    int n_sections, section_depth;
    /* the element with a location open now (Expression, Exception, ...) */
    char *el_file, *el_type;
    int el_line;
    bool el_failed;
    char *original, *expanded;
};

static void c2_reset_case(struct c2 *s)
{
    test_set_str(&s->name, NULL, 0);
    test_set_str(&s->file, NULL, 0);
    test_set_str(&s->fail_file, NULL, 0);
    test_set_str(&s->el_file, NULL, 0);
    test_set_str(&s->el_type, NULL, 0);
    test_set_str(&s->original, NULL, 0);
    test_set_str(&s->expanded, NULL, 0);
    for (int i = 0; i < s->n_sections; i++)
        free(s->sections[i]);
    s->n_sections = s->section_depth = 0;
    sb_free(&s->msg);
    sb_free(&s->infos);
    sb_free(&s->output);
    s->in_case = s->mayfail = s->result_seen = s->success = s->el_failed = false;
    s->line = s->fail_line = s->el_line = s->failures = 0;
    s->seconds = -1;
}

static int attr_int(const char **attrs, const char *name)
{
    const char *v = xml_attr(attrs, name);
    return v ? (int)strtol(v, NULL, 10) : 0;
}

/* text without its surrounding whitespace (the reporter indents it). */
static void trimmed(const char *text, size_t len, const char **start, int *n)
{
    while (len && strchr(" \t\r\n", *text)) {
        text++;
        len--;
    }
    while (len && strchr(" \t\r\n", text[len - 1]))
        len--;
    *start = text;
    *n = (int)len;
}

static void c2_start(void *ud, const char *el, const char **attrs, int depth)
{
    struct c2 *s = ud;
    (void)depth;
    if (strcmp(el, "TestCase") == 0) {
        c2_reset_case(s);
        s->in_case = true;
        test_set_str(&s->name, xml_attr(attrs, "name"), -1);
        test_set_str(&s->file, xml_attr(attrs, "filename"), -1);
        s->line = attr_int(attrs, "line");
        const char *tags = xml_attr(attrs, "tags");
        s->mayfail = tags && strstr(tags, "[!mayfail]");
        if (s->lv) {
            if (!s->running)
                test_live_phase(s->lv, TEST_PHASE_RUNNING);
            test_live_started(s->lv, s->name ? s->name : "");
        }
        s->running = true;
        return;
    }
    if (!s->in_case)
        return;
    if (strcmp(el, "Section") == 0) {
        if (s->section_depth++ < SECTIONS_MAX) {
            const char *name = xml_attr(attrs, "name");
            s->sections[s->n_sections++] = strdup(name ? name : "");
        }
    } else if (strcmp(el, "Expression") == 0 || strcmp(el, "Exception") == 0 ||
               strcmp(el, "Failure") == 0 || strcmp(el, "FatalErrorCondition") == 0) {
        test_set_str(&s->el_file, xml_attr(attrs, "filename"), -1);
        test_set_str(&s->el_type, xml_attr(attrs, "type"), -1);
        s->el_line = attr_int(attrs, "line");
        const char *ok = xml_attr(attrs, "success");
        s->el_failed = !ok || strcmp(ok, "false") == 0;
        test_set_str(&s->original, NULL, 0);
        test_set_str(&s->expanded, NULL, 0);
    } else if (strcmp(el, "OverallResult") == 0) {
        const char *ok = xml_attr(attrs, "success");
        const char *secs = xml_attr(attrs, "durationInSeconds");
        s->result_seen = true;
        s->success = ok && strcmp(ok, "true") == 0;
        s->seconds = secs ? strtod(secs, NULL) : -1;
    }
}

/* One failure's text into s->msg, the first one's place into fail_file/line:
 *   CHECK( s.sum() == 6 )
 *   with expansion:
 *     5 == 6
 * then the INFO messages and the sections it happened in. */
static void c2_failure(struct c2 *s, const char *headline, const char *detail, int dlen)
{
    if (s->failures++ == 0) {
        test_set_str(&s->fail_file, s->el_file, -1);
        s->fail_line = s->el_line;
    } else {
        sb_puts(&s->msg, "\n");
    }
    sb_puts(&s->msg, headline);
    if (detail && dlen > 0)
        sb_printf(&s->msg, "\n  %.*s", dlen, detail);
    if (s->infos.len) {
        sb_puts(&s->msg, "\nwith message:");
        sb_append(&s->msg, s->infos.buf, s->infos.len);
        sb_free(&s->infos);
    }
    if (s->n_sections) {
        sb_puts(&s->msg, "\nin section:");
        for (int i = 0; i < s->n_sections; i++)
            sb_printf(&s->msg, "%s\"%s\"", i ? " / " : " ",
                      s->sections[i] ? s->sections[i] : "");
    }
}

static void c2_case_done(struct c2 *s)
{
    enum test_status st = TEST_PASSED;
    if (!s->result_seen || !s->success)
        st = TEST_FAILED;
    else if (s->mayfail && s->failures > 0)
        st = TEST_SKIPPED;
    const char *name = s->name ? s->name : "";
    if (s->lv)
        test_live_finished(s->lv, name, st);
    if (!s->r)
        return;
    struct test_case *c = test_report_add(s->r, name, st);
    if (!c) {
        s->oom = true;
        return;
    }
    if (s->seconds >= 0)
        c->duration_ms = (int64_t)(s->seconds * 1000 + 0.5);
    bool failed_here = st != TEST_PASSED && s->failures > 0;
    test_set_str(&c->file, failed_here && s->fail_file ? s->fail_file : s->file, -1);
    c->line = failed_here && s->fail_file ? s->fail_line : s->line;
    if (st == TEST_SKIPPED) {
        struct strbuf sb = {0};
        sb_printf(&sb, "allowed to fail ([!mayfail]): %s", s->msg.buf ? s->msg.buf : "");
        c->message = sb_take(&sb);
    } else if (st == TEST_FAILED) {
        c->message = s->msg.len ? sb_take(&s->msg)
                                : strdup("the test case ended without a result");
    }
    if (s->output.len)
        c->output = sb_take(&s->output);
}

static void c2_end(void *ud, const char *el, const char *text, size_t len, int depth)
{
    struct c2 *s = ud;
    if (depth == 0)
        s->complete = true;
    if (!s->in_case)
        return;
    const char *t;
    int n;
    trimmed(text, len, &t, &n);
    char head[512];
    if (strcmp(el, "TestCase") == 0) {
        /* Text directly in <TestCase> is what the test wrote to stdout with C stdio,
         * which Catch2 does not capture (std::cout goes to <StdOut>). */
        if (n > 0) {
            struct strbuf sb = {0};
            sb_printf(&sb, "%.*s\n", n, t);
            sb_append(&sb, s->output.buf ? s->output.buf : "", s->output.len);
            sb_free(&s->output);
            s->output = sb;
        }
        c2_case_done(s);
        c2_reset_case(s);
    } else if (strcmp(el, "Section") == 0) {
        if (s->section_depth > 0 && --s->section_depth < SECTIONS_MAX)
            free(s->sections[--s->n_sections]);
    } else if (strcmp(el, "Info") == 0) {
        sb_printf(&s->infos, "\n  %.*s", n, t);
    } else if (strcmp(el, "Original") == 0) {
        test_set_str(&s->original, t, n);
    } else if (strcmp(el, "Expanded") == 0) {
        test_set_str(&s->expanded, t, n);
    } else if (strcmp(el, "Expression") == 0 && s->el_failed) {
        const char *orig = s->original ? s->original : "";
        snprintf(head, sizeof head, "%s( %s )", s->el_type ? s->el_type : "CHECK", orig);
        if (s->expanded && strcmp(s->expanded, orig) != 0) {
            strncat(head, "\nwith expansion:", sizeof head - strlen(head) - 1);
            c2_failure(s, head, s->expanded, (int)strlen(s->expanded));
        } else {
            c2_failure(s, head, NULL, 0);
        }
    } else if (strcmp(el, "Exception") == 0) {
        c2_failure(s, "unexpected exception with message:", t, n);
    } else if (strcmp(el, "Failure") == 0) {
        c2_failure(s, "explicit failure with message:", t, n);
    } else if (strcmp(el, "FatalErrorCondition") == 0) {
        c2_failure(s, "fatal error condition:", t, n);
    } else if (strcmp(el, "StdOut") == 0 || strcmp(el, "StdErr") == 0) {
        sb_append(&s->output, text, len);
    }
}

static void c2_free(struct c2 *s)
{
    c2_reset_case(s);
}

/* ---- live progress ------------------------------------------------------------ */

struct c2_live {
    struct c2 s;
    struct xml_reader *x;
};

static void *catch2_live_open(void)
{
    struct c2_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    struct xml_callbacks cb = {.start = c2_start, .end = c2_end, .ud = &l->s};
    l->x = xml_open(&cb);
    if (!l->x) {
        free(l);
        return NULL;
    }
    return l;
}

static void catch2_live_line(void *state, struct test_live *lv, int stream,
                             const char *line, size_t len, bool partial)
{
    struct c2_live *l = state;
    /* The report is on stdout; a partial line arrives again whole. A stream the
     * reader cannot follow (the tests printed into it) just ends live progress:
     * parse() still reads the whole output. */
    if (!l || stream != 1 || partial)
        return;
    l->s.lv = lv;
    if (xml_feed(l->x, line, len, false) == 0)
        xml_feed(l->x, "\n", 1, false);
}

static void catch2_live_close(void *state)
{
    struct c2_live *l = state;
    if (!l)
        return;
    xml_close(l->x);
    c2_free(&l->s);
    free(l);
}

/* ---- the outcome --------------------------------------------------------------- */

static int catch2_parse(const struct test_output *o, struct test_report *out)
{
    /* The report starts at its XML declaration; a test may have printed before it. */
    const char *doc = o->out ? memmem(o->out, o->out_len, "<?xml", 5) : NULL;
    if (!doc) {
        out->structured = false;
        const char *err = o->err ? o->err : "";
        snprintf(out->note, sizeof out->note, "no Catch2 XML report on stdout (is it a "
                 "Catch2 v2 binary?)%s%.*s", *err ? ": " : "",
                 (int)strcspn(err, "\n"), err);
        return 0;
    }
    struct c2 s = {.r = out};
    struct xml_callbacks cb = {.start = c2_start, .end = c2_end, .ud = &s};
    char err[160];
    int rc = xml_parse(doc, o->out_len - (size_t)(doc - o->out), &cb, err, sizeof err);
    out->structured = true;
    struct strbuf note = {0};
    if (rc != 0 && s.in_case)
        sb_printf(&note, "the XML report cannot be read past %s: test \"%s\" has no "
                  "result and any after it are missing (the run was cut short, or a test "
                  "printed markup to stdout)", err, s.name ? s.name : "");
    else if (rc != 0 && !s.complete)
        sb_printf(&note, "the XML report cannot be read past %s: any test after that "
                  "point is missing", err);
    else if (rc == 0 && out->n_cases == 0 && o->plan->test)
        sb_printf(&note, "no test case is named \"%s\" (Catch2 matches whole names, "
                  "case-insensitively)", o->plan->test);
    if (note.len)
        snprintf(out->note, sizeof out->note, "%s", note.buf);
    sb_free(&note);
    bool oom = s.oom;
    c2_free(&s);
    return oom ? -1 : 0;
}

const struct test_adapter test_adapter_catch2 = {
    .name = "catch2",
    .display = "Catch2",
    .language = "cpp",
    .build_system = "cmake",
    .program = NULL,
    .provides = NULL,
    .detect = catch2_detect,
    .command = catch2_command,
    .live_open = catch2_live_open,
    .live_line = catch2_live_line,
    .live_close = catch2_live_close,
    .parse = catch2_parse,
    .suggest = tsuggest_native,
    .no_tests_hint = "Catch2 runs the TEST_CASEs compiled into a test binary: build one "
                     "(one file with #define CATCH_CONFIG_MAIN, the others with your "
                     "TEST_CASEs) and pass its path as `command`.",
};
