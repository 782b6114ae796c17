"""debug_memory actions "watch" and "unwatch" (docs/PROTOCOL.md "Data watchpoints"):
hardware data watchpoints (x86 debug registers) that record each hit as a
watch_hit event while the program runs on.

Fixtures: config_overwrite (a strcpy into g_config.name runs over into
g_config.max_retries on SIGUSR1) and watch_writer (g_counter written by a thread
started before the watch, one started after it, a forked child, and main on
SIGUSR2). Both print the addresses of their globals, so most tests watch by
address (what they assert does not depend on the variable resolver); one watches
by name (varres.h)."""

import os
import re
import signal

import pytest

from conftest import REPO, T_LONG, debug_traps, stays_true, wait_until

FIXTURES = os.path.join(REPO, "tests", "fixtures")


def line_of(fixture, marker):
    with open(os.path.join(FIXTURES, fixture)) as f:
        for n, line in enumerate(f, 1):
            if "/* %s */" % marker in line:
                return n
    raise AssertionError("no %s marker in %s" % (marker, fixture))


def stdout_text(mcp, sid):
    return "\n".join(e.get("text", "") for e in mcp.all_events(sid, eventType="stdout"))


def wait_stdout(mcp, sid, pattern):
    def seen():
        m = re.search(pattern, stdout_text(mcp, sid))
        return m
    return wait_until(seen, T_LONG, what="%r on stdout of %s" % (pattern, sid))


def watch(mcp, sid, **kw):
    a = {"action": "watch", "sessionId": sid}
    a.update(kw)
    return mcp.call_tool("debug_memory", a)


def watch_error(mcp, sid, **kw):
    a = {"action": "watch", "sessionId": sid}
    a.update(kw)
    return mcp.tool_error("debug_memory", a)


def unwatch(mcp, sid, wid):
    return mcp.call_tool("debug_memory", {"action": "unwatch", "sessionId": sid,
                                          "watchId": wid})


def hits(mcp, sid, verbose=False):
    return mcp.all_events(sid, eventType="watch_hit", verbose=verbose) if verbose else \
        mcp.all_events(sid, eventType="watch_hit")


def wait_hits(mcp, sid, pred, what, verbose=False):
    def found():
        hs = hits(mcp, sid, verbose)
        return hs if pred(hs) else None
    return wait_until(found, T_LONG, what=what)


def launch_config(mcp):
    r = mcp.launch("config_overwrite")
    sid, pid = r["sessionId"], r["pid"]
    m = wait_stdout(mcp, sid, r"ready config=(0x[0-9a-f]+) max_retries=(0x[0-9a-f]+)")
    return sid, pid, int(m.group(1), 16), int(m.group(2), 16)


def launch_writer(mcp):
    r = mcp.launch("watch_writer")
    sid, pid = r["sessionId"], r["pid"]
    m = wait_stdout(mcp, sid, r"ready counter=(0x[0-9a-f]+)")
    return sid, pid, int(m.group(1), 16)


