"""Python programs through MCP: CPython processes adopted at Py_RunMain, their
functions traced by qualified name (docs/PYTHON.md).

Fixtures: tests/fixtures/python/shop/pricing.py (carts, a generator, an exception
with a cause, worker threads), worker.py (a loop for run-time changes). They run
on Debian's /usr/bin/python3.11, and on pyenv's shim when the machine has one.
"""
import glob
import json
import os
import re

import pytest

from bp_util import bp_add, bp_add_error, bp_list, bp_remove, cont, mem_read, mem_write, \
    until_bp, vars_of, wait_text
from conftest import REPO, wait_until

PY = "/usr/bin/python3.11"
ROOT = os.path.join(REPO, "tests", "fixtures", "python")
SHIM = os.path.expanduser("~/.pyenv/shims/python3")


def args_of(e):
    return {a["name"]: a["value"] for a in e["arguments"]}


def launch(mcp, script, args=(), command=PY, **kw):
    return mcp.launch(command, project=ROOT, cwd=ROOT, args=[script] + list(args), **kw)


@pytest.mark.valgrind_sample
def test_staged_patterns_trace_a_python_program_from_its_first_line(mcp):
    mcp.call_tool("debug_trace", {"add": ["shop.pricing.discount", "shop.pricing.Cart.total"]})
    r = launch(mcp, "shop/pricing.py")
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    ev = mcp.all_events(sid, verbose=True)
    enters = [e for e in ev if e["eventType"] == "function_enter"]
    disc = [e for e in enters if e["function"] == "shop.pricing.discount"]
    totals = [e for e in enters if e["function"] == "shop.pricing.Cart.total"]
    assert len(disc) == 9 and len(totals) == 3
    assert args_of(disc[0]) == {"price": 10, "rate": 0.1}
    cart = args_of(totals[0])["self"]
    assert cart["@type"] == "Cart" and cart["items"] == [10, 20, 30], cart
    assert disc[0]["parentEventId"] == totals[0]["id"]
    assert disc[0]["sourceFile"].endswith("tests/fixtures/python/shop/pricing.py")
    assert disc[0]["pid"] == r["pid"]
    exits = {e["parentEventId"]: e for e in ev if e["eventType"] == "function_exit"}
    assert exits[totals[0]["id"]]["returnValue"] == 54.0
    # one timeline: the first total's line comes after its call returned
    texts = [(e["id"], e.get("text")) for e in ev if e["eventType"] == "stdout"]
    first = next(i for i, t in texts if t == "total 54.0")
    assert int(exits[totals[0]["id"]]["id"]) < int(first)


def test_patterns_added_and_removed_while_python_runs(mcp):
    r = launch(mcp, "worker.py")
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["worker.tick", "worker.tikc"]})
    res = {p["pattern"]: p for p in t["patterns"]}
    assert res["worker.tick"]["matched"] == 1 and "warning" not in res["worker.tick"], t
    assert "worker.tick" in res["worker.tikc"]["warning"], t
    assert "matches no Python function" in res["worker.tikc"]["warning"], t
    q = mcp.wait_events(sid, 5, eventType="function_enter", verbose=True)
    nums = [args_of(e)["i"] for e in q["events"]]
    assert nums == list(range(nums[0], nums[0] + len(nums))), nums
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["worker.tick", "worker.tikc"],
                                  "add": ["worker.report"]})
    q = mcp.wait_events(sid, 2, eventType="function_enter", function={"equals": "worker.report"},
                        verbose=True)
    assert isinstance(args_of(q["events"][0])["totals"], dict)
    ticks = mcp.query(sid, function={"equals": "worker.tick"}, eventType="function_enter")
    n = ticks["totalCount"]
    mcp.wait_events(sid, 4, eventType="function_enter", function={"equals": "worker.report"})
    assert mcp.query(sid, function={"equals": "worker.tick"},
                     eventType="function_enter")["totalCount"] == n  # removed: no more
    # exact counts from the agent, kept after the pattern went: every call recorded
    top = {f["function"]: f for f in mcp.status(sid)["topFunctions"]}
    assert top["worker.tick"]["calls"] == n and "recorded" not in top["worker.tick"], top
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_an_exception_and_a_generator_in_the_timeline(mcp):
    mcp.call_tool("debug_trace", {"add": ["shop.pricing.check", "shop.pricing.countdown"]})
    sid = launch(mcp, "shop/pricing.py")["sessionId"]
    mcp.wait_ended(sid)
    exits = mcp.all_events(sid, eventType="function_exit", verbose=True)
    check = [e for e in exits if e["function"] == "shop.pricing.check"]
    assert check[-1]["exception"] == {"type": "ValueError", "message": "rate 2 above 1"}, \
        check[-1]
    gen = [e for e in exits if e["function"] == "shop.pricing.countdown"]
    assert [e.get("suspended", False) for e in gen] == [True, True, True, False]


