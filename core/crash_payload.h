/*
 * crash_payload.h - the one owner of the crash event's schema: the fields the crash
 * recorder writes, and every form they are read in (the event debug_query shows, in
 * summary and verbose; the brief form of the events that led to a crash; the
 * runtime's account joined from stderr).
 *
 * Decision: the writer stays in ptrace/tracer/crash.c, which builds the `data` JSON in one
 * pass while the crashing thread is stopped and may include only base/, dwarf/ and
 * core/collector.h. It writes exactly the fields listed below; a field added there
 * is listed here first, and every reader goes through this module (mcp/tool_query.c
 * shapes crash events with crash_payload_shape(); core/timeline.c asks
 * crash_payload_account_wanted() which account to join). strobectl's crash report
 * (cli/render/crash_report.c) renders the shaped event, as a client of the answer.
 *
 * The event's columns: function, source_file, line (the crashing frame), pid, tid,
 * thread_name, text (the one-line headline, e.g. "SIGSEGV (SEGV_MAPERR) at address
 * 0x0 in read_field (crash_null.c:54)").
 *
 * Its data object, as ptrace/tracer/crash.c writes it (members in this order). The
 * Python collector writes kind "uncaught_exception" too (python/agent/_strobe_agent/
 * crash.py): exception {type, message}, causes [{type, message, relation: "cause" |
 * "context"}] (the chain, outermost first), frames without pc, crashFrame, locals;
 * the runtime's account is then not joined (exception is there already):
 *   kind            "signal" | "assertion" | "uncaught_exception" | "panic" |
 *                   "sanitizer"
 *   signal, signalNumber, signalCode, faultAddress (hex string), sender,
 *   stackOverflow, handlerInstalled           when a signal was involved;
 *                   faultAddress only for faults the kernel raised with an address
 *                   (si_code > 0 but SI_KERNEL), sender {pid, uid, self?} for signals
 *                   sent by kill/tgkill/sigqueue (si_code <= 0)
 *   assertion       {expression, file, line, function}
 *   abortMessage    glibc's __abort_msg
 *   frames          innermost first: {index, function (null when unknown), file?,
 *                   line?, pc (hex), module?, moduleAddress?, inlined?, arguments?};
 *                   a struct pointed to from several frames is written in the first,
 *                   the others have {"@ptr", "@see": "frame N"} (dwarf/value.h refs)
 *                   {omittedFrames: N} where the middle of a deep stack is left out
 *   framesTotal, framesTotalIsLowerBound      when frames were left out
 *   crashFrame      the index of the crashing frame
 *   locals          its locals, [{name, type, value}]
 *   note            when no frame has debug info
 *   registers       {rip, rsp, ..., eflags, fs_base} as hex strings
 *
 * What reading adds (crash_payload_shape()):
 *   lastEventIds    ids of the CRASH_LAST_EVENTS events before the crash
 *   lastEvents      the same in brief: {id, eventType, function?, text?}, text cut at
 *                   CRASH_BRIEF_TEXT bytes and marked "..."
 *   exception {type, what} | panic {message, file, line, column, thread} |
 *   sanitizer {tool, report, summary, reportEventIds: [first, last]}
 *                   the runtime's account (base/failure_text.h) of the kinds
 *                   "uncaught_exception", "panic" and "sanitizer", from the last
 *                   CRASH_STDERR_LINES stderr lines up to the crash
 *   python {error, frames: [{function, file, line}], otherThreads}
 *                   of kind "signal": the Python stack of a native crash in a
 *                   Python process (a C extension's), from what CPython's
 *                   faulthandler printed after the signal (the Python agent
 *                   enables it: docs/PYTHON.md), CRASH_STDERR_LINES lines at most
 * Summary mode also slims the event: registers, each frame's pc, and the module of
 * a frame with a function name are verbose-only, as other events' raw fields are.
 */
#ifndef STROBE_CRASH_PAYLOAD_H
#define STROBE_CRASH_PAYLOAD_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "core/timeline.h"

#define CRASH_LAST_EVENTS 10
#define CRASH_STDERR_LINES 200
#define PYTHON_FRAMES_MAX 32     /* frames of a crash's python account */
#define CRASH_BRIEF_TEXT 120

/* The member a runtime's account fills for the crash whose data object is
 * data_json ("exception" for kind "uncaught_exception", "panic", "sanitizer"); NULL
 * when its kind has none or data_json already carries that member: an exception
 * report next to a segfault is somebody else's. */
const char *crash_payload_account_wanted(const char *data_json);

/* Completes ev, the JSON of crash event row with its data members already
 * flattened into it (as debug_query shows every event's data): the crashing frame's
 * location, pid and (summary) threadId when ev lacks them, what ctx joined
 * (lastEventIds, lastEvents, the runtime's account), then, unless verbose, the
 * slimming above. ctx may be NULL (nothing joined). */
void crash_payload_shape(cJSON *ev, const struct timeline_event *row,
                         const struct timeline_crash_context *ctx, bool verbose);

#endif
