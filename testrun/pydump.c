/*
 * pydump.c - a stuck Python test's stacks as Python names them (pydump.h).
 *
 * CPython's faulthandler (the pytest and unittest runs ask for it with
 * PYTHONFAULTHANDLER=1, their adapters' dump_env) prints every thread on the SIGABRT
 * the runner sends before the kill:
 *
 *   Thread 0x00007f3b2d7fe6c0 (most recent call first):
 *     File "/p/ledger.py", line 31 in transfer
 *     File "/usr/lib/python3.11/threading.py", line 975 in run
 *
 *   Current thread 0x00007f3b3a1b3040 (most recent call first):
 *     File "/p/test_ledger.py", line 44 in test_hang_deadlock
 *
 * The hex number is the thread's pthread_t, which on x86-64 glibc is its TLS
 * pointer: the native stacks read it (collector_thread.thread_pointer), so each
 * Python stack goes to its thread, whose state, system call and wait stay.
 */
#include "testrun/pydump.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/collector.h"

#define PY_FRAMES_MAX 64

static const char *const installed[] = {"/site-packages/", "/dist-packages/", "/.venv/",
                                        "/venv/", "/.tox/"};

/* Whether file is the project's own code: under root, not an installed package. */
static bool own_file(const char *file, const char *root)
{
    size_t n = root ? strlen(root) : 0;
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (!n || strncmp(file, root, n) != 0 || file[n] != '/')
        return false;
    for (size_t i = 0; i < sizeof installed / sizeof *installed; i++)
        if (strstr(file + n, installed[i]))
            return false;
    return true;
}

/* Leading blanks of line, or -1 for a blank line or a comment. */
static int indent_of(const char *line)
{
    int n = 0;
    while (line[n] == ' ' || line[n] == '\t')
        n++;
    return line[n] == '\n' || line[n] == '\0' || line[n] == '#' ? -1 : n;
}

/* The word after "def " or "class " (async def too) at the start of s, into out. */
static bool def_name(const char *s, char *out, size_t cap, bool *is_class)
{
    if (strncmp(s, "async ", 6) == 0)
        s += 6;
    *is_class = strncmp(s, "class ", 6) == 0;
    if (!*is_class && strncmp(s, "def ", 4) != 0)
        return false;
    s += *is_class ? 6 : 4;
    size_t n = strcspn(s, "(: \t");
    if (!n || n >= cap)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

/* Python's qualified name of function name running at line of file, from the
 * source: the classes and functions around its def ("Cart.total",
 * "outer.<locals>.inner"); name alone when the source says nothing. faulthandler
 * prints no class, and a trace pattern needs it. */
static void qualname(const char *file, int line, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s", name);
    FILE *f = fopen(file, "re");
    if (!f)
        return;
    char text[512], word[128];
    struct { int indent; char name[128]; bool is_class; } blocks[16];
    int depth = 0, at = 0, def_depth = -1;
    while (at < line && fgets(text, sizeof text, f)) {
        at++;
        int ind = indent_of(text);
        if (ind < 0)
            continue;
        while (depth > 0 && blocks[depth - 1].indent >= ind)
            depth--; /* that block ended before this line */
        bool is_class;
        if (def_name(text + ind, word, sizeof word, &is_class) && depth < 16) {
            blocks[depth].indent = ind;
            blocks[depth].is_class = is_class;
            snprintf(blocks[depth].name, sizeof blocks[depth].name, "%s", word);
            depth++;
        }
    }
    fclose(f);
    for (int i = depth - 1; i >= 0 && def_depth < 0; i--)
        if (!blocks[i].is_class && strcmp(blocks[i].name, name) == 0)
            def_depth = i;
    if (def_depth < 0)
        return;
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i <= def_depth && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s%s", i ? "." : "", blocks[i].name,
                              i < def_depth && !blocks[i].is_class ? ".<locals>" : "");
}

/* "shop.pricing.Cart.total" for /root/shop/pricing.py's total; a file elsewhere
 * gives its module and the function's name ("threading.join"). */
