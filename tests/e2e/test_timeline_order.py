"""True order of output in the timeline: a line is stamped when the program wrote it,
before the traced call that follows it (timeline_order: 3 threads, each calling
step(w, i) then printing "w W line I", for i in 0..19, then step(w, 20))."""

import re

import pytest

from conftest import REPO

STEPS = 20


def positions(mcp, project=REPO):
    """Where each step's enter and exit and each line stand in the session's
    timeline: {("enter" | "exit" | "line", w, i): index}."""
    mcp.call_tool("debug_trace", {"add": ["step"]})
    r = mcp.launch("timeline_order", project=project)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    ev = [e for e in mcp.all_events(sid, verbose=True)
          if e["eventType"] in ("stdout", "function_enter", "function_exit")]
    stamps = [e["timestampNs"] for e in ev]
    assert stamps == sorted(stamps), "the timeline is not in time order"
    step_of = {}  # enter event id -> (w, i)
    where = {}
    for pos, e in enumerate(ev):
        if e["eventType"] == "stdout":
            m = re.fullmatch(r"w (\d) line (\d+)", e["text"])
            assert m, e
            key = ("line", int(m.group(1)), int(m.group(2)))
        elif e["eventType"] == "function_enter":
            args = {a["name"]: a["value"] for a in e["arguments"]}
            step_of[e["id"]] = (args["w"], args["i"])
            key = ("enter",) + step_of[e["id"]]
        else:
            key = ("exit",) + step_of[e["parentEventId"]]
        assert key not in where, key
        where[key] = pos
    assert len(where) == 3 * (STEPS * 3 + 2), len(where)
    return where


@pytest.mark.valgrind_sample
def test_each_line_between_its_steps(mcp):
    where = positions(mcp)
    for w in range(3):
        for i in range(STEPS):
            line = where[("line", w, i)]
            assert where[("exit", w, i)] < line < where[("enter", w, i + 1)], \
                "thread %d: line %d is not between step %d and step %d" % (w, i, i, i + 1)


def test_order_at_traps_off(mcp):
    """output.orderAtTraps 0: no reading at the traps; every line and call is still
    recorded (only their order is the daemon's reading order)."""
    mcp.world.write_project_settings({"output.orderAtTraps": 0})
    positions(mcp, project=mcp.world.project)