# ---- the scenario ----------------------------------------------------------


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_config_overwrite_caught_with_writer_and_values(mcp):
    sid, pid, cfg, retries = launch_config(mcp)
    assert retries == cfg + 16
    w = watch(mcp, sid, address=hex(retries), type="i32")
    assert w["watchId"] >= 1 and w["label"] == hex(retries)
    assert w["address"] == hex(retries) and w["size"] == 4 and w["type"] == "i32"
    assert w["access"] == "write" and w["currentValue"] == 3
    assert [a["watchId"] for a in w["activeWatches"]] == [w["watchId"]]
    assert "watch_hit" in w["hint"]
    os.kill(pid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"pass 1 max_retries=(-?\d+)")
    line = line_of("config_overwrite.c", "OVERWRITE")
    hs = wait_hits(mcp, sid, lambda hs: any(h.get("changed") for h in hs),
                   "a changing watch_hit")
    h = next(h for h in hs if h["changed"])
    assert h["eventType"] == "watch_hit"
    assert h["watchId"] == w["watchId"] and h["label"] == hex(retries)
    assert h["oldValue"] == 3 and isinstance(h["newValue"], int) and h["newValue"] != 3
    new = int(re.search(r"pass 1 max_retries=(-?\d+)", stdout_text(mcp, sid)).group(1))
    assert h["newValue"] == new
    assert h["function"] == "parse_name", h
    assert h["sourceFile"].endswith("config_overwrite.c") and h["line"] == line, h
    assert h["access"] == "write"
    assert "3 -> %d" % new in h["text"] and "parse_name" in h["text"], h["text"]
    assert "config_overwrite.c:%d" % line in h["text"]
    assert "frames" not in h  # summary
    assert h["threadId"] == pid
    # verbose adds the stack: strcpy (the library) above parse_name, then main
    hv = [x for x in hits(mcp, sid, verbose=True) if x["id"] == h["id"]][0]
    fns = [f["function"] for f in hv["frames"]]
    assert "parse_name" in fns and "main" in fns, fns
    own = hv["frames"][hv["ownFrame"]]
    assert own["function"] == "parse_name" and own["line"] == line
    # the reset is a hit too, at its own line (the writing instruction's, not the next)
    os.kill(pid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"pass 2 max_retries")
    reset = line_of("config_overwrite.c", "RESET")
    hs = wait_hits(mcp, sid, lambda hs: any(x["function"] == "reset_config" and x["changed"]
                                            for x in hs), "the second reset's hit")
    r = next(x for x in hs if x["function"] == "reset_config" and x["changed"])
    assert r["line"] == reset and r["oldValue"] == new and r["newValue"] == 3, r
    mcp.stop(sid)


@pytest.mark.debug_traps
def test_watch_by_variable_name(mcp):
    sid, pid, cfg, retries = launch_config(mcp)
    w = watch(mcp, sid, variable="g_config.max_retries")
    assert w["label"] == "g_config.max_retries" and w["address"] == hex(retries)
    assert w["type"] == "int" and w["size"] == 4 and w["currentValue"] == 3
    os.kill(pid, signal.SIGUSR1)
    line = line_of("config_overwrite.c", "OVERWRITE")
    hs = wait_hits(mcp, sid, lambda hs: any(h.get("changed") for h in hs), "a hit")
    h = next(h for h in hs if h["changed"])
    assert h["function"] == "parse_name" and h["line"] == line
    assert h["text"].startswith("g_config.max_retries: 3 -> ")
    # the whole struct is too large: the error offers its fields
    e = watch_error(mcp, sid, variable="g_config")
    assert e.code == "WATCH_TOO_LARGE", e.message
    assert "g_config.max_retries" in e.message and "g_config.name" in e.message
    mcp.stop(sid)


@pytest.mark.debug_traps
def test_a_hit_after_a_debugger_write_shows_the_written_value_as_old(mcp):
    """`set var` then the program's write: the hit's old value is the debugger's (it
    showed the value from before that write: the debug registers do not see a write
    through /proc/PID/mem)."""
    sid, pid, cfg, retries = launch_config(mcp)
    w = watch(mcp, sid, variable="g_config.max_retries")
    assert w["currentValue"] == 3, w
    [res] = mcp.call_tool("debug_memory", {
        "action": "write", "sessionId": sid,
        "targets": [{"variable": "g_config.max_retries", "value": 100}]})["results"]
    assert res["value"] == 100 and res.get("oldValue") == 3, res
    os.kill(pid, signal.SIGUSR1)
    hs = wait_hits(mcp, sid, lambda hs: any(h.get("changed") for h in hs), "a hit",
                   verbose=True)
    h = next(h for h in hs if h["changed"])
    assert h["text"].startswith("g_config.max_retries: 100 -> "), h
    assert h["oldValue"] == 100 and h["newValue"] != 100, h
    mcp.stop(sid)


