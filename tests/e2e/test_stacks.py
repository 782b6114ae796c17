"""debug_session action "stacks" (docs/PROTOCOL.md "Thread stacks"): every thread of a
running program stopped, unwound and resumed. The deadlock_abba fixture deadlocks for
certain (its top comment): worker-a holds lock_a and waits for lock_b, worker-b holds
lock_b and waits for lock_a, main waits in pthread_join for worker-a. The lines of the
two blocking calls are read from the fixture's LOCK SECOND markers; the mutexes'
addresses from `nm` plus the load bias of /proc/PID/maps."""

import os
import re
import signal
import subprocess

import pytest

from conftest import REPO, T_LONG, fixture_path, pid_alive, wait_until

FIXTURES = os.path.join(REPO, "tests", "fixtures")


def line_of(fixture, marker):
    path = os.path.join(FIXTURES, fixture)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError("no %s marker in %s" % (marker, path))


def marker_line(tag):
    return line_of("deadlock_abba.c", "LOCK SECOND " + tag)


def global_addresses(pid):
    """{symbol: runtime address} of lock_a and lock_b in process pid (a PIE)."""
    exe = fixture_path("deadlock_abba")
    nm = subprocess.run(["nm", exe], stdout=subprocess.PIPE, check=True, text=True).stdout
    syms = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("lock_a", "lock_b"):
            syms[parts[2]] = int(parts[0], 16)
    real = os.path.realpath(exe)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real and \
                    int(fields[2], 16) == 0:
                bias = int(fields[0].split("-")[0], 16)
                return {k: v + bias for k, v in syms.items()}
    raise AssertionError("no mapping of %s in pid %d" % (exe, pid))


def stacks(mcp, sid, **kw):
    a = {"action": "stacks", "sessionId": sid}
    a.update(kw)
    return mcp.call_tool("debug_session", a)


def by_name(res):
    return {t["name"]: t for t in res["threads"]}


def launch_deadlocked(mcp):
    """Launches deadlock_abba, waits for "started" and until both workers wait on a
    mutex; returns (sessionId, pid, the last stacks answer)."""
    r = mcp.launch("deadlock_abba")
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")

    def both_blocked():
        res = stacks(mcp, sid)
        names = by_name(res)
        ok = all(names.get(n, {}).get("wait", {}).get("kind") == "mutex"
                 for n in ("worker-a", "worker-b"))
        return res if ok else None
    return sid, pid, wait_until(both_blocked, T_LONG, what="both workers blocked on a mutex")


@pytest.mark.valgrind_sample
def test_stacks_names_the_deadlock(mcp):
    sid, pid, res = launch_deadlocked(mcp)
    assert res["sessionId"] == sid
    assert res["pids"] == [pid]
    names = by_name(res)
    assert set(names) == {"deadlock_abba", "worker-a", "worker-b"}, names
    a, b, main = names["worker-a"], names["worker-b"], names["deadlock_abba"]
    assert main["tid"] == pid
    addr = global_addresses(pid)

    for t, tag, waits_for, other in ((a, "a", "lock_b", b), (b, "b", "lock_a", a)):
        assert t["pid"] == pid and t["tid"] != pid
        assert t["state"] == "sleeping" and t["syscall"] == "futex", t
        own = t["frames"][t["ownFrame"]]
        assert own == "take_second (deadlock_abba.c:%d)" % marker_line(tag), t["frames"]
        # the thread function called take_second
        assert t["frames"][t["ownFrame"] + 1].startswith(
            "worker_%s (deadlock_abba.c:" % tag), t["frames"]
        assert t["locals"] == [{"name": "round", "type": "int", "value": 2}], t
        assert [(v["name"], v["value"]) for v in t["arguments"]][1:] == \
            [("first_is_a", int(tag == "a"))], t
        assert t["arguments"][0]["value"]["owner"] == other["tid"], t
        w = t["wait"]
        assert w["kind"] == "mutex"
        assert int(w["address"], 16) == addr[waits_for], (w, addr)
        assert w["variable"] == waits_for, w  # a global named as C names it
        assert w["ownerTid"] == other["tid"]

    assert main["wait"]["kind"] == "join", main
    assert main["wait"]["joinedTid"] == a["tid"]
    assert any(f.startswith("main (deadlock_abba.c:") for f in main["frames"]), main

    d = res["diagnosis"]
    assert d.startswith("deadlock: "), d
    assert "tid %d (worker-a)" % a["tid"] in d and "tid %d (worker-b)" % b["tid"] in d, d
    assert "0x%x" % addr["lock_a"] in d and "0x%x" % addr["lock_b"] in d, d
    assert res["stoppedMs"] >= 0

    # the snapshot resumed every thread: the process still runs, and stop ends it
    assert pid_alive(pid)
    assert mcp.status(sid)["status"] == "running"
    mcp.stop(sid)
    wait_until(lambda: not pid_alive(pid), T_LONG, what="deadlock_abba to end")


