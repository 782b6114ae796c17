"""debug_breakpoint and debug_continue through MCP (docs/PROTOCOL.md "debug_breakpoint",
"debug_continue", "Pause state"): breakpoints and logpoints on real programs, pauses
with their locals, until conditions, staged breakpoints, errors, and nothing left
frozen when a session stops or a client goes away.

Fixtures (tests/fixtures, lines found by marker comment, bp_util.line_of):
  bp_scale    the spec 002 Phase 2 bug: scale() negates item 7's factor
  bp_steps    work(i) every ~2 ms (square, fact, strlen, an inlined twice, helpers)
  bp_threads  three workers calling worker_step(id, n)
  bp_fork     a child forked every ~5 ms runs child_work(seq)
  bp_quick    runs for milliseconds: quick(1), quick(2), quick(3), exit 4
  bp_cpp      shop::Counter::bump, x counting from 0
  bp_rust     accumulate(n), n counting from 0
"""

import os
import re
import signal
import time

import pytest

from conftest import T_LONG, fixture_path, pid_alive, stays_true, wait_until
from bp_util import (bp_add, bp_add_error, bp_list, bp_remove, cont, cont_error,
                     launch_ready, line_of, mem_read, mem_write, texts, until_bp,
                     vars_of, wait_paused, wait_text)


def expect_code(err, code, *words):
    assert err.code == code, (err.code, err.message)
    for w in words:
        assert w in err.message, (w, err.message)
    return err


# ---- spec 002 Phase 2: the validation scenario, end to end ------------------------


@pytest.mark.valgrind_sample
def test_phase2_scenario_trace_break_inspect_write_logpoint(mcp):
    r = launch_ready(mcp, "bp_scale", r"^ready$")
    sid, pid = r["sessionId"], r["pid"]
    result_line = line_of("bp_scale.c", "BP_RESULT")
    return_line = line_of("bp_scale.c", "BP_RETURN")

    # 1. Traces show a suspicious value: scale() returns -24 once per round.
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["scale"]})
    assert t["hookedFunctions"] == 1
    exits = mcp.wait_events(sid, 10, eventType="function_exit",
                            returnValue={"equals": -24}, verbose=True)
    bad = exits["events"][0]
    assert bad["function"] == "scale" and bad["returnValue"] == -24, bad
    # Its own enter, by id: the program runs on, traced, so "every enter" keeps
    # growing (a daemon under valgrind would page through it for ever).
    parent = int(bad["parentEventId"])
    [enter] = mcp.query(sid, eventType="function_enter", afterEventId=str(parent - 1),
                        limit=1, verbose=True)["events"]
    assert enter["id"] == bad["parentEventId"], enter
    args = {a["name"]: a["value"] for a in enter["arguments"]}
    assert args["i"] == 7 and args["it"]["weight"] == 8 and args["it"]["id"] == 7, args
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["scale"]})

    # 2. A conditional breakpoint on the multiplication line (a local and a member).
    b = bp_add(mcp, sid, {"file": "bp_scale.c", "line": result_line,
                          "condition": "i == 7 && it->weight == 8"})
    assert b["sessionId"] == sid
    [bp] = b["breakpoints"]
    assert bp["kind"] == "breakpoint" and bp["file"] == "bp_scale.c"
    assert bp["line"] == result_line and "movedFrom" not in bp
    assert bp["condition"] == "i == 7 && it->weight == 8"
    assert bp["locations"] == 1 and bp["hits"] == 0
    assert bp["where"][0]["function"] == "scale"
    assert bp["where"][0]["line"] == result_line
    assert bp["where"][0]["file"].endswith("/bp_scale.c")
    assert re.match(r"^0x[0-9a-f]+$", bp["where"][0]["address"])
    assert "debug_continue" in b["hint"]

    # 3. until: the program pauses at that line with the suspicious locals.
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["reason"] == "breakpoint", a
    assert a["conditionMet"] is True
    assert a["breakpointId"] == bp["id"] and a["threadId"] == pid and a["pid"] == pid
    assert a["function"] == "scale" and a["line"] == result_line
    assert a["file"].endswith("/bp_scale.c")
    assert [(f["function"], f.get("line")) for f in a["frames"][:2]] == [
        ("scale", result_line), ("main", a["frames"][1]["line"])]
    assert a["frames"][1]["line"] > return_line
    args = vars_of(a, "arguments")
    assert args["i"] == 7 and args["it"]["weight"] == 8 and args["it"]["id"] == 7
    assert vars_of(a, "locals")["factor"] == -3  # the wrong value
    paused_threads = a["pausedThreads"]  # checked at the end (seen 0 at times)
    assert "debug_memory" in a["hint"] and str(pid) in a["hint"]

    # 4. debug_memory with threadId reads the paused frame's locals before globals.
    res = mem_read(mcp, sid, "factor", "i", "it->weight", "g_scale", threadId=pid)
    assert [(x["target"], x["type"], x["value"]) for x in res] == [
        ("factor", "int", -3), ("i", "int", 7), ("it->weight", "int", 8),
        ("g_scale", "int", 3)]
    # frame 1 is main: its loop variable i is 7 too, and r is not assigned yet
    res = mem_read(mcp, sid, "i", threadId=pid, frame=1)
    assert res[0]["value"] == 7, res

    # 5. Hypothesis: the factor should be +3. Write the local and a global.
    w = mem_write(mcp, sid, [("factor", 3), ("g_scale", 5)], threadId=pid)
    assert [(x["target"], x["oldValue"], x["value"]) for x in w] == [
        ("factor", -3, 3), ("g_scale", 3, 5)]
    s = cont(mcp, sid, "step-over")
    assert s["state"] == "paused" and s["reason"] == "step", s
    assert s["threadId"] == pid and s["function"] == "scale" and s["line"] == return_line
    assert vars_of(s, "locals")["result"] == 24  # the fixed factor gives the right value

    # 6. Continue with a logpoint instead of the breakpoint.
    assert bp_remove(mcp, sid, [bp["id"]])["removed"] == [bp["id"]]
    lp = bp_add(mcp, sid, {"file": "bp_scale.c", "line": return_line,
                           "message": "i={i} result={result} scale={g_scale}"})
    [lpi] = lp["breakpoints"]
    assert lpi["kind"] == "logpoint" and lpi["message"] == "i={i} result={result} scale={g_scale}"
    c = cont(mcp, sid, timeoutMs=300)
    # no stop: the answer came at this call's timeout of 300 ms, not at the default
    # 10 s (the bound tells the two timeouts apart; how far past 300 ms the answer
    # came is the machine's load)
    assert c["state"] == "running" and "conditionMet" not in c, c
    assert 300 <= c["waitedMs"] < 10000, c
    q = mcp.wait_events(sid, 1, eventType="logpoint", text={"contains": "i=7 result=-40"})
    ev = q["events"][0]
    assert ev["eventType"] == "logpoint" and ev["text"] == "i=7 result=-40 scale=5", ev
    assert ev["breakpointId"] == lpi["id"] and ev["function"] == "scale"
    assert ev["line"] == return_line and ev["file"].endswith("bp_scale.c")
    assert ev["threadId"] == pid
    # The first 500 (the program runs on and logs ~3,000 lines a second: paging to
    # the end of a timeline that grows faster than a loaded daemon under valgrind
    # pages never ends).
    all_lp = [e["text"] for e in mcp.query(sid, eventType="logpoint", limit=500)["events"]]
    assert "i=3 result=20 scale=5" in all_lp, all_lp[:12]
    assert all(re.match(r"^i=\d result=-?\d+ scale=5$", t) for t in all_lp), all_lp[:12]
    q = mcp.query(sid, eventType="logpoint", text={"matches": r"^i=0 result=5 "})
    assert q["totalCount"] >= 1 and q["events"][0]["text"] == "i=0 result=5 scale=5"
    # no pause happened after the step: a logpoint never stops the program
    assert mcp.query(sid, eventType="pause")["totalCount"] == 2  # the breakpoint and the step

    # 7. The program ends: the last round still has the bug (exit code 1). It is paused
    # first, so that it cannot print "bad 1" and exit between the write and the wait.
    assert cont(mcp, sid, "pause")["state"] == "paused"
    mem_write(mcp, sid, [("g_rounds", 0)])
    x = cont(mcp, sid, "until", condition={"event": {"eventType": "stdout",
                                                     "text": {"contains": "bad "}}})
    assert x["conditionMet"] is True and x["event"]["text"] == "bad 1", x
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 1, st
    assert "paused" not in st
    assert paused_threads == 1  # the one thread of the program, paused at step 3


