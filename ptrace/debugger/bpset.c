/*
 * bpset.c - user breakpoints and logpoints (bpset.h): resolution to addresses,
 * arming in the breakpoint table, and what a hit does.
 */
#include "ptrace/debugger/bpset.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/cond.h"
#include "base/event.h"
#include "base/strbuf.h"
#include "dwarf/dwarf.h"
#include "dwarf/frame.h"
#include "dwarf/lines.h"
#include "ptrace/vars/framevars.h"
#include "ptrace/proc/ifunc.h"
#include "ptrace/proc/match.h"
#include "ptrace/proc/procmem.h"

#define MAX_LOCATIONS 1024   /* addresses one breakpoint binds to */
#define MSG_MAX_EXPRS 16     /* {expression}s in a logpoint message */

struct bp_loc {
    uint64_t addr;                    /* runtime */
    char *module;                     /* the ELF file, for frame lookups */
    uint64_t bias;
    struct collector_bp_location desc;
};

/* A logpoint message: literal text with {expression}s. */
struct msg_part {
    char *text;                       /* literal, or the expression */
    bool expr;
};

struct bp_resolved {
    struct collector_breakpoint req;  /* strings owned below */
    char *function, *file, *condition_text, *message;
    struct cond *cond;
    struct msg_part *parts;
    int n_parts;
    struct bp_loc *locs;
    size_t n_locs;
    int line;                         /* the line bound */
    char note[512];
};

struct ubp {
    struct bp_resolved *r;
    int64_t hits, condition_errors;
    int64_t traps;                    /* every arrival, the condition true or not */
    int64_t acted;                    /* pauses and messages: hit_limit counts these */
    int64_t set_ns;
    int64_t work_ns;                  /* time in hit() for its traps */
    char last_error[256];
};

struct bpset {
    struct bpset_config cfg;
    char *project_root;
    pthread_mutex_t lock;             /* bps and counters, for bpset_list */
    struct ubp *bps[BREAKPOINTS_MAX + LOGPOINTS_MAX];
    int n;
};

struct bpset *bpset_new(const struct bpset_config *cfg)
{
    struct bpset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->project_root = cfg->project_root ? strdup(cfg->project_root) : NULL;
    s->cfg.project_root = s->project_root;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void locs_free(struct bp_loc *locs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(locs[i].module);
    free(locs);
}

void bpset_resolved_free(struct bp_resolved *r)
{
    if (!r)
        return;
    free(r->function);
    free(r->file);
    free(r->condition_text);
    free(r->message);
    cond_free(r->cond);
    for (int i = 0; i < r->n_parts; i++)
        free(r->parts[i].text);
    free(r->parts);
    locs_free(r->locs, r->n_locs);
    free(r);
}

void bpset_free(struct bpset *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        bpset_resolved_free(s->bps[i]->r);
        free(s->bps[i]);
    }
    pthread_mutex_destroy(&s->lock);
    free(s->project_root);
    free(s);
}

/* ---- messages ---- */

static int add_part(struct bp_resolved *r, const char *text, size_t len, bool expr)
{
    struct msg_part *p = realloc(r->parts, (size_t)(r->n_parts + 1) * sizeof *p);
    if (!p)
        return -1;
    r->parts = p;
    char *t = strndup(text, len);
    if (!t)
        return -1;
    r->parts[r->n_parts++] = (struct msg_part){t, expr};
    return 0;
}

