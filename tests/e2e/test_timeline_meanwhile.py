"""What debug_continue answers tell of what happened during the call (docs/PROTOCOL.md
"debug_continue"): watchpoint hits passed by a step or a run to a breakpoint
(`watchHits`), and output lines left out of `outputMeanwhile` (`outputOmitted`, with
the query that shows them). The latency_report fixture (its top comment) overflows
histogram[10] into the next member, requests, and prints an 11-line report."""

import pytest

from bp_util import bp_add, cont, line_of, until_bp

OVERFLOW = line_of("latency_report.c", "mark:overflow")
REPORT = line_of("latency_report.c", "mark:report")


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_a_step_over_an_overflow_names_the_watchpoint_hit(mcp):
    b = bp_add(mcp, None, {"file": "latency_report.c", "line": OVERFLOW,
                           "condition": "bucket == 10"})
    r = mcp.launch("latency_report")
    sid = r["sessionId"]
    a = until_bp(mcp, sid, r["breakpoints"][0]["id"])
    assert a["state"] == "paused" and a["line"] == OVERFLOW, a
    assert "watchHits" not in a, a  # nothing watched yet
    w = mcp.call_tool("debug_memory", {"action": "watch", "sessionId": sid,
                                       "variable": "g_report.requests"})
    assert w["currentValue"] == 3, w
    a = cont(mcp, sid, "step-over")
    assert a["state"] == "paused" and a["line"] == OVERFLOW + 1, a
    assert a["watchHits"] == ["g_report.requests: 3 -> 4 (write in record at "
                              "latency_report.c:%d)" % OVERFLOW], a
    mcp.call_tool("debug_breakpoint", {"remove": [b["breakpoints"][0]["id"]]})
    mcp.stop(sid)


def test_output_left_out_of_a_running_answer_is_counted_with_its_query(mcp):
    b = bp_add(mcp, None, {"file": "latency_report.c", "line": REPORT})
    r = mcp.launch("latency_report")
    sid = r["sessionId"]
    mcp.call_tool("debug_breakpoint", {"remove": [b["breakpoints"][0]["id"]]})
    a = until_bp(mcp, sid, r["breakpoints"][0]["id"])
    assert a["state"] == "paused" and a["line"] == REPORT, a
    a = cont(mcp, sid)  # the report is printed during this call
    assert a["state"] == "exited" and a["exitCode"] == 1, a
    assert len(a["outputMeanwhile"]) == 5, a
    omitted = a["outputOmitted"]
    assert omitted["count"] == 6, a  # 11 lines, the last 5 shown
    assert "eventType: \"stdout\"" in omitted["showAll"], omitted
    after = omitted["showAll"].split("afterEventId: \"")[1].split("\"")[0]
    q = mcp.call_tool("debug_query", {"sessionId": sid, "afterEventId": after,
                                      "eventType": "stdout"})
    texts = [e["text"] for e in q["events"]]
    assert texts[0] == "routed 6 requests, served 7" and len(texts) == 11, texts
    mcp.stop(sid)
