/*
 * repl_complete.c - TAB completion in the REPL (libedit's readline interface): the
 * command names as the first word, `info`'s subcommands, session ids (debug_session
 * list) after `session`, function names, source files and FILE:LINE of the
 * functions' declarations (the program's own DWARF index, as gdb reads symbols
 * itself) after break, tbreak, list, until and advance, the arguments and locals of
 * the last stop after print, set var, watch and x, and file names after file.
 */
#include "cli/repl/repl_complete.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <editline/readline.h>

#include "cli/json_view.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_fmt.h"
#include "cli/repl/repl_state.h"
#include "dwarf/dwarf.h"

static struct repl *g_repl;
static char **g_cands; /* the candidates of the current completion */
static size_t g_n, g_cap, g_next;

static void add(const char *s)
{
    for (size_t i = 0; i < g_n; i++)
        if (strcmp(g_cands[i], s) == 0)
            return;
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 64;
        g_cands = realloc(g_cands, g_cap * sizeof *g_cands);
    }
    g_cands[g_n++] = strdup(s);
}

static void clear(void)
{
    for (size_t i = 0; i < g_n; i++)
        free(g_cands[i]);
    g_n = 0;
    g_next = 0;
}

void repl_complete_reset(void)
{
    clear();
    free(g_cands);
    g_cands = NULL;
    g_cap = 0;
}

/* The candidates that start with text, one per call (readline's generator). */
static char *generator(const char *text, int state)
{
    if (state == 0)
        g_next = 0;
    size_t len = strlen(text);
    while (g_next < g_n) {
        const char *c = g_cands[g_next++];
        if (strncmp(c, text, len) == 0)
            return strdup(c);
    }
    return NULL;
}

/* Functions, files and FILE:LINE of declarations from the program's DWARF. */
static void add_locations(const char *text)
{
    const struct dw_index *ix =
        g_repl->program ? dw_index_get(g_repl->program, NULL) : NULL;
    bool lines = strchr(text, ':') != NULL;
    for (size_t i = 0; ix && i < ix->n_functions; i++) {
        const struct dw_function *f = &ix->functions[i];
        if (!f->has_dwarf || !f->decl_file)
            continue;
        if (!lines) {
            add(f->name);
            add(repl_base_name(f->decl_file));
        } else if (f->decl_line > 0) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s:%d", repl_base_name(f->decl_file), f->decl_line);
            add(buf);
        }
    }
}

static void add_variables(void)
{
    static const char *const keys[] = {"arguments", "locals"};
    for (int k = 0; k < 2; k++) {
        const cJSON *v;
        cJSON_ArrayForEach(v, json_get(g_repl->stop, keys[k]))
            if (json_str(v, "name"))
                add(json_str(v, "name"));
    }
}

static void add_sessions(void)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", "list");
    char err[256];
    cJSON *ans = repl_tool_quiet(g_repl, "debug_session", args, err, sizeof err);
    const cJSON *s;
    cJSON_ArrayForEach(s, json_get(ans, "sessions"))
        if (json_str(s, "sessionId"))
            add(json_str(s, "sessionId"));
    cJSON_Delete(ans);
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    clear();
    rl_completion_append_character = ' ';
    const char *line = rl_line_buffer;
    const char *word;
    size_t wlen;
    repl_cmd_split(line, &word, &wlen);
    if (start <= (int)(word - line)) {
        for (const struct repl_cmd *c = repl_cmds; c->name; c++)
            add(c->name);
    } else {
        bool amb;
        const struct repl_cmd *c = repl_cmd_find(word, wlen, &amb);
        const char *n = c ? c->name : "";
        if (strcmp(n, "info") == 0) {
            for (int i = 0; repl_info_subcmds[i]; i++)
                add(repl_info_subcmds[i]);
        } else if (strcmp(n, "session") == 0) {
            add_sessions();
        } else if (!strcmp(n, "break") || !strcmp(n, "tbreak") || !strcmp(n, "list") ||
                   !strcmp(n, "until") || !strcmp(n, "advance")) {
            add_locations(text);
            rl_completion_append_character = '\0'; /* a file name goes on with :LINE */
        } else if (!strcmp(n, "print") || !strcmp(n, "set") || !strcmp(n, "watch") ||
                   !strcmp(n, "x") || !strcmp(n, "rwatch") || !strcmp(n, "awatch")) {
            add_variables();
        } else if (!strcmp(n, "file")) {
            return NULL; /* readline completes file names */
        } else if (!strcmp(n, "output")) {
            add("stdout");
            add("stderr");
        } else if (!strcmp(n, "trace")) {
            add("add");
            add("remove");
        }
    }
    rl_attempted_completion_over = 1;
    return rl_completion_matches(text, generator);
}

void repl_complete_init(struct repl *r)
{
    g_repl = r;
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{(";
}
