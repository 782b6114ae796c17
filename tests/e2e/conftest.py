"""Shared harness of the Strobe end-to-end suite.

The suite drives the real binaries: `strobe daemon`, `strobe mcp` (the stdio proxy)
and `strobectl`, against the real fixture programs built by `make fixtures`.

Environment:
  STROBE_BUILD     build directory holding strobe, strobectl and fixtures/ (default:
                   build, relative to the repository root)
  STROBE_VALGRIND  when "1", every test's daemon runs under valgrind (see below)

Isolation: every test gets its own state directory (STROBE_HOME) under a fresh
tempfile.mkdtemp() directory, so each test talks to its own daemon. At teardown the
daemon of that directory is stopped (SIGTERM to the pid in $STROBE_HOME/strobe.pid,
then SIGKILL if it does not go) and the directory is removed.

Valgrind mode (STROBE_VALGRIND=1): the daemon is normally started by its clients, so
the harness starts it itself before the test, as
  valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
           --trace-children=no <strobe> daemon
with STROBE_HOME set, waits for the socket to accept, and at teardown stops it with
SIGTERM and asserts that valgrind did not exit with 99 and that its log says
"ERROR SUMMARY: 0 errors". Tests that kill the daemon, or that need to start it
themselves (lazy start, lock, idle shutdown, kill -9 recovery, stale socket), are
marked `manages_daemon` and skipped in valgrind mode, with the reason printed.

Waiting: tests never sleep to wait for something; they poll a condition with
wait_until(predicate, timeout) (e.g. until a session is no longer running, or until a
query returns N events). A timeout only gives up on a hang: no test asserts how long
something took or needs the machine to itself (TESTING.md, "Under load").
"""

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.path.join(REPO, os.environ.get("STROBE_BUILD", "build")))
STROBE_BIN = os.path.join(BUILD, "strobe")
STROBECTL = os.path.join(BUILD, "strobectl")
FIXTURES = os.path.join(BUILD, "fixtures")
VALGRIND = os.environ.get("STROBE_VALGRIND") == "1"
SANITIZED = BUILD.endswith("-san")  # the ASan+UBSan build (Makefile SAN=1)

# Timeouts are longer under valgrind, where the daemon runs 20-50x slower.
SLOW = 8.0 if VALGRIND else 1.0
T_SHORT = 10 * SLOW
T_LONG = 30 * SLOW

VALGRIND_SKIP_REASON = ("valgrind mode: the harness owns the daemon (it runs under "
                        "valgrind and must be stopped gracefully), so tests that kill "
                        "or start the daemon themselves are skipped")


def fixture_path(name):
    return os.path.join(FIXTURES, name)


_debug_traps = []


def debug_traps():
    """Whether this machine delivers x86 debug-register traps, by the fixture
    debug_traps (independent of the daemon's own probe): some hypervisors accept the
    registers and never raise them. Tests marked debug_traps need hits and are skipped
    where they cannot come; test_watch.py checks the daemon's WATCH_UNSUPPORTED then."""
    if not _debug_traps:
        rc = subprocess.run([fixture_path("debug_traps")], stdout=subprocess.DEVNULL,
                            timeout=30).returncode
        assert rc in (0, 3), "tests/fixtures/debug_traps.c failed (exit %d)" % rc
        _debug_traps.append(rc == 0)
    return _debug_traps[0]


NO_DEBUG_TRAPS_REASON = ("this machine never delivers x86 debug-register traps (a "
                         "hypervisor that accepts the registers and ignores them; "
                         "tests/fixtures/debug_traps.c): data watchpoints cannot hit here, "
                         "and test_watch.py checks the daemon says WATCH_UNSUPPORTED")


# --------------------------------------------------------------------------------
# polling helpers

class WaitTimeout(AssertionError):
    pass


def wait_until(predicate, timeout=None, interval=0.02, what=None):
    """Polls predicate() until it returns a truthy value, and returns that value.
    Raises WaitTimeout (an AssertionError) after timeout seconds. Exceptions from the
    predicate propagate."""
    if timeout is None:
        timeout = T_SHORT
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise WaitTimeout("timed out after %.1fs waiting for %s (last value: %r)"
                              % (timeout, what or getattr(predicate, "__name__", "condition"),
                                 last))
        time.sleep(interval)
        interval = min(interval * 1.5, 0.25)


