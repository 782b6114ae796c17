/*
 * install.c - the driver of `strobe install`: options, which agents to configure
 * (detected or named), and for each of their files: read it safely, compute the one
 * edit its format calls for, then write it, or print it with --dry-run.
 */
#include "cli/install/install.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "cli/install/install_agents.h"
#include "cli/install/install_block.h"
#include "cli/install/install_file.h"
#include "cli/install/install_json.h"

#define NEW_JSON "{}\n" /* what jsonc_remove leaves of a file jsonc_set created */

struct options {
    bool dry_run, uninstall;
    bool chosen[16]; /* by index in install_agents */
    bool any_chosen;
    const char *home;
    char exe[PATH_MAX];
};

static int usage(FILE *f, int status)
{
    fprintf(f,
            "usage: strobe install [--agent NAME]... [--dry-run] [--uninstall] [--home DIR]\n"
            "\n"
            "Registers `strobe mcp` as an MCP server with your coding agents and gives them\n"
            "the strobe instructions. Without --agent: every agent found (its configuration\n"
            "directory exists or its program is on PATH).\n"
            "\n"
            "  --agent NAME  claude, codex, gemini, cursor, opencode, vscode, or all;\n"
            "                repeatable; configures it even when it was not found\n"
            "  --dry-run     print each file and the text that would change; change nothing\n"
            "  --uninstall   remove what install added\n"
            "  --home DIR    use DIR instead of $HOME\n"
            "\n"
            "Files are edited in place (comments and other settings kept), backed up first\n"
            "to FILE.strobe-backup. See strobe(1), INSTALL.\n");
    return status;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, 0);
        if (!strcmp(a, "--dry-run")) {
            o->dry_run = true;
            continue;
        }
        if (!strcmp(a, "--uninstall")) {
            o->uninstall = true;
            continue;
        }
        bool agent = !strcmp(a, "--agent") || !strncmp(a, "--agent=", 8);
        bool home = !strcmp(a, "--home") || !strncmp(a, "--home=", 7);
        if (!agent && !home) {
            fprintf(stderr, "strobe install: unknown option '%s'\n", a);
            return usage(stderr, 64);
        }
        const char *eq = strchr(a, '=');
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        if (!v || !*v) {
            fprintf(stderr, "strobe install: %s needs a value\n", a);
            return usage(stderr, 64);
        }
        if (home) {
            o->home = v;
            continue;
        }
        bool known = false;
        for (size_t k = 0; k < install_agent_count; k++)
            if (!strcmp(v, "all") || !strcmp(v, install_agents[k].name))
                known = o->chosen[k] = true;
        if (!known) {
            fprintf(stderr, "strobe install: unknown agent '%s'; the agents are claude, codex, "
                    "gemini, cursor, opencode, vscode (or all)\n", v);
            return 64;
        }
        o->any_chosen = true;
    }
    return -1;
}

static void base_dir(const struct options *o, enum path_base base, char *out, size_t n)
{
    const char *env = base == BASE_CONFIG ? getenv("XDG_CONFIG_HOME")
                      : base == BASE_CODEX ? getenv("CODEX_HOME") : NULL;
    if (env && env[0] == '/')
        snprintf(out, n, "%s", env);
    else if (base == BASE_HOME)
        snprintf(out, n, "%s", o->home);
    else
        snprintf(out, n, "%s/%s", o->home, base == BASE_CONFIG ? ".config" : ".codex");
}

static void path_of(const struct options *o, enum path_base base, const char *rel, char *out,
                    size_t n)
{
    char dir[PATH_MAX];
    base_dir(o, base, dir, sizeof dir);
    int len = !strcmp(rel, ".") ? snprintf(out, n, "%s", dir)
                                 : snprintf(out, n, "%s/%s", dir, rel);
    if (len < 0 || (size_t)len >= n)
        out[0] = '\0'; /* too long a path: opening "" fails with a clear error */
}

static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *copy = strdup(path), *save = NULL;
    bool found = false;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", *dir ? dir : ".", prog);
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
}

static bool detected(const struct options *o, const struct agent *a)
{
    for (int i = 0; i < 2 && a->detect_rel[i]; i++) {
        char p[PATH_MAX];
        struct stat st;
        path_of(o, a->detect_base, a->detect_rel[i], p, sizeof p);
        if (lstat(p, &st) == 0)
            return true;
    }
    return on_path(a->binary);
}

