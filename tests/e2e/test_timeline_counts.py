"""Exact counts and honest sampling (issue 13, items 1 and 5; ptrace/hooks/hooks.h "Hot
functions"): an ordinary burst is recorded whole; a function called millions of times
is sampled and still counted exactly (the counting jump), in status after the program
ended and in the `sampling` indicator of query answers; sample windows keep coming
with no client traffic; a function that cannot take the jump counts on its int3; a
forked child's calls count too."""

import os
import signal

import pytest

from bp_util import bp_add, cont, until_bp
from conftest import T_LONG, wait_until
from test_stacks import line_of

SAMPLE_WINDOW_GAP_NS = 150_000_000  # the first back-off is 200 ms

# A function is sampled by its rate (more than 100 calls/s once it has recorded
# trace.sampleAfter events), not only by the tracer's share of the time: on a machine
# loaded by other work the program waits for a CPU between its stops, and the share
# then stays under any budget (one CI run in ~50; 26-53% of the default 50% for a
# daemon under valgrind beside two busy processes).
HOT = {"trace.hotCallsPerSecond": 100}


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


def run_until_counted_by(mcp, fixture, function, counted_by, calls):
    """Runs fixture in its mode -1 (it calls function until SIGUSR1) with function
    traced, until status says its calls are counted by counted_by ("jump",
    "count-only") and number at least calls; then ends it. Returns (sessionId, that
    sampling entry, status at the end, the calls the program says it made).

    The state is waited for, not the program's end: a sampled function alternates
    between its counting (a back-off of 200 ms doubling up to 5 s) and sample windows
    of recorded calls (countedBy "recorded"), so the state at a fixed program's end is
    whichever phase its last call fell in, which the machine's speed decides."""
    mcp.call_tool("debug_trace", {"add": [function]})
    r = mcp.launch(fixture, args=["-1"])
    sid = r["sessionId"]

    def counted():
        s = [x for x in status(mcp, sid).get("sampling", []) if x["function"] == function]
        return s[0] if s and s[0]["countedBy"] == counted_by and s[0]["calls"] >= calls \
            else None
    seen = wait_until(counted, T_LONG, what="%s counted by %s, %d calls in"
                      % (function, counted_by, calls))
    os.kill(r["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    out = mcp.query(sid, eventType="stdout")["events"]
    assert len(out) == 1 and out[0]["text"].startswith("done "), out
    return sid, seen, status(mcp, sid), int(out[0]["text"].split()[1])


def check_counted_exactly(st, function, made, counted_by, sample_after):
    """The answer at the end: every call the program made, counted exactly, by
    counted_by or, when a sample window came before the program's end, its int3; the
    first sample_after calls recorded (trace.sampleAfter), not all."""
    s = sampling_of(st, function)
    assert s["calls"] == made and s["callsExact"] is True, (s, made)
    assert s["countedBy"] in (counted_by, "recorded"), s
    assert sample_after <= s["recorded"] < s["calls"], s
    return s


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
    mcp.world.write_project_settings(dict(INT3, **HOT))
    sid, seen, st, made = run_until_counted_by(mcp, "hot_count", "counted", "jump",
                                               10_000_000)
    assert seen["callsExact"] is True and 5000 <= seen["recorded"] < seen["calls"], seen
    assert made >= 10_000_000
    f = top(st, "counted")
    assert f["calls"] == made and f["recorded"] < made, (f, made)
    check_counted_exactly(st, "counted", made, "jump", 5000)
    assert st["overhead"]["tracerSharePercent"] > 0, st
    q = mcp.query(sid, eventType="function_enter", limit=1)
    s = sampling_of(q, "counted")
    assert s["calls"] == made and s["recorded"] < s["calls"], q
    assert isinstance(s["since"], (int, float)) and s["since"] > 0
    # the ordinary query answer about output carries it too: the timeline is a sample
    assert sampling_of(mcp.query(sid, eventType="stdout"), "counted")["calls"] == made
    # kept in the store once the session lets its program go
    mcp.stop(sid, retain=True)
    st = status(mcp, sid)
    assert top(st, "counted")["calls"] == made, st
    s = sampling_of(st, "counted")
    assert s["calls"] == made and s["countedBy"] == "stored", s
    assert s["recorded"] < s["calls"]


def test_sample_windows_come_without_client_traffic(mcp):
    # sampled early, whatever the machine's load: the timer is under test here
    mcp.world.write_project_settings({"trace.overheadBudgetPercent": 20})
    mcp.call_tool("debug_trace", {"add": ["timed_hot"]})
    r = mcp.launch("hot_timed", args=["-1"])  # loops until SIGUSR1
    sid = r["sessionId"]

    def sampled():
        return [x for x in status(mcp, sid).get("sampling", [])
                if x["function"] == "timed_hot"]
    [s] = wait_until(sampled, T_LONG, what="timed_hot sampled")
    # Then one blocking wait, and nothing else, until a call recorded after the first
    # back-off: a sample window, which only the re-arm timer brings.
    x = mcp.call_tool("debug_continue", {
        "sessionId": sid, "action": "until", "timeoutMs": 60000,
        "condition": {"event": {"eventType": "function_enter",
                                "function": {"equals": "timed_hot"},
                                "timeFrom": int(s["since"]) + SAMPLE_WINDOW_GAP_NS}}},
        timeout=T_LONG + 60)
    assert x.get("conditionMet") is True, x
    os.kill(r["pid"], signal.SIGUSR1)
    mcp.wait_ended(sid, timeout=T_LONG)
    st = status(mcp, sid)
    done = mcp.query(sid, eventType="stdout")["events"]
    calls = int(done[0]["text"].split()[1])
    s = sampling_of(st, "timed_hot")
    assert s["calls"] == calls and s["callsExact"] is True, (s, calls)
    later = mcp.query(sid, eventType="function_enter", function={"equals": "timed_hot"},
                      timeFrom=int(s["since"]) + SAMPLE_WINDOW_GAP_NS, limit=5,
                      verbose=True)
    assert later["totalCount"] > 0, (s, later)
    assert all(e["sampled"] for e in later["events"]), later


def test_function_that_cannot_take_the_jump_counts_on_its_int3(mcp):
    mcp.world.write_project_settings(dict(HOT, **{"trace.sampleAfter": 1000,
                                                  "trace.overheadBudgetPercent": 5}))
    sid, seen, st, made = run_until_counted_by(mcp, "count_nojump", "nojump",
                                               "count-only", 20000)
    assert seen["callsExact"] is True and 1000 <= seen["recorded"] < seen["calls"], seen
    check_counted_exactly(st, "nojump", made, "count-only", 1000)


def test_forked_child_calls_are_counted(mcp):
    # The parent calls until its jump is seen, then forks: the child starts with the
    # jump in its copy of the code and counts on its copy of the counter.
    mcp.world.write_project_settings(dict(INT3, **HOT))
    sid, seen, st, made = run_until_counted_by(mcp, "count_fork", "counted", "jump",
                                               2_000_000)
    assert made >= 6_000_000 and len(st["pids"]) == 2, (made, st)
    check_counted_exactly(st, "counted", made, "jump", 5000)


def test_step_into_a_function_on_its_counting_jump(mcp):
    """A step into a sampled function goes through its jump and trampoline and lands
    in the function's own code, as it would without tracing."""
    mcp.world.write_project_settings({**INT3, **HOT, "trace.overheadBudgetPercent": 20})
    mcp.call_tool("debug_trace", {"add": ["timed_hot"]})
    sid = mcp.launch("hot_timed", args=["-1"])["sessionId"]  # runs until stopped

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
