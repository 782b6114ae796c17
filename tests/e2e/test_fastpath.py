"""The in-process fast path (issue 15; ptrace/hooks.h "Fast path"): with trace.mode
"fast" a traced function's calls are recorded by a recorder inside the program, with
no ptrace stop, and give the same events as the int3 path: arguments (integer,
floating point, strings), return values, recursion, threads, a longjmp; exact counts
for a million calls; a function the entry jump cannot take stays on its int3 and is
reported; a bad trace.mode is refused with a warning."""

import pytest

from conftest import T_LONG
from test_trace_values import args_of, calls

PATTERNS = ["add", "scale", "greet", "fact", "jump_inner", "jump_outer"]


def traced(mcp, mode, patterns, fixture="fast_calls", args=None):
    """Runs fixture to its end with patterns traced in mode; returns (sid, the
    debug_trace answer of the launch, status, events)."""
    mcp.world.write_project_settings({"trace.mode": mode})
    mcp.call_tool("debug_trace", {"add": list(patterns)})
    r = mcp.launch(fixture, args=args)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    mcp.call_tool("debug_trace", {"remove": list(patterns)})
    return sid, r, st, mcp.all_events(sid, verbose=True)


def shape(events):
    """What both modes must agree on: per function, the calls' arguments and return
    values (sorted: threads interleave differently) and the unwound exits."""
    out = {}
    for f in PATTERNS:
        c = calls(events, f)
        out[f] = sorted((repr(args_of(e)), repr(x.get("returnValue")), bool(x.get("unwound")))
                        for e, x in c)
    return out


def test_fast_path_records_what_int3_records(mcp):
    _, _, _, slow = traced(mcp, "int3", PATTERNS, args=["50"])
    _, _, _, fast = traced(mcp, "fast", PATTERNS, args=["50"])
    assert shape(fast) == shape(slow)
    g = calls(fast, "greet")
    assert sorted(args_of(e)["name"] for e, _ in g) == ["worker-%d" % i for i in range(4)]
    assert {x["returnValue"] for _, x in g} == {8}
    f = calls(fast, "fact")
    assert len(f) == 10 and max(x["returnValue"] for _, x in f) == 3628800
    # recursion: each exit's parent is its own enter, the inner call nested in it
    outer = min(f, key=lambda p: int(p[0]["id"]))
    assert args_of(outer[0]) == {"n": 10} and outer[1]["returnValue"] == 3628800
    inner = [e for e, _ in f if args_of(e) == {"n": 9}][0]
    assert inner["parentEventId"] == outer[0]["id"]
    s = calls(fast, "scale")
    assert len(s) == 200 and all(x["returnValue"] == args_of(e)["x"] * 0.5 for e, x in s)
    # the longjmp: both frames reported unwound, none returned
    for name in ("jump_inner", "jump_outer"):
        (e, x), = calls(fast, name)
        assert x.get("unwound") is True and x.get("returnValue") is None, x
    assert {e["threadId"] for e in fast if e.get("function") == "scale"} == \
        {e["threadId"] for e in fast if e.get("function") == "greet"}
    assert len({e["threadId"] for e in fast if e.get("function") == "scale"}) == 4


def test_trace_answer_says_how_many_functions_took_the_fast_path(mcp):
    mcp.world.write_project_settings({"trace.mode": "fast"})
    r = mcp.launch("hot_count", args=["1000", "30"])  # lingers after its calls
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["counted", "main"]})
    assert "2 function(s) hooked (2 through the fast path)" in t["status"], t
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_a_million_calls_counted_exactly(mcp):
    sid, _, st, _ = traced(mcp, "fast", ["counted"], fixture="hot_count", args=["1000000"])
    top = next(f for f in st["topFunctions"] if f["function"] == "counted")
    assert top["calls"] == 1_000_000, top
    assert st["eventCounts"]["function_enter"] == top["recorded"], st
    out = mcp.query(sid, eventType="stdout")["events"]
    assert out[0]["text"] == "done 1000000"


def test_bad_trace_mode_is_refused_with_a_warning(mcp):
    mcp.world.write_project_settings({"trace.mode": "turbo"})
    mcp.call_tool("debug_trace", {"add": ["add"]})
    r = mcp.launch("fast_calls", args=["5"])
    assert any("trace.mode" in w and "int3" in w and "fast" in w
               for w in r.get("warnings", [])), r
    st = mcp.wait_ended(r["sessionId"], timeout=T_LONG)
    assert st["exitCode"] == 0