/* Prints the lines the splice changes, as a unified diff's hunk; after is NULL when
 * the file is to be deleted. */
static void print_diff(const char *path, const struct cfg_file *f, const char *after,
                       size_t after_len, const struct splice *sp)
{
    size_t ls = sp->at, le = sp->at + sp->del;
    while (ls > 0 && f->text[ls - 1] != '\n')
        ls--;
    while (le < f->len && f->text[le] != '\n')
        le++;
    if (le < f->len)
        le++;
    size_t ne = le - sp->del + strlen(sp->ins);
    int line = 1;
    for (size_t i = 0; i < ls; i++)
        line += f->text[i] == '\n';
    printf("--- %s\n+++ %s\n@@ line %d @@\n", f->exists ? path : "/dev/null",
           after ? path : "/dev/null", line);
    for (int side = 0; side < 2; side++) {
        const char *t = side ? after : f->text;
        size_t b = ls, e = side ? ne : le;
        if (!t)
            continue;
        if (side && e > after_len)
            e = after_len;
        while (b < e) {
            const char *nl = memchr(t + b, '\n', e - b);
            size_t end = nl ? (size_t)(nl - t) : e;
            printf("%c%.*s\n", side ? '+' : '-', (int)(end - b), t + b);
            b = end + 1;
        }
    }
}

/* Computes the edit of one target for install or uninstall. */
static enum edit_result edit_for(const struct options *o, const struct target *t,
                                 const struct cfg_file *f, struct splice *sp, char *err,
                                 size_t errlen)
{
    const char *begin, *end;
    char *want = target_text(t, o->exe);
    enum edit_result r = EDIT_NONE;
    *sp = (struct splice){0};
    switch (t->kind) {
    case TARGET_JSON:
        r = o->uninstall ? jsonc_remove(f->text, f->len, t->parent, "strobe", sp, err, errlen)
                         : jsonc_set(f->text, f->len, t->parent, "strobe", want, sp, err,
                                     errlen);
        break;
    case TARGET_TOML:
    case TARGET_BLOCK:
        target_markers(t, &begin, &end);
        if (o->uninstall) {
            r = block_remove(f->text, f->len, begin, end, sp, err, errlen);
            break;
        }
        r = block_set(f->text, f->len, begin, end, want, sp, err, errlen);
        if (r == EDIT_CHANGE && t->kind == TARGET_TOML) {
            /* a table of the same name outside the block would make the file invalid */
            struct splice out;
            size_t n;
            char *rest = f->text;
            bool cut = block_remove(f->text, f->len, begin, end, &out, err, errlen) ==
                       EDIT_CHANGE;
            if (cut)
                rest = splice_apply(f->text, f->len, &out, &n);
            int line = block_find_line(f->text, f->len, "[mcp_servers.strobe]");
            if (line && block_find_line(rest, cut ? n : f->len, "[mcp_servers.strobe]")) {
                snprintf(err, errlen, "line %d: a [mcp_servers.strobe] table that strobe "
                         "install did not write is there already; delete it and run strobe "
                         "install again", line);
                splice_free(sp);
                r = EDIT_ERROR;
            }
            if (cut)
                free(rest);
            splice_free(&out);
        }
        break;
    case TARGET_FILE:
        if (o->uninstall) {
            bool ours = f->exists && !strcmp(f->text, want);
            if (f->exists && !ours)
                snprintf(err, errlen, "changed since strobe install wrote it; left in place");
            r = ours ? EDIT_CHANGE : EDIT_NONE;
            if (ours)
                *sp = (struct splice){.at = 0, .del = f->len, .ins = strdup("")};
        } else if (!f->exists || strcmp(f->text, want)) {
            *sp = (struct splice){.at = 0, .del = f->len, .ins = strdup(want)};
            r = EDIT_CHANGE;
        }
        break;
    }
    free(want);
    return r;
}

