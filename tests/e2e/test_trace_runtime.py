"""debug_trace on running sessions (docs/PROTOCOL.md debug_trace, runtime mode): add
and remove while the program runs, overlapping patterns, errors, hot functions
(sampling), longjmp and C++ exceptions through traced frames, and the spec 000
validation scenario end to end."""

import os
import signal

import pytest

from conftest import REPO, T_LONG, wait_stable, wait_until


def count(mcp, sid, function, event_type="function_enter"):
    return mcp.query(sid, eventType=event_type, function={"equals": function},
                     limit=1)["totalCount"]


def start_worker(mcp, seconds="600"):
    r = mcp.launch("worker_loop", project=REPO, args=[seconds])
    mcp.wait_events(r["sessionId"], 1, eventType="stdout")
    return r["sessionId"]


@pytest.mark.valgrind_sample
def test_runtime_add_then_remove(mcp):
    sid = start_worker(mcp)
    assert mcp.query(sid, eventType="function_enter")["totalCount"] == 0
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    assert t["mode"] == "runtime"
    assert t["activePatterns"] == ["tick"]
    assert t["hookedFunctions"] == 1 and t["matchedFunctions"] == 1
    assert t["activeWatches"] == [] and isinstance(t["warnings"], list)
    assert t["eventLimit"] == 200000
    wait_until(lambda: count(mcp, sid, "tick") >= 10, what="10 tick calls")
    ev = mcp.query(sid, eventType="function_enter", verbose=True, limit=10)["events"]
    nums = [e["arguments"][0]["value"] for e in ev]
    assert nums == list(range(nums[0], nums[0] + 10)), nums  # consecutive calls
    assert all(e["function"] == "tick" for e in ev)
    assert count(mcp, sid, "compute") == 0
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["tick"]})
    assert t["activePatterns"] == [] and t["hookedFunctions"] == 0
    stable = wait_stable(lambda: count(mcp, sid, "tick"), 0.5, what="the tick count")
    # the program keeps running (and calling tick) but no more events come
    lines = mcp.query(sid, eventType="stdout")["totalCount"]
    wait_until(lambda: mcp.query(sid, eventType="stdout")["totalCount"] >= lines + 1,
               what="more output from the running program")
    assert count(mcp, sid, "tick") == stable
    # every enter got its exit
    assert count(mcp, sid, "tick", "function_exit") == stable
    assert mcp.status(sid)["status"] == "running"
    # and adding it again resumes
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    wait_until(lambda: count(mcp, sid, "tick") >= stable + 5, what="tick again")
    mcp.stop(sid)


def test_remove_one_of_two_overlapping_patterns(mcp):
    sid = start_worker(mcp)
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["compute", "c*"]})
    assert t["hookedFunctions"] == 2  # compute, chain_sum
    wait_until(lambda: count(mcp, sid, "chain_sum") >= 5 and count(mcp, sid, "compute") >= 5)
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["c*"]})
    assert t["activePatterns"] == ["compute"]
    assert t["hookedFunctions"] == 1
    chain = wait_stable(lambda: count(mcp, sid, "chain_sum"), 0.5, what="chain_sum count")
    before = count(mcp, sid, "compute")
    wait_until(lambda: count(mcp, sid, "compute") >= before + 10,
               what="compute still traced by its own pattern")
    assert count(mcp, sid, "chain_sum") == chain
    # removing a pattern that is not active changes nothing
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["nosuch"]})
    assert t["activePatterns"] == ["compute"] and t["hookedFunctions"] == 1
    # adding the same pattern twice keeps one
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["compute"]})
    assert t["activePatterns"] == ["compute"] and t["hookedFunctions"] == 1
    mcp.stop(sid)


