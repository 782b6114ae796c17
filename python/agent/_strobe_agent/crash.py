"""crash.py - an uncaught exception as a crash report (the crash event's data,
core/crash_payload.h, kind "uncaught_exception").

sys.excepthook and threading.excepthook are chained, never replaced: the report is
sent first, then the hook that was there (Python's own prints the traceback) runs
as before. A report holds the exception ({type, message}), its chain of causes
(each {type, message, relation: "cause" | "context"}), the traceback's frames
innermost first ({index, function, file, line}), the index of the innermost frame
of the program's own code (crashFrame: under the project root, not an installed
package; else the innermost) and that frame's locals as previews.
"""

import sys
import threading
import time

from . import names, preview

MAX_FRAMES = 64
MAX_CAUSES = 8


def _frames(tb, root):
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    out.reverse()  # innermost first
    frames = []
    for i, t in enumerate(out[:MAX_FRAMES]):
        code = t.tb_frame.f_code
        mod = names.module_name(code.co_filename, root, t.tb_frame.f_globals.get("__name__", "?"))
        frames.append({"index": i, "function": mod + "." + names.qualname(code),
                       "file": code.co_filename, "line": t.tb_lineno})
    return out, frames


def _causes(exc):
    chain, seen = [], {id(exc)}
    while len(chain) < MAX_CAUSES:
        nxt = exc.__cause__ if exc.__cause__ is not None else (
            None if exc.__suppress_context__ else exc.__context__)
        if nxt is None or id(nxt) in seen:
            break
        rel = "cause" if exc.__cause__ is not None else "context"
        seen.add(id(nxt))
        chain.append(dict(preview.exception_summary(nxt), relation=rel))
        exc = nxt
    return chain


def report(exc, tb, thread, root, depth):
    tbs, frames = _frames(tb, root)
    own = next((i for i, f in enumerate(frames) if names.is_user_file(f["file"], root)), 0)
    locals_ = []
    if tbs:
        for k, v in list(tbs[own].tb_frame.f_locals.items())[:32]:
            locals_.append({"name": k, "type": type(v).__name__,
                            "value": preview.preview(v, depth)})
    data = {"kind": "uncaught_exception", "exception": preview.exception_summary(exc),
            "causes": _causes(exc), "frames": frames, "crashFrame": own, "locals": locals_}
    where = frames[own] if frames else {"function": "?", "file": "", "line": 0}
    return {"ts": time.monotonic_ns(), "tid": thread.native_id or 0, "thread": thread.name,
            "fn": where["function"], "file": where["file"], "line": where["line"],
            "text": "%s: %s in %s (%s:%d)" % (
                data["exception"]["type"], data["exception"]["message"][:200],
                where["function"], where["file"].rsplit("/", 1)[-1], where["line"]),
            "data": data}


def install(send, root, depth_of):
    """Chains both hooks: send(report) runs before the hook that was there."""
    prev_sys = sys.excepthook
    prev_thread = threading.excepthook

    def sys_hook(t, v, tb):
        try:
            send(report(v, tb, threading.current_thread(), root, depth_of()))
        finally:
            prev_sys(t, v, tb)

    def thread_hook(args):
        try:
            if args.exc_type is not SystemExit:
                send(report(args.exc_value, args.exc_traceback, args.thread or
                            threading.current_thread(), root, depth_of()))
        finally:
            prev_thread(args)

    sys.excepthook = sys_hook
    threading.excepthook = thread_hook
