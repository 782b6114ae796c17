"""The Python agent (python/agent/_strobe_agent) inside real interpreters.

Each test plays the daemon's part: it makes the 0600 socket, starts a real Python
(Debian's python3.11, and pyenv's 3.9, 3.12 and 3.13 where installed) that loads
the agent the way the daemon's injected string does, runs a fixture program as
__main__, and checks what comes down the channel. Run by `make check`
(scripts/run-agent-tests.sh) with STROBE_AGENT_DIR naming the built agent.
"""
import glob
import json
import os
import queue
import socket
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
AGENT = os.environ.get("STROBE_AGENT_DIR", os.path.join(REPO, "python", "agent"))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "python")
PRICING = os.path.join(FIXTURES, "shop", "pricing.py")
TIMEOUT = 120


def interpreters():
    found = ["/usr/bin/python3.11"]
    for v in ("3.9", "3.12", "3.13"):
        found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (v, v))))[-1:]
    return [p for p in found if os.access(p, os.X_OK)]


def loader(sock, token, root, patterns, bps_file=""):
    """What the daemon injects: load the package from its directory without touching
    sys.path, then start it."""
    body = ("import importlib.util as u, sys\n"
            "d = %r\n"
            "s = u.spec_from_file_location('_strobe_agent', d + '/_strobe_agent/__init__.py',"
            " submodule_search_locations=[d + '/_strobe_agent'])\n"
            "m = u.module_from_spec(s)\n"
            "sys.modules['_strobe_agent'] = m\n"
            "s.loader.exec_module(m)\n"
            "m.start(%r, %r, %r, %r, bps_file=%r)\n") % (AGENT, sock, token, root,
                                                        list(patterns), bps_file)
    return "exec(%r, {})" % body


class Daemon:
    """The daemon's side of one agent: a socket, the lines, the commands."""

    def __init__(self, tmp_path, python, patterns, args=(), root=FIXTURES, script=PRICING,
                 bps=None):
        self.path = str(tmp_path / "agent.sock")
        self.bps_file = ""
        if bps is not None:  # as python_start_bps writes them
            self.bps_file = str(tmp_path / "agent.bps.json")
            with open(self.bps_file, "w") as f:
                json.dump(bps, f)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        os.chmod(self.path, 0o600)
        self.server.listen(1)
        self.server.settimeout(TIMEOUT)
        prog = (loader(self.path, "tok123", root, patterns, self.bps_file) +
                "\nimport runpy, sys\nsys.argv = %r\nrunpy.run_path(%r, run_name='__main__')\n"
                % ([script] + list(args), script))
        self.proc = subprocess.Popen([python, "-c", prog], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root)
        self.conn, _ = self.server.accept()
        self.conn.settimeout(TIMEOUT)
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.hello = self.line()["hello"]
        self.events = []
        self.batches = []
        self.final = None
        self.pauses = []
        self.pauses_read = 0
        self.next_id = 1

    def _read(self):
        """Reads the channel as the daemon does, whatever the test waits for: an
        agent never blocks on a full socket."""
        for raw in self.conn.makefile("rb"):
            raw.decode("ascii")  # the channel is ASCII JSON
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def line(self):
        msg = self.lines.get(timeout=TIMEOUT)
        assert msg is not None, "the agent closed its channel (exit status %r); stderr: %r" % (
            self.proc.poll(), self.proc.stderr.read() if self.proc.poll() is not None else "")
        return msg

    def command(self, op, **fields):
        mid = self.next_id
        self.next_id += 1
        self.conn.sendall((json.dumps(dict(fields, op=op, id=mid)) + "\n").encode())
        while True:
            msg = self.line()
            if msg.get("reply") == mid:
                return msg
            self.take(msg)

    def take(self, msg):
        if "pause" in msg:
            self.pauses.append(msg["pause"])
            return
        if "counts" in msg:
            self.final = msg
            return
        # the floor promise: no event sent later is older
        for floor, _ in self.batches:
            assert all(e["ts"] >= floor for e in msg["events"]), (floor, msg)
        self.batches.append((msg["floor"], msg["events"]))
        self.events.extend(msg["events"])

    def next_pause(self):
        """The next pause message not yet returned (one may have come while a
        command waited for its reply), reading the channel for it."""
        while len(self.pauses) == self.pauses_read:
            self.take(self.line())
        self.pauses_read += 1
        return self.pauses[self.pauses_read - 1]

    def go(self):
        """Lets a program waiting for a line of stdin ("wait") go on."""
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()

    def finish(self):
        """Lets a waiting program go on, reads every message until it ends; returns
        its stdout."""
        out, err = self.proc.communicate(b"go\n", timeout=TIMEOUT)
        assert self.proc.returncode == 0, err
        while True:
            msg = self.lines.get(timeout=TIMEOUT)
            if msg is None:
                break
            self.take(msg)
        return out.decode()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.conn.close()
        self.server.close()


