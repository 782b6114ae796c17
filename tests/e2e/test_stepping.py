"""debug_continue steps (docs/PROTOCOL.md "debug_continue"): step-over, step-into and
step-out of a paused thread, in real programs through MCP.

Fixtures (lines by marker comment, bp_util.line_of): bp_steps (work(i) every ~2 ms:
square, the recursive fact, strlen, exit 7 after argv[1] rounds) and bp_threads (three
workers calling worker_step(id, n))."""

import json
import re

import pytest

from conftest import pid_alive, wait_until
from bp_util import (bp_add, bp_remove, cont, cont_error, launch_ready, line_of,
                     mem_read, until_bp, vars_of, wait_paused)

SRC = "bp_steps.c"


def paused_at(mcp, marker, **spec):
    """Launches bp_steps, sets a breakpoint at the marker's line (spec adds a
    condition...), waits for the pause; returns (sid, pid, pause answer)."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    s = {"file": SRC, "line": line_of(SRC, marker)}
    s.update(spec)
    [bp] = bp_add(mcp, sid, s)["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["line"] == line_of(SRC, marker), a
    # the steps below must not meet this breakpoint again
    bp_remove(mcp, sid, [bp["id"]])
    return sid, r["pid"], a


@pytest.mark.valgrind_sample
def test_step_over_a_call_stays_in_the_function(mcp):
    sid, pid, a = paused_at(mcp, "CALL_SQUARE")
    k = vars_of(a, "arguments")["k"]
    s = cont(mcp, sid, "step-over")
    assert s["state"] == "paused" and s["reason"] == "step", s
    assert s["threadId"] == a["threadId"] == pid and "breakpointId" not in s
    assert (s["function"], s["line"]) == ("work", line_of(SRC, "CALL_FACT"))
    assert vars_of(s, "arguments") == {"k": k}
    assert vars_of(s, "locals")["a"] == k * k
    assert [f["function"] for f in s["frames"][:2]] == ["work", "main"]
    s = cont(mcp, sid, "step-over")
    assert (s["function"], s["line"]) == ("work", line_of(SRC, "CALL_STRLEN"))
    assert vars_of(s, "locals")["b"] == 24  # fact(4), all of its recursion stepped over
    # each stop is a pause event in the timeline
    # (the last three: test_breakpoints.py::test_until_breakpoint_reports_the_first_hit
    # covers how many hits the breakpoint had before)
    evs = mcp.all_events(sid, eventType="pause")[-3:]
    assert [(e["reason"], e["line"]) for e in evs] == [
        ("breakpoint", line_of(SRC, "CALL_SQUARE")), ("step", line_of(SRC, "CALL_FACT")),
        ("step", line_of(SRC, "CALL_STRLEN"))], json.dumps(evs)
    assert re.match(r"^thread %d paused at \S*bp_steps\.c:%d in work$"
                    % (pid, line_of(SRC, "CALL_FACT")), evs[1]["text"]), evs[1]
    assert evs[0]["text"].endswith(" in work (breakpoint %d)" % evs[0]["breakpointId"])
    mcp.stop(sid)


def test_step_over_in_a_recursive_function_stays_in_its_frame(mcp):
    sid, pid, a = paused_at(mcp, "FACT_CALL", condition="n == 4")
    assert vars_of(a, "arguments") == {"n": 4}
    depth = len(a["frames"])
    s = cont(mcp, sid, "step-over")
    assert s["state"] == "paused" and s["reason"] == "step", s
    assert (s["function"], s["line"]) == ("fact", line_of(SRC, "FACT_RET"))
    assert vars_of(s, "arguments") == {"n": 4}  # not the deeper fact(3)
    assert vars_of(s, "locals")["sub"] == 6
    assert len(s["frames"]) == depth and s["frames"][1]["function"] == "work"
    mcp.stop(sid)


def test_step_into_a_callee_with_debug_info(mcp):
    sid, pid, a = paused_at(mcp, "CALL_SQUARE")
    k = vars_of(a, "arguments")["k"]
    s = cont(mcp, sid, "step-into")
    assert s["state"] == "paused" and s["reason"] == "step", s
    # after square's prologue, at its first body line, with its argument in place
    assert (s["function"], s["line"]) == ("square", line_of(SRC, "SQ_BODY"))
    assert vars_of(s, "arguments") == {"v": k}
    assert [(f["function"], f["line"]) for f in s["frames"][:2]] == [
        ("square", line_of(SRC, "SQ_BODY")), ("work", line_of(SRC, "CALL_SQUARE"))]
    mcp.stop(sid)


def test_step_into_a_libc_call_steps_over_it(mcp):
    sid, pid, a = paused_at(mcp, "CALL_STRLEN")
    s = cont(mcp, sid, "step-into")
    assert s["state"] == "paused" and s["reason"] == "step", s
    assert (s["function"], s["line"]) == ("work", line_of(SRC, "STRLEN_NEXT"))
    assert vars_of(s, "locals")["len"] == 6  # strlen("strobe") ran
    assert s["frames"][1]["function"] == "main"
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_step_out_returns_the_value(mcp):
    sid, pid, a = paused_at(mcp, "SQ_BODY")
    v = vars_of(a, "arguments")["v"]
    s = cont(mcp, sid, "step-out")
    assert s["state"] == "paused" and s["reason"] == "step", s
    assert s["function"] == "work" and s["line"] == line_of(SRC, "CALL_SQUARE"), s
    assert s["returnValue"] == v * v, s
    assert vars_of(s, "arguments") == {"k": v}
    # the next step-over finishes the assignment: a holds the value returned
    s = cont(mcp, sid, "step-over")
    assert s["line"] == line_of(SRC, "CALL_FACT") and vars_of(s, "locals")["a"] == v * v
    mcp.stop(sid)


def test_step_out_of_a_void_less_recursion_level(mcp):
    """step-out of fact(2) lands in fact(3) (the caller frame, not fact(4)), with 2."""
    sid, pid, a = paused_at(mcp, "FACT_CALL", condition="n == 2")
    s = cont(mcp, sid, "step-out")
    assert s["state"] == "paused" and s["function"] == "fact", s
    assert s["line"] == line_of(SRC, "FACT_CALL")
    assert s["returnValue"] == 2 and vars_of(s, "arguments") == {"n": 3}, s
    mcp.stop(sid)


def test_step_out_of_main_runs_to_the_exit(mcp):
    line = line_of(SRC, "MAIN_CALL")
    bp_add(mcp, None, {"file": SRC, "line": line, "oneShot": True})
    r = mcp.launch("bp_steps", args=["3"])
    sid = r["sessionId"]
    [p] = wait_paused(mcp, sid)
    assert p["function"] == "main" and p["line"] == line
    s = cont(mcp, sid, "step-out")
    assert s["state"] == "exited" and s["exitCode"] == 7, s
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 7


@pytest.mark.valgrind_sample
def test_steps_in_a_thread_other_than_main(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid, pid = r["sessionId"], r["pid"]
    body = line_of("bp_threads.c", "WS_BODY")
    [bp] = bp_add(mcp, sid, {"file": "bp_threads.c", "line": body,
                             "condition": "id == 3"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["threadId"] != pid and a["pid"] == pid, a
    tid = a["threadId"]
    n = vars_of(a, "arguments")["n"]
    bp_remove(mcp, sid, "*")
    s = cont(mcp, sid, "step-over", threadId=tid)
    assert s["state"] == "paused" and s["reason"] == "step" and s["threadId"] == tid, s
    assert (s["function"], s["line"]) == ("worker_step", line_of("bp_threads.c", "WS_NEXT"))
    assert vars_of(s, "arguments") == {"id": 3, "n": n}
    assert vars_of(s, "locals")["v"] == 3000 + n
    assert mem_read(mcp, sid, "v", threadId=tid)[0]["value"] == 3000 + n
    # the other threads ran on meanwhile: only this one is paused
    assert [p["threadId"] for p in mcp.status(sid)["paused"]] == [tid]
    s = cont(mcp, sid, "step-out")  # default thread: the last one that paused
    assert s["threadId"] == tid and s["function"] == "worker" and s["returnValue"] == 3000 + n
    c = cont(mcp, sid, timeoutMs=100)
    assert c["state"] == "running"
    assert "paused" not in mcp.status(sid)
    mcp.stop(sid)
    wait_until(lambda: not pid_alive(pid), what="the program to be killed")


def test_step_with_nothing_paused_is_not_paused(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    for action in ("step-over", "step-into", "step-out"):
        e = cont_error(mcp, sid, action)
        assert e.code == "NOT_PAUSED", (e.code, e.message)
        assert "until" in e.message and "debug_breakpoint" in e.message, e.message
    mcp.stop(sid)
