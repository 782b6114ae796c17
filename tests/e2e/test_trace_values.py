"""Function events (docs/PROTOCOL.md "Function events"): argument and return value
decoding by DWARF type, serializationDepth, parentEventId and durationNs (recursion,
tail calls, -O2 prologues), pending patterns applied at launch, and the debug_query
filters on function events."""

import re

import pytest

from conftest import REPO, wait_until

HEX = re.compile(r"^0x[0-9a-f]+$")


def run_traced(mcp, fixture, patterns, depth=None, args=None):
    """Stages patterns (and serializationDepth), runs fixture to its end; returns the
    session id and its events (verbose)."""
    a = {"add": list(patterns)}
    if depth is not None:
        a["serializationDepth"] = depth
    mcp.call_tool("debug_trace", a)
    r = mcp.launch(fixture, project=REPO, args=args)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    mcp.call_tool("debug_trace", {"remove": list(patterns)})
    return sid, mcp.all_events(sid, verbose=True)


def calls(events, function):
    """[(enter, exit)] of function, paired by the exit's parentEventId."""
    enters = {e["id"]: e for e in events
              if e["eventType"] == "function_enter" and e["function"] == function}
    out = []
    for x in events:
        if x["eventType"] == "function_exit" and x["function"] == function:
            assert x["parentEventId"] in enters, x
            out.append((enters[x["parentEventId"]], x))
    out.sort(key=lambda p: int(p[0]["id"]))
    return out


def args_of(enter):
    return {a["name"]: a["value"] for a in enter["arguments"]}


# ---- decoding ----------------------------------------------------------------------

def test_scalar_arguments_and_returns(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["add_ints", "scale", "half", "is_even",
                                          "count_chars", "factorial"])
    c = calls(ev, "add_ints")
    assert [args_of(e) for e, _ in c] == [{"a": i, "b": 2} for i in range(3)]
    assert [x["returnValue"] for _, x in c] == [2, 3, 4]
    assert all(x["returnType"] == "number" for _, x in c)
    c = calls(ev, "scale")
    assert [args_of(e) for e, _ in c] == [{"v": 1.5, "factor": float(i)} for i in range(3)]
    assert [x["returnValue"] for _, x in c] == [0, 1.5, 3.0]
    c = calls(ev, "half")  # float
    assert [args_of(e) for e, _ in c] == [{"f": 3.0}] * 3
    assert [x["returnValue"] for _, x in c] == [1.5] * 3
    c = calls(ev, "is_even")  # bool
    assert [x["returnValue"] for _, x in c] == [True, False, True]
    assert all(x["returnType"] == "bool" for _, x in c)
    c = calls(ev, "count_chars")  # char * as a string; size_t return
    assert [args_of(e)["text"] for e, _ in c] == ["banana"] * 3
    assert [x["returnValue"] for _, x in c] == [3] * 3
    # unsigned long returns: the outermost factorial(5), (6), (7) calls
    outer = [x["returnValue"] for e, x in calls(ev, "factorial")
             if args_of(e)["n"] in (5, 6, 7) and e.get("parentEventId") is None]
    assert outer == [120, 720, 5040]


def test_struct_enum_string_returns_and_arguments(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["make_point", "manhattan", "move_point",
                                          "next_color", "color_name", "first_char"])
    c = calls(ev, "make_point")  # struct returned by value
    assert [args_of(e) for e, _ in c] == [{"x": i, "y": -2 * i} for i in range(3)]
    assert [x["returnValue"] for _, x in c] == [{"x": i, "y": -2 * i} for i in range(3)]
    c = calls(ev, "manhattan")  # struct by value, after move_point(+1, +1)
    assert [args_of(e)["p"] for e, _ in c] == [{"x": i + 1, "y": -2 * i + 1}
                                               for i in range(3)]
    assert [x["returnValue"] for _, x in c] == [2, 3, 6]
    c = calls(ev, "move_point")  # struct pointer: {"@ptr", fields}; void return
    for i, (e, x) in enumerate(c):
        p = args_of(e)["p"]
        assert HEX.match(p.pop("@ptr")), p
        assert p == {"x": i, "y": -2 * i}
        assert args_of(e)["dx"] == 1 and args_of(e)["dy"] == 1
        assert x["returnValue"] is None
    c = calls(ev, "next_color")  # enum argument and return by enumerator name
    assert [args_of(e)["c"] for e, _ in c] == ["GREEN"] * 3
    assert [x["returnValue"] for _, x in c] == ["BLUE"] * 3
    # per iteration (printf's arguments are evaluated right to left):
    # color_name(next_color(GREEN)) then color_name((enum color)i), where 1 and 2 are
    # no enumerator of enum color (numbers)
    c = calls(ev, "color_name")
    assert [args_of(e)["c"] for e, _ in c] == ["BLUE", "RED", "BLUE", 1, "BLUE", 2]
    assert [x["returnValue"] for _, x in c] == ["blue", "red", "blue", "blue", "blue",
                                                "blue"]
    assert all(x["returnType"] == "string" for _, x in c)
    c = calls(ev, "first_char")
    assert [args_of(e)["s"] for e, _ in c] == ["xyz"] * 3