def stays_true(predicate, duration, interval=0.1):
    """Checks that predicate() stays truthy for the whole duration (used to check that
    something does NOT happen, e.g. the daemon does not shut down while a session
    runs). Returns True, or False at the first falsy value."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(interval)
    return bool(predicate())


def _task_state(path):
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return None
    # state is the field after the ")" that ends the command name
    return stat[stat.rfind(")") + 2:].split(" ", 1)[0]


def pid_alive(pid):
    """True while any thread of pid exists and is not a zombie. (When a multithreaded
    process is killed, its main thread can be a zombie while the other threads still
    run and still hold its file descriptors open.)"""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for t in tasks:
        st = _task_state("/proc/%d/task/%s/stat" % (pid, t))
        if st is not None and st not in ("Z", "X"):
            return True
    return False


def read_pid_file(home):
    try:
        with open(os.path.join(home, "strobe.pid")) as f:
            txt = f.read().strip()
        return int(txt) if txt else None
    except (FileNotFoundError, ValueError):
        return None


def socket_answers(home):
    """True when the daemon's socket accepts a connection."""
    path = os.path.join(home, "strobe.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(1.0)
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def kill_pid(pid, sig=signal.SIGTERM, timeout=None):
    """Sends sig to pid and waits until it is gone; SIGKILL if it does not go."""
    if pid is None or not pid_alive(pid):
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    try:
        wait_until(lambda: not pid_alive(pid), timeout or T_SHORT, what="pid %d to exit" % pid)
    except WaitTimeout:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        wait_until(lambda: not pid_alive(pid), T_SHORT, what="pid %d to die" % pid)


def is_strobe_process(pid):
    """True when pid runs our strobe binary (a daemon of this suite)."""
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return False
    return os.path.realpath(exe.replace(" (deleted)", "")) == os.path.realpath(STROBE_BIN)


def is_fixture_process(pid):
    """True when pid runs one of our fixture binaries (so teardown may kill it)."""
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return False
    return exe.startswith(FIXTURES + os.sep)


# --------------------------------------------------------------------------------
# a test's world: state dir, project dir, daemon, clients

# STROBE_E2E_TRACE_MODE=int3 runs the whole suite with trace.mode "int3" (two stops
# per traced call instead of the in-process recorder, the default) in every test's
# own project, as the default of a test that sets nothing.
SUITE_SETTINGS = ({"trace.mode": os.environ["STROBE_E2E_TRACE_MODE"]}
                  if os.environ.get("STROBE_E2E_TRACE_MODE") else {})


class Env:
    """One test's isolated world. base/ holds home/ (STROBE_HOME, created by the
    daemon), project/ (a projectRoot) and logs/."""

    def __init__(self, extra_env=None):
        self.base = tempfile.mkdtemp(prefix="strobe-e2e-")
        self.home = os.path.join(self.base, "home")
        self.project = os.path.join(self.base, "project")
        self.logs = os.path.join(self.base, "logs")
        os.makedirs(self.project)
        os.makedirs(self.logs)
        if SUITE_SETTINGS:
            self.write_project_settings({})
        self.env = dict(os.environ)
        self.env["STROBE_HOME"] = self.home
        for k in ("STROBE_IDLE_TIMEOUT",):
            self.env.pop(k, None)
        if extra_env:
            self.env.update(extra_env)
        self.clients = []
        self.children = []       # Popen objects we own (daemons we started)
        self.daemon_pids = set()  # every daemon pid seen, stopped at teardown
        self.target_pids = set()  # pids of launched targets, killed at teardown
        self.valgrind_proc = None
        self.valgrind_log = None
        self._n = 0

    # ---- paths
    def path(self, name):
        return os.path.join(self.home, name)

    def sock_path(self):
        return self.path("strobe.sock")

    def daemon_pid(self):
        pid = read_pid_file(self.home)
        if pid:
            self.daemon_pids.add(pid)
        return pid

    def write_project_settings(self, settings, project=None):
        d = os.path.join(project or self.project, ".strobe")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "settings.json"), "w") as f:
            json.dump(dict(SUITE_SETTINGS, **settings), f)

    def next_log(self, what):
        self._n += 1
        return os.path.join(self.logs, "%s-%d.log" % (what, self._n))

    # ---- daemon
    def start_daemon(self, wait=True, extra_env=None):
        """Starts `strobe daemon` in the foreground as our child (not detached) and
        waits for its socket. Returns the Popen."""
        env = dict(self.env)
        if extra_env:
            env.update(extra_env)
        log = open(self.next_log("daemon-stderr"), "wb")
        p = subprocess.Popen([STROBE_BIN, "daemon"], env=env, stdin=subprocess.DEVNULL,
                             stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.children.append(p)
        if wait:
            wait_until(lambda: socket_answers(self.home) or (
                p.poll() is not None and p.returncode != 0), T_SHORT, what="the daemon socket")
            # (a daemon that forks itself into the background exits 0 here)
            assert p.poll() in (None, 0), "strobe daemon exited with %r" % p.returncode
            wait_until(self.daemon_pid, T_SHORT, what="strobe.pid")
        return p

    def start_valgrind_daemon(self):
        self.valgrind_log = os.path.join(self.logs, "valgrind.log")
        out = open(os.path.join(self.logs, "valgrind-daemon.out"), "wb")
        cmd = ["valgrind", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite", "--trace-children=no",
               "--log-file=" + self.valgrind_log, STROBE_BIN, "daemon"]
        p = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=out, start_new_session=True)
        out.close()
        self.valgrind_proc = p
        wait_until(lambda: socket_answers(self.home) or p.poll() is not None, 120,
                   what="the daemon (under valgrind) to accept")
        assert p.poll() is None, "daemon under valgrind exited early with %r:\n%s" % (
            p.returncode, self._read(self.valgrind_log))
        # strobe.pid comes after the socket answers
        wait_until(self.daemon_pid, T_SHORT, what="strobe.pid")
        return p

    def stop_valgrind_daemon(self):
        p = self.valgrind_proc
        self.valgrind_proc = None
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError("the daemon under valgrind did not exit within 120 s "
                                 "of SIGTERM")
        log = self._read(self.valgrind_log)
        assert rc != 99, "valgrind reported errors (exit 99):\n%s" % log[-6000:]
        assert "ERROR SUMMARY: 0 errors" in log, \
            "valgrind log has no 'ERROR SUMMARY: 0 errors':\n%s" % log[-6000:]
        assert rc == 0, "daemon under valgrind exited %r after SIGTERM\n%s" % (rc, log[-3000:])

    @staticmethod
    def _read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def daemon_log(self):
        return self._read(self.path("daemon.log"))

    # ---- clients
    def mcp(self, initialize=True, extra_env=None):
        c = McpClient(self, extra_env=extra_env)
        self.clients.append(c)
        if initialize:
            c.initialize()
        return c

    def raw(self):
        c = RawClient(self.sock_path())
        self.clients.append(c)
        return c

    def strobectl(self, *args, timeout=None, extra_env=None):
        env = dict(self.env)
        if extra_env:
            env.update(extra_env)
        p = subprocess.run([STROBECTL] + list(args), env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout or T_LONG)
        return CtlResult(p.returncode, p.stdout.decode("utf-8", "replace"),
                         p.stderr.decode("utf-8", "replace"), args)

    # ---- teardown
    def close(self):
        errors = []
        for c in self.clients:
            try:
                c.close()
            except Exception as e:  # noqa: BLE001 - teardown must go on
                errors.append(repr(e))
        if self.valgrind_proc is not None:
            try:
                self.stop_valgrind_daemon()
            except AssertionError as e:
                errors.append(str(e))
        pid = self.daemon_pid()
        for p in set(self.daemon_pids) | ({pid} if pid else set()):
            if is_strobe_process(p):
                kill_pid(p)
        for p in self.children:
            if p.poll() is None:
                p.kill()
            p.wait()
        for t in self.target_pids:
            if pid_alive(t) and is_fixture_process(t):
                try:
                    os.kill(t, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise AssertionError("teardown: " + "; ".join(errors))


class CtlResult:
    def __init__(self, rc, out, err, args):
        self.rc, self.out, self.err, self.args = rc, out, err, args

    def json(self):
        try:
            return json.loads(self.out)
        except ValueError as e:
            raise AssertionError("strobectl %s: stdout is not JSON (%s): %r / stderr %r"
                                 % (" ".join(self.args), e, self.out[:2000], self.err[:2000]))

    def __repr__(self):
        return "strobectl %s -> rc=%d\nstdout: %s\nstderr: %s" % (
            " ".join(self.args), self.rc, self.out[:3000], self.err[:3000])


# --------------------------------------------------------------------------------
# JSON-RPC clients

class RpcError(AssertionError):
    def __init__(self, error, response):
        super().__init__("JSON-RPC error %r" % (error,))
        self.error = error
        self.code = error.get("code")
        self.response = response


class ToolError(AssertionError):
    def __init__(self, result):
        err = (result.get("structuredContent") or {}).get("error") or {}
        super().__init__("tool error %s: %s" % (err.get("code"), err.get("message")))
        self.result = result
        self.code = err.get("code")
        self.message = err.get("message")


class _LineChannel:
    """Line-delimited JSON over a pair of byte streams, with a reader thread so reads
    can time out."""

    def __init__(self, reader, writer, name):
        self._w = writer
        self._q = queue.Queue()
        self._name = name
        self._next_id = 1000
        self._t = threading.Thread(target=self._pump, args=(reader,), daemon=True)
        self._t.start()

    def _pump(self, reader):
        try:
            for line in reader:
                self._q.put(line)
        except (OSError, ValueError):
            pass
        self._q.put(None)

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self._w(data)

    def send(self, obj):
        self.send_raw(json.dumps(obj, separators=(",", ":")) + "\n")

    def next_id(self):
        self._next_id += 1
        return self._next_id

    def read_line(self, timeout=None):
        """The next line as bytes (without \\n), or None at EOF. Raises on timeout."""
        try:
            line = self._q.get(timeout=timeout or T_LONG)
        except queue.Empty:
            raise AssertionError("%s: no line within %.1fs" % (self._name, timeout or T_LONG))
        if line is None:
            self._q.put(None)  # stay at EOF
            return None
        return line.rstrip(b"\n")

    def read_msg(self, timeout=None):
        line = self.read_line(timeout)
        if line is None:
            return None
        try:
            return json.loads(line)
        except ValueError:
            raise AssertionError("%s: not JSON: %r" % (self._name, line[:500]))

    def no_line_within(self, seconds):
        try:
            line = self._q.get(timeout=seconds)
        except queue.Empty:
            return True
        self._q.put(line)
        return False

    def request(self, method, params=None, id=None, timeout=None):
        """Sends a request and returns the whole response message with its id (other
        messages are skipped)."""
        if id is None:
            id = self.next_id()
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + (timeout or T_LONG)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: no response to %s (id %r)" % (self._name, method, id))
            resp = self.read_msg(left)
            if resp is None:
                raise AssertionError("%s: connection closed before the response to %s"
                                     % (self._name, method))
            if isinstance(resp, dict) and resp.get("id") == id and (
                    "result" in resp or "error" in resp):
                return resp

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def result(self, method, params=None, timeout=None):
        resp = self.request(method, params, timeout=timeout)
        if "error" in resp:
            raise RpcError(resp["error"], resp)
        return resp["result"]


class _ToolMixin:
    """MCP tool calls on top of a _LineChannel (`self.ch`)."""

    def initialize(self, version="2025-06-18"):
        r = self.ch.result("initialize", {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "strobe-e2e", "version": "1"},
        })
        self.ch.notify("notifications/initialized")
        self.init_result = r
        return r

    def call_tool_raw(self, name, arguments=None, timeout=None):
        """The tools/call result (a dict with content/structuredContent/isError), or
        raises RpcError for a JSON-RPC error."""
        params = {"name": name, "arguments": arguments if arguments is not None else {}}
        return self.ch.result("tools/call", params, timeout=timeout)

    def call_tool(self, name, arguments=None, timeout=None):
        """The structured result of a successful tool call; raises ToolError when the
        tool answers isError, RpcError for a JSON-RPC error. Checks the result shape
        of docs/PROTOCOL.md (structuredContent and its compact JSON in content[0])."""
        r = self.call_tool_raw(name, arguments, timeout)
        if r.get("isError"):
            check_tool_error_shape(r)
            raise ToolError(r)
        sc = r.get("structuredContent")
        assert isinstance(sc, dict), "no structuredContent in %r" % (r,)
        content = r.get("content")
        assert isinstance(content, list) and content and content[0].get("type") == "text", r
        assert json.loads(content[0]["text"]) == sc, \
            "content[0].text is not the JSON of structuredContent: %r" % (r,)
        return sc

    def tool_error(self, name, arguments=None, timeout=None):
        """Calls a tool that must fail; returns the ToolError (code, message)."""
        r = self.call_tool_raw(name, arguments, timeout)
        assert r.get("isError") is True, "%s(%r) should fail, got %r" % (name, arguments, r)
        check_tool_error_shape(r)
        return ToolError(r)

    # ---- tool shorthands
    def launch(self, fixture, project=None, args=None, env=None, cwd=None, **kw):
        """debug_launch of a fixture (name under build/fixtures, or a path)."""
        cmd = fixture if os.sep in fixture else fixture_path(fixture)
        a = {"command": cmd, "projectRoot": project or self.world.project}
        if args is not None:
            a["args"] = args
        if env is not None:
            a["env"] = env
        if cwd is not None:
            a["cwd"] = cwd
        a.update(kw)
        r = self.call_tool("debug_launch", a)
        if isinstance(r.get("pid"), int):
            self.world.target_pids.add(r["pid"])
        return r

    def status(self, sid):
        return self.call_tool("debug_session", {"action": "status", "sessionId": sid})

    def sessions(self):
        return self.call_tool("debug_session", {"action": "list"})["sessions"]

    def stop(self, sid, retain=None):
        a = {"action": "stop", "sessionId": sid}
        if retain is not None:
            a["retain"] = retain
        return self.call_tool("debug_session", a)

    def delete(self, sid):
        return self.call_tool("debug_session", {"action": "delete", "sessionId": sid})

    def query(self, sid, **kw):
        a = {"sessionId": sid}
        a.update(kw)
        return self.call_tool("debug_query", a)

    def wait_ended(self, sid, timeout=None):
        """Polls debug_session status until the session is no longer running; returns
        the status object."""
        def ended():
            st = self.status(sid)
            return st if st.get("status") != "running" else None
        return wait_until(ended, timeout or T_LONG, what="session %s to end" % sid)

    def wait_events(self, sid, n, timeout=None, **filters):
        """Polls debug_query until totalCount >= n; returns the last response."""
        def enough():
            q = self.query(sid, **filters)
            return q if q.get("totalCount", 0) >= n else None
        return wait_until(enough, timeout or T_LONG,
                          what="%d events %r in %s" % (n, filters, sid))

    def all_events(self, sid, **filters):
        """Every event matching filters, paging with limit 500/offset."""
        out = []
        offset = 0
        while True:
            q = self.query(sid, limit=500, offset=offset, **filters)
            out.extend(q["events"])
            if not q["hasMore"] or not q["events"]:
                return out
            offset += len(q["events"])