@pytest.mark.skipif(not os.access(SHIM, os.X_OK), reason="no pyenv shim on this machine")
def test_through_the_pyenv_shim(mcp):
    """python3 from PATH is a shell script that execs pyenv's interpreter, which
    links libpython3.X.so: followed through the exec, adopted all the same."""
    mcp.call_tool("debug_trace", {"add": ["shop.pricing.discount"]})
    sid = launch(mcp, "shop/pricing.py", command=SHIM)["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    disc = mcp.all_events(sid, eventType="function_enter", function={"equals": "shop.pricing.discount"})
    assert len(disc) == 9


@pytest.mark.valgrind_sample
def test_an_uncaught_exception_is_a_crash_with_its_cause_and_locals(mcp):
    r = launch(mcp, "boom.py", ["thread"])
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 1, st
    crashes = mcp.all_events(sid, eventType="crash", verbose=True)
    assert len(crashes) == 2, crashes
    worker, main = crashes
    assert worker["threadName"] == "divider"
    assert worker["exception"]["type"] == "ZeroDivisionError", worker
    assert main["kind"] == "uncaught_exception", main
    assert main["exception"] == {"type": "ValueError", "message": "no setting 'timeout'"}
    assert main["causes"] == [{"type": "KeyError", "message": "'timeout'",
                               "relation": "cause"}], main
    frame = main["frames"][main["crashFrame"]]
    assert frame["function"] == "boom.parse" and frame["file"].endswith("boom.py"), frame
    assert main["function"] == "boom.parse" and main["line"] == frame["line"]
    loc = {v["name"]: v["value"] for v in main["locals"]}
    assert loc["key"] == "timeout" and loc["limit"] == 3 and loc["config"] == {"retries": 2}
    assert [f["function"] for f in main["frames"]][-2:] == ["boom.main", "boom.<module>"]
    # Python's own traceback still reaches stderr, after the report
    err = [e["text"] for e in mcp.all_events(sid, eventType="stderr")]
    assert "ValueError: no setting 'timeout'" in err


@pytest.mark.valgrind_sample
def test_strobectl_runs_a_script_where_the_caller_is_and_shows_its_crash(mcp):
    """strobectl launch /usr/bin/python3.11 tests/fixtures/python/boom.py from the
    repository: the relative path is the caller's (not /usr/bin's), and `crash`
    prints the exception, its cause and the frame's locals. The project root is the
    caller's directory too, so the module is named from there."""
    w = mcp.world
    r = w.strobectl("launch", PY, os.path.relpath(os.path.join(ROOT, "boom.py"), os.getcwd()))
    assert r.rc == 0, r
    sid = r.out.split()[1]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 1, st
    c = w.strobectl("crash", sid)
    assert c.rc == 0, c
    assert "uncaught exception: ValueError" in c.out, c
    assert "caused by: KeyError: 'timeout'" in c.out, c
    assert "#0  tests.fixtures.python.boom.parse" in c.out, c
    assert 'key = "timeout"' in c.out, c


def test_a_module_run_with_dash_m_and_its_python_child(mcp):
    """python3 -m pkg.main, which runs child.py in a child interpreter: both
    processes are adopted, each with the session's patterns."""
    mcp.call_tool("debug_trace", {"add": ["pkg.main.double", "child.greet"]})
    r = mcp.launch(PY, project=ROOT, cwd=ROOT, args=["-m", "pkg.main"])
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert out == ["sum 12", "child said hello a hello b"], out
    enters = mcp.all_events(sid, eventType="function_enter", verbose=True)
    doubles = [e for e in enters if e["function"] == "pkg.main.double"]
    greets = [e for e in enters if e["function"] == "child.greet"]
    assert [args_of(e)["x"] for e in doubles] == [1, 2, 3]
    assert [args_of(e)["name"] for e in greets] == ["a", "b"]
    assert doubles[0]["pid"] == r["pid"] and greets[0]["pid"] != r["pid"]


def test_a_python_too_old_is_said(mcp):
    """Python 3.8 has Py_RunMain, so its processes are adopted, and the agent says
    it is too old (3.7 and older have no Py_RunMain: they run as native code)."""
    exe = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8.*/bin/python3.8")))
    if not exe:
        pytest.skip("no Python 3.8 on this machine")
    mcp.call_tool("debug_trace", {"add": ["worker.tick"]})
    sid = launch(mcp, "worker.py", command=exe[-1])["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    too_old = "Python 3.8 is too old: strobe traces CPython 3.9 or newer"

    def said():
        t = mcp.call_tool("debug_trace", {"sessionId": sid})
        return t if any(too_old in w for w in t["warnings"]) else None
    t = wait_until(said, what="the agent's word that 3.8 is too old")
    assert too_old in t["patterns"][0]["warning"], t
    assert mcp.query(sid, eventType="function_enter")["totalCount"] == 0
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_stacks_of_a_python_deadlock_name_the_locks(mcp):
    """Two Python threads deadlocked on two threading.Locks: debug_session stacks
    shows their Python frames (not the interpreter's C frames), the lock each waits
    for by its Python name and which thread holds it, and the diagnosis says
    deadlock."""
    r = launch(mcp, "deadlock.py")
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")

    def waiting():
        res = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid,
                                              "locals": True})
        th = {t["name"]: t for t in res["threads"]}
        ok = all((th.get(n) or {}).get("wait", {}).get("kind") == "mutex"
                 for n in ("left", "right"))
        return (res, th) if ok and "diagnosis" in res else None
    res, th = wait_until(waiting, what="both Python threads waiting on a lock")
    left, right = th["left"], th["right"]
    assert left["wait"]["variable"] == "audit_lock", left
    assert left["wait"]["ownerTid"] == right["tid"], (left, right)
    assert right["wait"]["variable"] == "accounts_lock", right
    assert left["frames"][0].startswith("deadlock.transfer (deadlock.py:15)"), left
    assert res["diagnosis"].startswith("deadlock: "), res["diagnosis"]
    assert "audit_lock" in res["diagnosis"] and "accounts_lock" in res["diagnosis"]
    assert "(left)" in res["diagnosis"] and "(right)" in res["diagnosis"]
    # the main thread joins; the agent's own threads are not the program's
    assert sorted(th) == ["MainThread", "left", "right"], sorted(th)
    assert th["MainThread"]["frames"][-1].startswith("deadlock.<module> (deadlock.py:31)")
    mcp.stop(sid)