@pytest.fixture(params=interpreters(), ids=lambda p: os.path.basename(p))
def python(request):
    return request.param


def run(tmp_path, python, patterns, args=()):
    d = Daemon(tmp_path, python, patterns, args)
    try:
        out = d.finish()
    finally:
        d.close()
    return d, out


def calls(events, name, ev="enter"):
    return [e for e in events if e["ev"] == ev and e["fn"] == name]


def args(e):
    return {a["name"]: a["value"] for a in e["args"]}


def test_hello_says_who_it_is(tmp_path, python):
    d, out = run(tmp_path, python, [])
    assert d.hello["token"] == "tok123" and d.hello["pid"] == d.proc.pid
    assert d.hello["implementation"] == "cpython"
    ver = tuple(int(x) for x in d.hello["version"].split(".")[:2])
    assert d.hello["hooks"] == ("sys.monitoring" if ver >= (3, 12) else "setprofile")
    assert d.hello["argv"][0] == "-c"
    assert out.endswith("done\n") and d.events == []


def test_calls_with_arguments_returns_and_parents(tmp_path, python):
    d, out = run(tmp_path, python, ["shop.pricing.discount", "shop.pricing.Cart.total"])
    assert "total 54.0" in out
    ev = d.events
    totals = calls(ev, "shop.pricing.Cart.total")
    assert [args(e)["rate"] for e in totals] == [0.1, 0.25, 0.5]
    cart = args(totals[0])["self"]
    assert cart["@type"] == "Cart" and cart["items"] == [10, 20, 30], cart
    assert cart["owner"] == {"name": "ann", "tags": ["a", "b"]}, cart
    disc = calls(ev, "shop.pricing.discount")
    assert len(disc) == 9
    assert args(disc[0]) == {"price": 10, "rate": 0.1}
    # the generator expression between them is not traced: total is the parent
    assert [e["parent"] for e in disc[:3]] == [totals[0]["seq"]] * 3
    exits = {e["parent"]: e for e in calls(ev, "shop.pricing.discount", "exit")}
    assert exits[disc[0]["seq"]]["ret"] == 9.0
    assert exits[disc[0]["seq"]]["duration"] >= 0
    assert disc[0]["file"] == PRICING and disc[0]["line"] > 0
    assert disc[0]["thread"] == "MainThread" and disc[0]["tid"] == d.proc.pid
    assert len(d.batches) >= 1
    seqs = [e["seq"] for e in ev]
    assert len(set(seqs)) == len(seqs)


def test_a_generator_suspends_and_resumes(tmp_path, python):
    d, _ = run(tmp_path, python, ["shop.pricing.countdown"])
    seen = [(e["ev"], e.get("resumed", False), e.get("suspended", False), e.get("ret"))
            for e in d.events]
    assert seen == [("enter", False, False, None), ("exit", False, True, 3),
                    ("enter", True, False, None), ("exit", False, True, 2),
                    ("enter", True, False, None), ("exit", False, True, 1),
                    ("enter", True, False, None), ("exit", False, False, None)], seen


def test_an_exception_leaving_a_function_is_on_its_exit(tmp_path, python):
    d, _ = run(tmp_path, python, ["shop.pricing.check"])
    exits = calls(d.events, "shop.pricing.check", "exit")
    assert [x.get("ret") for x in exits[:3]] == [0.1, 0.25, 0.5]
    assert exits[3]["exception"] == {"type": "ValueError", "message": "rate 2 above 1"}
    assert "ret" not in exits[3]


