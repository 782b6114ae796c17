/*
 * strobe.c - the strobe command: `strobe daemon`, `strobe mcp`, `strobe install`,
 * `strobe --version`.
 * It is the only place where core/ meets mcp/ and ptrace/: the daemon is handed the
 * MCP connection handler and the engine the native collector, so the engine
 * depends on neither the protocol nor ptrace.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/version.h"
#include "cli/install/install.h"
#include "cli/proxy/mcp_proxy.h"
#include "cli/repl/repl.h"
#include "core/collector.h"
#include "core/daemon.h"
#include "core/daemon_start.h"
#include "core/output_keeper.h"
#include "mcp/server.h"
#include "mcp/tools.h"
#include "ptrace/native.h"
#include "python/python.h"
#include "testrun/testrun.h"

static int usage(FILE *f, int status)
{
    fprintf(f,
            "usage: strobe daemon [--idle-timeout SECONDS] [--ready-fd FD]\n"
            "       strobe mcp\n"
            "       strobe install [--agent NAME]... [--dry-run] [--uninstall]\n"
            "       strobe                (alone, on a terminal: the gdb-style REPL)\n"
            "       strobe --version\n"
            "\n"
            "  daemon  run the per-user daemon in the foreground (normally started for you)\n"
            "  mcp     MCP server on stdin/stdout; starts the daemon when needed\n"
            "  install register strobe with your coding agents (strobe install --help)\n"
            "\n"
            "State lives in $STROBE_HOME (default ~/.strobe). See strobe(1).\n");
    return status;
}

int main(int argc, char **argv)
{
    /* `strobe` alone on a terminal is the gdb-style REPL (strobe-repl(1)) */
    if (argc < 2 && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return repl_main(argc, argv);
    if (argc < 2)
        return usage(stderr, 64);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("strobe %s\n", STROBE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return usage(stdout, 0);
    if (strcmp(cmd, "mcp") == 0 && argc == 2)
        return proxy_main();
    if (strcmp(cmd, "install") == 0)
        return install_main(argc - 1, argv + 1);
    if (strcmp(cmd, "output-keeper") == 0) /* started by the daemon: output_keeper.h */
        return output_keeper_main(argc - 1, argv + 1);
    if (strcmp(cmd, "daemon") == 0) {
        int idle = daemon_default_idle_timeout();
        for (int i = 2; i < argc; i++) {
            bool ready = strcmp(argv[i], "--ready-fd") == 0;
            const char *v = NULL;
            if ((ready || strcmp(argv[i], "--idle-timeout") == 0) && i + 1 < argc)
                v = argv[++i];
            else if (strncmp(argv[i], "--idle-timeout=", 15) == 0)
                v = argv[i] + 15;
            char *end;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || n < (ready ? 0 : 1) || n > (ready ? INT_MAX : 86400 * 365)) {
                fprintf(stderr, "strobe: daemon: bad argument '%s'\n", argv[i]);
                return usage(stderr, 64);
            }
            if (ready)
                daemon_start_attach((int)n); /* before anything can fail */
            else
                idle = (int)n;
        }
        const char *broken = tools_catalog_error();
        if (broken) {
            daemon_start_failed("broken build: mcp/tools.json: %s", broken);
            return 70;
        }
        if (collector_register(&python_collector) != 0 ||
            collector_register(&native_collector) != 0) {
            daemon_start_failed("cannot register the native collector");
            return 70;
        }
        static const struct daemon_protocol mcp = {.serve = mcp_serve, .refuse = mcp_refuse};
        static const struct daemon_service *const services[] = {&testrun_service};
        return daemon_run(idle, &mcp, services, 1);
    }
    fprintf(stderr, "strobe: unknown command '%s'\n", cmd);
    return usage(stderr, 64);
}