@pytest.mark.valgrind_sample
def test_nested_struct_pointer_arrays_and_bitfields(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["count_flags", "list_sum"])
    c = calls(ev, "count_flags")
    for i, (e, x) in enumerate(c):
        f = args_of(e)["f"]
        assert HEX.match(f.pop("@ptr"))
        assert f == {"ready": 1, "mode": 5, "tags": [i, 0, 0, 0],
                     "grid": [[0, 0, 0], [0, 0, 2.0]]}
        assert x["returnValue"] == 1 + 5 + i + 2
    c = calls(ev, "list_sum")
    for i, (e, x) in enumerate(c):
        head = args_of(e)["head"]
        assert HEX.match(head["@ptr"])
        assert head["value"] == 10
        assert HEX.match(head["next"]["@ptr"])
        assert head["next"]["value"] == i and head["next"]["next"] is None
        assert x["returnValue"] == 10 + i


@pytest.mark.parametrize("depth", [1, 2])
def test_serialization_depth_pending(mcp, depth):
    """serializationDepth given with the staged patterns applies to the launch: at
    depth 1 the pointed-to struct's own pointer fields are not followed."""
    t = mcp.call_tool("debug_trace", {"add": ["list_sum"], "serializationDepth": depth})
    assert t["serializationDepth"] == depth
    assert mcp.call_tool("debug_trace", {})["serializationDepth"] == depth
    r = mcp.launch("trace_c", project=REPO)
    mcp.wait_ended(r["sessionId"])
    e = mcp.all_events(r["sessionId"], verbose=True, eventType="function_enter")[0]
    head = args_of(e)["head"]
    assert head["value"] == 10
    if depth == 1:
        assert isinstance(head["next"], str) and head["next"].startswith("<struct node at 0x"), head
    else:
        assert head["next"]["value"] == 0 and head["next"]["next"] is None, head