# ---- threads and processes ------------------------------------------------------------


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_threads_before_and_after_and_forked_child(mcp):
    sid, pid, counter = launch_writer(mcp)
    w = watch(mcp, sid, address=hex(counter), type="i64")
    assert w["currentValue"] == 0
    os.kill(pid, signal.SIGUSR1)
    out = wait_stdout(mcp, sid, r"early tid=(\d+)\nlate tid=(\d+)\nchild pid=(\d+)")
    early, late, child = (int(out.group(i)) for i in (1, 2, 3))
    hs = wait_hits(mcp, sid, lambda hs: len(hs) >= 3, "three watch hits", verbose=True)
    by_tid = {h["threadId"]: h for h in hs}
    a = by_tid[early]
    assert a["function"] == "early" and a["line"] == line_of("watch_writer.c", "WRITE-A")
    assert a["oldValue"] == 0 and a["newValue"] == 1 and a["threadName"] == "early"
    b = by_tid[late]
    assert b["function"] == "late" and b["line"] == line_of("watch_writer.c", "WRITE-B")
    assert b["oldValue"] == 1 and b["newValue"] == 11
    c = by_tid[child]
    assert c["pid"] == child and c["function"] == "pass"
    assert c["line"] == line_of("watch_writer.c", "WRITE-C")
    # the child's memory is a copy: its own old value
    assert c["oldValue"] == 11 and c["newValue"] == 111
    # the summary tags the child's hit with its pid (several processes)
    summary = hits(mcp, sid)
    assert any(h.get("pid") == child for h in summary), summary
    # the watch counted its hits
    lst = unwatch(mcp, sid, w["watchId"])
    assert lst["removed"][0]["watchId"] == w["watchId"]
    assert lst["removed"][0]["hits"] >= 3
    assert lst["activeWatches"] == []
    mcp.stop(sid)


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_readwrite_and_unwatch_stops_hits(mcp):
    sid, pid, counter = launch_writer(mcp)
    w = watch(mcp, sid, address=hex(counter), size=8, access="readwrite")
    assert w["access"] == "readwrite" and w["type"] == "u64"
    os.kill(pid, signal.SIGUSR2)
    wait_stdout(mcp, sid, r"usr2 1")
    read_line = line_of("watch_writer.c", "READ-E")
    write_line = line_of("watch_writer.c", "WRITE-F")
    hs = wait_hits(mcp, sid, lambda hs: len(hs) >= 2, "read and write hits")
    read = [h for h in hs if h["line"] == read_line]
    assert read and read[0]["changed"] is False and read[0]["access"] == "readwrite"
    assert read[0]["oldValue"] == read[0]["newValue"] == 0
    written = [h for h in hs if h["line"] == write_line and h["changed"]]
    assert written and written[0]["newValue"] == 1000, hs
    n = len(hs)
    r = unwatch(mcp, sid, "*")
    assert [x["watchId"] for x in r["removed"]] == [w["watchId"]]
    assert r["activeWatches"] == []
    os.kill(pid, signal.SIGUSR2)
    wait_stdout(mcp, sid, r"usr2 2")
    assert stays_true(lambda: len(hits(mcp, sid)) == n, 0.5)
    mcp.stop(sid)


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_hits_with_trace_hooks_in_the_same_thread(mcp):
    """int3 traps (a trace hook on the writing function) and debug-register traps in
    the same thread, both recorded."""
    sid, pid, counter = launch_writer(mcp)
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["late", "pass"]})
    assert t["hookedFunctions"] == 2
    watch(mcp, sid, address=hex(counter), type="i64")
    os.kill(pid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"pass done")
    hs = wait_hits(mcp, sid, lambda hs: len(hs) >= 3, "three hits")
    assert {h["function"] for h in hs} >= {"early", "late", "pass"}
    enters = mcp.wait_events(sid, 2, eventType="function_enter")
    assert {e["function"] for e in enters["events"]} >= {"pass", "late"}
    mcp.wait_events(sid, 2, eventType="function_exit")
    mcp.stop(sid)


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_exec_ends_the_watch(mcp):
    sid, pid, cfg, retries = launch_config(mcp)
    w = watch(mcp, sid, address=hex(retries), type="i32")
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: stdout_text(mcp, sid).count("ready config=") == 2, T_LONG,
               what="the exec'd image's ready line")
    # the new image has no watch: its overwrite records nothing
    os.kill(pid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"pass 1 max_retries")
    assert hits(mcp, sid) == []
    r = unwatch(mcp, sid, "*")
    assert len(r["removed"]) == 1, r
    gone = r["removed"][0]
    assert gone["watchId"] == w["watchId"] and gone["state"] == "ended"
    assert "exec" in gone["endedBecause"] and str(pid) in gone["endedBecause"]
    # and a new watch in the new image works
    m = re.findall(r"max_retries=(0x[0-9a-f]+)", stdout_text(mcp, sid))
    w2 = watch(mcp, sid, address=m[-1], type="i32")
    assert w2["currentValue"] != 3  # overwritten by pass 1 of the new image
    os.kill(pid, signal.SIGUSR1)
    wait_hits(mcp, sid, lambda hs: any(h["function"] == "reset_config" for h in hs),
              "a hit in the new image")
    mcp.stop(sid)


