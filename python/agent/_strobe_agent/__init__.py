"""_strobe_agent - what runs inside a traced Python program (docs/PYTHON.md).

The daemon loads this package into the target (an injected PyRun_SimpleString at
Py_RunMain's entry, or Py_AddPendingCall in a running interpreter) and calls
start(SOCKET, TOKEN, ROOT). From then on the agent:

- records the calls of the functions the daemon's patterns select (recorder.py),
  through sys.monitoring or sys.setprofile (hooks.py);
- sends them, batched, on the channel (channel.py), and answers the daemon's
  commands there: "patterns", "counts", "stacks", and breaks.py's "break",
  "unbreak", "breakpoints", "pauses", "pause", "resume", "memory";
- reports an uncaught exception, in any thread, as a crash (crash.py);
- stops threads at breakpoints, steps them and reads their frames (breaks.py).

Nothing of the program's environment changes: no sys.path entry, no
environment variable, no sys.settrace. The agent's threads are named
"strobe-agent-*" and are never traced. One addition: faulthandler is enabled (if
the program did not) so that a native crash shows its Python stack on stderr.

To add a command: write a handler taking the message and returning the reply's
fields, register it in _Agent.__init__ with channel.on(), and document it in
channel.py's message list.
"""

import atexit
import os
import sys

from . import breaks as _breaks
from . import channel as _channel
from . import crash as _crash
from . import hooks as _hooks
from . import names as _names
from . import recorder as _recorder
from . import stacks as _stacks

SUPPORTED = (3, 9)
_agent = None


class _Agent:
    def __init__(self, path, token, root):
        here = os.path.dirname(os.path.abspath(__file__))
        self.rec = _recorder.Recorder(self._emit, root)
        self.rec.skip_dirs = (here + os.sep,)
        self.hooks = _hooks.for_this_interpreter(self.rec)
        self.chan = _channel.Channel(path, token, self.rec, {
            "version": _channel.version(),
            "implementation": sys.implementation.name,
            "hooks": self.hooks.name,
            "argv": list(sys.argv),
            "cwd": os.getcwd(),
        })
        self.chan.on("patterns", self.patterns)
        self.chan.on("counts", self.counts)
        self.chan.on("stacks", self.stacks)
        self.dbg = _breaks.Debugger(self.rec, root, self._send_after_events, here + os.sep)
        self.dbg.closed = lambda: self.chan.closed
        for op in ("break", "unbreak", "breakpoints", "pauses", "pause", "resume", "memory"):
            self.chan.on(op, getattr(self, "cmd_" + op))
        self.installed = False
        self.forked = False
        _crash.install(self._crashed, root, lambda: self.rec.depth)
        os.register_at_fork(after_in_child=self._forked)

    def _emit(self, ev):
        self.chan.emit(ev)

    def _forked(self):
        """A fork that did not exec (multiprocessing's "fork"): the child shares the
        parent's socket, and its writer thread did not survive. It stops tracing and
        lets go of its copy of the socket without a word on it, so the parent's
        stream stays whole. (A child that execs Python is adopted on its own.)"""
        self.forked = True
        if self.installed:
            self.hooks.uninstall()
            self.installed = False
        self.rec.set_patterns([])
        self.chan.abandon()

    def _send_after_events(self, msg):
        """msg now, after every event made before it (a crash, a pause)."""
        if self.forked:
            return
        self.rec.flush_pending()
        self.chan.flush()
        self.chan.send(msg)

    def _crashed(self, report):
        """An uncaught exception: the events before it go first, then the report,
        now (the interpreter may end right after)."""
        self._send_after_events({"crash": report})

    def patterns(self, msg):
        """{"patterns": [...], "depth": N}: the patterns in force now; answers what
        each matches in the project's source (ast), with near names for none."""
        rec = self.rec
        if "depth" in msg:
            rec.depth = int(msg["depth"])
        for k, attr in (("sampleAfter", "sample_after"), ("hotCallsPerSecond", "hot_per_second")):
            if k in msg:
                setattr(rec, attr, int(msg[k]))
        texts = list(msg.get("patterns", []))
        rec.set_patterns(texts)
        self.hooks.patterns_changed()
        if texts and not self.installed:
            self.hooks.install()
            self.installed = True
        elif not texts and self.installed:  # nothing traced: no hook costs anything
            self.hooks.uninstall()
            self.installed = False
        return {"results": self.resolve(texts)}

    def resolve(self, texts):
        root = self.rec.root
        known = []
        for path in _names.project_files(root) if root else []:
            mod = _names.module_name(path, root, None)
            known.extend((n, path, line) for n, line in _names.source_functions(path, mod))
        out = []
        for t in texts:
            p = _names.Pattern(t)
            hit = [(n, path, line) for n, path, line in known if p.matches(n, path, root)]
            r = {"pattern": t, "matched": len(hit),
                 "functions": [{"name": n, "file": path, "line": line}
                               for n, path, line in hit[:8]]}
            if not hit:
                r["near"] = _names.suggest(t, [n for n, _, _ in known])
            out.append(r)
        return out

    def stacks(self, msg):
        """{"locals": bool, "arguments": bool}: every thread's Python stack now
        (stacks.py)."""
        return _stacks.snapshot(self.rec.root, self.rec.depth, bool(msg.get("locals")),
                                self.chan.idents, self.dbg.skip_dir,
                                self.dbg.paused_frames(), bool(msg.get("arguments")))

    def counts(self, msg):
        return {"counts": self.rec.counts()}

    # ---- breakpoints, pauses, steps, memory (breaks.py) ----------------------------

    def cmd_break(self, msg):
        """{"spec": {id, file?, line?, function?, condition?, message?, hitCount?,
        oneShot?, allStop?, hitLimit?}}: the breakpoint's info."""
        return {"breakpoint": self.dbg.set(msg["spec"])}

    def cmd_unbreak(self, msg):
        self.dbg.clear(msg["bp"])
        return {}

    def cmd_breakpoints(self, msg):
        return {"breakpoints": self.dbg.infos()}

    def cmd_pauses(self, msg):
        return {"pauses": self.dbg.pauses()}

    def cmd_pause(self, msg):
        return {"paused": self.dbg.ask_pause()}

    def cmd_resume(self, msg):
        """{"tid": T (0: every paused thread), "how": continue | over | into | out}."""
        return {"resumed": self.dbg.resume(int(msg.get("tid") or 0), msg.get("how", "continue"))}

    def cmd_memory(self, msg):
        """{"tid", "frame", "targets": [expr], "values": [json] | null, "depth"}."""
        return {"results": self.dbg.memory(int(msg.get("tid") or 0), int(msg.get("frame") or 0),
                                           list(msg["targets"]), msg.get("values"),
                                           int(msg.get("depth") or self.rec.depth))}

    def at_exit(self):
        """The interpreter is ending: the last events go out now, from this thread
        (the writer is a daemon thread, stopped without a word at exit). A program
        that ends by os._exit() or a signal loses its last FLUSH_S of events."""
        if self.forked:
            return
        self.rec.agent_thread()
        self.rec.flush_pending()
        self.chan.flush()
        self.chan.send({"counts": self.rec.counts(), "final": True})
        self.chan.close()


