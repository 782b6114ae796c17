"""debug_test with the unittest, jest, vitest and mocha adapters, through MCP, on the
fixture projects tests/fixtures/testproj/unittest and tests/fixtures/testproj/js/
{jest,vitest,mocha} (each folder a project root; the JS ones share ../node_modules,
installed by scripts/run-e2e.sh with npm ci).

Each fixture has 2 passing tests, 1 failing at a known line, 1 skipped, and one that
hangs only when STROBE_FIXTURE_HANG=1 is in its environment: unittest's
test_hang_deadlock deadlocks two threads in ledger.transfer (ABBA), the JS
hang_busy_loop spins. For each framework: the whole suite (exact counts, the failure's
place and message, the hang test passed), the hang test alone with the variable set
(a stuck verdict at the detector's promised sample, with stacks), and the failing test rerun
with trace patterns (function events from the interpreter under it: Strobe traces
native code, so the patterns name the runtime's own functions that a failing
assertion goes through)."""

import json
import os

import pytest

from conftest import REPO, T_LONG, check_stuck_verdict, wait_until

TESTPROJ = os.path.join(REPO, "tests", "fixtures", "testproj")
JS = os.path.join(TESTPROJ, "js")
UNITTEST = os.path.join(TESTPROJ, "unittest")

# The runner's hard timeout (120 s when no level is given, counted from the first
# test) ends any run; the wait goes past it, by the suite's margin for a slow daemon.
RUN_TIMEOUT = 120 + T_LONG


def run_test(mcp, root, **kw):
    """Starts debug_test and polls its status until the run completes; returns
    (the start answer, the completed status answer)."""
    a = {"projectRoot": root}
    a.update(kw)
    started = mcp.call_tool("debug_test", a)
    assert started["status"] == "running", started
    rid = started["testRunId"]

    def completed():
        st = mcp.call_tool("debug_test", {"action": "status", "testRunId": rid},
                           timeout=15 + T_LONG)  # the status itself waits up to 15 s
        return st if st["status"] == "completed" else None
    return started, wait_until(completed, RUN_TIMEOUT, what="test run %s to complete" % rid)


def details(result):
    with open(result["details"]) as f:
        return json.load(f)


def statuses(result):
    return {t["name"]: t["status"] for t in details(result)["tests"]}


def function_events(mcp, sid, name):
    q = mcp.query(sid, eventType="function_enter", function={"equals": name}, limit=5)
    return q["totalCount"]


# ---- unittest ------------------------------------------------------------------

UT = "test_ledger.LedgerTest."


@pytest.mark.valgrind_sample
def test_unittest_suite(mcp):
    started, st = run_test(mcp, UNITTEST)
    assert started["framework"] == "unittest"
    # the files import unittest, nothing names pytest: above pytest's 80
    assert started["detectionConfidence"] == 82
    res = st["result"]
    assert res["summary"]["passed"] == 3, res
    assert res["summary"]["failed"] == 1, res
    assert res["summary"]["skipped"] == 1, res
    assert res["summary"]["stuck"] == 0, res
    assert res["exitCode"] == 1
    [f] = res["failures"]
    assert f["name"] == UT + "test_withdraw_charges_fee"
    assert f["file"] == "test_ledger.py"
    assert f["line"] == 22
    assert f["message"] == "AssertionError: 7 != 6 : the fee was not charged"
    assert f["rerun"].endswith("python3 -m unittest -k " + UT + "test_withdraw_charges_fee")
    assert f["suggestedTraces"] == []
    assert statuses(res) == {
        UT + "test_deposit": "passed",
        UT + "test_hang_deadlock": "passed",
        UT + "test_overdraft_refused": "skipped",
        UT + "test_transfer_moves_money": "passed",
        UT + "test_withdraw_charges_fee": "failed",
    }


def test_unittest_deadlock_is_stuck(mcp):
    _, st = run_test(mcp, UNITTEST, test="test_hang_deadlock",
                     env={"STROBE_FIXTURE_HANG": "1"})
    res = st["result"]
    assert res["summary"]["stuck"] == 1, res
    assert res["summary"]["passed"] == 0 and res["summary"]["failed"] == 0, res
    [s] = res["stuck"]
    # the partial verdict line "test_hang_deadlock (...) ... " named it
    assert s["name"] == UT + "test_hang_deadlock"
    check_stuck_verdict(s, "Deadlock")
    assert len(s["threads"]) == 3, s["threads"]
    # CPython's own view (faulthandler on SIGABRT): both workers in ledger.transfer,
    # the test waiting in join()
    dump = s["runtimeStacks"]
    assert dump.count("ledger.py\", line 31 in transfer") == 2, dump
    assert "test_ledger.py\", line 44 in test_hang_deadlock" in dump, dump
    # the threads show those Python frames, not the interpreter's C frames: each
    # dump thread went to its native thread (its tid, state and system call kept)
    stacks = {t["tid"]: t["stack"] for t in s["threads"]}
    workers = [st for st in stacks.values() if st[0] == "ledger.transfer (ledger.py:31)"]
    assert len(workers) == 2, s["threads"]
    [main] = [st for st in stacks.values() if st not in workers]
    assert "test_ledger.LedgerTest.test_hang_deadlock (test_ledger.py:44)" in main[:4], main
    assert all(t["tid"] > 0 and t["syscall"] == "futex" for t in s["threads"]), s["threads"]
    assert not any("pthread" in f or "PyEval" in f for st in stacks.values() for f in st), stacks
    assert set(s["suggestedTraces"]) == {"test_ledger.LedgerTest.test_hang_deadlock",
                                         "ledger.transfer"}, s


