/*
 * tools.c - the tool catalog. The descriptions are the agent's manual: they teach
 * the output-first workflow of spec 003 (launch clean, read stderr/stdout, only
 * then add traces) and say what each field does, since the agent sees nothing else.
 */
#include "mcp/tools.h"

#include <string.h>

/*
 * The tools. To add one:
 *   1. write its handler, `cJSON *tool_debug_x(struct tool_ctx *, const cJSON *args,
 *      struct strobe_error *)`, in mcp/tool_x.c: check args with mcp/args.h (reject
 *      unknown fields with args_only), call the engine (core/), return the result
 *      object or NULL with e set;
 *   2. declare it in mcp/tools.h;
 *   3. add its row here: name, description (what it does and when to use it: the
 *      agent reads nothing else) and input schema (JSON text with
 *      additionalProperties false);
 *   4. add it to tools_names() below;
 *   5. when the engine can fail in a new way for it, give the next step a row in
 *      mcp/hints.c (the dispatcher, mcp/server.c, appends it to every tool's
 *      error), never a sentence in core/;
 *   6. document it in docs/PROTOCOL.md, and test it in tests/unit/test_mcp.c (the
 *      catalog) and tests/e2e/ (the behaviour).
 */
static const struct tool_def catalog[] = {
    {
        "debug_launch",
        "Launch a program under Strobe's debugger and start recording. stdout and stderr "
        "are ALWAYS captured into the session's timeline (no tracing needed): after "
        "launching, read them first with debug_query({sessionId, eventType: \"stderr\"}) "
        "and eventType \"stdout\"; crash messages, sanitizer reports and error logs often "
        "explain the problem. Add function traces with debug_trace only if output is not "
        "enough. Returns immediately with a sessionId; the program keeps running. "
        "Check whether it has ended with debug_session({action: \"status\"}).",
        "{\"type\":\"object\",\"properties\":{"
        "\"command\":{\"type\":\"string\",\"description\":\"Path to the executable: absolute, "
        "relative to cwd (else projectRoot), or a name looked up in PATH\"},"
        "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
        "\"Command line arguments\"},"
        "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory (default: the "
        "directory of the command)\"},"
        "\"projectRoot\":{\"type\":\"string\",\"description\":\"Absolute path of the project: "
        "functions defined under it are user code; <projectRoot>/.strobe/settings.json "
        "applies\"},"
        "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
        "\"description\":\"Environment variables added to (or replacing) the daemon's\"}},"
        "\"required\":[\"command\",\"projectRoot\"],\"additionalProperties\":false}",
        tool_debug_launch,
    },
    {
        "debug_trace",
        "Add or remove function trace patterns. Recommended workflow: launch clean, read "
        "stderr/stdout with debug_query, and add patterns only if output does not explain "
        "the problem; a program that ends within a second (or calls made at startup): "
        "stage them first, then launch. Answers say per pattern what it matched (and why "
        "not). With sessionId: changes tracing on the running program (runtime "
        "mode). Without sessionId: stages patterns for the next debug_launch (pending "
        "mode). Patterns: 'ns::*' (one level), 'ns::**' (any depth), '*::validate', "
        "'@usercode' (everything under projectRoot), '@file:parser.c'. Call with no "
        "add/remove to see the current patterns. watches: read globals at every traced "
        "call ({variable: \"cfg.max_retries\", on: [\"parse_*\"]}, or {address, type}); "
        "their values appear as watchValues on function_enter/function_exit events "
        "(debug_query verbose). Up to 32 per session, removed by label.",
        "{\"type\":\"object\",\"properties\":{"
        "\"sessionId\":{\"type\":\"string\",\"description\":\"Running session to change; omit "
        "to stage patterns for the next launch\"},"
        "\"add\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
        "\"Patterns to start tracing, e.g. \\\"auth::*\\\", \\\"*::validate\\\", "
        "\\\"@usercode\\\", \\\"@file:parser.c\\\"\"},"
        "\"remove\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
        "\"Patterns to stop tracing\"},"
        "\"serializationDepth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,"
        "\"description\":\"How deep structs are serialized in arguments (default 3; until "
        "given, large structs are 1 level deep and glibc's structs opaque)\"},"
        "\"projectRoot\":{\"type\":\"string\",\"description\":\"Project whose settings apply "
        "(pending mode)\"},"
        "\"traceMode\":{\"type\":\"string\",\"enum\":[\"fast\",\"int3\"],\"description\":"
        "\"With sessionId: how traced calls are recorded from now on, for the functions "
        "traced now and later (default: the trace.mode setting, \\\"fast\\\": an in-process "
        "recorder, ~0.3 us a call; \\\"int3\\\": breakpoints, ~25 us a call)\"},"
        "\"watches\":{\"type\":\"object\",\"properties\":{"
        "\"add\":{\"type\":\"array\",\"maxItems\":32,\"items\":{\"type\":\"object\","
        "\"properties\":{"
        "\"variable\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"A global or "
        "static as C names it: \\\"gTempo\\\", \\\"cfg.max_retries\\\", "
        "\\\"gClock->counter\\\"\"},"
        "\"address\":{\"type\":\"string\",\"description\":\"Hex address, with type\"},"
        "\"type\":{\"type\":\"string\",\"enum\":[\"i8\",\"u8\",\"i16\",\"u16\",\"i32\","
        "\"u32\",\"i64\",\"u64\",\"f32\",\"f64\",\"pointer\"]},"
        "\"label\":{\"type\":\"string\",\"description\":\"Name in watchValues (default: "
        "the expression)\"},"
        "\"on\":{\"type\":\"array\",\"maxItems\":8,\"items\":{\"type\":\"string\"},"
        "\"description\":\"Trace patterns: read only at these traced functions (default: "
        "all)\"}},\"additionalProperties\":false}},"
        "\"remove\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
        "\"description\":\"Labels of watches to remove\"}},"
        "\"additionalProperties\":false}},\"additionalProperties\":false}",
        tool_debug_trace,
    },
    {
        "debug_query",
        "Query a session's unified timeline: process stdout/stderr lines, process exits "
        "and crashes, and function calls when tracing is on, in chronological order. "
        "Start with eventType \"stderr\" or \"stdout\"; when the program died, eventType "
        "\"crash\" gives the signal, stack with file:line, locals of the crashing frame, "
        "assertion/exception/panic/sanitizer details and the ids of the events before it. "
        "Find lines by content with text: {contains: \"timeout\"} (case-sensitive "
        "substring) or {matches: \"conn(ect)? refused\"} (regular expression), over "
        "output lines, logpoint messages, pause, crash and exit texts. eventType "
        "\"logpoint\" gives logpoint messages, \"pause\" where threads stopped and why. "
        "Summary events by default (set "
        "verbose for arguments, thread and full output lines). Page with limit/offset (an "
        "answer stops at the answer budget, 16 KiB by default, even below limit: its "
        "`truncated` note names the offset to go on from), or "
        "poll for new events with afterEventId set to the previous lastEventId.",
        "{\"type\":\"object\",\"properties\":{"
        "\"sessionId\":{\"type\":\"string\"},"
        "\"eventType\":{\"type\":\"string\",\"enum\":[\"function_enter\",\"function_exit\","
        "\"stdout\",\"stderr\",\"crash\",\"process_exit\",\"variable_snapshot\",\"watch_hit\","
        "\"logpoint\",\"pause\"]},"
        "\"function\":{\"type\":\"object\",\"properties\":{\"equals\":{\"type\":\"string\"},"
        "\"contains\":{\"type\":\"string\"},\"matches\":{\"type\":\"string\",\"description\":"
        "\"Regular expression (Perl syntax, at most 1024 bytes)\"}},"
        "\"additionalProperties\":false},"
        "\"sourceFile\":{\"type\":\"object\",\"properties\":{\"equals\":{\"type\":\"string\"},"
        "\"contains\":{\"type\":\"string\"}},\"additionalProperties\":false},"
        "\"returnValue\":{\"type\":\"object\",\"properties\":{\"equals\":{},"
        "\"isNull\":{\"type\":\"boolean\"}},\"additionalProperties\":false},"
        "\"threadName\":{\"type\":\"object\",\"properties\":{\"contains\":{\"type\":\"string\"}},"
        "\"additionalProperties\":false},"
        "\"text\":{\"type\":\"object\",\"description\":\"The event's text (output line, "
        "logpoint message, pause/crash/exit text): exactly one of contains or matches\","
        "\"properties\":{\"contains\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,"
        "\"description\":\"Case-sensitive substring\"},\"matches\":{\"type\":\"string\","
        "\"minLength\":1,\"maxLength\":1024,\"description\":\"Regular expression (Perl syntax), "
        "found anywhere in the text\"}},\"additionalProperties\":false},"
        "\"timeFrom\":{\"type\":[\"integer\",\"string\"],\"description\":\"ns since session "
        "start, or relative to the latest event: \\\"-5s\\\", \\\"-500ms\\\", \\\"-1m\\\"\"},"
        "\"timeTo\":{\"type\":[\"integer\",\"string\"]},"
        "\"minDurationNs\":{\"type\":\"integer\",\"minimum\":0},"
        "\"pid\":{\"type\":\"integer\"},"
        "\"openCalls\":{\"type\":\"boolean\",\"description\":\"Only calls entered and "
        "not yet returned, per thread, innermost last: what a hung program is inside\"},"
        "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500,\"default\":50},"
        "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"default\":0},"
        "\"verbose\":{\"type\":\"boolean\",\"default\":false},"
        "\"afterEventId\":{\"type\":[\"string\",\"integer\"],\"description\":\"Only events "
        "after this id (the lastEventId of a previous answer), in id order\"}},"
        "\"required\":[\"sessionId\"],\"additionalProperties\":false}",
        tool_debug_query,
    },
    {
        "debug_session",
        "Manage sessions. action \"status\": is the program still running, its exit code or "
        "signal, event counts. \"stop\": kill the program if it runs and delete the "
        "session's data, unless retain is true (keep it for later queries). \"list\": "
        "every stored session. \"delete\": remove a session and its data. \"stacks\": "
        "where is every thread right now? Stops all threads of the running program for a "
        "moment, returns each thread's name, state (running, or sleeping in which system "
        "call), stack frames (\"function (file:line)\", innermost first) and the arguments "
        "and locals of its innermost frame in your code, then resumes them. For a hang or "
        "a deadlock: a thread blocked in pthread_mutex_lock, pthread_join or a condition "
        "variable shows wait {kind, address, ownerTid/joinedTid}, and `diagnosis` names "
        "each wait cycle "
        "(deadlock: which thread holds which mutex and waits for which) and each lock "
        "holder that others wait for while it runs (a loop under the lock?) or blocks in "
        "a system call. Filter with pid "
        "or tids; verbose adds each frame's arguments.",
        "{\"type\":\"object\",\"properties\":{"
        "\"action\":{\"type\":\"string\",\"enum\":[\"status\",\"stop\",\"list\",\"delete\","
        "\"stacks\"]},"
        "\"sessionId\":{\"type\":\"string\",\"description\":\"Required for status, stop, "
        "delete and stacks\"},"
        "\"retain\":{\"type\":\"boolean\",\"description\":\"stop: keep the data (default "
        "false)\"},"
        "\"pid\":{\"type\":\"integer\",\"description\":\"stacks: this process only (default: "
        "every process of the session)\"},"
        "\"tids\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":64,"
        "\"description\":\"stacks: these threads only\"},"
        "\"locals\":{\"type\":\"boolean\",\"description\":\"stacks: the locals of each "
        "thread's innermost frame in your code (default true)\"},"
        "\"verbose\":{\"type\":\"boolean\",\"description\":\"stacks: frames as objects with "
        "file, line and arguments (default false: one string per frame)\"}},"
        "\"required\":[\"action\"],\"additionalProperties\":false}",
        tool_debug_session,
    },
    {
        "debug_memory",
        "Read, write and watch a running program's memory, without stopping it. "
        "action \"read\" (default): targets [{variable: \"cfg.max_retries\"}] name globals "
        "and statics of the program and its libraries, and while a thread is paused the "
        "arguments, locals and registers of its frame (threadId, frame), as C does (a.b, "
        "a->b, a[3], a[i], q->items[q->head], *p, "
        "func::staticVar), or {address: \"0x...\", size, type} raw memory; up to 16 "
        "targets, structs shown `depth` levels deep; each target answers its value or its "
        "own error. type \"bytes\" saves the bytes to a file and shows a hex preview. "
        "Add poll {intervalMs, durationMs} to sample the targets in the background as "
        "variable_snapshot events, interleaved with function calls in debug_query. "
        "action \"write\": targets [{variable, value}] set a global by its own type "
        "(range-checked; the answer shows the old and new value). action \"watch\": a "
        "hardware data watchpoint on a variable or address (up to 8 bytes, 4 at once): "
        "every write (access \"readwrite\": every access) records a watch_hit event with "
        "the old and new value and the writer's stack (file:line) while the program runs "
        "on; read them with debug_query({eventType: \"watch_hit\"}). action \"unwatch\" "
        "removes one by watchId (\"*\": all).",
        "{\"type\":\"object\",\"properties\":{"
        "\"action\":{\"type\":\"string\",\"enum\":[\"read\",\"write\",\"watch\",\"unwatch\"],"
        "\"default\":\"read\"},"
        "\"sessionId\":{\"type\":\"string\"},"
        "\"pid\":{\"type\":\"integer\",\"description\":\"A process of the session (default: "
        "the main process)\"},"
        "\"threadId\":{\"type\":\"integer\",\"description\":\"read/write: a paused "
        "thread whose frame's arguments, locals and registers ($rax...) come before globals "
        "(default: the thread that stopped at the breakpoint or step, when one is paused)\"},"
        "\"frame\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":255,\"description\":"
        "\"with a paused thread: 0 the innermost frame (default), 1 its caller...\"},"
        "\"targets\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":16,\"items\":{"
        "\"type\":\"object\",\"properties\":{"
        "\"variable\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"A global or "
        "static, or a local of a paused frame: \\\"g_count\\\", \\\"cfg.max_retries\\\", "
        "\\\"head->next->value\\\", \\\"table[3]\\\", \\\"main::counter\\\", \\\"$rax\\\"\"},"
        "\"address\":{\"type\":\"string\",\"description\":\"Hex address, with type "
        "(and size for type bytes)\"},"
        "\"size\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576},"
        "\"type\":{\"type\":\"string\",\"enum\":[\"i8\",\"u8\",\"i16\",\"u16\",\"i32\",\"u32\","
        "\"i64\",\"u64\",\"f32\",\"f64\",\"pointer\",\"bytes\"]},"
        "\"value\":{\"description\":\"write: the new value (number, string, boolean)\"}},"
        "\"additionalProperties\":false}},"
        "\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,\"default\":1,"
        "\"description\":\"read: struct levels shown\"},"
        "\"poll\":{\"type\":\"object\",\"properties\":{"
        "\"intervalMs\":{\"type\":\"integer\",\"minimum\":50,\"maximum\":5000},"
        "\"durationMs\":{\"type\":\"integer\",\"minimum\":100,\"maximum\":30000}},"
        "\"required\":[\"intervalMs\",\"durationMs\"],\"additionalProperties\":false},"
        "\"variable\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"watch: the "
        "variable or field to watch\"},"
        "\"address\":{\"type\":\"string\",\"description\":\"watch: hex address instead of a "
        "variable\"},"
        "\"size\":{\"type\":\"integer\",\"enum\":[1,2,4,8],\"description\":\"watch: bytes "
        "(default: the variable's size)\"},"
        "\"type\":{\"type\":\"string\",\"description\":\"watch on an address: how to show "
        "values (i32, u64, f64, pointer, ...)\"},"
        "\"access\":{\"type\":\"string\",\"enum\":[\"write\",\"readwrite\"],\"default\":"
        "\"write\"},"
        "\"watchId\":{\"type\":[\"integer\",\"string\"],\"description\":\"unwatch: the id "
        "watch returned, or \\\"*\\\"\"}},"
        "\"required\":[\"sessionId\"],\"additionalProperties\":false}",
        tool_debug_memory,
    },
    {
        "debug_breakpoint",
        "Stop the program at a line or function, or log there without stopping. add: "
        "[{file: \"calc.c\", line: 42, condition: \"n > 3 && p->name == \\\"bob\\\"\"}] or "
        "[{function: \"parse_*\"}], with hitCount (pause from the Nth hit), oneShot, "
        "allStop (stop every thread, not only the one that hit); message: \"n={n}\" makes "
        "it a logpoint (a logpoint event, the program never pauses). The answer says where "
        "each bound (every address, inlined copies included) or why nothing did. remove: "
        "[ids] or \"*\"; neither: list. Without sessionId they are staged for the next "
        "debug_launch and bind before main runs. Then call debug_continue: it waits for "
        "the stop and answers with the thread, line, arguments and locals.",
        "{\"type\":\"object\",\"properties\":{"
        "\"sessionId\":{\"type\":\"string\"},"
        "\"add\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":16,\"items\":{"
        "\"type\":\"object\",\"properties\":{"
        "\"function\":{\"type\":\"string\",\"description\":\"A function pattern "
        "(trace syntax)\"},"
        "\"file\":{\"type\":\"string\",\"description\":\"Source file (a suffix or base "
        "name is enough), with line\"},"
        "\"line\":{\"type\":\"integer\",\"minimum\":1},"
        "\"condition\":{\"type\":\"string\",\"maxLength\":1024,\"description\":\"C "
        "expression over arguments, locals, globals: == != < <= > >= && || !\"},"
        "\"hitCount\":{\"type\":\"integer\",\"minimum\":1},"
        "\"oneShot\":{\"type\":\"boolean\"},"
        "\"allStop\":{\"type\":\"boolean\"},"
        "\"message\":{\"type\":\"string\",\"maxLength\":1024,\"description\":"
        "\"Logpoint template: \\\"x={x} p={p->name}\\\"\"}},"
        "\"additionalProperties\":false}},"
        "\"remove\":{\"description\":\"Breakpoint ids, or \\\"*\\\" for all\","
        "\"oneOf\":[{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
        "{\"type\":\"string\",\"enum\":[\"*\"]}]}},"
        "\"additionalProperties\":false}",
        tool_debug_breakpoint,
    },
    {
        "debug_continue",
        "Resume a paused program and wait for what happens next, in one call: it returns "
        "the next stop (thread, file:line, frames, arguments, locals) or, after timeoutMs "
        "(default 10000, max 60000), state \"running\" with the events and output "
        "meanwhile; never sleep and poll. action: \"continue\" (default: every paused "
        "thread), \"step-over\", \"step-into\", \"step-out\" (threadId: default the last "
        "paused), \"pause\" (stop every thread now), \"until\" with condition "
        "{breakpoint: id} | {event: <debug_query filter, e.g. {eventType: \"stderr\", text: "
        "{contains: \"error\"}}>} | {memory: \"g_count >= 100\"}: resumes and returns when "
        "it holds (at once if it already does; a breakpoint pause already shown is resumed "
        "and its next hit awaited).",
        "{\"type\":\"object\",\"properties\":{"
        "\"sessionId\":{\"type\":\"string\"},"
        "\"action\":{\"type\":\"string\",\"enum\":[\"continue\",\"step-over\","
        "\"step-into\",\"step-out\",\"pause\",\"until\"],\"default\":\"continue\"},"
        "\"threadId\":{\"type\":\"integer\"},"
        "\"condition\":{\"type\":\"object\",\"properties\":{"
        "\"breakpoint\":{\"type\":\"integer\"},"
        "\"event\":{\"type\":\"object\",\"description\":\"A debug_query filter\"},"
        "\"memory\":{\"type\":\"string\",\"description\":\"A condition over globals\"}},"
        "\"additionalProperties\":false},"
        "\"timeoutMs\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":60000,"
        "\"default\":10000}},"
        "\"required\":[\"sessionId\"],\"additionalProperties\":false}",
        tool_debug_continue,
    },
    {
        "debug_test",
        "Run a project's tests and get structured results; always use this instead of "
        "running test commands in a shell. action \"run\" (default) starts the run and "
        "returns a testRunId at once; action \"status\" with testRunId waits up to 15 s "
        "for the end and returns progress meanwhile (counts, currentTest and how long it "
        "has run against its usual duration, stuck warnings): call it again, never sleep. "
        "The result gives passed/failed/skipped, each failure's file:line, message, a "
        "shell command that reruns it alone, and suggestedTraces; compile errors as "
        "buildErrors; a deadlocked or looping test is detected in about 8 s (no output, "
        "CPU idle or busy, identical stacks), its threads' stacks kept and the test "
        "process tree killed (`stuck`). Everything else (every test, its output, the raw "
        "output) is in the `details` file. Frameworks are detected from projectRoot: "
        "cargo, go, pytest, unittest, jest, vitest, mocha, ctest (a configured CMake "
        "build directory); GoogleTest and Catch2 need the test binary as `command`; any "
        "other command runs with framework \"generic\" (exit code plus assertion "
        "lines). With tracePatterns or watches the tests run under the debugger (a "
        "sessionId for debug_query / debug_trace, crashes recorded): rerun one failing "
        "test with test and its suggestedTraces. A project without tests answers noTests "
        "with the project's language and a hint.",
        "{\"type\":\"object\",\"properties\":{"
        "\"action\":{\"type\":\"string\",\"enum\":[\"run\",\"status\"],\"default\":"
        "\"run\"},"
        "\"projectRoot\":{\"type\":\"string\",\"description\":\"run: the project's "
        "absolute path (required); frameworks are detected from its files\"},"
        "\"framework\":{\"type\":\"string\",\"enum\":[\"cargo\",\"gtest\",\"catch2\","
        "\"ctest\",\"pytest\",\"unittest\",\"go\",\"jest\",\"vitest\",\"mocha\","
        "\"generic\"],\"description\":\"run: skip detection\"},"
        "\"level\":{\"type\":\"string\",\"enum\":[\"unit\",\"integration\",\"e2e\"],"
        "\"description\":\"run: which tests, and the hard timeout (30 s, 120 s, 300 s; "
        "default all tests, 120 s)\"},"
        "\"test\":{\"type\":\"string\",\"description\":\"run: one test by name (as "
        "failures name it)\"},"
        "\"command\":{\"type\":\"string\",\"description\":\"run: the test binary "
        "(GoogleTest, Catch2) or a whole command line (generic)\"},"
        "\"tracePatterns\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
        "\"maxItems\":32,\"description\":\"run: trace these functions (debug_trace "
        "syntax); runs the tests under the debugger\"},"
        "\"watches\":{\"type\":\"object\",\"description\":\"run: debug_trace's "
        "watches {add: [...]}; runs the tests under the debugger\"},"
        "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
        "\"description\":\"run: extra environment variables\"},"
        "\"testRunId\":{\"type\":\"string\",\"description\":\"status: the run\"},"
        "\"waitMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":15000,"
        "\"default\":15000,\"description\":\"status: how long to wait for the end\"}},"
        "\"additionalProperties\":false}",
        tool_debug_test,
    },
    {
        "debug_test_status",
        "The progress or result of a test run started by debug_test (the same answer as "
        "debug_test with action \"status\"): waits up to 15 s for the end.",
        "{\"type\":\"object\",\"properties\":{"
        "\"testRunId\":{\"type\":\"string\"},"
        "\"waitMs\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":15000,"
        "\"default\":15000}},"
        "\"required\":[\"testRunId\"],\"additionalProperties\":false}",
        tool_debug_test_status,
    },
};
#define N_TOOLS (sizeof catalog / sizeof catalog[0])

const struct tool_def *tools_find(const char *name)
{
    for (size_t i = 0; i < N_TOOLS; i++)
        if (strcmp(catalog[i].name, name) == 0)
            return &catalog[i];
    return NULL;
}

const char *tools_names(void)
{
    return "debug_launch, debug_trace, debug_query, debug_session, debug_memory, "
           "debug_breakpoint, debug_continue, debug_test, debug_test_status";
}

cJSON *tools_list(void)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(res, "tools");
    for (size_t i = 0; i < N_TOOLS; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", catalog[i].name);
        cJSON_AddStringToObject(t, "description", catalog[i].description);
        cJSON_AddItemToObject(t, "inputSchema", cJSON_Parse(catalog[i].input_schema));
        cJSON_AddItemToArray(arr, t);
    }
    return res;
}