def line_in(script, text):
    with open(os.path.join(ROOT, script)) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def test_a_python_breakpoint_pauses_steps_reads_and_writes_the_frame(mcp):
    """worker.py's loop: a conditional breakpoint in tick() pauses the main thread
    with its Python frames and locals; step-out comes back to main with the value
    tick returned; a write to main's `end` ends the loop; the pause is an event."""
    r = launch(mcp, "worker.py")
    sid, pid = r["sessionId"], r["pid"]
    wait_text(mcp, sid, "stdout", r"^ready$")
    # the status names the language the process runs
    [rt] = mcp.status(sid)["runtimes"]
    assert re.fullmatch(r"Python 3\.11\.\d+ process %d: nothing traced\." % pid, rt), rt
    tick = line_in("worker.py", "return i % 7")
    [bp] = bp_add(mcp, sid, {"file": "worker.py", "line": tick,
                             "condition": "i % 50 == 3 and i > 0"})["breakpoints"]
    assert bp["line"] == tick and bp["condition"] == "i % 50 == 3 and i > 0", bp
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["reason"] == "breakpoint", a
    assert a["function"] == "worker.tick" and a["line"] == tick and a["threadId"] == pid, a
    assert [f["function"] for f in a["frames"][:2]] == ["worker.tick", "worker.main"], a
    assert vars_of(a, "locals") == {}, a  # tick's only name is its parameter
    i = vars_of(a, "arguments")["i"]
    assert i % 50 == 3, a
    res = mem_read(mcp, sid, "i", "i % 7", "nope")
    assert [(x["target"], x.get("value")) for x in res[:2]] == [("i", i), ("i % 7", i % 7)]
    assert res[2]["error"]["code"] == "VARIABLE_NOT_FOUND", res
    s = cont(mcp, sid, "step-out")
    assert s["reason"] == "step" and s["function"] == "worker.main", s
    assert s["returnValue"] == i % 7, s
    w = mem_write(mcp, sid, [("end", 0)])
    assert w[0]["value"] == 0, w
    bp_remove(mcp, sid, [bp["id"]])
    assert bp_list(mcp, sid) == []
    cont(mcp, sid, timeoutMs=100)
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    pauses = mcp.query(sid, eventType="pause", verbose=True)["events"]
    assert [p.get("reason") for p in pauses] == ["breakpoint", "step"], pauses[0]
    assert pauses[0]["text"].startswith("thread %d paused at worker.py:%d" % (pid, tick))


