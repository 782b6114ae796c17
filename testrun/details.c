/*
 * details.c - the details file of a test run. See details.h.
 */
#include "testrun/details.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/linesplit.h"
#include "base/paths.h"

static const char *status_name(enum test_status st)
{
    return st == TEST_PASSED ? "passed" : st == TEST_FAILED ? "failed" : "skipped";
}

/* s (n bytes, any bytes) as a JSON string of valid UTF-8. */
static void json_bytes(struct strbuf *sb, const char *s, size_t n)
{
    char *clean = malloc(4 * n + 1);
    if (!clean) {
        sb->oom = true;
        return;
    }
    clean[utf8_sanitize(s ? s : "", s ? n : 0, clean)] = '\0';
    sb_json_string(sb, clean);
    free(clean);
}

static void json_opt(struct strbuf *sb, const char *key, const char *v)
{
    sb_printf(sb, ",\"%s\":", key);
    if (v)
        json_bytes(sb, v, strlen(v));
    else
        sb_puts(sb, "null");
}

static void write_cases(struct strbuf *sb, const struct test_report *rep)
{
    sb_puts(sb, ",\"tests\":[");
    for (size_t i = 0; i < rep->n_cases; i++) {
        const struct test_case *c = &rep->cases[i];
        sb_puts(sb, i ? ",{\"name\":" : "{\"name\":");
        json_bytes(sb, c->name, strlen(c->name));
        sb_printf(sb, ",\"status\":\"%s\",\"durationMs\":%lld",
                  c->stuck ? "stuck" : status_name(c->status),
                  (long long)c->duration_ms);
        json_opt(sb, "file", c->file);
        sb_printf(sb, ",\"line\":%d", c->line);
        json_opt(sb, "message", c->message);
        json_opt(sb, "output", c->output);
        sb_puts(sb, "}");
    }
    sb_puts(sb, "],\"buildErrors\":[");
    for (size_t i = 0; i < rep->n_diags; i++) {
        const struct test_diagnostic *dg = &rep->diags[i];
        sb_puts(sb, i ? ",{" : "{");
        sb_puts(sb, "\"file\":");
        json_bytes(sb, dg->file ? dg->file : "", dg->file ? strlen(dg->file) : 0);
        sb_printf(sb, ",\"line\":%d,\"column\":%d", dg->line, dg->column);
        json_opt(sb, "message", dg->message);
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]");
}

static void write_stuck(struct strbuf *sb, const struct testrun_stuck *st)
{
    sb_puts(sb, ",\"stuck\":[");
    if (st) {
        sb_puts(sb, "{\"name\":");
        json_bytes(sb, st->name ? st->name : "", st->name ? strlen(st->name) : 0);
        sb_printf(sb, ",\"elapsedMs\":%lld,\"diagnosis\":", (long long)st->elapsed_ms);
        json_bytes(sb, st->diagnosis, strlen(st->diagnosis));
        sb_puts(sb, ",\"threads\":[");
        for (size_t i = 0; i < st->stacks.n_threads; i++) {
            const struct collector_thread *th = &st->stacks.threads[i];
            sb_printf(sb, "%s{\"pid\":%d,\"tid\":%d,\"name\":", i ? "," : "", (int)th->pid,
                      (int)th->tid);
            json_bytes(sb, th->name, strlen(th->name));
            sb_printf(sb, ",\"state\":\"%s\",\"stack\":[", th->state);
            for (size_t f = 0; f < th->n_frames; f++) {
                const struct collector_frame *fr = &th->frames[f];
                char line[1024];
                const char *fn = fr->function ? fr->function : "??";
                if (fr->file)
                    snprintf(line, sizeof line, "%s (%s:%d)", fn, fr->file, fr->line);
                else
                    snprintf(line, sizeof line, "%s", fn);
                sb_puts(sb, f ? "," : "");
                json_bytes(sb, line, strlen(line));
            }
            sb_puts(sb, "]}");
        }
        sb_puts(sb, "]");
        json_opt(sb, "runtimeDump", st->runtime_dump);
        sb_puts(sb, "}");
    }
    sb_puts(sb, "]");
}

/* Removes the oldest files of dir beyond DETAILS_KEEP - 1 (room for a new one). */
static void prune(const char *dir)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, NULL);
    if (n < 0)
        return;
    struct old {
        char name[256];
        time_t mtime;
    } *files = calloc((size_t)n + 1, sizeof *files);
    int nf = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        size_t len = strlen(name);
        struct stat st;
        char path[PATH_MAX];
        if (files && len > 5 && strcmp(name + len - 5, ".json") == 0 &&
            snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
            lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(files[nf].name, sizeof files[nf].name, "%s", name);
            files[nf++].mtime = st.st_mtime;
        }
        free(ents[i]);
    }
    free(ents);
    while (files && nf >= DETAILS_KEEP) {
        int oldest = 0;
        for (int i = 1; i < nf; i++)
            if (files[i].mtime < files[oldest].mtime)
                oldest = i;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, files[oldest].name) < (int)sizeof path)
            unlink(path);
        files[oldest] = files[--nf];
    }
    free(files);
}

int details_write(const char *tests_dir, const struct details *d, char *path, size_t cap,
                  char *err, size_t errlen)
{
    char dir[PATH_MAX];
    struct strobe_error pe;
    if (tests_dir && tests_dir[0]) {
        snprintf(dir, sizeof dir, "%s", tests_dir);
    } else if (strobe_private_dir(NULL, "tests", dir, sizeof dir, &pe) != 0) {
        snprintf(err, errlen, "%s", pe.msg);
        return -1;
    }
    prune(dir);
    if ((size_t)snprintf(path, cap, "%s/%s.json", dir, d->id) >= cap) {
        snprintf(err, errlen, "the details file's path is too long");
        return -1;
    }
    struct strbuf sb = {0};
    sb_puts(&sb, "{\"testRunId\":");
    sb_json_string(&sb, d->id);
    sb_puts(&sb, ",\"framework\":");
    sb_json_string(&sb, d->framework);
    json_opt(&sb, "command", d->command);
    json_opt(&sb, "projectRoot", d->project_root);
    sb_printf(&sb, ",\"exitCode\":%d,\"timedOut\":%s,\"durationMs\":%lld,\"structured\":%s",
              d->exit_code, d->timed_out ? "true" : "false", (long long)d->duration_ms,
              d->report->structured ? "true" : "false");
    json_opt(&sb, "note", d->report->note[0] ? d->report->note : NULL);
    write_cases(&sb, d->report);
    write_stuck(&sb, d->stuck);
    sb_puts(&sb, ",\"stdout\":");
    json_bytes(&sb, d->out->buf, d->out->len);
    sb_printf(&sb, ",\"stdoutDroppedBytes\":%zu,\"stderr\":", d->out_dropped);
    json_bytes(&sb, d->err->buf, d->err->len);
    sb_printf(&sb, ",\"stderrDroppedBytes\":%zu}\n", d->err_dropped);
    if (sb.oom) {
        sb_free(&sb);
        snprintf(err, errlen, "out of memory writing %s", path);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        sb_free(&sb);
        return -1;
    }
    size_t off = 0;
    while (off < sb.len) {
        ssize_t w = write(fd, sb.buf + off, sb.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd);
    size_t want = sb.len;
    sb_free(&sb);
    if (off != want) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}

void details_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
    rmdir(dir);
}