def test_threads_are_named_and_counted(tmp_path, python):
    d = Daemon(tmp_path, python, ["shop.pricing.worker", "shop.pricing.discount"], ["4"])
    try:
        d.finish()
    finally:
        d.close()
    work = calls(d.events, "shop.pricing.worker")
    assert sorted(e["thread"] for e in work) == ["w0", "w1", "w2", "w3"]
    assert len({e["tid"] for e in work}) == 4
    for w in work:
        mine = [e for e in calls(d.events, "shop.pricing.discount") if e["parent"] == w["seq"]]
        assert len(mine) == 5 and all(e["tid"] == w["tid"] for e in mine)


def test_threads_running_before_the_patterns_are_traced(tmp_path, python):
    """Four threads already wait inside worker() when the patterns arrive: their
    calls of discount() are recorded (3.11 and older: the profile function is given
    to every existing thread; 3.12 and newer: sys.monitoring is global)."""
    d = Daemon(tmp_path, python, [], ["4", "wait"])
    try:
        d.command("patterns", patterns=["shop.pricing.discount"])
        d.finish()
    finally:
        d.close()
    disc = [e for e in calls(d.events, "shop.pricing.discount") if e["thread"] != "MainThread"]
    assert sorted({e["thread"] for e in disc}) == ["w0", "w1", "w2", "w3"]
    assert len(disc) == 20
    assert all(e["parent"] == 0 for e in disc)  # worker() began before it was traced


def test_patterns_answer_from_the_source(tmp_path, python):
    d = Daemon(tmp_path, python, [], ["wait"])
    try:
        r = d.command("patterns", patterns=["shop.pricing.Cart.*", "@file:pricing.py",
                                             "shop.pricing.dicsount", "shop.**.check"])
    finally:
        d.close()
    res = {x["pattern"]: x for x in r["results"]}
    assert sorted(f["name"] for f in res["shop.pricing.Cart.*"]["functions"]) == [
        "shop.pricing.Cart.__init__", "shop.pricing.Cart.total"]
    assert res["@file:pricing.py"]["matched"] == 7
    assert res["shop.pricing.dicsount"]["matched"] == 0
    assert res["shop.pricing.dicsount"]["near"][0] == "shop.pricing.discount"
    assert res["shop.**.check"]["matched"] == 1


def test_counts_are_exact_when_calls_are_sampled(tmp_path, python):
    """Two threads call discount 5 times each, the carts 9 times, a loop 100,000
    times: past 3 calls at more than 1 a second, a function records 64 calls a
    second, and every call is counted in the final counts sent at exit."""
    d = Daemon(tmp_path, python, [], ["2", "spin=100000", "wait"])
    try:
        d.command("patterns", patterns=["shop.pricing.discount"], sampleAfter=3,
                  hotCallsPerSecond=1)
        d.finish()
    finally:
        d.close()
    enters = calls(d.events, "shop.pricing.discount")
    final = {c["function"]: c for c in d.final["counts"]}["shop.pricing.discount"]
    assert final["calls"] == 100019 and final["sampled"] is True, final
    assert final["recorded"] == len(enters) < 100019, (final, len(enters))
    assert not any(e.get("sampled") for e in enters[:3])
    assert all(e.get("sampled") for e in enters[4:])
    exits = calls(d.events, "shop.pricing.discount", "exit")
    assert sorted(x["parent"] for x in exits) == sorted(e["seq"] for e in enters)


def test_a_fork_without_exec_leaves_the_parents_channel_whole(tmp_path, python):
    """The child of a fork shares the socket: it stops tracing and sends nothing,
    even at its exit, and the parent's stream and counts go on untouched."""
    d = Daemon(tmp_path, python, ["forker.work"], script=os.path.join(FIXTURES, "forker.py"))
    try:
        out = d.finish()
    finally:
        d.close()
    assert out == "child 29\nparent 25\n", out
    enters = calls(d.events, "forker.work")
    assert [args(e)["n"] for e in enters] == [1, 5], enters
    assert {e["tid"] for e in enters} == {d.proc.pid}
    final = {c["function"]: c for c in d.final["counts"]}
    assert final["forker.work"]["calls"] == 2, final


