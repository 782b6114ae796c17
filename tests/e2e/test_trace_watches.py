"""debug_trace watches (spec 003 "WatchTarget"): variables read at every traced call
and shown as watchValues on function_enter/function_exit events (verbose), scoped
with `on`, removed by label; the limits, labels and pending mode. Fixture:
poll_ticker (tick() increments g_counter every 20 ms, other_work() every third
tick; it prints the addresses of its globals)."""

import re

import pytest

from conftest import REPO, T_LONG, wait_until


def launch_ticker(mcp):
    r = mcp.launch("poll_ticker", project=REPO)
    sid = r["sessionId"]
    out = mcp.wait_events(sid, 3, eventType="stdout")["events"]
    addrs = {}
    for e in out:
        m = re.match(r"^(\w+) (0x[0-9a-f]+)$", e["text"])
        if m:
            addrs[m.group(1)] = m.group(2)
    assert "g_counter" in addrs and "g_tempo" in addrs, out
    return sid, addrs


def function_events(mcp, sid, function, n):
    mcp.wait_events(sid, n, eventType="function_exit", function={"equals": function})
    return [e for e in mcp.all_events(sid, verbose=True, function={"equals": function})
            if e["eventType"] in ("function_enter", "function_exit")]


@pytest.mark.valgrind_sample
def test_address_watch_values_on_enter_and_exit(mcp):
    sid, addrs = launch_ticker(mcp)
    res = mcp.call_tool("debug_trace", {
        "sessionId": sid, "add": ["tick", "other_work"],
        "watches": {"add": [{"address": addrs["g_counter"], "type": "i32",
                             "label": "counter"},
                            {"address": addrs["g_tempo"], "type": "f64",
                             "on": ["other_*"]}]}})
    assert res["mode"] == "runtime"
    aw = {w["label"]: w for w in res["activeWatches"]}
    assert aw["counter"] == {"label": "counter", "address": addrs["g_counter"],
                             "type": "i32", "size": 4}
    assert aw[addrs["g_tempo"]]["on"] == ["other_*"]   # auto label: the address
    ev = function_events(mcp, sid, "tick", 4)
    for e in ev:
        wv = e["watchValues"]
        assert set(wv) == {"counter"}, e          # g_tempo is scoped to other_*
        assert isinstance(wv["counter"], int)
    # tick() increments the counter: exit sees one more than its enter
    enters = {e["id"]: e for e in ev if e["eventType"] == "function_enter"}
    pairs = [(enters[x["parentEventId"]], x) for x in ev
             if x["eventType"] == "function_exit" and x["parentEventId"] in enters]
    assert pairs
    for en, ex in pairs:
        assert ex["watchValues"]["counter"] == en["watchValues"]["counter"] + 1
    ow = function_events(mcp, sid, "other_work", 2)
    for e in ow:
        assert set(e["watchValues"]) == {"counter", addrs["g_tempo"]}, e
        assert e["watchValues"][addrs["g_tempo"]] == 120.0
    # summary mode leaves them out
    q = mcp.query(sid, eventType="function_enter", function={"equals": "tick"}, limit=3)
    assert all("watchValues" not in e for e in q["events"])
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_remove_by_label_and_listing(mcp):
    sid, addrs = launch_ticker(mcp)
    mcp.call_tool("debug_trace", {
        "sessionId": sid, "add": ["tick"],
        "watches": {"add": [{"address": addrs["g_counter"], "type": "u32",
                             "label": "c"}]}})
    res = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert [w["label"] for w in res["activeWatches"]] == ["c"]
    res = mcp.call_tool("debug_trace", {"sessionId": sid, "watches": {"remove": ["c"]}})
    assert res["activeWatches"] == []
    # The tracer applies the removal between two calls: the exits made after it have
    # no watchValues. Some made before it may still be on their way to the store
    # when `after` is read: in id order, the ones with values come first.
    last = mcp.query(sid, eventType="function_exit", limit=1)["events"]
    after = last[0]["id"] if last else 0
    def new_events():
        q = mcp.query(sid, verbose=True, afterEventId=after, eventType="function_exit")
        plain = [e for e in q["events"] if "watchValues" not in e]
        return q["events"] if len(plain) >= 3 else None
    fresh = wait_until(new_events, T_LONG, what="tick calls after the removal")
    valued = ["watchValues" in e for e in fresh]
    assert not any(valued[valued.index(False):]), fresh
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {"remove": ["c"]}})
    assert e.code == "VALIDATION_ERROR" and "'c'" in e.message, e.message
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_limits_and_labels(mcp):
    sid, addrs = launch_ticker(mcp)
    a = addrs["g_counter"]
    many = [{"address": a, "type": "i32", "label": "w%d" % i} for i in range(32)]
    res = mcp.call_tool("debug_trace", {"sessionId": sid, "watches": {"add": many}})
    assert len(res["activeWatches"]) == 32
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {
        "add": [{"address": a, "type": "i32", "label": "w32"}]}})
    assert e.code == "LIMIT_EXCEEDED", e.code
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {
        "remove": ["w0"], "add": [{"address": a, "type": "i32", "label": "w1"}]}})
    assert e.code == "VALIDATION_ERROR" and "w1" in e.message, e.message
    # failed changes changed nothing
    res = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert len(res["activeWatches"]) == 32
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {
        "add": [{"address": a, "type": "i32"}, {"address": a, "type": "i32"}]}})
    assert e.code in ("VALIDATION_ERROR", "LIMIT_EXCEEDED")
    mcp.stop(sid)