def test_unittest_rerun_traced(mcp):
    _, st = run_test(mcp, UNITTEST, test="test_withdraw_charges_fee",
                     tracePatterns=["_PyErr_SetObject"])
    sid = st["sessionId"]
    res = st["result"]
    assert res["summary"] == dict(res["summary"], passed=0, failed=1, skipped=0, stuck=0)
    assert res["failures"][0]["line"] == 22
    # the AssertionError (and every exception before it) is raised through it
    assert function_events(mcp, sid, "_PyErr_SetObject") > 0


# ---- jest, vitest, mocha --------------------------------------------------------

JS_FRAMEWORKS = {
    # framework: (project folder, confidence, failure file, line, message start)
    "jest": ("jest", 92, "stack.test.js", 20,
             "Error: expect(received).toBe(expected) // Object.is equality\n\n"
             "Expected: 3\nReceived: 1"),
    "vitest": ("vitest", 95, "stack.test.mjs", 21,
               "AssertionError: expected 1 to be 3 // Object.is equality"),
    "mocha": ("mocha", 90, "test/stack.spec.js", 21,
              "AssertionError [ERR_ASSERTION]: peek() must return the last pushed item\n\n"
              "1 !== 3"),
}


@pytest.fixture
def js_root():
    if not os.path.isdir(os.path.join(JS, "node_modules", ".bin")):
        pytest.skip("the JS fixture's node_modules are missing: run `npm ci` in %s "
                    "(scripts/run-e2e.sh does)" % JS)
    return JS


@pytest.mark.valgrind_sample
@pytest.mark.parametrize("fw", sorted(JS_FRAMEWORKS))
def test_js_suite(mcp, js_root, fw):
    folder, conf, file, line, message = JS_FRAMEWORKS[fw]
    started, st = run_test(mcp, os.path.join(js_root, folder))
    assert started["framework"] == fw
    assert started["detectionConfidence"] == conf
    res = st["result"]
    assert res["summary"]["passed"] == 3, res
    assert res["summary"]["failed"] == 1, res
    assert res["summary"]["skipped"] == 1, res
    assert res["summary"]["stuck"] == 0, res
    assert "note" not in res, res
    [f] = res["failures"]
    assert f["name"] == "Stack peek_returns_top"
    assert f["file"] == file
    assert f["line"] == line
    assert f["message"] == message
    assert f["suggestedTraces"] == []
    assert statuses(res) == {
        "Stack push_then_pop": "passed",
        "Stack pop_empty_throws": "passed",
        "Stack peek_returns_top": "failed",
        "Stack grows_past_capacity": "skipped",
        "Stack hang_busy_loop": "passed",
    }


@pytest.mark.parametrize("fw", sorted(JS_FRAMEWORKS))
def test_js_busy_loop_is_stuck(mcp, js_root, fw):
    folder = JS_FRAMEWORKS[fw][0]
    _, st = run_test(mcp, os.path.join(js_root, folder), test="hang_busy_loop",
                     env={"STROBE_FIXTURE_HANG": "1"})
    res = st["result"]
    assert res["summary"]["stuck"] == 1, res
    assert res["summary"]["passed"] == 0 and res["summary"]["failed"] == 0, res
    [s] = res["stuck"]
    # none of the three prints a test's start: the runner names it by the filter
    assert s["name"] in ("hang_busy_loop", "Stack hang_busy_loop"), s["name"]
    assert "killed as stuck" in res["note"], res
    check_stuck_verdict(s, "Infinite loop")
    # the spinning thread: node's main thread (vitest: its worker process)
    assert any(t["state"] == "running" and t["name"].startswith("node")
               for t in s["threads"]), s["threads"]


@pytest.mark.parametrize("fw", sorted(JS_FRAMEWORKS))
def test_js_rerun_traced(mcp, js_root, fw):
    folder, _, file, line, _ = JS_FRAMEWORKS[fw]
    fn = "v8::internal::Isolate::CaptureAndSetErrorStack"
    _, st = run_test(mcp, os.path.join(js_root, folder), test="peek_returns_top",
                     tracePatterns=[fn])
    sid = st["sessionId"]
    res = st["result"]
    assert res["summary"] == dict(res["summary"], passed=0, failed=1, skipped=0, stuck=0)
    [f] = res["failures"]
    assert (f["file"], f["line"]) == (file, line)
    # V8 records the stack of every Error it creates: the failed assertion's too
    assert function_events(mcp, sid, fn) > 0