@pytest.mark.valgrind_sample
def test_serialization_depth_runtime(mcp):
    r = mcp.launch("worker_loop", project=REPO, args=["600"])
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["chain_sum"],
                                      "serializationDepth": 1})
    assert t["serializationDepth"] == 1 and t["hookedFunctions"] == 1
    q = mcp.wait_events(sid, 1, eventType="function_enter", verbose=True)
    head = args_of(q["events"][0])["l"]
    assert HEX.match(head["@ptr"]) and head["value"] >= 0
    assert isinstance(head["next"], str) and head["next"].startswith("<struct link at 0x"), head
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "serializationDepth": 2})
    assert t["serializationDepth"] == 2

    def followed():
        # a call recorded after the change (calls already in flight may still carry
        # the old depth)
        q2 = mcp.query(sid, eventType="function_enter", verbose=True,
                       afterEventId=q["lastEventId"], limit=500)
        for e in q2["events"]:
            nxt = args_of(e)["l"]["next"]
            if isinstance(nxt, dict):
                return nxt
        return None
    nxt = wait_until(followed, what="a chain_sum call decoded at depth 2")
    assert nxt["value"] == 2 and nxt["next"] is None and HEX.match(nxt["@ptr"]), nxt
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_cpp_values(mcp):
    sid, ev = run_traced(mcp, "trace_cpp", ["a::b::process", "a::b::Widget::set",
                                            "a::b::twice<double>", "a::b::Box<int>::unwrap"])
    c = calls(ev, "a::b::process")
    assert len(c) == 9
    # per iteration: process(1.5) -> 3.0, process(i) -> i + 1, process(sum) -> sum.id
    dbl = [x["returnValue"] for e, x in c if args_of(e).get("v") == 1.5]
    assert dbl == [3.0] * 3
    ints = [(args_of(e)["v"], x["returnValue"]) for e, x in c
            if isinstance(args_of(e).get("v"), int) and "item" not in args_of(e)]
    assert ints == [(0, 1), (1, 2), (2, 3)]
    items = [(args_of(e)["item"], x["returnValue"]) for e, x in c if "item" in args_of(e)]
    assert [rv for _, rv in items] == [0, 1, 2]
    for i, (it, _) in enumerate(items):  # a reference: followed like a pointer
        assert HEX.match(it.pop("@ptr")), it
        assert it == {"id": i, "weight": 0.5 * i}
    sets = calls(ev, "a::b::Widget::set")
    assert [args_of(e)["size"] for e, _ in sets] == [3, 4, 6]
    tw = calls(ev, "a::b::twice<double>")
    assert [x["returnValue"] for _, x in tw] == [0.0, 0.5, 1.0]
    assert [x["returnValue"] for _, x in calls(ev, "a::b::Box<int>::unwrap")] == [0, 1, 2]


# ---- parents and durations ---------------------------------------------------------

@pytest.mark.valgrind_sample
def test_recursion_parents_and_durations(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["factorial"])
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    assert len(fn) == 36
    # first top-level call: factorial(5) .. factorial(1)
    first = fn[:10]
    enters, exits = first[:5], first[5:]
    assert [e["eventType"] for e in enters] == ["function_enter"] * 5
    assert [args_of(e)["n"] for e in enters] == [5, 4, 3, 2, 1]
    assert enters[0].get("parentEventId") is None
    for prev, cur in zip(enters, enters[1:]):
        assert cur["parentEventId"] == prev["id"]
    assert [x["eventType"] for x in exits] == ["function_exit"] * 5
    # exits pair with their enters, innermost first
    assert [x["parentEventId"] for x in exits] == [e["id"] for e in reversed(enters)]
    assert [x["returnValue"] for x in exits] == [1, 2, 6, 24, 120]
    durs = [x["durationNs"] for x in exits]
    assert all(isinstance(d, int) and d > 0 for d in durs)
    assert durs == sorted(durs), "outer calls must last longer: %r" % durs
    for e, x in zip(reversed(enters), exits):
        assert x["timestampNs"] - e["timestampNs"] == x["durationNs"]
        assert x["threadId"] == e["threadId"] == e["pid"]
    # summaries (not verbose) carry durationNs too
    q = mcp.query(sid, eventType="function_exit", limit=5)
    assert [e["durationNs"] for e in q["events"]] == durs


def test_parents_across_functions_and_main(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["main", "apply", "square"])
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    main = fn[0]
    assert main["function"] == "main" and main["eventType"] == "function_enter"
    assert main.get("parentEventId") is None
    c_apply = calls(ev, "apply")
    assert all(e["parentEventId"] == main["id"] for e, _ in c_apply)
    apply_ids = {e["id"] for e, _ in c_apply}
    sq = calls(ev, "square")
    assert len(sq) == 6
    # square(i) from main, square(i + 1) through apply's function pointer
    via_apply = [(args_of(e)["v"], x["returnValue"]) for e, x in sq
                 if e["parentEventId"] in apply_ids]
    direct = [(args_of(e)["v"], x["returnValue"]) for e, x in sq
              if e["parentEventId"] == main["id"]]
    assert via_apply == [(1, 1), (2, 4), (3, 9)]
    assert direct == [(0, 0), (1, 1), (2, 4)]
    main_exit = [x for x in ev if x["eventType"] == "function_exit" and x["function"] == "main"]
    assert len(main_exit) == 1 and main_exit[0]["returnValue"] == 0
    assert main_exit[0]["parentEventId"] == main["id"]


