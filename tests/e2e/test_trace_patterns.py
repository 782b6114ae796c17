"""debug_trace patterns (spec 003 "Pattern Syntax", docs/PROTOCOL.md debug_trace):
every row of the pattern table against the C++, C and Rust fixtures, @usercode,
@file:, INVALID_PATTERN and the zero-match status with a near-miss suggestion.

Each case stages the pattern (pending mode), launches the fixture with projectRoot =
the repository (the fixtures' sources are under it), waits for the end and compares
the exact set of traced function names (function_enter events)."""

import pytest

from conftest import REPO

CPP_A_ALL = {
    "a::b::Widget::Widget", "a::b::Widget::get", "a::b::Widget::set", "a::b::Widget::scaled",
    "a::b::operator+", "a::b::operator==", "a::b::Box<int>::Box", "a::b::Box<int>::unwrap",
    "a::b::twice<double>", "a::b::twice<int>", "a::b::process",
}
CPP_A_B_ONE_LEVEL = {
    "a::b::operator+", "a::b::operator==", "a::b::twice<double>", "a::b::twice<int>",
    "a::b::process",
}
CPP_LAMBDA = "main::{lambda(int)#1}::operator()"
CPP_PUSH_BACK = "std::vector<a::b::Item, std::allocator<a::b::Item> >::push_back"
# every function defined in trace_cpp.cpp that main runs
CPP_USER = CPP_A_ALL | {
    "main", "Square::Square", "Shape::Shape", "Circle::Circle", "checked_div", "greet",
    "Square::area", "Circle::area", "Circle::~Circle", "Shape::~Shape", "Square::~Square",
    CPP_LAMBDA,
}
C_USER = {
    "main", "make_point", "move_point", "sum_all", "count_flags", "list_sum", "first_char",
    "half", "next_color", "color_name", "apply", "square", "factorial", "is_even",
    "manhattan", "count_chars", "scale", "add_ints",
}
RUST_AREA = ("<trace_rust::geometry::shapes::Rect as "
             "trace_rust::geometry::shapes::Area>::area")
RUST_ALL = {
    "trace_rust::main", "trace_rust::geometry::Point::new",
    "trace_rust::geometry::Point::manhattan", "trace_rust::largest",
    "trace_rust::main::{{closure}}", "trace_rust::describe",
}


def traced(mcp, fixture, patterns, project=REPO):
    """Stages patterns, runs fixture to its end, unstages them; returns
    ({function name: number of enters}, the launch answer)."""
    mcp.call_tool("debug_trace", {"add": list(patterns)})
    try:
        r = mcp.launch(fixture, project=project)
        st = mcp.wait_ended(r["sessionId"])
        assert st["status"] == "exited" and st["exitCode"] == 0, st
        counts = {}
        for e in mcp.all_events(r["sessionId"], eventType="function_enter"):
            counts[e["function"]] = counts.get(e["function"], 0) + 1
        return counts, r
    finally:
        mcp.call_tool("debug_trace", {"remove": list(patterns)})