def test_python_logpoints_and_breakpoint_errors(mcp):
    r = launch(mcp, "worker.py")
    sid = r["sessionId"]
    wait_text(mcp, sid, "stdout", r"^ready$")
    report = line_in("worker.py", "return sum(totals.values())")
    [lp] = bp_add(mcp, sid, {"file": "worker.py", "line": report,
                             "message": "totals={totals} bad={nope}"})["breakpoints"]
    assert lp["kind"] == "logpoint", lp
    q = mcp.wait_events(sid, 3, eventType="logpoint", verbose=True)
    first = q["events"][0]
    assert first["text"].startswith("totals=") and "bad=<NameError" in first["text"], first
    assert first["function"] == "worker.report" and first["line"] == report, first
    e = bp_add_error(mcp, sid, {"file": "nosuch.py", "line": 3})
    assert e.code == "FILE_NOT_FOUND" and "not a file of the program" in e.message, e
    e = bp_add_error(mcp, sid, {"file": "worker.py", "line": report, "condition": "i ==="})
    assert e.code == "BAD_EXPRESSION" and "SyntaxError" in e.message, e
    e = bp_add_error(mcp, sid, {"file": "worker.py", "line": 999})
    assert e.code == "LINE_NOT_FOUND", e
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_staged_python_breakpoints_hold_from_the_first_line(mcp):
    """A breakpoint staged before the launch stops a short program at its first
    hit: it waits in the session (pending) until the Python process runs, which
    sets it before the program's first line."""
    hit = line_in("shop/pricing.py", "return round(price")
    [bp] = bp_add(mcp, None, {"file": "shop/pricing.py", "line": hit,
                              "condition": "rate == 0.25 and price == 20"})["breakpoints"]
    try:
        r = launch(mcp, "shop/pricing.py")
        sid = r["sessionId"]
        assert [b["id"] for b in r["breakpoints"]] == [bp["id"]], r
        a = until_bp(mcp, sid, bp["id"])
        assert a["reason"] == "breakpoint" and a["function"] == "shop.pricing.discount", a
        assert a["line"] == hit and vars_of(a, "arguments") == {"price": 20, "rate": 0.25}, a
        [b] = bp_list(mcp, sid)
        assert b["hits"] == 1 and not b.get("pending") and b["locations"] == 1, b
        cont(mcp, sid, timeoutMs=100)
        st = mcp.wait_ended(sid)
        assert st["exitCode"] == 0, st
        out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
        assert out[:3] == ["total 54.0", "total 45.0", "total 30.0"], out
    finally:
        mcp.call_tool("debug_breakpoint", {"remove": "*"})


