"""debug_test with the cargo, GoogleTest and go test adapters through MCP, on the
fixture projects under tests/fixtures/testproj/{cargo,gtest,go}: a suite run with
its exact counts and failure, the hanging test alone found stuck (a deadlock, with
the stacks that show it), and the failing test rerun with its suggested trace
patterns recording function events."""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO, T_LONG, check_stuck_verdict, wait_until

TESTPROJ = os.path.join(REPO, "tests", "fixtures", "testproj")
HANG = {"STROBE_FIXTURE_HANG": "1"}


def have(program):
    return shutil.which(program) is not None


def copy_project(mcp, name):
    """The fixture project in the test's own directory (cargo and go write there)."""
    dst = os.path.join(mcp.world.project, name)
    shutil.copytree(os.path.join(TESTPROJ, name), dst,
                    ignore=shutil.ignore_patterns("target", "Cargo.lock", "build"))
    return dst


def build_gtest(mcp):
    """The GoogleTest binary, built from the fixture's sources into the test's own
    directory (the sources stay where they are: the project root)."""
    build = os.path.join(mcp.world.base, "gtest-build")
    subprocess.run(["make", "-s", "-C", os.path.join(TESTPROJ, "gtest"), "BUILD=" + build],
                   check=True, capture_output=True)
    return os.path.join(TESTPROJ, "gtest"), os.path.join(build, "stack_test")


def run_to_end(mcp, root, timeout=None, **kw):
    a = {"projectRoot": root}
    a.update(kw)
    r = mcp.call_tool("debug_test", a)

    def done():
        s = mcp.call_tool("debug_test", {"action": "status", "testRunId": r["testRunId"]},
                          timeout=15 + T_LONG)  # the status itself waits up to 15 s
        return s if s["status"] == "completed" else None
    return r, wait_until(done, timeout or T_LONG * 4, interval=0, what="test run to complete")


def frames(stuck):
    return "\n".join(fr for t in stuck["threads"] for fr in t["stack"])


def check_suite(res, passed, failed, skipped):
    s = res["summary"]
    assert (s["passed"], s["failed"], s["skipped"], s["stuck"]) == \
        (passed, failed, skipped, 0), res
    assert res["stuck"] == [] and "buildErrors" not in res, res
    (f,) = res["failures"]
    return f


def traced_call(mcp, sid, contains):
    """The function_enter events whose function's name contains `contains`."""
    q = mcp.wait_events(sid, 1, T_LONG, eventType="function_enter",
                        function={"contains": contains})
    return {e["function"] for e in q["events"]}


# ---- cargo --------------------------------------------------------------------

needs_cargo = pytest.mark.skipif(not have("cargo"), reason="cargo is not installed")


@pytest.mark.valgrind_sample
@needs_cargo
def test_cargo_suite(mcp):
    root = copy_project(mcp, "cargo")
    r, st = run_to_end(mcp, root)
    assert r["framework"] == "cargo" and r["detectionConfidence"] == 90
    res = st["result"]
    f = check_suite(res, 4, 1, 1)
    assert f["name"] == "stack::tests::pop_returns_last_pushed"
    assert (f["file"], f["line"]) == ("src/stack.rs", 67)
    assert f["message"] == ("assertion `left == right` failed: pop must return the last "
                            "value pushed\n  left: Some(1)\n right: Some(3)")
    assert f["suggestedTraces"] == ["**::stack::**", "@file:stack.rs"]
    assert f["rerun"] == ("cd %s && cargo test -- stack::tests::pop_returns_last_pushed "
                          "--exact" % root)


@needs_cargo
def test_cargo_hang_is_a_deadlock(mcp):
    root = copy_project(mcp, "cargo")
    subprocess.run(["cargo", "test", "--no-run", "-q"], cwd=root, check=True,
                   capture_output=True)
    _, st = run_to_end(mcp, root, test="hang_deadlock", env=HANG)
    res = st["result"]
    (s,) = res["stuck"]
    # libtest's main thread waits with a timeout (its 60 s "running for over"
    # warning) while the test's threads are blocked for good: a deadlock, at the
    # detector's second sample (not the 30 s a sleeping program gets).
    check_stuck_verdict(s, "Deadlock")
    assert s["name"] == "stack::tests::hang_deadlock", s
    # the CPU share is measured (a loaded machine adds a percent or two): the verdict
    # and its two identical samples are what the detector promises
    assert re.match(r"Deadlock: \d% CPU, identical stacks across 2 samples", s["diagnosis"]), s
    text = frames(s)
    assert "lock_a_then_b" in text and "lock_b_then_a" in text, text