@pytest.mark.debug_traps
def test_no_hit_lost_under_holds_hooks_and_throttling(mcp):
    """Torture: a hot loop writes the watched global 30000 times while the tracer
    holds every thread again and again (stacks snapshots, a trace hook added on the
    writing function, which is throttled as hot, then removed, another watch armed and
    removed): every write is one watch_hit, none lost, none doubled, and the program's
    result is right."""
    n = 30000
    r = mcp.launch("watch_writer", args=["bench", str(n), "wait"])
    sid, pid = r["sessionId"], r["pid"]
    m = wait_stdout(mcp, sid, r"ready counter=(0x[0-9a-f]+)")
    counter = int(m.group(1), 16)
    w = watch(mcp, sid, address=hex(counter), type="i64")
    os.kill(pid, signal.SIGUSR1)
    mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["bump"]})
    for _ in range(3):
        w2 = watch(mcp, sid, address=hex(counter + 8), size=8)
        unwatch(mcp, sid, w2["watchId"])
        mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
    # the hook on bump fires between the watch's traps (int3 or fast-path records and
    # DR traps, one thread) before it goes: on a busy machine the program may not have
    # run bump yet after the requests above, so its first event is waited for
    mcp.wait_events(sid, 1, eventType="function_enter")
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["bump"]})
    done = wait_stdout(mcp, sid, r"counter=(\d+) elapsed_ns")
    assert int(done.group(1)) == n
    def all_recorded():
        return mcp.query(sid, eventType="watch_hit", limit=1)["totalCount"] >= n
    try:
        wait_until(all_recorded, T_LONG, what="%d watch hits" % n)
    except AssertionError:
        total = mcp.query(sid, eventType="watch_hit", limit=1)["totalCount"]
        odd, prev = [], 0
        for h in mcp.all_events(sid, eventType="watch_hit"):
            if h["oldValue"] != prev or h["newValue"] != prev + 1:
                odd.append(h)
            prev = h["newValue"]
        raise AssertionError("%d of %d hits; irregular: %r; crashes: %r; exits: %r" % (
            total, n, odd[:5], mcp.all_events(sid, eventType="crash"),
            mcp.all_events(sid, eventType="process_exit")))
    assert mcp.query(sid, eventType="watch_hit", limit=1)["totalCount"] == n
    last = mcp.query(sid, eventType="watch_hit", offset=n - 1, verbose=True)["events"][0]
    assert last["oldValue"] == n - 1 and last["newValue"] == n and last["hits"] == n
    assert last["function"] == "bump" and last["line"] == line_of("watch_writer.c", "WRITE-G")
    assert last["watchId"] == w["watchId"]
    assert mcp.query(sid, eventType="function_enter")["totalCount"] > 0
    os.kill(pid, signal.SIGUSR1)
    mcp.wait_ended(sid)