/* "x={x} done" -> "x=", {x}, " done"; "{{" and "}}" are braces. */
static int parse_message(struct bp_resolved *r, const char *m, struct strobe_error *e)
{
    struct strbuf lit = {0};
    int n_exprs = 0;
    for (size_t i = 0; m[i];) {
        if ((m[i] == '{' && m[i + 1] == '{') || (m[i] == '}' && m[i + 1] == '}')) {
            sb_append(&lit, &m[i], 1);
            i += 2;
            continue;
        }
        if (m[i] == '}') {
            sb_free(&lit);
            return err_set(e, ERR_BAD_EXPRESSION, "message column %zu: '}' without '{' (write "
                           "'}}' for a brace).", i + 1);
        }
        if (m[i] != '{') {
            sb_append(&lit, &m[i], 1);
            i++;
            continue;
        }
        const char *close = strchr(m + i, '}');
        if (!close) {
            sb_free(&lit);
            return err_set(e, ERR_BAD_EXPRESSION, "message column %zu: '{' without '}' (write "
                           "'{{' for a brace).", i + 1);
        }
        char expr[MEMORY_EXPR_MAX + 1];
        size_t len = (size_t)(close - (m + i + 1));
        struct varres_expr x;
        struct strobe_error pe = {0};
        snprintf(expr, sizeof expr, "%.*s", (int)len, m + i + 1);
        if (len == 0 || len > MEMORY_EXPR_MAX || varres_parse(expr, &x, &pe) != 0) {
            sb_free(&lit);
            return err_set(e, ERR_BAD_EXPRESSION, "message column %zu: {%s}: %s", i + 1, expr,
                           len == 0 ? "an empty expression" : pe.msg);
        }
        if (++n_exprs > MSG_MAX_EXPRS) {
            sb_free(&lit);
            return err_set(e, ERR_LIMIT_EXCEEDED, "a message has at most %d {expressions}.",
                           MSG_MAX_EXPRS);
        }
        if ((lit.len && add_part(r, lit.buf, lit.len, false) != 0) ||
            add_part(r, expr, len, true) != 0) {
            sb_free(&lit);
            return err_set(e, ERR_INTERNAL, "out of memory");
        }
        lit.len = 0;
        i += len + 2;
    }
    int rc = lit.len && add_part(r, lit.buf, lit.len, false) != 0 ? -1 : 0;
    sb_free(&lit);
    return rc ? err_set(e, ERR_INTERNAL, "out of memory") : 0;
}

/* ---- locations ---- */

static int add_loc(struct bp_resolved *r, const struct module *m, uint64_t link_addr,
                   const char *function, bool inlined)
{
    uint64_t addr = link_addr + m->bias;
    for (size_t i = 0; i < r->n_locs; i++)
        if (r->locs[i].addr == addr)
            return 0;
    if (r->n_locs == MAX_LOCATIONS)
        return 1;
    struct bp_loc *l = realloc(r->locs, (r->n_locs + 1) * sizeof *l);
    if (!l)
        return -1;
    r->locs = l;
    l = &r->locs[r->n_locs];
    *l = (struct bp_loc){.addr = addr, .bias = m->bias, .module = strdup(m->path)};
    if (!l->module)
        return -1;
    r->n_locs++;
    l->desc.address = addr;
    l->desc.inlined = inlined;
    struct dw_site site[4];
    size_t n = dw_frame_sites(m->path, link_addr, site, 4);
    snprintf(l->desc.function, sizeof l->desc.function, "%s",
             function ? function : n && site[0].function ? site[0].function : "?");
    if (n && site[0].file) {
        snprintf(l->desc.file, sizeof l->desc.file, "%s", site[0].file);
        l->desc.line = site[0].line;
    }
    dw_sites_free(site, n);
    return 0;
}

static bool exe_path(pid_t pid, char *out, size_t cap)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, out, cap - 1);
    if (n <= 0)
        return false;
    out[n] = '\0';
    return true;
}

