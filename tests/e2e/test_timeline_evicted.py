"""Events evicted by the per-session cap (events.maxPerSession) are reported: per
function and per type in debug_query answers whose range lost them, in debug_session
status and in debug_continue's count of what happened meanwhile (docs/PROTOCOL.md
"debug_query"). threads_trace calls work() 200 times in 4 threads; with the cap at 100
events, most of work's events are evicted. hot_count -1 calls counted() until SIGUSR1,
a logpoint in it hit at every call."""

import os
import signal

import pytest

from bp_util import bp_add, bp_list, cont, line_of
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
    # the same by type: only function events went
    assert st["evictedByType"] == {"function_enter": st["evictedByType"]["function_enter"],
                                   "function_exit": st["evictedByType"]["function_exit"]}, st
    assert st["evictedEvents"] == evicted["work"], st

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
    assert "evictedEvents" not in st and "evictedEvents" not in mcp.query(sid)


def test_logpoint_evictions_are_said_in_status_queries_polls_and_continue(mcp):
    """A logpoint hit thousands of times in a session capped at 1,000 events: status,
    the logpoint query, a poll whose cursor the evictions passed and debug_continue
    say how many went (exactly: kept + evicted = hits), and the oldest id kept."""
    mcp.world.write_project_settings({"events.maxPerSession": 1000})
    r = mcp.launch("hot_count", args=["-1"])  # until SIGUSR1
    sid, pid = r["sessionId"], r["pid"]
    mcp.world.target_pids.add(pid)
    bp_add(mcp, sid, {"file": "hot_count.c", "line": line_of("hot_count.c", "COUNTED"),
                      "message": "v={v}"})
    first = mcp.wait_events(sid, 1, eventType="logpoint")["events"][0]
    cursor = int(first["id"])
    # Paused, the last hit is known, and every hit is either kept or counted evicted;
    # 3,001 hits later at least 3,001 events were recorded meanwhile, and all but the
    # cap's worth of them evicted.
    assert cont(mcp, sid, "pause")["state"] == "paused"
    [lp] = bp_list(mcp, sid)
    st = mcp.status(sid)
    assert st["eventCounts"]["logpoint"] + st.get("evictedEvents", 0) == lp["hits"], (st, lp)
    total = mcp.query(sid, eventType="logpoint", limit=1)["totalCount"]
    [last] = mcp.query(sid, eventType="logpoint", limit=1, offset=total - 1)["events"]
    v = int(last["text"].split("=")[1])
    c = cont(mcp, sid, "until", timeoutMs=60000,
             condition={"event": {"eventType": "logpoint",
                                  "text": {"contains": "v=%d" % (v + 3001)}}})
    assert c.get("conditionMet") is True, c
    assert c["eventsMeanwhile"] >= 3001, c
    assert c["eventsMeanwhileEvicted"] >= c["eventsMeanwhile"] - 1010, c
    assert "events.maxPerSession" in c["evictedNote"], c
    assert cont(mcp, sid, "pause")["state"] == "paused"  # exact again, with evictions
    [lp] = bp_list(mcp, sid)
    st = mcp.status(sid)
    assert st["evictedEvents"] >= 2000, st
    assert st["eventCounts"]["logpoint"] + st["evictedEvents"] == lp["hits"], (st, lp)
    os.kill(pid, signal.SIGUSR1)
    cont(mcp, sid)  # resumed, it sees the signal and ends
    st = mcp.wait_ended(sid)
    kept = st["eventCounts"]["logpoint"]
    assert st["evictedByType"] == {"logpoint": st["evictedEvents"]}, st
    assert "events.maxPerSession" in st["evictedEventsNote"], st

    q = mcp.query(sid, eventType="logpoint", limit=5)
    assert q["evictedEvents"] == st["evictedEvents"] and q["totalCount"] == kept, q
    assert q["oldestEventId"] == q["events"][0]["id"], q
    assert q["evictedByType"] == {"logpoint": st["evictedEvents"]}
    # a poll from before the evictions: events after its cursor went unread
    p = mcp.query(sid, eventType="logpoint", afterEventId=str(cursor))
    assert p["evictedPastCursor"] is True and "afterEventId" in p["evictedEventsNote"], p
    # output is never evicted: a query of it says nothing
    assert "evictedEvents" not in mcp.query(sid, eventType="stdout")
