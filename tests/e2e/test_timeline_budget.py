"""Every tool's default answer fits answers.maxBytes (16 KB of compact JSON), and a
cut answer says so with a way to the rest (docs/PROTOCOL.md "Answer size"): the
timeline's bulkiest answers on the fixtures that make them (a flood of output, big
verbose events, sixteen threads' stacks, a 2 KB global, many breakpoints), and the
same answers under a smaller budget, each cut saying so (the tools cut their own
answers to the setting; the server's last cut, mcp/budget.c, is unit-tested in
test_budget.c)."""

import json
import os

import pytest

from bp_util import bp_add, bp_list, line_of
from conftest import REPO, wait_until

BUDGET = 16384


def size(answer):
    return len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())


def fits(answer, budget=BUDGET):
    assert size(answer) <= budget, "answer of %d bytes: %.300s" % (size(answer), answer)
    return answer


def test_query_pages_fit_and_the_continuation_returns_the_rest(mcp):
    sid = mcp.launch("flood", args=["1"])["sessionId"]
    mcp.wait_ended(sid)
    ids = []
    page = fits(mcp.query(sid, limit=500, verbose=True))
    assert "offset" in page["truncated"] and page["hasMore"]
    while page["events"] and len(ids) < 1500:
        ids += [int(e["id"]) for e in page["events"]]
        if not page["hasMore"]:
            break
        page = fits(mcp.query(sid, limit=500, verbose=True, offset=len(ids)))
    # The pages, one after the other, are the timeline without a gap or a repeat.
    whole = [int(e["id"]) for e in mcp.all_events(sid)][:len(ids)]
    assert ids == whole and len(ids) >= 1000
    # afterEventId continues the same way.
    after = fits(mcp.query(sid, limit=500, afterEventId=str(ids[99])))
    assert [int(e["id"]) for e in after["events"]] == whole[100:100 + len(after["events"])]


def test_stacks_memory_trace_and_breakpoints_fit(mcp):
    sid = mcp.launch("threads16")["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    fits(mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid}))
    fits(mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid,
                                         "verbose": True}))
    fits(mcp.status(sid))
    fits(mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["*"]}))

    g = mcp.launch("globals_all")["sessionId"]
    mcp.wait_events(g, 1, eventType="stdout")
    names = ["g_text", "g_buffer", "g_config", "g_list", "g_array", "g_point", "g_name"]
    fits(mcp.call_tool("debug_memory", {"sessionId": g, "depth": 5,
                                        "targets": [{"variable": n} for n in names * 2]}))

    b = mcp.launch("bp_scale")["sessionId"]
    lines = range(line_of("bp_scale.c", "BP_RESULT") - 8, line_of("bp_scale.c", "BP_RESULT") + 8)
    for ln in lines:
        try:
            bp_add(mcp, b, {"file": "bp_scale.c", "line": ln, "condition": "i == 12345"})
        except Exception:
            pass  # a line without code
    assert len(bp_list(mcp, b)) >= 5
    fits(mcp.call_tool("debug_breakpoint", {"sessionId": b}))


@pytest.mark.valgrind_sample
def test_a_smaller_budget_cuts_every_answer_and_says_what(mcp):
    with open(os.path.join(mcp.world.home, "settings.json"), "w") as f:
        json.dump({"answers.maxBytes": 4096}, f)
    sid = mcp.launch("threads16")["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    st = fits(mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid,
                                              "verbose": True}), 4096)
    assert "4 KB" in st["truncated"], st["truncated"]
    g = mcp.launch("globals_all")["sessionId"]
    mcp.wait_events(g, 1, eventType="stdout")
    names = ["g_text"] * 8 + ["g_config", "g_list"] * 4  # 16 targets, ~10 KB of values
    mem = fits(mcp.call_tool("debug_memory", {"sessionId": g, "depth": 5, "targets":
                                              [{"variable": n} for n in names]}), 4096)
    assert "4 KB" in mem["truncated"], mem["truncated"]
    mcp.call_tool("debug_trace", {"add": ["print_*", "add_*", "sum_*"]})
    t = mcp.launch("trace_c", project=REPO)["sessionId"]
    mcp.wait_ended(t)
    page = fits(mcp.query(t, verbose=True, limit=500), 4096)
    assert page["hasMore"] and "offset" in page["truncated"]
    rest = fits(mcp.query(t, verbose=True, limit=500, offset=len(page["events"])), 4096)
    assert int(rest["events"][0]["id"]) > int(page["events"][-1]["id"])