def test_staged_python_breakpoints_reach_a_child_interpreter(mcp):
    """python3 -m pkg.main runs child.py in a second interpreter: the staged
    breakpoint is set in each Python process as it starts and stops the child."""
    hit = line_in("child.py", 'return "hello "')
    [bp] = bp_add(mcp, None, {"file": "child.py", "line": hit,
                              "condition": "name == 'b'"})["breakpoints"]
    try:
        r = mcp.launch(PY, project=ROOT, cwd=ROOT, args=["-m", "pkg.main"])
        sid = r["sessionId"]
        a = until_bp(mcp, sid, bp["id"])
        assert a["function"] == "child.greet" and vars_of(a, "arguments") == {"name": "b"}, a
        assert a["threadId"] != r["pid"], a
        cont(mcp, sid, timeoutMs=100)
        st = mcp.wait_ended(sid)
        assert st["exitCode"] == 0, st
        out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
        assert out == ["sum 12", "child said hello a hello b"], out
    finally:
        mcp.call_tool("debug_breakpoint", {"remove": "*"})


def test_a_python_breakpoint_set_before_python_runs_is_pending(mcp, tmp_path):
    """A shell that execs Python once told to: a breakpoint in the Python code set
    while only the shell runs is pending (said), then set as the interpreter starts
    and hit; one in a file the program does not have is listed with why."""
    go = tmp_path / "go"
    script = "while [ ! -e '%s' ]; do sleep 0.05; done; exec %s shop/pricing.py" % (go, PY)
    r = mcp.launch("/bin/sh", project=ROOT, cwd=ROOT, args=["-c", script])
    sid = r["sessionId"]
    hit = line_in("shop/pricing.py", "return round(price")
    [bp, nowhere] = bp_add(mcp, sid, {"file": "shop/pricing.py", "line": hit},
                           {"file": "/nonexistent/x.py", "line": 3})["breakpoints"]
    for b in (bp, nowhere):
        assert b["pending"] is True and b["locations"] == 0, b
        assert "no Python (CPython 3.9 or newer) process of this session runs now" in b["note"]
    go.write_text("")
    a = until_bp(mcp, sid, bp["id"])
    assert a["function"] == "shop.pricing.discount", a
    assert vars_of(a, "arguments") == {"price": 10, "rate": 0.1}, a
    listed = {b["id"]: b for b in bp_list(mcp, sid)}
    assert listed[bp["id"]]["hits"] == 1 and not listed[bp["id"]].get("pending"), listed
    n = listed[nowhere["id"]]
    assert not n.get("pending") and n["locations"] == 0, n
    assert n["note"].startswith("not set in this Python process (pid %d): FILE_NOT_FOUND"
                                % a["threadId"]), n
    bp_remove(mcp, sid, [bp["id"], nowhere["id"]])
    assert bp_list(mcp, sid) == []
    cont(mcp, sid, timeoutMs=100)
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st


def test_the_repl_debugs_python_as_gdb_does(world):
    """strobectl repl on a Python program: break FILE:LINE if COND, run, bt, print an
    expression, info args and locals, next, finish with the value returned."""
    from repl_util import Repl
    hit = line_in("shop/pricing.py", "return round(price")
    r = Repl(world, PY, "shop/pricing.py", cwd=ROOT)
    out = r.cmd("break shop/pricing.py:%d if rate == 0.25" % hit)
    assert "Breakpoint 1: file shop/pricing.py, line %d." % hit in out, out
    out = r.cmd("run")
    assert "total 54.0" in out, out
    assert "Breakpoint 1, shop.pricing.discount (price=10, rate=0.25) at pricing.py:%d\n%d\t" \
        "    return round(price * (1 - rate), 2)" % (hit, hit) in out, out
    out = r.cmd("bt")
    assert "\n#0  shop.pricing.discount (price=10, rate=0.25) at pricing.py:%d\n" \
        "#1  shop.pricing.Cart.total.<genexpr> () at pricing.py:" % hit in out, out
    assert "$1 = 7.5" in r.cmd("print price * (1 - rate)")
    out = r.cmd("print round(price)")  # a call could change the program
    assert "BAD_EXPRESSION" in out and "In Python code" in out, out
    assert "No locals." in r.cmd("info locals")
    assert r.cmd("info args").split()[-6:] == ["price", "=", "10", "rate", "=", "0.25"]
    out = r.cmd("finish")
    assert "Run till exit from #0  shop.pricing.discount (price=10, rate=0.25)" in out, out
    assert "Value returned is $2 = 7.5" in out, out
    total = line_in("shop/pricing.py", "return sum(discount(p, rate)")
    r.cmd("delete 1")
    out = r.cmd("next")  # over the next discount() call, to the same line's next element
    assert "\n%d\t        return sum(discount(p, rate) for p in self.items)" % total in out, out
    out = r.cmd("continue")
    assert "total 45.0" in out and "exited normally" in out, out
    assert r.quit() == 0


