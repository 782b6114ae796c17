"""recorder.py - the calls of traced functions as events, with exact counts.

Owns what happens once a hook (hooks.py) has seen a traced function start or end:
the enter and exit events, their parents, their durations, the exact count of
every call, and the sampling of hot functions. Hooks decide nothing but which code
objects are traced (decide()) and call enter() and leave().

- Parents: each thread has a stack of its open traced calls; an event's parent is
  the innermost open traced call of its thread.
- Generators and coroutines: a suspend is an exit with "suspended": true, a
  resume an enter with "resumed": true; the pair keeps one parent.
- Counts are exact: every call of a traced function is counted, recorded or not.
- Sampling (the native rules' spirit, ptrace/hooks/sampling.c): a function records
  its first sample_after calls whole; past them, one that runs more than
  hot_per_second calls a second records only the first WINDOW calls of each second
  and its events say "sampled". Exits follow their enters: an unrecorded enter has
  no exit event.
- Exceptions leaving a call: the hook gives the exception when it knows it
  (sys.monitoring); otherwise (setprofile, <= 3.11) the exit waits in `pending`
  until the exception is seen handled or uncaught on that thread (catch_seen()),
  and says "unknown" when it never is.
"""

import itertools
import threading
import time

from . import names, preview

WINDOW = 64


class Function:
    """A traced function: its name, where it is, and its counts."""

    __slots__ = ("name", "file", "line", "argnames", "calls", "recorded", "sampled",
                 "second", "in_second", "sampled_since")

    def __init__(self, name, file, line, argnames):
        self.name, self.file, self.line, self.argnames = name, file, line, argnames
        self.calls = self.recorded = 0
        self.sampled = False
        self.second = 0
        self.in_second = 0
        self.sampled_since = 0


def argnames(code):
    n = code.co_argcount + code.co_kwonlyargcount
    flags = code.co_flags
    n += bool(flags & 0x04) + bool(flags & 0x08)  # *args, **kwargs
    return code.co_varnames[:n]


