"""debug_session (status, stop, list, delete, retain), SESSION_EXISTS, debug_query
paging and polling, debug_trace."""

import json
import os

import pytest

from conftest import T_SHORT, fixture_path, pid_alive, wait_until


def texts(events):
    return [e["text"] for e in events]


def listed(mcp):
    return {s["sessionId"]: s for s in mcp.sessions()}


def start_sleeper(mcp, **kw):
    r = mcp.launch("sleeper", **kw)
    mcp.wait_events(r["sessionId"], 1, eventType="stdout")
    return r


# ---- status / list ------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_running_session_status_and_list(mcp):
    r = start_sleeper(mcp)
    sid = r["sessionId"]
    st = mcp.status(sid)
    assert st["status"] == "running"
    assert st["pid"] == r["pid"] and st["pids"] == [r["pid"]]
    assert st.get("endedAt") is None
    assert st.get("exitCode") is None
    assert st["retained"] is False
    assert st["eventCounts"].get("stdout") == 1
    assert st["totalEvents"] == 1
    assert pid_alive(r["pid"])

    ls = listed(mcp)
    assert set(ls) == {sid}
    s = ls[sid]
    assert s["status"] == "running"
    assert s["pid"] == r["pid"]
    assert os.path.realpath(s["binaryPath"]) == os.path.realpath(fixture_path("sleeper"))
    assert s.get("endedAt") is None
    assert s["retained"] is False
    assert isinstance(s["startedAt"], (int, float))
    mcp.stop(sid)


def test_list_empty(mcp):
    assert mcp.sessions() == []


@pytest.mark.valgrind_sample
def test_list_shows_live_ended_and_retained(mcp):
    a = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(a)
    b = mcp.launch("cpp_exit")["sessionId"]
    mcp.wait_ended(b)
    mcp.stop(b, retain=True)
    c = start_sleeper(mcp)["sessionId"]
    ls = listed(mcp)
    assert set(ls) == {a, b, c}
    assert (ls[a]["status"], ls[a]["exitCode"], ls[a]["retained"]) == ("exited", 3, False)
    assert ls[b]["retained"] is True and ls[b]["exitCode"] == 7
    assert ls[b]["status"] in ("exited", "stopped")
    assert (ls[c]["status"], ls[c]["retained"]) == ("running", False)
    assert ls[a]["endedAt"] is not None
    mcp.stop(c)


# ---- stop ---------------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_stop_running_kills_target_and_deletes_data(mcp):
    r = start_sleeper(mcp)
    sid = r["sessionId"]
    res = mcp.stop(sid)
    assert res["success"] is True
    assert res["sessionId"] == sid
    assert res["eventsCollected"] >= 1
    assert res["retained"] is False
    wait_until(lambda: not pid_alive(r["pid"]), T_SHORT, what="the target to be killed")
    assert mcp.tool_error("debug_session", {"action": "status", "sessionId": sid}).code == \
        "SESSION_NOT_FOUND"
    assert mcp.tool_error("debug_query", {"sessionId": sid}).code == "SESSION_NOT_FOUND"
    assert sid not in listed(mcp)


def test_a_stopped_sessions_id_is_never_given_again(mcp):
    """An agent's old reference must not name a newer run of the same program."""
    first = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(first)
    mcp.stop(first)
    second = mcp.launch("hello_exit3")["sessionId"]
    assert second != first, second
    assert mcp.tool_error("debug_query", {"sessionId": first}).code == "SESSION_NOT_FOUND"
    mcp.wait_ended(second)
    mcp.stop(second)