@pytest.mark.valgrind_sample
def test_status_lists_paused_thread_and_breakpoint_count(mcp):
    r = launch_ready(mcp, "bp_scale", r"^ready$")
    sid, pid = r["sessionId"], r["pid"]
    line = line_of("bp_scale.c", "BP_RESULT")
    st = mcp.status(sid)
    assert "paused" not in st
    bp = bp_add(mcp, sid, {"file": "bp_scale.c", "line": line, "condition": "i == 2"},
                {"function": "main", "message": "never: main is entered once"})
    ids = [b["id"] for b in bp["breakpoints"]]
    a = until_bp(mcp, sid, ids[0])
    assert a["state"] == "paused" and vars_of(a, "arguments")["i"] == 2
    st = mcp.status(sid)
    [p] = st["paused"]
    assert p["threadId"] == pid and p["pid"] == pid and p["reason"] == "breakpoint"
    assert p["breakpointId"] == ids[0] and p["function"] == "scale" and p["line"] == line
    assert p["backtrace"][:2] == ["scale (bp_scale.c:%d)" % line,
                                  "main (bp_scale.c:%d)" % a["frames"][1]["line"]]
    assert {x["name"]: x["value"] for x in p["arguments"]}["i"] == 2
    # docs/PROTOCOL.md "Pause state": status adds breakpoints: N
    assert st["breakpoints"] == 2, st
    mcp.stop(sid)


# ---- hitCount, oneShot, allStop, patterns, moved lines, inlined copies ------------


@pytest.mark.valgrind_sample
def test_hit_count_pauses_on_the_nth_hit(mcp):
    """Staged on bp_quick (quick(1), quick(2), quick(3)): hitCount 2 pauses on the
    second call and on the later ones."""
    b = bp_add(mcp, None, {"function": "quick", "hitCount": 2})
    assert b["staged"] is True and b["breakpoints"][0]["hitCount"] == 2
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    a = until_bp(mcp, sid, bound["id"])
    assert a["state"] == "paused" and a["function"] == "quick"
    assert vars_of(a, "arguments") == {"v": 2}, a
    [info] = bp_list(mcp, sid)
    assert info["hits"] == 2 and info["hitCount"] == 2, info
    a = cont(mcp, sid)
    assert a["state"] == "paused" and vars_of(a, "arguments") == {"v": 3}, a
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4, a


def test_hit_count_with_one_shot_pauses_only_on_the_nth(mcp):
    bp_add(mcp, None, {"function": "quick", "hitCount": 2, "oneShot": True})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [p] = wait_paused(mcp, sid)
    assert p["breakpointId"] == r["breakpoints"][0]["id"] and p["function"] == "quick"
    assert {x["name"]: x["value"] for x in p["arguments"]} == {"v": 2}, p
    assert bp_list(mcp, sid) == []
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4, a


def test_one_shot_removed_after_first_pause(mcp):
    line = line_of("bp_quick.c", "QUICK_BODY")
    bp_add(mcp, None, {"file": "bp_quick.c", "line": line, "oneShot": True})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    assert bound["oneShot"] is True and bound["line"] == line
    [p] = wait_paused(mcp, sid)
    assert p["breakpointId"] == bound["id"] and p["line"] == line
    assert {x["name"]: x["value"] for x in p["arguments"]} == {"v": 1}, p
    assert bp_list(mcp, sid) == []
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4, a
    assert mcp.query(sid, eventType="pause")["totalCount"] == 1


def test_removing_a_bound_staged_breakpoint_unstages_it(mcp):
    """The launch's copy of a staged breakpoint keeps its id: one breakpoint, as in
    gdb, so removing it from the session also keeps later launches from binding it."""
    bp_add(mcp, None, {"function": "quick"})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    assert [b["id"] for b in bp_list(mcp, None)] == [bound["id"]]
    a = bp_remove(mcp, sid, [bound["id"]])
    assert a["removed"] == [bound["id"]] and "stagedNote" not in a, a
    assert bp_list(mcp, sid) == [] and bp_list(mcp, None) == []
    a = mcp.call_tool("debug_breakpoint", {"remove": "*"})
    assert a["removed"] == [] and "later launches do not bind" in a["hint"], a
    mcp.stop(sid)