static int resolve_function(struct bpset *s, struct bp_resolved *r, const struct module *mods,
                            size_t n_mods, const char *exe, pid_t pid, struct strobe_error *e)
{
    int memfd = procmem_open(pid); /* for the variants IFUNCs run (ifunc.h) */
    bool wild = r->function[0] == '@' || strchr(r->function, '*');
    size_t matched = 0;
    bool capped = false;
    for (size_t i = 0; i < n_mods; i++) {
        const struct module *m = &mods[i];
        bool is_exe = strcmp(m->path, exe) == 0;
        if (!m->has_code || (wild && !is_exe && procmem_system_path(m->path)))
            continue;
        const struct dw_index *ix = dw_index_get(m->path, NULL);
        for (size_t k = 0; ix && k < ix->n_functions; k++) {
            const struct dw_function *f = &ix->functions[k];
            uint64_t impl = 0;
            if (!match_function(r->function, f, s->project_root) ||
                (f->ifunc_slot && !ifunc_impl(ix, f, m->bias, m->start, m->end, memfd, &impl)))
                continue;
            matched++;
            uint64_t at = impl ? impl - m->bias
                        : f->has_dwarf ? dw_after_prologue(m->path, f->entry) : f->entry;
            int rc = add_loc(r, m, at, f->name, false);
            if (rc < 0) {
                close(memfd);
                return err_set(e, ERR_INTERNAL, "out of memory");
            }
            capped |= rc > 0;
        }
    }
    if (memfd >= 0)
        close(memfd);
    if (!matched)
        return err_set(e, ERR_FUNCTION_NOT_FOUND, "No function of the program matches '%s'%s.",
                       r->function, wild ? " (patterns with wildcards search the program and "
                       "its own libraries, not system ones)" : "");
    if (capped)
        snprintf(r->note, sizeof r->note, "'%s' matches %zu functions: bound to the first %d.",
                 r->function, matched, MAX_LOCATIONS);
    return 0;
}

static int resolve_line(struct bp_resolved *r, const struct module *mods, size_t n_mods,
                        const char *exe, struct strobe_error *e)
{
    char no_file[512] = "", no_code[512] = "", moved[512] = "";
    for (size_t i = 0; i < n_mods; i++) {
        const struct module *m = &mods[i];
        const struct dw_index *ix = m->has_code ? dw_index_get(m->path, NULL) : NULL;
        if (!ix || !ix->has_dwarf)
            continue;
        struct dw_line_result lr;
        if (dw_line_resolve(m->path, r->file, r->req.line, &lr) != 0)
            continue;
        if (lr.status == DWL_OK || lr.status == DWL_MOVED) {
            for (size_t k = 0; k < lr.n_locs; k++)
                if (add_loc(r, m, lr.locs[k].addr, lr.locs[k].function, lr.locs[k].inlined) < 0) {
                    dw_line_result_free(&lr);
                    return err_set(e, ERR_INTERNAL, "out of memory");
                }
            r->line = lr.line;
            if (lr.status == DWL_MOVED)
                snprintf(moved, sizeof moved, "%s", lr.message);
        } else if (lr.status == DWL_NO_CODE) {
            snprintf(no_code, sizeof no_code, "%s", lr.message);
        } else if (strcmp(m->path, exe) == 0 || !no_file[0]) {
            snprintf(no_file, sizeof no_file, "%s", lr.message);
        }
        dw_line_result_free(&lr);
    }
    if (r->n_locs) {
        snprintf(r->note, sizeof r->note, "%s", moved);
        return 0;
    }
    if (no_code[0])
        return err_set(e, ERR_LINE_NOT_FOUND, "%s", no_code);
    return err_set(e, ERR_FILE_NOT_FOUND, "%s", no_file[0] ? no_file :
                   "The program has no debug info with line tables: rebuild it with -g.");
}

/* Whether every name the condition and message use exists in the frame of some
 * location, or as a global. */