def test_stop_exited_session_counts_events(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    res = mcp.stop(sid)
    assert res == {"success": True, "sessionId": sid, "eventsCollected": 3,
                   "retained": False} or (
        res["success"] is True and res["eventsCollected"] == 3 and res["retained"] is False)
    assert sid not in listed(mcp)


@pytest.mark.valgrind_sample
def test_stop_retain_keeps_data(mcp):
    r = start_sleeper(mcp)
    sid = r["sessionId"]
    res = mcp.stop(sid, retain=True)
    assert res["success"] is True and res["retained"] is True
    wait_until(lambda: not pid_alive(r["pid"]), T_SHORT, what="the target to be killed")
    st = mcp.status(sid)
    assert st["status"] == "stopped"
    assert st["retained"] is True
    assert st["endedAt"] is not None
    assert texts(mcp.query(sid, eventType="stdout")["events"]) == ["ready"]
    ls = listed(mcp)
    assert ls[sid]["retained"] is True and ls[sid]["status"] == "stopped"


def test_stop_twice(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    mcp.stop(sid)
    assert mcp.tool_error("debug_session", {"action": "stop", "sessionId": sid}).code == \
        "SESSION_NOT_FOUND"


def test_stop_retained_again_without_retain_deletes(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    mcp.stop(sid, retain=True)
    assert mcp.status(sid)["retained"] is True
    res = mcp.stop(sid)
    assert res["success"] is True and res["eventsCollected"] == 3
    assert mcp.tool_error("debug_session", {"action": "status", "sessionId": sid}).code == \
        "SESSION_NOT_FOUND"


# ---- delete -------------------------------------------------------------------------

def test_delete_retained(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    mcp.stop(sid, retain=True)
    assert mcp.delete(sid) == {"success": True, "sessionId": sid}
    assert sid not in listed(mcp)
    assert mcp.tool_error("debug_query", {"sessionId": sid}).code == "SESSION_NOT_FOUND"
    assert mcp.tool_error("debug_session", {"action": "delete", "sessionId": sid}).code == \
        "SESSION_NOT_FOUND"


@pytest.mark.valgrind_sample
def test_delete_running_kills_target(mcp):
    r = start_sleeper(mcp)
    assert mcp.delete(r["sessionId"]) == {"success": True, "sessionId": r["sessionId"]}
    wait_until(lambda: not pid_alive(r["pid"]), T_SHORT, what="the target to be killed")
    assert r["sessionId"] not in listed(mcp)


# ---- SESSION_EXISTS -------------------------------------------------------------------

def test_session_exists_while_running_then_relaunch_after_stop(mcp):
    r = start_sleeper(mcp)
    e = mcp.tool_error("debug_launch", {"command": fixture_path("sleeper"),
                                        "projectRoot": mcp.world.project})
    assert e.code == "SESSION_EXISTS"
    assert r["sessionId"] in e.message
    # the first session is untouched
    assert mcp.status(r["sessionId"])["status"] == "running"
    assert pid_alive(r["pid"])
    mcp.stop(r["sessionId"])
    r2 = start_sleeper(mcp)
    # (the stopped session's data is gone, so its id may be reused)
    assert r2["pid"] != r["pid"]
    assert mcp.status(r2["sessionId"])["status"] == "running"
    mcp.stop(r2["sessionId"])


def test_no_session_exists_after_exit(mcp):
    a = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(a)
    b = mcp.launch("hello_exit3")["sessionId"]
    assert b != a
    mcp.wait_ended(b)
    assert {a, b} <= set(listed(mcp))


def test_different_binaries_run_side_by_side(mcp):
    s1 = start_sleeper(mcp)["sessionId"]
    s2 = mcp.launch("hello_exit3")["sessionId"]
    assert mcp.wait_ended(s2)["exitCode"] == 3
    assert mcp.status(s1)["status"] == "running"
    mcp.stop(s1)


# ---- debug_query paging and polling ----------------------------------------------------

def test_query_limit_offset_hasmore(mcp):
    sid = mcp.launch("flood", args=["1"])["sessionId"]   # 16384 lines of 64 bytes
    mcp.wait_ended(sid)
    n = 1024 * 1024 // 64
    q = mcp.query(sid, eventType="stdout")
    assert q["totalCount"] == n
    assert len(q["events"]) == 50           # default limit
    assert q["hasMore"] is True
    q2 = mcp.query(sid, eventType="stdout", limit=10, offset=5)
    assert len(q2["events"]) == 10
    assert [e["id"] for e in q2["events"]] == [e["id"] for e in q["events"][5:15]]
    last = mcp.query(sid, eventType="stdout", limit=500, offset=n - 3)
    assert len(last["events"]) == 3 and last["hasMore"] is False
    past = mcp.query(sid, eventType="stdout", offset=n + 10)
    assert past["events"] == [] and past["hasMore"] is False and past["totalCount"] == n
    big = mcp.query(sid, eventType="stdout", limit=500)
    assert 1 <= len(big["events"]) <= 500 and big["hasMore"] is True


@pytest.mark.valgrind_sample
def test_query_response_is_cut_at_about_32k(mcp):
    sid = mcp.launch("output_mix")["sessionId"]
    mcp.wait_ended(sid)
    total = mcp.query(sid)["totalCount"]
    assert total == 11  # 7 stdout, 3 stderr, process_exit
    # verbose, the two pieces of the 100 KiB line make over 100 KiB of JSON: cut
    q = mcp.query(sid, verbose=True, limit=500)
    assert q["totalCount"] == total
    assert 1 <= len(q["events"]) < total
    assert q["hasMore"] is True
    assert q.get("truncated"), "a cut response must say so in 'truncated': %r" % (
        {k: v for k, v in q.items() if k != "events"},)
    assert len(json.dumps(q)) < 100 * 1024
    # summary mode of 500 flood lines (~60 KiB of JSON) is cut too
    f = mcp.launch("flood", args=["1"])["sessionId"]
    mcp.wait_ended(f)
    q = mcp.query(f, eventType="stdout", limit=500)
    assert q["hasMore"] is True and q.get("truncated")
    assert len(json.dumps(q)) < 48 * 1024, len(json.dumps(q))
    assert q["lastEventId"] == q["events"][-1]["id"]


def test_after_event_id_polling(mcp):
    r = mcp.launch("sleeper", args=["1"])
    sid = r["sessionId"]
    q = mcp.wait_events(sid, 1, eventType="stdout")
    assert texts(q["events"]) == ["ready"]
    last = q["lastEventId"]
    assert last == q["events"][-1]["id"]
    mcp.wait_ended(sid)
    after = mcp.query(sid, afterEventId=last)
    assert [e["eventType"] for e in after["events"]] == ["stdout", "process_exit"]
    assert after["events"][0]["text"] == "done"
    assert all(int(e["id"]) > int(last) for e in after["events"])
    # a number works as well as a string
    after_n = mcp.query(sid, afterEventId=int(last))
    assert [e["id"] for e in after_n["events"]] == [e["id"] for e in after["events"]]
    # polling from the newest id gives nothing new
    again = mcp.query(sid, afterEventId=after["lastEventId"])
    assert again["events"] == []
    assert again["totalCount"] == 0
    # with a type filter
    out = mcp.query(sid, eventType="stdout", afterEventId=last)
    assert texts(out["events"]) == ["done"]


def test_after_event_id_pages_through_everything(mcp):
    sid = mcp.launch("flood", args=["1"])["sessionId"]
    mcp.wait_ended(sid)
    seen = []
    cursor = None
    for _ in range(400):  # pages of ~100 lines: the 16 KB answer budget
        kw = {"eventType": "stdout", "limit": 500}
        if cursor is not None:
            kw["afterEventId"] = cursor
        q = mcp.query(sid, **kw)
        if not q["events"]:
            break
        seen.extend(e["id"] for e in q["events"])
        cursor = q["lastEventId"]
    assert len(seen) == 1024 * 1024 // 64
    assert len(set(seen)) == len(seen)
    assert [int(x) for x in seen] == sorted(int(x) for x in seen)


def test_query_event_type_process_exit_and_empty_types(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    for t in ("function_enter", "function_exit", "crash", "variable_snapshot"):
        q = mcp.query(sid, eventType=t)
        assert q["events"] == [] and q["totalCount"] == 0 and q["hasMore"] is False


def test_query_time_and_pid_filters(mcp):
    r = mcp.launch("hello_exit3")
    sid = r["sessionId"]
    mcp.wait_ended(sid)
    evs = mcp.query(sid)["events"]
    assert mcp.query(sid, pid=r["pid"])["totalCount"] == 3
    assert mcp.query(sid, pid=r["pid"] + 100000)["totalCount"] == 0
    t_last = evs[-1]["timestampNs"]
    assert mcp.query(sid, timeFrom=t_last + 1)["totalCount"] == 0
    assert mcp.query(sid, timeFrom=0, timeTo=t_last)["totalCount"] == 3


def test_query_with_function_filter_on_output_only_session(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    q = mcp.query(sid, function={"contains": "main"})
    assert q["totalCount"] == 0 and q["events"] == []


# ---- debug_trace ---------------------------------------------------------------------

def test_trace_pending_mode(mcp):
    res = mcp.call_tool("debug_trace", {"add": ["main", "foo::*"]})
    assert res["mode"] == "pending"
    assert set(res["activePatterns"]) >= {"main", "foo::*"}
    assert res["hookedFunctions"] == 0
    assert isinstance(res["warnings"], list)
    assert res["eventLimit"] == 200000
    res = mcp.call_tool("debug_trace", {"remove": ["foo::*"]})
    assert "foo::*" not in res["activePatterns"] and "main" in res["activePatterns"]
    res = mcp.call_tool("debug_trace", {"remove": ["main"]})
    assert res["activePatterns"] == []


@pytest.mark.valgrind_sample
def test_trace_watches_pending_are_staged(mcp):
    res = mcp.call_tool("debug_trace", {"watches": {"add": [{"variable": "gTempo"}]}})
    assert res["mode"] == "pending"
    assert res["activeWatches"] == [{"label": "gTempo", "variable": "gTempo",
                                     "pending": True}]
    res = mcp.call_tool("debug_trace", {"watches": {"remove": ["gTempo"]}})
    assert res["activeWatches"] == []


def test_trace_unknown_session(mcp):
    e = mcp.tool_error("debug_trace", {"sessionId": "nope-2000-01-01-00h00", "add": ["main"]})
    assert e.code == "SESSION_NOT_FOUND", e.code