def check_tool_error_shape(r):
    """The tool-error shape of docs/PROTOCOL.md."""
    assert r.get("isError") is True, r
    sc = r.get("structuredContent")
    assert isinstance(sc, dict) and isinstance(sc.get("error"), dict), \
        "tool error without structuredContent.error: %r" % (r,)
    code = sc["error"].get("code")
    msg = sc["error"].get("message")
    assert isinstance(code, str) and code, r
    assert isinstance(msg, str) and msg, r
    content = r.get("content")
    assert isinstance(content, list) and content and content[0].get("type") == "text", r
    assert content[0]["text"].startswith(code + ": "), \
        "content text should start with '%s: ': %r" % (code, content[0]["text"])


class McpClient(_ToolMixin):
    """A `strobe mcp` subprocess spoken to over its stdio, line-delimited JSON-RPC."""

    def __init__(self, world, extra_env=None):
        self.world = world
        env = dict(world.env)
        if extra_env:
            env.update(extra_env)
        self.stderr_path = world.next_log("mcp-stderr")
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([STROBE_BIN, "mcp"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err,
                                     start_new_session=True)
        self._err.close()

        def write(data):
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        self.ch = _LineChannel(self.proc.stdout, write, "strobe mcp")

    def stderr(self):
        return Env._read(self.stderr_path)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.stdout.close()
        except OSError:
            pass


class RawClient(_ToolMixin):
    """A direct connection to the daemon's unix socket (no proxy)."""

    def __init__(self, path):
        self.world = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self._rfile = self.sock.makefile("rb")
        self.ch = _LineChannel(self._rfile, self.sock.sendall, "daemon socket")

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


# --------------------------------------------------------------------------------
# pytest fixtures

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "manages_daemon: the test starts, kills or waits for the daemon "
        "itself (skipped under STROBE_VALGRIND=1)")
    config.addinivalue_line(
        "markers", "valgrind_sample: of the sampled suites (SAMPLED_MODULES: debug_test, "
        "strobectl, REPL, timeline, fast path, errors, protocol, hardening, patterns, "
        "sessions, launch, breakpoints, crashes, memory, watches, traces, stacks, Python), "
        "whose tests differ in the framework or the front end far more than in the daemon "
        "code they reach, the ones the valgrind pass runs")
    config.addinivalue_line(
        "markers", "debug_traps: the test needs data watchpoint hits, which a machine "
        "that never delivers debug-register traps cannot give (skipped there)")
    config.addinivalue_line(
        "markers", "valgrind_costly: the test has millions of traced calls recorded "
        "and read back, minutes of a daemon under valgrind that the pass cannot spend "
        "(CI's 30 minutes); the normal and sanitizer passes run it (skipped under "
        "STROBE_VALGRIND=1)")