CASES = [
    # foo::bar exact
    ("trace_cpp", "a::b::process", {"a::b::process"}),
    ("trace_cpp", "a::b::Widget::get", {"a::b::Widget::get"}),
    ("trace_c", "add_ints", {"add_ints"}),
    ("trace_rust", "trace_rust::describe", {"trace_rust::describe"}),
    # foo::* one level, not deeper
    ("trace_cpp", "a::b::*", CPP_A_B_ONE_LEVEL),
    ("trace_cpp", "a::b::Widget::*", {"a::b::Widget::Widget", "a::b::Widget::get",
                                      "a::b::Widget::set", "a::b::Widget::scaled"}),
    ("trace_cpp", "a::*", set()),
    ("trace_c", "s*", {"sum_all", "square", "scale"}),
    ("trace_rust", "trace_rust::*", {"trace_rust::main", "trace_rust::largest",
                                     "trace_rust::describe"}),
    ("trace_rust_v0", "trace_rust_v0::largest::*", {"trace_rust_v0::largest::<i32>",
                                                    "trace_rust_v0::largest::<f64>"}),
    # foo::** any depth
    ("trace_cpp", "a::**", CPP_A_ALL),
    ("trace_cpp", "a::b::**", CPP_A_ALL),
    ("trace_rust", "trace_rust::**", RUST_ALL),
    ("trace_rust", "trace_rust::geometry::**", {"trace_rust::geometry::Point::new",
                                                "trace_rust::geometry::Point::manhattan"}),
    # *::validate: one leading level only
    ("trace_cpp", "*::area", {"Square::area", "Circle::area"}),
    ("trace_cpp", "*::process", set()),
    ("trace_rust", "*::manhattan", set()),
    ("trace_rust", "**::area", {RUST_AREA}),
    # auth::**::validate, including zero segments
    ("trace_cpp", "a::**::process", {"a::b::process"}),
    ("trace_cpp", "a::b::**::process", {"a::b::process"}),
    ("trace_cpp", "a::**::get", {"a::b::Widget::get"}),
    ("trace_cpp", "a::**::area", set()),
    # '::' inside <...> is not a separator
    ("trace_cpp", "std::vector<*>::push_back", {CPP_PUSH_BACK}),
    ("trace_cpp", "std::*::push_back", {CPP_PUSH_BACK}),
    ("trace_cpp", "a::b::twice<*>", {"a::b::twice<double>", "a::b::twice<int>"}),
    ("trace_cpp", "**::operator()", {CPP_LAMBDA}),
    # @usercode: declared under projectRoot only (no libc, libstdc++, crt, Rust std)
    ("trace_cpp", "@usercode", CPP_USER),
    ("trace_c", "@usercode", C_USER),
    ("trace_rust", "@usercode", RUST_ALL | {RUST_AREA}),
    # @file:NAME
    ("trace_cpp", "@file:trace_cpp.cpp", CPP_USER),
    ("trace_c", "@file:trace_c.c", C_USER),
    ("trace_c", "@file:tests/fixtures/trace_c", C_USER),
    ("trace_c", "@file:trace_cpp", set()),
]


@pytest.mark.parametrize("fixture,pattern,expected", CASES,
                         ids=["%s:%s" % (c[0], c[1]) for c in CASES])
def test_pattern_table(mcp, fixture, pattern, expected):
    counts, r = traced(mcp, fixture, [pattern])
    assert r["pendingPatternsApplied"] == 1
    assert set(counts) == expected, "pattern %r on %s: extra %r, missing %r" % (
        pattern, fixture, sorted(set(counts) - expected), sorted(expected - set(counts)))


@pytest.mark.valgrind_sample
def test_pattern_call_counts(mcp):
    """Each matched function is traced on every call (exact counts from main's loops)."""
    counts, _ = traced(mcp, "trace_cpp", ["a::b::process", "a::b::Widget::get"])
    assert counts == {"a::b::process": 9, "a::b::Widget::get": 6}
    counts, _ = traced(mcp, "trace_c", ["factorial", "color_name", "add_ints"])
    # factorial(5), (6), (7) recurse down to 1: 5 + 6 + 7 calls
    assert counts == {"factorial": 18, "color_name": 6, "add_ints": 3}


@pytest.mark.valgrind_sample
def test_usercode_depends_on_project_root(mcp):
    """@usercode with a projectRoot that holds none of the sources traces nothing."""
    counts, _ = traced(mcp, "trace_c", ["@usercode"], project=mcp.world.project)
    assert counts == {}


@pytest.mark.valgrind_sample
def test_overlapping_patterns_trace_each_function_once(mcp):
    counts, _ = traced(mcp, "trace_c", ["add_ints", "add_*", "@file:trace_c.c"])
    assert counts["add_ints"] == 3
    assert set(counts) == C_USER


INVALID = ["", "a<", "a>b", "foo:::bar", "***", "foo::", "@bogus", "@file:", "a b",
           "tick\n"]


@pytest.mark.parametrize("pattern", INVALID, ids=[repr(p) for p in INVALID])
def test_invalid_pattern_pending(mcp, pattern):
    err = mcp.tool_error("debug_trace", {"add": [pattern]})
    assert err.code == "INVALID_PATTERN", err
    assert "pattern" in err.message.lower()
    # nothing was staged
    assert mcp.call_tool("debug_trace", {})["activePatterns"] == []