def test_runtime_patterns_are_per_session(mcp):
    """Runtime patterns belong to their session: not staged for the next launch."""
    sid = start_worker(mcp)
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    assert mcp.call_tool("debug_trace", {})["activePatterns"] == []
    r = mcp.launch("trace_c", project=REPO)
    assert not r.get("pendingPatternsApplied")
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_trace_exited_and_unknown_sessions(mcp):
    r = mcp.launch("trace_c", project=REPO)
    sid = r["sessionId"]
    mcp.wait_ended(sid)
    err = mcp.tool_error("debug_trace", {"sessionId": sid, "add": ["add_ints"]})
    assert err.code == "PROCESS_EXITED", err
    err = mcp.tool_error("debug_trace", {"sessionId": sid})
    assert err.code == "PROCESS_EXITED", err
    err = mcp.tool_error("debug_trace", {"sessionId": "nosuch-2026-01-01-00h00",
                                         "add": ["main"]})
    assert err.code == "SESSION_NOT_FOUND", err
    # a stopped (killed by the user) session
    sid2 = start_worker(mcp)
    mcp.stop(sid2, retain=True)
    err = mcp.tool_error("debug_trace", {"sessionId": sid2, "add": ["tick"]})
    assert err.code == "PROCESS_EXITED", err


@pytest.mark.valgrind_costly
def test_trace_query_right_after_launch_keeps_pending_patterns(mcp):
    """A debug_trace query sent at once after debug_launch must neither fail with
    PROCESS_EXITED while the target runs nor lose the staged patterns. (hot_loop -1
    waits for SIGUSR1 after its calls: it runs until the test is done with it.)"""
    mcp.call_tool("debug_trace", {"add": ["hot"]})
    for _ in range(5):
        r = mcp.launch("hot_loop", project=REPO, args=["-1"])
        sid = r["sessionId"]
        assert r["pendingPatternsApplied"] == 1
        t = mcp.call_tool_raw("debug_trace", {"sessionId": sid})
        assert not t.get("isError"), t
        assert t["structuredContent"]["hookedFunctions"] == 1
        mcp.wait_events(sid, 1, eventType="stdout")
        os.kill(r["pid"], signal.SIGUSR1)
        st = mcp.wait_ended(sid, timeout=T_LONG)
        assert st["exitCode"] == 0
        assert st["eventCounts"].get("function_enter", 0) > 0, st
        mcp.delete(sid)