def test_a_breakpoint_on_an_ifunc_stops_in_the_variant_this_cpu_runs(mcp):
    """strlen is an IFUNC in glibc: the breakpoint goes where its calls go (the
    variant the dynamic linker picked), not on the resolver nobody calls."""
    bp_add(mcp, None, {"function": "strlen", "oneShot": True})
    r = mcp.launch("bp_steps", args=["3"])
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    a = until_bp(mcp, sid, bound["id"])
    assert a["state"] == "paused" and a["breakpointId"] == bound["id"], a
    callers = [(f["function"], f.get("line")) for f in a["frames"]]
    assert ("work", line_of("bp_steps.c", "CALL_STRLEN")) in callers, a
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_all_stop_pauses_every_thread(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid, pid = r["sessionId"], r["pid"]
    b = bp_add(mcp, sid, {"function": "worker_step", "condition": "id == 2", "allStop": True})
    [bp] = b["breakpoints"]
    assert bp["allStop"] is True and bp["where"][0]["function"] == "worker_step"
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["reason"] == "breakpoint", a
    assert vars_of(a, "arguments")["id"] == 2 and a["threadId"] != pid
    # every thread stops, stopped by the all-stop (their reason says so, below)
    paused = wait_paused(mcp, sid, 4)
    assert len(paused) == 4, paused
    g = mem_read(mcp, sid, "g_total")[0]["value"]
    # no worker runs (each adds to g_total every ~2 ms)
    assert stays_true(lambda: mem_read(mcp, sid, "g_total")[0]["value"] == g, 0.1)
    assert len({p["threadId"] for p in paused}) == 4 and pid in {p["threadId"] for p in paused}
    assert all(p["pid"] == pid for p in paused)
    mine = [p for p in paused if p["threadId"] == a["threadId"]]
    assert mine[0]["reason"] == "breakpoint" and mine[0]["breakpointId"] == bp["id"]
    others = [p for p in paused if p["threadId"] != a["threadId"]]
    assert all(p["reason"] == "allStop" for p in others), others
    bp_remove(mcp, sid, "*")
    c = cont(mcp, sid, timeoutMs=200)
    assert c["state"] == "running", c
    assert "paused" not in mcp.status(sid)
    mcp.stop(sid)


def test_after_an_all_stop_reads_and_steps_go_to_the_thread_that_hit(mcp):
    """The threads an allStop breakpoint stops with it pause after the one that hit
    it: reads and steps without threadId still act on that one (gdb's selected
    thread), not on the newest pause, and adding a breakpoint says the program
    stays paused."""
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "worker_step", "condition": "id == 2",
                             "allStop": True})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["pausedThreads"] == 4, a
    [v] = mem_read(mcp, sid, "id")
    assert v.get("value") == 2, v
    b = bp_add(mcp, sid, {"function": "main", "message": "never"})
    assert b["hint"].startswith("The paused threads stay paused"), b
    assert len(mcp.status(sid)["paused"]) == 4
    s = cont(mcp, sid, "step-over")
    assert s["reason"] == "step" and s["threadId"] == a["threadId"], s
    assert s["line"] == line_of("bp_threads.c", "WS_NEXT"), s
    mcp.stop(sid)


def test_all_stop_answer_comes_when_every_thread_is_paused(mcp):
    """The pause answer of an allStop breakpoint counts the threads it stopped, and
    status right after it lists them all (the program is stopped, not stopping)."""
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "worker_step", "condition": "id == 2",
                             "allStop": True})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["reason"] == "breakpoint", a
    paused = mcp.status(sid)["paused"]
    assert (a["pausedThreads"], len(paused)) == (4, 4), (a["pausedThreads"], paused)
    # The other three are named, so the count is not a riddle.
    others = a["otherPaused"]
    assert len(others) == 3 and all(o.startswith("thread ") for o in others), a
    assert {int(o.split()[1]) for o in others} | {a["threadId"]} == \
        {p["threadId"] for p in paused}, (others, paused)
    # One caught inside libc (usleep, pthread_join) is told where it is in the
    # program's own code, and main what it waits for.
    assert all("bp_threads.c:" in o for o in others), others
    [main] = [o for o in others if int(o.split()[1]) == r["pid"]]
    assert main.startswith("thread %d in main (bp_threads.c:" % r["pid"]), main
    assert "waiting on join (joining thread " in main, main
    mcp.stop(sid)


def test_all_stop_hit_again_at_once_stops_every_thread_each_time(mcp):
    """A thread resumed first can hit its allStop breakpoint again before the others
    are resumed: they stay paused for the new hit instead of running on."""
    r = launch_ready(mcp, "allstop_spin", r"^started$")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "tick", "allStop": True})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    for _ in range(5):
        assert a["state"] == "paused" and a["pausedThreads"] == 4, a
        spins = mem_read(mcp, sid, "g_spins")[0]["value"]
        assert stays_true(lambda: mem_read(mcp, sid, "g_spins")[0]["value"] == spins, 0.05)
        a = cont(mcp, sid)
    mcp.stop(sid)


def test_until_the_program_exit_answers_exited(mcp):
    """until the process_exit event of bp_quick: the answer says the program ended
    (state exited, its exit code and the event), and counts what happened meanwhile."""
    bp_add(mcp, None, {"function": "quick"})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    a = until_bp(mcp, sid, r["breakpoints"][0]["id"])
    assert a["state"] == "paused", a
    bp_remove(mcp, sid, "*")
    x = cont(mcp, sid, "until", condition={"event": {"eventType": "process_exit"}})
    assert x["state"] == "exited" and x["exitCode"] == 4 and x["conditionMet"] is True, x
    assert x["event"]["eventType"] == "process_exit", x
    assert x["eventsMeanwhile"] >= 1 and "runs on" not in x["hint"], x


def test_function_pattern_binds_every_match(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "helper_*"})["breakpoints"]
    assert bp["function"] == "helper_*" and bp["locations"] == 2, bp
    assert sorted(w["function"] for w in bp["where"]) == ["helper_alpha", "helper_beta"]
    seen = set()
    a = until_bp(mcp, sid, bp["id"])
    for _ in range(2):
        assert a["state"] == "paused" and a["breakpointId"] == bp["id"], a
        seen.add(a["function"])
        assert [f["function"] for f in a["frames"][:2]] == [a["function"], "work"]
        a = cont(mcp, sid)
    assert seen == {"helper_alpha", "helper_beta"}
    mcp.stop(sid)