class Recorder:
    def __init__(self, emit, root, depth=3, sample_after=1000, hot_per_second=10000):
        self.emit = emit
        self.root = root
        self.depth = depth
        self.sample_after = sample_after
        self.hot_per_second = hot_per_second
        self.patterns = []
        self.skip_dirs = ()
        self.traced = {}       # code object -> Function, or None: not traced
        self.functions = {}    # name -> Function (counts survive a pattern change)
        self.seq = itertools.count(1)
        self.local = threading.local()
        self.pending = {}      # tid -> [(exit event, frame id)] waiting for an exception
        self.inflight = {}     # tid -> a time at or before the event it is making

    # ---- which code is traced ---------------------------------------------------

    def set_patterns(self, texts):
        self.patterns = [names.Pattern(t) for t in texts]
        self.traced.clear()  # in place: the hooks hold this very dict

    def decide(self, code):
        """The Function of a code object, or None; cached per code object."""
        path = code.co_filename
        fn = None
        if self.patterns and not path.startswith(self.skip_dirs):
            mod = names.module_name(path, self.root, None)
            if mod is None:
                mod = "<%s>" % path if path.startswith("<") else path
            qual = mod + "." + names.qualname(code) if code.co_name != "<module>" else None
            if qual and any(p.matches(qual, path, self.root) for p in self.patterns):
                fn = self.functions.get(qual)
                if fn is None or fn.file != path:
                    fn = Function(qual, path, code.co_firstlineno, argnames(code))
                    self.functions[qual] = fn
        self.traced[code] = fn
        return fn

    # ---- calls ------------------------------------------------------------------

    def _stack(self):
        s = getattr(self.local, "stack", None)
        if s is None:
            s = self.local.stack = []
            self.local.tid = threading.get_native_id()
        return s

    def _record_this(self, fn, now):
        """Counts the call; whether its events are recorded (sampling)."""
        fn.calls += 1
        sec = now // 1_000_000_000
        if sec != fn.second:
            fn.second, fn.in_second = sec, 0
        fn.in_second += 1
        if not fn.sampled and fn.calls > self.sample_after and \
                fn.in_second > self.hot_per_second:
            fn.sampled, fn.sampled_since = True, now
        return not fn.sampled or fn.in_second <= WINDOW

    def enter(self, fn, frame, resumed=False):
        local = self.local
        if getattr(local, "busy", False):
            return  # the agent's own threads, or a call made while recording one
        local.busy = True
        self.inflight[threading.get_ident()] = time.monotonic_ns()
        try:
            self._enter(fn, frame, resumed)
        finally:
            del self.inflight[threading.get_ident()]
            local.busy = False

    def _enter(self, fn, frame, resumed):
        now = time.monotonic_ns()
        stack = self._stack()
        if resumed:
            fn_calls = True  # a resume is not a new call
        else:
            fn_calls = self._record_this(fn, now)
        parent = next((e[1] for e in reversed(stack) if e[1]), 0)
        seq = 0
        if fn_calls:
            seq = next(self.seq)
            fn.recorded += not resumed
            ev = {"ev": "enter", "seq": seq, "parent": parent, "ts": now,
                  "tid": self.local.tid, "thread": threading.current_thread().name,
                  "fn": fn.name, "file": fn.file, "line": frame.f_lineno,
                  "args": self._args(fn, frame), "short": self._short(fn, frame)}
            if resumed:
                ev["resumed"] = True
            if fn.sampled:
                ev["sampled"] = True
            self.emit(ev)
        stack.append((id(frame), seq, now, fn))

    def _args(self, fn, frame):
        loc = frame.f_locals
        out = []
        for n in fn.argnames:
            if n in loc:
                out.append({"name": n, "value": preview.preview(loc[n], self.depth)})
        return out

    def _short(self, fn, frame):
        loc = frame.f_locals
        s = ", ".join("%s=%s" % (n, preview.short(loc[n])) for n in fn.argnames if n in loc)
        return s if len(s) <= 200 else s[:200] + "..."

    def leave(self, fn, frame, kind, value=None, exception=None):
        """kind: "return", "yield" or "raise" (exception: the exception if known)."""
        local = self.local
        if getattr(local, "busy", False):
            return
        local.busy = True
        self.inflight[threading.get_ident()] = time.monotonic_ns()
        try:
            self._leave(fn, frame, kind, value, exception)
        finally:
            del self.inflight[threading.get_ident()]
            local.busy = False

    def agent_thread(self):
        """Marks the calling thread as the agent's: its calls are never recorded."""
        self.local.busy = True

    def _leave(self, fn, frame, kind, value, exception):
        now = time.monotonic_ns()
        stack = self._stack()
        fid = id(frame)
        at = len(stack) - 1
        while at >= 0 and stack[at][0] != fid:
            at -= 1
        if at < 0:
            return  # its enter was not seen (traced while it ran, or skipped)
        del stack[at + 1:]  # calls whose exit was not seen (left by an exception)
        _, seq, t0, _ = stack.pop()
        if not seq:
            return
        ev = {"ev": "exit", "seq": next(self.seq), "parent": seq, "ts": now,
              "tid": self.local.tid, "thread": threading.current_thread().name,
              "fn": fn.name, "file": fn.file, "line": frame.f_lineno,
              "duration": now - t0}
        if fn.sampled:
            ev["sampled"] = True
        if kind == "yield":
            ev["suspended"] = True
        if kind in ("yield", "return"):
            ev["ret"] = preview.preview(value, self.depth)
            ev["retShort"] = preview.short(value)
        elif exception is not None:
            ev["exception"] = preview.exception_summary(exception)
        else:
            self.pending.setdefault(self.local.tid, []).append((ev, fid))
            return
        self.emit(ev)

    # ---- exceptions seen after the exit (setprofile) ------------------------------

    def catch_seen(self, exc, tb=None):
        """On this thread exc now reaches a caller, is handled or was not caught (tb:
        its traceback, when not yet in exc.__traceback__): pending exits whose frame
        is in that traceback get it, the others say unknown."""
        waiting = self.pending.pop(getattr(self.local, "tid", None), None)
        if not waiting:
            return
        frames = set()
        if tb is None:
            tb = getattr(exc, "__traceback__", None)
        while tb is not None:
            frames.add(id(tb.tb_frame))
            tb = tb.tb_next
        for ev, fid in waiting:
            if fid in frames:
                ev["exception"] = preview.exception_summary(exc)
            else:
                ev["exception"] = {"type": "unknown", "message": ""}
            self.emit(ev)

    def floor(self, now):
        """A time every event not yet emitted is stamped at or after: now, or the
        oldest exit held back, or the start of an event being made. Read it after
        taking the emitted events (channel.py)."""
        ts = [ev["ts"] for w in list(self.pending.values()) for ev, _ in w]
        ts.extend(list(self.inflight.values()))
        return min(ts + [now])

    def flush_pending(self):
        """Exits whose exception was never seen (the program ended): unknown."""
        for tid in list(self.pending):
            for ev, _ in self.pending.pop(tid, ()):
                ev["exception"] = {"type": "unknown", "message": ""}
                self.emit(ev)

    # ---- counts -----------------------------------------------------------------

    def counts(self):
        out = []
        for fn in sorted(self.functions.values(), key=lambda f: -f.calls):
            out.append({"function": fn.name, "calls": fn.calls, "recorded": fn.recorded,
                        "sampled": fn.sampled, "sampledSince": fn.sampled_since})
        return out
