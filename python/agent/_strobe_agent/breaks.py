"""breaks.py - breakpoints, logpoints, pauses and steps in Python code, with pdb's
meaning, and reads and writes of the paused frames' names.

Owns the breakpoint table of this process (the daemon numbers breakpoints), the
threads paused here and their steps. The rest of the agent reaches it through the
commands "break", "unbreak", "pause", "resume" and "memory" (__init__.py).

How a hit is seen: while anything needs it (a breakpoint, a step, a pause asked
for), every thread of the interpreter has dispatch() as its trace function
(sys.settrace; other threads through threading.settrace_all_threads on 3.12+, or
_PyEval_SetTrace on 3.9-3.11; frames already running get their f_trace set).
dispatch() sees each call and answers, once per code object, whether the code
holds a breakpoint's line or matches a function breakpoint: only such frames (and a
stepping thread's) get line events. With nothing set no trace function is left on
any thread. A trace function the program set itself (coverage.py, pdb) is
replaced while breakpoints are set, and not given back (docs/PYTHON.md).

A pause: the thread that hits sends the events before it, then the pause, and
blocks (the GIL released) until the daemon resumes it; the other threads run on.
The daemon's commands run on the agent's reader thread and read the paused frames
from there. Steps (pdb's): over stops at the next line of the frame (or of its
caller once it returns); into at the next line of any frame of the project's own
code (debugpy's justMyCode); out at the caller's next line, with the value the
frame returned. A pause asked for stops each thread at the next line it runs in the project's own
code.
"""

import ast
import ctypes
import dis
import os
import sys
import threading
import time

from . import hooks, names, preview

_WAIT_S = 0.5  # a paused thread looks this often whether the daemon is still there


class Breakpoint:
    __slots__ = ("id", "file", "line", "line_asked", "function", "cond", "cond_text",
                 "message", "hit_count", "passed", "one_shot", "all_stop", "hit_limit", "hits",
                 "traps", "cond_errors", "last_error", "note", "locations")

    def info(self):
        return {"id": self.id, "file": self.file or "", "line": self.line,
                "lineAsked": self.line_asked, "function": self.function or "",
                "condition": self.cond_text or "", "logpoint": self.message is not None,
                "message": "".join(t for t, _ in self.message) if self.message else "",
                "hitCount": self.hit_count, "oneShot": self.one_shot,
                "hitLimit": self.hit_limit, "hits": self.hits, "traps": self.traps,
                "conditionErrors": self.cond_errors, "lastConditionError": self.last_error,
                "note": self.note, "locations": self.locations[:8],
                "nLocations": len(self.locations)}


GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR
_COMPREHENSIONS = ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")


def _comprehension_head(frame):
    """A comprehension's frame on the line it starts on: the enclosing frame
    stopped there already, and this one would stop once per element (before 3.12,
    which inlines them). A line breakpoint stops once per visit of the line."""
    code = frame.f_code
    return code.co_name in _COMPREHENSIONS and frame.f_lineno == code.co_firstlineno


class _Step:
    """A thread's step: how, the frame whose next line ends it, and a generator
    frame that suspended on the way (its resume also ends it: the caller's next
    line may come only after it)."""
    __slots__ = ("how", "frame", "alt", "ret", "returned")

    def __init__(self, how, frame):
        self.how, self.frame, self.alt, self.ret, self.returned = how, frame, None, None, False

    def at(self, frame):
        return self.how != "out" and (frame is self.frame or frame is self.alt)


class _Paused:
    __slots__ = ("info", "frame", "go", "how")

    def __init__(self, info, frame):
        self.info, self.frame, self.go, self.how = info, frame, threading.Event(), None