@pytest.mark.valgrind_sample
@pytest.mark.debug_traps
def test_write_by_a_stepped_instruction(mcp):
    """The watched write is the instruction a trace hook displaced, and in a child
    forked before the hook existed that instruction is single-stepped by the tracer:
    the step's one SIGTRAP carries the watch hit too (DR6.BS and B0)."""
    r = mcp.launch("watch_step")
    sid, pid = r["sessionId"], r["pid"]
    m = wait_stdout(mcp, sid, r"ready value=(0x[0-9a-f]+) kid=(\d+)")
    value, kid = int(m.group(1), 16), int(m.group(2))
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["store_first"]})
    assert t["hookedFunctions"] == 1, t
    watch(mcp, sid, address=hex(value), type="i64")
    os.kill(kid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"kid stored 5")
    wait_stdout(mcp, sid, r"kid done")
    hs = wait_hits(mcp, sid, lambda hs: any(h.get("pid") == kid for h in hs), "the kid's hit")
    k = [h for h in hs if h.get("pid") == kid]
    assert len(k) == 1 and k[0]["oldValue"] == 0 and k[0]["newValue"] == 5, k
    # store_first is hand-written (no line info, no CFI): it or its caller
    assert k[0]["function"] in ("store_first", "main")
    enters = mcp.query(sid, eventType="function_enter", pid=kid)["events"]
    assert [e["function"] for e in enters] == ["store_first"]
    # the parent's store runs the relocated copy: a plain hit
    os.kill(pid, signal.SIGUSR1)
    wait_stdout(mcp, sid, r"parent stored 5")
    hs = wait_hits(mcp, sid, lambda hs: any(h.get("pid", pid) == pid and h["changed"]
                                            for h in hs), "the parent's hit")
    p = [h for h in hs if h.get("pid", pid) == pid]
    assert len(p) == 1 and p[0]["oldValue"] == 0 and p[0]["newValue"] == 5, p
    mcp.stop(sid)


# ---- limits and errors -----------------------------------------------------------------


@pytest.mark.debug_traps
def test_fifth_watch_names_the_active_ones(mcp):
    sid, pid, cfg, retries = launch_config(mcp)
    ids = []
    for off, size in ((16, 4), (20, 4), (24, 8), (0, 8)):
        ids.append(watch(mcp, sid, address=hex(cfg + off), size=size)["watchId"])
    e = watch_error(mcp, sid, address=hex(cfg + 8), size=8)
    assert e.code == "WATCH_SLOTS_FULL", e.message
    for wid, off in zip(ids, (16, 20, 24, 0)):
        assert "#%d %s" % (wid, hex(cfg + off)) in e.message, e.message
    assert "unwatch" in e.message
    unwatch(mcp, sid, ids[1])
    w = watch(mcp, sid, address=hex(cfg + 8), size=8)
    assert len(w["activeWatches"]) == 4
    mcp.stop(sid)


def test_watch_errors(mcp):
    sid, pid, cfg, retries = launch_config(mcp)
    e = watch_error(mcp, sid, address=hex(cfg), size=16)
    assert e.code in ("WATCH_TOO_LARGE", "VALIDATION_ERROR"), e.message
    e = watch_error(mcp, sid, address=hex(cfg), type="i64", size=4)
    assert e.code == "VALIDATION_ERROR"
    e = watch_error(mcp, sid, address=hex(retries + 2), size=8)
    assert e.code == "VALIDATION_ERROR" and "aligned" in e.message, e.message
    e = watch_error(mcp, sid, address=hex(retries), size=3)
    assert e.code == "VALIDATION_ERROR"
    e = watch_error(mcp, sid, address="0x10", size=4)
    assert e.code == "MEMORY_UNREADABLE", e.message
    e = watch_error(mcp, sid, address="nowhere", size=4)
    assert e.code == "VALIDATION_ERROR"
    e = watch_error(mcp, sid, address=hex(retries), size=4, access="read")
    assert e.code == "VALIDATION_ERROR"
    e = watch_error(mcp, sid)
    assert e.code == "VALIDATION_ERROR"
    e = mcp.tool_error("debug_memory", {"action": "unwatch", "sessionId": sid,
                                        "watchId": 99})
    assert e.code == "VALIDATION_ERROR" and "99" in e.message
    e = watch_error(mcp, sid, address=hex(retries), size=4, pid=1)
    assert e.code == "VALIDATION_ERROR"
    # a frame's name (a local, this->member) is not a global: the way to its address
    e = watch_error(mcp, sid, variable="accounts_")
    assert e.code == "VARIABLE_NOT_FOUND" and "read it with debug_memory({sessionId, " \
        "threadId, targets: [{variable}]}) and watch the address" in e.message, e.message
    mcp.stop(sid)