# Test modules whose tests the valgrind pass samples (the valgrind_sample marker): the
# daemon starts under valgrind for every test (~3 s) and runs 20-50x slower, so each
# test costs 8-15 s there, and the pass must keep CI under 30 minutes (it took 14.6
# of CI's 34 when 213 tests ran; scripts/run-e2e.sh lists where the time goes). A
# suite whose tests reach the same daemon code in many variations runs a
# representative few (the normal and sanitizer passes run them all):
#   - the debug_test suites and the REPL's: the same daemon code through many
#     frameworks or front-end commands; strobectl's: through another front end;
#   - the timeline suites (test_timeline_*): engine paths the trace suites run;
#   - the fast path's: the drain is the same in each test, and they load the machine;
#   - the suites of many small variations of one path (tool errors, protocol and
#     input hardening, the pattern table, session and launch life cycles);
#   - breakpoints, crashes, steps, polls, memory, data and trace watches: one test
#     per mechanism (a scenario, each kind of stop, fork, threads, C++ and Rust,
#     errors);
#   - the trace suites (values, runtime changes, threads), stacks and Python: one
#     test per kind of value, change, unwinding, wait and interpreter path.
# The suites run whole: retention, queries, the daemon's life cycle, code patching
# under threads (fewer rounds: test_patch_threads.py).
SAMPLED_MODULES = ("test_test_", "test_strobectl", "test_repl", "test_timeline_",
                   "test_fastpath", "test_errors", "test_protocol", "test_hardening",
                   "test_trace_patterns", "test_sessions", "test_launch_output",
                   "test_breakpoints", "test_crash", "test_stepping", "test_poll",
                   "test_memory", "test_trace_watches", "test_watch", "test_trace_values",
                   "test_trace_runtime", "test_trace_threads", "test_stacks", "test_python")