class Refused(Exception):
    """A request the agent turns down, with the daemon's error code (base/error.h's
    names: FILE_NOT_FOUND, LINE_NOT_FOUND, BAD_EXPRESSION...)."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


def code_lines(code):
    """The lines of code holds instructions on (nested code objects apart)."""
    if hasattr(code, "co_lines"):
        return {ln for _, _, ln in code.co_lines() if ln}
    return {ln for _, ln in dis.findlinestarts(code)}


def _all_codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from _all_codes(c)


def file_lines(path):
    """Every line of the file that holds code, or None when it does not compile."""
    try:
        with open(path, "rb") as f:
            top = compile(f.read(), path, "exec")
    except (OSError, SyntaxError, ValueError):
        return None
    lines = set()
    for c in _all_codes(top):
        lines |= code_lines(c)
    return lines


def _template(text):
    """A logpoint's message as [(literal or "{expr}", compiled expr or None)]."""
    out, i = [], 0
    while i < len(text):
        j = text.find("{", i)
        if j < 0:
            out.append((text[i:], None))
            break
        if j > i:
            out.append((text[i:j], None))
        k = text.find("}", j)
        if k < 0:
            raise ValueError("the message's '{' at column %d has no '}'" % (j + 1))
        expr = text[j + 1:k].strip()
        out.append((text[j:k + 1], compile_expression(expr)))
        i = k + 1
    return out


_SIDE_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)


def compile_expression(text):
    """An expression as a code object; raises SyntaxError (with its column) or
    ValueError for one that could change the program (a call, an assignment)."""
    tree = ast.parse(text.strip(), "<expression>", "eval")
    for node in ast.walk(tree):
        if isinstance(node, _SIDE_EFFECTS):
            raise ValueError("%r has a %s, which could change the program: only names, "
                             "attributes, subscripts, operators and literals are read"
                             % (text, type(node).__name__))
    return compile(tree, "<expression>", "eval")


def describe_error(e):
    if isinstance(e, SyntaxError):
        return "SyntaxError: %s (column %s)" % (e.msg, e.offset)
    return "%s: %s" % (type(e).__name__, e)


