"""channel.py - the agent's one line to the daemon: a Unix socket, JSON lines.

The daemon made the socket (0600, in $STROBE_HOME, which is 0700) and checks that
the peer is the session's process and sends the session's token first.

Out (agent -> daemon), one JSON object per line, ASCII only:
  {"hello": {"token", "pid", "version", "implementation", "hooks", "argv", "cwd"}}
  {"events": [event...], "floor": NS}   a batch; every later event has ts >= floor
  {"reply": ID, ...}                    the answer to a command
  {"counts": [...], "final": true}      every traced function's exact counts, last,
                                        as the interpreter exits
  {"crash": {ts, tid, thread, fn, file, line, text, data}}
                                        an uncaught exception (crash.py)
Events are the recorder's dicts (recorder.py): "ev" is "enter" or "exit".

In (daemon -> agent): {"op": NAME, "id": ID, ...}; handlers are registered with
on(NAME, fn) and return the reply's fields (a dict), or raise: the reply is then
{"reply": ID, "error": "ExcType: message"}, or {"reply": ID, "error": message,
"code": CODE} for an exception with a code (breaks.Refused).
A thread stopped at a breakpoint or step sends (breaks.py), after the events before it:
  {"pause": {tid, pid, seq, reason, breakpointId, thread, function, file, line, ts,
             returnValue?}}
and a logpoint's message is an event: {"ev": "logpoint", text, breakpointId, ...}.

Events are batched: a program thread only appends to a list. The writer thread
sends the batch every FLUSH_S seconds, or at once when BATCH events are waiting.
"""

import json
import os
import socket
import sys
import threading
import time

FLUSH_S = 0.01
BATCH = 512
HANDLING_WAIT_S = 2.0  # the interpreter's exit waits this long for a command's reply


class Channel:
    def __init__(self, path, token, rec, hello):
        self.rec = rec
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = []
        self.wake = threading.Event()
        self.closed = False
        self.handlers = {}
        self.send_lock = threading.Lock()
        self.handling = threading.Lock()
        hello = dict(hello, token=token, pid=os.getpid())
        self._send_line({"hello": hello})

    def on(self, op, fn):
        self.handlers[op] = fn

    def start(self):
        self.idents = set()
        for target, name in ((self._writer, "strobe-agent-writer"),
                             (self._reader, "strobe-agent-reader")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self.idents.add(t.ident)

    # ---- out --------------------------------------------------------------------

    def emit(self, ev):
        if self.closed:
            return
        buf = self.buf
        buf.append(ev)
        if len(buf) >= BATCH:
            self.wake.set()

    def _send_line(self, obj):
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii")
        with self.send_lock:
            self.sock.sendall(data)

    def send(self, obj):
        """Sends one message now (from an agent thread or at exit)."""
        try:
            self._send_line(obj)
        except OSError:
            self.closed = True

    def flush(self):
        now = time.monotonic_ns()
        batch, self.buf = self.buf, []
        floor = self.rec.floor(now)
        if batch or floor != getattr(self, "last_floor", None):
            self.last_floor = floor
            self._send_line({"events": batch, "floor": floor})

    def _writer(self):
        self.rec.agent_thread()
        while not self.closed:
            self.wake.wait(FLUSH_S)
            self.wake.clear()
            try:
                self.flush()
            except OSError:
                self.closed = True

    # ---- in ---------------------------------------------------------------------

    def _reader(self):
        self.rec.agent_thread()
        f = self.sock.makefile("rb")
        for line in f:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.handle(msg)
        self.closed = True

    def handle(self, msg):
        """Runs a command and sends its reply, holding `handling`: a command that
        lets the program go on (resume) has its reply out before the interpreter's
        exit closes the channel (close() waits for it)."""
        with self.handling:
            self._handle(msg)

    def _handle(self, msg):
        op, mid = msg.get("op"), msg.get("id")
        fn = self.handlers.get(op)
        try:
            if fn is None:
                raise ValueError("unknown op %r" % op)
            reply = fn(msg) or {}
        except Exception as e:  # the daemon hears every failure, the program none
            code = getattr(e, "code", None)
            reply = {"error": str(e) if code else "%s: %s" % (type(e).__name__, e)}
            if code:
                reply["code"] = code
        reply["reply"] = mid
        try:
            self.flush()  # events made by the command come before its reply
            self._send_line(reply)
        except OSError:
            self.closed = True

    def abandon(self):
        """In a forked child: drops this process's copy of the socket, sending
        nothing and leaving the parent's connection open (no shutdown)."""
        self.closed = True
        self.buf = []
        self.sock.close()

    def close(self):
        got = self.handling.acquire(timeout=HANDLING_WAIT_S)
        self.closed = True
        if got:
            self.handling.release()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def version():
    v = sys.version_info
    return "%d.%d.%d" % (v[0], v[1], v[2])