/* Configures (or unconfigures) one file. Returns false on an error, reported. */
static bool do_target(const struct options *o, const struct agent *a, const struct target *t)
{
    char path[PATH_MAX], err[512] = "";
    struct cfg_file f;
    struct splice sp;
    path_of(o, t->base, t->rel, path, sizeof path);
    if (cfg_read(path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "strobe install: %s: %s\n", a->name, err);
        return false;
    }
    enum edit_result r = edit_for(o, t, &f, &sp, err, sizeof err);
    bool ok = r != EDIT_ERROR;
    if (r == EDIT_ERROR) {
        fprintf(stderr, "strobe install: %s: %s: %s; the file was left untouched: correct it "
                "and run strobe install again\n", a->name, path, err);
    } else if (r == EDIT_NONE) {
        if (o->uninstall)
            printf("%s: %s: %s\n", a->name, path, err[0] ? err : "not configured");
        else
            printf("%s: %s: already configured\n", a->name, path);
    } else {
        size_t n;
        char *after = splice_apply(f.text, f.len, &sp, &n);
        /* a file install created goes when it holds nothing else */
        bool created = !cfg_has_backup(path);
        bool drop = o->uninstall && created &&
                    (t->kind == TARGET_JSON ? !strcmp(after, NEW_JSON) : n == 0);
        mode_t um = umask(0);
        umask(um);
        mode_t mode = f.exists ? f.mode : (t->kind == TARGET_JSON || t->kind == TARGET_TOML
                                           ? 0600 : 0644) & ~um;
        if (o->dry_run) {
            struct splice whole = {.at = 0, .del = f.len, .ins = (char *)""};
            print_diff(path, &f, drop ? NULL : after, n, drop ? &whole : &sp);
        } else if (drop ? cfg_unlink(path, err, sizeof err) != 0
                        : cfg_write(path, &f, after, n, mode, err, sizeof err) != 0) {
            fprintf(stderr, "strobe install: %s: %s\n", a->name, err);
            ok = false;
        }
        if (ok && !o->dry_run) {
            if (drop && t->own_dir) {
                char *slash = strrchr(path, '/');
                *slash = '\0';
                rmdir(path); /* only when empty: nothing of the user's goes */
                *slash = '/';
            }
            printf("%s: %s: %s\n", a->name, path,
                   drop ? "removed (strobe install had created it)"
                   : o->uninstall ? "strobe removed"
                   : !f.exists ? "created"
                   : sp.del ? "strobe updated (the original is in .strobe-backup)"
                   : "strobe added (the original is in .strobe-backup)");
        }
        free(after);
        splice_free(&sp);
    }
    cfg_free(&f);
    return ok;
}

static int exe_path(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0 || (size_t)len >= n - 1) {
        fprintf(stderr, "strobe install: cannot find the path of the strobe executable "
                "(/proc/self/exe); is /proc mounted?\n");
        return -1;
    }
    out[len] = '\0';
    if (strstr(out, " (deleted)")) {
        fprintf(stderr, "strobe install: this strobe executable was deleted; run the "
                "installed one\n");
        return -1;
    }
    return 0;
}

int install_main(int argc, char **argv)
{
    struct options o = {0};
    int st = parse(argc, argv, &o);
    if (st >= 0)
        return st;
    if (!o.home)
        o.home = getenv("HOME");
    if (!o.home || o.home[0] != '/') {
        fprintf(stderr, "strobe install: HOME is not an absolute path; give --home DIR\n");
        return 64;
    }
    if (exe_path(o.exe, sizeof o.exe) != 0)
        return 1;
    int status = 0;
    struct strbuf missing = {0};
    for (size_t k = 0; k < install_agent_count; k++) {
        const struct agent *a = &install_agents[k];
        if (o.any_chosen ? !o.chosen[k] : !detected(&o, a)) {
            if (!o.any_chosen)
                sb_printf(&missing, "%s%s", missing.len ? ", " : "", a->name);
            continue;
        }
        for (int i = 0; i < AGENT_TARGETS && a->targets[i].rel; i++)
            if (!do_target(&o, a, &a->targets[i]))
                status = 1;
        if (a->note && !o.uninstall)
            printf("%s: %s\n", a->name, a->note);
    }
    if (missing.len)
        printf("not found: %s (use --agent NAME to configure one anyway)\n", missing.buf);
    sb_free(&missing);
    return status;
}