static int check_names(struct bp_resolved *r, pid_t pid, struct strobe_error *e)
{
    const char *names[COND_MAX_TEXT / 2];
    size_t n = 0;
    const char *const *paths = NULL;
    size_t np = r->cond ? cond_paths(r->cond, &paths) : 0;
    for (size_t i = 0; i < np && n < sizeof names / sizeof *names; i++)
        names[n++] = paths[i];
    for (int i = 0; i < r->n_parts && n < sizeof names / sizeof *names; i++)
        if (r->parts[i].expr)
            names[n++] = r->parts[i].text;
    int memfd = procmem_open(pid);
    struct varres_process globals;
    varres_process_open(&globals, pid, memfd);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct varres_expr x;
        if (varres_parse(names[i], &x, NULL) != 0 || x.root[0] == '$')
            continue;
        char scope[256] = "";
        bool found = false;
        for (size_t k = 0; k < r->n_locs && !found; k++) {
            struct dw_var_where w;
            struct dw_regs none = {0};
            struct strobe_error why;
            const struct bp_loc *l = &r->locs[k];
            int f = dw_frame_var_find(l->module, l->addr - l->bias, l->bias, &none,
                                      procmem_read_ctx, &memfd, x.root, &w, &why);
            found = f != 1;
            /* a member of the method's object, which C++ names without this-> */
            struct dw_var_where self = {0}; /* its type, even when its value needs registers */
            found = found || (dw_frame_var_find(l->module, l->addr - l->bias, l->bias, &none,
                                                procmem_read_ctx, &memfd, "this", &self,
                                                NULL) != 1 &&
                              self.type && self.type->kind == DWT_POINTER &&
                              varres_has_member(self.type->target, x.root));
            if (!found && !scope[0])
                snprintf(scope, sizeof scope, "%.255s", why.msg);
        }
        struct varres v;
        struct strobe_error ge = {0};
        if (!found && varres_resolve_in(&globals, x.root, &v, &ge) != 0 &&
            ge.code == ERR_VARIABLE_NOT_FOUND)
            rc = err_set(e, ERR_VARIABLE_NOT_FOUND, "'%s' is neither a variable of the frame%s "
                         "there (%s) nor a global (%s)", x.root, r->n_locs > 1 ? "s" : "",
                         scope[0] ? scope : "no variables in scope", ge.msg);
    }
    varres_process_close(&globals);
    if (memfd >= 0)
        close(memfd);
    return rc;
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

static struct bp_resolved *resolve(struct bpset *s, pid_t pid,
                                   const struct collector_breakpoint *req, struct strobe_error *e)
{
    struct bp_resolved *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    r->req = *req;
    r->function = dup_opt(req->function);
    r->file = dup_opt(req->file);
    r->condition_text = dup_opt(req->condition);
    r->message = dup_opt(req->message);
    r->req.function = r->function;
    r->req.file = r->file;
    r->req.condition = r->condition_text;
    r->req.message = r->message;
    r->line = req->line;
    struct strobe_error ce = {0};
    if (req->condition && !(r->cond = cond_parse(req->condition, &ce))) {
        err_set(e, ERR_BAD_EXPRESSION, "condition %s", ce.msg);
        goto fail;
    }
    if (req->message && parse_message(r, req->message, e) != 0)
        goto fail;
    struct module *mods = NULL;
    size_t n_mods = 0;
    char exe[PATH_MAX] = "";
    if (!exe_path(pid, exe, sizeof exe) || procmem_modules(pid, &mods, &n_mods) != 0) {
        err_set(e, ERR_PROCESS_EXITED, "The program (pid %d) has exited.", (int)pid);
        goto fail;
    }
    int rc = r->function ? resolve_function(s, r, mods, n_mods, exe, pid, e)
                         : resolve_line(r, mods, n_mods, exe, e);
    free(mods);
    if (rc != 0 || check_names(r, pid, e) != 0)
        goto fail;
    return r;
fail:
    bpset_resolved_free(r);
    return NULL;
}

struct bp_resolved *bpset_resolve(struct bpset *s, pid_t pid,
                                  const struct collector_breakpoint *req, struct strobe_error *e)
{
    int n_bp, n_lp;
    bpset_counts(s, &n_bp, &n_lp);
    if (req->message && n_lp >= LOGPOINTS_MAX) {
        err_set(e, ERR_LIMIT_EXCEEDED, "The session has %d logpoints, the most it may have.",
                LOGPOINTS_MAX);
        return NULL;
    }
    if (!req->message && n_bp >= BREAKPOINTS_MAX) {
        err_set(e, ERR_LIMIT_EXCEEDED, "The session has %d breakpoints, the most it may have.",
                BREAKPOINTS_MAX);
        return NULL;
    }
    return resolve(s, pid, req, e);
}

/* ---- arming ---- */

static void describe(const struct ubp *b, struct collector_bp_info *info)
{
    const struct bp_resolved *r = b->r;
    collector_bp_info_init(info, &r->req);
    info->line = r->line;
    info->n_locations = r->n_locs;
    info->hits = b->hits;
    info->condition_errors = b->condition_errors;
    info->traps = b->traps;
    info->set_ns = b->set_ns;
    info->work_ns = b->work_ns;
    snprintf(info->note, sizeof info->note, "%s", r->note);
    snprintf(info->last_condition_error, sizeof info->last_condition_error, "%s",
             b->last_error);
    for (size_t i = 0; i < r->n_locs && i < BP_SHOWN_LOCATIONS; i++)
        info->locations[i] = r->locs[i].desc;
}

