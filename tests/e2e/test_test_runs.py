"""debug_test's runner through MCP (docs/PROTOCOL.md "Test runs"), with the generic
framework (a command and its exit code) so that only the runner is under test: the
answers of run and status, the onboarding answer, stuck detection (deadlock,
infinite loop, silent work and sleep that are not stuck), the kill of the whole
process tree, traced runs, the details file, and every error debug_test defines.
The framework adapters have their own files (test_test_<frameworks>.py)."""

import json
import os
import stat
import time

import pytest

from conftest import (T_LONG, T_SHORT, check_stuck_verdict, fixture_path, pid_alive,
                      wait_until)


def write_script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


def start(mcp, **kw):
    a = {"projectRoot": mcp.world.project}
    a.update(kw)
    return mcp.call_tool("debug_test", a)


def finished(mcp, run_id, timeout=None):
    """Status calls until the run completes (each waits up to 15 s in the daemon)."""
    def done():
        r = mcp.call_tool("debug_test", {"action": "status", "testRunId": run_id},
                          timeout=15 + T_LONG)
        return r if r["status"] == "completed" else None
    return wait_until(done, timeout or T_LONG * 2, interval=0, what="test run to complete")


def run_to_end(mcp, **kw):
    r = start(mcp, **kw)
    return r, finished(mcp, r["testRunId"])


@pytest.mark.valgrind_sample
def test_generic_pass_and_fail(mcp):
    proj = mcp.world.project
    ok = write_script(os.path.join(proj, "ok.sh"), "echo all good\n")
    r, st = run_to_end(mcp, command=ok)
    assert r["status"] == "running" and r["framework"] == "generic"
    assert r["testRunId"].startswith("tr-") and "sessionId" not in r
    assert r["command"] == "cd %s && %s" % (proj, ok)
    res = st["result"]
    assert res["summary"]["passed"] == 1 and res["summary"]["failed"] == 0
    assert res["exitCode"] == 0 and res["failures"] == [] and res["stuck"] == []

    bad = write_script(os.path.join(proj, "bad.sh"),
                       "echo checking\necho \"calc.c:42: check: Assertion \\`x == 3' failed.\" >&2\n"
                       "exit 3\n")
    _, st = run_to_end(mcp, command=bad)
    res = st["result"]
    assert res["summary"] == {"passed": 0, "failed": 1, "skipped": 0, "stuck": 0,
                              "durationMs": res["summary"]["durationMs"]}
    assert res["exitCode"] == 3
    (f,) = res["failures"]
    assert f["name"] == bad and f["file"] == "calc.c" and f["line"] == 42
    assert "Assertion `x == 3' failed." in f["message"]
    assert f["rerun"] == "cd %s && %s" % (proj, bad)


@pytest.mark.valgrind_sample
def test_details_file_is_private_and_complete(mcp):
    proj = mcp.world.project
    cmd = write_script(os.path.join(proj, "t.sh"), "echo out-line\necho err-line >&2\nexit 1\n")
    _, st = run_to_end(mcp, command=cmd)
    path = st["result"]["details"]
    assert path == os.path.join(mcp.world.home, "tests", st["testRunId"] + ".json")
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    with open(path) as f:
        d = json.load(f)
    assert d["testRunId"] == st["testRunId"] and d["framework"] == "generic"
    assert d["stdout"] == "out-line\n" and d["stderr"] == "err-line\n"
    assert d["exitCode"] == 1 and [t["status"] for t in d["tests"]] == ["failed"]
    # the run's private work directory is gone once it ended
    assert not os.path.exists(os.path.join(mcp.world.home, "tests", st["testRunId"]))


@pytest.mark.valgrind_sample
def test_no_tests_onboarding(mcp):
    proj = mcp.world.project
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write("all:\n\ttrue\n")
    r, st = run_to_end(mcp)
    assert r["framework"] == "generic" and r["detectionConfidence"] == 0
    res = st["result"]
    assert res["noTests"] is True
    assert res["project"] == {"language": "unknown", "buildSystem": "make"}
    assert "test" in res["hint"] and res["summary"]["passed"] == 0


def run_stuck(mcp, mode, kind):
    r, st = run_to_end(mcp, command="%s %s" % (fixture_path("test_stuck"), mode))
    res = st["result"]
    assert res["summary"]["stuck"] == 1, res
    check_stuck_verdict(res["stuck"][0], kind)
    return res["stuck"][0], res


