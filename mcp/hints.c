/*
 * hints.c - the mapping from (tool, error code) to the next step. See hints.h.
 *
 * One table, read top to bottom: the first row whose code matches and whose tool
 * is the failing tool (or NULL: any tool) gives the hint. A code with no row gets
 * none: validation errors are written by mcp/ itself and already name the field.
 */
#include "mcp/hints.h"

#include <stdio.h>
#include <string.h>

static const struct hint {
    enum err_code code;
    const char *tool;        /* NULL: any tool */
    const char *text;
} hints[] = {
    {ERR_COMMAND_NOT_FOUND, "debug_test",
     "Install the package the message names, or pass the command that runs the tests "
     "(command: \"path/to/test_binary\") with framework set."},
    {ERR_STORE_FULL, NULL,
     "Free space on the disk the message names (or point STROBE_HOME at another disk "
     "and restart the daemon), then retry: the daemon notices the room by itself."},
    {ERR_TEST_RUN_NOT_FOUND, NULL,
     "Use the testRunId that debug_test({action: \"run\"}) returned; runs are forgotten "
     "when the daemon restarts: start the run again."},
    {ERR_COMMAND_NOT_FOUND, NULL,
     "Pass the path of the executable: absolute, relative to cwd (else projectRoot), "
     "or a name in PATH; build the program first if it does not exist yet."},
    {ERR_COMMAND_NOT_EXECUTABLE, NULL,
     "Point command at the built program (chmod +x it if it is a script with a #! "
     "line)."},
    {ERR_SESSION_EXISTS, NULL,
     "Stop it first with debug_session({action: \"stop\", sessionId: \"<its id>\"}), "
     "or keep querying it."},
    {ERR_SESSION_NOT_FOUND, NULL,
     "Check the sessionId spelling, or list sessions with debug_session({action: "
     "\"list\"})."},
    {ERR_PROCESS_EXITED, "debug_trace",
     "Its events stay queryable with debug_query."},
    {ERR_PROCESS_EXITED, "debug_session",
     "Its events stay queryable with debug_query (eventType \"crash\", \"stdout\", "
     "\"stderr\"); debug_launch the program again to see its threads live."},
    {ERR_PROCESS_EXITED, "debug_memory",
     "Its memory is gone with it; its output and events (watch_hit included) stay "
     "queryable with debug_query. debug_launch the program again to read or watch it "
     "live."},
    {ERR_VARIABLE_NOT_FOUND, "debug_memory",
     "Check the spelling (near names are suggested) or qualify it: \"ns::name\", "
     "\"function::staticVar\". A function's locals are read in a paused thread (threadId, "
     "frame); while it runs they show in debug_session({action: \"stacks\", sessionId, "
     "locals: true})."},
    {ERR_VARIABLE_UNAVAILABLE, "debug_memory",
     "Read a variable that holds the same value, read it raw by the address the message "
     "gives, or rebuild with -O0 -g so it keeps its storage."},
    {ERR_BAD_EXPRESSION, "debug_memory",
     "Write it as C: a.b for a member, p->b through a pointer, a[3] for an element, *p "
     "for what p points to; the message names the members there are. In Python code: "
     "names, obj.attr, d[\"k\"], xs[3] and operators, without calls (a call could change "
     "the program)."},
    {ERR_MEMORY_UNREADABLE, "debug_memory",
     "Read the pointer itself (without -> or *) to see where it points, or use an address "
     "inside a mapped region."},
    {ERR_MEMORY_UNWRITABLE, "debug_memory",
     "Write to a variable or a mapped address of the program; read it first to check the "
     "address."},
    {ERR_VALUE_OUT_OF_RANGE, "debug_memory",
     "Give a value the type can hold (the message names its range or accepted values); "
     "integers beyond 2^53 go as strings."},
    {ERR_LIMIT_EXCEEDED, "debug_memory",
     "Split the targets over several calls of at most 16; a session runs at most 4 polls "
     "at once (each ends after its durationMs)."},
    /* Data watchpoints (debug_memory watch / unwatch). */
    {ERR_WATCH_SLOTS_FULL, NULL,
     "Remove one with debug_memory({action: \"unwatch\", sessionId, watchId: <id>}) "
     "(watchId \"*\" removes them all), then watch again."},
    {ERR_WATCH_TOO_LARGE, NULL,
     "Watch one field (variable: \"cfg.field\") or an address with size 1, 2, 4 or 8: "
     "debug_memory({action: \"watch\", sessionId, address: \"0x...\", size: 4})."},
    {ERR_WATCH_FAILED, NULL,
     "Watch another address (a global, static or heap object of the program), or read "
     "the value with debug_memory({action: \"read\"}) instead."},
    {ERR_WATCH_UNSUPPORTED, NULL,
     "Find the writer with a logpoint on the functions that may write it: "
     "debug_breakpoint({sessionId, add: [{function: \"set_*\", message: "
     "\"v={cfg.retries}\"}]}); or sample it: debug_memory({sessionId, targets: "
     "[{variable: \"cfg.retries\"}], poll: {intervalMs: 50, durationMs: 2000}})."},
    {ERR_VARIABLE_NOT_FOUND, "debug_trace",
     "Check the spelling (near names are suggested) or qualify it: \"ns::name\", "
     "\"function::staticVar\". Watches read globals and statics; a traced function's "
     "arguments are already in its function_enter events."},
    {ERR_BAD_EXPRESSION, "debug_trace",
     "Write the watch's variable as C: a.b for a member, p->b through a pointer, a[3] for "
     "an element, *p for what p points to."},
    /* Breakpoints, pauses and steps. */
    {ERR_LIMIT_EXCEEDED, "debug_breakpoint",
     "Remove breakpoints you no longer need with debug_breakpoint({sessionId, remove: [ids]}) "
     "(list them with debug_breakpoint({sessionId})); a condition can replace several "
     "breakpoints on one line."},
    {ERR_NOT_PAUSED, NULL,
     "To wait for a breakpoint, call debug_continue({sessionId, action: \"until\"}) (with "
     "condition {breakpoint: id} for one of them); to stop the program now, action "
     "\"pause\"; set breakpoints with debug_breakpoint."},
    {ERR_THREAD_NOT_PAUSED, "debug_memory",
     "A frame's variables are read while its thread is paused: leave threadId out to read "
     "the thread that stopped at the breakpoint or step, or stop the program with "
     "debug_continue({sessionId, action: \"pause\"})."},
    {ERR_THREAD_NOT_PAUSED, NULL,
     "Step one of the paused threads (threadId), or leave threadId out to step the one that "
     "stopped at the breakpoint or step; debug_session({action: \"status\"}) lists them."},
    {ERR_BREAKPOINT_NOT_FOUND, NULL,
     "List the breakpoints with debug_breakpoint({sessionId}) to see their ids."},
    {ERR_FILE_NOT_FOUND, NULL,
     "Use a file the program was built from, or one of its .py files (the message lists "
     "near ones; a base name or a path suffix is enough); a native program needs line "
     "tables (-g)."},
    {ERR_LINE_NOT_FOUND, NULL,
     "Pick a line inside a function body (the message gives the last line with code)."},
    {ERR_FUNCTION_NOT_FOUND, NULL,
     "Check the name (C++: ns::Class::method; wildcards: parse_*); debug_trace with the "
     "same pattern shows what it matches."},
    {ERR_BAD_EXPRESSION, "debug_breakpoint",
     "Write the condition as C: n > 3 && p->name == \"bob\" (== != < <= > >= && || !, "
     "a.b, p->b, a[3], *p); in a message, each {expression} is one such operand. In "
     "Python code, Python without calls: price > 3 and cart.items[0] == 10."},
    {ERR_VARIABLE_NOT_FOUND, "debug_breakpoint",
     "Name an argument or local of the function the breakpoint is in (the message lists "
     "those in scope), or a global."},
    {ERR_BAD_EXPRESSION, "debug_continue",
     "Write the memory condition as C over globals: g_count >= 100 && g_state == 2."},
    {ERR_PROCESS_EXITED, "debug_continue",
     "Its output and events stay queryable with debug_query; debug_launch it again (stage "
     "breakpoints first with debug_breakpoint without sessionId) to stop it early."},
    {ERR_PROCESS_EXITED, "debug_breakpoint",
     "Stage the breakpoint without sessionId, then debug_launch the program again: it binds "
     "before main runs."},
    {ERR_NO_DEBUG_SYMBOLS, NULL,
     "Ask user permission to modify build configuration to compile with debug symbols "
     "(e.g., add `-g` flag or use debug build profile)."},
};