@needs_cargo
def test_cargo_rerun_traced(mcp):
    """From a fresh copy: debug_test builds the tests untraced first (else the pattern
    would trace rustc's functions too), then runs them under the debugger."""
    root = copy_project(mcp, "cargo")
    r, st = run_to_end(mcp, root, test="stack::tests::pop_returns_last_pushed",
                       tracePatterns=["**::stack::**"])
    assert "sessionId" not in r and "built first" in r["sessionPending"], r
    res = st["result"]
    assert res["summary"]["failed"] == 1 and res["summary"]["passed"] == 0, res
    fns = traced_call(mcp, st["sessionId"], "::pop")
    assert any(f.startswith("stackfix::stack::Stack") for f in fns), fns
    # only the tests ran under the debugger: the pattern would match rustc's own
    # functions (rustc_data_structures::stack::...) had the compiler been traced
    names = {e["function"] for e in mcp.all_events(st["sessionId"], eventType="function_enter")}
    assert names and all("stackfix::" in n for n in names), sorted(names)[:10]



@needs_cargo
def test_cargo_build_failure_is_parsed(mcp):
    """A compile error: no test ran; buildErrors gives rustc's file:line:column."""
    root = copy_project(mcp, "cargo")
    path = os.path.join(root, "src", "stack.rs")
    with open(path, "a") as f:
        f.write("\npub fn broken() -> i32 { \"not a number\" }\n")
    with open(path) as f:
        line = sum(1 for _ in f)
    _, st = run_to_end(mcp, root)
    res = st["result"]
    s = res["summary"]
    assert (s["passed"], s["failed"], s["stuck"]) == (0, 0, 0), res
    (e,) = [e for e in res["buildErrors"] if e.get("line") == line]
    assert e["file"] == "src/stack.rs" and e["column"] > 0, e
    assert "mismatched types" in e["message"], e


def test_framework_not_installed_names_its_package(world):
    """The daemon's PATH has neither cargo nor go: the sentence names the package."""
    mcp = world.mcp(extra_env={"PATH": "/nonexistent-strobe-path"})
    mcp.world = world
    for name, package in (("cargo", "Debian package cargo"), ("go", "Debian package golang-go")):
        root = copy_project(mcp, name)
        e = mcp.tool_error("debug_test", {"projectRoot": root})
        assert e.code == "COMMAND_NOT_FOUND", (e.code, e.message)
        assert "'%s' is not installed" % name in e.message and package in e.message, e.message

# ---- GoogleTest ---------------------------------------------------------------

needs_gtest = pytest.mark.skipif(
    not os.path.exists("/usr/lib/x86_64-linux-gnu/libgtest.a") or not have("make"),
    reason="libgtest-dev is not installed")


@needs_gtest
def test_gtest_suite(mcp):
    root, binary = build_gtest(mcp)
    r, st = run_to_end(mcp, root, command=binary)
    assert r["framework"] == "gtest" and r["detectionConfidence"] == 90
    f = check_suite(st["result"], 3, 1, 1)
    assert f["name"] == "StackTest.PopReturnsLastPushed"
    assert (f["file"], f["line"]) == ("stack_test.cpp", 35)
    assert f["message"] == ("Expected equality of these values:\n  s.pop()\n    Which is: 1\n"
                            "  3\npop must return the last value pushed")
    assert f["suggestedTraces"] == ["Stack*::**", "@file:stack.cpp", "**::pop"]
    assert f["rerun"] == ("cd %s && %s --gtest_filter=StackTest.PopReturnsLastPushed"
                          % (root, binary))