def test_stacks_show_python_frames_and_who_holds_each_lock(tmp_path, python):
    """Two threads deadlocked on two threading.Locks: each waits on the lock the
    other is inside the `with` of; the main thread waits in join."""
    import time
    d = Daemon(tmp_path, python, [], script=os.path.join(FIXTURES, "deadlock.py"))
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            th = {t["name"]: t for t in d.command("stacks", locals=True)["threads"]}
            waits = [(th.get(n) or {}).get("wait") or {} for n in ("left", "right")]
            if all(w.get("kind") == "lock" for w in waits):
                break
            assert time.monotonic() < deadline, th
            time.sleep(0.05)
    finally:
        d.close()
    left, right = th["left"], th["right"]
    assert left["wait"]["variable"] == "audit_lock", left
    assert left["wait"]["owner"] == right["tid"], (left, right)
    assert right["wait"]["variable"] == "accounts_lock", right
    assert right["wait"]["owner"] == left["tid"], (left, right)
    assert left["frames"][0]["function"] == "deadlock.transfer"
    assert left["frames"][left["ownFrame"]]["line"] == 15  # with audit_lock:
    assert th["MainThread"]["wait"]["kind"] == "join", th["MainThread"]
    agents = sorted(n for n in th if n.startswith("strobe-agent"))
    assert agents == ["strobe-agent-reader", "strobe-agent-writer"], th
    assert all(th[n]["agent"] and th[n]["frames"] == [] for n in agents)


def line_of(path, text):
    with open(path) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


DISCOUNT_BODY = line_of(PRICING, "return round(price")
TOTAL_BODY = line_of(PRICING, "return sum(discount")


def test_a_breakpoint_pauses_reads_the_frame_and_steps(tmp_path, python):
    """pricing.py:DISCOUNT_BODY with a condition: the thread pauses there with the
    frame's names readable and writable; over, out and continue act as pdb's."""
    d = Daemon(tmp_path, python, [], args=["wait"])
    try:
        assert d.line()["events"] == [] or True
        b = d.command("break", spec={"id": 7, "file": "shop/pricing.py", "line": DISCOUNT_BODY,
                                     "condition": "price == 20"})["breakpoint"]
        assert b["line"] == DISCOUNT_BODY and b["file"] == os.path.realpath(PRICING), b
        d.go()
        p = d.next_pause()
        assert p["reason"] == "breakpoint" and p["breakpointId"] == 7, p
        assert p["function"] == "shop.pricing.discount" and p["line"] == DISCOUNT_BODY, p
        assert p["tid"] == d.proc.pid
        assert [x["tid"] for x in d.command("pauses")["pauses"]] == [p["tid"]]
        r = d.command("memory", tid=p["tid"], frame=0, targets=["price", "rate", "price * 2"],
                      values=None)["results"]
        assert [x["value"] for x in r] == [20, 0.1, 40], r
        assert r[0]["type"] == "int"
        up = d.command("memory", tid=p["tid"], frame=2, targets=["self.items"], values=None)
        assert up["results"][0]["value"] == [10, 20, 30], up  # Cart.total, past the genexpr
        w = d.command("memory", tid=p["tid"], frame=0, targets=["price"], values=[30])
        assert w["results"][0]["old"] == 20 and w["results"][0]["value"] == 30, w
        bad = d.command("memory", tid=p["tid"], frame=0, targets=["print(1)", "nope"],
                        values=None)["results"]
        assert "Call" in bad[0]["error"] and bad[1]["error"].startswith("NameError"), bad
        th = {t["tid"]: t for t in d.command("stacks", locals=True)["threads"]}
        me = th[p["tid"]]
        assert me["paused"] and me["frames"][0]["function"] == "shop.pricing.discount", me
        assert {v["name"] for v in me["locals"]} == {"price", "rate"}, me
        # with arguments: each frame of the project's code has its parameters, and the
        # innermost's locals are its other names
        th = {t["tid"]: t for t in d.command("stacks", locals=True, arguments=True)["threads"]}
        me = th[p["tid"]]
        assert [(a["name"], a["value"]) for a in me["frames"][0]["arguments"]] == \
            [("price", 30), ("rate", 0.1)], me
        assert me["locals"] == [], me
        total = next(f for f in me["frames"] if f["function"] == "shop.pricing.Cart.total")
        assert [a["name"] for a in total["arguments"]] == ["self", "rate"], total
        # out: back in the generator expression of Cart.total, with the value returned
        d.command("resume", tid=p["tid"], how="out")
        p = d.next_pause()
        assert p["reason"] == "step" and p["function"] == "shop.pricing.Cart.total.<locals>.<genexpr>" \
            or p["function"].endswith("<genexpr>"), p
        assert p["returnValue"] == 27.0, p  # 30 written in, at rate 0.1
        d.command("unbreak", bp=7)
        d.command("resume", tid=p["tid"], how="continue")
        out = d.finish()
    finally:
        d.close()
    assert "total 63.0" in out, out  # 9 + 27 (the written price) + 27