def test_pending_patterns_applied_at_launch(mcp):
    """Staged patterns are armed before main runs: main's first calls are captured."""
    mcp.call_tool("debug_trace", {"add": ["main", "make_point"]})
    r = mcp.launch("trace_c", project=REPO)
    assert r["pendingPatternsApplied"] == 2
    sid = r["sessionId"]
    mcp.wait_ended(sid)
    ev = mcp.all_events(sid, verbose=True)
    assert ev[0]["eventType"] == "function_enter" and ev[0]["function"] == "main"
    assert ev[1]["eventType"] == "function_enter" and ev[1]["function"] == "make_point"
    assert args_of(ev[1]) == {"x": 0, "y": 0}
    assert ev[1]["parentEventId"] == ev[0]["id"]
    # the staged patterns stay staged for the next launch (until removed)
    t = mcp.call_tool("debug_trace", {})
    assert t["mode"] == "pending" and sorted(t["activePatterns"]) == ["main", "make_point"]
    r2 = mcp.launch("trace_c", project=REPO)
    assert r2["pendingPatternsApplied"] == 2
    mcp.wait_ended(r2["sessionId"])
    assert mcp.query(r2["sessionId"], eventType="function_enter",
                     function={"equals": "make_point"})["totalCount"] == 3
    mcp.call_tool("debug_trace", {"remove": ["main", "make_point"]})
    r3 = mcp.launch("trace_c", project=REPO)
    assert "pendingPatternsApplied" not in r3 or r3["pendingPatternsApplied"] == 0
    st = mcp.wait_ended(r3["sessionId"])
    assert "function_enter" not in st["eventCounts"]


@pytest.mark.valgrind_sample
def test_event_fields(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["add_ints"])
    e, x = calls(ev, "add_ints")[0]
    assert e["function"] == "add_ints"
    assert e.get("functionRaw", "add_ints") == "add_ints"  # C: no separate linkage name
    assert e["sourceFile"] == REPO + "/tests/fixtures/trace_c.c"
    with open(e["sourceFile"]) as f:
        assert "int add_ints(int a, int b)" in f.read().splitlines()[e["line"] - 1]
    assert x["line"] == e["line"] and x["sourceFile"] == e["sourceFile"]
    assert e["threadName"] == "trace_c" and e["sampled"] is False
    q = mcp.query(sid, eventType="function_enter", limit=1)
    summary = q["events"][0]
    for k in ("arguments", "returnValue", "parentEventId", "threadId", "functionRaw"):
        assert k not in summary, summary
    assert summary["function"] == "add_ints" and summary["line"] == e["line"]


# ---- optimized code -----------------------------------------------------------------

@pytest.mark.valgrind_sample
@pytest.mark.parametrize("fixture", ["opt_O2", "opt_nocf_O2"])
def test_optimized_prologues_and_tail_calls(mcp, fixture):
    sid, ev = run_traced(mcp, fixture, ["main", "tail_caller", "tail_callee",
                                        "read_global", "leaf_sum"])
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    expected_t = [3, 6, 6, 9, 12]  # (i + 1) * 2 + global % 3 with global = 100 + i
    assert out == ["%d %d %d %d" % (i, expected_t[i], 100 + i, i + 10) for i in range(5)]
    main = ev[0]
    assert main["function"] == "main"
    rg = calls(ev, "read_global")  # first instruction RIP-relative (after endbr64 or not)
    assert [x["returnValue"] for _, x in rg] == [100, 101, 102, 103, 104]
    assert all(e["parentEventId"] == main["id"] for e, _ in rg)
    ls = calls(ev, "leaf_sum")
    assert [(args_of(e)["a"], args_of(e)["b"], x["returnValue"]) for e, x in ls] == [
        (i, 10, i + 10) for i in range(5)]
    assert all(e["parentEventId"] == main["id"] for e, _ in ls)
    tc = calls(ev, "tail_caller")
    te = calls(ev, "tail_callee")
    assert [args_of(e)["x"] for e, _ in tc] == list(range(5))
    assert [args_of(e)["x"] for e, _ in te] == list(range(1, 6))
    assert [x["returnValue"] for _, x in te] == expected_t
    assert [x["returnValue"] for _, x in tc] == expected_t
    assert all(e["parentEventId"] == main["id"] for e, _ in tc)
    for (ce, cx), (ee, ex) in zip(tc, te):
        assert ee["parentEventId"] == ce["id"]
    # main is left normally with its return value
    mx = [x for x in ev if x["eventType"] == "function_exit" and x["function"] == "main"]
    assert len(mx) == 1 and mx[0]["returnValue"] == 0 and mx[0]["parentEventId"] == main["id"]


