/*
 * callsite.c - call sites of traced calls, cached per process. See callsite.h.
 *
 * The cache maps a return address to its rendered members (or to a "none" marker,
 * so an address without line info is looked up once too). The process's modules
 * are read from /proc/PID/maps when the first address is resolved, and again when
 * an address lies in none of them (a library loaded since).
 */
#include "ptrace/proc/callsite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/u64map.h"
#include "dwarf/frame.h"
#include "ptrace/proc/symbolize.h"

struct callsites {
    struct u64map by_ret; /* return address -> char * (members), or &none */
    struct modules ms;
    bool ms_read;
};

static char none;

/* s as the inside of a JSON string. */
static void json_escaped(struct strbuf *sb, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            sb_printf(sb, "\\%c", c);
        else if (c < 0x20)
            sb_printf(sb, "\\u%04x", c);
        else
            sb_printf(sb, "%c", c);
    }
}

static const struct module *module_for(struct callsites *cs, pid_t tgid, uint64_t pc)
{
    const struct module *m = cs->ms_read ? symbolize_module_of(&cs->ms, pc) : NULL;
    if (m)
        return m;
    free(cs->ms.m);
    cs->ms = (struct modules){0};
    cs->ms_read = procmem_modules(tgid, &cs->ms.m, &cs->ms.n) == 0;
    return cs->ms_read ? symbolize_module_of(&cs->ms, pc) : NULL;
}

static char *resolve(struct callsites *cs, pid_t tgid, uint64_t ret)
{
    const struct module *m = module_for(cs, tgid, ret - 1);
    struct dw_site site;
    if (!m || dw_frame_sites(m->path, ret - 1 - m->bias, &site, 1) == 0)
        return &none;
    char *out = &none;
    if (site.file && site.line > 0) {
        struct strbuf sb = {0};
        sb_puts(&sb, "\"callSite\":\"");
        json_escaped(&sb, site.file);
        sb_printf(&sb, ":%d\"", site.line);
        if (site.function) {
            sb_puts(&sb, ",\"caller\":\"");
            json_escaped(&sb, site.function);
            sb_puts(&sb, "\"");
        }
        if (!sb.oom)
            out = sb_take(&sb);
        sb_free(&sb);
    }
    dw_sites_free(&site, 1);
    return out;
}

const char *callsite_members(struct callsites **cs, pid_t tgid, uint64_t ret)
{
    if (!ret)
        return NULL;
    if (!*cs && !(*cs = calloc(1, sizeof **cs)))
        return NULL;
    char *text = u64map_get(&(*cs)->by_ret, ret);
    if (!text) {
        text = resolve(*cs, tgid, ret);
        if (u64map_put(&(*cs)->by_ret, ret, text) != 0) {
            if (text != &none)
                free(text);
            return NULL;
        }
    }
    return text == &none ? NULL : text;
}

static void free_text(uint64_t key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    if (value != &none)
        free(value);
}

void callsite_free_all(struct callsites *cs)
{
    if (!cs)
        return;
    u64map_each(&cs->by_ret, free_text, NULL);
    u64map_free(&cs->by_ret);
    free(cs->ms.m);
    free(cs);
}
