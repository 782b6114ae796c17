/*
 * repl.c - the REPL's loop: its command line (-batch, -x, -ex, --args), the daemon
 * connection, reading commands (libedit with history and completion on a terminal,
 * plain lines otherwise and from -x scripts) and dispatching them through the
 * command table (repl_cmds.h). The state they share is repl_state.h's; waits and
 * stop reports are in repl_wait.c. See repl.h.
 */
#include "cli/repl/repl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <editline/readline.h>

#include "base/paths.h"
#include "base/version.h"
#include "cli/repl/repl_cmds.h"
#include "cli/repl/repl_complete.h"
#include "cli/repl/repl_intr.h"
#include "cli/repl/repl_state.h"

/* Most lines kept in $STROBE_HOME/repl_history. */
#define HISTORY_MAX 1000

static const char usage_line[] =
    "usage: strobectl repl [-batch] [-x FILE]... [-ex CMD]... [--args] [PROGRAM [ARGS...]]";

/* ---- history -------------------------------------------------------------------- */

/* $STROBE_HOME/repl_history into path, or -1 (no history then). */
static int history_path(char *path, size_t len)
{
    char home[4096];
    if (strobe_home(home, sizeof home, NULL) != 0)
        return -1;
    return snprintf(path, len, "%s/repl_history", home) < (int)len ? 0 : -1;
}

/* Reads the history file, one command a line; a symlink is refused (O_NOFOLLOW). */
static void history_load(void)
{
    char path[4200];
    if (history_path(path, sizeof path) != 0)
        return;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            add_history(line);
    }
    free(line);
    fclose(f);
}

/* Writes the history (0600, never through a symlink). */
static void history_save(void)
{
    char path[4200];
    if (history_path(path, sizeof path) != 0)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    fchmod(fd, 0600);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return;
    }
    for (int i = 0; i < history_length; i++) {
        HIST_ENTRY *h = history_get(history_base + i);
        if (h && h->line)
            fprintf(f, "%s\n", h->line);
    }
    fclose(f);
}

/* ---- dispatch ------------------------------------------------------------------- */

static char *repeat_line; /* the last command that an empty line repeats */

/* Runs one command line; 0, or 1 when it failed (the error is printed). */
static int execute(struct repl *r, const char *line)
{
    const char *word;
    size_t wlen;
    const char *args = repl_cmd_split(line, &word, &wlen);
    if (wlen == 0 || word[0] == '#')
        return 0;
    bool ambiguous;
    const struct repl_cmd *c = repl_cmd_find(word, wlen, &ambiguous);
    if (!c)
        return repl_fail(ambiguous ? "Ambiguous command \"%.*s\": type \"help\" for the "
                                     "commands."
                                   : "Undefined command: \"%.*s\".  Try \"help\".",
                         (int)wlen, word);
    free(repeat_line);
    repeat_line = c->repeats ? strdup(line) : NULL;
    /* p/x, x/4xw: the /FMT stays with the arguments; trailing blanks (a completion's
     * space) do not */
    char *trimmed = strdup(args);
    size_t n = strlen(trimmed);
    while (n && (trimmed[n - 1] == ' ' || trimmed[n - 1] == '\t'))
        trimmed[--n] = '\0';
    int status = c->run(r, trimmed);
    free(trimmed);
    fflush(stdout);
    return status;
}