@pytest.mark.parametrize("target, code, words", [
    ({"variable": "x" * 257}, "VALIDATION_ERROR", "256"),
    ({"address": "0x1000"}, "VALIDATION_ERROR", "type"),
    ({"address": "zzz", "type": "i32"}, "VALIDATION_ERROR", "hex"),
    ({"address": "0x1000", "type": "bytes"}, "VALIDATION_ERROR", "type"),
    ({"variable": "g", "expr": "ptr(1)"}, "VALIDATION_ERROR", "JavaScript"),
    ({"variable": "g", "on": ["a:::b"]}, "INVALID_PATTERN", ":::"),
    ({"variable": "g", "label": ""}, "VALIDATION_ERROR", "label"),
    ({}, "VALIDATION_ERROR", "variable"),
])
def test_watch_target_errors(mcp, target, code, words):
    e = mcp.tool_error("debug_trace", {"watches": {"add": [target]}})
    assert e.code == code, (e.code, e.message)
    assert words in e.message, e.message


def test_33_at_once_is_limit_exceeded(mcp):
    many = [{"variable": "v%d" % i} for i in range(33)]
    e = mcp.tool_error("debug_trace", {"watches": {"add": many}})
    assert e.code == "LIMIT_EXCEEDED", e.code


def test_unreadable_address(mcp):
    sid, _ = launch_ticker(mcp)
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {
        "add": [{"address": "0x10", "type": "i32"}]}})
    assert e.code == "MEMORY_UNREADABLE", e.code
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_pending_watches_applied_at_launch(mcp):
    # the address of a global is only known once it runs: stage a variable
    res = mcp.call_tool("debug_trace", {"add": ["tick"], "watches": {"add": [
        {"variable": "g_counter", "on": ["tick"]},
        {"variable": "g_tempo", "label": "tempo"}]}})
    assert res["mode"] == "pending"
    assert [w["label"] for w in res["activeWatches"]] == ["g_counter", "tempo"]
    assert all(w["pending"] for w in res["activeWatches"])
    e = mcp.tool_error("debug_trace", {"watches": {"add": [{"variable": "g_tempo",
                                                            "label": "tempo"}]}})
    assert e.code == "VALIDATION_ERROR" and "tempo" in e.message
    r = mcp.launch("poll_ticker", project=REPO)
    sid = r["sessionId"]
    assert r.get("pendingWatchesApplied") == 2, r
    res = mcp.call_tool("debug_trace", {"sessionId": sid})
    aw = {w["label"]: w for w in res["activeWatches"]}
    assert aw["g_counter"]["type"] == "int" and aw["g_counter"]["size"] == 4
    assert aw["tempo"]["type"] == "double"
    ev = function_events(mcp, sid, "tick", 3)
    assert all(isinstance(e["watchValues"]["g_counter"], int) for e in ev), ev[:2]
    assert all(e["watchValues"]["tempo"] == 120.0 for e in ev)
    mcp.stop(sid)
    mcp.call_tool("debug_trace", {"remove": ["tick"],
                                  "watches": {"remove": ["g_counter", "tempo"]}})