def pytest_collection_modifyitems(config, items):
    needs_traps = [i for i in items if "debug_traps" in i.keywords]
    if needs_traps and not debug_traps():
        for item in needs_traps:
            item.add_marker(pytest.mark.skip(reason=NO_DEBUG_TRAPS_REASON))
    if not VALGRIND:
        return
    skip = pytest.mark.skip(reason=VALGRIND_SKIP_REASON)
    costly = pytest.mark.skip(reason="valgrind mode: minutes of a daemon under valgrind; "
                              "the normal and sanitizer passes run it")
    # Each test costs a daemon start under valgrind (about 1 s): of a parametrized
    # test, the first case runs here and the normal and sanitizer passes run them all
    # (the cases differ in input, not in the daemon code they reach).
    other_case = pytest.mark.skip(reason="valgrind mode: one case of each parametrized "
                                  "test; the normal and sanitizer passes run every case")
    sampled = pytest.mark.skip(reason="valgrind mode: of the sampled suites "
                               "(SAMPLED_MODULES), the tests marked valgrind_sample run here "
                               "(the others differ in the framework or the front end, not "
                               "the daemon code); the normal and sanitizer passes run them all")
    no_daemon = pytest.mark.skip(reason="valgrind mode: strobe install never reaches the "
                                 "daemon")
    seen = set()
    for item in items:
        module = os.path.basename(str(item.fspath))
        if module.startswith("test_install"):
            item.add_marker(no_daemon)
        elif module.startswith(SAMPLED_MODULES) and "valgrind_sample" not in item.keywords:
            item.add_marker(sampled)
        elif "manages_daemon" in item.keywords:
            item.add_marker(skip)
        elif "valgrind_costly" in item.keywords:
            item.add_marker(costly)
        elif getattr(item, "callspec", None) is not None:
            key = (item.fspath, item.originalname)
            if key in seen:
                item.add_marker(other_case)
            seen.add(key)