def test_breakpoints_given_at_the_start_hold_from_the_first_line(tmp_path, python):
    """The daemon's file of breakpoints for a process: read and removed at the start,
    set before the program's first line; one for a file the program does not have is
    listed with why, and can be removed."""
    bps = [{"id": 3, "file": "shop/pricing.py", "line": DISCOUNT_BODY,
            "condition": "price == 20 and rate == 0.25"},
           {"id": 4, "file": "nosuch.py", "line": 1, "message": "x"}]
    d = Daemon(tmp_path, python, [], bps=bps)
    try:
        p = d.next_pause()  # the program did not wait: only the start could set it
        assert p["breakpointId"] == 3 and p["function"] == "shop.pricing.discount", p
        assert not os.path.exists(d.bps_file)
        listed = {b["id"]: b for b in d.command("breakpoints")["breakpoints"]}
        assert listed[3]["hits"] == 1 and listed[3]["nLocations"] == 1, listed
        assert listed[4]["nLocations"] == 0 and listed[4]["logpoint"], listed
        assert listed[4]["note"].startswith(
            "not set in this Python process (pid %d): FILE_NOT_FOUND: nosuch.py is not a file"
            % d.proc.pid), listed
        d.command("unbreak", bp=4)
        assert [b["id"] for b in d.command("breakpoints")["breakpoints"]] == [3]
        d.command("resume", tid=p["tid"], how="continue")
        out = d.finish()
    finally:
        d.close()
    assert out.splitlines()[:3] == ["total 54.0", "total 45.0", "total 30.0"], out


def test_step_over_and_into_follow_pdb(tmp_path, python):
    d = Daemon(tmp_path, python, [], args=["wait"])
    try:
        d.command("break", spec={"id": 1, "file": PRICING, "line": TOTAL_BODY, "oneShot": True})
        d.go()
        p = d.next_pause()
        assert p["line"] == TOTAL_BODY and p["function"] == "shop.pricing.Cart.total", p
        d.command("resume", tid=p["tid"], how="into")  # into the generator expression
        p = d.next_pause()
        assert p["reason"] == "step" and p["function"].endswith("<genexpr>"), p
        d.command("resume", tid=p["tid"], how="into")  # into discount()
        p = d.next_pause()
        assert p["function"] == "shop.pricing.discount" and p["line"] == DISCOUNT_BODY, p
        d.command("resume", tid=p["tid"], how="over")  # returns: the caller's next line
        p = d.next_pause()
        assert p["reason"] == "step" and p["function"].endswith("<genexpr>"), p
        assert d.command("breakpoints")["breakpoints"] == []  # one-shot: gone
        d.command("resume", tid=p["tid"], how="continue")
        out = d.finish()
    finally:
        d.close()
    assert "total 54.0" in out, out