/* Inserts r's int3s; the addresses that refuse one (the program's own int3 there)
 * are dropped. */
static void insert_all(struct tracer *t, struct bp_resolved *r)
{
    struct bptab *bp = tracer_bptab(t);
    size_t kept = 0;
    for (size_t i = 0; i < r->n_locs; i++) {
        if (bptab_insert(bp, r->locs[i].addr, BP_USER_BREAKPOINT))
            r->locs[kept++] = r->locs[i];
        else
            free(r->locs[i].module);
    }
    r->n_locs = kept;
}

static void remove_all(struct tracer *t, struct bp_resolved *r)
{
    struct bptab *bp = tracer_bptab(t);
    for (size_t i = 0; i < r->n_locs; i++)
        bptab_remove(bp, r->locs[i].addr, BP_USER_BREAKPOINT);
}

int bpset_arm(struct bpset *s, struct tracer *t, struct bp_resolved *r,
              struct collector_bp_info *info, struct strobe_error *e)
{
    struct ubp *b = calloc(1, sizeof *b);
    if (!b) {
        bpset_resolved_free(r);
        return err_set(e, ERR_INTERNAL, "out of memory");
    }
    b->r = r;
    b->set_ns = mono_ns();
    insert_all(t, r);
    if (r->n_locs == 0) {
        free(b);
        bpset_resolved_free(r);
        return err_set(e, ERR_INTERNAL, "None of the breakpoint's addresses could take an "
                       "int3 (the program has its own there).");
    }
    pthread_mutex_lock(&s->lock);
    s->bps[s->n++] = b;
    describe(b, info);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int index_of(const struct bpset *s, int id)
{
    for (int i = 0; i < s->n; i++)
        if (s->bps[i]->r->req.id == id)
            return i;
    return -1;
}

int bpset_disarm(struct bpset *s, struct tracer *t, int id, struct strobe_error *e)
{
    pthread_mutex_lock(&s->lock);
    int i = index_of(s, id);
    struct ubp *b = i >= 0 ? s->bps[i] : NULL;
    if (b)
        s->bps[i] = s->bps[--s->n];
    pthread_mutex_unlock(&s->lock);
    if (!b)
        return err_set(e, ERR_BREAKPOINT_NOT_FOUND, "There is no breakpoint %d.", id);
    if (t)
        remove_all(t, b->r);
    bpset_resolved_free(b->r);
    free(b);
    return 0;
}

void bpset_forget_addresses(struct bpset *s)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++) {
        struct bp_resolved *r = s->bps[i]->r;
        locs_free(r->locs, r->n_locs);
        r->locs = NULL;
        r->n_locs = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

void bpset_rebind(struct bpset *s, struct tracer *t)
{
    /* The tracer thread is the set's one writer: its members stay while it reads
     * DWARF unlocked; the lock covers each swap of addresses. */
    pid_t pid = tracer_pid(t);
    for (int i = 0; i < s->n; i++) {
        struct bp_resolved *r = s->bps[i]->r;
        struct strobe_error e = {0};
        struct bp_resolved *fresh = resolve(s, pid, &r->req, &e);
        pthread_mutex_lock(&s->lock);
        if (fresh) {
            r->locs = fresh->locs;
            r->n_locs = fresh->n_locs;
            fresh->locs = NULL;
            fresh->n_locs = 0;
            r->line = fresh->line;
            snprintf(r->note, sizeof r->note, "%s", fresh->note);
            insert_all(t, r);
        } else {
            snprintf(r->note, sizeof r->note, "bound nowhere in the program the process "
                     "exec'd: %.400s", e.msg);
        }
        pthread_mutex_unlock(&s->lock);
        bpset_resolved_free(fresh);
    }
}

int bpset_list(struct bpset *s, struct collector_bp_info *out, int max)
{
    pthread_mutex_lock(&s->lock);
    int n = s->n;
    /* By id: the set keeps no order. */
    int done = 0, last = 0;
    while (done < n && done < max) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            int id = s->bps[i]->r->req.id;
            if (id > last && (best < 0 || id < s->bps[best]->r->req.id))
                best = i;
        }
        if (best < 0)
            break;
        describe(s->bps[best], &out[done++]);
        last = s->bps[best]->r->req.id;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

void bpset_counts(struct bpset *s, int *breakpoints, int *logpoints)
{
    pthread_mutex_lock(&s->lock);
    *breakpoints = *logpoints = 0;
    for (int i = 0; i < s->n; i++)
        ++*(s->bps[i]->r->message ? logpoints : breakpoints);
    pthread_mutex_unlock(&s->lock);
}

/* ---- hits ---- */

static const struct bp_loc *loc_at(const struct bp_resolved *r, uint64_t addr)
{
    for (size_t i = 0; i < r->n_locs; i++)
        if (r->locs[i].addr == addr)
            return &r->locs[i];
    return NULL;
}

/* The message of logpoint b at l; its last one (limit: it reached its hitLimit and
 * goes) says so, so that the timeline tells why the messages stop. */
static void push_logpoint(struct bpset *s, pid_t tid, pid_t tgid, const struct ubp *b,
                          const struct bp_loc *l, struct varres_process *p, bool limit)
{
    struct strbuf text = {0};
    for (int i = 0; i < b->r->n_parts; i++) {
        const struct msg_part *part = &b->r->parts[i];
        if (part->expr)
            framevars_render(p, part->text, &text);
        else
            sb_append(&text, part->text, strlen(part->text));
    }
    if (limit)
        sb_printf(&text, " [logpoint %d reached its hitLimit of %lld and was removed]",
                  b->r->req.id, (long long)b->r->req.hit_limit);
    char data[768];
    struct strbuf esc = {0};
    sb_json_string(&esc, l->desc.file);
    struct strbuf fn = {0};
    sb_json_string(&fn, l->desc.function);
    snprintf(data, sizeof data, "{\"breakpointId\":%d,\"file\":%s,\"line\":%d,\"function\":%s}",
             b->r->req.id, esc.buf ? esc.buf : "\"\"", l->desc.line,
             fn.buf ? fn.buf : "\"\"");
    sb_free(&esc);
    sb_free(&fn);
    struct event ev = event_sink_init(&s->cfg.sink, EV_LOGPOINT, mono_ns());
    ev.pid = tgid;
    ev.tid = tid;
    ev.text = text.buf ? text.buf : "";
    ev.data = data;
    ev.function = l->desc.function;
    ev.source_file = l->desc.file[0] ? l->desc.file : NULL;
    ev.line = l->desc.line;
    event_sink_push(&s->cfg.sink, &ev);
    sb_free(&text);
}

/* Whether b's condition holds in the frame (an evaluation error counts as true, as
 * gdb stops on it, and is kept for the agent). */
static bool condition_holds(struct ubp *b, struct varres_process *p)
{
    if (!b->r->cond)
        return true;
    bool result = false;
    struct strobe_error ce = {0};
    if (cond_eval(b->r->cond, framevars_cond_resolve, p, &result, &ce) == 0)
        return result;
    b->condition_errors++;
    snprintf(b->last_error, sizeof b->last_error, "%.*s", (int)sizeof b->last_error - 1,
             ce.msg); /* as much as the collector interface carries */
    return true;
}

struct one_shots {
    struct bpset *s;
    struct tracer *t;
    const int *ids;
    int n;
};

static void disarm_held(void *arg)
{
    struct one_shots *os = arg;
    for (int i = 0; i < os->n; i++)
        bpset_disarm(os->s, os->t, os->ids[i], NULL);
}

/* The n one-shot breakpoints ids that fired go, with the image's other threads held. */
static void disarm_one_shots(struct bpset *s, struct tracer *t, pid_t tid, const int *ids,
                             int n)
{
    struct one_shots os = {s, t, ids, n};
    if (n)
        tracer_with_space_held(t, tid, disarm_held, &os);
}

/* Every breakpoint at regs->rip, hit by tid: conditions, counts, logpoint messages;
 * the one-shots that fired into done (n_done of them). Returns the id of the
 * breakpoint that pauses tid (the lowest), 0 for none; *all_stop when one of those
 * pausing asks for it. */
static int hit(struct bpset *s, pid_t tgid, pid_t tid, const struct user_regs_struct *regs,
               bool *all_stop, int *done, int *n_done)
{
    int memfd = -1;
    struct frame_ctx f;
    struct varres_process p;
    bool opened = false;
    int pause_id = 0;
    *n_done = 0;
    *all_stop = false;
    int64_t t0 = mono_ns();
    struct ubp *trapped[BREAKPOINTS_MAX + LOGPOINTS_MAX];
    int n_trapped = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++) {
        struct ubp *b = s->bps[i];
        const struct bp_loc *l = loc_at(b->r, regs->rip);
        if (!l)
            continue;
        trapped[n_trapped++] = b;
        if (!opened) {
            struct module m = {.start = 0, .end = UINT64_MAX, .bias = l->bias,
                               .has_code = true};
            snprintf(m.path, sizeof m.path, "%s", l->module);
            framevars_frame0(&f, tid, tgid, regs, &m, 1);
            memfd = procmem_open(tgid);
            framevars_open(&p, &f, memfd);
            opened = true;
        }
        b->traps++;
        if (!condition_holds(b, &p))
            continue;
        b->hits++;
        if (b->r->req.hit_count > 1 && b->hits < b->r->req.hit_count)
            continue;
        b->acted++;
        bool limit = b->r->req.hit_limit && b->acted >= b->r->req.hit_limit;
        if (b->r->message)
            push_logpoint(s, tid, tgid, b, l, &p, limit);
        else if (!pause_id || b->r->req.id < pause_id)
            pause_id = b->r->req.id;
        if (!b->r->message)
            *all_stop |= b->r->req.all_stop;
        if (b->r->req.one_shot || limit)
            done[(*n_done)++] = b->r->req.id;
    }
    /* The work of this trap, shared by the breakpoints at the address. */
    int64_t work = mono_ns() - t0;
    for (int i = 0; i < n_trapped; i++)
        trapped[i]->work_ns += work / n_trapped;
    pthread_mutex_unlock(&s->lock);
    if (opened) {
        varres_process_close(&p);
        if (memfd >= 0)
            close(memfd);
    }
    return pause_id;
}

