"""Function events of a multithreaded target: thread names, per-thread parents and
the threadName query filter (threads_trace: 4 threads "worker-0".."worker-3", each
calling work(id, n) 50 times, work calling inner(id * 1000 + n))."""

import pytest

from conftest import REPO


def run_threads(mcp):
    mcp.call_tool("debug_trace", {"add": ["work", "inner"]})
    r = mcp.launch("threads_trace", project=REPO)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    # sum over id, n of 2 * (id * 1000 + n)
    assert out == ["total %d" % sum(2 * (i * 1000 + n) for i in range(4) for n in range(50))]
    assert st["eventCounts"]["function_enter"] == 400
    assert st["eventCounts"]["function_exit"] == 400
    return sid, r["pid"], mcp.all_events(sid, verbose=True)


@pytest.mark.valgrind_sample
def test_thread_names_and_ids(mcp):
    sid, pid, ev = run_threads(mcp)
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    by_tid = {}
    for e in fn:
        assert e["pid"] == pid
        by_tid.setdefault(e["threadId"], []).append(e)
    assert len(by_tid) == 4
    assert pid not in by_tid  # main only joins
    for tid, events in by_tid.items():
        names = {e["threadName"] for e in events}
        assert len(names) == 1, names
        name = names.pop()
        assert name in ("worker-0", "worker-1", "worker-2", "worker-3"), name
        ids = {e["arguments"][0]["value"] for e in events
               if e["eventType"] == "function_enter" and e["function"] == "work"}
        assert ids == {int(name[-1])}, (name, ids)
    assert sorted({e["threadName"] for e in fn}) == ["worker-0", "worker-1", "worker-2",
                                                     "worker-3"]


def test_parents_stay_within_their_thread(mcp):
    sid, pid, ev = run_threads(mcp)
    by_id = {e["id"]: e for e in ev}
    fn = [e for e in ev if e["eventType"].startswith("function_")]
    for e in fn:
        if e["eventType"] == "function_enter" and e["function"] == "work":
            assert e.get("parentEventId") is None, e
        elif e["eventType"] == "function_enter":  # inner: called by work of its thread
            p = by_id[e["parentEventId"]]
            assert p["function"] == "work" and p["eventType"] == "function_enter"
            assert p["threadId"] == e["threadId"]
            a = {x["name"]: x["value"] for x in p["arguments"]}
            assert e["arguments"] == [{"name": "v", "value": a["id"] * 1000 + a["n"]}]
        else:  # an exit: parent is its own enter, same thread
            p = by_id[e["parentEventId"]]
            assert p["eventType"] == "function_enter" and p["function"] == e["function"]
            assert p["threadId"] == e["threadId"]
            assert e["timestampNs"] - p["timestampNs"] == e["durationNs"]
    # each work call: enter work, enter inner, exit inner, exit work, in that order
    for tid in {e["threadId"] for e in fn}:
        seq = [(e["eventType"][9:], e["function"]) for e in fn if e["threadId"] == tid]
        assert seq == [("enter", "work"), ("enter", "inner"), ("exit", "inner"),
                       ("exit", "work")] * 50
        works = [e for e in fn if e["threadId"] == tid and e["function"] == "work"
                 and e["eventType"] == "function_exit"]
        inners = [e for e in fn if e["threadId"] == tid and e["function"] == "inner"
                  and e["eventType"] == "function_exit"]
        assert [w["returnValue"] for w in works] == [i["returnValue"] for i in inners]
        assert all(w["durationNs"] > i["durationNs"] for w, i in zip(works, inners))


def test_thread_name_filter(mcp):
    sid, pid, ev = run_threads(mcp)
    q = mcp.query(sid, threadName={"contains": "worker-2"}, verbose=True, limit=500)
    assert q["totalCount"] == 200
    assert {e["threadName"] for e in q["events"]} == {"worker-2"}
    assert {e["arguments"][0]["value"] for e in q["events"]
            if e["eventType"] == "function_enter" and e["function"] == "work"} == {2}
    q = mcp.query(sid, threadName={"contains": "worker-"}, eventType="function_enter")
    assert q["totalCount"] == 400
    q = mcp.all_events(sid, threadName={"contains": "worker-1"}, function={"equals": "inner"},
                       eventType="function_exit", verbose=True)
    assert [e["returnValue"] for e in q] == [2 * (1000 + n) for n in range(50)]
    assert mcp.query(sid, threadName={"contains": "worker-9"})["totalCount"] == 0


@pytest.mark.valgrind_sample
def test_exits_of_threads_gone_before_their_records_are_read(mcp):
    """400 short-lived threads end while others record calls: a thread's last exits
    can wait in the ring behind another thread's record being written, and are read
    after the thread is gone. Every call's exit is recorded, with its own enter."""
    mcp.call_tool("debug_trace", {"add": ["outer", "inner"]})
    r = mcp.launch("thread_churn", args=["50", "8"])
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    assert [e["text"] for e in mcp.all_events(sid, eventType="stdout")] == ["done 4000"]
    assert st["eventCounts"]["function_enter"] == 8000, st["eventCounts"]
    assert st["eventCounts"]["function_exit"] == 8000, st["eventCounts"]