@needs_gtest
def test_gtest_hang_is_a_deadlock(mcp):
    root, binary = build_gtest(mcp)
    _, st = run_to_end(mcp, root, command=binary, test="HangDeadlock", env=HANG)
    (s,) = st["result"]["stuck"]
    check_stuck_verdict(s, "Deadlock")
    assert s["name"] == "StackTest.HangDeadlock", s
    text = frames(s)
    assert "lock_a_then_b" in text and "lock_b_then_a" in text, text


@needs_gtest
def test_gtest_rerun_traced(mcp):
    root, binary = build_gtest(mcp)
    r, st = run_to_end(mcp, root, command=binary, test="StackTest.PopReturnsLastPushed",
                       tracePatterns=["Stack::**"])
    res = st["result"]
    assert res["summary"]["failed"] == 1 and res["summary"]["passed"] == 0, res
    assert traced_call(mcp, r["sessionId"], "pop") == {"Stack::pop"}


# ---- go test ------------------------------------------------------------------

needs_go = pytest.mark.skipif(not have("go"), reason="golang-go is not installed")


@needs_go
def test_go_suite(mcp):
    root = copy_project(mcp, "go")
    r, st = run_to_end(mcp, root)
    assert r["framework"] == "go" and r["detectionConfidence"] == 90
    f = check_suite(st["result"], 6, 1, 1)
    assert f["name"] == "TestPopReturnsLastPushed"
    assert (f["file"], f["line"]) == ("stack/stack_test.go", 34)
    assert f["message"] == "Pop() = 1, want 3: pop must return the last value pushed"
    assert f["suggestedTraces"] == ["@file:stack/stack.go"]
    assert f["rerun"] == "cd %s && go test -run '^TestPopReturnsLastPushed$' ./..." % root


@needs_go
def test_go_hang_is_a_deadlock(mcp):
    """The goroutines park in the Go scheduler: the threads' native stacks show the
    runtime, the SIGQUIT dump shows the goroutines that deadlock."""
    root = copy_project(mcp, "go")
    subprocess.run(["go", "vet", "./..."], cwd=root, check=True, capture_output=True)
    _, st = run_to_end(mcp, root, test="TestHangDeadlock", env=HANG)
    (s,) = st["result"]["stuck"]
    # The runtime's sysmon thread sleeps with a deadline, its idle threads are
    # parked for good: a deadlock, at the detector's second sample after go test's
    # build (not the 30 s a sleeping program gets).
    check_stuck_verdict(s, "Deadlock")
    assert s["name"] == "TestHangDeadlock", s
    # the CPU share is measured (a loaded machine adds a percent or two): the verdict
    # and its two identical samples are what the detector promises
    assert re.match(r"Deadlock: \d% CPU, identical stacks across 2 samples", s["diagnosis"]), s
    # The dump comes wrapped in test2json's events (and cut to size) in the answer;
    # the adapter gives it back as the test's own output in the details file.
    assert "SIGQUIT: quit" in s["runtimeStacks"]
    with open(st["result"]["details"]) as f:
        (t,) = [t for t in json.load(f)["tests"] if t["name"] == "TestHangDeadlock"]
    assert t["status"] == "stuck"
    assert "stack.lockAThenB(" in t["output"] and "stack.lockBThenA(" in t["output"], t


@needs_go
def test_go_rerun_traced_says_what_it_cannot_see(mcp):
    """go test's tools die of SIGTRAP under the tracer and its test binaries have no
    symbols (adapter_go.c's trace_note): a traced rerun runs plain, says so, and
    gives the same result."""
    root = copy_project(mcp, "go")
    r, st = run_to_end(mcp, root, test="TestPopReturnsLastPushed",
                       tracePatterns=["@file:stack/stack.go"])
    assert "sessionId" not in r and "went untraced" in r["warning"], r
    assert "sessionId" not in st
    res = st["result"]
    assert res["summary"]["failed"] == 1 and res["summary"]["passed"] == 0, res
    (f,) = res["failures"]
    assert f["name"] == "TestPopReturnsLastPushed" and f["file"] == "stack/stack_test.go", f