@pytest.mark.valgrind_sample
def test_stacks_of_traced_frames(mcp):
    """take_second and the thread functions traced: their return addresses are
    trampolines until the snapshot puts the real ones back, so the stacks read the
    same as untraced, and the program still runs afterwards."""
    mcp.call_tool("debug_trace", {"add": ["take_second", "worker_*"]})
    sid, pid, res = launch_deadlocked(mcp)
    mcp.wait_events(sid, 2, eventType="function_enter", function={"equals": "take_second"})
    res = stacks(mcp, sid)
    for tag in ("a", "b"):
        t = by_name(res)["worker-" + tag]
        own = t["ownFrame"]
        assert t["frames"][own] == "take_second (deadlock_abba.c:%d)" % marker_line(tag), t
        assert t["frames"][own + 1].startswith("worker_%s (deadlock_abba.c:" % tag), t
        assert t["frames"][own + 2] == "start_thread", t
    assert pid_alive(pid) and mcp.status(sid)["status"] == "running"
    mcp.stop(sid)


def test_stacks_filters_and_verbose(mcp):
    sid, pid, res = launch_deadlocked(mcp)
    a = by_name(res)["worker-a"]
    one = stacks(mcp, sid, tids=[a["tid"]], verbose=True, locals=False)
    assert [t["tid"] for t in one["threads"]] == [a["tid"]]
    t = one["threads"][0]
    assert "locals" not in t
    own = t["frames"][t["ownFrame"]]
    assert own["function"] == "take_second" and own["line"] == marker_line("a")
    assert own["file"].endswith("deadlock_abba.c")
    assert own["arguments"][1] == {"name": "first_is_a", "type": "int", "value": 1}, own
    assert int(own["pc"], 16) > 0
    assert len(stacks(mcp, sid, pid=pid)["threads"]) == 3
    assert stacks(mcp, sid, pid=1)["threads"] == []  # init is never the session's
    mcp.stop(sid)


def test_stacks_other_waits(mcp):
    """stacks_waits: a condition variable (its own address), a read() on a pipe and a
    sleep are told apart; no wait cycle, so no diagnosis."""
    r = mcp.launch("stacks_waits")
    sid, pid = r["sessionId"], r["pid"]
    text = mcp.wait_events(sid, 1, eventType="stdout")["events"][0]["text"]
    cond = int(text.split()[1], 16)

    def settled():
        res = stacks(mcp, sid)
        names = by_name(res)
        ok = names.get("cv-waiter", {}).get("wait", {}).get("kind") == "condvar" and \
            names.get("pipe-reader", {}).get("syscall") == "read" and \
            names.get("stacks_waits", {}).get("syscall") == "clock_nanosleep"
        return res if ok else None
    res = wait_until(settled, T_LONG, what="the three threads blocked")
    assert "diagnosis" not in res, res
    names = by_name(res)
    cv, rd, main = names["cv-waiter"], names["pipe-reader"], names["stacks_waits"]
    assert int(cv["wait"]["address"], 16) == cond, (cv, hex(cond))
    assert cv["frames"][cv["ownFrame"]] == "cv_waiter (stacks_waits.c:%d)" % line_of(
        "stacks_waits.c", "/* COND WAIT */"), cv
    assert rd["state"] == "sleeping" and "wait" not in rd, rd
    assert rd["frames"][rd["ownFrame"]] == "pipe_reader (stacks_waits.c:%d)" % line_of(
        "stacks_waits.c", "/* PIPE READ */"), rd
    assert [v["name"] for v in rd["locals"]] == ["c", "n"], rd
    assert main["state"] == "sleeping" and "wait" not in main, main
    assert main["frames"][main["ownFrame"]].startswith("main (stacks_waits.c:"), main
    assert pid_alive(pid)
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_stacks_errors(mcp):
    e = mcp.tool_error("debug_session", {"action": "stacks", "sessionId": "no-such-session"})
    assert e.code == "SESSION_NOT_FOUND", e
    r = mcp.launch("hello_exit3")
    sid = r["sessionId"]
    for bad in ({"tids": "1"}, {"tids": [1.5]}, {"tids": list(range(1, 66))},
                {"pid": "x"}, {"locals": 1}, {"verbose": "yes"}):
        a = {"action": "stacks", "sessionId": sid}
        a.update(bad)
        assert mcp.tool_error("debug_session", a).code == "VALIDATION_ERROR", bad
    assert mcp.tool_error("debug_session", {"action": "status", "sessionId": sid,
                                            "tids": [1]}).code == "VALIDATION_ERROR"
    assert mcp.tool_error("debug_session", {"action": "stacks"}).code == "VALIDATION_ERROR"
    mcp.wait_ended(sid)
    e = mcp.tool_error("debug_session", {"action": "stacks", "sessionId": sid})
    assert e.code == "PROCESS_EXITED", e
    assert re.search(r"debug_launch", e.message), e.message


