"""debug_test with the Catch2, CTest and pytest adapters, on the projects under
tests/fixtures/testproj/ (each copied to a scratch directory and built there once
per module): a suite run with its exact counts and its one failure's place and
message, the hang test stuck in its ABBA deadlock (STROBE_FIXTURE_HANG=1) found
within the stuck detector's bound with the stacks of both locking functions, and
the failing test rerun with trace patterns, whose function events name the code
under test."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import REPO, T_LONG, check_stuck_verdict, wait_until

TESTPROJ = os.path.join(REPO, "tests", "fixtures", "testproj")


def copy_project(tmp_path_factory, name):
    dst = str(tmp_path_factory.mktemp(name)) + "/" + name
    shutil.copytree(os.path.join(TESTPROJ, name), dst,
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    return dst


@pytest.fixture(scope="module")
def catch2_project(tmp_path_factory):
    """The Catch2 fixture, built: (projectRoot, the test binary's path)."""
    root = copy_project(tmp_path_factory, "catch2")
    subprocess.run(["make", "-s"], cwd=root, check=True, env=dict(os.environ, MAKEFLAGS=""))
    return root, os.path.join(root, "build", "stack_tests")


@pytest.fixture(scope="module")
def ctest_build(tmp_path_factory):
    """The CTest fixture configured and built out of tree: the build directory."""
    src = copy_project(tmp_path_factory, "ctest")
    build = os.path.join(os.path.dirname(src), "ctest-build")
    env = dict(os.environ, MAKEFLAGS="")
    subprocess.run(["cmake", "-S", src, "-B", build], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return build


@pytest.fixture(scope="module")
def pytest_project(tmp_path_factory):
    return copy_project(tmp_path_factory, "pytest")


def run_tests(mcp, **args):
    """debug_test run, then status until it completes: (start answer, result)."""
    started = mcp.call_tool("debug_test", args)
    assert started["status"] == "running", started

    def done():
        st = mcp.call_tool("debug_test", {"action": "status",
                                          "testRunId": started["testRunId"]},
                           timeout=T_LONG)
        return st if st["status"] == "completed" else None
    st = wait_until(done, 4 * T_LONG, what="test run %s" % started["testRunId"])
    return started, st["result"]


def details_tests(result):
    """{name: status} of every test, from the run's details file."""
    with open(result["details"]) as f:
        return {t["name"]: t["status"] for t in json.load(f)["tests"]}


def check_stuck(result, names):
    """The run ended stuck in a deadlock between the two locking functions."""
    assert result["summary"]["stuck"] == 1, result
    stuck = result["stuck"][0]
    check_stuck_verdict(stuck, "Deadlock")
    frames = [f for t in stuck["threads"] for f in t["stack"]]
    for fn in names:
        assert any(fn in f for f in frames), "%s not in the stacks %r" % (fn, frames)
    return stuck


# ---- Catch2 ----------------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_catch2_suite(mcp, catch2_project):
    root, binary = catch2_project
    started, res = run_tests(mcp, projectRoot=root, command=binary)
    assert started["framework"] == "catch2"
    assert started["detectionConfidence"] == 85
    assert res["summary"]["passed"] == 3
    assert res["summary"]["failed"] == 1
    assert res["summary"]["skipped"] == 1
    assert res["summary"]["stuck"] == 0
    assert len(res["failures"]) == 1
    f = res["failures"][0]
    assert f["name"] == "sum adds every value"
    assert f["file"] == "test_stack.cpp"
    assert f["line"] == 36
    assert f["message"] == "CHECK( s.sum() == 6 )\nwith expansion:\n  5 == 6"
    assert f["suggestedTraces"] == ["@file:stack.cpp", "**::sum"]
    assert f["rerun"] == "cd %s && %s 'sum adds every value'" % (root, binary)
    tests = details_tests(res)
    assert tests == {"push then pop returns the last value": "passed",
                     "peek sees the top": "passed",
                     "sum adds every value": "failed",
                     "grows past its capacity": "skipped",
                     "hang_deadlock": "passed"}


def test_catch2_hang_is_stuck(mcp, catch2_project):
    root, binary = catch2_project
    _, res = run_tests(mcp, projectRoot=root, command=binary, test="hang_deadlock",
                       env={"STROBE_FIXTURE_HANG": "1"})
    stuck = check_stuck(res, ["lock_a_then_b", "lock_b_then_a"])
    assert stuck["name"] == "hang_deadlock"


def test_catch2_rerun_traced(mcp, catch2_project):
    root, binary = catch2_project
    started, res = run_tests(mcp, projectRoot=root, command=binary,
                             test="sum adds every value", tracePatterns=["@file:stack.cpp"])
    assert started.get("sessionId"), started
    assert res["summary"]["failed"] == 1 and res["summary"]["passed"] == 0
    events = mcp.all_events(started["sessionId"], eventType="function_enter")
    names = {e["function"] for e in events}
    assert "Stack::sum" in names and "Stack::push" in names, names


def test_catch2_level_unit(mcp, catch2_project):
    root, binary = catch2_project
    started, res = run_tests(mcp, projectRoot=root, command=binary, level="unit")
    assert started["command"].endswith(" -r xml -d yes '[unit]'"), started
    assert set(details_tests(res)) == {"push then pop returns the last value",
                                       "peek sees the top", "sum adds every value",
                                       "grows past its capacity"}


# ---- CTest -----------------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_ctest_suite(mcp, ctest_build):
    started, res = run_tests(mcp, projectRoot=ctest_build)
    assert started["framework"] == "ctest"
    assert started["detectionConfidence"] == 80
    assert res["summary"]["passed"] == 3
    assert res["summary"]["failed"] == 1
    assert res["summary"]["skipped"] == 2
    assert len(res["failures"]) == 1
    f = res["failures"][0]
    src = os.path.join(os.path.dirname(ctest_build), "ctest", "csv_tests.c")
    assert f["name"] == "fields_trailing"
    assert f["file"] == src
    assert f["line"] == 26
    assert f["message"] == ("csv_tests: %s:26: fields_trailing: Assertion "
                            "`csv_count_fields(\"a,b,\") == 3' failed.\n"
                            "ctest: Subprocess aborted" % src)
    assert f["suggestedTraces"] == ["@file:csv.c", "**::csv_count_fields"]
    assert f["rerun"] == "cd %s && ctest --output-on-failure -R '^fields_trailing$'" \
        % ctest_build
    assert details_tests(res) == {"fields_basic": "passed", "fields_quoted": "passed",
                                  "fields_trailing": "failed",
                                  "skip_needs_network": "skipped",
                                  "fields_unicode": "skipped", "hang_deadlock": "passed"}


def test_ctest_levels(mcp, ctest_build):
    _, res = run_tests(mcp, projectRoot=ctest_build, level="integration")
    assert details_tests(res) == {"hang_deadlock": "passed"}


def test_ctest_hang_is_stuck(mcp, ctest_build):
    _, res = run_tests(mcp, projectRoot=ctest_build, test="hang_deadlock",
                       env={"STROBE_FIXTURE_HANG": "1"})
    stuck = check_stuck(res, ["lock_a_then_b", "lock_b_then_a"])
    assert stuck["name"] == "hang_deadlock"


def test_ctest_rerun_traced(mcp, ctest_build):
    started, res = run_tests(mcp, projectRoot=ctest_build, test="fields_trailing",
                             tracePatterns=["csv_count_fields"])
    assert started.get("sessionId"), started
    assert res["summary"]["failed"] == 1 and res["summary"]["passed"] == 0
    events = mcp.all_events(started["sessionId"], eventType="function_enter")
    assert [e["function"] for e in events] == ["csv_count_fields"], events


# ---- pytest ----------------------------------------------------------------------------

WC = "tests/test_wordcount.py"


@pytest.mark.valgrind_sample
def test_pytest_suite(mcp, pytest_project):
    started, res = run_tests(mcp, projectRoot=pytest_project)
    assert started["framework"] == "pytest"
    assert started["detectionConfidence"] == 90
    assert res["summary"]["passed"] == 4
    assert res["summary"]["failed"] == 1
    assert res["summary"]["skipped"] == 1
    assert len(res["failures"]) == 1
    f = res["failures"][0]
    assert f["name"] == WC + "::test_double_space"
    assert f["file"] == WC
    assert f["line"] == 22
    assert f["message"] == ("AssertionError: two words separated by two spaces\n"
                            "assert 3 == 2")
    assert f["suggestedTraces"] == []
    assert details_tests(res) == {WC + "::test_simple_sentence": "passed",
                                  WC + "::test_empty_text": "passed",
                                  WC + "::test_double_space": "failed",
                                  WC + "::test_unicode_later": "skipped",
                                  WC + "::TestLines::test_single_word": "passed",
                                  WC + "::test_hang_deadlock": "passed"}


def test_pytest_hang_is_stuck(mcp, pytest_project):
    _, res = run_tests(mcp, projectRoot=pytest_project, test="test_hang_deadlock",
                       env={"STROBE_FIXTURE_HANG": "1"})
    assert res["summary"]["stuck"] == 1, res
    stuck = res["stuck"][0]
    assert stuck["name"] == WC + "::test_hang_deadlock"
    check_stuck_verdict(stuck, "Deadlock")
    # CPython's own stacks (PYTHONFAULTHANDLER=1, SIGABRT) name the Python functions
    dump = stuck["runtimeStacks"]
    assert "in lock_a_then_b" in dump and "in lock_b_then_a" in dump, dump
    # and they are the threads' stacks: module.function (file:line) of the test's code
    tops = sorted(t["stack"][0] for t in stuck["threads"])
    assert [t.split(" (")[0] for t in tops] == ["tests.test_wordcount.lock_a_then_b",
                                                 "tests.test_wordcount.lock_b_then_a"], tops
    assert all(t["tid"] > 0 for t in stuck["threads"]), stuck["threads"]


def test_pytest_rerun_traced(mcp, pytest_project):
    """The traced path gives the same result. Strobe traces native code: the Python
    functions of the test produce no function events (and /usr/bin/python3 has no
    debug information for its own C functions), so only the session is checked."""
    started, res = run_tests(mcp, projectRoot=pytest_project, test="test_double_space",
                             tracePatterns=["@file:wordcount"])
    assert started.get("sessionId"), started
    assert res["summary"] == dict(res["summary"], passed=0, failed=1, skipped=0, stuck=0)
    f = res["failures"][0]
    assert (f["name"], f["file"], f["line"]) == (WC + "::test_double_space", WC, 22)
    assert f["rerun"].endswith("/usr/bin/python3 -m pytest -v " + WC + "::test_double_space")
    assert mcp.status(started["sessionId"])["status"] != "running"


def test_pytest_rerun_traces_python_functions(mcp, pytest_project):
    """A pytest rerun of the failing test with Python tracePatterns: pytest runs as a
    session, its interpreter is adopted, and the calls of the code under test are in
    the session's timeline with their arguments and results (spec Phase 1d, C)."""
    started, res = run_tests(mcp, projectRoot=pytest_project,
                             test=WC + "::test_double_space",
                             tracePatterns=["wordcount.split_words"])
    assert res["summary"]["failed"] == 1, res
    sid = started["sessionId"]
    enters = mcp.all_events(sid, eventType="function_enter", verbose=True)
    assert [e["function"] for e in enters] == ["wordcount.split_words"], enters
    assert enters[0]["arguments"][0]["value"] == "one  two"
    (exit_,) = mcp.all_events(sid, eventType="function_exit", verbose=True)
    assert exit_["returnValue"] == ["one", "", "two"], exit_


def test_pytest_rerun_with_a_python_breakpoint_pauses_in_the_test(mcp, pytest_project):
    """debug_test with a breakpoint in the code under test: the run goes under the
    debugger, the test pauses there with the Python arguments, and while it stays
    paused (longer than the stuck detector's window) it is neither stuck nor timed
    out; continued, it ends as a plain run does."""
    started = mcp.call_tool("debug_test", {
        "projectRoot": pytest_project, "test": WC + "::test_double_space",
        "breakpoints": [{"file": "wordcount.py", "line": 7, "condition": "'  ' in text"}]})
    sid = started["sessionId"]
    a = mcp.call_tool("debug_continue", {"sessionId": sid, "action": "until",
                                         "timeoutMs": 60000}, timeout=T_LONG + 60)
    assert a["state"] == "paused" and a["function"] == "wordcount.split_words", a
    assert a["arguments"][0]["value"] == "one  two", a
    # the status call waits up to 12 s for the end: the paused run neither ends nor is
    # found stuck meanwhile (the detector decides within ~8 s of silence)
    st = mcp.call_tool("debug_test", {"action": "status", "testRunId": started["testRunId"],
                                      "waitMs": 12000}, timeout=T_LONG)
    assert st["status"] == "running" and "stuck" not in json.dumps(st).lower(), st
    c = mcp.call_tool("debug_continue", {"sessionId": sid, "timeoutMs": 100})
    # once per visit of the line: not again in the list comprehension on it
    assert c["state"] != "paused", c

    def done():
        s = mcp.call_tool("debug_test", {"action": "status",
                                         "testRunId": started["testRunId"]}, timeout=T_LONG)
        return s if s["status"] == "completed" else None
    res = wait_until(done, 4 * T_LONG, what="the test run")["result"]
    assert res["summary"] == dict(res["summary"], passed=0, failed=1, skipped=0, stuck=0), res
