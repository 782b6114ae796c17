"""Exact counts and honest sampling (issue 13, items 1 and 5; ptrace/hooks/hooks.h "Hot
functions"): an ordinary burst is recorded whole; a function called millions of times
is sampled and still counted exactly (the counting jump), in status after the program
ended and in the `sampling` indicator of query answers; sample windows keep coming
with no client traffic; a function that cannot take the jump counts on its int3; a
forked child's calls count too."""

import pytest

from bp_util import bp_add, cont, until_bp
from conftest import T_LONG, wait_until
from test_stacks import line_of

SAMPLE_WINDOW_GAP_NS = 150_000_000  # the first back-off is 200 ms


def status(mcp, sid):
    return mcp.call_tool("debug_session", {"action": "status", "sessionId": sid})


# The counting jump is how trace.mode "int3" counts a sampled function: the tests
# of it pin that mode (test_fastpath.py has the fast path's).
INT3 = {"trace.mode": "int3"}


def traced_run(mcp, pattern, fixture, args=None):
    """Runs fixture with pattern traced to its end; returns (sessionId, status)."""
    mcp.call_tool("debug_trace", {"add": [pattern]})
    r = mcp.launch(fixture, args=args)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    return sid, status(mcp, sid)


def top(st, function):
    return next(f for f in st["topFunctions"] if f["function"] == function)


def sampling_of(answer, function):
    return next(s for s in answer["sampling"] if s["function"] == function)


def test_burst_of_600_calls_is_recorded_whole(mcp):
    sid, st = traced_run(mcp, "burst_work", "burst_threads")
    assert st["eventCounts"]["function_enter"] == 600, st
    assert top(st, "burst_work")["calls"] == 600
    assert "sampling" not in st
    q = mcp.query(sid, eventType="function_enter", limit=1)
    assert q["totalCount"] == 600 and "sampling" not in q
    ev = mcp.all_events(sid, eventType="function_enter", verbose=True)
    assert not any(e.get("sampled") for e in ev)
    assert len({e["threadId"] for e in ev}) == 3


@pytest.mark.valgrind_sample
def test_ten_million_calls_counted_exactly(mcp):
    mcp.world.write_project_settings(INT3)
    sid, st = traced_run(mcp, "counted", "hot_count", args=["10000000"])
    out = mcp.query(sid, eventType="stdout")["events"]
    assert out[0]["text"] == "done 10000000"
    f = top(st, "counted")
    assert f["calls"] == 10_000_000 and f["recorded"] < 10_000_000, f
    s = sampling_of(st, "counted")
    assert s["calls"] == 10_000_000 and s["callsExact"] is True, s
    assert s["countedBy"] == "jump", s
    assert 5000 <= s["recorded"] < s["calls"]
    assert st["overhead"]["tracerSharePercent"] > 0, st
    q = mcp.query(sid, eventType="function_enter", limit=1)
    s = sampling_of(q, "counted")
    assert s["calls"] == 10_000_000 and s["recorded"] < s["calls"], q
    assert isinstance(s["since"], (int, float)) and s["since"] > 0
    # the ordinary query answer about output carries it too: the timeline is a sample
    assert sampling_of(mcp.query(sid, eventType="stdout"), "counted")["calls"] == 10_000_000
    # kept in the store once the session lets its program go
    mcp.stop(sid, retain=True)
    st = status(mcp, sid)
    assert top(st, "counted")["calls"] == 10_000_000, st
    s = sampling_of(st, "counted")
    assert s["calls"] == 10_000_000 and s["countedBy"] == "stored", s
    assert s["recorded"] < s["calls"]


def test_sample_windows_come_without_client_traffic(mcp):
    # sampled early, whatever the machine's load: the timer is under test here
    mcp.world.write_project_settings({"trace.overheadBudgetPercent": 20})
    mcp.call_tool("debug_trace", {"add": ["timed_hot"]})
    sid = mcp.launch("hot_timed", args=["1500"])["sessionId"]
    # One blocking wait, and nothing else, until the program says it is done.
    x = mcp.call_tool("debug_continue", {
        "sessionId": sid, "action": "until", "timeoutMs": 30000,
        "condition": {"event": {"eventType": "stdout", "text": {"contains": "finished"}}}})
    assert x.get("conditionMet") is True, x
    mcp.wait_ended(sid, timeout=T_LONG)
    st = status(mcp, sid)
    calls = int(x["event"]["text"].split()[1])
    s = sampling_of(st, "timed_hot")
    assert s["calls"] == calls and s["callsExact"] is True, (s, calls)
    # sampled well before the 1.5 s loop ends (its end is the "finished" line's time:
    # the launch itself takes longer under a sanitizer's daemon)
    assert s["since"] < x["event"]["timestampNs"] - 500_000_000, (s, x["event"])
    later = mcp.query(sid, eventType="function_enter", function={"equals": "timed_hot"},
                      timeFrom=int(s["since"]) + SAMPLE_WINDOW_GAP_NS, limit=5,
                      verbose=True)
    assert later["totalCount"] > 0, (s, later)
    assert all(e["sampled"] for e in later["events"]), later


def test_function_that_cannot_take_the_jump_counts_on_its_int3(mcp):
    # Sampled by its rate (more than 100 calls/s), not only by the tracer's share of
    # the time: a machine loaded by other work starves the program between its stops,
    # and the share then stays under any budget (one CI run in ~50).
    mcp.world.write_project_settings({"trace.sampleAfter": 1000,
                                      "trace.hotCallsPerSecond": 100,
                                      "trace.overheadBudgetPercent": 5})
    sid, st = traced_run(mcp, "nojump", "count_nojump", args=["20000"])
    s = sampling_of(st, "nojump")
    assert s["calls"] == 20000 and s["callsExact"] is True, s
    assert s["countedBy"] == "count-only", s
    assert 1000 <= s["recorded"] < 20000, s


def test_forked_child_calls_are_counted(mcp):
    mcp.world.write_project_settings(INT3)
    sid, st = traced_run(mcp, "counted", "count_fork", args=["2000000"])
    assert mcp.query(sid, eventType="stdout")["events"][0]["text"] == "done 6000000"
    assert len(st["pids"]) == 2, st
    s = sampling_of(st, "counted")
    assert s["calls"] == 6_000_000 and s["callsExact"] is True, s
    assert s["countedBy"] == "jump", s


def test_step_into_a_function_on_its_counting_jump(mcp):
    """A step into a sampled function goes through its jump and trampoline and lands
    in the function's own code, as it would without tracing."""
    mcp.world.write_project_settings(dict(INT3, **{"trace.overheadBudgetPercent": 20}))
    mcp.call_tool("debug_trace", {"add": ["timed_hot"]})
    sid = mcp.launch("hot_timed", args=["20000"])["sessionId"]

    def jumped():
        s = [x for x in status(mcp, sid).get("sampling", []) if x["function"] == "timed_hot"]
        return s[0] if s and s[0]["countedBy"] == "jump" else None
    wait_until(jumped, T_LONG, what="timed_hot on its counting jump")
    line = line_of("hot_timed.c", "timed_hot(n++);")
    [bp] = bp_add(mcp, sid, {"file": "hot_timed.c", "line": line})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert (a["function"], a["line"]) == ("main", line), a
    mcp.call_tool("debug_breakpoint", {"sessionId": sid, "remove": [bp["id"]]})
    s = cont(mcp, sid, "step-into")
    assert s["state"] == "paused" and s["function"] == "timed_hot", s
    assert s["file"].endswith("hot_timed.c"), s
    assert sampling_of(status(mcp, sid), "timed_hot")["callsExact"] is True
    mcp.stop(sid)