const char *hint_for(const char *tool, enum err_code code)
{
    for (size_t i = 0; i < sizeof hints / sizeof *hints; i++)
        if (hints[i].code == code &&
            (!hints[i].tool || (tool && strcmp(hints[i].tool, tool) == 0)))
            return hints[i].text;
    return NULL;
}

void hints_apply(const char *tool, struct strobe_error *e)
{
    const char *hint = hint_for(tool, e->code);
    if (!hint)
        return;
    size_t len = strlen(e->msg);
    if (len + 1 < sizeof e->msg)
        snprintf(e->msg + len, sizeof e->msg - len, "%s%s", len ? " " : "", hint);
}

const char *hint_trace_status(const struct trace_result *r)
{
    if (r->n_patterns == 0 || r->matched == 0)
        return NULL;
    return "Calls appear in debug_query (eventType \"function_enter\"/\"function_exit\", "
           "or function: {contains: ...}).";
}

const char *hint_trace_exited(int64_t run_ms)
{
    if (run_ms < 0 || run_ms >= 1000)
        return "A long-running program takes patterns while it runs: debug_launch it, then "
               "debug_trace({sessionId, add: [...]}) once its output shows where to look.";
    return "It ran for under a second, too short to add patterns while it runs: stage them "
           "first (debug_trace({add: [...]}) without sessionId), then debug_launch it: they "
           "are armed before its main runs.";
}

void hint_trace_pending(int n, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d pattern(s) staged: the next debug_launch, and every later one "
             "until they are removed (debug_trace({remove: [...]}) without sessionId), arms "
             "them before the program's main runs. Staging suits a program that ends "
             "quickly or calls made at startup; a long-running program is better launched "
             "clean, its output read first, and patterns added while it runs (debug_trace "
             "with its sessionId).", n);
}