@pytest.mark.valgrind_sample
def test_deadlock_diagnosed_with_stacks(mcp):
    r, st = run_to_end(mcp, command=fixture_path("deadlock_abba"))
    res = st["result"]
    (s,) = res["stuck"]
    check_stuck_verdict(s, "Deadlock")
    assert s["diagnosis"].startswith("Deadlock: 0% CPU, identical stacks")
    assert "worker-a" in s["waitCycles"] and "worker-b" in s["waitCycles"]
    threads = {t["name"]: t for t in s["threads"]}
    assert set(threads) == {"deadlock_abba", "worker-a", "worker-b"}
    for name in ("worker-a", "worker-b"):
        t = threads[name]
        assert t["syscall"] == "futex" and t["lockOwnerTid"] > 0
        assert any(fr.startswith("take_second (deadlock_abba.c:") for fr in t["stack"]), t
    assert s["suggestedTraces"] == ["take_second"]  # not main
    # the one result of a generic run is the stuck test: stuck, not also failed
    assert s["name"] == fixture_path("deadlock_abba")
    assert res["failures"] == [] and res["summary"]["failed"] == 0
    assert res["exitCode"] == -1 and res["killed"] == "by Strobe: the test was stuck"
    assert "not reported" in res["stoppedEarly"]
    with open(res["details"]) as f:
        d = json.load(f)
    assert d["stuck"][0]["diagnosis"] == s["diagnosis"]


def test_infinite_loop_diagnosed(mcp):
    s, _ = run_stuck(mcp, "loop", "Infinite loop")
    (t,) = s["threads"]
    assert t["stack"][0].startswith("spin (test_stuck.c:"), t


def test_stuck_kill_leaves_no_process(mcp):
    """The grandchild left the process group and was reparented: only the run's
    environment marker finds it; it must be gone with the rest."""
    s, res = run_stuck(mcp, "escape", "Deadlock")
    with open(res["details"]) as f:
        out = json.load(f)["stdout"]
    escaped = int(out.split("escaped ")[1].split()[0])
    wait_until(lambda: not pid_alive(escaped), T_SHORT,
               what="escaped grandchild %d gone" % escaped)
    pids = {t["tid"] for t in s["threads"]}
    assert escaped in pids, "the escaped process's stack was not taken: %r" % s["threads"]


@pytest.mark.parametrize("mode", ["work", "sleep"])
def test_silent_but_not_stuck(mcp, mode):
    r = start(mcp, command="%s %s" % (fixture_path("test_stuck"), mode))
    # While it runs, status comes back within its wait with progress.
    early = mcp.call_tool("debug_test", {"action": "status", "testRunId": r["testRunId"],
                                         "waitMs": 500})
    assert early["status"] == "running"
    p = early["progress"]
    assert p["phase"] == "starting" and p["elapsedMs"] >= 0 and p["warnings"] == []
    st = finished(mcp, r["testRunId"])
    res = st["result"]
    assert res["summary"]["stuck"] == 0 and res["summary"]["passed"] == 1, res
    assert res["summary"]["durationMs"] >= 10000


@pytest.mark.valgrind_sample
def test_traced_run_records_function_events(mcp):
    r, st = run_to_end(mcp, command=fixture_path("trace_c"), tracePatterns=["make_point"])
    sid = r["sessionId"]
    assert st["sessionId"] == sid and st["result"]["summary"]["passed"] == 1
    ev = mcp.wait_events(sid, 1, eventType="function_enter")["events"]
    assert ev[0]["function"] == "make_point"
    # the run answer says what the pattern matched; the end, that the session stays
    assert [(p["pattern"], p["matched"] >= 1) for p in r["patterns"]] == \
        [("make_point", True)], r
    assert ("stay in session %s" % sid) in st["sessionNote"], st


def test_traced_stuck_run_keeps_its_session(mcp):
    r, st = run_to_end(mcp, command=fixture_path("deadlock_abba"), tracePatterns=["take_second"])
    sid = r["sessionId"]
    (s,) = st["result"]["stuck"]
    assert s["diagnosis"].startswith("Deadlock"), s
    q = mcp.query(sid, eventType="function_enter")
    assert {e["function"] for e in q["events"]} == {"take_second"}