static char *qualified(const char *file, int line, const char *root, const char *name)
{
    const char *rel = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t n = root ? strlen(root) : 0;
    while (n > 1 && root[n - 1] == '/')
        n--;
    char qual[256];
    snprintf(qual, sizeof qual, "%s", name);
    if (own_file(file, root)) {
        rel = file + n + 1;
        qualname(file, line, name, qual, sizeof qual);
    }
    char mod[PATH_MAX];
    snprintf(mod, sizeof mod, "%s", rel);
    size_t len = strlen(mod);
    if (len > 3 && strcmp(mod + len - 3, ".py") == 0)
        mod[len -= 3] = '\0';
    if (len > 9 && strcmp(mod + len - 9, "/__init__") == 0)
        mod[len -= 9] = '\0';
    for (char *p = mod; *p; p++)
        if (*p == '/')
            *p = '.';
    char *out = NULL;
    return asprintf(&out, "%s.%s", mod, qual) < 0 ? NULL : out;
}

/* One frame line ('  File "F", line N in NAME') into f; false when it is not one. */
static bool frame_line(const char *line, size_t len, const char *root,
                       struct collector_frame *f)
{
    char text[PATH_MAX + 256];
    if (len >= sizeof text)
        return false;
    memcpy(text, line, len);
    text[len] = '\0';
    const char *p = strstr(text, "File \"");
    const char *q = p ? strstr(p + 6, "\", line ") : NULL;
    const char *in = q ? strstr(q, " in ") : NULL;
    if (!in)
        return false;
    char *file = strndup(p + 6, (size_t)(q - p - 6));
    *f = (struct collector_frame){.file = file, .line = atoi(q + 8),
                                  .function = file ? qualified(file, atoi(q + 8), root, in + 4)
                                                   : NULL};
    if (f->file && f->function)
        return true;
    free(f->file);
    free(f->function);
    return false;
}

/* The thread whose TLS pointer is tp, or a new one (tid 0: a thread the native
 * stacks did not see) at the end of st; NULL when memory runs out. */
static struct collector_thread *thread_of(struct collector_stacks *st, uint64_t tp)
{
    for (size_t i = 0; i < st->n_threads; i++)
        if (tp && st->threads[i].thread_pointer == tp)
            return &st->threads[i];
    struct collector_thread *more = realloc(st->threads, (st->n_threads + 1) * sizeof *more);
    if (!more)
        return NULL;
    st->threads = more;
    struct collector_thread *th = &st->threads[st->n_threads++];
    *th = (struct collector_thread){.syscall_nr = -1, .own_frame = -1, .thread_pointer = tp};
    snprintf(th->name, sizeof th->name, "0x%llx", (unsigned long long)tp);
    snprintf(th->state, sizeof th->state, "unknown");
    return th;
}

/* The frames read for one thread become its stack. */
static void give(struct collector_stacks *st, uint64_t tp, struct collector_frame *frames,
                 size_t n, size_t omitted, const char *root)
{
    struct collector_thread *th = n ? thread_of(st, tp) : NULL;
    struct collector_frame *copy = th ? malloc(n * sizeof *copy) : NULL;
    if (!copy) {
        for (size_t i = 0; i < n; i++) {
            free(frames[i].function);
            free(frames[i].file);
        }
        return;
    }
    memcpy(copy, frames, n * sizeof *copy);
    collector_frames_free(th->frames, th->n_frames);
    th->frames = copy;
    th->n_frames = n;
    th->omitted_frames = omitted;
    th->own_frame = -1;
    for (size_t i = 0; i < n && th->own_frame < 0; i++)
        if (own_file(copy[i].file, root))
            th->own_frame = (int)i;
}

int pydump_stacks(const char *dump, const char *root, struct collector_stacks *st)
{
    struct collector_frame frames[PY_FRAMES_MAX];
    size_t n = 0, omitted = 0;
    uint64_t tp = 0;
    bool in_thread = false;
    int threads = 0;
    for (const char *line = dump; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *head = NULL;
        if (len > 7 && strncmp(line, "Thread ", 7) == 0)
            head = line + 7;
        else if (len > 15 && strncmp(line, "Current thread ", 15) == 0)
            head = line + 15;
        struct collector_frame f;
        if (head) {
            if (in_thread)
                give(st, tp, frames, n, omitted, root);
            tp = strtoull(head, NULL, 16);
            n = omitted = 0;
            in_thread = true;
            threads++;
        } else if (in_thread && frame_line(line, len, root, &f)) {
            if (n < PY_FRAMES_MAX) {
                frames[n++] = f;
            } else {
                free(f.function);
                free(f.file);
                omitted++;
            }
        } else if (in_thread && len == 0) {
            give(st, tp, frames, n, omitted, root);
            n = omitted = 0;
            in_thread = false;
        }
        line = end ? end + 1 : NULL;
    }
    if (in_thread)
        give(st, tp, frames, n, omitted, root);
    return threads;
}