@pytest.mark.valgrind_costly
def test_hot_function_is_sampled(mcp):
    mcp.call_tool("debug_trace", {"add": ["hot"]})
    r = mcp.launch("hot_loop", project=REPO, args=["-1"])  # waits for SIGUSR1 after "done"
    sid = r["sessionId"]
    q = mcp.wait_events(sid, 1, timeout=T_LONG, eventType="stdout")
    assert q["events"][0]["text"] == "done 7500000"
    t = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert [s["function"] for s in t["sampling"]] == ["hot"], t
    assert t["sampling"][0]["calls"] == 5000000, t  # every call, sampled or not
    assert any("hot" in w for w in t["warnings"]), t
    os.kill(r["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0
    n = st["eventCounts"]["function_enter"]
    assert 0 < n < 5000000
    assert st["eventCounts"]["function_exit"] == n
    ev = mcp.all_events(sid, verbose=True, eventType="function_exit")
    # The first calls are recorded whole (trace.sampleAfter); the sample windows that
    # follow, if the program still runs at the first re-arm, are marked sampled.
    flags = [e["sampled"] for e in ev]
    assert not flags[0] and flags == sorted(flags)
    assert {e["returnValue"] for e in ev} <= {0, 1, 2, 3}


@pytest.mark.valgrind_sample
def test_hot_function_is_sampled_to_its_end(mcp):
    """A hot function does not hold the program back: it is sampled, its calls only
    counted, and the program runs to its end with every call counted. How fast it
    then runs is a figure: bench/bench_count.c (the counting jump) and
    bench/bench_fast.c (the fast path, default sampling) measure it."""
    mcp.call_tool("debug_trace", {"add": ["hot"]})
    r = mcp.launch("hot_loop", project=REPO)
    st = mcp.wait_ended(r["sessionId"], timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0
    [s] = st["sampling"]
    assert s["function"] == "hot" and s["calls"] == 5_000_000 and s["callsExact"], s
    assert s["recorded"] < s["calls"], s
    ex = mcp.query(r["sessionId"], eventType="process_exit", verbose=True)["events"]
    assert ex[0]["exitCode"] == 0


@pytest.mark.valgrind_sample
def test_longjmp_out_of_traced_functions(mcp):
    mcp.call_tool("debug_trace", {"add": ["main", "deep1", "deep2", "after"]})
    r = mcp.launch("jumps", project=REPO)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0
    assert [e["text"] for e in mcp.all_events(sid, eventType="stdout")] == [
        "jumped 42", "after 6"]
    ev = mcp.all_events(sid, verbose=True)
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    enters = {e["function"]: e for e in fn if e["eventType"] == "function_enter"}
    exits = {e["function"]: e for e in fn if e["eventType"] == "function_exit"}
    assert set(enters) == {"main", "deep1", "deep2", "after"}
    assert enters["deep1"]["parentEventId"] == enters["main"]["id"]
    assert enters["deep2"]["parentEventId"] == enters["deep1"]["id"]
    # after() is called by main once the jump landed: main is its parent
    assert enters["after"]["parentEventId"] == enters["main"]["id"]
    assert exits["after"]["returnValue"] == 6
    assert exits["after"]["parentEventId"] == enters["after"]["id"]
    for f in ("deep1", "deep2"):
        if f in exits:  # skipped exits are marked unwound, without a return value
            assert exits[f]["parentEventId"] == enters[f]["id"]
            assert exits[f].get("unwound") is True, exits[f]
            assert exits[f]["returnValue"] is None
            # and reported when the jump is noticed, before after() runs
            assert int(exits[f]["id"]) < int(enters["after"]["id"]), exits[f]
    assert exits["main"]["returnValue"] == 0
    assert exits["main"]["parentEventId"] == enters["main"]["id"]


@pytest.mark.valgrind_sample
def test_cpp_exception_through_traced_frames(mcp):
    mcp.call_tool("debug_trace", {"add": ["main", "outer", "middle", "thrower",
                                          "after_catch"]})
    r = mcp.launch("throw_catch", project=REPO)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    assert [e["text"] for e in mcp.all_events(sid, eventType="stdout")] == [
        "caught bad 5", "after 7"]
    ev = mcp.all_events(sid, verbose=True)
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    enters = {e["function"]: e for e in fn if e["eventType"] == "function_enter"}
    exits = {e["function"]: e for e in fn if e["eventType"] == "function_exit"}
    assert [enters[f]["arguments"][0]["value"] for f in ("outer", "middle", "thrower")] == [
        3, 4, 5]
    assert enters["middle"]["parentEventId"] == enters["outer"]["id"]
    assert enters["thrower"]["parentEventId"] == enters["middle"]["id"]
    assert exits["after_catch"]["returnValue"] == 7
    assert enters["after_catch"]["arguments"] == [{"name": "v", "value": 1}]
    assert enters["after_catch"]["parentEventId"] == enters["main"]["id"]
    for f in ("outer", "middle", "thrower"):
        assert f in exits, "no exit event for %s (unwound by the exception)" % f
        assert exits[f]["unwound"] is True, exits[f]
        assert exits[f]["returnValue"] is None
        assert exits[f]["parentEventId"] == enters[f]["id"]
    assert "main" in exits, "main's exit is missing"
    assert exits["main"]["returnValue"] == 0


def test_spec000_validation_scenario(mcp):
    """Launch clean, read stderr, add traces at runtime, find the failing validate.
    (form_app "wait" clicks every 50 ms until SIGUSR1: it runs until the traces have
    shown what they must, not for 2 s the test must act within.)"""
    r = mcp.launch("form_app", project=REPO, args=["wait"])
    sid = r["sessionId"]
    assert "pendingPatternsApplied" not in r or not r["pendingPatternsApplied"]
    q = mcp.wait_events(sid, 1, eventType="stderr")
    assert q["events"][0]["text"] == "submit failed"
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["submit::*", "form::validate"]})
    assert t["mode"] == "runtime"
    assert t["activePatterns"] == ["submit::*", "form::validate"]
    assert t["hookedFunctions"] == 2
    wait_until(lambda: mcp.query(sid, eventType="function_exit",
                                 function={"equals": "form::validate"})["totalCount"] >= 1,
               what="a form::validate exit")
    q = mcp.query(sid, function={"contains": "validate"}, eventType="function_exit",
                  verbose=True)
    v = q["events"][0]
    assert v["function"] == "form::validate"
    assert v["returnValue"] is False and v["returnType"] == "bool"
    assert v["sourceFile"] == REPO + "/tests/fixtures/form_app.cpp"
    q = mcp.query(sid, function={"contains": "validate"}, eventType="function_enter",
                  verbose=True)
    e = q["events"][0]
    assert e["functionRaw"] == "_ZN4form8validateERKNS_4FormE"
    assert len(e["arguments"]) == 1 and e["arguments"][0]["name"] == "f"
    form = e["arguments"][0]["value"]
    assert form["name"] == "alice" and form["email"] == ""
    assert form["age"] in (30, 31)
    # the caller is submit::handle_click, which returns false too
    parent = e["parentEventId"]
    hc = mcp.query(sid, function={"equals": "submit::handle_click"}, verbose=True,
                   limit=500)["events"]
    assert parent in [x["id"] for x in hc if x["eventType"] == "function_enter"]
    hc_exit = [x for x in hc if x["eventType"] == "function_exit" and x["parentEventId"] == parent]
    assert len(hc_exit) == 1 and hc_exit[0]["returnValue"] is False
    os.kill(r["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0
    clicks = st["eventCounts"]["stderr"]
    assert mcp.query(sid, eventType="stdout")["events"][-1]["text"] == "clicks %d" % clicks
    n_validate = count(mcp, sid, "form::validate")
    assert 1 <= n_validate <= clicks - 1
    assert count(mcp, sid, "form::validate", "function_exit") == n_validate
    assert count(mcp, sid, "submit::handle_click") == n_validate
    # no false return hides among them: every validate exit is false
    q = mcp.query(sid, function={"equals": "form::validate"}, eventType="function_exit",
                  returnValue={"equals": False})
    assert q["totalCount"] == n_validate


def _cpus_allowed(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_cpu_pinning_only_once_traced(mcp):
    """trace.pinCpu (trace.mode "int3", whose every call stops twice): an output-only
    session keeps its affinity; the first hook pins the target's main thread to the
    tracer's CPU (cheaper stops)."""
    mcp.world.write_project_settings({"trace.mode": "int3"})
    r = mcp.launch("worker_loop", project=mcp.world.project, args=["600"])
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    before = _cpus_allowed(pid)
    assert before == _cpus_allowed(os.getpid()), before
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    after = _cpus_allowed(pid)
    assert after.isdigit(), after
    mcp.call_tool("debug_session", {"action": "stop", "sessionId": sid})


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_fast_path_pins_nothing(mcp):
    """The fast path (the default trace.mode) records without stopping: tracing
    leaves the program's affinity as it was."""
    r = mcp.launch("worker_loop", project=REPO, args=["600"])
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    before = _cpus_allowed(pid)
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    assert "through the fast path" in t["status"], t
    mcp.wait_events(sid, 2, eventType="function_exit")
    assert _cpus_allowed(pid) == before
    mcp.call_tool("debug_session", {"action": "stop", "sessionId": sid})