def test_a_python_target_killed_while_paused(mcp):
    """The program dies while a thread is paused at a breakpoint: the session says how
    it ended, and continuing is PROCESS_EXITED with what to do next."""
    import signal
    from bp_util import cont_error
    r = launch(mcp, "worker.py")
    sid, pid = r["sessionId"], r["pid"]
    wait_text(mcp, sid, "stdout", r"^ready$")
    tick = line_in("worker.py", "return i % 7")
    [bp] = bp_add(mcp, sid, {"file": "worker.py", "line": tick})["breakpoints"]
    assert until_bp(mcp, sid, bp["id"])["state"] == "paused"
    os.kill(pid, signal.SIGKILL)
    st = mcp.wait_ended(sid)
    assert st["status"] == "crashed" and st["signal"] == "SIGKILL", st
    e = cont_error(mcp, sid)
    assert e.code == "PROCESS_EXITED" and "debug_launch it again" in e.message, e


@pytest.mark.valgrind_sample
def test_a_native_crash_in_an_extension_shows_both_stacks(mcp):
    """ctypes reads address 0: SIGSEGV in libc's strlen under _ctypes. The crash event
    has the native frames and, from what faulthandler printed after the signal, the
    Python stack that called it; strobectl crash prints both."""
    r = launch(mcp, "native_crash.py")
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "crashed" and st["signal"] == "SIGSEGV", st
    [c] = mcp.query(sid, eventType="crash", verbose=True)["events"]
    native = [f.get("function") for f in c["frames"]]
    assert "string_at" in native[:3] and "_ctypes_callproc" in native, native
    py = c["python"]
    assert py["error"] == "Segmentation fault", py
    assert [(f["function"], os.path.basename(f["file"]), f["line"]) for f in py["frames"]][1:] \
        == [("read_record", "native_crash.py", 7), ("main", "native_crash.py", 12),
            ("<module>", "native_crash.py", 15)], py
    assert py["frames"][0]["function"] == "string_at", py  # ctypes' own Python code
    out = mcp.world.strobectl("crash", sid).out
    assert "Python stack (innermost first):\n  #0  string_at at __init__.py:" in out, out
    assert "  #1  read_record at native_crash.py:7\n" in out, out
    assert "__strlen" in out and "_ctypes_callproc" in out, out


def test_until_a_python_predicate(mcp):
    """debug_continue until {memory: "..."} over a Python program's globals: the
    condition is Python (not C), evaluated in __main__ while the program runs; one
    that neither C nor Python can read says Python's reason."""
    from bp_util import cont_error
    r = launch(mcp, "worker.py")
    sid = r["sessionId"]
    wait_text(mcp, sid, "stdout", r"^ready$")
    a = cont(mcp, sid, "until", condition={"memory": "progress >= 30 and progress % 2 == 0"},
             timeoutMs=60000)
    assert a["conditionMet"] is True and a["state"] == "running", a
    assert a["values"] == "progress >= 30 and progress % 2 == 0=true", a
    e = cont_error(mcp, sid, "until", condition={"memory": "no_such_name > 3 and True"})
    assert e.code in ("VARIABLE_NOT_FOUND", "BAD_EXPRESSION"), e
    assert "NameError" in e.message and "no_such_name" in e.message, e
    mcp.stop(sid)