def test_watch_after_exit_is_process_exited(mcp):
    r = mcp.launch("hello_exit3")
    sid = r["sessionId"]
    mcp.wait_ended(sid)
    e = watch_error(mcp, sid, address="0x1000", size=4)
    assert e.code == "PROCESS_EXITED", e.message


# ---- machines that never deliver the traps ----------------------------------------------


def test_the_daemons_probe_agrees_with_the_machine(mcp):
    """The daemon arms a watch where the debug registers' traps come
    (tests/fixtures/debug_traps.c says so) and answers WATCH_UNSUPPORTED where they
    never do, instead of a watch that waits forever for hits."""
    sid, pid, cfg, retries = launch_config(mcp)
    if debug_traps():
        w = watch(mcp, sid, address=hex(retries), type="i32")
        assert w["watchId"] >= 1, w
    else:
        e = watch_error(mcp, sid, address=hex(retries), type="i32")
        assert e.code == "WATCH_UNSUPPORTED", e.message
    mcp.stop(sid)


@pytest.mark.manages_daemon
def test_watch_unsupported_says_what_to_do_instead(world):
    """A daemon told the machine has no debug-register traps (STROBE_NO_DEBUG_TRAPS=1,
    as the probe finds on such a machine) refuses every watch with WATCH_UNSUPPORTED
    and names the ways to find a writer without one; the session serves on."""
    mcp = world.mcp(extra_env={"STROBE_NO_DEBUG_TRAPS": "1"})
    sid, pid, cfg, retries = launch_config(mcp)
    for target in ({"variable": "g_config.max_retries"}, {"address": hex(retries), "size": 4}):
        e = watch_error(mcp, sid, **target)
        assert e.code == "WATCH_UNSUPPORTED", e.message
        assert e.message.startswith("this machine never raises the x86 debug registers' "
                                    "traps"), e.message
        assert "debug_breakpoint({sessionId, add: [{function:" in e.message, e.message
        assert "poll: {intervalMs" in e.message, e.message
    # a watch that cannot be armed still checks its request first
    e = watch_error(mcp, sid, variable="g_config")
    assert e.code == "WATCH_TOO_LARGE", e.message
    r = mcp.call_tool("debug_memory", {"sessionId": sid,
                                       "targets": [{"variable": "g_config.max_retries"}]})
    assert r["results"][0]["value"] == 3, r
    assert mcp.call_tool("debug_memory", {"action": "unwatch", "sessionId": sid,
                                          "watchId": "*"})["activeWatches"] == []
    mcp.stop(sid)


@pytest.mark.debug_traps
def test_a_hot_watch_is_said_in_status(mcp):
    """A variable written at every step of a loop: each write stops the program, and
    status says the watch is hot with its rate."""
    r = mcp.launch("watch_writer", args=["bench", "1000000000", "wait"])
    sid, pid = r["sessionId"], r["pid"]
    counter = int(wait_stdout(mcp, sid, r"ready counter=(0x[0-9a-f]+)").group(1), 16)
    w = watch(mcp, sid, address=hex(counter), type="i64")
    os.kill(pid, signal.SIGUSR1)  # the writes begin

    def hot():
        st = mcp.status(sid)
        return st if st.get("hot") else None
    st = wait_until(hot, T_LONG, what="the watch said to be hot")
    [h] = st["hot"]
    assert h["kind"] == "watch" and h["id"] == w["watchId"], h
    # Hot by rate, or (a slow debugger, as under valgrind) by its share of the thread.
    assert h["perSecond"] >= 1000 or h["percentOfThread"] >= 20, h
    assert h["workUsPerHit"] > 0 and "unwatch" in st["hotNote"], st
    mcp.stop(sid)
