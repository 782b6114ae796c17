"""Current names in the timeline: a thread renamed after its first events shows its new
name at the events after the rename and in the stacks (timeline_rename: tick(0..2),
rename to "renamed-worker", 80 ms, tick(3..5), "renamed" on stdout, then blocks)."""

import pytest

from conftest import REPO


@pytest.mark.valgrind_sample
def test_renamed_thread(mcp):
    mcp.call_tool("debug_trace", {"add": ["tick"]})
    r = mcp.launch("timeline_rename", project=REPO)
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    ev = mcp.all_events(sid, eventType="function_enter", verbose=True)
    names = {e["arguments"][0]["value"]: e["threadName"] for e in ev}
    assert names == {0: "timeline_rename", 1: "timeline_rename", 2: "timeline_rename",
                     3: "renamed-worker", 4: "renamed-worker", 5: "renamed-worker"}, names
    st = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
    by_name = {t["name"]: t for t in st["threads"]}
    assert sorted(by_name) == ["renamed-worker", "timeline_rename"], by_name
    assert by_name["timeline_rename"]["tid"] == pid
    mcp.stop(sid)