@pytest.mark.valgrind_sample
def test_variable_watch_scoped_with_pointer_chain(mcp):
    sid, _ = launch_ticker(mcp)
    res = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick", "other_work"],
                                        "watches": {"add": [
                                            {"variable": "g_cfg.max_retries", "on": ["tick"]},
                                            {"variable": "g_head->next->value",
                                             "label": "second"}]}})
    aw = {w["label"]: w for w in res["activeWatches"]}
    assert aw["g_cfg.max_retries"]["type"] == "int"
    assert aw["g_cfg.max_retries"]["resolvedAddress"].startswith("0x")
    ev = function_events(mcp, sid, "tick", 3)
    for e in ev:
        assert e["watchValues"]["second"] == 2
        assert 0 <= e["watchValues"]["g_cfg.max_retries"] < 7
    ow = function_events(mcp, sid, "other_work", 2)
    for e in ow:
        assert set(e["watchValues"]) == {"second"}, e
    mcp.stop(sid)


def test_unknown_variable_changes_nothing(mcp):
    sid, _ = launch_ticker(mcp)
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "add": ["tick"],
                                       "watches": {"add": [{"variable": "g_nope"}]}})
    assert e.code == "VARIABLE_NOT_FOUND", (e.code, e.message)
    assert "g_nope" in e.message
    res = mcp.call_tool("debug_trace", {"sessionId": sid})
    assert res["activeWatches"] == [] and res["activePatterns"] == []
    mcp.stop(sid)


def test_pointer_chain_null_now(mcp):
    """A chain through a pointer that is NULL when the watch is added is accepted:
    each event says what it finds (the pointer may be set later)."""
    sid, _ = launch_ticker(mcp)
    res = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"],
                                        "watches": {"add": [{"variable": "g_null->value"}]}})
    w = res["activeWatches"][0]
    assert w["label"] == "g_null->value" and "resolvedAddress" not in w, w
    ev = function_events(mcp, sid, "tick", 2)
    v = ev[0]["watchValues"]["g_null->value"]
    assert v.startswith("<MEMORY_UNREADABLE") and "NULL" in v, v
    # a plain variable must exist now
    e = mcp.tool_error("debug_trace", {"sessionId": sid, "watches": {"add": [
        {"variable": "g_head->nope"}]}})
    assert e.code == "BAD_EXPRESSION", (e.code, e.message)
    mcp.stop(sid)


def test_pending_watch_that_cannot_be_added(mcp):
    mcp.call_tool("debug_trace", {"add": ["tick"], "watches": {"add": [
        {"variable": "g_counter"}, {"variable": "g_nope"}]}})
    r = mcp.launch("poll_ticker", project=REPO)
    sid = r["sessionId"]
    assert r.get("pendingWatchesApplied") == 1, r
    assert any("g_nope" in w and "VARIABLE_NOT_FOUND" in w for w in r["warnings"]), r
    ev = function_events(mcp, sid, "tick", 1)
    first = min(ev, key=lambda e: int(e["id"]))
    assert "g_counter" in first["watchValues"], first   # from the very first call
    mcp.stop(sid)
    mcp.call_tool("debug_trace", {"remove": ["tick"],
                                  "watches": {"remove": ["g_counter", "g_nope"]}})


@pytest.mark.valgrind_sample
def test_watches_follow_the_main_process_exec(mcp):
    """The main process execs a program (itself, at other addresses): variable watches
    are resolved again in it, so tick() keeps showing the live counter."""
    mcp.call_tool("debug_trace", {"add": ["tick"], "watches": {"add": [
        {"variable": "g_counter"}]}})
    r = mcp.launch("poll_ticker", project=REPO, args=["5", "exec"])
    sid = r["sessionId"]
    mcp.wait_events(sid, 9, eventType="function_exit", function={"equals": "tick"})
    ev = [e for e in mcp.all_events(sid, verbose=True, eventType="function_exit",
                                    function={"equals": "tick"})]
    vals = [e["watchValues"]["g_counter"] for e in ev]
    assert vals[:5] == [1, 2, 3, 4, 5], vals
    assert vals[5:9] == [1, 2, 3, 4], vals          # the new image's counter
    mcp.stop(sid)
    mcp.call_tool("debug_trace", {"remove": ["tick"], "watches": {"remove": ["g_counter"]}})