/* Runs the commands of a script; stops at quit. The last command's status. */
static int run_script(struct repl *r, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return repl_fail("%s: %s.", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int status = 0;
    while (!r->quit && getline(&line, &cap, f) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line + strspn(line, " \t");
        if (*p && *p != '#')
            status = execute(r, p);
    }
    free(line);
    fclose(f);
    return status;
}

/* One line from the user: libedit on a terminal, else stdin. NULL at the end.
 * Ctrl-C at the prompt gives "\x03": the line is abandoned. */
static char *read_command(struct repl *r)
{
    if (!r->tty) {
        char *line = NULL;
        size_t cap = 0;
        if (getline(&line, &cap, stdin) < 0) {
            free(line);
            return NULL;
        }
        line[strcspn(line, "\r\n")] = '\0';
        return line;
    }
    char *line = readline("(strobe) ");
    if (repl_intr_at_prompt()) {
        free(line);
        return strdup("\x03");
    }
    return line;
}

static void interactive(struct repl *r)
{
    char *line;
    while (!r->quit && (line = read_command(r))) {
        if (strcmp(line, "\x03") == 0) {
            free(line);
            continue;
        }
        const char *p = line + strspn(line, " \t");
        if (!*p) {
            if (r->tty && repeat_line) {
                char *again = strdup(repeat_line);
                execute(r, again);
                free(again);
            }
        } else {
            if (r->tty)
                add_history(p);
            execute(r, p);
        }
        free(line);
    }
    if (!r->quit && r->tty)
        puts("quit");
}

/* Parses the command line into r (program, arguments, -batch) and the -x/-ex list
 * (scripts[k], a command when is_cmd[k]). 0, or 64 after the usage error. */
static int parse_args(int argc, char **argv, struct repl *r, const char **scripts,
                      bool *is_cmd, int *n_scripts)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-batch") == 0 || strcmp(a, "--batch") == 0) {
            r->batch = true;
        } else if ((strcmp(a, "-x") == 0 || strcmp(a, "-ex") == 0) && i + 1 < argc) {
            is_cmd[*n_scripts] = a[1] == 'e';
            scripts[(*n_scripts)++] = argv[++i];
        } else if (strcmp(a, "--args") == 0) {
            i++;
            break;
        } else if (a[0] == '-') {
            fprintf(stderr, "strobectl repl: unknown option '%s'\n%s\n", a, usage_line);
            return 64;
        } else {
            break;
        }
    }
    if (i < argc) {
        char path[8300];
        snprintf(path, sizeof path, "%s%s%s", argv[i][0] == '/' ? "" : r->cwd,
                 argv[i][0] == '/' ? "" : "/", argv[i]);
        r->program = strdup(path);
        r->prog_args = cJSON_CreateArray();
        for (i++; i < argc; i++)
            cJSON_AddItemToArray(r->prog_args, cJSON_CreateString(argv[i]));
    }
    return 0;
}

/* Connects and runs the scripts, then the commands of the user. The exit status. */
static int session_main(struct repl *r, const char **scripts, const bool *is_cmd,
                        int n_scripts)
{
    char err[1024];
    int fd = client_connect(true, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "strobe: %s\n", err);
        return 2;
    }
    rpc_init(&r->rpc, fd);
    if (rpc_handshake(&r->rpc, "strobe-repl", err, sizeof err) != 0) {
        fprintf(stderr, "strobe: %s\n", err);
        rpc_close(&r->rpc);
        return 2;
    }
    r->tty = !r->batch && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    repl_intr_start(r);
    if (r->tty) {
        /* Ctrl-C is the REPL's (repl_intr.c), libedit only reads through it */
        rl_catch_signals = 0;
        rl_getc_function = repl_intr_getc;
        stifle_history(HISTORY_MAX);
        history_load();
        repl_complete_init(r);
        printf("Strobe %s REPL: gdb's commands over the strobe daemon. \"help\" lists "
               "them.\n", STROBE_VERSION);
        if (r->program)
            printf("Program: %s\n", r->program);
    }
    int status = 0;
    for (int k = 0; k < n_scripts && !r->quit; k++)
        status = is_cmd[k] ? execute(r, scripts[k]) : run_script(r, scripts[k]);
    if (!r->batch)
        interactive(r);
    if (r->tty)
        history_save();
    repl_end_session(r, false);
    repl_intr_stop();
    repl_complete_reset();
    rpc_close(&r->rpc);
    return r->batch ? status : 0;
}

int repl_main(int argc, char **argv)
{
    struct repl r = {0};
    if (!getcwd(r.cwd, sizeof r.cwd))
        return repl_fail("strobe: cannot get the current directory: %s", strerror(errno));
    const char **scripts = calloc((size_t)argc + 1, sizeof *scripts);
    bool *is_cmd = calloc((size_t)argc + 1, sizeof *is_cmd);
    int n_scripts = 0;
    int status = parse_args(argc, argv, &r, scripts, is_cmd, &n_scripts);
    if (status == 0) {
        r.history = cJSON_CreateArray();
        r.displays = cJSON_CreateArray();
        status = session_main(&r, scripts, is_cmd, n_scripts);
    }
    repl_set_stop(&r, NULL);
    repl_forget_watches(&r);
    free(r.program);
    cJSON_Delete(r.prog_args);
    cJSON_Delete(r.history);
    cJSON_Delete(r.displays);
    free(r.sid);
    free(r.output_after);
    free(repeat_line);
    free(scripts);
    free(is_cmd);
    return status;
}