def test_pypy_is_said_not_to_be_cpython(mcp):
    """PyPy runs Python without CPython's API: the launch says so (and what still
    works), a Python pattern staged for it matches nothing, and the program runs."""
    mcp.call_tool("debug_trace", {"add": ["shop.pricing.discount"]})
    try:
        r = launch(mcp, "shop/pricing.py", command="/usr/bin/pypy3")
    finally:
        mcp.call_tool("debug_trace", {"remove": ["shop.pricing.discount"]})
    said = [w for w in r.get("warnings", []) if "is PyPy, not CPython" in w]
    assert said and "Run it with python3" in said[0], r
    st = mcp.wait_ended(r["sessionId"])
    assert st["exitCode"] == 0, st
    assert mcp.query(r["sessionId"], eventType="function_enter")["totalCount"] == 0


def test_stacks_keep_the_native_frames_of_a_c_library(mcp):
    """A thread blocked inside a C library's own code (ctypes into libcext.so, in
    read(2)): its stack shows those native frames above its Python ones; a thread
    in a lock wait shows its Python frames alone (the interpreter's C frames say
    nothing)."""
    from conftest import fixture_path
    r = launch(mcp, "cext_wait.py", args=[fixture_path("libcext.so")])
    sid = r["sessionId"]
    wait_text(mcp, sid, "stdout", r"^ready$")

    def blocked():
        res = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
        th = {t["name"]: t for t in res["threads"]}
        reader = th.get("reader")
        return (th, reader) if reader and reader.get("syscall") == "read" else None
    th, reader = wait_until(blocked, what="the reader blocked in read")
    names = [f.split(" (")[0] for f in reader["frames"]]
    at = names.index("wait_byte")
    assert names[at:at + 3] == ["wait_byte", "cext_wait", "cext_wait.read_in_c"], names
    assert reader["frames"][at].startswith("wait_byte (cext_lib.c:12)"), reader["frames"]
    assert all(not n.startswith(("Py", "_Py")) for n in names), names
    main = [f.split(" (")[0] for f in th["MainThread"]["frames"]]
    assert main[0] == "threading.Thread._wait_for_tstate_lock", main
    mcp.stop(sid)


def test_a_python_call_and_the_c_function_it_reaches_in_one_timeline(mcp):
    """add_in_c (Python) calls cext_add (C, in a library ctypes loaded): both traced
    in the running program, each C call sits inside its Python caller's in the one
    timeline, with the arguments of each language."""
    from conftest import fixture_path
    r = launch(mcp, "cext_calls.py", args=[fixture_path("libcext.so")])
    sid = r["sessionId"]
    wait_text(mcp, sid, "stdout", r"^ready$")
    t = mcp.call_tool("debug_trace", {"sessionId": sid,
                                      "add": ["cext_calls.add_in_c", "cext_add"]})
    assert t["hookedFunctions"] >= 2, t
    mcp.wait_events(sid, 3, eventType="function_exit", function={"equals": "cext_add"})
    mcp.call_tool("debug_trace", {"sessionId": sid,
                                  "remove": ["cext_calls.add_in_c", "cext_add"]})
    ev = mcp.all_events(sid, verbose=True)
    calls = [e for e in ev if e["eventType"] in ("function_enter", "function_exit")]
    c_enters = [e for e in calls if e["eventType"] == "function_enter" and
                e["function"] == "cext_add"]
    py = {e["id"]: e for e in calls if e["function"] == "cext_calls.add_in_c"}
    inside = 0
    for c in c_enters:
        i = args_of(c)["a"]
        outer = [e for e in py.values() if e["eventType"] == "function_enter" and
                 args_of(e)["i"] == i]
        if not outer:
            continue  # its Python call began before the patterns were set
        [p] = outer
        assert int(p["id"]) < int(c["id"]), (p, c)
        exits = [e for e in py.values() if e.get("parentEventId") == p["id"]]
        if not exits:
            continue  # it returned after the patterns went
        [px] = exits
        assert int(c["id"]) < int(px["id"]) and px["returnValue"] == i + 1, (c, px)
        inside += 1
    assert inside >= 2, calls[:10]
    mcp.stop(sid)
