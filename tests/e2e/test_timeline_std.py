"""libstdc++ values read as C++ reads them (docs/PROTOCOL.md "Function events", the
std:: rule): std::string as its text, std::vector as {"@size", "@elements"}, the node
containers as {"@size"}; in function events, their short forms and debug_memory. The
std_values fixture (its top comment) passes one of each to summarize()."""

import pytest

from conftest import REPO


@pytest.mark.valgrind_sample
def test_strings_and_containers_in_function_events(mcp):
    mcp.call_tool("debug_trace", {"add": ["summarize"]})
    try:
        r = mcp.launch("std_values", project=REPO)
        st = mcp.wait_ended(r["sessionId"])
    finally:
        mcp.call_tool("debug_trace", {"remove": ["summarize"]})
    assert st["exitCode"] == 0, st
    sid = r["sessionId"]
    [enter] = mcp.query(sid, eventType="function_enter", verbose=True)["events"]
    args = {a["name"]: a["value"] for a in enter["arguments"]}
    title = "a title longer than the fifteen bytes kept inline"
    assert args["title"] == title, args
    assert args["values"] == {"@size": 20, "@elements": [i * i for i in range(16)] + ["..."]}
    assert args["ranks"] == {"@size": 3} and args["queue"] == {"@size": 2}, args
    assert args["seen"] == {"@size": 1}, args
    [exit_] = mcp.query(sid, eventType="function_exit", verbose=True)["events"]
    assert exit_["returnValue"] == title + ": 26", exit_  # returned through memory
    [brief] = mcp.query(sid, eventType="function_enter")["events"]
    # each argument within its share of the 80 bytes: a long string shows its start
    assert brief["argsShort"].startswith('title="a tit'), brief
    assert "values={size=20" in brief["argsShort"], brief
    assert "ranks={size=3}" in brief["argsShort"], brief
    mcp.stop(sid)


def test_a_vector_indexed_as_cpp_indexes_it(mcp):
    """values[3] of a std::vector (here a const reference) reads its element, as
    operator[] would; past its size it is read anyway, with a note."""
    mcp.call_tool("debug_breakpoint", {"add": [{"function": "summarize"}]})
    try:
        r = mcp.launch("std_values", project=REPO)
    finally:
        mcp.call_tool("debug_breakpoint", {"remove": "*"})
    sid = r["sessionId"]
    a = mcp.call_tool("debug_continue", {"sessionId": sid, "action": "until",
                                         "condition": {"breakpoint": r["breakpoints"][0]["id"]}})
    assert a["state"] == "paused", a
    res = mcp.call_tool("debug_memory", {"sessionId": sid, "threadId": a["threadId"],
                                         "targets": [{"variable": "values[3]"},
                                                     {"variable": "values[20]"}]})["results"]
    assert res[0]["value"] == 9 and res[0]["type"] == "int" and "note" not in res[0], res
    assert "holds 20 elements: index 20 is past its size" in res[1]["note"], res
    mcp.stop(sid)