def test_traced_run_records_a_crash(mcp):
    """A test that crashes under the debugger: the crash event is in its session."""
    r, st = run_to_end(mcp, command=fixture_path("crash_null"), tracePatterns=["main"])
    res = st["result"]
    assert res["summary"]["failed"] == 1 and res["exitCode"] == -1, res
    assert res["killed"].startswith("by a signal"), res
    (crash,) = mcp.wait_events(r["sessionId"], 1, eventType="crash")["events"]
    assert crash["eventType"] == "crash", crash

def test_status_waits_then_reports_progress(mcp):
    r = start(mcp, command="%s sleep" % fixture_path("test_stuck"))
    t0 = time.monotonic()
    st = mcp.call_tool("debug_test_status", {"testRunId": r["testRunId"], "waitMs": 1200})
    took = time.monotonic() - t0
    # It waited (at least most of its 1.2 s), and answered at the end of its waitMs,
    # not at the run's end: the program sleeps 11 s, and the run is still going.
    assert st["status"] == "running" and took >= 1.0, took
    assert st["progress"]["elapsedMs"] >= 1000, st
    assert "next" in st


def test_run_answers_at_once(mcp):
    r = start(mcp, command=fixture_path("deadlock_abba"))
    assert r["status"] == "running"
    # It answered before the run's end: the run is still going (deadlock_abba never
    # ends by itself; its stuck verdict comes after 8 s of silence).
    st = mcp.call_tool("debug_test", {"action": "status", "testRunId": r["testRunId"],
                                      "waitMs": 0})
    assert st["status"] == "running", st


@pytest.mark.parametrize("args,code,words", [
    ({"projectRoot": "relative/dir", "command": "true"}, "VALIDATION_ERROR", "absolute"),
    ({"projectRoot": "/nonexistent/strobe", "command": "true"}, "VALIDATION_ERROR",
     "not a directory"),
    ({"framework": "nosuch", "command": "true"}, "VALIDATION_ERROR", "known: "),
    ({"level": "smoke", "command": "true"}, "VALIDATION_ERROR", "\"unit\""),
    ({"command": "/nonexistent/test-binary"}, "COMMAND_NOT_FOUND", "not found"),
    ({"command": "true", "test": "one"}, "VALIDATION_ERROR", "filter in the command"),
    ({"command": "'unclosed"}, "VALIDATION_ERROR", "unclosed quote"),
    ({"command": "true", "tracePatterns": ["a::"]}, "INVALID_PATTERN", "a::"),
    ({"command": "true", "env": {"A=B": "1"}}, "VALIDATION_ERROR", "env"),
    ({"command": "true", "env": {"A": 1}}, "VALIDATION_ERROR", "env"),
    ({"command": "true", "testRunId": "tr-1"}, "VALIDATION_ERROR", "action \"status\""),
    ({"action": "rerun"}, "VALIDATION_ERROR", "\"run\" or \"status\""),
    ({"command": "true", "bogus": 1}, "VALIDATION_ERROR", "bogus"),
])
@pytest.mark.valgrind_sample
def test_run_errors(mcp, args, code, words):
    a = {"projectRoot": mcp.world.project}
    a.update(args)
    e = mcp.tool_error("debug_test", a)
    assert e.code == code, (e.code, e.message)
    assert words in e.message, e.message


@pytest.mark.valgrind_sample
def test_status_errors(mcp):
    e = mcp.tool_error("debug_test", {"action": "status", "testRunId": "tr-nope"})
    assert e.code == "TEST_RUN_NOT_FOUND" and "tr-nope" in e.message
    e = mcp.tool_error("debug_test_status", {"testRunId": "tr-nope"})
    assert e.code == "TEST_RUN_NOT_FOUND"
    e = mcp.tool_error("debug_test", {"action": "status"})
    assert e.code == "VALIDATION_ERROR" and "testRunId" in e.message
    e = mcp.tool_error("debug_test_status", {"testRunId": "x", "waitMs": 20000})
    assert e.code == "VALIDATION_ERROR" and "waitMs" in e.message


def test_missing_command_is_command_not_found(mcp):
    """The generic adapter needs no program of its own; a command that is not there is
    COMMAND_NOT_FOUND naming it (a framework's missing program: test_test_native.py)."""
    e = mcp.tool_error("debug_test", {"projectRoot": mcp.world.project,
                                      "command": "no-such-test-runner --all"})
    assert e.code == "COMMAND_NOT_FOUND" and "no-such-test-runner" in e.message