# ---- query filters ------------------------------------------------------------------

def test_query_filters_on_function_events(mcp):
    sid, ev = run_traced(mcp, "trace_c", ["add_ints", "is_even", "factorial", "half",
                                          "move_point"])
    q = mcp.query(sid, function={"equals": "add_ints"})
    assert q["totalCount"] == 6
    assert {e["function"] for e in q["events"]} == {"add_ints"}
    q = mcp.query(sid, function={"contains": "even"}, eventType="function_exit")
    assert q["totalCount"] == 3
    q = mcp.query(sid, function={"matches": "^(add|is)_"})
    assert q["totalCount"] == 12
    q = mcp.query(sid, function={"matches": "^fact.*l$"}, eventType="function_enter")
    assert q["totalCount"] == 18
    q = mcp.query(sid, sourceFile={"contains": "trace_c.c"})
    assert q["totalCount"] == len([e for e in ev if e["eventType"].startswith("function_")])
    q = mcp.query(sid, sourceFile={"equals": REPO + "/tests/fixtures/trace_c.c"},
                  function={"equals": "half"})
    assert q["totalCount"] == 6
    assert mcp.query(sid, sourceFile={"contains": "nosuch.c"})["totalCount"] == 0
    q = mcp.query(sid, returnValue={"equals": 3}, verbose=True)
    assert sorted((e["function"], e["returnValue"]) for e in q["events"]) == [
        ("add_ints", 3)]
    q = mcp.query(sid, returnValue={"equals": True}, verbose=True)
    assert [(e["function"], e["returnValue"]) for e in q["events"]] == [("is_even", True)] * 2
    q = mcp.query(sid, returnValue={"equals": 1.5}, verbose=True)
    assert [e["function"] for e in q["events"]] == ["half"] * 3
    q = mcp.query(sid, returnValue={"isNull": True}, eventType="function_exit", verbose=True)
    assert [e["function"] for e in q["events"]] == ["move_point"] * 3
    q = mcp.query(sid, returnValue={"isNull": False}, eventType="function_exit")
    assert q["totalCount"] == 3 + 3 + 18 + 3
    q = mcp.query(sid, threadName={"contains": "trace_"})
    assert q["totalCount"] == len([e for e in ev if e["eventType"].startswith("function_")])
    assert mcp.query(sid, threadName={"contains": "worker"})["totalCount"] == 0
    pid = ev[0]["pid"]
    assert mcp.query(sid, pid=pid, function={"equals": "add_ints"})["totalCount"] == 6
    assert mcp.query(sid, pid=pid + 1000000, function={"equals": "add_ints"})[
        "totalCount"] == 0
    exits = [e for e in ev if e["eventType"] == "function_exit"]
    longest = max(e["durationNs"] for e in exits)
    q = mcp.query(sid, minDurationNs=longest, verbose=True)
    assert [e["durationNs"] for e in q["events"]] == [longest]
    q = mcp.query(sid, minDurationNs=1)
    assert q["totalCount"] == len(exits)


def test_status_lists_most_called_functions(mcp):
    """debug_session status: topFunctions, most called first, counted by the store."""
    mcp.call_tool("debug_trace", {"add": ["factorial", "add_ints"]})
    sid = mcp.launch("trace_c", project=REPO)["sessionId"]
    st = mcp.wait_ended(sid)
    top = st["topFunctions"]
    calls = {t["function"]: t["calls"] for t in top}
    assert set(calls) == {"factorial", "add_ints"}, top
    assert [t["calls"] for t in top] == sorted(calls.values(), reverse=True)
    assert sum(calls.values()) == st["eventCounts"]["function_enter"]
    for name, n in calls.items():
        q = mcp.query(sid, eventType="function_enter", function={"equals": name})
        assert q["totalCount"] == n, (name, q["totalCount"], n)
    mcp.call_tool("debug_trace", {"remove": ["factorial", "add_ints"]})