class Debugger:
    def __init__(self, rec, root, send, skip_dir):
        self.rec = rec
        self.root = root
        self.send = send              # send(msg): the events before go first
        self.skip_dir = skip_dir      # the agent's own code: never stopped in
        self.bps = {}                 # id -> Breakpoint
        self.refused = {}             # id -> info of one given at the start that
                                      # did not bind here (set_first)
        self.by_line = {}             # (realpath, line) -> [Breakpoint]
        self.by_function = []         # function breakpoints
        self.interest = {}            # code -> True (gets line events) / False
        self.fresh = set()            # id() of frames not yet past their first line
        self.real = {}                # co_filename -> realpath
        self.steps = {}               # native tid -> _Step
        self.paused = {}              # native tid -> _Paused
        self.pause_asked = None       # None, "pause" or "allStop": threads stop at
                                      # their next line, with that reason
        self.seq = 0
        self.armed = False
        self.lock = threading.Lock()  # the table, against the reader thread
        self.idents = set()           # the agent's threads (never stopped)

    # ---- the table --------------------------------------------------------------

    def files(self):
        found = set()
        for m in list(sys.modules.values()):
            f = getattr(m, "__file__", None)
            if f and f.endswith(".py"):
                found.add(os.path.realpath(f))
        if self.root:
            found.update(os.path.realpath(p) for p in names.project_files(self.root))
        return found

    def resolve_file(self, asked):
        """The one file of the program asked names (absolute, or a path's last
        components); raises Refused: FILE_NOT_FOUND with the near names, or
        VALIDATION_ERROR when it names several."""
        if os.path.isabs(asked):
            if os.path.isfile(asked):
                return os.path.realpath(asked)
            raise Refused("FILE_NOT_FOUND", "%s is not a file" % asked)
        known = self.files()
        tail = "/" + asked.lstrip("./")
        hits = sorted(p for p in known if p.endswith(tail))
        if self.root and len(hits) > 1:
            under = [p for p in hits if p.startswith(os.path.realpath(self.root) + "/")]
            hits = under or hits
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise Refused("VALIDATION_ERROR", "%s names %d files of the program (%s): give "
                          "more of its path" % (asked, len(hits), ", ".join(hits[:4])))
        base = os.path.basename(asked)
        near = names.suggest(base, sorted({os.path.basename(p) for p in known}))
        raise Refused("FILE_NOT_FOUND", "%s is not a file of the program (its modules and the "
                      "project's .py files)%s" % (asked, "; near: " + ", ".join(near) if near else ""))

    def set(self, spec):
        """spec: {id, file?, line?, function?, condition?, message?, hitCount?,
        oneShot?, hitLimit?}. Returns the breakpoint's info; raises Refused with
        the daemon's code (FILE_NOT_FOUND, LINE_NOT_FOUND, BAD_EXPRESSION,
        VALIDATION_ERROR)."""
        bp = Breakpoint()
        bp.id = int(spec["id"])
        bp.function = spec.get("function")
        bp.file, bp.line_asked, bp.line, bp.note = None, int(spec.get("line") or 0), 0, ""
        bp.cond_text = spec.get("condition") or None
        try:
            bp.cond = compile_expression(bp.cond_text) if bp.cond_text else None
        except (SyntaxError, ValueError) as e:
            raise Refused("BAD_EXPRESSION", "the condition %r: %s" % (bp.cond_text,
                                                                     describe_error(e)))
        try:
            bp.message = _template(spec["message"]) if spec.get("message") is not None else None
        except (SyntaxError, ValueError) as e:
            raise Refused("BAD_EXPRESSION", "the message: %s" % describe_error(e))
        bp.hit_count = int(spec.get("hitCount") or 0)
        bp.one_shot = bool(spec.get("oneShot"))
        bp.all_stop = bool(spec.get("allStop"))
        bp.hit_limit = int(spec.get("hitLimit") or 0)
        bp.passed = bp.hits = bp.traps = bp.cond_errors = 0
        bp.last_error = ""
        bp.locations = []
        if spec.get("file"):
            bp.file = self.resolve_file(spec["file"])
            lines = file_lines(bp.file)
            if lines is None:
                raise Refused("LINE_NOT_FOUND", "%s does not compile: no line of it can stop"
                              % bp.file)
            later = sorted(ln for ln in lines if ln >= bp.line_asked)
            if not later:
                raise Refused("LINE_NOT_FOUND", "%s has no code at or after line %d (its last "
                              "line with code is %d)" % (spec["file"], bp.line_asked,
                                                         max(lines or {0})))
            bp.line = later[0]
            if bp.line != bp.line_asked:
                bp.note = "line %d has no code: bound to line %d, the next that has" % (
                    bp.line_asked, bp.line)
            bp.locations = [{"file": bp.file, "line": bp.line, "function": ""}]
        elif bp.function:
            bp.locations = self._function_locations(bp.function)
            if not bp.locations:
                known = [n for n, _, _ in self._source_functions()]
                near = names.suggest(bp.function, known)
                bp.note = "%s matches no function of the project's source yet%s: it binds " \
                          "to any function of that name that runs" % (
                              bp.function, "; near: " + ", ".join(near) if near else "")
        else:
            raise Refused("VALIDATION_ERROR", "a breakpoint needs a file and line or a function")
        with self.lock:
            self.bps[bp.id] = bp
            self._index()
        self._arm()
        return bp.info()

    def set_first(self, specs):
        """The breakpoints this process starts with (set before the program's
        first line). One that does not bind here (a file this program does not
        have) is listed with no location and a note saying why, as the daemon
        lists a native breakpoint that bound nowhere."""
        for spec in specs:
            try:
                self.set(spec)
            except (Refused, KeyError, TypeError, ValueError) as e:
                bid = int(spec.get("id") or 0)
                why = "%s: %s" % (e.code, e) if isinstance(e, Refused) else describe_error(e)
                with self.lock:
                    self.refused[bid] = {
                        "id": bid, "file": spec.get("file") or "",
                        "lineAsked": int(spec.get("line") or 0),
                        "function": spec.get("function") or "",
                        "condition": spec.get("condition") or "",
                        "logpoint": spec.get("message") is not None,
                        "message": spec.get("message") or "",
                        "note": "not set in this Python process (pid %d): %s" % (os.getpid(),
                                                                                 why),
                        "locations": [], "nLocations": 0}

    def _source_functions(self):
        out = []
        for path in names.project_files(self.root) if self.root else []:
            mod = names.module_name(path, self.root, None)
            out.extend((n, path, line) for n, line in names.source_functions(path, mod))
        return out

    def _function_locations(self, pattern):
        p = names.Pattern(pattern)
        return [{"function": n, "file": path, "line": line}
                for n, path, line in self._source_functions() if p.matches(n, path, self.root)]

    def clear(self, bid):
        with self.lock:
            if self.bps.pop(int(bid), None) is None and \
                    self.refused.pop(int(bid), None) is None:
                raise Refused("BREAKPOINT_NOT_FOUND", "no breakpoint %s in this process" % bid)
            self._index()
        self._arm()

    def infos(self):
        with self.lock:
            out = [b.info() for b in self.bps.values()] + list(self.refused.values())
        return sorted(out, key=lambda b: b["id"])

    def _index(self):
        self.by_line = {}
        for b in self.bps.values():
            if b.file:
                self.by_line.setdefault((b.file, b.line), []).append(b)
        self.by_function = [(names.Pattern(b.function), b) for b in self.bps.values()
                            if b.function and not b.file]
        self.interest = {}
        self.fresh = set()

    # ---- arming -----------------------------------------------------------------

    def _needed(self):
        return bool(self.bps or self.steps or self.pause_asked or self.paused)

    def _arm(self):
        """Trace functions on every thread while something needs them, none after."""
        want = self._needed()
        if want == self.armed:
            if want:
                self._existing_frames()
            return
        self.armed = want
        func = self.dispatch if want else None
        sys.settrace(func)
        threading.settrace(func)
        if hasattr(threading, "settrace_all_threads"):
            threading.settrace_all_threads(func)
        else:
            hooks.existing_threads(func, "_PyEval_SetTrace")
        if want:
            self._existing_frames()

    def _existing_frames(self):
        """Frames already running when a breakpoint is set get their line events."""
        me = threading.get_ident()
        for ident, top in sys._current_frames().items():
            if ident == me or ident in self.idents:
                continue
            f = top
            while f is not None:
                if self._interesting(f.f_code) or (self.pause_asked and self._user(f.f_code)):
                    f.f_trace = self.local
                f = f.f_back

    def _path(self, code):
        fn = code.co_filename
        r = self.real.get(fn)
        if r is None:
            r = self.real[fn] = os.path.realpath(fn) if not fn.startswith("<") else fn
        return r

    def _interesting(self, code):
        hit = self.interest.get(code)
        if hit is None:
            path = self._path(code)
            hit = False
            if not path.startswith(self.skip_dir):
                mine = code_lines(code)
                hit = any(f == path and ln in mine for f, ln in list(self.by_line))
                if not hit and self.by_function and code.co_name != "<module>":
                    qual = self._qualname(code, path)
                    hit = any(p.matches(qual, path, self.root) for p, _ in self.by_function)
            self.interest[code] = hit
        return hit

    def _qualname(self, code, path):
        mod = names.module_name(path, self.root, None)
        if mod is None:
            mod = path
        return mod + "." + names.qualname(code)

    def _user(self, code):
        path = self._path(code)
        return not path.startswith(self.skip_dir) and names.is_user_file(path, self.root)

    # ---- the trace functions ----------------------------------------------------

    def dispatch(self, frame, event, arg):
        """Every thread's global trace function: which new frames get line events."""
        code = frame.f_code
        if self.steps:
            st = self.steps.get(threading.get_native_id())
            if st is not None and (st.at(frame) or st.how == "into" and self._user(code)):
                return self.local
        if self.pause_asked and threading.get_ident() not in self.idents and self._user(code):
            return self.local
        hit = self.interest.get(code)
        if hit is None:
            hit = self._interesting(code)
        if hit and threading.get_ident() not in self.idents:
            if self.by_function:
                self.fresh.add(id(frame))
            return self.local
        return None

    def local(self, frame, event, arg):
        if event == "line":
            self._line(frame)
        elif event == "return" and self.steps:
            self._returned(frame, arg)
        return self.local

    def _line(self, frame):
        tid = threading.get_native_id()
        st = self.steps.get(tid) if self.steps else None
        if st is not None:
            if st.at(frame) or (st.how == "into" and self._user(frame.f_code)):
                del self.steps[tid]
                self._pause(frame, "step", None, st)
                return
        if self.pause_asked and threading.get_ident() not in self.idents:
            if self._user(frame.f_code):
                self._pause(frame, self.pause_asked, None, None)
                return
        hits = []
        fid = id(frame)
        path = self._path(frame.f_code)
        if fid in self.fresh:
            self.fresh.discard(fid)
            qual = self._qualname(frame.f_code, path)
            hits.extend(b for p, b in self.by_function if p.matches(qual, path, self.root))
        at = self.by_line.get((path, frame.f_lineno))
        if at and not _comprehension_head(frame):
            hits.extend(at)
        for bp in hits:
            if bp.id in self.bps and self._passes(bp, frame):
                if bp.message is not None:
                    self._log(bp, frame)
                else:
                    self._pause(frame, "breakpoint", bp, None)
                    return

    def _returned(self, frame, value):
        tid = threading.get_native_id()
        st = self.steps.get(tid)
        if st is None or (st.frame is not frame and st.alt is not frame):
            return
        caller = frame.f_back
        while caller is not None and caller.f_code.co_filename.startswith(self.skip_dir):
            caller = caller.f_back
        if caller is None:
            del self.steps[tid]  # the thread's last frame: it runs to its end
            self._arm()
            return
        if st.how == "out" and not st.returned:
            st.ret, st.returned = value, True
        st.how = "over" if st.how != "into" else "into"
        st.alt = frame if frame.f_code.co_flags & GENERATOR_FLAGS else None
        st.frame = caller
        caller.f_trace = self.local

    def _passes(self, bp, frame):
        """Counts the trap, evaluates the condition (an error counts as true, as
        gdb does, and is said), applies hitCount; True when the hit acts."""
        bp.traps += 1
        if bp.cond is not None:
            try:
                ok = bool(eval(bp.cond, frame.f_globals, frame.f_locals))
            except Exception as e:
                bp.cond_errors += 1
                bp.last_error = describe_error(e)[:250]
                ok = True
            if not ok:
                return False
        bp.passed += 1
        if bp.hit_count > 1 and bp.passed < bp.hit_count:
            return False
        bp.hits += 1
        if bp.one_shot or (bp.hit_limit and bp.hits >= bp.hit_limit):
            with self.lock:
                self.bps.pop(bp.id, None)
                self._index()
        return True

    def _where(self, frame):
        code = frame.f_code
        return {"function": self._qualname(code, self._path(code)), "file": code.co_filename,
                "line": frame.f_lineno}

    def _log(self, bp, frame):
        parts = []
        for text, expr in bp.message:
            if expr is None:
                parts.append(text)
                continue
            try:
                parts.append(preview.short(eval(expr, frame.f_globals, frame.f_locals), 200))
            except Exception as e:
                parts.append("<%s>" % describe_error(e))
        w = self._where(frame)
        t = threading.current_thread()
        ident = threading.get_ident()
        self.rec.inflight[ident] = ts = _now()  # the channel's floor (recorder.py)
        try:
            ev = dict(w, ev="logpoint", ts=ts, tid=threading.get_native_id(), thread=t.name,
                      text="".join(parts), breakpointId=bp.id)
            if bp.hit_limit and bp.id not in self.bps:
                ev["text"] += " (last: hit limit %d reached)" % bp.hit_limit
            self.rec.emit(ev)
        finally:
            del self.rec.inflight[ident]

    def _pause(self, frame, reason, bp, step):
        tid = threading.get_native_id()
        t = threading.current_thread()
        self.steps.pop(tid, None)  # a breakpoint met on the way ends a step, as in pdb
        with self.lock:
            self.seq += 1
            info = dict(self._where(frame), tid=tid, pid=os.getpid(), seq=self.seq,
                        reason=reason, breakpointId=bp.id if bp else 0, thread=t.name,
                        ts=_now())
            if step is not None and step.returned:
                info["returnValue"] = preview.preview(step.ret, self.rec.depth)
            p = self.paused[tid] = _Paused(info, frame)
            if bp is not None and bp.all_stop and not self.pause_asked:
                self.pause_asked = "allStop"
        if bp is not None and bp.all_stop:
            self._existing_frames()
        self.send({"pause": info})
        while not p.go.wait(_WAIT_S):
            if self.closed():
                break
        with self.lock:
            self.paused.pop(tid, None)
        how = p.how or "continue"
        if how in ("over", "into", "out"):
            self.steps[tid] = _Step(how, frame)
            frame.f_trace = self.local
        self._arm()

    def closed(self):
        return False  # replaced by the agent: whether the daemon has gone

    # ---- the daemon's commands ----------------------------------------------------

    def pauses(self):
        with self.lock:
            return [dict(p.info) for p in self.paused.values()]

    def paused_frames(self):
        with self.lock:
            return {tid: p.frame for tid, p in self.paused.items()}

    def resume(self, tid, how):
        if how not in ("continue", "over", "into", "out"):
            raise ValueError("how is continue, over, into or out, not %r" % how)
        with self.lock:
            if tid:
                p = self.paused.get(tid)
                if p is None:
                    raise Refused("THREAD_NOT_PAUSED", "thread %d is not paused" % tid)
                targets = [p]
            else:
                if how != "continue":
                    raise ValueError("a step names the paused thread")
                targets = list(self.paused.values())
                self.pause_asked = None
        for p in targets:
            p.how = how
            p.go.set()
        return len(targets)

    def ask_pause(self, wait_s=1.0):
        """Every thread stops at the next line it runs in the project's own code;
        waits up to wait_s for them (a thread blocked in C code, or running library
        code only, is not waited for longer). Returns how many are paused."""
        self.pause_asked = "pause"
        self._arm()
        deadline = _now() + int(wait_s * 1e9)
        others = lambda: [t for t in threading.enumerate()
                          if t.ident not in self.idents and t.ident != threading.get_ident()]
        while _now() < deadline:
            with self.lock:
                if all(t.native_id in self.paused for t in others()):
                    break
            threading.Event().wait(0.01)
        with self.lock:
            if self.pause_asked == "pause":
                self.pause_asked = None
            n = len(self.paused)
        self._arm()
        return n

    def memory(self, tid, index, targets, values, depth):
        """Reads (values None) or writes each target, an expression over the paused
        frame tid's names (index: 0 the innermost, 1 its caller...) or, with tid 0,
        over __main__'s globals. A write assigns the value (a JSON scalar) and reads
        the target back. Returns a result per target: {target, type, value, old?}
        or {target, error}."""
        frame = self.frame_of(tid, index) if tid else None
        g = frame.f_globals if frame is not None else vars(sys.modules["__main__"])
        out = []
        for i, t in enumerate(targets):
            r = {"target": t}
            try:
                code = compile_expression(t)
                loc = frame.f_locals if frame is not None else g
                v = eval(code, g, loc)
                if values is not None:
                    r["old"] = preview.preview(v, depth)
                    _assign(t, values[i], frame, g)
                    loc = frame.f_locals if frame is not None else g
                    v = eval(code, g, loc)
                r.update(type=type(v).__name__, value=preview.preview(v, depth))
            except Exception as e:
                r["error"] = describe_error(e)
            out.append(r)
        return out

    def frame_of(self, tid, index):
        with self.lock:
            p = self.paused.get(tid)
        if p is None:
            raise Refused("THREAD_NOT_PAUSED", "thread %d is not paused" % tid)
        f = p.frame
        for _ in range(index):
            f = f.f_back
            while f is not None and f.f_code.co_filename.startswith(self.skip_dir):
                f = f.f_back
            if f is None:
                raise Refused("VALIDATION_ERROR", "thread %d has no frame %d" % (tid, index))
        return f


def _assign(target, value, frame, g):
    """target = value in the paused frame (frame None: the globals g)."""
    node = ast.parse(target.strip(), "<target>", "eval").body
    loc = frame.f_locals if frame is not None else g
    if isinstance(node, ast.Name):
        if frame is not None and node.id in frame.f_code.co_varnames + frame.f_code.co_cellvars:
            loc[node.id] = value
            if sys.version_info < (3, 13):  # 3.13's f_locals writes through (PEP 667)
                api = ctypes.pythonapi
                api.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
        else:
            g[node.id] = value
    elif isinstance(node, ast.Attribute):
        setattr(eval(compile_expression(ast.unparse(node.value)), g, loc), node.attr, value)
    elif isinstance(node, ast.Subscript):
        obj = eval(compile_expression(ast.unparse(node.value)), g, loc)
        obj[eval(compile_expression(ast.unparse(node.slice)), g, loc)] = value
    else:
        raise ValueError("%r is not a name, an attribute or a subscript: nothing to write to"
                         % target)


def _now():
    return time.monotonic_ns()