def test_function_breakpoint_on_a_one_line_function_sees_its_argument(mcp):
    """helper_alpha(int x) { return x + 1; } is one line: its breakpoint must still be
    after the prologue (where x is stored), so x is the caller's k."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "helper_alpha"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "helper_alpha", a
    k = mem_read(mcp, sid, "k", threadId=a["threadId"], frame=1)[0]["value"]
    assert vars_of(a, "arguments") == {"x": k}, (a["arguments"], k)
    assert mem_read(mcp, sid, "x", threadId=a["threadId"])[0]["value"] == k
    mcp.stop(sid)


def test_line_without_code_moves_to_the_next_line(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    asked = line_of("bp_steps.c", "NO_CODE")
    nxt = line_of("bp_steps.c", "NO_CODE_NEXT")
    [bp] = bp_add(mcp, sid, {"file": "bp_steps.c", "line": asked})["breakpoints"]
    assert bp["line"] == nxt and bp["movedFrom"] == asked, bp
    assert str(asked) in bp["note"] and str(nxt) in bp["note"], bp["note"]
    assert bp["where"][0]["line"] == nxt and bp["where"][0]["function"] == "work"
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["line"] == nxt and a["function"] == "work", a
    mcp.stop(sid)


def test_inlined_function_line_binds_every_copy(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    line = line_of("bp_steps.c", "INL_BODY")
    [bp] = bp_add(mcp, sid, {"file": "bp_steps.c", "line": line})["breakpoints"]
    assert bp["locations"] == 2, bp
    assert all(w["inlined"] is True and w["line"] == line for w in bp["where"]), bp
    assert len({w["address"] for w in bp["where"]}) == 2
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["line"] == line, a
    assert a["frames"][0]["function"] == "twice" and a["frames"][0]["inlined"] is True, a
    assert a["frames"][1]["function"] == "work", a
    hits = bp_list(mcp, sid)[0]["hits"]
    a2 = cont(mcp, sid)
    assert a2["state"] == "paused" and a2["line"] == line
    assert a2["threadId"] == a["threadId"]
    assert bp_list(mcp, sid)[0]["hits"] == hits + 1
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_condition_that_cannot_be_evaluated_pauses_and_says_why(mcp):
    """*g_null (a NULL pointer) cannot be read at the hit: the breakpoint pauses there,
    as gdb does, and the list says why (conditionErrors, lastConditionError)."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "square", "condition": "*g_null == 3"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "square", a
    [info] = bp_list(mcp, sid)
    assert info["conditionErrors"] >= 1, info
    assert "g_null" in info["lastConditionError"], info
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_one_shot_logpoint_records_one_message(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [lp] = bp_add(mcp, sid, {"function": "square", "message": "square of {v} with {{braces}}",
                             "oneShot": True})["breakpoints"]
    q = mcp.wait_events(sid, 1, eventType="logpoint")
    assert re.match(r"^square of \d+ with \{braces\}$", q["events"][0]["text"]), q
    wait_until(lambda: bp_list(mcp, sid) == [], what="the oneShot logpoint to go")
    later = mem_read(mcp, sid, "g_x")[0]["value"] + 10
    cont(mcp, sid, "until", condition={"memory": "g_x >= %d" % later})
    assert mcp.query(sid, eventType="logpoint")["totalCount"] == 1
    assert "paused" not in mcp.status(sid)
    mcp.stop(sid)


# ---- a breakpoint and a trace on one function; forked children ---------------------


@pytest.mark.valgrind_sample
def test_breakpoint_and_trace_on_the_same_function(mcp):
    mcp.call_tool("debug_trace", {"add": ["quick"]})
    bp_add(mcp, None, {"function": "quick"})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    assert r["pendingPatternsApplied"]
    [bound] = r["breakpoints"]
    a = until_bp(mcp, sid, bound["id"])
    assert a["state"] == "paused" and vars_of(a, "arguments") == {"v": 1}, a
    assert a["line"] == line_of("bp_quick.c", "QUICK_BODY")
    a = cont(mcp, sid)
    assert a["state"] == "paused" and vars_of(a, "arguments") == {"v": 2}, a
    bp_remove(mcp, sid, "*")
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4, a
    mcp.wait_ended(sid)
    ent = mcp.all_events(sid, eventType="function_enter", verbose=True)
    ext = mcp.all_events(sid, eventType="function_exit", verbose=True)
    assert [e["function"] for e in ent] == ["quick"] * 3
    assert [e["arguments"][0]["value"] for e in ent] == [1, 2, 3]
    assert [e["returnValue"] for e in ext] == [2, 4, 6]
    assert texts(mcp, sid, "stdout") == ["sum 12"]


@pytest.mark.valgrind_sample
def test_breakpoint_in_forked_child_reports_its_pid(mcp):
    r = launch_ready(mcp, "bp_fork", r"^parent \d+$")
    sid, pid = r["sessionId"], r["pid"]
    [bp] = bp_add(mcp, sid, {"function": "child_work"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "child_work", a
    assert a["pid"] != pid and a["threadId"] == a["pid"], a
    assert a["pid"] in mcp.status(sid)["pids"]
    seq = vars_of(a, "arguments")["seq"]
    assert seq >= 1
    # the child's memory, read through its paused thread
    assert mem_read(mcp, sid, "seq", threadId=a["threadId"], pid=a["pid"])[0]["value"] == seq
    [p] = mcp.status(sid)["paused"]
    assert p["pid"] == a["pid"] and p["threadId"] == a["threadId"]
    bp_remove(mcp, sid, "*")
    cont(mcp, sid, timeoutMs=100)
    wait_until(lambda: not pid_alive(a["pid"]), what="the child to exit")
    mcp.stop(sid)


# ---- until -----------------------------------------------------------------------


def test_until_breakpoint_reports_the_first_hit(mcp):
    """until {breakpoint} called right after the breakpoint is set, while the program
    hits it every ~2 ms: the answer is the first hit, and no hit paused and resumed
    unseen before it (one pause event per answer). Repeated, since the hit and the call
    race."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    line = line_of("bp_steps.c", "CALL_SQUARE")
    for round in range(30):
        [bp] = bp_add(mcp, sid, {"file": "bp_steps.c", "line": line})["breakpoints"]
        a = until_bp(mcp, sid, bp["id"])
        assert a["state"] == "paused" and a["breakpointId"] == bp["id"], a
        evs = mcp.all_events(sid, eventType="pause")
        assert len(evs) == round + 1, (round, [(e["id"], e["text"]) for e in evs])
        k = vars_of(a, "arguments")["k"]
        assert [x["hits"] for x in bp_list(mcp, sid)] == [1], (round, k)
        bp_remove(mcp, sid, "*")
        c = cont(mcp, sid, timeoutMs=20)
        assert c["state"] == "running"
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_until_memory_condition_on_a_global(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    now = mem_read(mcp, sid, "g_x")[0]["value"]
    target = now + 40
    a = cont(mcp, sid, "until", condition={"memory": "g_x >= %d" % target})
    assert a["state"] == "running" and a["conditionMet"] is True, a
    m = re.search(r"g_x\D+(\d+)", a["values"])
    assert m and int(m.group(1)) >= target, a["values"]
    assert mem_read(mcp, sid, "g_x")[0]["value"] >= target
    mcp.stop(sid)


def test_until_event_waits_for_a_later_stderr_line(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    now = mem_read(mcp, sid, "g_x")[0]["value"]
    later = (now // 25 + 2) * 25  # a tick not printed yet
    assert not any(t.startswith("tick %d " % later) for t in texts(mcp, sid, "stderr"))
    a = cont(mcp, sid, "until", condition={"event": {
        "eventType": "stderr", "text": {"contains": "tick %d " % later}}})
    assert a["state"] == "running" and a["conditionMet"] is True, a
    assert a["event"]["eventType"] == "stderr"
    assert re.match(r"^tick %d r=-?\d+$" % later, a["event"]["text"]), a["event"]
    mcp.stop(sid)


def test_until_answers_at_once_when_the_condition_holds(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [seen] = mcp.query(sid, eventType="stderr", text={"contains": "tick 0 "})["events"]
    # "tick 0" is printed once: a wait for another would end at the timeout with
    # conditionMet false; the answer is the line already in the timeline
    a = cont(mcp, sid, "until", condition={"event": {"eventType": "stderr",
                                                     "text": {"contains": "tick 0 "}}})
    assert a["conditionMet"] is True and a["event"]["text"].startswith("tick 0 r="), a
    assert a["event"]["id"] == seen["id"], (a, seen)
    a = cont(mcp, sid, "until", condition={"memory": "g_x >= 0"})
    assert a["conditionMet"] is True and a["state"] == "running", a
    # a thread already paused at the breakpoint
    [bp] = bp_add(mcp, sid, {"function": "square"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "square"
    st = mcp.status(sid)
    assert len(st["paused"]) == 1
    mcp.stop(sid)


def test_until_a_breakpoint_an_answer_showed_waits_for_its_next_hit(mcp):
    """A hit no debug_continue has shown yet is answered at once; one it has shown is
    resumed with the others, and the wait is for the next hit (gdb's continue)."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    [bp] = bp_add(mcp, sid, {"function": "square"})["breakpoints"]
    wait_until(lambda: mcp.status(sid).get("paused"), T_LONG, what="the hit of square")
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["conditionMet"] is True and not a.get("resumed"), a
    v = vars_of(a, "arguments")["v"]
    for n in (1, 2):
        a = until_bp(mcp, sid, bp["id"])
        assert a["state"] == "paused" and a["conditionMet"] is True, a
        assert len(a["resumed"]) == 1 and "square" in a["resumed"][0], a
        assert vars_of(a, "arguments")["v"] == v + n, a
    mcp.stop(sid)


def test_until_timeout_reports_what_happened_meanwhile(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    t0 = time.monotonic()
    a = cont(mcp, sid, "until", condition={"event": {"text": {"contains": "never printed"}}},
             timeoutMs=400)
    took = time.monotonic() - t0
    assert a["state"] == "running" and a["conditionMet"] is False, a
    # it waited its 400 ms, not the default 10 s (only the default reaches the bound)
    assert 400 <= a["waitedMs"] < 10000 and took >= 0.4, (a, took)
    assert a["eventsMeanwhile"] >= 2, a
    assert a["outputMeanwhile"] and all(re.match(r"^tick \d+ r=-?\d+$", l)
                                        for l in a["outputMeanwhile"]), a
    assert "debug_continue" in a["hint"]
    mcp.stop(sid)


# ---- staged breakpoints -----------------------------------------------------------


def test_staged_breakpoint_stops_a_program_of_a_few_ms(mcp):
    line = line_of("bp_quick.c", "QUICK_BODY")
    s = bp_add(mcp, None, {"file": "bp_quick.c", "line": line, "condition": "v == 3"})
    assert s["staged"] is True and "sessionId" not in s
    assert s["breakpoints"][0]["staged"] is True and "locations" not in s["breakpoints"][0]
    listed = bp_list(mcp, None)
    assert [(b["file"], b["line"], b["condition"]) for b in listed] == [
        ("bp_quick.c", line, "v == 3")]
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    assert "breakpointErrors" not in r
    assert bound["locations"] == 1 and bound["where"][0]["function"] == "quick"
    assert bound["where"][0]["line"] == line and bound["condition"] == "v == 3"
    a = until_bp(mcp, sid, bound["id"])
    assert a["state"] == "paused" and a["line"] == line, a
    assert vars_of(a, "arguments") == {"v": 3}
    assert a["frames"][1]["function"] == "main"
    assert mcp.status(sid)["status"] == "running"
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4, a
    # staged specs stay for the next launches, until removed
    assert [b["line"] for b in bp_list(mcp, None)] == [line]
    rm = mcp.call_tool("debug_breakpoint", {"remove": "*"})
    assert rm["removed"] == [listed[0]["id"]] and rm["breakpoints"] == []
    assert bp_list(mcp, None) == []


def test_staged_breakpoint_errors_in_the_launch_answer(mcp):
    line = line_of("bp_quick.c", "QUICK_BODY")
    bp_add(mcp, None, {"file": "no_such_file.c", "line": 3},
           {"file": "bp_quick.c", "line": line})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bad] = r["breakpointErrors"]
    assert bad["file"] == "no_such_file.c" and bad["line"] == 3, bad
    assert "no_such_file.c" in bad["error"], bad
    assert bad["error"].endswith("It is no longer staged: add it again, corrected, for the "
                                 "next launch."), bad
    [good] = r["breakpoints"]
    assert good["line"] == line and good["locations"] == 1
    assert [b["id"] for b in bp_list(mcp, sid)] == [good["id"]]
    assert [b["id"] for b in bp_list(mcp, None)] == [good["id"]]  # the failed one unstaged
    a = until_bp(mcp, sid, good["id"])
    assert a["state"] == "paused" and vars_of(a, "arguments") == {"v": 1}
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_registers_of_the_paused_frame_read_and_written(mcp):
    """debug_memory with threadId names registers: $rip is the breakpoint's address,
    $rdi quick's first argument; after step-out $rax holds the value returned, and
    writing it changes what main adds up (sum 110 instead of 12)."""
    bp_add(mcp, None, {"function": "quick", "condition": "v == 1"})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    [bound] = r["breakpoints"]
    a = until_bp(mcp, sid, bound["id"])
    tid = a["threadId"]
    regs = mem_read(mcp, sid, "$rip", "$rdi", threadId=tid)
    assert [(x["target"], x["value"]) for x in regs] == [
        ("$rip", bound["where"][0]["address"]), ("$rdi", 1)], regs
    caller = mem_read(mcp, sid, "$rip", threadId=tid, frame=1)[0]["value"]
    assert int(caller, 16) != int(bound["where"][0]["address"], 16)
    s = cont(mcp, sid, "step-out")
    assert s["state"] == "paused" and s["function"] == "main" and s["returnValue"] == 2, s
    assert mem_read(mcp, sid, "$rip", threadId=tid)[0]["value"] == caller
    w = mem_write(mcp, sid, [("$rax", 100)], threadId=tid)
    assert (w[0]["oldValue"], w[0]["value"]) == (2, 100)
    bp_remove(mcp, sid, "*")
    x = cont(mcp, sid)
    assert x["state"] == "exited" and x["exitCode"] == 4, x
    assert x["outputMeanwhile"] == ["sum 110"], x
    assert texts(mcp, sid, "stdout") == ["sum 110"]


# ---- pause -----------------------------------------------------------------------


def test_pause_stops_every_thread_and_continue_resumes(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid, pid = r["sessionId"], r["pid"]
    a = cont(mcp, sid, "pause")
    assert a["state"] == "paused" and a["reason"] == "pause", a
    assert a["pausedThreads"] == 4 and a["pid"] == pid
    paused = mcp.status(sid)["paused"]
    assert len({p["threadId"] for p in paused}) == 4
    assert all(p["reason"] == "pause" for p in paused), paused
    # Pausing a program that is paused whole answers with its state, without a wait
    # for a stop that cannot come. The answer would be the same after the wait, and
    # has no field that tells them apart: the wait is the longest there is (60 s), and
    # only an answer that waited for it takes that long.
    t0 = time.monotonic()
    again = cont(mcp, sid, "pause", timeoutMs=60000)
    assert again["state"] == "paused" and again["pausedThreads"] == 4, again
    assert time.monotonic() - t0 < 60, "the second pause waited for its timeout"
    total = mem_read(mcp, sid, "g_total")[0]["value"]
    assert stays_true(lambda: mem_read(mcp, sid, "g_total")[0]["value"] == total, 0.1)
    c = cont(mcp, sid, timeoutMs=200)
    assert c["state"] == "running" and c["waitedMs"] >= 200, c
    assert "paused" not in mcp.status(sid)
    wait_until(lambda: mem_read(mcp, sid, "g_total")[0]["value"] > total,
               what="the workers to run again")
    assert mcp.query(sid, eventType="pause", text={"contains": "paused"})["totalCount"] >= 1
    mcp.stop(sid)


# ---- errors ----------------------------------------------------------------------


@pytest.mark.valgrind_sample
def test_errors_of_breakpoint_specs(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    sq = line_of("bp_steps.c", "SQ_BODY")
    e = expect_code(bp_add_error(mcp, sid, {"file": "nosuch_steps.c", "line": 3}),
                    "FILE_NOT_FOUND", "nosuch_steps.c")
    assert "near" in e.message or "bp_steps.c" in e.message, e.message
    e = expect_code(bp_add_error(mcp, sid, {"file": "bp_steps.c", "line": 100000}),
                    "LINE_NOT_FOUND", "100000")
    assert "inside a function" in e.message  # the next step
    e = expect_code(bp_add_error(mcp, sid, {"function": "no_such_function_xyz"}),
                    "FUNCTION_NOT_FOUND", "no_such_function_xyz")
    assert "debug_trace" in e.message
    e = expect_code(bp_add_error(mcp, sid, {"file": "bp_steps.c", "line": sq,
                                            "condition": "v > && 3"}), "BAD_EXPRESSION")
    assert re.search(r"column \d+", e.message), e.message
    assert "Write the condition as C" in e.message
    e = expect_code(bp_add_error(mcp, sid, {"file": "bp_steps.c", "line": sq,
                                            "message": "v={v"}), "BAD_EXPRESSION")
    e = expect_code(bp_add_error(mcp, sid, {"file": "bp_steps.c", "line": sq,
                                            "message": "v={v +}"}), "BAD_EXPRESSION")
    assert re.search(r"column \d+", e.message), e.message
    e = expect_code(bp_add_error(mcp, sid, {"file": "bp_steps.c", "line": sq,
                                            "condition": "no_such_var_q > 1"}),
                    "VARIABLE_NOT_FOUND", "no_such_var_q")
    assert "argument or local" in e.message
    # all or nothing: a good spec next to a bad one is not added
    expect_code(bp_add_error(mcp, sid, {"function": "square"},
                             {"function": "no_such_function_xyz"}), "FUNCTION_NOT_FOUND")
    assert bp_list(mcp, sid) == []
    e = expect_code(mcp.tool_error("debug_breakpoint", {"sessionId": sid, "remove": [77]}),
                    "BREAKPOINT_NOT_FOUND", "77")
    assert "debug_breakpoint({sessionId})" in e.message
    mcp.stop(sid)


def test_errors_limit_exceeded_at_the_51st_breakpoint(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    spec = {"function": "square", "condition": "v < 0"}  # never pauses
    for _ in range(3):
        bp_add(mcp, sid, *([spec] * 16))
    bp_add(mcp, sid, *([spec] * 2))
    assert len(bp_list(mcp, sid)) == 50
    e = expect_code(bp_add_error(mcp, sid, spec), "LIMIT_EXCEEDED", "50")
    assert len(bp_list(mcp, sid)) == 50
    # logpoints have their own limit of 100
    lp = {"function": "square", "message": "v={v}", "condition": "v < 0"}
    for _ in range(6):
        bp_add(mcp, sid, *([lp] * 16))
    bp_add(mcp, sid, *([lp] * 4))
    listed = mcp.call_tool("debug_breakpoint", {"sessionId": sid})
    # the list is cut to its answer budget; the rest is counted
    assert len(listed["breakpoints"]) + listed.get("omittedBreakpoints", 0) == 150, listed
    e2 = expect_code(bp_add_error(mcp, sid, lp), "LIMIT_EXCEEDED", "100")
    # removing one makes room again
    bp_remove(mcp, sid, [listed["breakpoints"][0]["id"]])
    assert bp_add(mcp, sid, spec)["breakpoints"][0]["kind"] == "breakpoint"
    mcp.stop(sid)
    # each message names the next step (docs/PROTOCOL.md: "Errors, each naming what
    # to do next"): remove some with debug_breakpoint
    for err in (e, e2):
        assert "remove" in err.message and "debug_breakpoint" in err.message, err.message


def test_errors_validation_of_shapes(mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    cases = [
        ({"add": [{"file": "bp_steps.c"}]}, "'line'"),
        ({"add": [{"function": "square", "file": "bp_steps.c", "line": 3}]}, "exactly one"),
        ({"add": [{"function": "square", "message": "v={v}", "allStop": True}]}, "allStop"),
        ({"add": [{"function": "square", "hitCount": 0}]}, "hitCount"),
        ({"add": [{"function": "square", "colour": "red"}]}, "colour"),
        ({"add": []}, "'add'"),
        ({"add": [{"function": "square"}] * 17}, "'add'"),
        ({"remove": "all"}, "'remove'"),
        ({"add": [{"function": "square", "condition": ""}]}, "condition"),
    ]
    for extra, word in cases:
        a = {"sessionId": sid}
        a.update(extra)
        expect_code(mcp.tool_error("debug_breakpoint", a), "VALIDATION_ERROR", word)
    ccases = [
        ({"timeoutMs": 0}, "timeoutMs"),
        ({"timeoutMs": 60001}, "timeoutMs"),
        ({"action": "rewind"}, "rewind"),
        ({"action": "until", "condition": {"breakpoint": 1, "memory": "g_x > 1"}},
         "exactly one"),
        ({"action": "until", "condition": {"memory": ""}}, "condition.memory"),
        ({"action": "continue", "condition": {"breakpoint": 1}}, "until"),
        ({"threadId": "main"}, "threadId"),
    ]
    for extra, word in ccases:
        e = cont_error(mcp, sid, **extra)
        expect_code(e, "VALIDATION_ERROR", word)
    e = expect_code(mcp.tool_error("debug_memory", {"sessionId": sid, "frame": 1,
                                                    "targets": [{"variable": "g_x"}]}),
                    "VALIDATION_ERROR", "threadId")
    assert bp_list(mcp, sid) == []
    mcp.stop(sid)


def test_errors_of_continue_and_until(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid, pid = r["sessionId"], r["pid"]
    for action in ("continue", "step-over", "step-into", "step-out"):
        e = expect_code(cont_error(mcp, sid, action), "NOT_PAUSED")
        assert "debug_breakpoint" in e.message and "pause" in e.message, e.message
    e = expect_code(cont_error(mcp, sid, "until", condition={"breakpoint": 99}),
                    "BREAKPOINT_NOT_FOUND", "99")
    e = expect_code(cont_error(mcp, sid, "until", condition={"memory": "g_total >"}),
                    "BAD_EXPRESSION")
    # the condition at fault when it is evaluated, as when it does not parse
    e = expect_code(cont_error(mcp, sid, "until", condition={"memory": "g_total / 0 > 1"}),
                    "BAD_EXPRESSION", "'/' by zero")
    # a step of a running thread while another one is paused
    [bp] = bp_add(mcp, sid, {"function": "worker_step", "condition": "id == 1"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["threadId"] != pid
    e = expect_code(cont_error(mcp, sid, "step-over", threadId=pid), "THREAD_NOT_PAUSED",
                    str(a["threadId"]))
    assert "threadId" in e.message
    e = expect_code(mcp.tool_error("debug_memory", {"sessionId": sid, "threadId": pid,
                                                    "targets": [{"variable": "id"}]}),
                    "THREAD_NOT_PAUSED")
    mcp.stop(sid)
    e = mcp.tool_error("debug_continue", {"sessionId": sid})
    assert e.code == "SESSION_NOT_FOUND", (e.code, e.message)


def test_until_memory_unknown_variable_is_variable_not_found(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid = r["sessionId"]
    e = expect_code(cont_error(mcp, sid, "until", condition={"memory": "g_nothing_here > 1"}),
                    "VARIABLE_NOT_FOUND", "g_nothing_here")
    assert "g_total" in e.message or "global" in e.message
    mcp.stop(sid)


def test_until_one_shot_breakpoint_whose_thread_already_paused(mcp):
    """A staged oneShot breakpoint on a program of a few ms has paused its thread (and
    left the list) before the agent asks: until {breakpoint: id} answers that pause."""
    bp_add(mcp, None, {"function": "quick", "oneShot": True})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    bp_id = r["breakpoints"][0]["id"]
    wait_paused(mcp, sid)
    a = until_bp(mcp, sid, bp_id)
    assert a["state"] == "paused" and a["breakpointId"] == bp_id, a
    assert vars_of(a, "arguments") == {"v": 1}
    mcp.stop(sid)


def test_errors_after_the_program_exited(mcp):
    bp_add(mcp, None, {"function": "quick", "oneShot": True})
    r = mcp.launch("bp_quick")
    sid = r["sessionId"]
    wait_paused(mcp, sid)
    a = cont(mcp, sid)
    assert a["state"] == "exited" and a["exitCode"] == 4
    mcp.wait_ended(sid)
    e = expect_code(bp_add_error(mcp, sid, {"function": "quick"}), "PROCESS_EXITED")
    assert "without sessionId" in e.message
    for action in ("continue", "step-over", "pause"):
        e = expect_code(cont_error(mcp, sid, action), "PROCESS_EXITED")
        assert "debug_query" in e.message and "debug_launch" in e.message, e.message
    expect_code(cont_error(mcp, sid, "until", condition={"memory": "1 > 0"}), "PROCESS_EXITED")


# ---- nothing frozen ----------------------------------------------------------------


def test_stop_while_paused_kills_the_program(mcp):
    r = launch_ready(mcp, "bp_threads", r"^started$")
    sid, pid = r["sessionId"], r["pid"]
    [bp] = bp_add(mcp, sid, {"function": "worker_step"})["breakpoints"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused"
    s = mcp.stop(sid)
    assert s["success"] is True
    wait_until(lambda: not pid_alive(pid), what="the paused program to be killed")
    assert not os.path.exists("/proc/%d" % a["threadId"])  # no thread of it left
    assert sid not in [x["sessionId"] for x in mcp.sessions()]


@pytest.mark.valgrind_sample
def test_client_disconnect_resumes_paused_threads(world, mcp):
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    other = world.mcp()
    [bp] = bp_add(other, sid, {"function": "square"})["breakpoints"]
    [lp] = bp_add(other, sid, {"function": "fact", "message": "fact n={n}"})["breakpoints"]
    a = until_bp(other, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "square"
    assert len(mcp.status(sid)["paused"]) == 1
    x = mem_read(mcp, sid, "g_x")[0]["value"]
    other.close()
    # the pause ends, the breakpoint goes, the logpoint stays, the program runs on
    wait_until(lambda: "paused" not in mcp.status(sid), what="the pause to end")
    assert [(b["id"], b["kind"]) for b in bp_list(mcp, sid)] == [(lp["id"], "logpoint")]
    wait_until(lambda: mem_read(mcp, sid, "g_x")[0]["value"] > x + 5,
               what="the program to run again")
    later = (mem_read(mcp, sid, "g_x")[0]["value"] // 25 + 1) * 25
    wait_text(mcp, sid, "stderr", r"^tick %d " % later)
    assert mcp.query(sid, eventType="logpoint", text={"contains": "fact n=1"})["totalCount"] >= 1
    mcp.stop(sid)


def test_strobectl_connection_does_not_resume_on_disconnect(world, mcp):
    """strobectl's connections are transient: its exit leaves the pause in place."""
    r = launch_ready(mcp, "bp_steps", r"^tick 0 ", event_type="stderr")
    sid = r["sessionId"]
    res = world.strobectl("break", sid, "square")
    assert res.rc == 0, res
    res = world.strobectl("--json", "continue", sid)
    assert res.rc == 0, res
    assert res.json()["state"] == "paused"
    st = mcp.status(sid)
    assert len(st["paused"]) == 1 and st["paused"][0]["function"] == "square"
    assert len(bp_list(mcp, sid)) == 1
    mcp.stop(sid)


# ---- C++ and Rust --------------------------------------------------------------------


@pytest.mark.valgrind_sample
def test_cpp_method_by_qualified_name_with_member_condition(mcp):
    r = launch_ready(mcp, "bp_cpp", r"^ready$")
    sid = r["sessionId"]
    b = bp_add(mcp, sid, {"function": "shop::Counter::bump", "condition": "this->x >= 1"})
    [bp] = b["breakpoints"]
    assert bp["locations"] == 1 and bp["where"][0]["function"] == "shop::Counter::bump", bp
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["function"] == "shop::Counter::bump", a
    assert a["line"] == line_of("bp_cpp.cpp", "CPP_BUMP")
    assert vars_of(a, "arguments")["by"] == 1
    x0 = mem_read(mcp, sid, "this->x", threadId=a["threadId"])[0]["value"]
    assert x0 >= 1
    bp_remove(mcp, sid, "*")
    target = x0 + 50
    # a member named as the method names it, without this-> (C++ lookup: locals,
    # members, globals), in the condition, a logpoint and a read
    [bp2] = bp_add(mcp, sid, {"function": "shop::Counter::bump",
                              "condition": "x == %d" % target})["breakpoints"]
    [lp] = bp_add(mcp, sid, {"function": "shop::Counter::bump", "message": "x={x} by={by}",
                             "condition": "x == %d" % (target - 1)})["breakpoints"]
    a = until_bp(mcp, sid, bp2["id"])
    assert a["state"] == "paused"
    assert mem_read(mcp, sid, "x", threadId=a["threadId"])[0]["value"] == target
    assert mem_read(mcp, sid, "this->x", threadId=a["threadId"])[0]["value"] == target
    [log] = mcp.query(sid, eventType="logpoint")["events"]
    assert log["text"] == "x=%d by=1" % (target - 1), log
    assert lp["id"] != bp2["id"]
    mcp.stop(sid)


def test_rust_breakpoint_by_file_line_reads_a_local(mcp):
    r = launch_ready(mcp, "bp_rust", r"^ready$")
    sid = r["sessionId"]
    line = line_of("bp_rust.rs", "RS_RET")
    [bp] = bp_add(mcp, sid, {"file": "bp_rust.rs", "line": line})["breakpoints"]
    assert bp["locations"] == 1 and bp["where"][0]["line"] == line
    assert "accumulate" in bp["where"][0]["function"]
    a = until_bp(mcp, sid, bp["id"])
    assert a["state"] == "paused" and a["line"] == line and "accumulate" in a["function"], a
    n = vars_of(a, "arguments")["n"]
    res = mem_read(mcp, sid, "doubled", "n", threadId=a["threadId"])
    assert [(x["target"], x["value"]) for x in res] == [("doubled", 2 * n), ("n", n)]
    assert vars_of(a, "locals")["doubled"] == 2 * n
    mcp.stop(sid)


def test_a_launch_with_logpoints_alone_suggests_no_wait_for_a_stop(mcp):
    """A logpoint never stops the program: the launch's nextSteps read its messages
    rather than suggest `until` (which an agent followed and waited on)."""
    bp_add(mcp, None, {"function": "quick", "message": "v={v}"})
    r = mcp.launch("bp_quick")
    assert "logpoint" in r["nextSteps"] and '"until"' not in r["nextSteps"], r
    assert r["breakpoints"][0]["kind"] == "logpoint", r
    mcp.wait_ended(r["sessionId"])
    bp_add(mcp, None, {"function": "quick"})  # with a breakpoint, a stop can come
    r = mcp.launch("bp_quick")
    assert '"until"' in r["nextSteps"], r
    mcp.stop(r["sessionId"])


def test_a_rejected_add_uses_up_no_id(mcp):
    r = mcp.launch("hot_count", args=["-1"])
    sid = r["sessionId"]
    first = bp_add(mcp, sid, {"function": "counted", "message": "a"})["breakpoints"][0]["id"]
    for _ in range(3):
        e = bp_add_error(mcp, sid, {"function": "no_such_function_here"})
        assert e.code == "FUNCTION_NOT_FOUND", e
    again = bp_add(mcp, sid, {"function": "counted", "message": "b"})["breakpoints"][0]["id"]
    assert again == first + 1, (first, again)
    mcp.stop(sid)


def test_a_launch_with_its_own_tracing_leaves_the_staged_set_untouched(mcp):
    """debug_launch {tracePatterns, breakpoints} arms these for this launch only: the
    staged pattern and breakpoint are not applied, stay staged, and the answer says
    so; the next plain launch applies the staged ones."""
    mcp.call_tool("debug_trace", {"add": ["main"]})  # staged
    bp_add(mcp, None, {"function": "main"})
    staged = bp_list(mcp, None)
    r = mcp.call_tool("debug_launch", {
        "command": fixture_path("bp_quick"), "projectRoot": mcp.world.project,
        "tracePatterns": ["quick"],
        "breakpoints": [{"function": "quick", "message": "v={v}"}]})
    sid = r["sessionId"]
    assert r["patternsApplied"] == 1 and [p["pattern"] for p in r["patterns"]] == ["quick"]
    [lp] = r["breakpoints"]
    assert lp["kind"] == "logpoint" and lp["function"] == "quick", r
    assert "1 staged pattern(s) and 1 staged breakpoint(s) were not applied" in \
        r["stagedNotApplied"], r
    mcp.wait_ended(sid)
    texts = [e["text"] for e in mcp.query(sid, eventType="logpoint")["events"]]
    assert texts == ["v=1", "v=2", "v=3"], texts
    assert mcp.query(sid, eventType="function_enter", function={"equals": "main"})[
        "totalCount"] == 0
    assert mcp.query(sid, eventType="function_enter", function={"equals": "quick"})[
        "totalCount"] == 3
    assert bp_list(mcp, None) == staged  # untouched
    # a bad one is refused before anything runs, and uses up no id
    e = mcp.tool_error("debug_launch", {
        "command": fixture_path("bp_quick"), "projectRoot": mcp.world.project,
        "breakpoints": [{"function": "quick", "condition": "v >"}]})
    assert e.code == "BAD_EXPRESSION", e
    r = mcp.launch("bp_quick")  # plain: the staged ones apply
    assert r["pendingPatternsApplied"] == 1 and "stagedNotApplied" not in r, r
    assert r["breakpoints"][0]["id"] == staged[0]["id"], r
    mcp.stop(r["sessionId"])


def test_a_hot_logpoint_is_said_with_its_rate_and_cost_and_hit_limit_caps_one(mcp):
    """A logpoint reached at every call of a hot loop: status, debug_query and
    debug_continue say it is hot (rate, the debugger's work per hit, what it does to
    the program's speed); a logpoint with hitLimit 5 logs 5 times, the last message
    saying it went."""
    r = mcp.launch("hot_count", args=["-1"])  # until SIGUSR1
    sid, pid = r["sessionId"], r["pid"]
    line = line_of("hot_count.c", "COUNTED")
    [lim] = bp_add(mcp, sid, {"file": "hot_count.c", "line": line, "message": "v={v}",
                              "hitLimit": 5})["breakpoints"]
    assert lim["hitLimit"] == 5, lim
    got = mcp.wait_events(sid, 5, eventType="logpoint")["events"]
    v0 = int(got[0]["text"][2:])
    assert [e["text"].split(" ")[0] for e in got] == ["v=%d" % (v0 + i) for i in range(5)]
    assert got[-1]["text"].endswith("[logpoint %d reached its hitLimit of 5 and was "
                                    "removed]" % lim["id"]), got[-1]
    assert [b["id"] for b in bp_list(mcp, sid)] == [], "the limited logpoint went"
    bp_add(mcp, sid, {"file": "hot_count.c", "line": line, "message": "v={v}"})

    def hot():
        st = mcp.status(sid)
        return st if st.get("hot") else None
    st = wait_until(hot, T_LONG, what="the logpoint said to be hot")
    [h] = st["hot"]
    assert h["kind"] == "logpoint" and h["where"] == "hot_count.c:%d" % line, h
    assert h["perSecond"] >= 1000 or h["percentOfThread"] >= 20, h
    assert h["workUsPerHit"] > 0 and 0 < h["percentOfThread"] <= 100, h
    note = st["hotNote"]
    assert "times a second" in note and "runs that much slower" in note and \
        "hitLimit" in note, note
    assert mcp.query(sid, eventType="stdout")["hot"][0]["id"] == h["id"]
    c = cont(mcp, sid, "until", timeoutMs=200,
             condition={"event": {"eventType": "stderr"}})  # never comes
    assert c["state"] == "running" and c["hot"][0]["id"] == h["id"], c
    os.kill(pid, signal.SIGUSR1)
    mcp.wait_ended(sid)
    assert mcp.query(sid, eventType="logpoint", text={"contains": "hitLimit"})[
        "totalCount"] == 1