def start(path, token, root, patterns=(), depth=3, sample_after=1000, hot_per_second=10000,
          bps_file=""):
    """Connects to the daemon and arms the given patterns and the breakpoints of
    bps_file (a JSON list of "break" specs the daemon wrote for this process; read
    and removed here) before returning, so a launch's staged patterns and
    breakpoints hold from the program's first line. depth is the previews'
    (debug_trace serializationDepth); sample_after and hot_per_second are
    trace.sampleAfter and trace.hotCallsPerSecond."""
    global _agent
    if sys.version_info[:2] < SUPPORTED:
        raise RuntimeError("Python %d.%d is too old: strobe traces CPython 3.9 or newer"
                           % sys.version_info[:2])
    _agent = _Agent(path, token, os.path.abspath(root) if root else None)
    _agent.patterns({"patterns": list(patterns), "depth": depth,
                     "sampleAfter": sample_after, "hotCallsPerSecond": hot_per_second})
    _agent.chan.start()
    _agent.dbg.idents = _agent.chan.idents
    _python_stack_on_fatal_signals()
    if bps_file:
        _agent.dbg.set_first(_read_once(bps_file))
    atexit.register(_agent.at_exit)
    return _agent


def _python_stack_on_fatal_signals():
    """A native crash (a C extension's) gets its Python stack: faulthandler prints
    every thread's on stderr when a fatal signal arrives, after the daemon recorded
    the native crash, which the daemon then joins to it (core/crash_payload.h,
    "python"). A program that enabled faulthandler itself keeps its own settings."""
    import faulthandler
    try:
        if not faulthandler.is_enabled():
            faulthandler.enable(all_threads=True)
    except (AttributeError, RuntimeError, ValueError, OSError):
        pass  # no usable stderr (sys.stderr None or closed): no Python stack then


def _read_once(path):
    """The JSON list in path, which is removed: it was written for this start."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.unlink(path)
