"""Events evicted by the per-session cap (events.maxPerSession) are reported: per
function in debug_query answers whose range lost them and in debug_session status
(docs/PROTOCOL.md "debug_query"). threads_trace calls work() 200 times in 4 threads;
with the cap at 100 events, most of work's events are evicted."""

import pytest

from conftest import REPO


def function_events(mcp, sid, fn):
    return sum(mcp.query(sid, eventType=t, function={"equals": fn})["totalCount"]
               for t in ("function_enter", "function_exit"))


@pytest.mark.valgrind_sample
def test_query_and_status_say_how_many_events_the_cap_evicted(mcp):
    mcp.world.write_project_settings({"events.maxPerSession": 100})
    mcp.call_tool("debug_trace", {"add": ["work"]})
    sid = mcp.launch("threads_trace")["sessionId"]
    st = mcp.wait_ended(sid)
    calls = {f["function"]: f["calls"] for f in st["topFunctions"]}["work"]
    evicted = {f["function"]: f["events"] for f in st["evicted"]}
    assert set(evicted) == {"work"}
    stored = function_events(mcp, sid, "work")
    assert stored <= 101 and evicted["work"] > 0
    # Every call's enter and exit is either stored or counted as evicted.
    assert stored + evicted["work"] == 2 * calls, (stored, evicted, calls)

    r = mcp.query(sid, function={"equals": "work"})
    assert r["evicted"][0]["function"] == "work"
    assert r["evicted"][0]["events"] == evicted["work"]
    assert r["evicted"][0]["throughNs"] < r["events"][0]["timestampNs"]
    assert "events.maxPerSession" in r["evictedNote"]
    # Ranges that lost nothing say nothing: output, a later window, another function.
    assert "evicted" not in mcp.query(sid, eventType="stdout")
    later = r["evicted"][0]["throughNs"] + 1
    assert "evicted" not in mcp.query(sid, timeFrom=later)
    assert "evicted" not in mcp.query(sid, function={"equals": "inner"})
    assert "evicted" in mcp.query(sid, function={"matches": "^wo"})


def test_no_eviction_no_report(mcp):
    mcp.call_tool("debug_trace", {"add": ["work"]})
    sid = mcp.launch("threads_trace", project=REPO)["sessionId"]
    st = mcp.wait_ended(sid)
    assert "evicted" not in st
    assert "evicted" not in mcp.query(sid)