def test_strobectl_stacks(mcp):
    """strobectl stacks prints like gdb's thread apply all bt, the diagnosis first."""
    sid, pid, res = launch_deadlocked(mcp)
    names = by_name(res)
    a, b = names["worker-a"], names["worker-b"]
    addr = global_addresses(pid)
    r = mcp.world.strobectl("stacks", sid)
    assert r.rc == 0, r
    lines = r.out.splitlines()
    assert lines[0].startswith("deadlock: tid "), r.out
    assert lines[1] == ""
    assert "Thread %d (deadlock_abba) sleeping in futex, waiting for thread %d to end " \
           "(pthread_join):" % (pid, a["tid"]) in lines, r.out
    head_a = "Thread %d (worker-a) sleeping in futex, waiting for mutex lock_b (0x%x) " \
        "held by %d:" % (a["tid"], addr["lock_b"], b["tid"])
    head_b = "Thread %d (worker-b) sleeping in futex, waiting for mutex lock_a (0x%x) " \
        "held by %d:" % (b["tid"], addr["lock_a"], a["tid"])
    for head, tag, own in ((head_a, "a", a["ownFrame"]), (head_b, "b", b["ownFrame"])):
        i = lines.index(head)
        assert lines[i + 1].startswith("#0 "), r.out
        assert lines[i + 1 + own] == "#%d take_second (deadlock_abba.c:%d)" % (
            own, marker_line(tag)), r.out
        # gdb's bt with its arguments, then the frame's locals
        second = "0x%x" % addr["lock_b" if tag == "a" else "lock_a"]
        assert lines[i + 2 + own].startswith(
            '    second = {"@opaque":"<pthread_mutex_t %s>","owner":' % second), r.out
        assert lines[i + 3 + own] == "    first_is_a = %d" % (tag == "a"), r.out
        assert lines[i + 4 + own] == "    round = 2", r.out

    j = mcp.world.strobectl("--json", "stacks", sid, "--pid", str(pid)).json()
    assert {t["name"] for t in j["threads"]} == {"deadlock_abba", "worker-a", "worker-b"}

    assert mcp.world.strobectl("stacks").rc == 64
    assert mcp.world.strobectl("stacks", sid, "--pid", "x").rc == 64
    mcp.stop(sid)
    r = mcp.world.strobectl("stacks", sid)
    assert r.rc == 1 and "SESSION_NOT_FOUND" in r.err, r


def test_traced_calls_in_progress_still_report_their_exits(mcp):
    """A snapshot borrows the real return addresses of traced frames for the unwind
    and puts the trampolines back: main, traced from the start and in progress during
    the snapshot, still reports its return value when it ends. (inprogress's main
    waits in pthread_join until SIGUSR1 releases its worker: it ends when the test
    says, after the snapshot, not after a time the snapshot must come within.)"""
    mcp.call_tool("debug_trace", {"add": ["main"]})
    r = mcp.launch("inprogress")
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout", text={"contains": "waiting"})
    res = stacks(mcp, sid)
    [main] = [t for t in res["threads"] if t["tid"] == pid]
    assert any(f.startswith("main (inprogress.c:") for f in main["frames"]), main
    os.kill(pid, signal.SIGUSR1)
    mcp.wait_ended(sid)
    exits = mcp.query(sid, eventType="function_exit", function={"equals": "main"},
                      verbose=True)["events"]
    assert len(exits) == 1, exits
    assert exits[0].get("returnValue") == 0, exits[0]