enum bp_verdict bpset_on_trap(struct tracer *t, pid_t tid, struct tracer_stop *st, void *arg)
{
    struct bpset *s = arg;
    if (!(st->owners & BP_OWNER_BIT(BP_USER_BREAKPOINT)))
        return BP_PASS;
    struct user_regs_struct regs = *st->regs;
    regs.rip = st->addr;
    bool all_stop;
    int done[BREAKPOINTS_MAX + LOGPOINTS_MAX], n_done;
    int pause_id = hit(s, tracer_tgid(t, tid), tid, &regs, &all_stop, done, &n_done);
    if (pause_id) {
        ptrace(PTRACE_SETREGS, tid, 0, &regs);
        s->cfg.pause(s->cfg.arg, t, tid, tracer_tgid(t, tid), pause_id, &regs, all_stop);
    }
    /* One-shots go after the pause is known: a waiter never finds the breakpoint gone
     * and its pause not there yet. */
    disarm_one_shots(s, t, tid, done, n_done);
    return pause_id ? BP_PARK : BP_PASS;
}

int bpset_step_landed(struct bpset *s, struct tracer *t, pid_t tid,
                      const struct user_regs_struct *regs)
{
    if (!(bptab_lookup(tracer_bptab(t), regs->rip) & BP_OWNER_BIT(BP_USER_BREAKPOINT)))
        return 0;
    bool all_stop;
    int done[BREAKPOINTS_MAX + LOGPOINTS_MAX], n_done;
    int pause_id = hit(s, tracer_tgid(t, tid), tid, regs, &all_stop, done, &n_done);
    disarm_one_shots(s, t, tid, done, n_done);
    return pause_id;
}