def test_function_breakpoints_logpoints_and_hit_counts(tmp_path, python):
    """A function breakpoint stops once per call, at its first line; a logpoint
    formats its {expressions} into an event and runs on; hitCount skips hits."""
    d = Daemon(tmp_path, python, [], args=["wait"])
    try:
        lp = d.command("break", spec={"id": 3, "file": "pricing.py", "line": DISCOUNT_BODY,
                                      "message": "p={price} r={rate} bad={nope}"})["breakpoint"]
        assert lp["logpoint"] is True
        b = d.command("break", spec={"id": 4, "function": "shop.pricing.check",
                                     "hitCount": 2})["breakpoint"]
        assert b["locations"][0]["line"] == line_of(PRICING, "def check("), b
        d.go()
        p = d.next_pause()
        assert p["breakpointId"] == 4 and p["function"] == "shop.pricing.check", p
        r = d.command("memory", tid=p["tid"], frame=0, targets=["rate"], values=None)
        assert r["results"][0]["value"] == 0.25, r  # the second call: hitCount 2
        info = {x["id"]: x for x in d.command("breakpoints")["breakpoints"]}
        assert info[4]["hits"] == 1 and info[4]["traps"] == 2, info[4]
        d.command("unbreak", bp=4)
        d.command("resume", tid=0, how="continue")
        out = d.finish()
    finally:
        d.close()
    logs = [e for e in d.events if e["ev"] == "logpoint"]
    assert len(logs) >= 9 and logs[0]["text"].startswith("p=10 r=0.1 bad=<NameError"), logs[:2]
    assert logs[0]["breakpointId"] == 3 and logs[0]["line"] == DISCOUNT_BODY
    assert "done" in out


def test_breakpoint_errors_speak_python(tmp_path, python):
    d = Daemon(tmp_path, python, [], args=["wait"])
    try:
        def err(**spec):
            r = d.command("break", spec=dict(spec, id=9))
            assert "error" in r, r
            return r["error"]
        assert "not a file of the program" in err(file="nosuch.py", line=3)
        assert "give more of its path" in err(file="__init__.py", line=1)  # shop/ and pkg/
        assert "SyntaxError" in err(file="pricing.py", line=DISCOUNT_BODY, condition="price ==")
        assert "column" in err(file="pricing.py", line=DISCOUNT_BODY, condition="price ==")
        assert "has no code at or after line 999" in err(file="pricing.py", line=999)
        blank = line_of(PRICING, "import threading") + 1
        moved = d.command("break", spec={"id": 10, "file": "pricing.py", "line": blank})
        moved = moved["breakpoint"]
        assert moved["line"] > blank and "has no code" in moved["note"], moved
        r = d.command("resume", tid=12345, how="over")
        assert "not paused" in r["error"] and r["code"] == "THREAD_NOT_PAUSED", r
        d.command("unbreak", bp=10)
        d.go()
        out = d.finish()
    finally:
        d.close()
    assert "done" in out


def test_a_pause_asked_stops_a_running_thread(tmp_path, python):
    """worker.py loops (a call and a 10 ms sleep at a time): a pause stops it at the
    next line it runs; writing main's `end` in its frame ends the loop."""
    d = Daemon(tmp_path, python, [], args=["600"], script=os.path.join(FIXTURES, "worker.py"))
    try:
        assert d.proc.stdout.readline() == b"ready\n"
        assert d.proc.stdout.readline() == b"tick 100\n"  # in the loop: `end` is set
        assert d.command("pause")["paused"] == 1
        p = d.next_pause()
        assert p["reason"] == "pause" and p["tid"] == d.proc.pid, p
        frames = d.command("stacks")["threads"]
        [me] = [t for t in frames if t["tid"] == p["tid"]]
        depth = [f["function"] for f in me["frames"]].index("worker.main")
        r = d.command("memory", tid=p["tid"], frame=depth, targets=["end", "i >= 0"],
                      values=None)["results"]
        assert r[0]["type"] == "float" and r[1]["value"] is True, r
        w = d.command("memory", tid=p["tid"], frame=depth, targets=["end"], values=[0])
        assert w["results"][0]["value"] == 0, w
        d.command("resume", tid=0, how="continue")
        out = d.finish()
    finally:
        d.close()
    assert out.endswith("done\n"), out
