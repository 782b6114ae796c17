"""debug_query openCalls (docs/PROTOCOL.md "Open calls"): the calls entered and not yet
returned, per thread, innermost last. deadlock_abba deadlocks for certain (its top
comment): each worker is inside worker_X -> take_second -> pthread_mutex_lock and never
comes back; main waits in pthread_join. The lock's name is matched by its ending (glibc's
internal symbol is ___pthread_mutex_lock), the threads by their outermost call."""

import pytest

from conftest import REPO, T_LONG, wait_until

PATTERNS = ["worker_a", "worker_b", "take_second", "pthread_mutex_lock"]


def open_calls(mcp, sid, **kw):
    return mcp.query(sid, openCalls=True, **kw)


def both_stuck(mcp, sid):
    """The openCalls answer once both workers sit in their second lock."""
    def stuck():
        r = open_calls(mcp, sid)
        chains = [g["calls"] for g in r["openCalls"]]
        return r if sum(c[-1].endswith("pthread_mutex_lock") and "take_second" in c
                        for c in chains) == 2 else None
    return wait_until(stuck, T_LONG, what="both workers inside their second lock")


@pytest.mark.valgrind_sample
def test_open_calls_show_each_threads_chain_into_the_lock(mcp):
    mcp.call_tool("debug_trace", {"add": PATTERNS})
    sid = mcp.launch("deadlock_abba", project=REPO)["sessionId"]
    r = both_stuck(mcp, sid)
    chains = sorted([c if not c.endswith("pthread_mutex_lock") else "lock" for c in g["calls"]]
                    for g in r["openCalls"])
    assert chains == [["worker_a", "take_second", "lock"], ["worker_b", "take_second", "lock"]]
    # Only calls still open: each worker's first lock returned.
    assert r["totalCount"] == 6, r
    assert all(e["eventType"] == "function_enter" and "threadId" in e for e in r["events"])
    assert not any(e.get("neverReturned") for e in r["events"])
    assert "stacks" in r["openCallsNote"]
    # The filter composes with the others: the open calls of one function.
    one = open_calls(mcp, sid, function={"equals": "take_second"})
    assert one["totalCount"] == 2 and len(one["openCalls"]) == 2
    # strobectl asks the same question.
    ctl = mcp.world.strobectl("--json", "query", sid, "--open-calls")
    assert ctl.rc == 0 and ctl.json()["totalCount"] == 6, ctl
    # Once the program is gone, the same calls are marked as never returned.
    mcp.stop(sid, retain=True)
    ended = open_calls(mcp, sid)
    assert ended["totalCount"] == 6
    assert all(e["neverReturned"] is True for e in ended["events"])
    assert "never returned" in ended["openCallsNote"]


def test_open_calls_of_a_finished_program_are_none(mcp):
    mcp.call_tool("debug_trace", {"add": ["work", "inner"]})
    sid = mcp.launch("threads_trace", project=REPO)["sessionId"]
    mcp.wait_ended(sid)
    assert mcp.query(sid, eventType="function_exit")["totalCount"] > 0
    r = open_calls(mcp, sid)
    assert r["events"] == [] and r["openCalls"] == [] and r["totalCount"] == 0


def test_open_calls_with_another_event_type_is_refused(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    err = mcp.tool_error("debug_query", {"sessionId": sid, "openCalls": True,
                                         "eventType": "stdout"})
    assert err.code == "VALIDATION_ERROR"
    assert "openCalls" in err.message and "leave out" in err.message