@pytest.mark.valgrind_sample
def test_invalid_pattern_runtime_adds_nothing(mcp):
    r = mcp.launch("worker_loop", project=REPO, args=["600"])
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    err = mcp.tool_error("debug_trace", {"sessionId": sid, "add": ["tick", "a<"]})
    assert err.code == "INVALID_PATTERN", err
    assert "'a<'" in err.message
    t = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert t["mode"] == "runtime"
    assert t["activePatterns"] == [] and t["hookedFunctions"] == 0
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_zero_matches_status_suggests_near_miss(mcp):
    r = mcp.launch("worker_loop", project=REPO, args=["600"])
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tikc"]})
    assert t["mode"] == "runtime"
    assert t["activePatterns"] == ["tikc"]
    assert t["hookedFunctions"] == 0 and t["matchedFunctions"] == 0
    assert "tick" in t["status"], t["status"]
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["tikc"],
                                      "add": ["computee"]})
    assert t["hookedFunctions"] == 0
    assert "compute" in t["status"], t["status"]
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_zero_matches_pending_pattern_near_miss(mcp):
    """A staged pattern that matches nothing in the launched program: the session's
    trace answer says so and names the near miss (worker_loop lives long enough to be
    asked)."""
    mcp.call_tool("debug_trace", {"add": ["compte"]})
    r = mcp.launch("worker_loop", project=REPO, args=["600"])
    sid = r["sessionId"]
    assert r["pendingPatternsApplied"] == 1
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert t["activePatterns"] == ["compte"]
    assert t["hookedFunctions"] == 0
    assert "compute" in t["status"], t["status"]
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_shared_library_functions_by_pattern(mcp):
    """Functions of libshapes.so (a library under the project dir) are user code and
    are traced by name, by glob and by @usercode; their arguments decode."""
    counts, _ = traced(mcp, "uses_lib", ["shape_*"])
    assert counts == {"shape_area": 3, "shape_name": 3}
    counts, _ = traced(mcp, "uses_lib", ["@usercode"])
    assert counts == {"main": 1, "shape_area": 3, "shape_name": 3}
    counts, _ = traced(mcp, "uses_lib", ["@file:shapes_lib.c"])
    assert counts == {"shape_area": 3, "shape_name": 3}


@pytest.mark.valgrind_sample
def test_shared_library_values_and_parents(mcp):
    mcp.call_tool("debug_trace", {"add": ["shape_area", "shape_name", "main"]})
    r = mcp.launch("uses_lib", project=REPO)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert out == ["square 4.0", "rect 6.0", "circle 3.0"]
    ev = mcp.all_events(sid, verbose=True, eventType="function_exit")
    areas = [e["returnValue"] for e in ev if e["function"] == "shape_area"]
    names = [e["returnValue"] for e in ev if e["function"] == "shape_name"]
    assert areas == [4, 6, 3]
    assert names == ["square", "rect", "circle"]
    enters = mcp.all_events(sid, verbose=True, eventType="function_enter")
    main_id = [e["id"] for e in enters if e["function"] == "main"]
    assert len(main_id) == 1
    lib = [e for e in enters if e["function"] == "shape_area"]
    assert [e["arguments"][0]["value"]["kind"] for e in lib] == [
        "SHAPE_SQUARE", "SHAPE_RECT", "SHAPE_CIRCLE"]
    assert lib[1]["arguments"][0]["value"]["size"] == 2
    assert lib[1]["arguments"][0]["value"]["other"] == 3
    assert all(e["parentEventId"] == main_id[0] for e in lib)
    assert all(e["sourceFile"].endswith("tests/fixtures/shapes_lib.c") for e in lib)


# ---- programs without debug info ------------------------------------------------------

@pytest.mark.valgrind_sample
def test_program_without_dwarf(mcp, tmp_path):
    """A program stripped of debug info: launch warns, @usercode is NO_DEBUG_SYMBOLS
    with the spec's sentence, and a function is still traceable by its symbol."""
    import shutil
    import subprocess
    from conftest import fixture_path
    exe = tmp_path / "worker_loop_nodebug"
    shutil.copy(fixture_path("worker_loop"), exe)
    subprocess.run(["strip", "--strip-debug", str(exe)], check=True)
    r = mcp.launch(str(exe), project=REPO, args=["600"])
    assert any("no DWARF debug info" in w for w in r.get("warnings", [])), r
    sid = r["sessionId"]
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "add": ["@usercode"]})
    assert e.code == "NO_DEBUG_SYMBOLS", e
    assert "Ask user permission" in e.message and "-g" in e.message, e.message
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    assert t["hookedFunctions"] == 1, t
    q = mcp.wait_events(sid, 1, eventType="function_enter")
    assert q["events"][0]["function"] == "tick"
    mcp.call_tool("debug_session", {"action": "stop", "sessionId": sid})