@pytest.fixture(scope="session", autouse=True)
def _binaries_exist():
    missing = [p for p in (STROBE_BIN, STROBECTL, fixture_path("hello_exit3"))
               if not os.access(p, os.X_OK)]
    if missing:
        pytest.exit("missing binaries: %s (run make all fixtures, or set STROBE_BUILD)"
                    % ", ".join(missing), returncode=2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test (rep_setup, rep_call): the world's
    teardown reads whether the test failed."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


DAEMON_LOG_TAIL = 120  # lines of a failed test's daemon log shown with the failure


@pytest.fixture
def world(request):
    """An isolated STROBE_HOME. In valgrind mode the daemon is started under valgrind
    before the test (except for manages_daemon tests, which are skipped). When the
    test failed, the end of its daemon's log goes to the report (captured stderr of
    the teardown) before the directory is removed: a failure on a loaded CI machine
    can then be read afterwards."""
    w = Env()
    try:
        if VALGRIND and "manages_daemon" not in request.keywords:
            w.start_valgrind_daemon()
        yield w
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            lines = w.daemon_log().splitlines()[-DAEMON_LOG_TAIL:]
            sys.stderr.write("---- the last %d lines of %s ----\n%s\n"
                             % (len(lines), w.path("daemon.log"), "\n".join(lines)))
        w.close()


@pytest.fixture
def mcp(world):
    """An initialized `strobe mcp` client (which starts the daemon when needed)."""
    c = world.mcp()
    c.world = world
    return c


@pytest.fixture
def daemon(world):
    """A running daemon for raw-socket tests; returns the world."""
    if not socket_answers(world.home):
        world.start_daemon()
    return world


@pytest.fixture
def raw(daemon):
    c = daemon.raw()
    c.world = daemon
    return c


# --------------------------------------------------------------------------------
# helpers of the function-tracing tests (test_trace_*.py)

def wait_stable(value, quiet, timeout=None, what=None):
    """Polls value() until it returns the same value for `quiet` seconds in a row (e.g.
    an event count that must stop growing) and returns that value. Raises WaitTimeout
    when it keeps changing for timeout seconds."""
    timeout = timeout or T_LONG
    deadline = time.monotonic() + timeout
    last = value()
    since = time.monotonic()
    while True:
        time.sleep(0.1)
        now = value()
        t = time.monotonic()
        if now != last:
            last, since = now, t
        elif t - since >= quiet:
            return last
        if t >= deadline:
            raise WaitTimeout("timed out after %.1fs waiting for %s to stay stable for "
                              "%.1fs (last value: %r)" % (timeout, what or "a value",
                                                           quiet, last))


# --------------------------------------------------------------------------------
# helpers of the debug_test tests (test_test_*.py, test_strobectl_test.py)

# The stuck detector's promise (docs/PROTOCOL.md, "Stuck detection"): once a run has
# been silent 6 s its stacks are sampled every 2 s; a deadlock is called at the 2nd
# identical sample (8 s of silence), a busy loop at the 3rd (10 s).
STUCK_VERDICTS = {"Deadlock": (2, 8), "Infinite loop": (3, 10)}


def check_stuck_verdict(stuck, kind):
    """stuck (a result's stuck entry) is a verdict of kind, as the detector reports it:
    decided no earlier than the sample the promise says, after at least the silence it
    says (the silence the detector measured). Returns that silence in seconds. On a
    quiet machine the verdict comes at that sample; on a busy one a spinning test gets
    part of a CPU (52% beside two CPU-bound processes) and the detector, which wants a
    loop's samples to agree, decides later: the count is a lower bound here, and the
    time to a verdict is bench/bench_test.c's to measure. The wall time of the whole
    run is not the promise either: it adds the framework's start and whatever else the
    machine runs."""
    samples, silence = STUCK_VERDICTS[kind]
    d = stuck["diagnosis"]
    m = re.match(r"^%s: \d+%% CPU, identical stacks across (\d+) samples 2 s apart, no "
                 r"output for (\d+) s" % kind, d)
    assert m, "not a %s verdict: %r" % (kind, d)
    assert int(m.group(1)) >= samples and int(m.group(2)) >= silence, d
    return int(m.group(2))