@pytest.mark.valgrind_sample
def test_stacks_names_a_lock_holder_that_runs_or_blocks(mcp):
    """spin_under_lock: no wait cycle, but two waiters block on a mutex whose holder
    spins in scan_forever, and one on a mutex whose holder sleeps: the diagnosis names
    each holder, what it does and where."""
    r = mcp.launch("spin_under_lock")
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")

    def settled():
        """A snapshot with the three waiters blocked and the napper asleep: it wakes
        every second, and a snapshot can catch it between two sleeps (running, or
        waiting for a CPU on a loaded machine)."""
        res = stacks(mcp, sid)
        waits = [t for t in res["threads"] if t.get("wait", {}).get("kind") == "mutex"]
        return res if len(waits) == 3 and by_name(res)["napper"]["state"] != "running" \
            else None
    res = wait_until(settled, T_LONG, what="three waiters blocked, the napper asleep")
    names = by_name(res)
    spin, nap = names["spinner"], names["napper"]
    assert spin["state"] == "running", spin
    d = res["diagnosis"]
    assert not d.startswith("deadlock"), d
    spin_line = line_of("spin_under_lock.c", "/* SPIN HERE */")
    nap_line = line_of("spin_under_lock.c", "/* NAP HERE */")
    first = re.escape("tid %d (spinner) holds the mutex (g_store.lock, 0x" % spin["tid"])
    assert re.search(first + r"[0-9a-f]+\) that tid \d+ \(waiter-[12]\) and 1 other thread\(s\) "
                     r"wait for, and is running in scan_forever \(spin_under_lock\.c:%d\): "
                     r"a long or endless loop under the lock\?" % spin_line, d), d
    assert re.search(re.escape("tid %d (napper) holds the mutex (g_store.index_lock, 0x"
                               % nap["tid"]) + r"[0-9a-f]+\) that tid \d+ \(waiter-3\) waits for, and is sleeping in "
                     r"clock_nanosleep in nap_holding \(spin_under_lock\.c:%d\): it blocks "
                     r"while it holds the lock" % nap_line, d), d
    # A local declared below the line a thread stopped at has no value yet in C: its
    # stack slot holds leftovers, so it is marked, not shown.
    w3 = names["waiter-3"]
    wait_line = line_of("spin_under_lock.c", "/* WAIT HERE */")
    assert w3["frames"][w3["ownFrame"]] == "waiter (spin_under_lock.c:%d)" % wait_line, w3
    seen = {v["name"]: v for v in w3["locals"]}["seen"]
    assert seen["value"] == "<not declared yet: line %d, below this one>" % (wait_line + 1), w3
    assert {v["name"]: v for v in w3["locals"]}["name"]["value"] == "waiter-3", w3
    # debug_memory shows the mutex as a lock (its owner), not glibc's union; a depth
    # asked for shows glibc's members.
    def read(**kw):
        a = {"action": "read", "sessionId": sid, "targets": [{"variable": "g_store.lock"}]}
        a.update(kw)
        return mcp.call_tool("debug_memory", a)["results"][0]["value"]
    lock = read()
    assert lock["owner"] == spin["tid"] and lock["@opaque"].startswith("<pthread_mutex_t 0x"), lock
    assert "__data" in read(depth=2), read(depth=2)
    # Verbose: the struct both scan_forever and scan point to is written once, in the
    # innermost frame; the caller's argument refers to it.
    res = stacks(mcp, sid, tids=[spin["tid"]], verbose=True)
    [t] = res["threads"]
    fr = {f["function"]: f for f in t["frames"]}
    inner = fr["scan_forever"]["arguments"][0]["value"]
    outer = fr["scan"]["arguments"][0]["value"]
    assert inner["@ptr"] == outer["@ptr"] and "entries" in inner, inner
    assert outer == {"@ptr": inner["@ptr"],
                     "@see": "frame %d" % t["frames"].index(fr["scan_forever"])}, outer
    mcp.stop(sid)
