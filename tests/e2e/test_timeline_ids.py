"""Event ids in time order (docs/PROTOCOL.md, debug_query "afterEventId"): the fast
path's calls reach the timeline up to 5 ms after the output lines printed after them,
yet a session's ids follow its timestamps, so a poller that asks for the events after
the last id it saw sees every event once, in time order (order_mix: traced calls on
the fast path, a line of output and a logpoint hit per round)."""

import pytest

from bp_util import bp_add, line_of
from conftest import T_LONG


@pytest.mark.valgrind_sample
def test_poller_sees_every_event_of_a_mixed_run_once_in_time_order(mcp):
    mcp.world.write_project_settings({"trace.mode": "fast"})
    mcp.call_tool("debug_trace", {"add": ["work", "mark"]})
    bp_add(mcp, None, {"file": "order_mix.c", "line": line_of("order_mix.c", "LOGPOINT"),
                       "message": "mark {r}"})
    r = mcp.launch("order_mix")
    sid = r["sessionId"]

    seen, polls, last = [], 0, None

    def poll():
        """One poll as an agent makes it: the first page, then the events after the
        previous answer's lastEventId; the events it brought."""
        nonlocal last, polls
        a = {"limit": 20, "verbose": True}
        if last is not None:
            a["afterEventId"] = last
        q = mcp.query(sid, **a)
        polls += 1
        seen.extend(q["events"])
        last = q["lastEventId"] if q["lastEventId"] is not None else last
        return q["events"]

    while mcp.status(sid)["status"] == "running":
        poll()
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    mcp.stop(sid, retain=True)  # every event of the session stored
    while poll():
        pass

    every = mcp.all_events(sid, verbose=True)
    types = {e["eventType"] for e in every}
    assert {"function_enter", "function_exit", "stdout", "logpoint"} <= types, types
    assert sum(e["eventType"] == "logpoint" for e in every) == 30
    ids = [int(e["id"]) for e in seen]
    assert len(ids) == len(set(ids)), "a poll saw an event twice"
    assert sorted(ids) == sorted(int(e["id"]) for e in every), \
        "the polls missed %s" % sorted({int(e["id"]) for e in every} - set(ids))[:10]
    stamps = [e["timestampNs"] for e in seen]
    late = [(seen[i - 1], seen[i]) for i in range(1, len(seen)) if stamps[i] < stamps[i - 1]]
    assert not late, "an event came after a newer one (%d times), first: %r" % (
        len(late), late[0])
    assert ids == sorted(ids)
    # the timeline by time is the timeline by id
    assert [e["id"] for e in every] == [e["id"] for e in seen]
